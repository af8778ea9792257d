"""The report's figures, each drawn from a table's rows (or curves) into PNG bytes.

Figures are built on :class:`matplotlib.figure.Figure` and rendered by the Agg canvas,
never through ``pyplot``: no global figure state, no display needed, and nothing
configured at import. Each function returns ``None`` when there is nothing to draw.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from analysis.metrics.records import KINDS
from analysis.readings import Row

SIZE = (6.4, 3.6)
DPI = 100


def png(figure: Figure) -> bytes:
    """The figure rendered as PNG bytes by the Agg canvas."""
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return buffer.getvalue()


def new_axes(title: str) -> tuple[Figure, Any]:
    figure = Figure(figsize=SIZE)
    axes = figure.add_subplot()
    axes.set_title(title)
    return figure, axes


def grouped_bars(rows: Sequence[Row], group: str, series: str, value: str, title: str,
                 errors: tuple[str, str] | None = None) -> bytes | None:
    """Bars of ``value`` for each ``group`` (x axis), one bar per ``series`` in it."""
    if not rows:
        return None
    groups = sorted({r[group] for r in rows})
    names = sorted({r[series] for r in rows})
    figure, axes = new_axes(title)
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        found = {r[group]: r for r in rows if r[series] == name}
        heights = [found[g][value] if g in found else 0.0 for g in groups]
        x = np.arange(len(groups)) + i * width
        axes.bar(x, heights, width, label=name, yerr=_error_bars(found, groups, value, errors))
    axes.set_xticks(np.arange(len(groups)) + 0.4 - width / 2, groups, rotation=20, ha="right")
    axes.set_ylabel(value)
    axes.legend(fontsize="small")
    return png(figure)


def _error_bars(found: dict, groups: list, value: str, errors: tuple[str, str] | None):
    """Asymmetric error bars from the rows' interval columns, or None without them."""
    if errors is None:
        return None
    low, high = errors
    bars = [[0.0, 0.0] if g not in found or found[g][low] is None
            else [found[g][value] - found[g][low], found[g][high] - found[g][value]]
            for g in groups]
    return np.maximum(np.array(bars).T, 0.0)


def task_type_figure(rows: Sequence[Row]) -> bytes | None:
    """Aggregate score per task type and agent (002 Fig. 4)."""
    return grouped_bars(rows, "challenge", "agent", "score", "Score by task type")


def human_interval_figure(rows: Sequence[Row]) -> bytes | None:
    """Per problem score with the humans' bootstrap 95% interval."""
    return grouped_bars(rows, "problem", "agent", "score", "Score by problem (human: p80, 95% CI)",
                        errors=("ci_low", "ci_high"))


def action_type_figure(rows: Sequence[Row]) -> bytes | None:
    """Stacked shares of unique actions by type, per agent (002 Fig. 5)."""
    if not rows:
        return None
    figure, axes = new_axes("Unique actions by type")
    agents = [r["agent"] for r in rows]
    bottom = np.zeros(len(rows))
    for kind in KINDS:
        shares = np.array([r[kind] for r in rows], dtype=float)
        axes.bar(agents, shares, bottom=bottom, label=kind)
        bottom += shares
    axes.set_ylabel("share of unique actions")
    axes.legend(fontsize="small")
    return png(figure)


def perplexity_figure(curves: dict[str, list[list[tuple[float, float]]]]) -> bytes | None:
    """Mean normalized-perplexity curve per agent over normalized time (002 Fig. 6)."""
    if not curves:
        return None
    figure, axes = new_axes("Normalized perplexity of exploration")
    grid = np.linspace(0.0, 1.0, 51)
    for agent, agent_curves in sorted(curves.items()):
        axes.plot(grid, np.mean([_on_grid(c, grid) for c in agent_curves], axis=0), label=agent)
    axes.set_xlabel("normalized time")
    axes.set_ylabel("normalized perplexity")
    axes.legend(fontsize="small")
    return png(figure)


def _on_grid(curve: list[tuple[float, float]], grid: np.ndarray) -> np.ndarray:
    xs, ys = zip(*curve)
    return np.interp(grid, xs, ys)


def score_cost_figure(rows: Sequence[Row]) -> bytes | None:
    """Mean score against cost per attempt, one point per priced model (002 Fig. 3)."""
    if not rows:
        return None
    priced = [r for r in rows if r["cost_per_attempt"] is not None and r["score"] is not None]
    if not priced:
        return None
    figure, axes = new_axes("Score versus cost")
    for row in priced:
        axes.scatter(row["cost_per_attempt"], row["score"], label=row["agent"])
    axes.set_xlabel("cost per attempt (USD, incomplete attempts included)")
    axes.set_ylabel("mean score")
    axes.legend(fontsize="small")
    return png(figure)


def progress_figure(curves: dict[str, list[list[float]]]) -> bytes | None:
    """Mean progress rate against test step, per agent (001); a finished episode keeps
    its last value."""
    if not curves:
        return None
    figure, axes = new_axes("Progress rate by step")
    for agent, agent_curves in sorted(curves.items()):
        length = max(map(len, agent_curves))
        padded = [c + [c[-1]] * (length - len(c)) for c in agent_curves]
        axes.plot(range(length), np.mean(padded, axis=0), label=agent)
    axes.set_xlabel("test step")
    axes.set_ylabel("progress rate")
    axes.legend(fontsize="small")
    return png(figure)


def explore_exploit_figure(rows: Sequence[Row]) -> bytes | None:
    """Exploration against exploitation error per agent, success as the label (000 Fig. 1)."""
    points = [r for r in rows if r["exploration_error"] is not None
              and r["exploitation_error"] is not None]
    if not points:
        return None
    figure, axes = new_axes("Exploration and exploitation error")
    for row in points:
        axes.scatter(row["exploration_error"], row["exploitation_error"],
                     label=f"{row['agent']} (success {row['success']:.2f})")
    axes.set_xlabel("exploration error")
    axes.set_ylabel("exploitation error")
    axes.legend(fontsize="small")
    return png(figure)


def memory_figure(rows: Sequence[Row]) -> bytes | None:
    """AUV by history setting, one bar per model and challenge (004's memory ablation)."""
    labelled = [{**r, "run": f"{r['agent']} ({r['challenge']})"} for r in rows]
    return grouped_bars(labelled, "history", "run", "auv", "AUV by history setting")
