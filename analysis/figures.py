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

**One colour per agent.** :func:`agent_colours` gives every agent of a report its colour
once (people always :data:`HUMAN_COLOUR`), and every figure of the report draws with that
one mapping, so a model keeps its colour from figure to figure. Axis labels come from
:data:`LABELS` (column name -> words), never a raw column name. SVG keeps its text as
text (``svg.fonttype: none``) in the fonts :data:`FONTS` names, so a figure can be edited
and searched; the PDF embeds TrueType fonts. Each legend entry carries an SVG id
(``legend-handle-N``, ``legend-label-N``) so that a reader or a test can find it.
"""

from __future__ import annotations

import io
import re
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from analysis.metrics.records import KINDS
from analysis.readings import HUMAN, Row
from records.flow import drop_note

SIZE = (7.2, 3.6)
DPI = 150
FORMATS = ("png", "svg", "pdf")
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
           "#000000")
"""Okabe and Ito's colours, which people with any common colour-vision deficiency tell
apart; the first goes to people."""
HUMAN_COLOUR = PALETTE[0]
MORE_COLOURS = ("#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677",
                "#882255", "#AA4499")
"""Paul Tol's muted colours, for the models after Okabe and Ito's seven."""
KIND_COLOURS = ("#3b3b3b", "#7a7a7a", "#b3b3b3", "#e3e3e3")
"""Greys for the action types, so that no action type wears an agent's colour."""
FONTS = ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"]
"""The fonts figures name, first found first (DejaVu Sans ships with matplotlib)."""
STYLE = {"svg.fonttype": "none", "pdf.fonttype": 42, "font.family": "sans-serif",
         "font.sans-serif": FONTS}
"""Settings in force while a figure is rendered: text stays text."""
HUMAN_SCORE = "human (80th percentile per problem)"
"""The legend's name for people on a score figure: what the bar is."""
LABELS = {
    "score": "score (people: 80th percentile\nper problem; models: mean)",  # on one line,
    # longer than the axes are high, it ran into the problems' names below them
    "mean_score": "mean score",
    "per_100_actions": "resets per 100 exploration actions",
    "cost_per_attempt": "cost per attempt (USD, incomplete attempts included)",
    "normalized_time": "normalized time",
    "normalized_perplexity": "normalized perplexity",
    "share_of_unique_actions": "share of unique actions",
    "test_step": "test step",
    "progress_rate": "progress rate",
    "exploration_error": "exploration error",
    "exploitation_error": "exploitation error",
    "scored_steps": "scored steps",
    "share_solved": "share solved",
    "challenge": "task type",
    "env": "environment",
    "problem": "problem",
    "participants": "participants",
    "stage": "stage of the flow",
    "included_per_problem": "included attempts per problem",
}
"""Column names and quantities as the figures' axes say them."""
NAME_WIDTH = 28
"""Characters after which an agent's name is wrapped in a legend or on an axis."""


def png(figure: Figure) -> bytes:
    """The figure rendered as PNG bytes by the Agg canvas."""
    return _render(figure, "png")


def _render(figure: Figure, kind: str) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    with rc_context(STYLE):
        figure.savefig(buffer, format=kind, dpi=DPI, bbox_inches="tight")
    return buffer.getvalue()


def label(name: str) -> str:
    """The words for a column name (:data:`LABELS`); a name not listed, spaced."""
    return LABELS.get(name, name.replace("_", " "))


def agent_colours(agents: Iterable[str]) -> dict[str, str]:
    """Each agent's one colour: people :data:`HUMAN_COLOUR`, the others in name order
    through the rest of the palette (repeating only past sixteen models).

    >>> agent_colours(["llm:b", "human", "llm:a"])
    {'human': '#0072B2', 'llm:a': '#E69F00', 'llm:b': '#009E73'}
    """
    rest = (*PALETTE[1:], *MORE_COLOURS)
    models = [a for a in ordered(agents) if a != HUMAN]
    return {HUMAN: HUMAN_COLOUR, **{a: rest[i % len(rest)] for i, a in enumerate(models)}}


