"""Backend life cycle: start, talk, stop (idempotent), typed start-up errors, sweeping."""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import pytest

from sandbox import choose_backend
from sandbox.backend import Backend
from sandbox.death import DeathCause
from sandbox.errors import (
    BackendUnavailableError,
    BotStartupError,
    InvalidSubmissionError,
    UnsafeBackendError,
)
from sandbox.local import ProcessBackend, UnsafeSandboxWarning
from sandbox.uids import default_pool
from tests.sandbox.conftest import STARTUP_SECONDS, MakeBot, roomy
from tests.sandbox.procs import bot_processes, container_gone, survivors
from tests.sandbox.test_hostile import report
from tests.services import require

pytestmark = pytest.mark.timeout(300)


def test_start_talk_stop(any_backend: Backend, make_bot: MakeBot) -> None:
    bot = any_backend.start(make_bot("healthy"), roomy(), "test-life")
    assert bot.alive()
    assert bot.death() is None
    link = Path(bot.address.removeprefix("unix://"))
    assert os.readlink(link).startswith("/proc/self/fd/")
    assert link.parent.stat().st_mode & 0o777 == 0o700  # the bot cannot swap this link
    info = report(bot)
    if any_backend.name == "process":
        assert info["uid"] == os.geteuid()
    else:
        # A uid of its own from the pool (sandbox.uids), the one its socket is checked for.
        assert info["uid"] in default_pool() and info["uid"] != 0
        assert info["uid"] == bot.expected_uid
    processes = bot_processes(bot)
    assert processes
    bot.stop()
    assert not bot.alive()
    death = bot.death()
    assert death is not None and death.cause is DeathCause.STOPPED
    bot.stop()  # idempotent
    assert container_gone(bot)
    assert survivors(processes) == []
    assert not bot.work_dir.exists()
    assert not link.exists() and not link.is_symlink()
    with pytest.raises(RuntimeError, match="no channel"):
        _ = bot.channel


def test_context_manager_stops(any_backend: Backend, make_bot: MakeBot) -> None:
    with any_backend.start(make_bot("healthy"), roomy(), "test-ctx") as bot:
        assert report(bot)["cwd"]
    assert not bot.alive()
    assert container_gone(bot)


def test_invalid_submission_is_the_bots_fault(any_backend: Backend, make_bot: MakeBot) -> None:
    folder = make_bot("healthy")
    (folder / "bot.py").unlink()
    with pytest.raises(InvalidSubmissionError, match=re.escape("entry 'bot.py'")) as caught:
        any_backend.start(folder, roomy(), "test-invalid")
    assert isinstance(caught.value, BotStartupError)


def test_process_backend_refuses_untrusted_bots(make_bot: MakeBot) -> None:
    backend = ProcessBackend(allow_unsafe=False, trusted_roots=[])
    folder = make_bot("healthy")
    with pytest.raises(UnsafeBackendError, match="--unsafe"):
        backend.start(folder, roomy(), "test-untrusted")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with backend.start(folder, roomy(), "test-trusted", trusted=True) as bot:
            assert report(bot)["uid"] == os.geteuid()


def test_process_backend_with_unsafe_warns(make_bot: MakeBot) -> None:
    backend = ProcessBackend(allow_unsafe=True, trusted_roots=[])
    with pytest.warns(UnsafeSandboxWarning, match="WITHOUT isolation"):
        bot = backend.start(make_bot("healthy"), roomy(), "test-unsafe")
    bot.stop()


def test_process_backend_trusts_folders_under_its_roots(tmp_path: Path, make_bot: MakeBot) -> None:
    backend = ProcessBackend(allow_unsafe=False, trusted_roots=[make_bot("healthy").parent])
    assert backend.is_trusted(make_bot("victim"))
    assert not backend.is_trusted(Path("/etc"))


def test_choose_backend_explicit_and_reasons() -> None:
    process = choose_backend("process", allow_unsafe=False)
    assert process.name == "process"
    assert "trusted bots only" in process.describe()
    assert "--unsafe" in choose_backend("process", allow_unsafe=True).reason
    with pytest.raises(ValueError, match="unknown sandbox backend 'lxc'"):
        choose_backend("lxc")


@pytest.mark.docker
def test_choose_backend_auto_prefers_docker(docker_backend: Backend) -> None:
    backend = choose_backend("auto", base_image=docker_backend.base_image)  # type: ignore[attr-defined]
    assert backend.name == "docker"
    assert "Docker engine reachable" in backend.reason


def test_choose_backend_auto_falls_back_when_docker_is_unusable(bwrap_backend: Backend) -> None:
    backend = choose_backend("auto", base_image="kryt-no-such-image:missing")
    assert backend.name == "bwrap"
    assert "skipped docker" in backend.reason
    assert "kryt-no-such-image:missing" in backend.reason


def test_bwrap_needs_its_dedicated_user(bwrap_backend: Backend) -> None:
    from sandbox.local import BwrapBackend

    if os.geteuid() != 0:
        pytest.skip("the dedicated sandbox user only applies when the referee runs as root")
    with pytest.raises(BackendUnavailableError, match="no-such-kryt-user"):
        BwrapBackend(user="no-such-kryt-user")


