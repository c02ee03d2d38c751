"""Runtimes: ``bot.toml``'s runtime field, the registry, the build step, the runtime images,
and the JavaScript, Java, C++ and Go example bots playing the Python greedy bot under Docker
through the real referee."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from referee.rules import Action, Game
from sandbox.backend import Backend
from sandbox.limits import MiB, SandboxLimits
from sandbox.runtimes import (
    REGISTRY,
    BuildLimits,
    Runtime,
    RuntimeBuildError,
    UnknownRuntimeError,
    containers,
    get_runtime,
    java_main_class,
    register,
)
from sandbox.runtimes.images import RuntimeImageSpec, image_tag, root_tag
from sandbox.submission import InvalidManifestError, load_submission, parse_manifest
from tests.sandbox.conftest import roomy
from tests.services import require

ROOT = Path(__file__).resolve().parents[2]
BOTS = ROOT / "sdk" / "tools" / "starters"
GREEDY = ROOT / "sdk" / "examples" / "greedy"
#: Example folder -> runtime.
EXAMPLES = {"js": "node", "java": "java", "cpp": "cpp", "go": "go"}


def manifest(**fields: str) -> str:
    base = {"name": "x", "version": "1", "entry": "bot.js"}
    return "".join(f'{key} = "{value}"\n' for key, value in {**base, **fields}.items())


# --- bot.toml -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_registered_runtime_is_accepted(name: str) -> None:
    parsed = parse_manifest(manifest(runtime=name))
    assert parsed.runtime == name
    assert parsed.language == name


def test_language_python_still_works_and_aliases_are_canonical() -> None:
    assert parse_manifest(manifest(language="python", entry="bot.py")).runtime == "python"
    assert parse_manifest(manifest(runtime="javascript")).runtime == "node"
    assert parse_manifest(manifest(language="golang", runtime="go")).runtime == "go"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"runtime": "cobol"}, "runtime 'cobol' is not supported (supported: cpp, go, java"),
        ({"language": "rust"}, "language 'rust' is not supported"),
        ({"runtime": "node", "language": "python"}, "disagree; give only runtime"),
        ({}, "lacks the required field 'runtime' (one of: cpp, go, java, native, node, python)"),
    ],
)
def test_bad_runtimes_are_one_clear_error(fields: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidManifestError) as info:
        parse_manifest(manifest(**fields))
    assert message in str(info.value)


@pytest.mark.parametrize("folder", sorted(EXAMPLES))
def test_example_bots_are_valid_submissions(folder: str) -> None:
    submission = load_submission(BOTS / folder)
    assert submission.manifest.runtime == EXAMPLES[folder]
    assert submission.manifest.name == f"example-{folder}"
    assert submission.entry_path.is_file()


# --- the registry ---------------------------------------------------------------------------


def test_lookup_and_registering_a_runtime() -> None:
    assert get_runtime("c++") is REGISTRY["cpp"]
    with pytest.raises(UnknownRuntimeError, match="'zig' is not supported"):
        get_runtime("zig")
    zig = Runtime(
        name="zig",
        language="Zig",
        debs=("zig",),
        run="exec /artifact/bot",
        entry_example="main.zig",
        build="zig build-exe main.zig -femit-bin=/artifact/bot",
    )
    register(zig)
    try:
        assert parse_manifest(manifest(runtime="zig")).runtime == "zig"
        assert image_tag("zig").startswith("kryt-runtime-zig:")
    finally:
        del REGISTRY["zig"]
    with pytest.raises(ValueError, match="must match"):
        register(Runtime(name="Bad Name", language="", debs=(), run="", entry_example=""))


def test_java_main_class_follows_the_folders() -> None:
    assert java_main_class("Main.java") == "Main"
    assert java_main_class("org/example/Bot.java") == "org.example.Bot"


def test_runtime_floors_raise_limits_but_never_lower_them() -> None:
    java = REGISTRY["java"]
    raised = containers.effective_limits(java, SandboxLimits())
    assert raised.memory_bytes == 512 * MiB and raised.pids == 128
    assert raised.address_space_slack_bytes == 2048 * MiB
    generous = SandboxLimits(
        memory_bytes=1024 * MiB, pids=300, address_space_slack_bytes=4096 * MiB
    )
    assert containers.effective_limits(java, generous) == generous
    assert containers.effective_limits(REGISTRY["python"], SandboxLimits()) == SandboxLimits()


def test_launch_commands() -> None:
    python = load_submission(GREEDY)
    assert containers.launch_command(REGISTRY["python"], python, SandboxLimits()) == [
        "/bin/sh",
        "-c",
        'umask 000 && exec python3 -u "$0"',
        "bot.py",
    ]
    java = load_submission(BOTS / "java")
    command = containers.launch_command(
        REGISTRY["java"], java, SandboxLimits(memory_bytes=512 * MiB)
    )
    assert "-Xmx256m" in command[2] and command[2].endswith("org.kryt.runtime.Launch Main")
    node = load_submission(BOTS / "js")
    assert (
        "--max-old-space-size=128"
        in containers.launch_command(REGISTRY["node"], node, SandboxLimits())[2]
    )


def test_compiled_runtimes_build_in_a_separate_stage() -> None:
    text = containers.dockerfile(REGISTRY["go"], "kryt-runtime-go:abc", "main.go")
    assert text.count("FROM kryt-runtime-go:abc") == 2
    # The build's uid is its own: its process cap (RLIMIT_NPROC) must not count the bots'.
    assert containers.BUILD_UID != 65534
    uid = containers.BUILD_UID
    assert f"USER {uid}:{uid}" in text and "COPY --from=build /artifact/ /artifact/" in text
    labelled = containers.dockerfile(
        REGISTRY["go"], "g:1", "main.go", stage_labels={"org.kryt.sandbox": "build-stage"}
    ).splitlines()
    assert labelled[1] == 'LABEL org.kryt.sandbox="build-stage"', labelled
    assert labelled[0].endswith(" AS build") and labelled.count(labelled[1]) == 1
    assert "FROM" in containers.dockerfile(REGISTRY["node"], "n:1", "bot.js")
    assert "AS build" not in containers.dockerfile(REGISTRY["node"], "n:1", "bot.js")
    assert '"chmod", "0755", "/bot/bin/bot"' in containers.dockerfile(
        REGISTRY["native"], "x:1", "bin/bot"
    )
    script = containers.build_script(REGISTRY["cpp"])
    limits = REGISTRY["cpp"].build_limits
    assert f"timeout -k 5 {limits.seconds} " in script
    assert str(limits.output_bytes) in script
    # Docker's build caps its processes in the script, before the build starts; bwrap's has
    # a pids cgroup instead (its uid is the bots').
    assert limits.processes == 512 and "ulimit -p" not in script
    capped = containers.build_script(REGISTRY["cpp"], cap_processes=True)
    cap = "ulimit -p 512 2>/dev/null || ulimit -u 512 2>/dev/null || {"
    assert capped.index(cap) < capped.index(containers.BUILD_STARTED)
    with pytest.raises(ValueError, match="no build step"):
        containers.build_script(REGISTRY["native"])


@pytest.mark.parametrize("field", ["seconds", "memory_bytes", "output_bytes", "processes"])
@pytest.mark.parametrize("value", [0, -1, True, 1.5])
def test_build_limits_are_positive_integers(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"BuildLimits.{field} must be a positive integer"):
        BuildLimits(**{field: value})  # type: ignore[arg-type]


def test_build_failures_are_told_apart_from_ours() -> None:
    sub = load_submission(BOTS / "cpp")
    log: list[dict[str, Any]] = [
        {"stream": 'Step 7/10 : RUN ["/bin/sh", "/kryt-build.sh"]\n'},
        {"stream": "bot.cc:3:1: error: 'nonsense' does not name a type\n"},
        {"stream": f"{containers.BUILD_FAILED} the cpp build exited with status 1\n"},
        {"error": "The command returned a non-zero code: 1"},
    ]
    message = containers.build_failure(REGISTRY["cpp"], sub, log)
    assert message is not None
    assert message.startswith("example-cpp 1.0.0 (cpp) did not build: the cpp build exited")
    assert "'nonsense' does not name a type" in message and "Step 7/10" not in message
    assert containers.build_failure(REGISTRY["cpp"], sub, [{"error": "no space left"}]) is None


def test_a_build_failure_does_not_end_with_the_seccomp_launcher() -> None:
    """Docker repeats the failed command: under the filter that is the launcher's source
    and the filter, lines that would push the compiler's out of the kept tail."""
    from sandbox import seccomp

    sub = load_submission(BOTS / "cpp")
    command = " ".join(seccomp.confined_command(["/bin/sh", "/kryt-build.sh"]))
    errors = [f"bot.cc:{n}:1: error: 'nonsense{n}' does not name a type\n" for n in range(39)]
    log: list[dict[str, Any]] = [
        *({"stream": line} for line in errors),
        {"stream": f"{containers.BUILD_FAILED} the cpp build exited with status 1\n"},
        {"error": f"The command '{command}' returned a non-zero code: 1"},
    ]
    message = containers.build_failure(REGISTRY["cpp"], sub, log)
    assert message is not None
    lines = message.splitlines()
    assert lines[1:] == [line.rstrip("\n") for line in errors]
    assert "base64" not in message and "execv" not in message


