"""The ``kryt`` console script and ``python -m kryt``: :func:`kryt.cli.main`, imported here.

Importing the command line takes a moment (typer, rich; seconds on a loaded machine): a
Ctrl-C during it must end as one ``interrupted`` line, as at any other moment, not as a
traceback of the import.
"""

from __future__ import annotations

import sys

INTERRUPTED = 130
"""``kryt.errors.ExitCode.INTERRUPTED``, not imported: this module imports nothing slow."""


def run() -> None:
    """Run the command line and exit with its code."""
    try:
        from kryt.cli import main

        code = main()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        code = INTERRUPTED
    sys.exit(code)
