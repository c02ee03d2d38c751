"""Runtimes: which language a bot is written in, and how it is built and run in the sandbox.

``bot.toml`` names a runtime (``runtime = "node"``; the older ``language = "python"`` still
works). Each runtime is one row of :data:`REGISTRY`:

- the Debian packages of its local image (built like the Python base image, see
  :mod:`sandbox.runtimes.images`), with that language's gRPC library already inside, so a
  submission carries only its own code;
- a build command for compiled languages, run once per submission in the runtime image with
  no network, under :class:`BuildLimits`, producing the immutable artifact in ``/artifact``
  (``node`` builds only a submission with a ``package.json``: ``npm ci`` of its lock file);
- the command that starts the bot (``$0`` is the manifest's ``entry``);
- floors on the sandbox limits where a language needs more than the default (a JVM's
  memory, and under bwrap its address space).

To add a runtime, append a :class:`Runtime` to :data:`REGISTRY` (or call :func:`register`),
put any set-up files in ``sandbox/runtimes/files/<name>/`` (``setup.sh`` runs once at image
build time, as root, with no network), and build its image with
``python -m sandbox.runtimes build <name>``; docs/sandbox.md ("Runtimes") walks through it.

Standard library only (plus :mod:`sandbox.errors`): :mod:`sandbox.submission` imports this
to validate manifests.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from sandbox.errors import InvalidSubmissionError

__all__ = [
    "ALIASES",
    "ARTIFACT_DIR",
    "REGISTRY",
    "BuildLimits",
    "Runtime",
    "RuntimeBuildError",
    "UnknownRuntimeError",
    "get_runtime",
    "java_main_class",
    "register",
    "runtime_names",
]

MiB = 1024 * 1024
#: Where a compiled runtime's build puts its output, and where the bot runs it from.
ARTIFACT_DIR = "/artifact"
#: Where every runtime image carries the protocol's ``.proto`` files.
PROTO_DIR = "/opt/kryt/proto"
#: Set-up files of each runtime (``files/<name>/``) and the ones every runtime gets.
FILES_DIR = Path(__file__).resolve().parent / "files"


class UnknownRuntimeError(ValueError):
    """``bot.toml`` names a runtime that is not in the registry."""


class RuntimeBuildError(InvalidSubmissionError):
    """A submission's sources did not build (the bot's fault); the message ends with the
    build's output, for the author."""


