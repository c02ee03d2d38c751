"""``new_bot``: a new bot folder with a manifest, a working bot, a test and a README.

Used by ``kryt bot new NAME`` and ``python -m sdk.tools new NAME``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from string import Template

from sandbox.runtimes.images import PROTO_FILES, PROTO_ROOT
from sandbox.submission import NAME_RE, InvalidManifestError, parse_manifest


class BotTemplateError(ValueError):
    """The bot cannot be created (bad name, folder already exists or cannot be created)."""


class UnknownLanguageError(BotTemplateError):
    """No starter for that language (the message says what to do instead)."""


class InvalidBotNameError(BotTemplateError):
    """The name breaks the manifest's name rule (:data:`sandbox.submission.NAME_RE`)."""


_MANIFEST = Template(
    """name = "$name"
version = "0.1.0"
runtime = "python"
entry = "bot.py"
author = ""
description = "A Kryt'-navalivat' bot."
"""
)

_BOT = Template(
    '''"""$name: a Kryt'-navalivat' bot. Edit ``act``; run ``python test_bot.py`` to test it."""

from __future__ import annotations

from referee.rules import Action, View
from sdk import Bot, serve
from sdk.strategy import greedy_action


class $cls(Bot):
    """Starts as the greedy heuristic; make it smarter."""

    def act(self, view: View) -> Action:
        # view.legal_actions holds every legal move; return one of them (or its text).
        # Helpers: sdk.CardTracker.from_view(view).unseen (cards you have not seen),
        # sdk.sample_game(view, rng) (a full game consistent with the view, to simulate),
        # self.time_left() (seconds left for this move), self.context (seat, score...).
        return greedy_action(view.legal_actions, view.trump)


if __name__ == "__main__":
    serve($cls())
'''
)

_TEST = Template(
    '''"""Tests of $name: ``python test_bot.py`` (or ``pytest`` if you have it)."""

from __future__ import annotations

from pathlib import Path

from sdk.tools import play_local
from sdk.tools.check import check_bot
from sdk.examples.random.bot import RandomBot

from bot import $cls


def test_plays_only_legal_actions() -> None:
    result = play_local($cls(), RandomBot(seed=1), games=20, seed=1)
    assert not result.forfeits, [g.forfeit.detail for g in result.forfeits if g.forfeit]


def test_beats_random() -> None:
    result = play_local($cls(), RandomBot(seed=2), games=20, seed=2)
    assert result.points(0) > 10, str(result)


def test_serves_over_grpc() -> None:
    report = check_bot(Path(__file__).resolve().parent, games=2)
    assert report.ok, report.format()


if __name__ == "__main__":
    for test in (
        test_plays_only_legal_actions,
        test_beats_random,
        test_serves_over_grpc,
    ):
        test()
        print(f"ok  {test.__name__}")
'''
)

_README = Template(
    """# $name

A bot for the card game Kryt'-navalivat', written with the Kryt Arena SDK.

- `bot.py` — the bot: the `act(view)` method chooses one of `view.legal_actions`.
- `bot.toml` — the manifest (name, version, entry point) the arena reads.
- `test_bot.py` — plays local games and one check over gRPC: `python test_bot.py`.

Try it:

```sh
python test_bot.py                  # local games + a real gRPC check
python -m sdk.tools check .               # the same check the arena's referee would do
python bot.py 127.0.0.1:50051       # serve it (or set KRYT_BOT_ADDRESS)
```

The protocol and the helpers (card tracker, determinization, local simulator) are described
in the arena's `docs/writing-a-bot.md`.
"""
)


def class_name(name: str) -> str:
    """``my-bot_2`` → ``MyBot2Bot``-style class name (always ends with ``Bot``)."""
    words = [w for w in name.replace("_", "-").split("-") if w]
    base = "".join(w[:1].upper() + w[1:] for w in words)
    if base[:1].isdigit():
        base = "Bot" + base
    return base if base.endswith("Bot") else base + "Bot"


STARTERS = Path(__file__).resolve().parent / "starters"
"""Starting points in other languages: one folder per runtime (see docs/protocol.md)."""

LANGUAGES = {"python": None, "node": "js", "javascript": "js", "java": "java", "cpp": "cpp",
             "c++": "cpp", "go": "go"}  # fmt: skip
"""``--language`` values and the starter folder each copies (None: the Python template)."""

_CARRY_PROTOS = frozenset({"js"})
"""Starters that load the ``.proto`` files at run time (the others are built against the
runtime image's bindings): a new bot gets its own ``proto/`` copy, so that it also runs
outside the sandbox (``node bot.js 127.0.0.1:50051``), as docs/protocol.md says to try it."""