@pytest.mark.docker
def test_sweep_spares_the_containers_of_a_live_runner(
    docker_backend: Backend, make_bot: MakeBot
) -> None:
    # A dead runner's containers are swept (tests/sandbox/test_runner_death.py); this
    # runner is alive, so its bot must survive another sweep untouched.
    bot = docker_backend.start(make_bot("healthy"), roomy(), "test-sweep-live-1")
    try:
        assert docker_backend.sweep_leftovers("test-sweep-live-") == 0
        assert not container_gone(bot)
        assert bot.sock_dir.exists()
        assert bot.alive()
    finally:
        bot.stop()
    assert container_gone(bot)


@pytest.mark.docker
def test_images_are_cached_by_content_hash(docker_backend: Backend, make_bot: MakeBot) -> None:
    from sandbox.submission import load_submission

    sub = load_submission(make_bot("healthy"))
    tag = docker_backend.image_for(sub)  # type: ignore[attr-defined]
    assert sub.sha256[:32] in tag
    assert docker_backend.image_for(sub) == tag  # type: ignore[attr-defined]


def test_forgotten_bots_are_stopped_at_exit(make_bot: MakeBot) -> None:
    import subprocess
    import sys

    folder = make_bot("healthy")
    script = (
        "import sys\n"
        "from sandbox.limits import SandboxLimits\n"
        "from sandbox.local import ProcessBackend\n"
        f"backend = ProcessBackend(trusted_roots=[{str(folder.parent)!r}])\n"
        f"bot = backend.start({str(folder)!r}, SandboxLimits(startup_timeout={STARTUP_SECONDS}))\n"
        "print(bot.work_dir, bot.pid)\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    work_dir, pid = Path(out[0]), int(out[1])
    assert not work_dir.exists()
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


def test_unreachable_engine_is_an_infrastructure_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from sandbox.errors import EngineUnavailableError, SandboxInfrastructureError

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such-docker.sock")
    with pytest.raises(EngineUnavailableError, match="no Docker engine answers") as caught:
        choose_backend("docker")
    assert isinstance(caught.value, SandboxInfrastructureError)
    assert isinstance(caught.value, BackendUnavailableError)
    assert not isinstance(caught.value, BotStartupError)
    fallback = choose_backend("auto", allow_unsafe=False)
    assert fallback.name in {"bwrap", "process"}
    assert "skipped docker: no Docker engine answers" in fallback.reason


def test_a_client_built_from_the_address_reaches_this_bot_only(
    any_backend: Backend, make_bot: MakeBot
) -> None:
    import grpc

    from tests.sandbox.test_hostile import call

    first = any_backend.start(make_bot("healthy"), roomy(), "test-addr-a")
    first_address = first.address
    first_pid = report(first)["pid"]
    first.stop()
    second = any_backend.start(make_bot("victim"), roomy(), "test-addr-b")
    try:
        assert second.address != first_address
        # A plain client with default options (the global subchannel pool).
        with grpc.insecure_channel(second.address) as channel:
            stub = channel.unary_unary("/kryt.test.Probe/Report", None, None)
            assert b"secret_len" in stub(b"", timeout=60)
        assert b"secret_len" in call(second, "Report")
    finally:
        second.stop()
    assert first_pid


@pytest.mark.docker
def test_docker_without_its_base_image_refuses_python_bots_up_front_only() -> None:
    """Explicit ``docker`` with the bot base image missing: a Python bot is refused up front
    with the way to build the image (instead of every game failing on our side later), a bot
    of another runtime is not (it runs on its own runtime's image)."""
    from sandbox.docker_backend import docker_client
    from sandbox.runtimes.images import build_image

    try:
        docker_client(timeout=10)
    except Exception as exc:  # the engine's absence is another test's subject
        require(False, "Docker", str(exc))
    try:
        build_image("node")  # cached: CI provisioning built it
    except Exception as exc:
        require(False, "the node runtime image", str(exc))
    backend = choose_backend("docker", base_image="kryt-bot-base:no-such-tag")
    problem = backend.runtime_problem("python")
    assert problem is not None
    assert (
        "kryt-bot-base:no-such-tag" in problem and "python -m sandbox.base_image build" in problem
    )
    assert backend.runtime_problem("node") is None
    unknown = backend.runtime_problem("cobol")
    assert unknown is not None and "cobol" in unknown


def test_bwrap_refuses_a_runtime_without_its_file_system_up_front(
    bwrap_backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bwrap`` runs a compiled or JavaScript bot in a copy of its runtime's image: with no
    copy made and the image missing, a bot of that runtime is refused before the first game
    with the command that builds the image (as the Docker backend does); Python bots run on
    the host's interpreter and need nothing of the kind."""
    from sandbox.runtimes import images, rootfs

    monkeypatch.setenv(rootfs.CACHE_ENV, str(tmp_path / "cache"))  # no copy made yet
    real_tag = images.image_tag
    monkeypatch.setattr(
        images,
        "image_tag",
        lambda name, spec=None: "kryt-runtime-missing:none" if name == "node" else real_tag(name),
    )
    problem = bwrap_backend.runtime_problem("node")
    assert problem is not None
    assert "node" in problem and "kryt-runtime-missing:none" in problem, problem
    assert bwrap_backend.runtime_problem("python") is None
    unknown = bwrap_backend.runtime_problem("cobol")
    assert unknown is not None and "cobol" in unknown
