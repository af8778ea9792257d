"""The random-agent baseline, summarised as in 002 Table E.3.

The random agent (``game_client``) picks uniformly among click, up, down, left, right
and noop, a click at a uniform cell, for at most 1,000 steps, about 50 times per
environment. Each sample is reduced to the step count at which it succeeded (triggered
the change for change detection, reached the goal for planning) or ``None``. The table
says, per environment, how likely that is and how many steps it took: an environment a
random agent solves often says little about an agent that solves it.

It lives here, beneath every driver, because two rooms print the same table:
``gridstudy baseline random`` (``game_client``) and the report's
``analysis.tables.random_baseline_rows``; ``analysis.metrics`` re-exports it. The input
checks it needs, :func:`is_whole` and :func:`require_whole`, live here for the same
reason and are re-exported by ``analysis.metrics.checks`` for every metric.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from tasks.worldtest.challenge import REACHES_GOAL, TRIGGERS_CHANGE, get

TIMEOUT = 1000
"""Steps a random sample may take (002 App. C)."""
SUMMARY = ("probability", "mean_steps", "samples")
"""The keys of :func:`random_baseline`'s summary, in the order of :data:`COLUMNS`."""


def is_whole(value: Any, minimum: int) -> bool:
    """True for an int (or numpy integer, not a bool) of at least ``minimum``."""
    return (
        not isinstance(value, bool) and isinstance(value, int | np.integer) and value >= minimum
    )


def require_whole(name: str, value: Any, minimum: int = 1, unit: str = "") -> None:
    """Raise ``ValueError`` unless ``value`` is a whole number ``>= minimum``.

    >>> require_whole("window", 0, unit="symbols per window")
    Traceback (most recent call last):
    ...
    ValueError: window must be a whole number >= 1 (symbols per window), not 0
    """
    if not is_whole(value, minimum):
        unit = f" ({unit})" if unit else ""
        raise ValueError(f"{name} must be a whole number >= {minimum}{unit}, not {value!r}")


def random_baseline(
    samples: Iterable[int | None], timeout: int = TIMEOUT
) -> dict[str, float | int | None]:
    """``samples`` (steps to success, or ``None``) summarised as ``samples`` (how
    many), ``probability`` (share that succeeded within ``timeout`` steps, default
    1000) and ``mean_steps`` (mean steps of those successes; ``None`` without one).
    A success after more than ``timeout`` steps counts as a failure.

    >>> random_baseline([10, None, 30, 2000])
    {'samples': 4, 'probability': 0.5, 'mean_steps': 20.0}
    """
    require_whole("timeout", timeout, unit="steps")
    steps = list(samples)
    if not steps:
        raise ValueError("the random baseline needs at least one sample")
    for step in steps:
        if step is not None and not is_whole(step, 0):
            raise ValueError(f"a sample is a step count >= 0 or None, not {step!r}")
    successes = [s for s in steps if s is not None and s <= timeout]
    return {
        "samples": len(steps),
        "probability": len(successes) / len(steps),
        "mean_steps": float(np.mean(successes)) if successes else None,
    }


COLUMNS = {
    TRIGGERS_CHANGE: ("P(trigger change)", "trigger mean steps", "trigger samples"),
    REACHES_GOAL: ("P(reach goal)", "goal mean steps", "goal samples"),
}
"""The Table E.3 columns of each baseline reading a random agent is run for: the
probability, the mean steps of the successes and the number of samples, change before
goal as in the paper. (``PICKS_OPTION`` is computed per problem, ``1 / options``, and is
not sampled.)"""


def random_baseline_table(
    samples: Iterable[tuple[str, str, Iterable[int | None]]], timeout: int = TIMEOUT
) -> list[dict[str, object]]:
    """One Table E.3 row per environment, sorted by environment id.

    ``samples`` holds ``(env, challenge, steps)`` triples, one per problem or group of
    recorded attempts, ``steps`` as :func:`random_baseline` takes them. What the steps
    measure is the ``baseline`` reading the registered challenge declares, so a new
    challenge with a reading of :data:`COLUMNS` needs no change here; an environment's
    samples of the same reading are pooled. Each row is flat, ``env`` then every
    reading's columns of :data:`COLUMNS`, ``None`` where the environment has no samples
    of that reading.

    >>> random_baseline_table([("walker", "cd", [3, None]), ("walker", "cd", [5, None])])
    ... # doctest: +NORMALIZE_WHITESPACE
    [{'env': 'walker', 'P(trigger change)': 0.5, 'trigger mean steps': 4.0,
      'trigger samples': 4, 'P(reach goal)': None, 'goal mean steps': None,
      'goal samples': None}]
    """
    pooled: dict[str, dict[str, list[int | None]]] = defaultdict(lambda: defaultdict(list))
    for env, challenge, steps in samples:
        pooled[env][sampled_reading(env, challenge)].extend(steps)
    rows = []
    for env in sorted(pooled):
        row: dict[str, object] = {"env": env}
        for reading, names in COLUMNS.items():
            found = pooled[env].get(reading)
            summary = random_baseline(found, timeout) if found is not None else {}
            row.update(zip(names, (summary.get(key) for key in SUMMARY), strict=True))
        rows.append(row)
    return rows


def sampled_reading(env: str, challenge: str) -> str:
    """The baseline reading ``challenge`` declares, if a random agent is run for it."""
    reading = get(challenge).baseline
    if reading not in COLUMNS:
        raise ValueError(
            f"{env}: {challenge} has no sampled random baseline (its reading is {reading!r}); "
            f"the table covers challenges read as {' or '.join(map(repr, COLUMNS))}")
    return reading