def test_the_builds_own_words_are_never_taken_for_dockers_message() -> None:
    """Only Docker's message at the very end is cut: a compiler quoting "The command '"
    earlier keeps its lines, the script's result among them."""
    sub = load_submission(BOTS / "cpp")
    said = "bot.cc:1:2: error: #error The command 'x\n"
    failed = f"{containers.BUILD_FAILED} the cpp build exited with status 1\n"
    docker = "The command '/bin/sh -c 'exec\npython3 -c ...'' returned a non-zero code: 1\n"
    for log in (
        [{"stream": f"{containers.BUILD_STARTED}\n{said}{failed}"}, {"error": docker}],
        [{"stream": f"{containers.BUILD_STARTED}\n{said}{failed}{docker}"}],
    ):
        message = containers.build_failure(REGISTRY["cpp"], sub, log)
        assert message is not None
        assert message.splitlines()[0].endswith("the cpp build exited with status 1"), message
        assert message.splitlines()[1:] == [said.strip()]
    assert containers.failed_command_status(docker) == 1
    multiline = "The command 'a\nb' returned a non-zero code: 137"
    assert containers.failed_command_status(multiline) == 137
    assert containers.failed_command_status("no space left on device") is None
    assert containers.failed_command_status(f"{said}trailing") is None


