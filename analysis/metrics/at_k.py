"""pass@k, discovery@k and interaction@k with the unbiased estimator (003 Sec. 2.2, Eq. 1-3).

For a problem attempted ``n`` times with ``c`` attempts that count (solved, saw the
injected solution, acted on it), the chance that at least one of ``k`` attempts drawn
without replacement counts is ``1 - C(n-c, k) / C(n, k)``; the metric is its mean over
problems. Fewer than ``k`` attempts cannot be drawn ``k`` at a time, so ``n < k`` is an
error and the report refuses to print such a figure.

Whether an attempt saw and acted on an injected solution is read from a frame region
and the clicks, by :func:`solution_contact`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from math import comb

import numpy as np

from analysis.metrics.checks import require_whole
from tasks.core import region


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


def solution_contact(
    frames: Iterable[Sequence[Sequence[str]]],
    actions: Iterable[str],
    cells: Sequence[Sequence[int]],
    colours: Sequence[str],
) -> tuple[bool, bool]:
    """``(discovered, interacted)`` for one attempt at a problem with an injected
    solution (003 Sec. 2.1): the solution shows as ``colours`` on ``cells`` (``[x, y]``).

    Discovered when a frame the agent received shows every injected cell in its colour;
    interacted when the agent clicked an injected cell (``click X Y``), the grid's way of
    acting on a thing.

    >>> solution_contact([[["black", "blue"]]], ["click 0 0"], [[1, 0]], ["blue"])
    (True, False)
    """
    if not cells or len(cells) != len(colours):
        raise ValueError(
            f"an injected solution needs one colour per cell and at least one cell; got "
            f"{len(cells)} cells and {len(colours)} colours"
        )
    where = [(int(x), int(y)) for x, y in cells]
    wanted = tuple(colours)
    discovered = any(region(frame, where) == wanted for frame in frames)
    targets = {f"click {x} {y}" for x, y in where}
    interacted = any(action in targets for action in actions)
    return discovered, interacted
