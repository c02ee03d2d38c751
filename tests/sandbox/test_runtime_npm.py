"""The node runtime's build step: ``npm ci`` of a submission's ``package.json`` and lock file,
sandboxed and offline, from packages vendored in the submission.

Every package here is made by the test (a tarball in npm's format, its integrity hash in a
hand-written lock file): no registry is needed, and none may be reached.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from sandbox.backend import Backend
from sandbox.limits import SandboxLimits
from sandbox.runtimes import REGISTRY, RuntimeBuildError, containers
from sandbox.submission import Submission, load_submission
from tests.sandbox.conftest import roomy
from tests.services import require

ROOT = Path(__file__).resolve().parents[2]
JS_STARTER = ROOT / "sdk" / "tools" / "starters" / "js"
GREEDY = ROOT / "sdk" / "examples" / "greedy"
NODE = REGISTRY["node"]
#: The vendored package: the bot's whole strategy lives in it, so a bot that did not get it
#: cannot start (``require`` throws) and a bot that did plays with it.
PACKAGE = "kryt-first-legal"
PACKAGE_JS = """\
"use strict";
// The first legal action that is not "take", or "take" when nothing else is legal.
exports.choose = (legal) => legal.find((action) => action !== "take") || legal[0];
"""
TARBALL = f"vendor/{PACKAGE}-1.0.0.tgz"


def npm_tarball(name: str, version: str, files: dict[str, str]) -> bytes:
    """A package tarball as ``npm pack`` makes it: every file under ``package/``."""
    manifest = {"name": name, "version": version, "main": "index.js", "license": "MIT"}
    members = {"package/package.json": json.dumps(manifest, indent=2) + "\n"}
    members.update({f"package/{rel}": text for rel, text in files.items()})
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for rel, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(rel)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def integrity(data: bytes) -> str:
    """npm's Subresource Integrity string of a tarball."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def lock_file(name: str, dependencies: dict[str, str], packages: dict[str, Any]) -> str:
    """A version 3 ``package-lock.json``."""
    root = {"name": name, "version": "1.0.0", "dependencies": dependencies}
    lock = {
        "name": name,
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {"": root, **packages},
    }
    return json.dumps(lock, indent=2) + "\n"


def package_json(name: str, dependencies: dict[str, str]) -> str:
    manifest = {"name": name, "version": "1.0.0", "private": True, "dependencies": dependencies}
    return json.dumps(manifest, indent=2) + "\n"


def make_npm_bot(folder: Path, *, name: str = "npm-bot") -> Path:
    """The JavaScript starter, choosing its moves with a vendored package (``file:``)."""
    shutil.copytree(JS_STARTER, folder)
    bot = folder / "bot.js"
    source = bot.read_text()
    original = source[source.index("function choose(view) {") : source.index("function play(")]
    bot.write_text(
        source.replace(
            original,
            f'const {{ choose: chooseLegal }} = require("{PACKAGE}");\n'
            "function choose(view) {\n  return chooseLegal(view.legal_actions);\n}\n\n",
        ).replace('const NAME = "example-js";', f'const NAME = "{name}";')
    )
    toml = folder / "bot.toml"
    toml.write_text(toml.read_text().replace('name = "example-js"', f'name = "{name}"'))
    data = npm_tarball(PACKAGE, "1.0.0", {"index.js": PACKAGE_JS})
    (folder / "vendor").mkdir()
    (folder / TARBALL).write_bytes(data)
    dependencies = {PACKAGE: f"file:{TARBALL}"}
    (folder / "package.json").write_text(package_json(name, dependencies))
    locked = {
        f"node_modules/{PACKAGE}": {
            "version": "1.0.0",
            "resolved": f"file:{TARBALL}",
            "integrity": integrity(data),
            "license": "MIT",
        }
    }
    (folder / "package-lock.json").write_text(lock_file(name, dependencies, locked))
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


# --- without Docker: when a node submission is built, and how -------------------------------


def test_a_node_bot_is_built_only_with_a_package_json(tmp_path: Path) -> None:
    plain = load_submission(JS_STARTER)
    assert not containers.needs_build(NODE, plain)
    with_deps = load_submission(make_npm_bot(tmp_path / "bot"))
    assert containers.needs_build(NODE, with_deps)
    assert not NODE.compiled and REGISTRY["cpp"].compiled
    assert containers.needs_build(REGISTRY["go"], plain)  # compiled runtimes always build
    assert not containers.needs_build(REGISTRY["python"], with_deps)

    text = containers.dockerfile(NODE, "n:1", "bot.js", build=True)
    uid = containers.BUILD_UID
    assert "FROM n:1 AS build" in text and f"USER {uid}:{uid}" in text
    assert "COPY --from=build /artifact/ /artifact/" in text
    assert "ln -s /artifact/node_modules /bot/node_modules" in text
    plain_text = containers.dockerfile(NODE, "n:1", "bot.js")
    assert "AS build" not in plain_text and "node_modules" not in plain_text
    assert "node_modules" not in containers.dockerfile(REGISTRY["go"], "g:1", "main.go")


