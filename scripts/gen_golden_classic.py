#!/usr/bin/env python3
"""Regenerate the classic-table golden playthroughs in tests/rules/classic/golden/ (review the
diff!)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from referee.rules.classic.playthrough import record_playthrough  # noqa: E402

GOLDEN = ROOT / "tests" / "rules" / "classic" / "golden"
# (seed, dealer, players); seeds 65, 200 and 118 end with nobody holding cards (a draw).
CASES = [
    (1, 0, 2),
    (65, 1, 2),
    (2026, 1, 2),
    (7, 2, 3),
    (200, 2, 3),
    (11, 0, 4),
    (118, 2, 4),
    (31337, 3, 4),
]


def main() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for seed, dealer, players in CASES:
        data = record_playthrough(seed, dealer, players)
        path = GOLDEN / f"p{players}_seed{seed}_dealer{dealer}.json"
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        print(f"{path.relative_to(ROOT)}: {len(data['steps'])} actions, reason {data['reason']}")


if __name__ == "__main__":
    main()
