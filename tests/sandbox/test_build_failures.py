"""Failed builds are built once, and a build's output is kept in bounded memory.

A submission that does not build raises the same :class:`RuntimeBuildError` (the compiler's
output, for its author) at once on every later start, under both backends, without running
the build again; a failure of ours (the engine went away) is not remembered. The Docker build
is streamed, keeping only the tail of what it prints.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from sandbox.backend import Backend
from sandbox.errors import ImageBuildError, SandboxInfrastructureError
from sandbox.limits import SandboxLimits
from sandbox.runtimes import RuntimeBuildError, containers, get_runtime
from sandbox.submission import Submission, load_submission
from tests.services import require

ROOT = Path(__file__).resolve().parents[2]
CPP_STARTER = ROOT / "sdk" / "tools" / "starters" / "cpp"


def broken_cpp(tmp_path: Path, source: str | None = None) -> Submission:
    """A copy of the C++ starter whose ``bot.cc`` does not compile; unique content, so its
    build was never tried before in this process."""
    folder = tmp_path / f"broken-{uuid.uuid4().hex[:8]}"
    shutil.copytree(CPP_STARTER, folder)
    text = source or "int main() { return kryt_undeclared_name; }\n"
    (folder / "bot.cc").write_text(f"// {uuid.uuid4().hex}\n{text}")
    return load_submission(folder)


def counting(monkeypatch: pytest.MonkeyPatch, target: Any, name: str) -> list[int]:
    """Wrap ``target.name`` so each call is counted (the returned list grows by one)."""
    calls: list[int] = []
    original = getattr(target, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, wrapper)
    return calls


# --- without an engine -----------------------------------------------------------------------


def test_the_log_tail_keeps_only_its_bound() -> None:
    tail = containers.LogTail(100)
    for number in range(10_000):
        tail.add(f"line {number}\n")
        assert len(tail.text()) <= 100
    assert tail.text().endswith("line 9999\n")
    tail.add("x" * 1000)
    assert tail.text() == "x" * 100
    tail.add("end")
    assert tail.text() == "x" * 97 + "end"
    assert containers.BUILD_LOG_BYTES == 16 * 1024


def test_only_the_bots_failures_are_remembered() -> None:
    failed = containers.FailedBuilds(size=2)
    failed.check("a")  # nothing remembered: no error
    failed.remember("a", RuntimeBuildError("a did not build: boom"))
    failed.remember("ours", SandboxInfrastructureError("engine went away"))
    failed.remember("image", ImageBuildError("base image missing"))
    failed.check("ours")
    failed.check("image")
    for _ in range(2):
        with pytest.raises(RuntimeBuildError, match="a did not build: boom") as caught:
            failed.check("a")
        assert caught.value.__cause__ is None
    failed.remember("b", RuntimeBuildError("b"))
    failed.remember("c", RuntimeBuildError("c"))
    failed.check("a")  # the oldest was forgotten (size 2)
    with pytest.raises(RuntimeBuildError, match="c"):
        failed.check("c")
    failed.forget()
    failed.check("c")


def test_a_bwrap_build_failing_for_our_reasons_is_tried_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from sandbox.local import BwrapBackend

    calls: list[int] = []

    def build(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        raise SandboxInfrastructureError("the runtime's file system went away")

    backend = BwrapBackend.__new__(BwrapBackend)  # no bwrap needed: the build is replaced
    monkeypatch.setattr(backend, "_build", build)
    monkeypatch.setattr(backend, "untrusted_problem", lambda: None)
    sub = broken_cpp(tmp_path)
    for _ in range(2):
        with pytest.raises(SandboxInfrastructureError, match="went away"):
            backend.artifact_for(sub, trusted=True)
    assert len(calls) == 2


# --- bwrap -----------------------------------------------------------------------------------


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_failed_bwrap_build_is_not_built_again(
    bwrap_backend: Backend, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from sandbox.runtimes.rootfs import RootfsError, runtime_rootfs

    try:
        runtime_rootfs(get_runtime("cpp"))
    except RootfsError as exc:
        require(False, "the cpp runtime's file system", str(exc))
    calls = counting(monkeypatch, bwrap_backend, "_build")
    sub = broken_cpp(tmp_path)
    messages = []
    for attempt in range(3):
        with pytest.raises(RuntimeBuildError) as caught:
            bwrap_backend.start(sub, SandboxLimits(), f"t-buildfail-{attempt}")
        messages.append(str(caught.value))
    assert "did not build" in messages[0] and "kryt_undeclared_name" in messages[0], messages[0]
    assert messages == [messages[0]] * 3
    assert len(calls) == 1


# --- Docker ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cpp_image(docker_backend: Backend) -> str:
    """The cpp runtime image (built once; CI provisioning builds it beforehand)."""
    from sandbox.base_image import BaseImageError
    from sandbox.runtimes.images import build_image

    try:
        return build_image("cpp")
    except BaseImageError as exc:
        require(False, "the cpp runtime image", str(exc))
        raise


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_failed_docker_build_is_not_built_again(
    docker_backend: Backend, cpp_image: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = counting(monkeypatch, docker_backend, "_build_image")
    sub = broken_cpp(tmp_path)
    messages = []
    for attempt in range(3):
        with pytest.raises(RuntimeBuildError) as caught:
            docker_backend.start(sub, SandboxLimits(), f"t-buildfail-{attempt}")
        messages.append(str(caught.value))
    assert messages[0].startswith("example-cpp 1.0.0 (cpp) did not build"), messages[0]
    assert "kryt_undeclared_name" in messages[0], messages[0]
    assert messages == [messages[0]] * 3
    assert len(calls) == 1


@pytest.mark.docker
@pytest.mark.timeout(600)
def test_a_docker_build_failing_for_our_reasons_is_tried_again(
    docker_backend: Backend, cpp_image: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[int] = []

    def build(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        raise ImageBuildError("the engine went away")

    monkeypatch.setattr(docker_backend, "_build_image", build)
    sub = broken_cpp(tmp_path)
    for attempt in range(2):
        with pytest.raises(ImageBuildError, match="went away"):
            docker_backend.start(sub, SandboxLimits(), f"t-buildours-{attempt}")
    assert len(calls) == 2


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_docker_build_printing_megabytes_keeps_a_bounded_tail(
    docker_backend: Backend, cpp_image: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Thousands of long compiler errors (several MB of output): the error is the usual
    one, ending with the compiler's last words, and no more than the bound is ever kept."""
    seen = {"added": 0, "kept": 0}

    class Watched(containers.LogTail):
        def add(self, text: str) -> None:
            super().add(text)
            seen["added"] += len(text)
            seen["kept"] = max(seen["kept"], sum(len(piece) for piece in self._pieces))

    monkeypatch.setattr(containers, "LogTail", Watched)
    noise = "#error " + "kryt-noise-" * 150 + "\n"
    source = noise * 1500 + "#error kryt-last-words\n"
    sub = broken_cpp(tmp_path, source)
    with pytest.raises(RuntimeBuildError) as caught:
        docker_backend.start(sub, SandboxLimits(), "t-buildnoisy")
    message = str(caught.value)
    assert message.startswith("example-cpp 1.0.0 (cpp) did not build"), message[:300]
    assert "kryt-last-words" in message, message[-2000:]
    assert seen["added"] > 4 * 1024 * 1024, seen  # the build did print megabytes
    assert seen["kept"] <= 2 * containers.BUILD_LOG_BYTES, seen
    assert len(message) <= containers.BUILD_LOG_BYTES + 500


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_build_saying_the_command_and_printing_more_than_the_tail_is_the_bots(
    docker_backend: Backend, cpp_image: str, tmp_path: Path
) -> None:
    """Compiler output quoting "The command '" and longer than the kept tail: the tail lost
    both of the build script's lines, and Docker's failed-command message was matched from
    the author's words on, so the failure read as ours (voided again and again, never
    remembered, the tournament unable to finish). Docker's message is no longer output,
    and a failed command after the script reached the bot's build is the bot's."""
    source = "".join(f"#error {'A' * 200}\n" for _ in range(150))
    source += "#error The command 'x\nint main() {}\n"
    sub = broken_cpp(tmp_path, source)
    with pytest.raises(RuntimeBuildError) as caught:
        docker_backend.start(sub, SandboxLimits(), "t-buildcommand")
    message = str(caught.value)
    assert message.startswith("example-cpp 1.0.0 (cpp) did not build"), message[:300]
    assert "#error The command 'x" in message, message[-600:]
    assert "base64" not in message and "execv" not in message


