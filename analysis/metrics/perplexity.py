"""Normalized perplexity of the exploration actions (002 App. D.1, Def. D.1-D.3).

How predictable an agent's actions are while it explores: a sliding window over the
interaction-phase action symbols, each window's perplexity rescaled to [0, 1] by the
number of distinct symbols in it. Humans' curves fall faster and end lower than the
models' (002 Sec. 4.2.3); the area under the curve and the last window's value are the
two summaries the paper reports.

The alphabet (docs/metrics.md): directional keys and each distinct click position are
symbols; ``noop`` and ``reset`` are left out unless named in ``include``; only applied
interaction-phase actions count (see :mod:`analysis.metrics.records`). An episode with
no symbol has no value: these functions return ``None`` for it, never 0, so that it is
excluded from averages rather than counted as perfectly focused.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from analysis.metrics.checks import require_whole
from analysis.metrics.records import check_include, derived, symbols

WINDOW = 10
"""docs/metrics.md's window length ``w``, in symbols."""


def window_values(codes: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """Normalized perplexity of every window of ``window`` consecutive codes, stride 1.

    A sequence shorter than ``window`` is one window. For a window of length ``w``
    whose symbol ``s`` occurs ``c_s`` times, ``H = log2 w - (1/w) sum_s c_s log2 c_s``,
    and the value is ``(2^H - 1) / (K - 1)`` for its ``K`` distinct symbols (0 when
    ``K`` is 1); the whole computation is a handful of array operations.

    >>> window_values(np.array([0, 0, 1, 1]), window=4).tolist()
    [1.0]
    >>> window_values(np.array([7, 7, 7]), window=10).tolist()
    [0.0]
    """
    require_whole("window", window, unit="symbols per window")
    codes = np.asarray(codes)
    if codes.size == 0:
        raise ValueError("an empty sequence has no windows")
    width = min(int(window), codes.size)
    return _values(sliding_window_view(codes, width), width)


BATCH_WINDOWS = 200_000
"""Windows compared in one array operation when many episodes are computed together."""


def _values(windows: np.ndarray, width: int) -> np.ndarray:
    """:func:`window_values` of an ``(n, width)`` array of windows: each window sorted,
    its runs of equal codes are its symbols, and their lengths the counts ``c_s``."""
    windows = np.sort(windows, axis=1)
    n = windows.shape[0]
    starts = np.ones((n, width), dtype=bool)  # where a run of equal codes starts
    starts[:, 1:] = windows[:, 1:] != windows[:, :-1]
    run = np.cumsum(starts, axis=1) - 1 + (np.arange(n) * width)[:, None]
    counts = np.bincount(run.ravel(), minlength=n * width).reshape(n, width)
    logs = np.zeros(counts.shape)
    np.log2(counts, out=logs, where=counts > 0)
    entropy = np.log2(width) - (counts * logs).sum(axis=1) / width
    distinct = starts.sum(axis=1)
    spread = np.maximum(distinct - 1.0, 1.0)
    values = np.where(distinct > 1, (np.exp2(entropy) - 1.0) / spread, 0.0)
    return np.clip(values, 0.0, 1.0)


def _many_window_values(sequences: list[np.ndarray], window: int) -> list[np.ndarray]:
    """:func:`window_values` of each sequence, the windows of the sequences at least
    ``window`` long computed together, about :data:`BATCH_WINDOWS` at a time (per-episode
    array calls cost more than the work; all the windows at once cost memory)."""
    out: list[np.ndarray | None] = [None] * len(sequences)
    batch: list[int] = []
    size = 0
    for i, codes in enumerate(sequences):
        if codes.size < window:
            out[i] = window_values(codes, window)
            continue
        batch.append(i)
        size += codes.size - window + 1
        if size >= BATCH_WINDOWS:
            _batch_values(sequences, batch, window, out)
            batch, size = [], 0
    if batch:
        _batch_values(sequences, batch, window, out)
    return out


def _batch_values(sequences: list[np.ndarray], batch: list[int], window: int,
                  out: list[np.ndarray | None]) -> None:
    windows = np.concatenate([sliding_window_view(sequences[i], window) for i in batch])
    values = np.concatenate([_values(windows[start:start + BATCH_WINDOWS], window)
                             for start in range(0, len(windows), BATCH_WINDOWS)])
    ends = np.cumsum([sequences[i].size - window + 1 for i in batch])
    for i, part in zip(batch, np.split(values, ends[:-1]), strict=True):
        out[i] = part


class Curve(Sequence):
    """One episode's curve as the points ``(x_i, value_i)``, held as two arrays
    (``positions``, ``values``): a list of pairs costs about a hundred bytes a point."""

    __slots__ = ("positions", "values")

    def __init__(self, positions: np.ndarray, values: np.ndarray) -> None:
        self.positions, self.values = positions, values

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return list(self)[index]
        return float(self.positions[index]), float(self.values[index])

    def __iter__(self) -> Any:
        return zip(self.positions.tolist(), self.values.tolist(), strict=True)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"Curve({list(self)!r})"


def perplexity_curves(episodes: Sequence[Iterable[Any]], window: int = WINDOW,
                      include: Iterable[str] = ()) -> list[Curve | None]:
    """:func:`normalized_perplexity_curve` of each of many episodes (each a :class:`Curve`,
    equal to that list of points), computed together; events held as columns keep their
    curve, so the AUC and the final value that follow are read, not computed again."""
    require_whole("window", window, unit="symbols per window")
    include = check_include(include)
    key = ("perplexity", window, tuple(sorted(include)))
    curves: list[Any] = [_kept(actions, key) for actions in episodes]
    todo = [i for i, curve in enumerate(curves) if curve is _NOT_KEPT]
    sequences = {i: symbols(episodes[i], include) for i in todo}
    present = [i for i in todo if sequences[i]]
    values = _many_window_values([_codes(sequences[i]) for i in present], window)
    for i in todo:
        curves[i] = None
    for i, found in zip(present, values, strict=True):
        curves[i] = (_positions(found), found)
    for i in todo:
        derived(episodes[i], key, lambda curve=curves[i]: curve)
    return [None if c is None else Curve(*c) for c in curves]


_NOT_KEPT = object()


def _kept(actions: Any, key: Any) -> Any:
    """The curve the events already keep, or ``_NOT_KEPT``."""
    known = getattr(actions, "known", None)
    return _NOT_KEPT if known is None else known(key, _NOT_KEPT)


def _codes(sequence: Sequence[str]) -> np.ndarray:
    """Each symbol as a small integer, numbered in order of first appearance."""
    lookup = {s: i for i, s in enumerate(dict.fromkeys(sequence))}
    return np.array([lookup[s] for s in sequence], dtype=np.int32)


def _positions(values: np.ndarray) -> np.ndarray:
    return np.linspace(0.0, 1.0, values.size) if values.size > 1 else np.zeros(1)


def _curve(actions: Iterable[Any], window: int, include: Iterable[str]):
    """``(positions, values)`` arrays of the curve, or ``None`` with no symbols (computed
    once per episode when the events are held as columns)."""
    include = check_include(include)
    key = ("perplexity", window, tuple(sorted(include)))
    return derived(actions, key, lambda: _compute_curve(actions, window, include))


def _compute_curve(actions: Iterable[Any], window: int, include: tuple[str, ...]):
    sequence = symbols(actions, include)
    if not sequence:
        return None
    values = window_values(_codes(sequence), window)
    return _positions(values), values


def normalized_perplexity_curve(
    actions: Iterable[Any], window: int = WINDOW, include: Iterable[str] = ()
) -> Curve | None:
    """The points ``(x_i, value_i)`` of the normalized-perplexity curve, or ``None``.

    ``actions``: action texts (taken as interaction-phase) or event records (filtered to
    the applied interaction-phase ones). ``window`` (default 10): symbols per window,
    stride 1. ``include`` (default none): add ``"noop"`` and/or ``"reset"`` to the
    alphabet. Window ``i`` of ``n`` sits at ``x_i = i / (n - 1)``; a single window at 0.

    The points come as a :class:`Curve`, a sequence of pairs held as two arrays (equal
    to the list of pairs).

    >>> list(normalized_perplexity_curve(["up", "up", "down", "down", "noop"], window=2))
    [(0.0, 0.0), (0.5, 1.0), (1.0, 0.0)]
    >>> normalized_perplexity_curve(["noop", "reset"]) is None
    True
    """
    curve = _curve(actions, window, include)
    return None if curve is None else Curve(*curve)


def perplexity_auc(
    actions: Iterable[Any], window: int = WINDOW, include: Iterable[str] = ()
) -> float | None:
    """Trapezoidal area under the curve over [0, 1] (Def. D.2); a single window's value
    when there is one window; ``None`` with no symbols. Parameters as for
    :func:`normalized_perplexity_curve`."""
    curve = _curve(actions, window, include)
    if curve is None:
        return None
    positions, values = curve
    if values.size == 1:
        return float(values[0])
    return float(np.trapezoid(values, positions))


def final_perplexity(
    actions: Iterable[Any], window: int = WINDOW, include: Iterable[str] = ()
) -> float | None:
    """The last window's value (Def. D.3), or ``None`` with no symbols. Parameters as
    for :func:`normalized_perplexity_curve`."""
    curve = _curve(actions, window, include)
    return None if curve is None else float(curve[1][-1])