def test_a_started_build_whose_result_left_the_tail_is_the_bots() -> None:
    sub = load_submission(BOTS / "cpp")
    log = [{"stream": "bot.cc:150:2: error: #error AAAA\n"}]
    assert containers.build_failure(REGISTRY["cpp"], sub, log) is None  # nothing says so
    message = containers.build_failure(REGISTRY["cpp"], sub, log, started=True)
    assert message is not None
    assert "not in its last output" in message.splitlines()[0]
    assert message.splitlines()[1:] == ["bot.cc:150:2: error: #error AAAA"]


def test_image_keys_track_their_inputs() -> None:
    java = RuntimeImageSpec(REGISTRY["java"])
    assert java.key() == RuntimeImageSpec(REGISTRY["java"]).key()
    other = Runtime(**{**REGISTRY["java"].__dict__, "debs": (*REGISTRY["java"].debs, "zip")})
    assert RuntimeImageSpec(other).root_key() != java.root_key()
    assert root_tag(java).startswith("kryt-runtime-root-java:")
    assert image_tag("cpp") != image_tag("go")


# --- images and real games under Docker -----------------------------------------------------


@pytest.fixture(scope="session")
def runtime_images(docker_backend: Backend) -> Callable[[str], str]:
    """Builds (or finds) a runtime's image; CI provisioning builds them all beforehand."""
    from sandbox.base_image import BaseImageError
    from sandbox.runtimes.images import build_image

    def get(name: str) -> str:
        try:
            return build_image(name)
        except BaseImageError as exc:
            require(False, f"the {name} runtime image", str(exc))
            raise

    return get


IMAGE_PROBES = {
    "node": [
        "node",
        "-e",
        "require('@grpc/grpc-js'); require('@grpc/proto-loader'); "
        "console.log(require('fs').existsSync('/opt/kryt/proto/grpc/health/v1/health.proto'))",
    ],
    "java": ["java", "-XX:-UsePerfData", "org.kryt.runtime.Launch", "--check"],
    "cpp": [
        "sh",
        "-c",
        "pkg-config --modversion grpc++ && test -f /opt/kryt/cpp/lib/libkryt_proto.a"
        " && test -f /opt/kryt/cpp/include/kryt/v1/bot.grpc.pb.h && echo true",
    ],
    "go": [
        "sh",
        "-c",
        "go version && test -f /opt/kryt/go/src/kryt/v1/bot_grpc.pb.go && echo true",
    ],
    "native": ["sh", "-c", "test -f /opt/kryt/proto/kryt/v1/bot.proto && echo true"],
}


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("name", sorted(IMAGE_PROBES))
def test_runtime_image_builds_and_carries_its_grpc(
    name: str, runtime_images: Callable[[str], str], docker_backend: Backend
) -> None:
    tag = runtime_images(name)
    client = docker_backend.client  # type: ignore[attr-defined]
    out = client.containers.run(
        tag, IMAGE_PROBES[name], user="65534:65534", network_mode="none", remove=True
    )
    text = out.decode()
    assert text.strip().splitlines()[-1] in {"true", "java runtime: classes found"}, text


