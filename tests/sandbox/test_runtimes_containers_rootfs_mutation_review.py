"""Mutation review of ``sandbox.runtimes.containers`` and ``sandbox.runtimes.rootfs``.

Both modules face hostile submissions, and each check below kills a mutant (a flipped
comparison, an off-by-one, a dropped flag or mode) that the other tests let pass. Nothing
here needs an engine: functions are called in process, the build script is run with
``/bin/sh`` against stand-in ``/src`` and ``/artifact`` folders, image tars are built with
:mod:`tarfile` and fed through a fake ``docker export``, and caches live under ``tmp_path``
(``KRYT_SANDBOX_CACHE_DIR``).

- **The build's network** is only for runtimes the organiser names in ``KRYT_BUILD_NETWORK``,
  by whole name (``javascript`` gives ``java`` nothing).
- **The build script** runs the build's command as one quoted word, from ``/src``, under
  ``ulimit -f`` of the output bound in 512-byte blocks, and says in its own words why a
  build failed: its status (1 too), its deadline, SIGKILL, an output over the bound.
- **The Dockerfile** chowns ``/artifact`` to the build uid before it becomes that uid, runs
  the confined build command, and links a built ``node_modules`` only when none was shipped.
- **The kept output**: the head starts at the build script's first line, the count of lines
  dropped between head and tail is exact, a mark of zero lines still separates head and tail,
  and the message stays within its byte bounds with long lines. A compiler line that merely
  contains the skip mark is output, not the mark, and one that starts with it and a count
  int() refuses (a non-ASCII digit, 5,000 digits) no longer crashes the report.
- **Failed builds** are remembered least recently used first, exactly ``size`` of them,
  raised as fresh copies; ``forget(key)`` forgets only that key.
- **The rootfs cache** is 0711 and ours (a symlink, a file, someone else's folder refused);
  artifacts are 0700 and keyed by runtime, image and 32 hex digits of the submission; a copy
  is 0755, marked last, holds the mount points, and a half-made one is replaced.
- **The image's tar**: devices and FIFOs are left out, setuid and group/other write bits
  cleared, everything owned by root, symlinks kept as links wherever they point, ``..`` and
  hard links leaving the copy refused; ``docker create`` has no network, the container is
  removed, and a failed export is an error.
- **A build's artifact** is copied world-readable with no setuid bit, symlinks as links
  (never the host file they name), a FIFO refused without leaving a half-copy.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import stat
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sandbox.limits import SandboxLimits
from sandbox.runtimes import (
    ARTIFACT_DIR,
    REGISTRY,
    BuildLimits,
    Runtime,
    RuntimeBuildError,
    containers,
)
from sandbox.runtimes import rootfs as runtime_fs
from sandbox.submission import Submission, load_submission

ROOT = Path(__file__).resolve().parents[2]
STARTERS = ROOT / "sdk" / "tools" / "starters"
NODE, CPP = REGISTRY["node"], REGISTRY["cpp"]


@pytest.fixture(scope="module")
def cpp_sub() -> Submission:
    """The C++ starter (only its name and version appear in a build's message)."""
    return load_submission(STARTERS / "cpp")


@pytest.fixture
def umask_022() -> Iterator[None]:
    """Modes checked below assume the usual umask (the referee's)."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


# --- the build's network --------------------------------------------------------------------


def test_the_build_network_is_only_for_runtimes_named_whole() -> None:
    java = REGISTRY["java"]
    assert not containers.build_network_allowed(java, {"KRYT_BUILD_NETWORK": "javascript"})
    assert not containers.build_network_allowed(NODE, {"KRYT_BUILD_NETWORK": "nodejs,go"})
    assert containers.build_network_allowed(java, {"KRYT_BUILD_NETWORK": " java ,node"})


# --- the build script, run by /bin/sh ---------------------------------------------------------


def run_script(
    tmp_path: Path,
    build: str,
    *,
    seconds: int = 60,
    output: int = 64 * 1024,
    cap: str | None = None,
) -> tuple[int, str, Path]:
    """Run the build script of a runtime whose command is ``build`` with ``/src`` and
    ``/artifact`` replaced by folders under ``tmp_path``; its status, output and src.
    ``cap``: the script caps its processes, with ``ulimit -p``/``-u`` replaced by ``cap``."""
    runtime = dataclasses.replace(
        CPP,
        name="probe",
        build=build,
        build_limits=BuildLimits(seconds=seconds, output_bytes=output),
    )
    script = containers.build_script(runtime, cap_processes=cap is not None)
    if cap is not None:
        script = script.replace("ulimit -p ", f"{cap} ").replace("ulimit -u ", f"{cap} ")
    assert "cd /src\n" in script and f"du -sb {ARTIFACT_DIR} " in script
    src, artifact = tmp_path / "src", tmp_path / "artifact"
    src.mkdir(parents=True, exist_ok=True)
    artifact.mkdir(exist_ok=True)
    script = script.replace("cd /src\n", f"cd {src}\n").replace(
        f"du -sb {ARTIFACT_DIR} ", f"du -sb {artifact} "
    )
    path = tmp_path / "kryt-build.sh"
    path.write_text(script.replace(" /artifact/", f" {artifact}/"))
    done = subprocess.run(
        ["/bin/sh", str(path)],
        cwd=tmp_path,  # not src: the script goes there itself
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout, src


def test_the_build_command_runs_quoted_from_src_and_its_status_is_said(tmp_path: Path) -> None:
    failed = containers.BUILD_FAILED
    status, out, src = run_script(tmp_path, "printf '%s\\n' \"it's $(pwd)\"; exit 1")
    assert status == 1, out
    assert f"it's {src}\n" in out
    assert f"{failed} the probe build exited with status 1" in out


def test_a_build_past_its_deadline_or_killed_is_said_so(tmp_path: Path) -> None:
    status, out, _ = run_script(tmp_path / "late", "sleep 60", seconds=1)
    assert status == 1 and "the build did not finish within 1 s" in out, out
    status, out, _ = run_script(tmp_path / "killed", "kill -9 $$")
    assert status == 1 and "the probe build was killed (SIGKILL)" in out, out


def test_the_output_bound_holds_per_file_and_in_all(tmp_path: Path) -> None:
    (tmp_path / "ok").mkdir()
    status, out, _ = run_script(tmp_path / "ok", "head -c 1000 /dev/zero > /artifact/bot")
    assert status == 0 and containers.BUILD_FAILED not in out, out
    # Two files each under ulimit -f (64 KiB = 128 blocks of 512 bytes), over it together.
    (tmp_path / "sum").mkdir()
    two = "head -c 40000 /dev/zero > /artifact/a; head -c 40000 /dev/zero > /artifact/b"
    status, out, _ = run_script(tmp_path / "sum", two)
    assert status == 1 and "more than 65536" in out, out
    # One file over the bound: its write fails at the limit, before the size check.
    (tmp_path / "one").mkdir()
    status, out, _ = run_script(tmp_path / "one", "head -c 70000 /dev/zero > /artifact/bot")
    assert status == 1 and "the probe build exited with status" in out, out


def test_a_shell_that_cannot_cap_the_processes_ends_before_the_build(tmp_path: Path) -> None:
    status, out, _ = run_script(tmp_path / "capped", "ulimit -p", cap="ulimit -p")
    assert status == 0 and "\n512\n" in out, out  # dash's process limit, in the build
    status, out, _ = run_script(tmp_path / "uncapped", "echo compiled", cap="false")
    assert status == 1 and "could not cap the build at 512 processes" in out, out
    assert containers.BUILD_STARTED not in out and "compiled" not in out


# --- the Dockerfile ---------------------------------------------------------------------------


def test_the_build_stage_is_made_then_entered_as_the_build_uid() -> None:
    text = containers.dockerfile(CPP, "c:1", "bot.cc", confine=lambda argv: ["confined", *argv])
    lines = text.splitlines()
    uid = containers.BUILD_UID
    chown = lines.index(f"RUN mkdir -p /artifact && chown {uid}:{uid} /artifact")
    user = lines.index(f"USER {uid}:{uid}")
    run = lines.index(f"RUN {json.dumps(['confined', '/bin/sh', '/kryt-build.sh'])}")
    final = lines.index("FROM c:1")
    assert chown < user < run < final
    assert lines.index("COPY bot/ /src/") < run and lines.index("ENV HOME=/tmp") < run
    assert "COPY kryt-build.sh /kryt-build.sh" in lines[:run]
    assert lines[final + 1 :] == ["COPY bot/ /bot/", "COPY --from=build /artifact/ /artifact/"]


def test_a_native_entry_with_spaces_is_one_word() -> None:
    text = containers.dockerfile(REGISTRY["native"], "n:1", "my bot; rm -rf x")
    assert 'RUN ["chmod", "0755", "/bot/my bot; rm -rf x"]' in text.splitlines()


def test_a_shipped_node_modules_is_not_replaced_by_the_built_one(tmp_path: Path) -> None:
    (line,) = [
        line
        for line in containers.dockerfile(NODE, "n:1", "bot.js", build=True).splitlines()
        if "node_modules" in line
    ]
    argv = json.loads(line.removeprefix("RUN "))
    script = (
        argv[-1].replace("/artifact/", f"{tmp_path}/artifact/").replace("/bot/", f"{tmp_path}/bot/")
    )
    (tmp_path / "artifact" / "node_modules").mkdir(parents=True)
    shipped = tmp_path / "bot" / "node_modules"
    shipped.mkdir(parents=True)
    subprocess.run(["/bin/sh", "-c", script], check=True, timeout=60)
    assert shipped.is_dir() and not shipped.is_symlink() and not list(shipped.iterdir())
    shipped.rmdir()
    subprocess.run(["/bin/sh", "-c", script], check=True, timeout=60)
    assert os.readlink(shipped) == f"{tmp_path}/artifact/node_modules"
    assert not [
        line for line in containers.dockerfile(CPP, "c:1", "x.cc").splitlines() if "ln -s" in line
    ]


def test_the_runtime_floors_of_pids_and_address_space() -> None:
    raised = containers.effective_limits(REGISTRY["java"], SandboxLimits())
    assert raised.pids == 128 and raised.address_space_slack_bytes == 2048 * 1024 * 1024


# --- the kept output: LogTail, joined_log, _excerpt --------------------------------------------


def numbered(count: int) -> list[str]:
    """``count`` lines of 10 characters each, line end included."""
    return [f"l{number:08d}\n" for number in range(count)]


@pytest.mark.parametrize(
    ("head", "limit", "expected"),
    [
        (100, 200, 970),  # head and tail end on line ends: 1000 - 10 - 20 dropped
        (105, 200, 969),  # the 11th line is shown in part: not counted
        (100, 205, 969),  # the tail starts with the last 5 characters of a line
    ],
)
def test_the_count_of_dropped_lines_is_exact(head: int, limit: int, expected: int) -> None:
    tail = containers.LogTail(limit, head=head)
    text = "".join(numbered(1000))
    for line in numbered(1000):
        tail.add(line)
    excerpt = tail.excerpt()
    assert excerpt == containers.joined_log(text[:head], text[-limit:], expected)


def test_an_output_the_head_and_tail_cover_exactly_is_whole() -> None:
    tail = containers.LogTail(200, head=100)
    for line in numbered(30):
        tail.add(line)
    assert tail.excerpt() == "".join(numbered(30))


def test_the_head_starts_at_the_build_scripts_first_line() -> None:
    started = containers.BUILD_STARTED
    tail = containers.LogTail(2000, head=60, head_from=started)
    tail.add("Step 7/9 : RUN seccomp launcher\n")
    tail.add(f" ---> Running in abc\n{started}\n")
    for line in numbered(500):
        tail.add(line)
    excerpt = tail.excerpt()
    assert excerpt.startswith(f"{started}\nl00000000\n"), excerpt[:80]
    head = f"{started}\n" + "".join(numbered(500))
    # 60 characters of head, cut mid-line: the next character is the mark's line end.
    assert excerpt[:61] == head[:60] + "\n"
    assert "Running in" not in excerpt and "Step 7/9" not in excerpt


def test_a_mark_of_zero_lines_still_separates_head_and_tail() -> None:
    joined = containers.joined_log("head-part", "tail-part", 0)
    assert joined == f"head-part\n{containers.LOG_SKIPPED} 0\ntail-part"
    assert containers.joined_log("a\n", "b", None) == "a\nb"


def failure(sub: Submission, text: str, **kwargs: Any) -> list[str]:
    """The lines of the build failure message of a cpp build whose output is ``text``."""
    log = [{"stream": f"{containers.BUILD_STARTED}\n{text}"}]
    log.append({"stream": f"{containers.BUILD_FAILED} the cpp build exited with status 1\n"})
    message = containers.build_failure(CPP, sub, log, **kwargs)
    assert message is not None
    return message.splitlines()


def test_lines_dropped_before_and_while_excerpting_add_up(cpp_sub: Submission) -> None:
    head = [f"h{n}" for n in range(25)]
    tail = [f"t{n}" for n in range(50)]
    text = containers.joined_log("\n".join(head), "\n".join(tail), 1000) + "\n"
    shown = failure(cpp_sub, text)[1:]
    assert shown[:20] == head[:20]
    assert shown[20] == f"[... {1000 + 5 + 10} lines of build output skipped ...]"
    assert shown[21:] == tail[-40:]


def test_one_skipped_line_is_singular(cpp_sub: Submission) -> None:
    lines = [f"e{n}" for n in range(61)]
    shown = failure(cpp_sub, "\n".join(lines) + "\n")[1:]
    assert shown[20] == "[... 1 line of build output skipped ...]"


def test_long_lines_keep_the_message_within_its_bounds(cpp_sub: Submission) -> None:
    lines = [f"{n:04d}" + "x" * 996 for n in range(200)]
    shown = failure(cpp_sub, "\n".join(lines) + "\n")[1:]
    between = next(i for i, line in enumerate(shown) if line.startswith("[... "))
    head = "\n".join(shown[:between])
    assert len(head) == containers.BUILD_LOG_HEAD_BYTES
    assert len("\n".join(shown)) <= containers.BUILD_LOG_BYTES + 100
    assert shown[-1] == lines[-1]


def test_a_compiler_line_that_contains_the_mark_is_output(cpp_sub: Submission) -> None:
    said = f"bot.cc:1: error: {containers.LOG_SKIPPED} 5"
    shown = failure(cpp_sub, f"{said}\nsecond\n")[1:]
    assert shown == [said, "second"]


@pytest.mark.parametrize("count", ["²", "9" * 5000])
def test_a_build_printing_a_fake_skip_mark_is_still_the_bots_failure(
    cpp_sub: Submission, count: str
) -> None:
    shown = failure(cpp_sub, f"{containers.LOG_SKIPPED} {count}\nerror\n")
    assert shown[0].endswith("did not build: the cpp build exited with status 1")


def test_an_out_of_memory_build_says_so_first(cpp_sub: Submission) -> None:
    shown = failure(cpp_sub, "cc1plus: fatal\n", out_of_memory=True)
    assert shown[0].endswith(containers.out_of_memory_reason(CPP)), shown[0]
    assert "2048 MiB" in shown[0]


def test_docker_steps_and_chunks_that_are_not_dicts_are_not_the_builds_output(
    cpp_sub: Submission,
) -> None:
    log: list[Any] = [
        "not a chunk",
        {"stream": "Step 3/9 : COPY bot/ /src/\n ---> 1a2b\nRemoving intermediate container x\n"},
        {"stream": f"{containers.BUILD_STARTED}\nbot.cc:1: error\n"},
        {"stream": f"{containers.BUILD_FAILED} the cpp build exited with status 1\n"},
    ]
    message = containers.build_failure(CPP, cpp_sub, log)
    assert message is not None and message.splitlines()[1:] == ["bot.cc:1: error"]


# --- failed builds ----------------------------------------------------------------------------


def test_failed_builds_are_kept_least_recently_used_and_raised_as_copies() -> None:
    failed = containers.FailedBuilds(size=2)
    for key in ("a", "b"):
        failed.remember(key, RuntimeBuildError(key))
    failed.remember("a", RuntimeBuildError("a again"))  # now the newest
    failed.remember("c", RuntimeBuildError("c"))  # forgets b, the oldest
    failed.check("b")
    with pytest.raises(RuntimeBuildError, match="a again") as first:
        failed.check("a")
    with pytest.raises(RuntimeBuildError, match="a again") as second:
        failed.check("a")
    assert first.value is not second.value
    failed.forget("a")
    failed.check("a")
    with pytest.raises(RuntimeBuildError, match="c"):
        failed.check("c")


# --- the rootfs cache -------------------------------------------------------------------------


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache (``KRYT_SANDBOX_CACHE_DIR``) and a fixed runtime image tag."""
    path = tmp_path / "cache"
    monkeypatch.setenv(runtime_fs.CACHE_ENV, str(path))
    from sandbox.runtimes import images

    monkeypatch.setattr(images, "image_tag", lambda name: f"kryt-runtime-{name}:k{name}")
    return path


def mode(path: Path) -> int:
    """``path``'s permission bits (not following a link)."""
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_the_cache_is_ours_and_0711(cache: Path, tmp_path: Path) -> None:
    cache.mkdir(mode=0o777)
    os.chmod(cache, 0o777)
    assert runtime_fs.cache_dir() == cache and mode(cache) == 0o711
    cache.rmdir()
    (tmp_path / "elsewhere").mkdir()
    cache.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(runtime_fs.RootfsError, match="not a directory owned by us"):
        runtime_fs.cache_dir()
    cache.unlink()
    cache.write_text("")
    with pytest.raises(runtime_fs.RootfsError, match="File exists"):
        runtime_fs.cache_dir()
    if os.geteuid() == 0:
        cache.unlink()
        cache.mkdir()
        os.chown(cache, 12345, 12345)
        with pytest.raises(runtime_fs.RootfsError, match="not a directory owned by us"):
            runtime_fs.cache_dir()


def test_artifacts_are_private_and_keyed_by_runtime_image_and_submission(cache: Path) -> None:
    sha = "0123456789abcdef" * 4
    path = runtime_fs.artifact_dir(CPP, sha)
    assert path == cache / "artifacts" / f"cpp-kcpp-{sha[:32]}"
    assert mode(path.parent) == 0o700


def fake_export(dest: Path, runtime: Runtime) -> None:
    """What ``_export`` leaves: a file system with something in it."""
    (dest / "etc").mkdir()
    (dest / "etc" / "os-release").write_text("ID=debian\n")


def test_a_copy_is_made_once_readable_marked_and_with_its_mount_points(
    cache: Path, monkeypatch: pytest.MonkeyPatch, umask_022: None
) -> None:
    calls: list[str] = []

    def export(tag: str, dest: Path, runtime: Runtime) -> None:
        calls.append(tag)
        fake_export(dest, runtime)

    monkeypatch.setattr(runtime_fs, "_export", export)
    final = cache / "rootfs" / "cpp-kcpp"
    final.mkdir(parents=True)
    (final / "half-made").write_text("")  # no marker: a copy that died half-way
    assert runtime_fs.runtime_rootfs(CPP) == final
    assert runtime_fs.runtime_rootfs(CPP) == final
    assert calls == ["kryt-runtime-cpp:kcpp"]
    assert mode(cache) == 0o711 and mode(cache / "rootfs") == 0o711 and mode(final) == 0o755
    assert not (final / "half-made").exists()
    assert (final / runtime_fs.ROOTFS_MARKER).read_text() == "kryt-runtime-cpp:kcpp\n"
    for point in runtime_fs.MOUNT_POINTS:
        assert (final / point).is_dir(), point
    assert sorted(p.name for p in (cache / "rootfs").iterdir()) == [".cpp-kcpp.lock", "cpp-kcpp"]


def test_a_failed_export_leaves_nothing_behind(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def export(tag: str, dest: Path, runtime: Runtime) -> None:
        fake_export(dest, runtime)
        raise runtime_fs.RootfsError("docker export failed")

    monkeypatch.setattr(runtime_fs, "_export", export)
    with pytest.raises(runtime_fs.RootfsError, match="docker export failed"):
        runtime_fs.runtime_rootfs(CPP)
    assert [p.name for p in (cache / "rootfs").iterdir()] == [".cpp-kcpp.lock"]


# --- the image's tar, through a fake docker export ----------------------------------------------


def image_tar(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    """A tar of ``members`` (their data given), as ``docker export`` streams one."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)
    return out.getvalue()


def entry(
    name: str, kind: bytes = tarfile.REGTYPE, mode: int = 0o644, **fields: Any
) -> tarfile.TarInfo:
    """A tar member owned by a uid that is not root."""
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.uid, info.gid = kind, mode, 1000, 1000
    for key, value in fields.items():
        setattr(info, key, value)
    return info


class FakeDocker:
    """``subprocess`` for ``_export``: ``docker create``/``rm`` recorded, ``export`` a tar."""

    PIPE = subprocess.PIPE

    def __init__(self, tar: bytes, status: int = 0) -> None:
        self.tar, self.status = tar, status
        self.commands: list[list[str]] = []

    def run(self, argv: list[str], **kwargs: Any) -> SimpleNamespace:
        self.commands.append(argv)
        return SimpleNamespace(returncode=0, stdout="cid\n", stderr="")

    def Popen(self, argv: list[str], **kwargs: Any) -> SimpleNamespace:
        self.commands.append(argv)
        status = self.status
        return SimpleNamespace(
            stdout=io.BytesIO(self.tar),
            stderr=io.BytesIO(b"export went wrong" if status else b""),
            wait=lambda timeout=None: status,
            poll=lambda: status,
            kill=lambda: None,
        )


def export_tar(
    monkeypatch: pytest.MonkeyPatch, dest: Path, tar: bytes, status: int = 0
) -> FakeDocker:
    """Run ``_export`` of a cpp image whose ``docker export`` streams ``tar`` into ``dest``."""
    from sandbox import base_image

    docker = FakeDocker(tar, status)
    monkeypatch.setattr(base_image, "docker_cli", lambda: "docker")
    monkeypatch.setattr(base_image, "image_exists", lambda tag: True)
    monkeypatch.setattr(runtime_fs, "subprocess", docker)
    dest.mkdir()
    runtime_fs._export("kryt-runtime-cpp:k", dest, CPP)
    return docker


@pytest.mark.skipif(os.geteuid() != 0, reason="unpacking as root is what is checked")
def test_an_images_tar_is_unpacked_safely(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Host paths the members name stand under tmp_path: a mutant that unpacked absolute
    # names or followed links would change these, never the host's own files.
    host = tmp_path / "host-secret"  # a host file such as /etc/shadow
    host.write_text("secret")
    os.chmod(host, 0o600)
    absolute = tmp_path / "etc" / "hostname"  # an absolute name such as /etc/hostname
    inside = Path(str(absolute).lstrip("/"))
    tar = image_tar(
        [
            (entry("usr", tarfile.DIRTYPE, 0o777), b""),
            (entry("usr/bin", tarfile.DIRTYPE, 0o755), b""),
            (entry("usr/bin/su", mode=0o4755), b"#!/bin/sh\n"),
            (entry("usr/bin/g", mode=0o2777), b"g"),
            (entry("usr/bin/hard", tarfile.LNKTYPE, 0o4755, linkname="usr/bin/su"), b""),
            (entry("usr/bin/abs", tarfile.SYMTYPE, 0o777, linkname=str(host)), b""),
            (entry(str(absolute), mode=0o666), b"image\n"),
            (entry("dev", tarfile.DIRTYPE, 0o755), b""),
            (entry("dev/mem", tarfile.CHRTYPE, 0o666, devmajor=1, devminor=1), b""),
            (entry("dev/fifo", tarfile.FIFOTYPE, 0o666), b""),
        ]
    )
    dest = tmp_path / "root"
    docker = export_tar(monkeypatch, dest, tar)
    assert docker.commands[0] == [
        "docker",
        "create",
        "--network",
        "none",
        "kryt-runtime-cpp:k",
        "/bin/true",
    ]
    assert docker.commands[-1] == ["docker", "rm", "-f", "cid"]
    assert sorted(p.name for p in (dest / "dev").iterdir()) == []
    assert mode(dest / "usr") == 0o755 and mode(dest / "usr/bin/su") == 0o755
    assert mode(dest / "usr/bin/g") == 0o755 and mode(dest / inside) == 0o644
    assert (dest / inside).read_text() == "image\n" and not absolute.exists()
    assert os.readlink(dest / "usr/bin/abs") == str(host) and mode(host) == 0o600
    assert os.lstat(dest / "usr/bin/hard").st_ino == os.lstat(dest / "usr/bin/su").st_ino
    for path in [dest / "usr", dest / "usr/bin/su", dest / "usr/bin/abs", dest / inside]:
        info = os.lstat(path)
        assert (info.st_uid, info.st_gid) == (0, 0), path


@pytest.mark.parametrize("how", ["dotdot", "through-a-symlink"])
def test_members_leaving_the_copy_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    members = [(entry("bin", tarfile.DIRTYPE, 0o755), b"")]
    if how == "dotdot":
        members.append((entry("../escape"), b"x"))
    else:  # a link may point anywhere, but nothing is unpacked through it
        members.append((entry("bin/up", tarfile.SYMTYPE, 0o777, linkname=str(tmp_path)), b""))
        members.append((entry("bin/up/escape"), b"x"))
    with pytest.raises(runtime_fs.RootfsError, match="unsafe member"):
        export_tar(monkeypatch, tmp_path / "root", image_tar(members))
    assert not (tmp_path / "escape").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="unpacking as root is what is checked")
@pytest.mark.parametrize("how", ["absolute", "dotdot", "through-a-symlink"])
def test_a_hard_link_leaving_the_copy_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    outside = tmp_path / "host-secret"
    outside.write_text("secret")
    os.chmod(outside, 0o600)
    members = [(entry("etc", tarfile.DIRTYPE, 0o755), b"")]
    if how == "absolute":
        members.append((entry("etc/leak", tarfile.LNKTYPE, linkname=str(outside)), b""))
    elif how == "dotdot":
        members.append((entry("etc/leak", tarfile.LNKTYPE, linkname="../host-secret"), b""))
    else:  # the link's target is named inside the copy, but is a symlink to the host's file
        members.append((entry("etc/s", tarfile.SYMTYPE, 0o777, linkname=str(outside)), b""))
        members.append((entry("etc/leak", tarfile.LNKTYPE, linkname="etc/s"), b""))
    try:
        with pytest.raises(runtime_fs.RootfsError, match="unsafe member"):
            export_tar(monkeypatch, tmp_path / "root", image_tar(members))
    finally:
        info = os.stat(outside)
        assert (mode(outside), info.st_nlink, info.st_uid) == (0o600, 1, os.geteuid())


def test_a_failed_export_is_an_error_and_the_container_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docker = FakeDocker(image_tar([]), status=1)
    from sandbox import base_image

    monkeypatch.setattr(base_image, "docker_cli", lambda: "docker")
    monkeypatch.setattr(base_image, "image_exists", lambda tag: True)
    monkeypatch.setattr(runtime_fs, "subprocess", docker)
    with pytest.raises(runtime_fs.RootfsError, match="export went wrong"):
        runtime_fs._export("kryt-runtime-cpp:k", tmp_path, CPP)
    assert docker.commands[-1] == ["docker", "rm", "-f", "cid"]


# --- a build's artifact -------------------------------------------------------------------------


def test_an_artifact_is_copied_readable_without_privileges_and_links_stay_links(
    tmp_path: Path, umask_022: None
) -> None:
    built = tmp_path / "out"
    (built / "lib").mkdir(parents=True)
    os.chmod(built / "lib", 0o700)
    for name, bits in {"bot": 0o4750, "lib/data": 0o600, "lib/tool": 0o654}.items():
        (built / name).write_text(name)
        os.chmod(built / name, bits)
    host = tmp_path / "host-secret"  # stands for a host file such as /etc/shadow
    host.write_text("secret")
    os.chmod(host, 0o600)
    (built / "lib" / "secret").symlink_to(host)
    (tmp_path / "artifacts").mkdir()
    final = runtime_fs.store_artifact(built, tmp_path / "artifacts" / "cpp-k-sha")
    assert mode(final) == 0o755 and mode(final / "lib") == 0o755
    assert mode(final / "bot") == 0o755 and (final / "bot").read_text() == "bot"
    assert mode(final / "lib/data") == 0o644 and mode(final / "lib/tool") == 0o755
    assert os.readlink(final / "lib" / "secret") == str(host) and mode(host) == 0o600
    assert runtime_fs.copy_tree(built, tmp_path / "again") == 5


def test_an_artifact_with_a_fifo_is_the_bots_error_and_leaves_no_copy(tmp_path: Path) -> None:
    built = tmp_path / "out"
    (built / "deep").mkdir(parents=True)
    os.mkfifo(built / "deep" / "pipe")
    (tmp_path / "artifacts").mkdir()
    with pytest.raises(RuntimeBuildError, match="'deep/pipe', which is neither"):
        runtime_fs.store_artifact(built, tmp_path / "artifacts" / "cpp-k-sha")
    assert list((tmp_path / "artifacts").iterdir()) == []
