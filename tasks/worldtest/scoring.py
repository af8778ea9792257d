"""Challenge scores exactly as docs/metrics.md defines them."""

from __future__ import annotations

import math


def cd_score(t: int | None, t_star: int | None) -> float:
    """Change-detection score for submitted frame index ``t`` and defect time ``t_star``.

    0 before ``t_star - 1``; 1 at ``t_star - 1`` and ``t_star``; after that
    ``1.377 f(t) - 1.178`` with ``f(t) = 1 / (1 - (t/t*) exp(-t/t*))``, clipped to [0, 1].
    No submission, or a change that never happened, scores 0. With ``t_star`` 0 (the
    programs differ from the first frame: the checker flags such a problem, but a study
    may still serve it) a later frame scores the formula's limit, 0.199.

    >>> cd_score(9, 10), cd_score(10, 10), cd_score(8, 10)
    (1.0, 1.0, 0.0)
    >>> round(cd_score(10**6, 10), 3)
    0.199
    """
    if t is None or t_star is None:
        return 0.0
    if t < t_star - 1:
        return 0.0
    if t <= t_star:
        return 1.0
    if t_star == 0:  # the frames differ from the first: any later frame is infinitely late
        return 1.377 - 1.178  # the formula's limit (f -> 1); dividing by t* raised
    ratio = t / t_star
    f = 1.0 / (1.0 - ratio * math.exp(-ratio))
    return min(1.0, max(0.0, 1.377 * f - 1.178))