def test_the_build_is_offline_unless_the_organiser_allows_the_network() -> None:
    assert not containers.build_network_allowed(NODE, {})
    assert not containers.build_network_allowed(NODE, {"KRYT_BUILD_NETWORK": ""})
    assert not containers.build_network_allowed(NODE, {"KRYT_BUILD_NETWORK": "go, java"})
    assert containers.build_network_allowed(NODE, {"KRYT_BUILD_NETWORK": "go, node"})
    assert containers.build_network_allowed(REGISTRY["cpp"], {"KRYT_BUILD_NETWORK": "all"})
    assert "export KRYT_BUILD_ONLINE=0" in containers.build_script(NODE)
    assert "export KRYT_BUILD_ONLINE=1" in containers.build_script(NODE, online=True)
    script = (NODE.files() / "build.sh").read_text()
    assert "mode=--offline" in script and "--ignore-scripts" in script


def test_the_commands_own_failure_line_wins(tmp_path: Path) -> None:
    sub = load_submission(make_npm_bot(tmp_path / "bot"))
    log: list[dict[str, Any]] = [
        {"stream": "npm error code EUSAGE\n"},
        {"stream": f"{containers.BUILD_FAILED} package.json and package-lock.json do not match\n"},
        {"stream": f"{containers.BUILD_FAILED} the node build exited with status 1\n"},
    ]
    message = containers.build_failure(NODE, sub, log)
    assert message == (
        "npm-bot 1.0.0 (node) did not build: package.json and package-lock.json do not match\n"
        "npm error code EUSAGE"
    )


# --- under Docker ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def node_image(docker_backend: Backend) -> str:
    """The node runtime image (CI provisioning builds it beforehand; cached by hash)."""
    from sandbox.base_image import BaseImageError
    from sandbox.runtimes.images import build_image

    try:
        return build_image("node")
    except BaseImageError as exc:
        require(False, "the node runtime image", str(exc))
        raise


