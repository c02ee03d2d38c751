"""``python -m sdk.tools``: check or create a bot (the author's tools, no arena needed).

python -m sdk.tools check path/to/bot [--games N]      # play N games over gRPC, report problems
python -m sdk.tools check 127.0.0.1:50051              # a bot you started yourself, any language
python -m sdk.tools new NAME [--dir PARENT]            # a new bot folder from the template
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sdk.tools", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_check = sub.add_parser("check", help="play games over gRPC and report problems")
    p_check.add_argument("target", help="bot folder (with bot.toml) or address")
    p_check.add_argument("--games", type=int, default=10)
    p_check.add_argument("--seed", default="0")
    p_new = sub.add_parser("new", help="create a bot folder from the template")
    p_new.add_argument("name")
    p_new.add_argument("--dir", default=".", help="parent folder")
    opts = parser.parse_args(argv)
    try:
        if opts.command == "check":
            from sdk.tools.check import check_bot

            report = check_bot(opts.target, games=opts.games, seed=opts.seed)
            print(report.format())
            return 0 if report.ok else 1
        from sdk.tools.template import new_bot

        folder = new_bot(opts.name, opts.dir)
        print(f"created {folder}: edit bot.py, then `python test_bot.py`")
        return 0
    except ValueError as exc:  # every typed error of the SDK is a ValueError
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
