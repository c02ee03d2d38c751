"""An author's review of the any-language path: docs/writing-a-bot.md and docs/protocol.md
("Write a bot in any language") followed literally for the non-Python starters.

Each bot is made the way the docs say (``kryt bot new NAME --language ...``), changed the way
they suggest, then checked (``check_bot(..., sandbox=...)``, what ``kryt bot check`` runs) or
played (``kryt play``) in the sandboxes the docs say run that language. Node is the cheap
language and carries most tests; Go is the one compiled build (its image keeps a warm build
cache). Tests that show a bug are strict xfails naming it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.protocol.messages import TimeControl
from sandbox.backend import Backend
from sdk.tools.check import CheckReport, check_bot
from sdk.tools.template import new_bot
from tests.sandbox.test_bwrap_runtimes import rootfs_or_skip
from tests.services import require

#: Roomy clocks and start-up: a forfeit or a late start on a busy machine is not under test.
ROOMY = TimeControl(move_ms=10_000, bank_ms=60_000, grace_ms=5_000)
STARTUP = 120.0


@pytest.fixture(params=[pytest.param("docker", marks=pytest.mark.docker), "bwrap"])
def backend_name(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each isolating backend in turn, by the name ``kryt bot check --backend`` takes. The
    backend fixtures decide skip (locally) or fail (CI) as the other runtime tests do; the
    Docker one also points ``KRYT_SANDBOX_BASE_IMAGE`` at the base image it found or built,
    which the check's own backend then uses."""
    name: str = request.param
    backend: Backend = request.getfixturevalue(f"{name}_backend")
    if name == "docker":
        monkeypatch.setenv("KRYT_SANDBOX_BASE_IMAGE", backend.base_image)  # type: ignore[attr-defined]
    return name


def runtime_ready(runtime: str, backend: str) -> None:
    """The runtime's image (Docker) or its exported file system (bwrap) exists, else skip
    (or fail under CI) the way tests/sandbox/test_runtimes.py does."""
    if backend == "bwrap":
        rootfs_or_skip(runtime)
        return
    from sandbox.base_image import BaseImageError
    from sandbox.runtimes.images import build_image

    try:
        build_image(runtime)
    except BaseImageError as exc:
        require(False, f"the {runtime} runtime image", str(exc))


def starter(tmp_path: Path, name: str, language: str) -> Path:
    """``kryt bot new NAME --language LANGUAGE`` (the function behind it)."""
    return new_bot(name, tmp_path, language=language)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path.name}: the starter changed, update the test"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def check(folder: Path, backend: str, games: int = 2, **kwargs: object) -> CheckReport:
    kwargs.setdefault("time_control", ROOMY)
    return check_bot(
        folder,
        games=games,
        sandbox=backend,
        startup_timeout=STARTUP,
        **kwargs,  # type: ignore[arg-type]
    )


def kinds(report: CheckReport) -> set[str]:
    return {problem.kind for problem in report.problems}


# --- node: the starter, changed as the guide suggests ---------------------------------------

RANDOM_CHOICE = """function choose(view) {
  // Any legal action: "Returning one of view.legal_actions verbatim is always correct."
  const legal = view.legal_actions;
  return legal[Math.floor(Math.random() * legal.length)];
}
"""


@pytest.mark.timeout(600)
def test_a_node_starter_changed_to_play_any_legal_action_passes_the_check(
    tmp_path: Path, backend_name: str
) -> None:
    """writing-a-bot.md: "`kryt bot new NAME --language node|java|cpp|go` copies the starter
    of that language instead"; protocol.md: "Returning one of `view.legal_actions` verbatim
    is always correct." The author swaps the starter's choice for a random legal action and
    prints what it does to stdout (console.log): still no forfeit in either sandbox."""
    runtime_ready("node", backend_name)
    folder = starter(tmp_path, "any-legal", "node")
    bot = folder / "bot.js"
    text = bot.read_text(encoding="utf-8")
    start = text.index("function choose(view) {")
    end = text.index("}\n", text.index("return legal.find")) + 2
    bot.write_text(text[:start] + RANDOM_CHOICE + text[end:], encoding="utf-8")
    edit(
        bot,
        "const request = message.decision_request;",
        "const request = message.decision_request;\n"
        '        console.log("stdout: choosing among", request.view.legal_actions.length);',
    )
    report = check(folder, backend_name, games=3)
    assert report.ok, report.format()
    assert report.series is not None and len(report.series.games) == 3
    assert all(game.forfeit is None for game in report.series.games.values()), report.format()


