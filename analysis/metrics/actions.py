"""What kinds of actions an agent explores with (002 Sec. 4.2.2, App. E, Fig. 5, Table E.2).

Each distinct click position is its own action: clicking (2, 3) and (5, 7) is two
unique clicks. Humans spread their unique actions over resets and no-ops too; the
reasoning models of the paper hardly use either. All functions here read the applied
interaction-phase actions only (see :mod:`analysis.metrics.records` for the accepted
inputs); ``go-to-test`` ends the phase and is never counted as an action.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analysis.metrics.checks import require_whole
from analysis.metrics.records import (
    CLICK,
    DIRECTIONAL,
    GO_TO_TEST,
    KINDS,
    RESET,
    derived,
    interaction_kinds,
)

PER = 100
"""Reset frequency is also given per this many interaction-phase actions."""


def _unique_by_kind(actions: Iterable[Any]) -> dict[str, set[str]]:
    """The distinct canonical actions of each kind among the interaction-phase actions."""
    def compute() -> dict[str, set[str]]:
        unique: dict[str, set[str]] = {kind: set() for kind in KINDS}
        for canonical, kind in interaction_kinds(actions)[1].values():
            if kind != GO_TO_TEST:
                unique[kind].add(canonical)
        return unique
    return derived(actions, "unique by kind", compute)


def action_type_distribution(actions: Iterable[Any]) -> dict[str, float] | None:
    """Fractions of the episode's *unique* actions that are clicks, directional keys,
    reset and noop (keys ``click``, ``directional``, ``reset``, ``noop``; they sum to 1).

    ``None`` when the episode has no interaction-phase action, so that it does not
    drag an average towards zero.

    >>> action_type_distribution(["click 1 1", "click 2 2", "click 1 1", "up", "noop"])
    {'click': 0.5, 'directional': 0.25, 'reset': 0.0, 'noop': 0.25}
    """
    unique = _unique_by_kind(actions)
    total = sum(len(group) for group in unique.values())
    if total == 0:
        return None
    return {kind: len(unique[kind]) / total for kind in KINDS}


def unique_action_counts(actions: Iterable[Any]) -> dict[str, int]:
    """Numbers of unique click positions and unique directional keys (Table E.2).

    >>> unique_action_counts(["click 1 1", "click 1 1", "click 0 3", "left", "left"])
    {'clicks': 2, 'directional': 1}
    """
    unique = _unique_by_kind(actions)
    return {"clicks": len(unique[CLICK]), "directional": len(unique[DIRECTIONAL])}


def reset_frequency(actions: Iterable[Any], per: int = PER) -> dict[str, float | None]:
    """Resets in the episode's interaction phase (``resets``), and resets per ``per``
    (default 100) interaction-phase actions (``rate``).

    The denominator counts every applied interaction-phase action except
    ``go-to-test``: arrows, clicks, no-ops (a person's idle ticks included) and the
    resets themselves. It is ``None`` when there was no such action.

    >>> reset_frequency(["up", "reset", "up", "go-to-test"])
    {'resets': 1, 'rate': 33.333333333333336}
    """
    require_whole("per", per, unit="actions")
    def compute() -> tuple[int, int]:
        texts, kinds = interaction_kinds(actions)
        counted = [kinds[t][1] for t in texts if kinds[t][1] != GO_TO_TEST]
        return counted.count(RESET), len(counted)
    resets, count = derived(actions, "resets", compute)
    rate = per * resets / count if count else None
    return {"resets": resets, "rate": rate}