def new_bot(name: str, parent: str | Path = ".", *, language: str = "python") -> Path:
    """Create ``parent/name/``: for Python ``bot.toml``, ``bot.py``, ``test_bot.py`` and
    ``README.md``; for another language a copy of its starter bot, renamed.

    Raises :class:`BotTemplateError` for a name the manifest rules reject, an unknown
    language, an existing folder (nothing is overwritten) or one that cannot be created
    or written (nothing is left behind).
    """
    if language.lower() in ("rust", "native"):
        # Debian has no Rust gRPC crate to build with offline: say where the way in is.
        raise UnknownLanguageError(
            f"no {language} starter: build the bot on your machine and enter the executable"
            ' with runtime = "native"; docs/sandbox.md ("Rust: entered as native") has a'
            " complete Rust bot"
        )
    if language.lower() not in LANGUAGES:
        raise UnknownLanguageError(
            f"unknown language {language!r}; choose one of {', '.join(sorted(LANGUAGES))}"
        )
    check_bot_name(name)
    starter = LANGUAGES[language.lower()]
    if starter is not None:
        return _from_starter(name, Path(parent), STARTERS / starter)
    manifest = _MANIFEST.substitute(name=name)
    try:
        parse_manifest(manifest)
    except InvalidManifestError as exc:
        raise BotTemplateError(f"cannot create bot {name!r}: {exc}") from None
    folder = Path(parent) / name
    cls = class_name(name)
    with _creating(name, folder):
        (folder / "bot.toml").write_text(manifest, encoding="utf-8")
        (folder / "bot.py").write_text(_BOT.substitute(name=name, cls=cls), encoding="utf-8")
        (folder / "test_bot.py").write_text(_TEST.substitute(name=name, cls=cls), encoding="utf-8")
        (folder / "README.md").write_text(_README.substitute(name=name), encoding="utf-8")
    return folder


def check_bot_name(name: str) -> None:
    """Raise :class:`InvalidBotNameError` unless ``name`` follows the manifest's name rule.

    Checked before the name is pasted into ``bot.toml`` and the code: a quote or ``#`` in it
    would otherwise end the TOML string early (a bot named otherwise than asked) and break
    the code's string literal, and a control character would make the TOML unreadable."""
    if not NAME_RE.match(name):
        rule = NAME_RE.pattern.removesuffix(r"\Z")  # the rule's one definition, as written
        raise InvalidBotNameError(f"cannot create bot {name!r}: the name must match {rule}")


@contextmanager
def _creating(name: str, folder: Path) -> Iterator[None]:
    """Create ``folder`` (which must not exist) and its missing parents for the body to
    fill. If anything fails, the folders created here are removed again (nothing
    half-written is left), and an ``OSError`` (a parent that is a file, or that cannot be
    created or written) becomes a :class:`BotTemplateError` naming the path."""
    made: list[Path] = []
    try:
        if folder.exists():  # in the try: a parent we may not look into is an OSError too
            raise BotTemplateError(f"cannot create bot {name!r}: {folder} already exists")
        missing = [p for p in (folder, *folder.parents) if not p.exists()]
        for path in reversed(missing):  # one level at a time: every folder in made is ours
            path.mkdir()
            made.append(path)
        yield
    except BaseException as exc:
        if made:
            shutil.rmtree(made[0], ignore_errors=True)
        if isinstance(exc, OSError):
            where = exc.filename if exc.filename is not None else folder
            raise BotTemplateError(
                f"cannot create bot {name!r}: {where}: {exc.strerror or exc}"
            ) from None
        raise


def _from_starter(name: str, parent: Path, starter: Path) -> Path:
    folder = parent / name
    manifest = (starter / "bot.toml").read_text(encoding="utf-8")
    lines = [
        f'name = "{name}"' if line.startswith("name =") else line for line in manifest.splitlines()
    ]
    lines = [line for line in lines if not line.startswith("author =")]
    text = "\n".join(lines) + "\n"
    try:
        parse_manifest(text)
    except InvalidManifestError as exc:
        raise BotTemplateError(f"cannot create bot {name!r}: {exc}") from None
    with _creating(name, folder):
        shutil.copytree(
            starter, folder, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True
        )
        (folder / "bot.toml").write_text(text, encoding="utf-8")
        _rename_in_code(folder, parse_manifest(manifest).name, name)
        if starter.name in _CARRY_PROTOS and PROTO_ROOT.is_dir():
            for rel in PROTO_FILES:
                (folder / "proto" / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(PROTO_ROOT / rel, folder / "proto" / rel)
    return folder


def _rename_in_code(folder: Path, old: str, new: str) -> None:
    """The starter's code names itself in its handshake, which must say the name of
    ``bot.toml`` (the arena refuses any other): the quoted old name becomes the new one.
    Names are ``[a-z0-9_-]``, so the quoted name is a plain string literal in every language."""
    renamed = 0
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.name == "bot.toml":
            continue
        try:
            code = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if f'"{old}"' in code:
            path.write_text(code.replace(f'"{old}"', f'"{new}"'), encoding="utf-8")
            renamed += 1
    if not renamed:  # a starter whose handshake would not say the new name: ours to fix
        raise BotTemplateError(f"the {old!r} starter does not name itself in its code")
