"""The random-agent baseline, summarised as in 002 Table E.3.

The random agent (``game_client``) picks uniformly among click, up, down, left, right
and noop, a click at a uniform cell, for at most 1,000 steps, about 50 times per
environment. Each sample is reduced to the step count at which it succeeded (triggered
the change for change detection, reached the goal for planning) or ``None``. The table
says, per environment, how likely that is and how many steps it took: an environment a
random agent solves often says little about an agent that solves it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from analysis.metrics.checks import is_whole, require_whole

TIMEOUT = 1000
"""Steps a random sample may take (002 App. C)."""


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


def random_baseline_table(
    samples_by_env: Mapping[str, Mapping[str, Iterable[int | None]]], timeout: int = TIMEOUT
) -> list[dict[str, object]]:
    """One Table E.3 row per environment, sorted by environment id.

    ``samples_by_env[env][challenge]`` holds the samples of that environment for
    ``"cd"`` (probability of triggering the change) and ``"planning"`` (probability of
    reaching the goal); either may be missing. Each row is ``{"env": env, "cd": summary
    or None, "planning": summary or None}`` with summaries from :func:`random_baseline`.

    >>> random_baseline_table({"walker": {"cd": [3, None]}})
    [{'env': 'walker', 'cd': {'samples': 2, 'probability': 0.5, 'mean_steps': 3.0}, 'planning': None}]
    """
    rows = []
    for env in sorted(samples_by_env):
        by_challenge = samples_by_env[env]
        unknown = sorted(set(by_challenge) - {"cd", "planning"})
        if unknown:
            raise ValueError(f"{env}: the random baseline covers cd and planning, not {unknown}")
        row: dict[str, object] = {"env": env}
        for challenge in ("cd", "planning"):
            samples = by_challenge.get(challenge)
            row[challenge] = None if samples is None else random_baseline(samples, timeout)
        rows.append(row)
    return rows
