"""What a bot in another language is told when its build goes wrong, and the build's bounds.

- A Go package that is not ``main`` is the bot's build failure, naming its package clause
  (``go build -o`` of another package writes an archive: every start failed with
  "Permission denied").
- A manifest whose ``entry`` its runtime cannot start or build from is refused when the
  submission is loaded, in one line naming the field, the value and the runtime.
- A ``node`` build never reads the submission's ``.npmrc`` (npm reads the project's config
  from the folder it runs in: the shipped ``node_modules``' check ran in ``/src``).
- A build's error keeps its first lines as well as its last, saying how many were skipped.
- A build killed for memory says so in the same words under Docker and bwrap.
- bwrap leaves no lock file per build.
- Docker and bwrap builds have the same CPU quota (``BuildLimits.cpus``).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from sandbox.backend import Backend
from sandbox.limits import SandboxLimits
from sandbox.runtimes import REGISTRY, Runtime, RuntimeBuildError, containers, get_runtime
from sandbox.submission import InvalidManifestError, Submission, load_submission
from tests.services import require

ROOT = Path(__file__).resolve().parents[2]
STARTERS = ROOT / "sdk" / "tools" / "starters"


def starter(name: str, dest: Path, files: dict[str, str] | None = None) -> Path:
    """A copy of starter ``name`` at ``dest`` (unique content: never built before in this
    process) with ``files`` written over it."""
    shutil.copytree(STARTERS / name, dest)
    (dest / "kryt-unique.txt").write_text(uuid.uuid4().hex)
    for rel, text in (files or {}).items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(text)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dest


def with_manifest(folder: Path, **fields: str) -> Path:
    """``folder``'s ``bot.toml`` with ``fields`` replaced."""
    lines = (folder / "bot.toml").read_text().splitlines()
    kept = [line for line in lines if line.split("=")[0].strip() not in fields]
    kept += [f"{key} = {json.dumps(value)}" for key, value in fields.items()]
    (folder / "bot.toml").write_text("\n".join(kept) + "\n")
    return folder


def rootfs_or_skip(name: str) -> None:
    from sandbox.runtimes.rootfs import RootfsError, runtime_rootfs

    try:
        runtime_rootfs(get_runtime(name))
    except RootfsError as exc:
        require(False, f"the {name} runtime's file system", str(exc))


def runtime_image(name: str) -> str:
    from sandbox.base_image import BaseImageError
    from sandbox.runtimes.images import build_image

    try:
        return build_image(name)
    except BaseImageError as exc:
        require(False, f"the {name} runtime image", str(exc))
        raise


# --- entry and runtime (no engine) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("runtime", "entry", "source"),
    [
        ("go", "bot.py", "go"),
        ("go", "cmd/main.go", "go"),
        ("cpp", "bot.h", "cpp"),
        ("cpp", "main.go", "go"),
        ("java", "Main.class", "java"),
        ("node", "bot.py", "js"),
        ("python", "bot.js", "js"),
    ],
)
def test_an_entry_its_runtime_cannot_use_is_refused_in_one_line(
    runtime: str, entry: str, source: str, tmp_path: Path
) -> None:
    folder = starter(source, tmp_path / "bot", {entry: "x\n"})
    with_manifest(folder, runtime=runtime, entry=entry)
    with pytest.raises(InvalidManifestError) as caught:
        load_submission(folder)
    message = str(caught.value)
    assert "\n" not in message
    assert f"entry {entry!r}" in message and f"runtime {runtime!r}" in message, message


@pytest.mark.parametrize(
    ("runtime", "entry"),
    [("go", "main.go"), ("go", "other.go"), ("cpp", "bot.cc"), ("cpp", "src/main.cpp"),
     ("java", "org/example/Bot.java"), ("node", "bot.mjs"), ("native", "bot"),
     ("native", "run.sh"), ("python", "bot.py")],
)  # fmt: skip
def test_entries_that_mean_something_for_their_runtime_are_kept(
    runtime: str, entry: str, tmp_path: Path
) -> None:
    folder = tmp_path / "bot"
    folder.mkdir()
    (folder / "bot.toml").write_text(
        f'name = "x"\nversion = "1"\nruntime = "{runtime}"\nentry = "{entry}"\n'
    )
    (folder / entry).parent.mkdir(parents=True, exist_ok=True)
    (folder / entry).write_text("x\n")
    assert load_submission(folder).manifest.entry == entry


