"""``kryt submit`` of a version already stored with other content is refused and leaves
nothing in the submission store (its files belong to no submission)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kryt.errors import ExitCode
from tests.cli.helpers import kryt

ROOT = Path(__file__).resolve().parents[2]


def test_a_refused_version_leaves_nothing_in_the_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "mine"
    shutil.copytree(ROOT / "sdk" / "examples" / "random", folder)
    toml = folder / "bot.toml"
    toml.write_text(toml.read_text().replace('name = "random"', 'name = "mine"'))
    code, out, err = kryt(capsys, "submit", str(folder))
    assert code == ExitCode.OK, (out, err)
    store = tmp_path / ".kryt" / "submissions"
    before = sorted(p.name for p in store.iterdir())
    assert len(before) == 1
    # Other content under the same name and version: refused, and the store is as it was.
    (folder / "bot.py").write_text((folder / "bot.py").read_text() + "\n# changed\n")
    code, out, err = kryt(capsys, "submit", str(folder))
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert "mine 1.0.0 already exists with different content" in err, err
    assert "versions are immutable: bump the version in bot.toml" in err, err
    assert "Traceback" not in err
    assert sorted(p.name for p in store.iterdir()) == before
    # The same content again is a no-op that keeps its folder.
    (folder / "bot.py").write_text((ROOT / "sdk" / "examples" / "random" / "bot.py").read_text())
    code, out, err = kryt(capsys, "submit", str(folder))
    assert code == ExitCode.OK, (out, err)
    assert sorted(p.name for p in store.iterdir()) == before


def test_a_bundled_bots_name_with_other_content_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``greedy`` is the bundled reference bot's name: other content under it would pass for
    the reference bot and make ``builtin:greedy`` unusable in the database afterwards."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "impostor"
    shutil.copytree(ROOT / "sdk" / "examples" / "greedy", folder)
    (folder / "bot.py").write_text((folder / "bot.py").read_text() + "\n# not the real one\n")
    code, out, err = kryt(capsys, "submit", str(folder))
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert "reserved for the bundled example bot (builtin:greedy)" in err, err
    assert not (tmp_path / ".kryt" / "submissions").exists() or not any(
        (tmp_path / ".kryt" / "submissions").iterdir()
    )
    # The bundled bot itself is still welcome.
    code, out, err = kryt(capsys, "submit", str(ROOT / "sdk" / "examples" / "greedy"))
    assert code == ExitCode.OK, (out, err)
    code, out, err = kryt(
        capsys, "tournament", "run", "builtin:greedy", "builtin:random", "--games", "2"
    )
    assert code == ExitCode.OK, (out, err)