def colour_of(colours: dict[str, str] | None, agent: str, among: Iterable[str]) -> str:
    """``agent``'s colour in the report's mapping, or in one made of ``among``."""
    if colours is None or agent not in colours:
        colours = agent_colours([*among, agent])
    return colours[agent]


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
    """A sort key reading the digits in a name as numbers (``p2`` before ``p10``); a
    character that only looks like one (``²``) is read as a letter.

    >>> sorted(["p10", "p2", "o1²"], key=natural)
    ['o1²', 'p2', 'p10']
    """
    return tuple((0, int(part), "") if part.isdecimal() else (1, 0, part)
                 for part in re.split(r"(\d+)", str(name)) if part)


def wrapped(name: str) -> str:
    return "\n".join(textwrap.wrap(str(name), NAME_WIDTH)) or str(name)


def new_axes(title: str) -> tuple[Figure, Any]:
    figure = Figure(figsize=SIZE)
    axes = figure.add_subplot()
    axes.set_title(title)
    axes.spines[["top", "right"]].set_visible(False)
    return figure, axes


def legend_outside(axes: Any, title: str | None = None) -> None:
    """The legend to the right of the axes, never over the data; each entry's handle and
    label carry SVG ids ``legend-handle-N`` and ``legend-label-N``."""
    if axes.get_legend_handles_labels()[0]:
        legend = axes.legend(fontsize="small", title=title, loc="upper left",
                             bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)
        for i, (handle, text) in enumerate(zip(legend.legend_handles, legend.get_texts(),
                                               strict=True)):
            handle.set_gid(f"legend-handle-{i}")
            text.set_gid(f"legend-label-{i}")


def grouped_bars(rows: Sequence[Row], group: str, series: str, value: str, title: str,
                 errors: tuple[str, str] | None = None, colours: dict[str, str] | None = None,
                 human: str = HUMAN) -> Figure | None:
    """Bars of ``value`` for each ``group`` (x axis), one bar per ``series`` (an agent, in
    its colour) in it; ``human`` is the legend's name for people. None when no row has a
    value (an empty frame of axes from -0.04 to 0.04 said nothing the table did not)."""
    if not any(r[value] is not None for r in rows):
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
        bars = axes.bar(x, heights, width, label=wrapped(human if name == HUMAN else name),
                        color=colour_of(colours, name, names),
                        yerr=_error_bars(found, groups, value, errors), capsize=3,
                        error_kw={"elinewidth": 1.2, "ecolor": "#333333"})
        # a value of 0 is a bar no one sees: it is written, so it is not read as missing
        axes.bar_label(bars, labels=["0" if h == 0 else "" for h in heights],
                       fontsize="small")
    values = [r[key] for r in rows for key in (value, *(errors or ())[:1])
              if r[key] is not None]
    if min(values) >= 0:  # nothing below 0: the axis starts there (all 0: up to 1)
        axes.set_ylim(bottom=0, top=None if max(values) > 0 else 1)
    axes.set_xticks(np.arange(len(groups)) + 0.4 - width / 2, [wrapped(g) for g in groups],
                    rotation=90 if crowded else 20, ha="center" if crowded else "right",
                    fontsize="small" if crowded else None)
    axes.set_ylabel(label(value))
    axes.set_xlabel(label(group))
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


def task_type_figure(rows: Sequence[Row], colours: dict[str, str] | None = None
                     ) -> Figure | None:
    """Aggregate score per task type and agent (002 Fig. 4), with intervals when the rows
    have them (``tables.headline``)."""
    errors = ("ci_low", "ci_high") if rows and "ci_low" in rows[0] else None
    return grouped_bars(rows, "challenge", "agent", "score", "Score by task type",
                        errors=errors, colours=colours, human=HUMAN_SCORE)


MAX_PROBLEMS = 30
"""Problems drawn in the per-problem figure; a study of hundreds has them all in its table
(``problem_scores.csv``), and a figure of hundreds of bars is read by nobody."""
CROWDED = 8
"""Groups on a bar chart's axis beyond which its labels stand upright."""


