"""``kryt bot new NAME --language LANG`` writes a valid starting point in each language."""

from __future__ import annotations

from pathlib import Path

import pytest

from kryt.cli import main
from sandbox import load_submission


@pytest.mark.parametrize(
    ("language", "runtime", "entry"),
    [("node", "node", "bot.js"), ("java", "java", "Main.java"), ("cpp", "cpp", "bot.cc"),
     ("go", "go", "main.go"), ("python", "python", "bot.py")],
)  # fmt: skip
def test_a_new_bot_in_each_language_is_a_valid_submission(
    language: str, runtime: str, entry: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bot", "new", "my-bot", "--dir", str(tmp_path), "--language", language]) == 0
    assert "created" in capsys.readouterr().out
    submission = load_submission(tmp_path / "my-bot")
    assert submission.manifest.name == "my-bot"
    assert submission.manifest.runtime == runtime
    assert (tmp_path / "my-bot" / entry).is_file()


def test_an_unknown_language_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["bot", "new", "my-bot", "--dir", str(tmp_path), "--language", "cobol"])
    err = capsys.readouterr().err
    assert code == 2 and "unknown language 'cobol'" in err and "Traceback" not in err
    assert "another name" not in err  # the name and the folder are fine: no hint about them
    assert not (tmp_path / "my-bot").exists()
    code = main(["bot", "new", "my-bot", "--dir", str(tmp_path), "--language", "rust"])
    err = capsys.readouterr().err
    assert code == 2 and 'runtime = "native"' in err and "another name" not in err
    (tmp_path / "my-bot").mkdir()
    code = main(["bot", "new", "my-bot", "--dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "already exists" in err and "hint: choose another name or folder" in err


@pytest.mark.parametrize("language", ["node", "java", "cpp", "go"])
def test_a_new_bots_code_names_it_as_its_bot_toml(language: str, tmp_path: Path) -> None:
    """The handshake must say the name of bot.toml: the starter's code is renamed too."""
    assert main(["bot", "new", "my-bot", "--dir", str(tmp_path), "--language", language]) == 0
    code = "".join(p.read_text() for p in (tmp_path / "my-bot").iterdir() if p.name != "bot.toml")
    assert '"my-bot"' in code and '"example-' not in code


@pytest.mark.parametrize("language", ["node", "go"])
def test_a_new_bot_plays_as_generated(
    language: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Generated, then played at once under bubblewrap: no start-up failure, no forfeit."""
    from tests.sandbox.test_bwrap_runtimes import rootfs_or_skip

    rootfs_or_skip(language)
    assert main(["bot", "new", "fresh", "--dir", str(tmp_path), "--language", language]) == 0
    capsys.readouterr()
    code = main(
        ["play", str(tmp_path / "fresh"), "builtin:greedy", "-n", "2", "-v", "--backend", "bwrap"]
    )
    out, err = capsys.readouterr()
    assert code == 0, (out, err)
    games = [line for line in out.splitlines() if line.startswith("game ")]
    assert len(games) == 2, out
    assert not any(
        word in out + err for word in ("startup failure", "never played", "handshake says")
    ), (out, err)


@pytest.mark.parametrize("language", ["python", "node", "java", "cpp", "go"])
@pytest.mark.parametrize(
    ("name", "shown"),
    [('ok5" #', "'ok5\" #'"), ('a"b', "'a\"b'"), ("a\x1bb", "'a\\x1bb'"),
     ("Bad-Name", "'Bad-Name'"), ("x" * 41, repr("x" * 41)), ("ok\n", "'ok\\n'"),
     ("_lead", "'_lead'"), ("é", "'é'")],
)  # fmt: skip
def test_a_name_the_manifest_refuses_is_refused_before_anything_is_written(
    language: str, name: str, shown: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The name is checked against the manifest's rule before it is pasted into bot.toml and
    the code (audit-langs finding 9: 'ok5" #' made a bot named ok5 whose code did not parse):
    one error line naming it quoted and escaped, exit 2, no folder."""
    parent = tmp_path / "bots"
    code = main(["bot", "new", name, "--dir", str(parent), "--language", language])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.splitlines() == [
        f"error: cannot create bot {shown}: the name must match [a-z0-9][a-z0-9_-]{{0,39}}",
        "hint: choose another name, e.g. my-bot",
    ]
    assert "\x1b" not in err
    assert not parent.exists()  # not even the parent folder --dir names
    assert list(tmp_path.iterdir()) == []


def test_the_longest_valid_name_is_accepted(tmp_path: Path) -> None:
    """The rule's bounds: 40 characters, digits first, '-' and '_' inside."""
    name = "0" + "a-_" * 13
    assert len(name) == 40
    assert main(["bot", "new", name, "--dir", str(tmp_path), "--language", "node"]) == 0
    assert load_submission(tmp_path / name).manifest.name == name


def test_the_next_step_can_be_pasted_into_a_shell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--dir is the user's text: the `next:` line quotes the folder for the shell."""
    import shlex

    parent = tmp_path / "my bots; rm -rf x"
    assert main(["bot", "new", "my-bot", "--dir", str(parent), "--language", "go"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("next: cd ")
    words = shlex.split(lines[1].removeprefix("next: "))
    assert words[:3] == ["cd", str(parent / "my-bot"), "&&"]
    assert (parent / "my-bot" / "main.go").is_file()
