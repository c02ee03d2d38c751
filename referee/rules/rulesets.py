"""The rulesets the rules core knows, by their project names, and their table sizes."""

from __future__ import annotations

from typing import Final, Literal

from referee.rules.errors import InvalidParameterError, quote

RulesetName = Literal["default", "classic"]

DEFAULT_RULESET: Final = "default"
"""The two-player game of rules.md."""

CLASSIC_RULESET: Final = "classic"
"""The 2–4 player classic table of rules-classic.md."""

RULESETS: Final[dict[str, tuple[int, ...]]] = {DEFAULT_RULESET: (2,), CLASSIC_RULESET: (2, 3, 4)}
"""Each ruleset's name and the table sizes it supports."""


def check_ruleset(ruleset: object, players: object) -> RulesetName:
    """``ruleset`` if it is known and seats ``players``; else InvalidParameterError (an
    InvalidDeckError) quoting both."""
    if not isinstance(ruleset, str) or ruleset not in RULESETS:
        raise InvalidParameterError(
            f"unknown ruleset {quote(ruleset)} (expected one of {', '.join(map(repr, RULESETS))})"
        )
    sizes = RULESETS[ruleset]
    if type(players) is not int or players not in sizes:
        words = [str(n) for n in sizes]
        allowed = " or ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)
        raise InvalidParameterError(
            f"the {ruleset} ruleset seats {allowed} players, got {quote(players)}"
        )
    return "classic" if ruleset == CLASSIC_RULESET else "default"