def _build_error(backend: Backend, submission: Submission) -> str:
    with pytest.raises(RuntimeBuildError) as info:
        backend.start(submission, SandboxLimits(), "test-npm-broken", trusted=True)
    return str(info.value)


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_bot_with_a_vendored_dependency_builds_and_plays(
    tmp_path: Path, node_image: str, docker_backend: Backend
) -> None:
    from arena.tournament.seats import SandboxSlot
    from referee.protocol.messages import TimeControl
    from referee.series import SeriesConfig, run_series
    from sandbox.docker_backend import DockerBackend

    assert isinstance(docker_backend, DockerBackend)
    submission = load_submission(make_npm_bot(tmp_path / "bot"))
    tag = docker_backend.image_for(submission)
    client: Any = docker_backend.client
    listing = client.containers.run(
        tag,
        ["sh", "-c", f"readlink /bot/node_modules; cat /artifact/node_modules/{PACKAGE}/index.js"],
        user="65534:65534",
        network_mode="none",
        remove=True,
    ).decode()
    assert listing.splitlines()[0] == "/artifact/node_modules"
    assert "exports.choose" in listing
    assert docker_backend.image_for(submission) == tag  # built once: the artifact is kept

    # Roomy clocks and start-up: a forfeit or a late start on a busy machine is not under test.
    control = TimeControl(move_ms=10_000, bank_ms=60_000, grace_ms=5_000)
    limits = roomy()
    slots = [
        SandboxSlot(docker_backend, sub, name=name, limits=limits, label=f"test-npm-{seat}")
        for seat, (name, sub) in enumerate(
            [("npm-bot", submission), ("greedy", load_submission(GREEDY))]
        )
    ]
    try:
        result = run_series(
            SeriesConfig(games=2, seed=5, time_control=control), (slots[0], slots[1])
        )
    finally:
        for slot in slots:
            slot.close()
    assert len(result.games) == 2
    for record in result.games.values():
        assert record.forfeit is None, (record.forfeit, slots[0].logs())
        assert any(move.seat == 0 for move in record.moves)


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_lock_file_that_does_not_match_is_one_clear_report(
    tmp_path: Path, node_image: str, docker_backend: Backend
) -> None:
    folder = make_npm_bot(tmp_path / "bot")
    manifest = json.loads((folder / "package.json").read_text())
    manifest["dependencies"]["left-pad"] = "^1.3.0"  # added without running npm install
    (folder / "package.json").write_text(json.dumps(manifest))
    message = _build_error(docker_backend, load_submission(folder))
    assert message.startswith(
        "npm-bot 1.0.0 (node) did not build: package.json and package-lock.json do not match"
    ), message
    assert "dependencies.left-pad: ^1.3.0 in package.json, - in the lock" in message


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_dependency_that_is_not_vendored_is_not_fetched(
    tmp_path: Path, node_image: str, docker_backend: Backend
) -> None:
    """The lock names a registry package the submission does not carry: the build has no
    network (and npm runs offline), so it fails with a report saying so."""
    folder = make_npm_bot(tmp_path / "bot")
    dependencies = {PACKAGE: f"file:{TARBALL}", "left-pad": "^1.3.0"}
    lock = json.loads((folder / "package-lock.json").read_text())
    lock["packages"][""]["dependencies"] = dependencies
    lock["packages"]["node_modules/left-pad"] = {
        "version": "1.3.0",
        "integrity": integrity(b"not vendored anywhere"),
        "license": "WTFPL",
    }
    (folder / "package-lock.json").write_text(json.dumps(lock))
    (folder / "package.json").write_text(package_json("npm-bot", dependencies))
    message = _build_error(docker_backend, load_submission(folder))
    assert message.startswith(
        "npm-bot 1.0.0 (node) did not build: a dependency in package-lock.json is not vendored"
    ), message
    assert "this build has no network" in message and "ENOTCACHED" in message


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "problem", ["no lock file", "bad json", "missing tarball", "bad integrity", "shipped tree"]
)
def test_other_broken_dependencies_are_one_clear_report(
    problem: str, tmp_path: Path, node_image: str, docker_backend: Backend
) -> None:
    folder = make_npm_bot(tmp_path / "bot")
    expected = {
        "no lock file": "package.json has no package-lock.json next to it",
        "bad json": "package.json or package-lock.json cannot be read as JSON",
        "bad integrity": "a vendored package does not match its integrity hash",
        "missing tarball": "a file named in package-lock.json is missing from the submission",
        "shipped tree": "the shipped node_modules does not match package.json",
    }[problem]
    if problem == "no lock file":
        (folder / "package-lock.json").unlink()
    elif problem == "bad json":
        (folder / "package.json").write_text('{"name": "npm-bot", ')
    elif problem == "missing tarball":
        (folder / TARBALL).unlink()
    elif problem == "bad integrity":
        # Another package under the same name: the lock's hash no longer matches.
        (folder / TARBALL).write_bytes(npm_tarball(PACKAGE, "1.0.0", {"index.js": "1;\n"}))
    else:
        # node_modules shipped with the package missing from it.
        (folder / "node_modules" / "other").mkdir(parents=True)
        (folder / "node_modules" / "other" / "index.js").write_text("exports.x = 1;\n")
        (folder / "node_modules" / "other" / "package.json").write_text(
            json.dumps({"name": "other", "version": "1.0.0"})
        )
    message = _build_error(docker_backend, load_submission(folder))
    assert message.startswith(f"npm-bot 1.0.0 (node) did not build: {expected}"), message


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_shipped_node_modules_is_checked_and_used(
    tmp_path: Path, node_image: str, docker_backend: Backend
) -> None:
    folder = make_npm_bot(tmp_path / "bot")
    # A registry dependency (a version range), installed on the author's machine and shipped.
    dependencies = {PACKAGE: "^1.0.0"}
    (folder / "package.json").write_text(package_json("npm-bot", dependencies))
    locked = {f"node_modules/{PACKAGE}": {"version": "1.0.0", "license": "MIT"}}
    (folder / "package-lock.json").write_text(lock_file("npm-bot", dependencies, locked))
    installed = folder / "node_modules" / PACKAGE
    installed.mkdir(parents=True)
    (installed / "index.js").write_text(PACKAGE_JS)
    (installed / "package.json").write_text(
        json.dumps({"name": PACKAGE, "version": "1.0.0", "main": "index.js"})
    )
    shutil.rmtree(folder / "vendor")  # not needed: node_modules is used as it is
    bot = docker_backend.start(load_submission(folder), roomy(), "test-npm-shipped")
    try:
        assert bot.alive()
    finally:
        bot.stop()


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_shipped_npm_cache_is_installed_from_offline(
    tmp_path: Path, node_image: str, docker_backend: Backend
) -> None:
    """A registry dependency whose tarball is in the submission's ``npm-cache/`` (as
    ``npm ci --cache ./npm-cache`` leaves it on the author's machine). The lock's
    ``resolved`` names a reserved ``.invalid`` host: only the cache can serve it."""
    from sandbox.docker_backend import DockerBackend

    assert isinstance(docker_backend, DockerBackend)
    folder = make_npm_bot(tmp_path / "bot")
    data = (folder / TARBALL).read_bytes()
    incoming, cache = tmp_path / "in", folder / "npm-cache"
    incoming.mkdir()
    (incoming / "package.tgz").write_bytes(data)
    (incoming / "package.tgz").chmod(0o644)
    cache.mkdir()
    cache.chmod(0o777)  # written by uid 65534
    # The image's own npm fills the cache, with no network (the host may have no npm).
    docker_backend.client.containers.run(
        node_image,
        [
            "node",
            "/opt/kryt/node/node_modules/npm/bin/npm-cli.js",
            "cache",
            "add",
            "/in/package.tgz",
            "--cache",
            "/cache",
        ],
        volumes={
            str(incoming): {"bind": "/in", "mode": "ro"},
            str(cache): {"bind": "/cache", "mode": "rw"},
        },
        environment={"HOME": "/tmp"},
        user="65534:65534",
        network_mode="none",
        remove=True,
    )
    shutil.rmtree(cache / "_logs", ignore_errors=True)
    shutil.rmtree(folder / "vendor")
    dependencies = {PACKAGE: "^1.0.0"}
    (folder / "package.json").write_text(package_json("npm-bot", dependencies))
    locked = {
        f"node_modules/{PACKAGE}": {
            "version": "1.0.0",
            "resolved": f"http://registry.invalid/{PACKAGE}/-/{PACKAGE}-1.0.0.tgz",
            "integrity": integrity(data),
            "license": "MIT",
        }
    }
    (folder / "package-lock.json").write_text(lock_file("npm-bot", dependencies, locked))
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    submission = load_submission(folder)
    assert any(rel.startswith("npm-cache/_cacache/content-v2/") for rel in submission.files)
    bot = docker_backend.start(submission, roomy(), "test-npm-cache")
    try:
        assert bot.alive()  # it required the package at start-up
    finally:
        bot.stop()


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_build_the_organiser_lets_online_still_builds(
    tmp_path: Path, node_image: str, docker_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``KRYT_BUILD_NETWORK=node``: the build gets a network and runs npm without
    ``--offline``; vendored packages still come from the submission (no registry needed)."""
    from sandbox.docker_backend import DockerBackend

    assert isinstance(docker_backend, DockerBackend)
    monkeypatch.setenv("KRYT_BUILD_NETWORK", "node")
    submission = load_submission(make_npm_bot(tmp_path / "bot", name="npm-online"))
    tag = docker_backend.image_for(submission)
    out = docker_backend.client.containers.run(
        tag,
        ["node", "-e", f"console.log(require('{PACKAGE}').choose(['take', 'lead 6H']))"],
        user="65534:65534",
        network_mode="none",
        remove=True,
    )
    assert out.decode().strip() == "lead 6H"


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_submissions_npmrc_names_no_program_the_build_runs(
    tmp_path: Path, node_image: str, docker_backend: Backend
) -> None:
    """``git=./g.sh`` in a shipped .npmrc plus a git dependency in the lock made
    ``npm ci --ignore-scripts`` run the submission's g.sh: the build ignores the .npmrc."""
    folder = tmp_path / "bot"
    folder.mkdir()
    (folder / "bot.toml").write_text(
        'name = "npmgit"\nversion = "1.0.0"\nruntime = "node"\nentry = "bot.js"\n'
    )
    (folder / "bot.js").write_text("process.exit(0);\n")
    (folder / ".npmrc").write_text("git=/src/g.sh\n")
    (folder / "g.sh").write_text("#!/bin/sh\necho EVIL-GIT >&2\nexit 1\n")
    (folder / "g.sh").chmod(0o755)
    url = "git+ssh://git@example.invalid/x.git#" + "ab" * 20
    (folder / "package.json").write_text(package_json("npmgit", {"x": url}))
    lock = {
        "name": "npmgit",
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {
            "": {"name": "npmgit", "version": "1.0.0", "dependencies": {"x": url}},
            "node_modules/x": {"version": "1.0.0", "resolved": url},
        },
    }
    (folder / "package-lock.json").write_text(json.dumps(lock))
    message = _build_error(docker_backend, load_submission(folder))
    assert "did not build" in message and "EVIL-GIT" not in message, message
