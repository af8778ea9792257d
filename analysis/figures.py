"""The report's figures, each drawn from a table's rows (or curves), fit for a paper.

Figures are built on :class:`matplotlib.figure.Figure` and rendered by the Agg canvas,
never through ``pyplot``: no global figure state, no display needed, and nothing
configured at import. Each function returns the figure, or ``None`` when there is
nothing to draw; :func:`png` renders one for the page, :func:`save` writes it as PNG,
SVG and PDF for a paper.

One style for all: the Okabe-Ito colour-blind-safe palette (:data:`PALETTE`), people
first and then the models in name order (:func:`ordered`), long agent names wrapped,
confidence intervals drawn with caps, and every legend outside the axes, on the right,
so that it never covers data.
"""

from __future__ import annotations

import io
import re
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from analysis.metrics.records import KINDS
from analysis.readings import HUMAN, Row

SIZE = (7.2, 3.6)
DPI = 150
FORMATS = ("png", "svg", "pdf")
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
           "#000000")
"""Okabe and Ito's colours, which people with any common colour-vision deficiency tell
apart; the first goes to people."""
NAME_WIDTH = 28
"""Characters after which an agent's name is wrapped in a legend or on an axis."""


def png(figure: Figure) -> bytes:
    """The figure rendered as PNG bytes by the Agg canvas."""
    return _render(figure, "png")


def _render(figure: Figure, kind: str) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format=kind, dpi=DPI, bbox_inches="tight")
    return buffer.getvalue()


def save(figure: Figure, folder: Path, name: str) -> list[Path]:
    """``name.png``, ``name.svg`` and ``name.pdf`` in ``folder``; their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for kind in FORMATS:
        path = folder / f"{name}.{kind}"
        path.write_bytes(_render(figure, kind))
        paths.append(path)
    return paths


def ordered(names: Iterable[str]) -> list[str]:
    """People first, then the rest in name order."""
    return sorted(set(names), key=lambda n: (n != HUMAN, n))


def natural(name: Any) -> tuple:
    """A sort key reading the digits in a name as numbers (``p2`` before ``p10``)."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in re.split(r"(\d+)", str(name)) if part)


def wrapped(name: str) -> str:
    return "\n".join(textwrap.wrap(str(name), NAME_WIDTH)) or str(name)


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def new_axes(title: str) -> tuple[Figure, Any]:
    figure = Figure(figsize=SIZE)
    axes = figure.add_subplot()
    axes.set_title(title)
    axes.spines[["top", "right"]].set_visible(False)
    return figure, axes


def legend_outside(axes: Any, title: str | None = None) -> None:
    """The legend to the right of the axes, never over the data."""
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize="small", title=title, loc="upper left",
                    bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)


def grouped_bars(rows: Sequence[Row], group: str, series: str, value: str, title: str,
                 errors: tuple[str, str] | None = None) -> Figure | None:
    """Bars of ``value`` for each ``group`` (x axis), one bar per ``series`` in it."""
    if not rows:
        return None
    groups = sorted({r[group] for r in rows}, key=natural)
    names = ordered(r[series] for r in rows)
    figure, axes = new_axes(title)
    crowded = len(groups) > CROWDED
    if crowded:  # many groups: a wider figure, labels upright so they never overlap
        figure.set_size_inches(max(SIZE[0], 3.0 + 0.3 * len(groups)), SIZE[1] + 1.2)
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        found = {r[group]: r for r in rows if r[series] == name}
        heights = [np.nan if g not in found or found[g][value] is None else found[g][value]
                   for g in groups]  # no value: no bar (not a bar of zero)
        x = np.arange(len(groups)) + i * width
        axes.bar(x, heights, width, label=wrapped(name), color=colour(i),
                 yerr=_error_bars(found, groups, value, errors), capsize=3,
                 error_kw={"elinewidth": 1.2, "ecolor": "#333333"})
    axes.set_xticks(np.arange(len(groups)) + 0.4 - width / 2, [wrapped(g) for g in groups],
                    rotation=90 if crowded else 20, ha="center" if crowded else "right",
                    fontsize="small" if crowded else None)
    axes.set_ylabel(value)
    legend_outside(axes)
    return figure


