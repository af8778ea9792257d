"""Counts and lists in the sentences people read: one rule for every room's messages.

>>> count(1, "participant"), count(3, "participant"), count(0, "bonus", "bonuses")
('1 participant', '3 participants', '0 bonuses')
>>> join_and(["up"]), join_and(["up", "down"]), join_and(["a", "b", "c"])
('up', 'up and down', 'a, b and c')
>>> suggest("problem", ["payment", "problems"]), suggest("xyz", ["payment"])
(" (did you mean 'problems'?)", '')
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun, plural unless ``n`` is 1 (``plural``: when not noun + "s")."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def join_and(words: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def suggest(name: str, known: Iterable[str], cutoff: float = 0.6) -> str:
    """`` (did you mean 'x'?)`` for the known name closest to a mistyped ``name``, or ""
    when none is close (``cutoff``: ``difflib``'s similarity, 0 to 1)."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=cutoff)
    return f" (did you mean '{close[0]}'?)" if close else ""