def human_interval_figure(rows: Sequence[Row], colours: dict[str, str] | None = None
                          ) -> Figure | None:
    """Per problem score with the humans' bootstrap 95% interval (the first
    :data:`MAX_PROBLEMS` problems by id when there are more; the title says so)."""
    problems = sorted({r["problem"] for r in rows}, key=natural)
    title = "Score by problem (human: p80, 95% CI)"
    if len(problems) > MAX_PROBLEMS:
        shown = set(problems[:MAX_PROBLEMS])
        rows = [r for r in rows if r["problem"] in shown]
        title += f": first {MAX_PROBLEMS} of {len(problems)}, all in problem_scores.csv"
    return grouped_bars(rows, "problem", "agent", "score", title, errors=("ci_low", "ci_high"),
                        colours=colours, human=HUMAN_SCORE)


def environment_figure(rows: Sequence[Row], colours: dict[str, str] | None = None
                       ) -> Figure | None:
    """Mean score per environment and agent (002 Fig. 6a)."""
    return grouped_bars(rows, "env", "agent", "score", "Score by environment", colours=colours,
                        human=HUMAN_SCORE)


def reset_figure(rows: Sequence[Row], colours: dict[str, str] | None = None) -> Figure | None:
    """Resets per 100 interaction-phase actions, per environment and agent (002 Fig. 6d)."""
    return grouped_bars(rows, "env", "agent", "per_100_actions",
                        "Resets per 100 exploration actions, by environment", colours=colours)


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
                 color=KIND_COLOURS[i % len(KIND_COLOURS)], edgecolor="#222222", linewidth=0.5)
        bottom += shares
    axes.tick_params(axis="x", labelrotation=20)
    axes.set_ylabel(label("share_of_unique_actions"))
    legend_outside(axes, "action type")
    return figure


def perplexity_figure(curves: dict[str, list[list[tuple[float, float]]]],
                      colours: dict[str, str] | None = None) -> Figure | None:
    """Mean normalized-perplexity curve per agent over normalized time (002 Fig. 6)."""
    if not curves:
        return None
    figure, axes = new_axes("Normalized perplexity of exploration")
    grid = np.linspace(0.0, 1.0, 51)
    for agent in ordered(curves):
        values = np.array([_on_grid(c, grid) for c in curves[agent]])
        mean = values.mean(axis=0)
        tint = colour_of(colours, agent, curves)
        axes.plot(grid, mean, label=wrapped(agent), color=tint)
        if len(values) > 1:  # the spread of the mean: one standard error either side
            half = values.std(axis=0, ddof=1) / np.sqrt(len(values))
            axes.fill_between(grid, mean - half, mean + half, color=tint, alpha=0.2,
                              linewidth=0)
    axes.set_xlabel(label("normalized_time"))
    axes.set_ylabel(label("normalized_perplexity"))
    legend_outside(axes)
    return figure


def _on_grid(curve: Sequence[tuple[float, float]], grid: np.ndarray) -> np.ndarray:
    if hasattr(curve, "positions"):  # a metrics.perplexity.Curve: its arrays, as they are
        return np.interp(grid, curve.positions, curve.values)
    xs, ys = zip(*curve)
    return np.interp(grid, xs, ys)


def score_cost_figure(rows: Sequence[Row], colours: dict[str, str] | None = None
                      ) -> Figure | None:
    """Mean score against cost per attempt, one point per priced model (002 Fig. 3)."""
    if not rows:
        return None
    priced = [r for r in rows if r["cost_per_attempt"] is not None and r["score"] is not None]
    if not priced:
        return None
    figure, axes = new_axes("Score versus cost")
    by_agent = {r["agent"]: r for r in priced}
    for agent in ordered(by_agent):
        row = by_agent[agent]
        axes.scatter(row["cost_per_attempt"], row["score"], label=wrapped(agent),
                     color=colour_of(colours, agent, by_agent), clip_on=False)  # whole at 0
    axes.set_xlim(left=0)  # no cost is below nothing (agents that ask no model cost 0)
    axes.set_xlabel(label("cost_per_attempt"))
    axes.set_ylabel(label("mean_score"))
    legend_outside(axes)
    return figure


