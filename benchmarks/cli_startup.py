#!/usr/bin/env python3
"""Time the start-up of the ``kryt`` command (target: well under 0.5 s).

    .venv/bin/python benchmarks/cli_startup.py [--runs 5]

Each run is a fresh interpreter running ``python -m kryt --help`` (and ``kryt play --help``,
which imports one command module); the best and the median of ``--runs`` runs are printed,
the best because the machine may be shared. For comparison, the import of every command
module (what ``kryt`` paid at start-up before the commands were loaded lazily) is timed too.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CASES = {
    "kryt --help": ["-m", "kryt", "--help"],
    "kryt play --help": ["-m", "kryt", "play", "--help"],
    "import every command (eager)": [
        "-c",
        "import kryt.commands.tournament, kryt.commands.leaderboard, kryt.commands.demo",
    ],
}


def _time(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, check=True, timeout=120)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    opts = parser.parse_args()
    for label, args in CASES.items():
        times = [_time(args) for _ in range(opts.runs)]
        print(
            f"{label:32s} best {1000 * min(times):7.1f} ms"
            f"   median {1000 * statistics.median(times):7.1f} ms   ({opts.runs} runs)"
        )


if __name__ == "__main__":
    main()
