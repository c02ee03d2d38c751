"""``python -m sdk serve module:Class [address]``: serve a Bot class over gRPC.

This is the bot runtime's only command (it is what runs inside a sandbox). The author's
tools are ``python -m sdk.tools check|new`` (or ``kryt bot check|new``).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys

from sdk.bot import Bot


class BotSpecError(ValueError):
    """``module:Class`` does not name a Bot subclass."""


def load_bot(spec: str) -> Bot:
    """Instantiate the Bot class named by ``module:Class`` (the module must be importable)."""
    module_name, _, class_name = spec.partition(":")
    if not module_name or not class_name:
        raise BotSpecError(f"expected module:Class, got {spec!r}")
    sys.path.insert(0, ".")  # like `python bot.py`: modules next to the caller are importable
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BotSpecError(f"cannot import {module_name!r} from {spec!r}: {exc}") from None
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Bot)):
        raise BotSpecError(f"{spec!r} is not a subclass of sdk.Bot (found {cls!r})")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise BotSpecError(f"{spec!r} cannot be served: it does not implement {missing}")
    try:
        inspect.signature(cls).bind()
    except TypeError as exc:  # checked before the call: an error in __init__ keeps its traceback
        raise BotSpecError(f"{spec!r} must be constructible without arguments: {exc}") from None
    except ValueError:  # no signature to read (a C-level __init__): let the call tell
        pass
    return cls()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sdk",
        description=__doc__.splitlines()[0],
        epilog="To check or create a bot: python -m sdk.tools check|new (or kryt bot ...).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="serve a Bot class over gRPC")
    p_serve.add_argument("bot", help="module:Class")
    p_serve.add_argument("address", nargs="?", help="host:port or unix:///path (default: env)")
    opts = parser.parse_args(argv)
    try:
        from sdk.server import resolve_address, serve

        # argv here is ours, not the bot's: only the explicit argument or the env count.
        serve(load_bot(opts.bot), resolve_address(opts.address, argv=[]))
        return 0
    except ValueError as exc:  # every typed error of the SDK is a ValueError
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