def labelled_dangling(submission: Submission) -> list[str]:
    """Untagged images carrying ``submission``'s build-stage labels."""
    from sandbox.docker_backend import build_stage_labels, docker_client

    labels = [f"{k}={v}" for k, v in build_stage_labels(submission).items()]
    found = docker_client().images.list(filters={"dangling": True, "label": labels})
    return [image.id for image in found]


@pytest.mark.docker
@pytest.mark.timeout(900)
@pytest.mark.parametrize("builds", [False, True], ids=["failing", "succeeding"])
def test_a_docker_build_leaves_no_untagged_stage_behind(
    docker_backend: Backend,
    cpp_image: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    builds: bool,
) -> None:
    """The build stage (a copy of the sources and the build's output) stayed as an untagged
    image after every build, a failed one's steps too: nothing removed them."""
    sub = broken_cpp(tmp_path, (CPP_STARTER / "bot.cc").read_text() if builds else None)
    before_removal: list[list[str]] = []
    original = docker_backend._remove_build_stage  # type: ignore[attr-defined]

    def watched(submission: Submission) -> None:
        before_removal.append(labelled_dangling(submission))
        original(submission)

    monkeypatch.setattr(docker_backend, "_remove_build_stage", watched)
    if builds:
        tag = docker_backend.image_for(sub)  # type: ignore[attr-defined]
        assert tag.startswith("kryt-bot:")
    else:
        with pytest.raises(RuntimeBuildError):
            docker_backend.image_for(sub)  # type: ignore[attr-defined]
    assert len(before_removal) == 1 and before_removal[0], "the stage was not labelled"
    assert labelled_dangling(sub) == []


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_streamed_docker_build_that_succeeds_gives_its_image(
    docker_backend: Backend, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A fresh (never built) Go submission builds through the streamed build; the image is
    then found by its tag, so a second call builds nothing."""
    from sandbox.base_image import BaseImageError
    from sandbox.runtimes.images import build_image

    try:
        build_image("go")
    except BaseImageError as exc:
        require(False, "the go runtime image", str(exc))
    folder = tmp_path / "fresh-go"
    shutil.copytree(ROOT / "sdk" / "tools" / "starters" / "go", folder)
    main = next(folder.glob("*.go"))
    main.write_text(f"{main.read_text()}\n// {uuid.uuid4().hex}\n")
    calls = counting(monkeypatch, docker_backend, "_build_image")
    sub = load_submission(folder)
    client: Any = docker_backend.client  # type: ignore[attr-defined]
    image_for: Any = docker_backend.image_for  # type: ignore[attr-defined]
    tag = image_for(sub)
    try:
        assert client.images.get(tag) is not None
        assert image_for(sub) == tag
        assert len(calls) == 1
    finally:
        client.images.remove(tag, force=True)


@pytest.mark.docker
def test_a_docker_build_past_the_clients_read_timeout_is_the_bots_and_is_removed(
    docker_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that stopped its own ``timeout`` (same uid) ran until docker-py's read timeout
    and then crashed the run with an uncaught urllib3 ReadTimeoutError: it is the bot's
    failed build now, and the step's container is removed."""
    from urllib3.exceptions import ReadTimeoutError

    from sandbox.docker_backend import DockerBackend

    assert isinstance(docker_backend, DockerBackend)
    step = "0123456789ab" * 2

    def stuck_build(*args: Any, **kwargs: Any) -> Any:
        yield {"stream": "Step 7/10 : RUN [...]\n"}
        yield {"stream": f" ---> Running in {step}\n"}
        yield {"stream": f"{containers.BUILD_STARTED}\n"}
        raise ReadTimeoutError(None, "/build", "Read timed out.")  # type: ignore[arg-type]

    removed: list[str] = []
    monkeypatch.setattr("sandbox.docker_backend.engine_build", stuck_build)
    monkeypatch.setattr(docker_backend, "_remove_by_name", removed.append)
    submission = load_submission(Path(__file__).parents[2] / "sdk" / "tools" / "starters" / "go")
    runtime = get_runtime("go")
    with pytest.raises(RuntimeBuildError, match=r"did not finish within 300 s"):
        docker_backend._build_image(submission, runtime, "kryt-runtime-go:x", "kryt-bot:x")
    assert removed == [step]

    def engine_gone(*args: Any, **kwargs: Any) -> Any:
        yield {"stream": "Step 1/10 : FROM x\n"}
        raise ReadTimeoutError(None, "/build", "Read timed out.")  # type: ignore[arg-type]

    monkeypatch.setattr("sandbox.docker_backend.engine_build", engine_gone)
    with pytest.raises(ImageBuildError):  # the build never started: ours
        docker_backend._build_image(submission, runtime, "kryt-runtime-go:x", "kryt-bot:x")


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_docker_build_step_has_a_quarter_of_a_bots_cpu_weight(
    docker_backend: Backend, cpp_image: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A submission compiling while games run yields the CPU to the bots playing: the
    engine is asked for the weight with the memory bound (and the CPU quota:
    tests/sandbox/test_build_diagnostics.py reads it from inside a build)."""
    import sandbox.docker_backend as docker_module
    from sandbox.docker_backend import BUILD_CPU_SHARES

    asked: list[dict[str, Any]] = []
    build = docker_module.engine_build

    def watched(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs)
        return build(*args, **kwargs)

    monkeypatch.setattr(docker_module, "engine_build", watched)
    with pytest.raises(RuntimeBuildError, match="kryt_undeclared_name"):
        docker_backend.start(broken_cpp(tmp_path), SandboxLimits(), "t-buildweight")
    assert len(asked) == 1
    limits = asked[0]["limits"]
    assert BUILD_CPU_SHARES == 256 and limits["cpushares"] == BUILD_CPU_SHARES
    assert limits["memory"] == limits["memswap"] == get_runtime("cpp").build_limits.memory_bytes


#: A build command that forks sleeping children until the kernel refuses one (or 3 × the
#: cap), says how many it got, kills them and fails.
FORKER = """python3 -c '
import os, signal
kids = []
try:
    for _ in range(3 * int(os.environ["KRYT_TEST_CAP"])):
        pid = os.fork()
        if pid == 0:
            try:
                os.execv("/bin/sleep", ["sleep", "60"])
            finally:
                os._exit(0)
        kids.append(pid)
except OSError as exc:
    print("refused:", exc.strerror)
print("kryt-forks", len(kids), flush=True)
for kid in kids:
    os.kill(kid, signal.SIGKILL)
raise SystemExit(1)
'"""


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_a_docker_build_cannot_fork_past_its_process_cap(
    docker_backend: Backend, cpp_image: str, tmp_path: Path
) -> None:
    """The engine takes no process limit for a build step: a build forking without end could
    fill the host's process table for its 300 s. The bundled runtimes compile without running
    the submission's code (javac's class path leaves the submission out, so it finds no
    annotation processor there; npm runs no install scripts), but a runtime an organiser
    registers may run it (make, a build script). The build script caps its uid's processes
    (RLIMIT_NPROC) at ``BuildLimits.processes``, and the refused build is the bot's failure."""
    from sandbox.docker_backend import DockerBackend

    assert isinstance(docker_backend, DockerBackend)
    cap = 40  # small: the cap counts every process of the build uid on the host
    cpp = get_runtime("cpp")
    runtime = dataclasses.replace(
        cpp,
        build=f"KRYT_TEST_CAP={cap} {FORKER}",
        build_limits=dataclasses.replace(cpp.build_limits, processes=cap),
    )
    tag = f"kryt-bot:t-forkcap-{uuid.uuid4().hex[:12]}"
    with pytest.raises(RuntimeBuildError) as caught:
        docker_backend._build_image(broken_cpp(tmp_path), runtime, cpp_image, tag)
    message = str(caught.value)
    assert message.startswith("example-cpp 1.0.0 (cpp) did not build"), message
    forks = re.search(r"kryt-forks (\d+)", message)
    assert forks is not None, message
    assert 0 < int(forks.group(1)) < cap, message
    assert "refused: Resource temporarily unavailable" in message, message