@dataclass(frozen=True)
class BuildLimits:
    """Bounds on one submission's build step (compiling is the bot's work, so it is bounded)."""

    seconds: int = 300
    memory_bytes: int = 2048 * MiB
    output_bytes: int = 64 * MiB
    #: Processes and threads of the build together (a compiler runs one per job; a JVM's
    #: javac some thirty threads).
    processes: int = 512
    #: CPUs of the build together, as a CFS quota (bwrap: the build cgroup's ``cpu.max`` /
    #: ``cpu.cfs_quota_us``; Docker: each build step's ``cpuquota``), as a bot's ``cpus``: a
    #: submission compiling while games run cannot take every core from the bots playing.
    cpus: float = 1.0

    def __post_init__(self) -> None:
        for name in ("seconds", "memory_bytes", "output_bytes", "processes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"BuildLimits.{name} must be a positive integer: {value!r}")
        cpus = self.cpus
        if isinstance(cpus, bool) or not isinstance(cpus, int | float) or not cpus > 0:
            raise ValueError(f"BuildLimits.cpus must be a positive number: {cpus!r}")


@dataclass(frozen=True)
class Runtime:
    """One language's image recipe, build and run commands, and limit floors.

    ``run`` and ``build`` are POSIX shell text. ``run`` starts in ``/bot`` (the submission,
    read-only) with ``$0`` set to the manifest's ``entry`` and ``$KRYT_BOT_ADDRESS`` naming the
    Unix socket to serve on; ``{main_class}`` and ``{heap_mib}`` are filled in by
    :meth:`launch_script`. ``build`` starts in ``/src`` (a copy of the submission) and must
    leave what ``run`` needs under ``/artifact``. With ``build_when`` (a file name), only a
    submission holding that file at its top is built (``node``: ``package.json``).
    ``entry_suffixes``, ``entry_at_top`` and ``entry_meaning`` say what the manifest's
    ``entry`` must be (:meth:`entry_problem`, checked when a submission is loaded).
    """

    name: str
    language: str
    debs: tuple[str, ...]
    run: str
    entry_example: str
    build: str | None = None
    build_when: str | None = None
    npm: bool = False
    env: tuple[tuple[str, str], ...] = ()
    min_memory_bytes: int = 0
    min_pids: int = 0
    #: Floor of the address-space rlimit's slack (bwrap caps each process's virtual memory
    #: at the memory limit plus this): a JVM reserves 1 GiB of class space it never touches.
    min_address_space_slack_bytes: int = 0
    build_limits: BuildLimits = field(default_factory=BuildLimits)
    notes: str = ""
    #: What the manifest's ``entry`` must be for this runtime: a file ending in one of these
    #: suffixes (empty: any file, e.g. ``native``'s executable). ``entry_at_top``: and at the
    #: top of the submission (``go build .`` builds only the top folder's package).
    entry_suffixes: tuple[str, ...] = ()
    entry_at_top: bool = False
    #: What ``entry`` means for this runtime, in the words of the one-line refusal.
    entry_meaning: str = ""

    @property
    def compiled(self) -> bool:
        """True when every submission must be built before it can run."""
        return self.build is not None and self.build_when is None

    def needs_build(self, files: Iterable[str]) -> bool:
        """True when a submission with these files (paths relative to its root) is built."""
        if self.build is None:
            return False
        return self.build_when is None or self.build_when in set(files)

    @property
    def image_repository(self) -> str:
        """Repository name of this runtime's image (its tag is a hash of its inputs)."""
        return f"kryt-runtime-{self.name}"

    def files(self) -> Path:
        """This runtime's set-up folder (may not exist: nothing to set up)."""
        return FILES_DIR / self.name

    def heap_mib(self, memory_bytes: int) -> int:
        """Managed-heap size for a container of ``memory_bytes``: half, leaving the rest for
        the runtime's own memory (JIT, thread stacks, gRPC buffers, the /tmp tmpfs)."""
        return max(32, memory_bytes // MiB // 2)

    def entry_problem(self, entry: str) -> str | None:
        """Why ``entry`` (a clean relative path) cannot be this runtime's entry, as one line
        naming the field, the value and the runtime; None when it can. A mismatch (``entry =
        "bot.py"`` with ``runtime = "go"``) would otherwise pass: cpp and go build every
        source and never read the entry, so the bot the author meant is not the one run."""
        path = PurePosixPath(entry)
        wrong_kind = bool(self.entry_suffixes) and not entry.endswith(self.entry_suffixes)
        if not wrong_kind and not (self.entry_at_top and len(path.parts) > 1):
            return None
        kinds = " or ".join(self.entry_suffixes)
        where = " at the top of the submission" if self.entry_at_top else ""
        meaning = f" ({self.entry_meaning})" if self.entry_meaning else ""
        return (
            f"entry {entry!r} does not fit runtime {self.name!r}: it must be a {kinds} file"
            f"{where}{meaning}"
        )

    @property
    def reads_entry_source(self) -> bool:
        """True when :meth:`entry_source_problem` looks into the entry (java: its package)."""
        return self.name == "java"

    def entry_source_problem(self, entry: str, source: str) -> str | None:
        """Why the entry's ``source`` cannot start as this runtime starts it, as one line;
        None when it can (or cannot be told before the build). java starts the class its
        path names (:func:`java_main_class`): a package clause that says otherwise compiles,
        and every start would fail with ``ClassNotFoundException``."""
        if self.name != "java":
            return None
        declared = java_package(source)
        if declared is None:
            return None
        expected = ".".join(PurePosixPath(entry).parent.parts)
        if declared == expected:
            return None
        says = f"package {declared}" if declared else "no package (the default package)"
        fix = f"'package {expected};'" if expected else "no package clause"
        return (
            f"entry {entry!r} declares {says}, but runtime 'java' starts the class its path"
            f" names, {java_main_class(entry)}: the entry needs {fix} (or move it to the"
            " folders of its package)"
        )

    def launch_script(self, entry: str, memory_bytes: int) -> str:
        """The shell text that starts the bot (``$0`` is ``entry`` when run by the backend)."""
        return self.run.format(
            main_class=shlex.quote(java_main_class(entry)) if self.name == "java" else "",
            heap_mib=self.heap_mib(memory_bytes),
        )


def java_main_class(entry: str) -> str:
    """The main class of a Java ``entry``: its path with folders as the package.

    ``Main.java`` is class ``Main``; ``org/example/Bot.java`` is ``org.example.Bot`` (the
    standard layout, which ``javac`` does not enforce but this rule needs).
    """
    path = PurePosixPath(entry)
    return ".".join([*path.parent.parts, path.name.removesuffix(".java")])


# Before a Java file's package clause there are only comments and white space (annotations
# too, but only in package-info.java, which is no main class).
_JAVA_SKIP = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.DOTALL)
_JAVA_PACKAGE = re.compile(r"package\s+([A-Za-z_$][\w$]*(?:\s*\.\s*[A-Za-z_$][\w$]*)*)\s*;")
_JAVA_FIRST_WORD = re.compile(r"[A-Za-z_$][\w$-]*")
# The words a compilation unit without a package clause can begin with (a class's
# modifiers, or an import): anything else is not for this check to judge.
_JAVA_UNIT_STARTS = frozenset(
    {"import", "public", "protected", "private", "abstract", "final", "static", "strictfp",
     "sealed", "non-sealed", "class", "interface", "enum", "record"}
)  # fmt: skip


def java_package(source: str) -> str | None:
    """The package a Java source declares (``""``: none, the default package); None when it
    cannot be told without a compiler (a unicode escape, an annotation, a syntax error):
    the build then decides."""
    text = source.removeprefix("\ufeff")
    head = _JAVA_SKIP.match(text)
    rest = text[head.end() if head else 0 :]
    declared = _JAVA_PACKAGE.match(rest)
    if declared is not None:
        return re.sub(r"\s+", "", declared.group(1))
    first = _JAVA_FIRST_WORD.match(rest)
    if first is None or first.group() not in _JAVA_UNIT_STARTS:
        return None
    # import, public, class, final, ...: the compilation unit has no package clause.
    return ""


# The sources go to the compiler as whole words (find -print0 | xargs -0): a file name with
# spaces or an "@file" in it must not become a compiler option (g++ -wrapper, javac
# -processor would run the submission's own program in the build).
# xargs reports any failure of its command as status 123: the compiler's own status is said
# first, on a line with the build's failure mark (the reason the report quotes). A compiler
# killed by a signal is only mentioned: the build script's summary says why (the time limit's
# SIGTERM, the OOM killer). The command exits 1 either way (xargs turns 255 into 124, which
# would read as the time limit). Only files (-type f): a folder "lib.cc/" is no source.
_BUILD_C = (
    'find . -type f \\( -name "*.cc" -o -name "*.cpp" \\) -print0 | sort -z | xargs -0 sh -c'
    ' \'g++ -std=c++17 -O2 -pipe -I/opt/kryt/cpp/include "$@"'
    " -o /artifact/bot -L/opt/kryt/cpp/lib -lkryt_proto"
    " $(pkg-config --libs grpc++ protobuf) -lpthread"
    ' || { status=$?; if [ "$status" -gt 128 ]; then'
    ' printf "\\ng++ was killed by signal %s\\n" "$((status - 128))"; else'
    ' printf "\\nkryt-build-failed: g++ failed with status %s\\n" "$status"; fi;'
    " exit 1; }' g++"
)
# `go build -o` of a package that is not main writes the package's archive, not a program:
# the build "succeeded" and every start failed with "Permission denied". The package clause
# is checked first, and a package other than main is the bot's build failure.
_BUILD_GO = (
    "name=$(go list -f '{{.Name}}' .)\n"
    'if [ "$name" != main ]; then\n'
    "  files=$(go list -f '{{join .GoFiles \" \"}}' .)\n"
    '  echo "kryt-build-failed: package $name is not main: the files of the top folder'
    " ($files) must say 'package main' and define func main, for go build to make a program\"\n"
    "  exit 1\n"
    "fi\n"
    "go build -trimpath -o /artifact/bot ."
)
_BUILD_JAVA = (
    "mkdir -p /artifact/classes"
    ' && find . -type f -name "*.java" -print0 | sort -z'
    ' | xargs -0 sh -c \'javac -nowarn -encoding UTF-8 -d /artifact/classes "$@"'
    ' || { status=$?; if [ "$status" -gt 128 ]; then'
    ' printf "\\njavac was killed by signal %s\\n" "$((status - 128))"; else'
    ' printf "\\nkryt-build-failed: javac failed with status %s\\n" "$status"; fi;'
    " exit 1; }' javac"
)

#: ``npm ci`` of a submission's lock file (see files/node/build.sh); offline by default.
_BUILD_NODE = "sh /opt/kryt/setup/build.sh"

#: Every known runtime, by name. Add a row (or call :func:`register`) to add a language.
REGISTRY: dict[str, Runtime] = {
    runtime.name: runtime
    for runtime in (
        Runtime(
            name="python",
            language="Python 3.11",
            debs=("python3",),
            run='exec python3 -u "$0"',
            entry_example="bot.py",
            entry_suffixes=(".py",),
            entry_meaning="the script python3 runs",
            notes="the kryt-bot-base image: grpcio, protobuf and this project's sdk",
        ),
        Runtime(
            name="node",
            language="JavaScript (Node.js 18)",
            debs=("nodejs",),
            run='exec node --max-old-space-size={heap_mib} "$0"',
            entry_example="bot.js",
            entry_suffixes=(".js", ".mjs", ".cjs"),
            entry_meaning="the script node runs",
            build=_BUILD_NODE,
            build_when="package.json",
            npm=True,
            env=(("NODE_PATH", "/opt/kryt/node/node_modules"),),
            notes="@grpc/grpc-js and @grpc/proto-loader on NODE_PATH; npm ci for package.json",
        ),
        Runtime(
            name="java",
            language="Java 17",
            debs=(
                "openjdk-17-jdk-headless",
                "libgrpc-java",
                "libprotobuf-java",
                "libguava-java",
                "libgoogle-gson-java",
                "libnetty-java",
                "libperfmark-java",
                "protobuf-compiler",
                "protobuf-compiler-grpc-java-plugin",
            ),
            build=_BUILD_JAVA,
            run=(
                "exec java -Xmx{heap_mib}m -Xss512k -XX:+UseSerialGC -XX:TieredStopAtLevel=1"
                " -XX:CICompilerCount=2 -XX:ActiveProcessorCount=1 -XX:-UsePerfData"
                ' -cp "/artifact/classes:$CLASSPATH" org.kryt.runtime.Launch {main_class}'
            ),
            entry_example="Main.java",
            entry_suffixes=(".java",),
            entry_meaning="the source of the main class, named by its path",
            env=(("CLASSPATH", "/opt/kryt/java/lib/*:/usr/share/java/*"),),
            min_memory_bytes=512 * MiB,
            min_pids=128,
            min_address_space_slack_bytes=2048 * MiB,
            notes="grpc-java with netty, the kryt.v1 and grpc.health.v1 classes",
        ),
        Runtime(
            name="cpp",
            language="C++17 (g++ 12)",
            debs=(
                "g++",
                "make",
                "pkg-config",
                "libgrpc++-dev",
                "libprotobuf-dev",
                "protobuf-compiler-grpc",
            ),
            build=_BUILD_C,
            run="exec /artifact/bot",
            entry_example="bot.cc",
            entry_suffixes=(".cc", ".cpp"),
            entry_meaning="the source holding main(); every .cc and .cpp file is compiled",
            min_pids=128,
            notes="grpc++ 1.51; kryt/v1/bot.grpc.pb.h from -lkryt_proto",
        ),
        Runtime(
            name="go",
            language="Go 1.19",
            debs=(
                "golang-go",
                "golang-google-grpc-dev",
                "golang-google-protobuf-dev",
                "protoc-gen-go",
                "protoc-gen-go-grpc",
                "protobuf-compiler",
            ),
            build=_BUILD_GO,
            run="exec /artifact/bot",
            entry_example="main.go",
            entry_suffixes=(".go",),
            entry_at_top=True,
            entry_meaning="a file of the top folder's package main, which go build builds",
            env=(
                ("GO111MODULE", "off"),
                ("GOPATH", "/opt/kryt/go:/usr/share/gocode"),
                ("GOCACHE", "/opt/kryt/go/cache"),
                ("GOFLAGS", "-buildvcs=false"),
                ("CGO_ENABLED", "0"),
            ),
            min_pids=128,
            notes="grpc-go 1.33 in GOPATH mode; import kryt/v1 and grpc/health",
        ),
        Runtime(
            name="native",
            language="a Linux x86-64 executable built elsewhere (e.g. Rust)",
            debs=("ca-certificates",),
            run='exec "/bot/$0"',
            entry_example="bot",
            notes="glibc 2.36 and libstdc++ of Debian bookworm; link statically to be safe",
        ),
    )
}

#: Older spellings accepted in ``bot.toml``.
ALIASES: dict[str, str] = {"python3": "python", "javascript": "node", "c++": "cpp", "golang": "go"}


def register(runtime: Runtime) -> None:
    """Add (or replace) a runtime in :data:`REGISTRY`."""
    if not re.fullmatch(r"[a-z][a-z0-9]{0,19}", runtime.name):
        raise ValueError(f"runtime name {runtime.name!r} must match [a-z][a-z0-9]{{0,19}}")
    REGISTRY[runtime.name] = runtime


def runtime_names() -> tuple[str, ...]:
    """Names ``bot.toml`` accepts, sorted."""
    return tuple(sorted(REGISTRY))


def get_runtime(name: str) -> Runtime:
    """The runtime called ``name`` (or one of its :data:`ALIASES`)."""
    runtime = REGISTRY.get(ALIASES.get(name, name))
    if runtime is None:
        known = ", ".join(runtime_names())
        raise UnknownRuntimeError(f"runtime {name!r} is not supported (supported: {known})")
    return runtime
