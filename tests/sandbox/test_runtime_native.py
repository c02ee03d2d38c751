"""The ``native`` runtime: an executable built elsewhere (how Rust bots are entered, see
docs/sandbox.md "Rust: entered as native") plays under Docker.

The executable is the Go example built static (``CGO_ENABLED=0``) in the go runtime image,
outside the sandbox's own build step, as an author would on their machine; the submission
is only that file and its ``bot.toml``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from sandbox.backend import Backend
from sandbox.submission import load_submission
from tests.sandbox.conftest import roomy
from tests.services import require

ROOT = Path(__file__).resolve().parents[2]
GO_STARTER = ROOT / "sdk" / "tools" / "starters" / "go"
GREEDY = ROOT / "sdk" / "examples" / "greedy"


def build_static_go_bot(client: Any, image: str, work: Path) -> Path:
    """``go build`` of the Go example into ``work/out/bot``: a static, stripped executable."""
    src, out = work / "src", work / "out"
    shutil.copytree(GO_STARTER, src)
    out.mkdir()
    out.chmod(0o777)  # written by uid 65534
    for path in [src, *src.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    client.containers.run(
        image,
        ["go", "build", "-trimpath", "-ldflags=-s -w", "-o", "/out/bot", "."],
        volumes={
            str(src): {"bind": "/src", "mode": "ro"},
            str(out): {"bind": "/out", "mode": "rw"},
        },
        working_dir="/src",
        environment={"HOME": "/tmp"},
        user="65534:65534",
        network_mode="none",
        remove=True,
    )
    return out / "bot"


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_an_executable_built_elsewhere_plays_as_native(
    tmp_path: Path, docker_backend: Backend
) -> None:
    from arena.tournament.seats import SandboxSlot
    from referee.protocol.messages import TimeControl
    from referee.series import SeriesConfig, run_series
    from sandbox.base_image import BaseImageError
    from sandbox.runtimes.images import build_image

    try:
        go_image = build_image("go")
        build_image("native")
    except BaseImageError as exc:
        require(False, "the go and native runtime images", str(exc))
        raise
    client: Any = docker_backend.client  # type: ignore[attr-defined]
    executable = build_static_go_bot(client, go_image, tmp_path / "build")
    assert executable.read_bytes()[:4] == b"\x7fELF"

    folder = tmp_path / "entry"
    folder.mkdir()
    shutil.copy(executable, folder / "bot")
    (folder / "bot").chmod(0o644)  # stored submissions lose their modes; the image restores x
    # The executable sends the Go example's name and version in its handshake.
    (folder / "bot.toml").write_text(
        'name = "example-go"\nversion = "1.0.0"\nruntime = "native"\nentry = "bot"\n'
    )
    submission = load_submission(folder)
    assert submission.files == ("bot", "bot.toml")

    # Roomy clocks and start-up: a forfeit or a late start on a busy machine is not under test.
    control = TimeControl(move_ms=10_000, bank_ms=60_000, grace_ms=5_000)
    limits = roomy()
    slots = [
        SandboxSlot(docker_backend, sub, name=name, limits=limits, label=f"test-native-{seat}")
        for seat, (name, sub) in enumerate(
            [("example-go", submission), ("greedy", load_submission(GREEDY))]
        )
    ]
    try:
        result = run_series(
            SeriesConfig(games=2, seed=3, time_control=control), (slots[0], slots[1])
        )
    finally:
        for slot in slots:
            slot.close()
    assert len(result.games) == 2
    for record in result.games.values():
        assert record.forfeit is None, (record.forfeit, slots[0].logs())
        assert any(move.seat == 0 for move in record.moves)


@pytest.mark.parametrize("language", ["rust", "Rust", "native"])
def test_kryt_bot_new_points_rust_authors_to_native(language: str, tmp_path: Path) -> None:
    from sdk.tools.template import BotTemplateError, new_bot

    with pytest.raises(BotTemplateError) as info:
        new_bot("my-rust-bot", tmp_path, language=language)
    message = str(info.value)
    assert message.startswith(f"no {language} starter: build the bot on your machine")
    assert 'runtime = "native"' in message and "Rust: entered as native" in message
    assert not (tmp_path / "my-rust-bot").exists()