def progress_figure(curves: dict[str, list[list[float]]],
                    colours: dict[str, str] | None = None) -> Figure | None:
    """Mean progress rate against test step, per agent (001); a finished episode keeps
    its last value."""
    if not curves:
        return None
    figure, axes = new_axes("Progress rate by step")
    for agent in ordered(curves):
        agent_curves = curves[agent]
        length = max(map(len, agent_curves))
        padded = [c + [c[-1]] * (length - len(c)) for c in agent_curves]
        axes.plot(range(length), np.mean(padded, axis=0), label=wrapped(agent),
                  color=colour_of(colours, agent, curves))
    axes.set_xlabel(label("test_step"))
    axes.set_ylabel(label("progress_rate"))
    legend_outside(axes)
    return figure


def explore_exploit_figure(rows: Sequence[Row], colours: dict[str, str] | None = None
                           ) -> Figure | None:
    """Exploration against exploitation error per agent, success as the label (000 Fig. 1)."""
    points = [r for r in rows if r["exploration_error"] is not None
              and r["exploitation_error"] is not None]
    if not points:
        return None
    figure, axes = new_axes("Exploration and exploitation error")
    agents = [r["agent"] for r in points]
    for row in sorted(points, key=lambda r: (r["agent"] != HUMAN, r["agent"])):
        axes.scatter(row["exploration_error"], row["exploitation_error"],
                     color=colour_of(colours, row["agent"], agents),
                     label=wrapped(f"{row['agent']} (success {row['success']:.2f})"))
    axes.set_xlabel(label("exploration_error"))
    axes.set_ylabel(label("exploitation_error"))
    legend_outside(axes)
    return figure


def memory_figure(curves: dict[tuple[str, str, str], Row],
                  colours: dict[str, str] | None = None) -> Figure | None:
    """Success curves by history setting (004 Fig. 2): the share of episodes solved
    within each number of steps, the model's colour, one marker per challenge, one line
    style per history setting; the legend gives each curve's AUV."""
    if not curves:
        return None
    figure, axes = new_axes("Success by step, per history setting (AUV in the legend)")
    bases = [base for base, _, _ in curves]
    challenges = sorted({challenge for _, challenge, _ in curves})
    styles, markers = ("-", "--", ":", "-."), ("o", "s", "^", "D", "v")
    settings: list[str] = []
    for (base, challenge, setting), run in curves.items():
        if setting not in settings:
            settings.append(setting)
        axes.plot(range(len(run["curve"])), run["curve"],
                  color=colour_of(colours, base, bases),
                  marker=markers[challenges.index(challenge) % len(markers)], markersize=3,
                  linestyle=styles[settings.index(setting) % len(styles)],
                  label=wrapped(f"{base} ({challenge}), history {setting}: AUV {run['auv']:.2f}"))
    axes.set_xlabel(label("scored_steps"))
    axes.set_ylabel(label("share_solved"))
    legend_outside(axes)
    return figure


def flow_figure(rows: Sequence[Row]) -> Figure | None:
    """The participant flow as a funnel, one panel per study: participants still in after
    each step (people's colour), the number who left there and why beside each bar."""
    studies = list(dict.fromkeys(r["study"] for r in rows))
    if not studies:
        return None
    steps = max(sum(1 for r in rows if r["study"] == s) for s in studies)
    figure = Figure(figsize=(SIZE[0] * min(len(studies), 2), 1.0 + 0.32 * steps))
    for i, study in enumerate(studies):
        axes = figure.add_subplot(1, len(studies), i + 1)
        mine = [r for r in rows if r["study"] == study]
        y = np.arange(len(mine))[::-1]
        axes.barh(y, [r["participants"] for r in mine], color=HUMAN_COLOUR)
        axes.set_yticks(y, [r["step"] for r in mine], fontsize="small")
        top = max(r["participants"] for r in mine) or 1
        for at, row in zip(y, mine, strict=True):
            note = f"{row['participants']}" + (f"  ({drop_note(row, why=True)})"
                                               if row["dropped"] else "")
            axes.text(row["participants"] + top * 0.02, at, note, va="center", fontsize="x-small")
        axes.set_xlim(0, top * 2.2)  # room for the reasons, right of the bars
        axes.set_xlabel(label("participants"))
        axes.set_title(f"Participant flow: {study}")
        axes.spines[["top", "right"]].set_visible(False)
    return figure