def _replay_is_legal(record: Any) -> None:
    game = Game.from_deck(list(record.deck), record.dealer, turn_limit=record.turn_limit)
    for move in record.moves:
        if game.over:
            break  # the automatic final cover
        assert move.seat == game.to_move
        game.play(Action.parse(move.action))


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("folder", sorted(EXAMPLES))
def test_example_plays_the_python_greedy_bot_under_docker(
    folder: str, runtime_images: Callable[[str], str], docker_backend: Backend
) -> None:
    from arena.tournament.seats import SandboxSlot
    from referee.protocol.messages import TimeControl
    from referee.series import SeriesConfig, run_series

    runtime_images(EXAMPLES[folder])
    # Roomy clocks and start-up: a forfeit or a late start on a busy machine is not under test.
    control = TimeControl(move_ms=10_000, bank_ms=60_000, grace_ms=5_000)
    limits = roomy()
    slots = [
        SandboxSlot(
            docker_backend,
            load_submission(path),
            name=name,
            limits=limits,
            label=f"test-runtime-{folder}-{seat}",
        )
        for seat, (name, path) in enumerate(
            [(f"example-{folder}", BOTS / folder), ("greedy", GREEDY)]
        )
    ]
    try:
        result = run_series(
            SeriesConfig(games=2, seed=11, time_control=control), (slots[0], slots[1])
        )
    finally:
        for slot in slots:
            slot.close()
    assert len(result.games) == 2
    for record in result.games.values():
        assert record.forfeit is None, (record.forfeit, slots[0].logs())
        assert any(move.seat == 0 for move in record.moves)
        _replay_is_legal(record)
    assert slots[0].starts == 1  # one container for the whole series


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_a_compile_error_is_one_clear_error(
    tmp_path: Path, runtime_images: Callable[[str], str], docker_backend: Backend
) -> None:
    runtime_images("cpp")
    folder = tmp_path / "broken"
    shutil.copytree(BOTS / "cpp", folder)
    (folder / "bot.cc").write_text("int main() { return undefined_name; }\n")
    with pytest.raises(RuntimeBuildError) as info:
        docker_backend.start(load_submission(folder), SandboxLimits(), "test-runtime-broken")
    message = str(info.value)
    assert message.startswith("example-cpp 1.0.0 (cpp) did not build")
    assert "undefined_name" in message and "was not declared" in message


def test_the_java_bridge_sends_small_messages_at_once() -> None:
    """The java runtime's launcher forwards the socket to the bot's TCP port: with Nagle's
    algorithm on, each reply waited for the delayed ACK (~40 ms, most of a 50 ms grace)."""
    source = (REGISTRY["java"].files() / "org" / "kryt" / "runtime" / "Launch.java").read_text(
        encoding="utf-8"
    )
    assert "upstream.setOption(StandardSocketOptions.TCP_NODELAY, true);" in source


@pytest.mark.parametrize("runtime", ["cpp", "java"])
def test_source_file_names_reach_the_compiler_as_whole_words(runtime: str, tmp_path: Path) -> None:
    """A file named ``b.cc @q/o c.cc`` was split into words, and ``@q/o`` (an options file
    of the submission's) made g++ or javac run the submission's own program in the build."""
    import os
    import stat
    import subprocess

    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("g++", "javac", "pkg-config"):
        script = tools / tool
        script.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    src = tmp_path / "src"
    (src / "q").mkdir(parents=True)
    ext = "cc" if runtime == "cpp" else "java"
    odd = f"b.{ext} @q/o c.{ext}"
    for name in ("a." + ext, odd):  # the odd one is "o c.EXT" in a folder "b.EXT @q"
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text("")
    (src / "q" / "o").write_text("-wrapper python3,q/e.py\n")
    build = REGISTRY[runtime].build or ""
    done = subprocess.run(
        ["/bin/sh", "-c", build.replace("/artifact", str(tmp_path / "artifact"))],
        cwd=src,
        env={**os.environ, "PATH": f"{tools}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        check=False,
    )
    words = done.stdout.splitlines()
    assert f"./{odd}" in words and f"./a.{ext}" in words, words
    assert not any(word.startswith("@") for word in words), words


def test_a_build_cannot_pass_its_failure_off_as_ours() -> None:
    """Output without a final newline glued the script's result line to it, and a build that
    stopped the script left none: both read as a failure of the arena's (never remembered,
    the game voided again and again). Once the script has started the build, a failure is
    the bot's."""
    sub = load_submission(BOTS / "cpp")
    started = {"stream": f"{containers.BUILD_STARTED}\n"}
    glued = {"stream": f"x{containers.BUILD_FAILED} the cpp build exited with status 1\n"}
    message = containers.build_failure(REGISTRY["cpp"], sub, [started, glued])
    assert message is not None and "exited with status 1" in message.splitlines()[0]
    stopped = {"stream": "compiling...\n"}
    message = containers.build_failure(REGISTRY["cpp"], sub, [started, stopped])
    assert message is not None and "ended its script" in message.splitlines()[0]
    assert message.splitlines()[1:] == ["compiling..."]
    assert containers.build_failure(REGISTRY["cpp"], sub, [stopped]) is None  # never started
    script = containers.build_script(REGISTRY["cpp"])
    assert script.index(containers.BUILD_STARTED) < script.index("timeout ")
    assert f"printf '\\n%s\\n' \"{containers.BUILD_FAILED}" in script