@pytest.mark.timeout(600)
def test_an_es_module_bot_written_as_the_docs_say_plays(tmp_path: Path, backend_name: str) -> None:
    """protocol.md: "**ES modules** (an entry `bot.mjs`, or `"type": "module"` in
    `package.json`): `import` does not search `NODE_PATH` ... Load the image's packages with
    a `require` of your own" and "(`__dirname` is not defined in an ES module either:
    `path.dirname(fileURLToPath(import.meta.url))`". The starter turned into bot.mjs exactly
    so."""
    runtime_ready("node", backend_name)
    folder = starter(tmp_path, "esm-bot", "node")
    source = (folder / "bot.js").read_text(encoding="utf-8")
    (folder / "bot.js").unlink()
    header = (
        'import { createRequire } from "module";\n'
        'import { fileURLToPath } from "url";\n'
        "const require = createRequire(import.meta.url);\n"
    )
    source = source.replace('"use strict";\n', header, 1)
    source = source.replace(
        'const path = require("path");\n',
        'const path = require("path");\n'
        "const __dirname = path.dirname(fileURLToPath(import.meta.url));\n",
        1,
    )
    (folder / "bot.mjs").write_text(source, encoding="utf-8")
    edit(folder / "bot.toml", 'entry = "bot.js"', 'entry = "bot.mjs"')
    report = check(folder, backend_name, games=1)
    assert report.ok, report.format()


@pytest.mark.timeout(600)
def test_type_module_with_a_lock_file_and_no_dependencies_builds_and_plays(
    bwrap_backend: Backend, tmp_path: Path
) -> None:
    """protocol.md: an ES module may come from `"type": "module"` in `package.json`;
    sandbox.md: "A submission with a `package.json` at its top is built once ... It needs its
    lock file" and "The installed `node_modules` is the artifact". With no dependency at all
    npm installs nothing: the build must still succeed (an empty node_modules)."""
    runtime_ready("node", "bwrap")
    folder = starter(tmp_path, "typemod", "node")
    edit(folder / "bot.js", '"use strict";\n', 'import { createRequire } from "module";\n')
    edit(
        folder / "bot.js",
        'const fs = require("fs");',
        'const require = createRequire(import.meta.url);\nconst fs = require("fs");',
    )
    edit(folder / "bot.js", 'path.join(__dirname, "proto")', '"/nowhere"')
    edit(folder / "bot.js", 'path.join(__dirname, "../../../proto")', '"/nowhere"')
    package = {"name": "typemod", "version": "1.0.0", "private": True, "type": "module"}
    (folder / "package.json").write_text(json.dumps(package), encoding="utf-8")
    lock = {
        "name": "typemod",
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {"": {"name": "typemod", "version": "1.0.0"}},
    }
    (folder / "package-lock.json").write_text(json.dumps(lock), encoding="utf-8")
    report = check(folder, "bwrap", games=1)
    assert report.ok, report.format()


# --- node: what a broken bot is told ---------------------------------------------------------


@pytest.mark.timeout(600)
def test_node_mistakes_are_reported_in_the_bots_own_words(
    bwrap_backend: Backend, tmp_path: Path
) -> None:
    """writing-a-bot.md: "a bot that does not start (it exits, never serves, never answers
    the handshake) forfeits with its last 30 lines of output (escaped) after the reason,
    under `its process:` and `last output:`"; "The name and version your bot sends in its
    handshake must be those of its `bot.toml`: the arena refuses any other." A syntax error,
    a dependency that is not shipped, and a version bumped in bot.toml only."""
    runtime_ready("node", "bwrap")
    syntax = starter(tmp_path, "syntax", "node")
    edit(syntax / "bot.js", "function choose(view) {", "function choose(view) {{")
    missing = starter(tmp_path, "missing", "node")
    edit(missing / "bot.js", '"use strict";', '"use strict";\nconst pad = require("left-pad");')
    bumped = starter(tmp_path, "bumped", "node")
    edit(bumped / "bot.toml", 'version = "1.0.0"', 'version = "1.1.0"')

    report = check(syntax, "bwrap", games=1)
    text = report.format()
    assert not report.ok and kinds(report) == {"crash"}, text
    assert "last output:" in text and "SyntaxError" in text and "bot.js:" in text, text
    assert "Traceback" not in text

    report = check(missing, "bwrap", games=1)
    text = report.format()
    assert not report.ok and "Cannot find module 'left-pad'" in text, text

    report = check(bumped, "bwrap", games=1)
    text = report.format()
    assert not report.ok and "handshake" in kinds(report), text
    assert "'1.0.0'" in text and "'1.1.0'" in text and "send the name and version" in text


