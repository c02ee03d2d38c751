#!/usr/bin/env python3
"""Regenerate the golden playthrough files in tests/rules/golden/ (review the diff!)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from referee.rules.playthrough import record_playthrough  # noqa: E402

GOLDEN = ROOT / "tests" / "rules" / "golden"
CASES = [(1, 0), (2, 1), (51, 1), (2026, 0), (31337, 1)]  # seed 51 ends in a draw


def main() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for seed, dealer in CASES:
        data = record_playthrough(seed, dealer)
        path = GOLDEN / f"seed{seed}_dealer{dealer}.json"
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        print(f"{path.relative_to(ROOT)}: {len(data['steps'])} actions, reason {data['reason']}")


if __name__ == "__main__":
    main()