def _error_bars(found: dict, groups: list, value: str, errors: tuple[str, str] | None):
    """Asymmetric error bars from the rows' interval columns, or None without them."""
    if errors is None:
        return None
    low, high = errors
    bars = [[0.0, 0.0] if g not in found or found[g][low] is None or found[g][value] is None
            else [found[g][value] - found[g][low], found[g][high] - found[g][value]]
            for g in groups]
    bars = np.maximum(np.array(bars).T, 0.0)
    return bars if bars.any() else None  # no interval at all: no caps sitting on the bars


def task_type_figure(rows: Sequence[Row]) -> Figure | None:
    """Aggregate score per task type and agent (002 Fig. 4), with intervals when the rows
    have them (``tables.headline``)."""
    errors = ("ci_low", "ci_high") if rows and "ci_low" in rows[0] else None
    return grouped_bars(rows, "challenge", "agent", "score", "Score by task type",
                        errors=errors)


MAX_PROBLEMS = 30
CROWDED = 8
"""Groups on a bar chart's axis beyond which its labels stand upright."""
"""Problems drawn in the per-problem figure; a study of hundreds has them all in its table
(``problem_scores.csv``), and a figure of hundreds of bars is read by nobody."""


def human_interval_figure(rows: Sequence[Row]) -> Figure | None:
    """Per problem score with the humans' bootstrap 95% interval (the first
    :data:`MAX_PROBLEMS` problems by id when there are more; the title says so)."""
    problems = sorted({r["problem"] for r in rows}, key=natural)
    title = "Score by problem (human: p80, 95% CI)"
    if len(problems) > MAX_PROBLEMS:
        shown = set(problems[:MAX_PROBLEMS])
        rows = [r for r in rows if r["problem"] in shown]
        title += f": first {MAX_PROBLEMS} of {len(problems)}, all in problem_scores.csv"
    return grouped_bars(rows, "problem", "agent", "score", title, errors=("ci_low", "ci_high"))


def environment_figure(rows: Sequence[Row]) -> Figure | None:
    """Mean score per environment and agent (002 Fig. 6a)."""
    return grouped_bars(rows, "env", "agent", "score", "Score by environment")


def reset_figure(rows: Sequence[Row]) -> Figure | None:
    """Resets per 100 interaction-phase actions, per environment and agent (002 Fig. 6d)."""
    return grouped_bars(rows, "env", "agent", "per_100_actions",
                        "Resets per 100 exploration actions, by environment")


def action_type_figure(rows: Sequence[Row]) -> Figure | None:
    """Stacked shares of unique actions by type, per agent (002 Fig. 5)."""
    if not rows:
        return None
    figure, axes = new_axes("Unique actions by type")
    by_agent = {r["agent"]: r for r in rows}
    agents = ordered(by_agent)
    bottom = np.zeros(len(agents))
    for i, kind in enumerate(KINDS):
        shares = np.array([by_agent[a][kind] for a in agents], dtype=float)
        axes.bar([wrapped(a) for a in agents], shares, bottom=bottom, label=kind,
                 color=colour(i))
        bottom += shares
    axes.tick_params(axis="x", labelrotation=20)
    axes.set_ylabel("share of unique actions")
    legend_outside(axes, "action type")
    return figure


def perplexity_figure(curves: dict[str, list[list[tuple[float, float]]]]) -> Figure | None:
    """Mean normalized-perplexity curve per agent over normalized time (002 Fig. 6)."""
    if not curves:
        return None
    figure, axes = new_axes("Normalized perplexity of exploration")
    grid = np.linspace(0.0, 1.0, 51)
    for i, agent in enumerate(ordered(curves)):
        values = np.array([_on_grid(c, grid) for c in curves[agent]])
        mean = values.mean(axis=0)
        axes.plot(grid, mean, label=wrapped(agent), color=colour(i))
        if len(values) > 1:  # the spread of the mean: one standard error either side
            half = values.std(axis=0, ddof=1) / np.sqrt(len(values))
            axes.fill_between(grid, mean - half, mean + half, color=colour(i), alpha=0.2,
                              linewidth=0)
    axes.set_xlabel("normalized time")
    axes.set_ylabel("normalized perplexity")
    legend_outside(axes)
    return figure