@pytest.mark.timeout(600)
def test_a_node_bot_that_never_answers_is_a_timeout_with_its_output(
    bwrap_backend: Backend, tmp_path: Path
) -> None:
    """protocol.md: "sends no reply by the hard deadline | `TIMEOUT`: game lost"; the
    check's report shows the bot's stderr, where the starter says where it serves. (Short
    clocks keep the test cheap: the result does not depend on the machine's speed.)"""
    runtime_ready("node", "bwrap")
    folder = starter(tmp_path, "silent", "node")
    edit(folder / "bot.js", "call.write({ decision:", "if (false) call.write({ decision:")
    report = check(
        folder, "bwrap", games=1, time_control=TimeControl(move_ms=200, bank_ms=300, grace_ms=50)
    )
    text = report.format()
    assert not report.ok and kinds(report) == {"timeout"}, text
    assert "silent 1.0.0 serving on unix://" in text, text


# --- node: trying the starter locally, as protocol.md says ----------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def local_node(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A node starter made by ``kryt bot new`` outside the checkout, and an environment
    where ``node`` finds @grpc/grpc-js and @grpc/proto-loader (the runtime image's own, as
    an author's ``npm install`` of them would)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node on this machine to run the starter by hand")
    modules = rootfs_or_skip("node") / "opt" / "kryt" / "node" / "node_modules"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "NODE_PATH": str(modules),
        "HOME": str(tmp_path),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    yield starter(tmp_path / "mine", "local-bot", "node"), env


@pytest.mark.timeout(300)
def test_the_node_starter_can_be_tried_locally_as_protocol_md_says(
    local_node: tuple[Path, dict[str, str]],
) -> None:
    """protocol.md: "Try a bot locally before entering it: start it on a TCP port and check
    it with `python -m sdk.tools check 127.0.0.1:50051` (see above); then enter the folder."
    The starter says how it is started: `node bot.js` with the address as its argument."""
    folder, env = local_node
    port = _free_port()
    log = folder.parent / "node.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["node", "bot.js", f"127.0.0.1:{port}"],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if b"serving on" in log.read_bytes():
                break
            time.sleep(0.1)
        said = log.read_text("utf-8", "replace")
        assert proc.poll() is None and "serving on" in said, said
        report = check_bot(f"127.0.0.1:{port}", games=1, time_control=ROOMY)
        assert report.ok, report.format()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_the_sdk_checkers_advice_for_a_node_folder_is_an_option_it_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """protocol.md: "python -m sdk.tools check path/to/bot --games 10    # a bot folder (or:
    kryt bot check path/to/bot)". For a node folder it refuses, and says how to go on: that
    advice must work with the command the author ran."""
    from sdk.tools.__main__ import main as sdk_tools

    folder = starter(tmp_path, "advice", "node")
    report = check_bot(folder, games=1)
    advice = " ".join(problem.detail for problem in report.problems)
    assert not report.ok and "--backend" in advice, report.format()
    with pytest.raises(SystemExit):
        sdk_tools(["check", "--help"])
    usage = capsys.readouterr().out
    assert "kryt bot check" in advice or "--backend" in usage, (advice, usage)


# --- node under kryt play ------------------------------------------------------------------


@pytest.mark.docker
@pytest.mark.timeout(600)
def test_kryt_play_a_node_starter_under_docker(
    docker_backend: Backend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """README: "`kryt bot new mybot --language node|java|cpp|go` writes a starting point in
    another language (run under Docker)"; `kryt play mybot builtin:greedy`."""
    from kryt.cli import main

    runtime_ready("node", "docker")
    monkeypatch.setenv("KRYT_SANDBOX_BASE_IMAGE", docker_backend.base_image)  # type: ignore[attr-defined]
    folder = starter(tmp_path, "played", "node")
    args = ["play", str(folder), "builtin:greedy", "-n", "2", "-v", "--seed", "3"]
    code = main([*args, "--backend", "docker", "--move-seconds", "10", "--bank-seconds", "60"])
    out, err = capsys.readouterr()
    assert code == 0, (out, err)
    games = [line for line in out.splitlines() if line.startswith("game ")]
    assert len(games) == 2 and not any("forfeit" in g or "failure" in g for g in games), out
    assert "Traceback" not in out + err


# --- go: the one compiled build --------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_go_bot_with_go_mod_and_stdout_builds_and_its_mistakes_name_the_line(
    bwrap_backend: Backend, tmp_path: Path
) -> None:
    """protocol.md: "**go**: Go 1.19, grpc-go 1.33; `import pb "kryt/v1"` ... No modules:
    dependencies come from the image only (no network in the build)." and sandbox.md: "A
    failed build raises `RuntimeBuildError` ... whose message is `<name> <version>
    (<runtime>) did not build: <why>` followed by the first 20 and the last 40 lines of the
    compiler's output". The author's `go mod init` leaves a go.mod (ignored in GOPATH mode)
    and the bot prints to stdout; then a typo, then a package that is not in the image."""
    runtime_ready("go", "bwrap")
    good = starter(tmp_path, "gopher", "go")
    (good / "go.mod").write_text("module gopher\n\ngo 1.19\n", encoding="utf-8")
    edit(good / "main.go", '\t"io"\n', '\t"fmt"\n\t"io"\n')
    edit(
        good / "main.go",
        "request := body.DecisionRequest\n",
        "request := body.DecisionRequest\n"
        '\t\t\tfmt.Println("stdout:", len(request.GetView().GetLegalActions()))\n',
    )
    report = check(good, "bwrap", games=2)
    assert report.ok, report.format()

    typo = starter(tmp_path, "typo", "go")
    edit(typo / "main.go", 'return "take"\n}', "return take\n}")
    report = check(typo, "bwrap", games=1)
    text = report.format()
    assert not report.ok and "typo 1.0.0 (go) did not build" in text, text
    assert "main.go:" in text and "undefined: take" in text, text

    needs = starter(tmp_path, "needs", "go")
    edit(needs / "main.go", '\t"io"\n', '\t"io"\n\n\t"github.com/pkg/errors"\n')
    edit(needs / "main.go", "func main() {", "var _ = errors.New\n\nfunc main() {")
    report = check(needs, "bwrap", games=1)
    text = report.format()
    assert not report.ok and "needs 1.0.0 (go) did not build" in text, text
    assert 'cannot find package "github.com/pkg/errors"' in text, text


# --- broken submissions: one line, never a traceback -----------------------------------------


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("entry-is-a-folder", "entry 'bot.js' named in bot.toml is not a file"),
        ("fifo", "is a device, FIFO or socket"),
        ("entry-for-another-runtime", "does not fit runtime 'go'"),
    ],
)
def test_a_broken_node_submission_is_one_line_from_kryt_bot_check(
    damage: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """protocol.md: "a submission whose entry cannot mean anything for its runtime is
    refused when it is loaded, in one line naming the field, its value and the runtime".
    Nothing is started: the manifest is read first, under any backend."""
    from kryt.cli import main

    folder = starter(tmp_path, "broken", "node")
    if damage == "entry-is-a-folder":
        (folder / "bot.js").unlink()
        (folder / "bot.js").mkdir()
    elif damage == "fifo":
        os.mkfifo(folder / "pipe")
    else:
        edit(folder / "bot.toml", 'runtime = "node"', 'runtime = "go"')
    code = main(["bot", "check", str(folder), "--backend", "none", "-n", "1"])
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    assert says in out, out
    assert "Traceback" not in out + err
