"""Challenge scores and the human aggregate (002 App. C, Sec. 4.1.1).

The change-detection score is the one :mod:`tasks.worldtest.scoring` computes while the
episode runs; it is re-exported here so the report and the episode can never disagree.

Humans are one agent per problem: the 80th percentile of the included attempts' scores
(numpy's default linear interpolation), shown with a bootstrap interval of that
percentile so a reader can see how much 20 attempts pin it down.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from analysis.metrics.checks import require_whole
from tasks.worldtest.scoring import cd_score

__all__ = ["TooFew", "cd_score", "percentile_interval", "percentile_score", "task_interval"]

Q = 80
RESAMPLES = 1000
SEED = 0
LEVEL = 0.95
MIN_N = 5
"""Attempts (per problem) below which no bootstrap interval is given: resampling fewer
values takes so few distinct percentiles that the central 95% of them is not an interval
estimate, and one value resamples to an interval of zero width."""


class TooFew(ValueError):
    """Too few attempts for a bootstrap interval (the report prints "n too small")."""


def _require_n(n: int, min_n: int, where: str = "") -> None:
    require_whole("min_n", min_n)
    if n < max(min_n, 1):
        raise TooFew(f"n too small: {n} attempt(s){where}; a bootstrap interval needs at "
                     f"least {min_n}")


def _scores(scores: Iterable[float]) -> np.ndarray:
    """The scores as a float array; refuse an empty list and missing values."""
    values = np.asarray(list(scores), dtype=float)
    if values.size == 0:
        raise ValueError("no scores to aggregate: the problem has no included attempt")
    if np.isnan(values).any():
        raise ValueError("a score is missing (NaN); an attempt without an answer scores 0")
    return values


def _check_q(q: float) -> None:
    if not 0 <= q <= 100:
        raise ValueError(f"q must be a percentile between 0 and 100, not {q!r}")


def percentile_score(scores: Iterable[float], q: float = Q) -> float:
    """The ``q``-th percentile (default 80) of ``scores``, linearly interpolated.

    >>> percentile_score([0, 1, 1, 1, 1])
    1.0
    >>> percentile_score([0.0, 0.5])
    0.4
    """
    _check_q(q)
    return float(np.percentile(_scores(scores), q))


def percentile_interval(
    scores: Iterable[float],
    q: float = Q,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
    min_n: int = MIN_N,
) -> tuple[float, float]:
    """Bootstrap percentile interval of the ``q``-th percentile of ``scores``.

    ``resamples`` (default 1000) resamples of the attempts with replacement, drawn from
    ``numpy.random.default_rng(seed)`` (default seed 0, so the report is reproducible);
    the interval is the central ``level`` (default 0.95) of their percentiles. Fewer
    than ``min_n`` (default 5) scores raise :class:`TooFew` instead.

    >>> percentile_interval([1.0, 1.0, 1.0, 1.0, 1.0])
    (1.0, 1.0)
    >>> percentile_interval([0.5])
    Traceback (most recent call last):
    ...
    analysis.metrics.scores.TooFew: n too small: 1 attempt(s); a bootstrap interval needs at least 5
    """
    _check_q(q)
    require_whole("resamples", resamples)
    if not 0 < level < 1:
        raise ValueError(f"level must be strictly between 0 and 1, not {level!r}")
    values = _scores(scores)
    _require_n(values.size, min_n)
    rng = np.random.default_rng(seed)
    draws = values[rng.integers(0, values.size, size=(resamples, values.size))]
    statistics = np.percentile(draws, q, axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(statistics, [tail, 100 - tail])
    return float(low), float(high)


def task_interval(
    problems: Iterable[Iterable[float]],
    q: float | None = Q,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
    min_n: int = MIN_N,
) -> tuple[float, float]:
    """Bootstrap interval of a task-type score: the mean over problems of each problem's
    score (the ``q``-th percentile of its attempts, or their mean with ``q`` None).

    Each resample draws every problem's attempts with replacement, within that problem
    (a stratified bootstrap: the problems are fixed, the attempts vary), from
    ``numpy.random.default_rng(seed)``; the interval is the central ``level`` of the
    resampled task scores. A problem with fewer than ``min_n`` attempts raises
    :class:`TooFew`: only the attempts vary, so too few of them make no interval.

    >>> task_interval([[1.0] * 5, [0.0] * 5])
    (0.5, 0.5)
    >>> task_interval([[1.0], [0.0]])
    Traceback (most recent call last):
    ...
    analysis.metrics.scores.TooFew: n too small: 1 attempt(s) at the thinnest of 2 problems; a bootstrap interval needs at least 5
    """
    if q is not None:
        _check_q(q)
    require_whole("resamples", resamples)
    groups = [_scores(scores) for scores in problems]
    if not groups:
        raise ValueError("no problems to aggregate")
    _require_n(min(g.size for g in groups), min_n, f" at the thinnest of {len(groups)} problems")
    rng = np.random.default_rng(seed)
    per_problem = []
    for values in groups:
        draws = values[rng.integers(0, values.size, size=(resamples, values.size))]
        per_problem.append(draws.mean(axis=1) if q is None else np.percentile(draws, q, axis=1))
    statistics = np.mean(per_problem, axis=0)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(statistics, [tail, 100 - tail])
    return float(low), float(high)