def _on_grid(curve: list[tuple[float, float]], grid: np.ndarray) -> np.ndarray:
    xs, ys = zip(*curve)
    return np.interp(grid, xs, ys)


def score_cost_figure(rows: Sequence[Row]) -> Figure | None:
    """Mean score against cost per attempt, one point per priced model (002 Fig. 3)."""
    if not rows:
        return None
    priced = [r for r in rows if r["cost_per_attempt"] is not None and r["score"] is not None]
    if not priced:
        return None
    figure, axes = new_axes("Score versus cost")
    by_agent = {r["agent"]: r for r in priced}
    for i, agent in enumerate(ordered(by_agent)):
        row = by_agent[agent]
        axes.scatter(row["cost_per_attempt"], row["score"], label=wrapped(agent),
                     color=colour(i))
    axes.set_xlabel("cost per attempt (USD, incomplete attempts included)")
    axes.set_ylabel("mean score")
    legend_outside(axes)
    return figure


def progress_figure(curves: dict[str, list[list[float]]]) -> Figure | None:
    """Mean progress rate against test step, per agent (001); a finished episode keeps
    its last value."""
    if not curves:
        return None
    figure, axes = new_axes("Progress rate by step")
    for i, agent in enumerate(ordered(curves)):
        agent_curves = curves[agent]
        length = max(map(len, agent_curves))
        padded = [c + [c[-1]] * (length - len(c)) for c in agent_curves]
        axes.plot(range(length), np.mean(padded, axis=0), label=wrapped(agent), color=colour(i))
    axes.set_xlabel("test step")
    axes.set_ylabel("progress rate")
    legend_outside(axes)
    return figure


def explore_exploit_figure(rows: Sequence[Row]) -> Figure | None:
    """Exploration against exploitation error per agent, success as the label (000 Fig. 1)."""
    points = [r for r in rows if r["exploration_error"] is not None
              and r["exploitation_error"] is not None]
    if not points:
        return None
    figure, axes = new_axes("Exploration and exploitation error")
    for i, row in enumerate(sorted(points, key=lambda r: (r["agent"] != HUMAN, r["agent"]))):
        axes.scatter(row["exploration_error"], row["exploitation_error"], color=colour(i),
                     label=wrapped(f"{row['agent']} (success {row['success']:.2f})"))
    axes.set_xlabel("exploration error")
    axes.set_ylabel("exploitation error")
    legend_outside(axes)
    return figure


def memory_figure(curves: dict[tuple[str, str, str], Row]) -> Figure | None:
    """Success curves by history setting (004 Fig. 2): the share of episodes solved
    within each number of steps, one colour per model and challenge, one line style
    per history setting; the legend gives each curve's AUV."""
    if not curves:
        return None
    figure, axes = new_axes("Success by step, per history setting (AUV in the legend)")
    runs = ordered(f"{base} ({challenge})" for base, challenge, _ in curves)
    styles = ("-", "--", ":", "-.")
    settings: list[str] = []
    for (base, challenge, setting), run in curves.items():
        if setting not in settings:
            settings.append(setting)
        axes.plot(range(len(run["curve"])), run["curve"],
                  color=colour(runs.index(f"{base} ({challenge})")),
                  linestyle=styles[settings.index(setting) % len(styles)],
                  label=wrapped(f"{base} ({challenge}), history {setting}: AUV {run['auv']:.2f}"))
    axes.set_xlabel("scored steps")
    axes.set_ylabel("share solved")
    legend_outside(axes)
    return figure
