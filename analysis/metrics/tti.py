"""Test-time improvement: area under variation and memory index (004 Sec. 3.1, 3.3).

Success rate says whether episodes were solved; AUV says how early. ``P_t`` is the share
of episodes solved within the first ``t`` steps of the scored phase (the test phase of a
planning problem, the whole run of an explore problem), ``P_0 = 0``, and

    AUV = (1/t_max) * sum_{t=0}^{t_max-1} (P_t + P_{t+1}) / 2       (004 Eq. 1)

a trapezoidal area normalised to [0, 1]. ``t_max`` is the evaluation horizon of the
problem family and has no default: the report must say which it used.

The memory index compares paired runs of the same agent with its full history and with
the current observation only (004 Eq. 5); :func:`auv_by_window` gives the whole
ablation over history windows.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping

import numpy as np

from analysis.metrics.checks import is_whole, require_whole


def _steps(solve_steps: Iterable[int | None]) -> list[int | None]:
    steps = list(solve_steps)
    if not steps:
        raise ValueError("AUV needs at least one episode")
    for step in steps:
        if step is not None and not is_whole(step, 1):
            raise ValueError(
                f"a solve step must be a whole number >= 1 (the step count at which the "
                f"episode was solved; P_0 = 0) or None for unsolved, not {step!r}"
            )
    return steps


def success_curve(solve_steps: Iterable[int | None], t_max: int) -> np.ndarray:
    """``[P_0, ..., P_t_max]``: share of episodes solved within the first ``t`` steps.

    ``solve_steps`` has one entry per episode: the number of scored-phase steps taken
    when it was solved (so ``>= 1``), or ``None`` if it never was.

    >>> success_curve([1, 3, None, None], t_max=3).tolist()
    [0.0, 0.25, 0.25, 0.5]
    """
    require_whole("t_max", t_max, unit="steps")
    steps = _steps(solve_steps)
    solved = np.array([s for s in steps if s is not None and s <= t_max], dtype=np.int64)
    newly = np.bincount(solved, minlength=t_max + 1)
    return np.cumsum(newly) / len(steps)


def auv(solve_steps: Iterable[int | None], t_max: int) -> float:
    """Area under variation (004 Eq. 1) of the episodes' ``solve_steps`` over ``t_max``.

    >>> auv([1, 3, None, None], t_max=3)  # (0.125 + 0.25 + 0.375) / 3
    0.25
    """
    curve = success_curve(solve_steps, t_max)
    return float((curve[:-1] + curve[1:]).sum() / 2 / t_max)


def auv_by_window(
    solve_steps_by_window: Mapping[Hashable, Iterable[int | None]], t_max: int
) -> dict[Hashable, float]:
    """AUV for each history window of a memory ablation, keyed as given.

    Key the runs by window however the report wants them shown: ``0`` for the current
    observation only, ``None`` (or ``"full"``) for the full history, numbers between.

    >>> auv_by_window({0: [None, 2], "full": [1, 1]}, t_max=2)
    {0: 0.125, 'full': 0.75}
    """
    return {window: auv(steps, t_max) for window, steps in solve_steps_by_window.items()}


def memory_index(auv_full: float, auv_current: float) -> float:
    """``MI = AUV(full history) - AUV(current observation only)`` (004 Eq. 5).

    Positive when the history helps; 0 says the history made no difference, not that the
    agent handles memory badly.

    >>> memory_index(0.75, 0.125)
    0.625
    """
    for name, value in (("auv_full", auv_full), ("auv_current", auv_current)):
        if not 0 <= value <= 1:
            raise ValueError(f"{name} must be an AUV between 0 and 1, not {value!r}")
    return float(auv_full - auv_current)
