"""The compiled languages' build commands and the Java entry's package, as the review of bots
in every language found them: a folder named like a source broke the C++ and Java builds, a
compiler's failure was reported as xargs' status 123, and a Java entry whose package clause
did not match its folders built and then failed every start with ``ClassNotFoundException``.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from sandbox.backend import Backend
from sandbox.limits import SandboxLimits
from sandbox.runtimes import RuntimeBuildError, get_runtime, java_package
from sandbox.submission import InvalidManifestError, Submission, load_submission
from tests.services import require

STARTERS = Path(__file__).resolve().parents[2] / "sdk" / "tools" / "starters"


@pytest.mark.parametrize(
    ("source", "package"),
    [
        ("package org.example;\npublic class Bot {}", "org.example"),
        ("// a comment\n/* and\n one more */\n  package  a . b ;\nclass A {}", "a.b"),
        ("\ufeffpackage p;", "p"),
        ("import java.util.List;\nclass A {}", ""),
        ("public final class Main {}", ""),
        ("/** doc */ class Main {}", ""),
        # Cannot be told without a compiler: the build decides.
        ("@Deprecated package p;", None),
        ("\\u0070ackage p;", None),
        ("package p", None),
        ("x", None),
        ("publicclass Main {}", None),
        ("", None),
        ("/* never closed", None),
    ],
)
def test_the_package_a_java_source_declares(source: str, package: str | None) -> None:
    assert java_package(source) == package


def _java_bot(tmp_path: Path, entry: str, source: str) -> Path:
    folder = tmp_path / f"java-{uuid.uuid4().hex[:8]}"
    shutil.copytree(STARTERS / "java", folder)
    starter = (folder / "Main.java").read_text(encoding="utf-8")
    (folder / "Main.java").unlink()
    (folder / entry).parent.mkdir(parents=True, exist_ok=True)
    (folder / entry).write_text(source + starter, encoding="utf-8")
    manifest = (folder / "bot.toml").read_text(encoding="utf-8")
    (folder / "bot.toml").write_text(
        manifest.replace('entry = "Main.java"', f'entry = "{entry}"'), encoding="utf-8"
    )
    return folder


def test_a_java_entry_whose_package_is_not_its_folders_is_refused_when_loaded(
    tmp_path: Path,
) -> None:
    """The class started is the one the entry's path names (docs/protocol.md): a package
    clause saying otherwise is one line at load time, naming the entry, what it declares and
    what it needs; a matching one loads, as does the starter itself."""
    assert load_submission(STARTERS / "java").manifest.entry == "Main.java"
    assert load_submission(_java_bot(tmp_path, "org/example/Main.java", "package org.example;\n"))

    with pytest.raises(InvalidManifestError) as caught:
        load_submission(_java_bot(tmp_path, "org/example/Main.java", ""))
    said = str(caught.value)
    assert "'org/example/Main.java' declares no package" in said, said
    assert "org.example.Main" in said and "'package org.example;'" in said, said

    with pytest.raises(InvalidManifestError) as caught:
        load_submission(_java_bot(tmp_path, "org/example/Main.java", "package org.other;\n"))
    assert "declares package org.other" in str(caught.value), caught.value

    with pytest.raises(InvalidManifestError) as caught:
        load_submission(_java_bot(tmp_path, "Main.java", "package org.example;\n"))
    said = str(caught.value)
    assert "declares package org.example" in said and "needs no package clause" in said, said


# --- built under bubblewrap ----------------------------------------------------------------


def _rootfs(runtime: str) -> None:
    from sandbox.runtimes.rootfs import RootfsError, runtime_rootfs

    try:
        runtime_rootfs(get_runtime(runtime))
    except RootfsError as exc:
        require(False, f"the {runtime} runtime's file system", str(exc))


def _starter_copy(tmp_path: Path, language: str) -> Path:
    folder = tmp_path / f"{language}-{uuid.uuid4().hex[:8]}"  # content never built before
    shutil.copytree(STARTERS / language, folder)
    (folder / "unique.txt").write_text(uuid.uuid4().hex, encoding="utf-8")
    return folder


def _builds_and_starts(backend: Backend, submission: Submission, name: str) -> None:
    bot = backend.start(submission, SandboxLimits(memory_bytes=1024 * 1024 * 1024), name)
    try:
        assert bot.alive()
    finally:
        bot.stop()


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("language", "folder"), [("cpp", "lib.cc"), ("java", "util.java")])
def test_a_folder_named_like_a_source_is_not_compiled(
    bwrap_backend: Backend, tmp_path: Path, language: str, folder: str
) -> None:
    _rootfs(language)
    bot = _starter_copy(tmp_path, language)
    (bot / folder).mkdir()
    (bot / folder / "notes.txt").write_text("not a source\n", encoding="utf-8")
    _builds_and_starts(bwrap_backend, load_submission(bot), f"t-srcdir-{language}")


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    ("language", "source", "compiler"),
    [("cpp", "bot.cc", "g++"), ("java", "Main.java", "javac")],
)
def test_a_compile_error_reports_the_compilers_status(
    bwrap_backend: Backend, tmp_path: Path, language: str, source: str, compiler: str
) -> None:
    """The reason is the compiler's own status (1), not xargs' 123; the output follows."""
    _rootfs(language)
    bot = _starter_copy(tmp_path, language)
    with (bot / source).open("a", encoding="utf-8") as out:
        out.write("\nkryt_no_such_declaration here;\n")
    with pytest.raises(RuntimeBuildError) as caught:
        bwrap_backend.start(load_submission(bot), SandboxLimits(), f"t-status-{language}")
    said = str(caught.value)
    first = said.splitlines()[0]
    assert first.endswith(f"did not build: {compiler} failed with status 1"), said
    assert "123" not in first and "kryt_no_such_declaration" in said, said
