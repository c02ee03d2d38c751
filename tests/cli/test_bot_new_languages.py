"""``kryt bot new NAME --language LANG`` writes a valid starting point in each language."""

from __future__ import annotations

import os
import shutil
import subprocess
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
    folder = tmp_path / "my-bot"
    code = "".join(p.read_text() for p in folder.iterdir() if p.is_file() and p.name != "bot.toml")
    assert '"my-bot"' in code and '"example-' not in code


def test_a_new_node_bot_carries_the_protos_it_loads(tmp_path: Path) -> None:
    """The node starter loads the .proto files at run time: a new bot gets its own copy,
    byte for byte the checkout's, so it runs outside the sandbox too; the compiled languages
    (built against the runtime image's bindings) get none."""
    root = Path(__file__).resolve().parents[2] / "proto"
    assert main(["bot", "new", "js-bot", "--dir", str(tmp_path), "--language", "node"]) == 0
    carried = sorted(
        p.relative_to(tmp_path / "js-bot" / "proto").as_posix()
        for p in (tmp_path / "js-bot" / "proto").rglob("*")
        if p.is_file()
    )
    assert carried == ["grpc/health/v1/health.proto", "kryt/v1/bot.proto"]
    for rel in carried:
        assert (tmp_path / "js-bot" / "proto" / rel).read_bytes() == (root / rel).read_bytes()
    assert main(["bot", "new", "go-bot", "--dir", str(tmp_path), "--language", "go"]) == 0
    assert not (tmp_path / "go-bot" / "proto").exists()


def test_a_node_bot_without_its_protos_says_where_it_looked(tmp_path: Path) -> None:
    """Without proto/ (and no KRYT_PROTO_DIR, no /opt/kryt/proto) the starter stops at once
    with one line naming the folders it searched, not a TypeError from deep in proto-loader."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node on this machine")
    assert main(["bot", "new", "js-bot", "--dir", str(tmp_path), "--language", "node"]) == 0
    folder = tmp_path / "js-bot"
    shutil.rmtree(folder / "proto")
    if Path("/opt/kryt/proto/kryt/v1/bot.proto").exists():
        pytest.skip("this machine has /opt/kryt/proto, which the starter would find")
    # The two packages are not needed to reach the check: stand-ins on NODE_PATH.
    modules = tmp_path / "node_modules"
    for package in ("@grpc/grpc-js", "@grpc/proto-loader"):
        (modules / package).mkdir(parents=True)
        (modules / package / "index.js").write_text("module.exports = {};\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NODE_PATH": str(modules)}
    done = subprocess.run(
        [node, "bot.js", "127.0.0.1:1"], cwd=folder, env=env, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done
    assert "no kryt/v1/bot.proto in any of" in done.stderr and str(folder / "proto") in done.stderr
    assert "KRYT_PROTO_DIR" in done.stderr and "TypeError" not in done.stderr


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