@pytest.mark.parametrize("folder", sorted(path.name for path in STARTERS.iterdir()))
def test_every_starter_is_still_valid(folder: str) -> None:
    sub = load_submission(STARTERS / folder)
    assert REGISTRY[sub.manifest.runtime].entry_problem(sub.manifest.entry) is None


# --- the build's output: first and last lines (no engine) --------------------------------------


def test_a_long_build_output_keeps_its_first_and_last_lines() -> None:
    sub = load_submission(STARTERS / "cpp")
    lines = [f"bot.cc:{n}: error: kryt-error-{n}" for n in range(1, 201)]
    log = [{"stream": f"{containers.BUILD_STARTED}\n" + "\n".join(lines) + "\n"}]
    log.append({"stream": f"{containers.BUILD_FAILED} the cpp build exited with status 1\n"})
    message = containers.build_failure(REGISTRY["cpp"], sub, log)
    assert message is not None
    shown = message.splitlines()[1:]
    head, tail = containers.BUILD_LOG_HEAD_LINES, containers.BUILD_LOG_LINES
    assert shown[:head] == lines[:head]
    assert shown[head] == f"[... {200 - head - tail} lines of build output skipped ...]"
    assert shown[head + 1 :] == lines[-tail:]


def test_the_kept_head_and_tail_say_how_many_lines_were_dropped_between() -> None:
    tail = containers.LogTail(2000, head=1000, head_from=containers.BUILD_STARTED)
    tail.add("Step 9/12 : RUN [the seccomp launcher's whole source]\n")
    tail.add(f"{containers.BUILD_STARTED}\n")
    lines = [f"error {n:04d}" for n in range(5000)]  # 11 characters and a line end each
    for line in lines:
        tail.add(line + "\n")
    sub = load_submission(STARTERS / "cpp")
    message = containers.build_failure(
        REGISTRY["cpp"], sub, [{"stream": tail.excerpt()}], started=True
    )
    assert message is not None
    shown = message.splitlines()[1:]
    assert "Step 9/12" not in message
    assert shown[: containers.BUILD_LOG_HEAD_LINES] == lines[: containers.BUILD_LOG_HEAD_LINES]
    assert shown[-containers.BUILD_LOG_LINES :] == lines[-containers.BUILD_LOG_LINES :]
    (between,) = [line for line in shown if "skipped" in line]
    skipped = int(between.split()[1])
    # Every line but the ones shown, give or take the two cut in half at the kept ends.
    expected = len(lines) - containers.BUILD_LOG_HEAD_LINES - containers.BUILD_LOG_LINES
    assert expected - 2 <= skipped <= expected, between
    assert len(message) < containers.BUILD_LOG_BYTES + 500


def test_a_short_kept_output_is_shown_whole() -> None:
    tail = containers.LogTail(2000, head=1000)
    tail.add("one\ntwo\n")
    tail.add("three\n")
    assert tail.excerpt() == "one\ntwo\nthree\n"


# --- bwrap's lock files ---------------------------------------------------------------------


