"""``python -m sdk``: serve, check or create a bot with nothing but the base install.

python -m sdk serve mybot.bot:MyBot [address]   # serve a Bot class (module:Class)
python -m sdk check path/to/bot [--games N]      # play N games over gRPC, report problems
python -m sdk new NAME [--dir PARENT]            # a new bot folder from the template
"""

from __future__ import annotations

import argparse
import importlib
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
    return cls()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sdk", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="serve a Bot class over gRPC")
    p_serve.add_argument("bot", help="module:Class")
    p_serve.add_argument("address", nargs="?", help="host:port or unix:///path (default: env)")
    p_check = sub.add_parser("check", help="play games over gRPC and report problems")
    p_check.add_argument("target", help="bot folder (with bot.toml) or address")
    p_check.add_argument("--games", type=int, default=10)
    p_check.add_argument("--seed", default="0")
    p_new = sub.add_parser("new", help="create a bot folder from the template")
    p_new.add_argument("name")
    p_new.add_argument("--dir", default=".", help="parent folder")
    opts = parser.parse_args(argv)
    try:
        if opts.command == "serve":
            from sdk.server import resolve_address, serve

            # argv here is ours, not the bot's: only the explicit argument or the env count.
            serve(load_bot(opts.bot), resolve_address(opts.address, argv=[]))
            return 0
        if opts.command == "check":
            from sdk.check import check_bot

            report = check_bot(opts.target, games=opts.games, seed=opts.seed)
            print(report.format())
            return 0 if report.ok else 1
        from sdk.template import new_bot

        folder = new_bot(opts.name, opts.dir)
        print(f"created {folder}: edit bot.py, then `python test_bot.py`")
        return 0
    except ValueError as exc:  # every typed error of the SDK is a ValueError
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
