"""pass@k, discovery@k and interaction@k with the unbiased estimator (003 Sec. 2.2, Eq. 1-3).

For a problem attempted ``n`` times with ``c`` attempts that count (solved, saw the
injected solution, acted on it), the chance that at least one of ``k`` attempts drawn
without replacement counts is ``1 - C(n-c, k) / C(n, k)``; the metric is its mean over
problems. Fewer than ``k`` attempts cannot be drawn ``k`` at a time, so ``n < k`` is an
error and the report refuses to print such a figure.
"""

from __future__ import annotations

from collections.abc import Iterable
from math import comb

import numpy as np

from analysis.metrics.checks import require_whole


def at_k(n: int, c: int, k: int) -> float:
    """``1 - C(n-c, k) / C(n, k)`` for one problem (exact integer binomials).

    >>> at_k(5, 1, 2)
    0.4
    >>> at_k(4, 3, 2)
    1.0
    """
    require_whole("n", n, unit="attempts")
    require_whole("k", k)
    require_whole("c", c, 0, unit="attempts that count")
    if c > n:
        raise ValueError(f"c = {c} successes cannot exceed n = {n} attempts")
    if n < k:
        raise ValueError(f"metric@{k} needs at least {k} attempts per problem; this one has {n}")
    return 1.0 - comb(n - c, k) / comb(n, k)


def metric_at_k(per_problem: Iterable[tuple[int, int]], k: int) -> float:
    """Mean of :func:`at_k` over problems, each given as ``(n, c)``.

    >>> metric_at_k([(5, 1), (4, 0)], k=2)
    0.2
    """
    values = [at_k(n, c, k) for n, c in per_problem]
    if not values:
        raise ValueError("metric@k needs at least one problem")
    return float(np.mean(values))