def test_a_removed_lock_leaves_no_file_and_still_excludes(tmp_path: Path) -> None:
    from sandbox.runtimes.rootfs import locked

    path = tmp_path / ".artifact.lock"
    inside: list[int] = []
    overlaps: list[int] = []
    guard = threading.Lock()

    def hold() -> None:
        for _ in range(20):
            with locked(path, remove=True):
                with guard:
                    inside.append(1)
                    if len(inside) > 1:
                        overlaps.append(len(inside))
                time.sleep(0.001)
                with guard:
                    inside.pop()

    threads = [threading.Thread(target=hold) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == []
    assert not path.exists()


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_bwrap_build_leaves_no_lock_file(bwrap_backend: Backend, tmp_path: Path) -> None:
    from sandbox.local import BwrapBackend

    assert isinstance(bwrap_backend, BwrapBackend)
    rootfs_or_skip("go")
    sub = load_submission(starter("go", tmp_path / "bot"))
    artifact = bwrap_backend.artifact_for(sub)
    assert artifact.is_dir()
    assert not artifact.with_name(f".{artifact.name}.lock").exists()
    assert [p.name for p in artifact.parent.iterdir() if p.name.endswith(".lock")] == []


# --- Go: a package that is not main ---------------------------------------------------------


NOT_MAIN = "package kryt\n\nfunc Play() int { return 1 }\n"


def not_main(tmp_path: Path) -> Submission:
    folder = starter("go", tmp_path / "bot")
    (folder / "main.go").write_text(NOT_MAIN)
    return load_submission(folder)


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_go_package_that_is_not_main_does_not_build_under_docker(
    docker_backend: Backend, tmp_path: Path
) -> None:
    runtime_image("go")
    with pytest.raises(RuntimeBuildError) as caught:
        docker_backend.start(not_main(tmp_path), SandboxLimits(), "t-gonotmain")
    message = str(caught.value)
    assert message.startswith("example-go 1.0.0 (go) did not build: package kryt is not main"), (
        message
    )
    assert "main.go" in message


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_go_package_that_is_not_main_does_not_build_under_bwrap(
    bwrap_backend: Backend, tmp_path: Path
) -> None:
    rootfs_or_skip("go")
    with pytest.raises(RuntimeBuildError) as caught:
        bwrap_backend.start(not_main(tmp_path), SandboxLimits(), "t-gonotmain")
    message = str(caught.value)
    assert message.startswith("example-go 1.0.0 (go) did not build: package kryt is not main"), (
        message
    )


# --- many compiler errors: the first one is kept ---------------------------------------------


def many_errors(tmp_path: Path) -> Submission:
    """A C++ bot whose compiler prints far more than the kept tail: 400 errors."""
    source = "".join(f"#error kryt-error-{n:03d} {'x' * 80}\n" for n in range(400))
    folder = starter("cpp", tmp_path / "bot", {"bot.cc": source + "int main() {}\n"})
    return load_submission(folder)


def assert_first_and_last_errors(message: str) -> None:
    assert message.startswith("example-cpp 1.0.0 (cpp) did not build"), message[:300]
    assert "kryt-error-000" in message, message[:2000]
    assert "kryt-error-399" in message, message[-2000:]
    assert "lines of build output skipped ...]" in message
    assert len(message) <= containers.BUILD_LOG_BYTES + 500


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_docker_build_error_keeps_the_first_compiler_error(
    docker_backend: Backend, tmp_path: Path
) -> None:
    runtime_image("cpp")
    with pytest.raises(RuntimeBuildError) as caught:
        docker_backend.start(many_errors(tmp_path), SandboxLimits(), "t-builderrors")
    assert_first_and_last_errors(str(caught.value))


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_bwrap_build_error_keeps_the_first_compiler_error(
    bwrap_backend: Backend, tmp_path: Path
) -> None:
    rootfs_or_skip("cpp")
    with pytest.raises(RuntimeBuildError) as caught:
        bwrap_backend.start(many_errors(tmp_path), SandboxLimits(), "t-builderrors")
    assert_first_and_last_errors(str(caught.value))


# --- a build killed for memory: the same words -----------------------------------------------


def hungry(base: str, memory_mib: int = 64) -> Runtime:
    """Runtime ``base`` with a build that fills more memory than its small limit."""
    runtime = get_runtime(base)
    return dataclasses.replace(
        runtime,
        build="python3 -c 'import time; x = b\"k\" * (512 << 20); time.sleep(5)'",
        build_limits=dataclasses.replace(runtime.build_limits, memory_bytes=memory_mib << 20),
    )


OOM_WORDS = "did not build: the build ran out of its 64 MiB memory limit"


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_docker_build_killed_for_memory_says_so(docker_backend: Backend, tmp_path: Path) -> None:
    from sandbox.docker_backend import DockerBackend

    assert isinstance(docker_backend, DockerBackend)
    image = runtime_image("cpp")
    sub = load_submission(starter("cpp", tmp_path / "bot"))
    tag = f"kryt-bot:t-oom-{uuid.uuid4().hex[:12]}"
    with pytest.raises(RuntimeBuildError) as caught:
        docker_backend._build_image(sub, hungry("cpp"), image, tag)
    assert f"example-cpp 1.0.0 (cpp) {OOM_WORDS}" in str(caught.value), str(caught.value)


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_bwrap_build_killed_for_memory_says_so(bwrap_backend: Backend, tmp_path: Path) -> None:
    from sandbox.local import BwrapBackend

    assert isinstance(bwrap_backend, BwrapBackend)
    rootfs_or_skip("cpp")
    problem = bwrap_backend.untrusted_problem()
    require(problem is None, "a memory cgroup for bwrap builds", problem or "")
    sub = load_submission(starter("cpp", tmp_path / "bot"))
    with pytest.raises(RuntimeBuildError) as caught:
        bwrap_backend._build(sub, hungry("cpp"), tmp_path / "artifact", bounded=True)
    assert f"example-cpp 1.0.0 (cpp) {OOM_WORDS}" in str(caught.value), str(caught.value)


# --- the build's CPU quota ------------------------------------------------------------------


def test_docker_asks_the_engine_for_the_builds_cpu_quota() -> None:
    from sandbox.docker_backend import build_container_limits

    limits = build_container_limits(get_runtime("cpp"))
    assert get_runtime("cpp").build_limits.cpus == 1.0
    assert limits["cpuperiod"] == 100_000 and limits["cpuquota"] == 100_000
    half = dataclasses.replace(
        get_runtime("go"),
        build_limits=dataclasses.replace(get_runtime("go").build_limits, cpus=0.5),
    )
    assert build_container_limits(half)["cpuquota"] == 50_000


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_docker_build_step_has_the_builds_cpu_quota(
    docker_backend: Backend, tmp_path: Path
) -> None:
    """Read from inside the build: the step container's cgroup (v1 ``cpu.cfs_quota_us``,
    v2 ``cpu.max``)."""
    from sandbox.docker_backend import DockerBackend

    assert isinstance(docker_backend, DockerBackend)
    image = runtime_image("cpp")
    cpp = get_runtime("cpp")
    runtime = dataclasses.replace(
        cpp,
        build=(
            "echo kryt-quota $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null"
            " || cat /sys/fs/cgroup/cpu.max); exit 1"
        ),
        build_limits=dataclasses.replace(cpp.build_limits, cpus=0.5),
    )
    sub = load_submission(starter("cpp", tmp_path / "bot"))
    tag = f"kryt-bot:t-cpu-{uuid.uuid4().hex[:12]}"
    with pytest.raises(RuntimeBuildError) as caught:
        docker_backend._build_image(sub, runtime, image, tag)
    assert "kryt-quota 50000" in str(caught.value), str(caught.value)


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_bwrap_build_cgroup_has_the_builds_cpu_quota(
    bwrap_backend: Backend, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from sandbox.cgroups import BotCgroup
    from sandbox.local import BwrapBackend

    rootfs_or_skip("cpp")
    problem = bwrap_backend.untrusted_problem()
    require(problem is None, "a cgroup for bwrap builds", problem or "")
    quotas: list[float | None] = []
    create = BotCgroup.create

    def watched(*args: Any, **kwargs: Any) -> Any:
        group = create(*args, **kwargs)
        quotas.append(group.cpu_quota())  # what the kernel holds for the build cgroup
        return group

    monkeypatch.setattr(BotCgroup, "create", watched)
    cpp = get_runtime("cpp")
    runtime = dataclasses.replace(
        cpp, build="exit 1", build_limits=dataclasses.replace(cpp.build_limits, cpus=0.5)
    )
    sub = load_submission(starter("cpp", tmp_path / "bot"))
    assert isinstance(bwrap_backend, BwrapBackend)
    with pytest.raises(RuntimeBuildError):
        bwrap_backend._build(sub, runtime, tmp_path / "artifact", bounded=True)
    require(quotas != [], "a cgroup for bwrap builds", "no cgroup was made")
    require(quotas[0] is not None, "the cpu cgroup controller", "no CPU quota can be set here")
    assert quotas == [0.5]


# --- node: the submission's .npmrc ----------------------------------------------------------


PACKAGE = "kryt-pad"
#: A project .npmrc that makes npm write its debug log into the build's output: it must be
#: ignored (npm's defaults only).
HOSTILE_NPMRC = "logs-dir=/artifact/kryt-npmrc-marker\nloglevel=silly\n"


def shipped_node_modules(folder: Path) -> Submission:
    """The js starter with a package.json, its lock file, a shipped node_modules and a
    hostile .npmrc."""
    starter("js", folder)
    dependencies = {PACKAGE: "1.0.0"}
    (folder / "package.json").write_text(
        json.dumps({"name": "npmrc-bot", "version": "1.0.0", "dependencies": dependencies})
    )
    lock = {
        "name": "npmrc-bot",
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {
            "": {"name": "npmrc-bot", "version": "1.0.0", "dependencies": dependencies},
            f"node_modules/{PACKAGE}": {"version": "1.0.0"},
        },
    }
    (folder / "package-lock.json").write_text(json.dumps(lock))
    installed = folder / "node_modules" / PACKAGE
    installed.mkdir(parents=True)
    (installed / "package.json").write_text(json.dumps({"name": PACKAGE, "version": "1.0.0"}))
    (installed / "index.js").write_text("module.exports = 1;\n")
    (folder / ".npmrc").write_text(HOSTILE_NPMRC)
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return load_submission(folder)


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_shipped_node_modules_check_ignores_the_submissions_npmrc_under_docker(
    docker_backend: Backend, tmp_path: Path
) -> None:
    from sandbox.docker_backend import DockerBackend

    assert isinstance(docker_backend, DockerBackend)
    runtime_image("node")
    sub = shipped_node_modules(tmp_path / "bot")
    tag = docker_backend.image_for(sub)
    client: Any = docker_backend.client
    listing = client.containers.run(
        tag, ["ls", "-A", "/artifact"], user="65534:65534", network_mode="none", remove=True
    ).decode()
    assert "kryt-npmrc-marker" not in listing, listing


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_shipped_node_modules_check_ignores_the_submissions_npmrc_under_bwrap(
    bwrap_backend: Backend, tmp_path: Path
) -> None:
    from sandbox.local import BwrapBackend

    assert isinstance(bwrap_backend, BwrapBackend)
    rootfs_or_skip("node")
    artifact = bwrap_backend.artifact_for(shipped_node_modules(tmp_path / "bot"))
    assert sorted(p.name for p in artifact.iterdir()) == []


def test_a_docker_sdk_without_the_private_helpers_still_builds_through_the_public_method(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """engine_build sends the CPU quota through docker-py's private helpers; a docker-py
    without them gets the public build with the limits it accepts, and a warning."""
    import io

    from sandbox.docker_backend import engine_build

    calls: list[dict[str, object]] = []

    class PublicOnly:
        def build(self, **kwargs: object) -> list[dict[str, str]]:
            calls.append(kwargs)
            return [{"stream": "built\n"}]

    limits = {"memory": 1, "memswap": 1, "cpushares": 2, "cpuperiod": 3, "cpuquota": 4}
    with caplog.at_level("WARNING", logger="sandbox"):
        chunks = engine_build(
            PublicOnly(),
            io.BytesIO(b"tar"),
            tag="t",
            network_mode="none",
            labels={"a": "b"},
            limits=limits,
            timeout=5.0,
        )
    assert list(chunks) == [{"stream": "built\n"}]
    [call] = calls
    assert call["container_limits"] == {"memory": 1, "memswap": 1, "cpushares": 2}
    assert call["custom_context"] is True and call["tag"] == "t"
    assert call["network_mode"] == "none" and call["labels"] == {"a": "b"}
    assert "CPU weight only" in caplog.text
