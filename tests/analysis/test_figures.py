"""The figures' one style: legends outside the axes (never over the data), people first,
the colour-blind-safe palette, long names wrapped, intervals drawn."""

from __future__ import annotations

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex

from analysis import figures
from analysis.metrics.records import KINDS

LONG = "llm:a-model-with-a-very-long-name-2026-11-01 [history none]"
SCORES = [{"challenge": c, "agent": a, "score": s, "ci_low": s - 0.1, "ci_high": s + 0.1}
          for c in ("cd", "mfp", "planning")
          for a, s in ((LONG, 0.3), ("human", 0.8), ("llm:m", 0.5))]


def drawn(figure):
    FigureCanvasAgg(figure).draw()
    return figure, figure.axes[0]


CASES = {
    "task types": lambda: figures.task_type_figure(SCORES),
    "intervals": lambda: figures.grouped_bars(SCORES, "challenge", "agent", "score", "t",
                                              errors=("ci_low", "ci_high")),
    "action types": lambda: figures.action_type_figure(
        [{"agent": a, **{k: 1 / len(KINDS) for k in KINDS}} for a in ("llm:m", "human")]),
    "perplexity": lambda: figures.perplexity_figure(
        {"llm:m": [[(0, 1.0), (1, 0.5)], [(0, 0.9), (1, 0.4)]], "human": [[(0, 1.0), (1, 0.2)]]}),
    "progress": lambda: figures.progress_figure({"human": [[0, 0.5, 1]], LONG: [[0, 0.2]]}),
    "memory": lambda: figures.memory_figure({
        ("llm:m", "planning", "full"): {"curve": [0.0, 0.5, 1.0], "auv": 0.5},
        ("llm:m", "planning", "none"): {"curve": [0.0, 0.0, 0.5], "auv": 0.125}}),
    "score cost": lambda: figures.score_cost_figure(
        [{"agent": "llm:m", "cost_per_attempt": 0.1, "score": 0.5},
         {"agent": LONG, "cost_per_attempt": 0.3, "score": 0.2}]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_legend_sits_outside_the_axes(name):
    figure, axes = drawn(CASES[name]())
    legend = axes.get_legend()
    assert legend is not None
    renderer = figure.canvas.get_renderer()
    box, plot = legend.get_window_extent(renderer), axes.get_window_extent(renderer)
    assert box.x0 >= plot.x1  # to the right: no overlap with anything drawn in the axes


def test_people_come_first_in_the_palette_s_first_colour():
    figure, axes = drawn(figures.task_type_figure(SCORES))
    labels = [t.get_text() for t in axes.get_legend().get_texts()]
    assert labels[0] == "human (80th percentile per\nproblem)"  # what the human bar is
    assert labels[1].startswith("llm:a-model") and labels[2] == "llm:m"
    assert max(len(line) for label in labels for line in label.split("\n")) <= figures.NAME_WIDTH
    first_bar = axes.patches[0]
    assert to_hex(first_bar.get_facecolor()) == figures.PALETTE[0].lower()
    assert {to_hex(p.get_facecolor()) for p in axes.patches} <= {c.lower() for c in figures.PALETTE}


def test_a_model_keeps_its_colour_whatever_the_figure_holds():
    colours = figures.agent_colours(["human", "llm:a", "llm:b", "random"])
    only_b = figures.score_cost_figure([{"agent": "llm:b", "cost_per_attempt": 0.1,
                                         "score": 0.5}], colours)
    _, axes = drawn(only_b)
    assert to_hex(axes.collections[0].get_facecolor()[0]) == colours["llm:b"].lower()
    assert colours["llm:b"] != colours["human"] == figures.HUMAN_COLOUR


def test_action_types_wear_no_agent_s_colour():
    _, axes = drawn(CASES["action types"]())
    used = {to_hex(p.get_facecolor()) for p in axes.patches}
    assert used and not used & {c.lower() for c in (*figures.PALETTE, *figures.MORE_COLOURS)}


def test_intervals_are_drawn_with_caps():
    _, axes = drawn(figures.grouped_bars(SCORES, "challenge", "agent", "score", "t",
                                         errors=("ci_low", "ci_high")))
    caps = [line for container in axes.containers if hasattr(container, "errorbar")
            and container.errorbar is not None for line in container.errorbar.lines[1]]
    assert caps  # cap markers at both ends of each interval


def test_save_writes_png_svg_and_pdf(tmp_path):
    paths = figures.save(figures.task_type_figure(SCORES), tmp_path, "scores")
    assert [p.name for p in paths] == ["scores.png", "scores.svg", "scores.pdf"]
    assert paths[2].read_bytes().startswith(b"%PDF") and paths[0].stat().st_size > 1000


def test_the_memory_figure_draws_success_curves_with_their_auv():
    _, axes = drawn(CASES["memory"]())
    lines = axes.get_lines()
    assert [list(line.get_ydata()) for line in lines] == [[0.0, 0.5, 1.0], [0.0, 0.0, 0.5]]
    assert lines[0].get_color() == lines[1].get_color()  # one model: one colour
    assert lines[0].get_linestyle() != lines[1].get_linestyle()  # two settings
    labels = [t.get_text().replace("\n", " ") for t in axes.get_legend().get_texts()]
    assert labels == ["llm:m (planning), history full: AUV 0.50",
                      "llm:m (planning), history none: AUV 0.12"]


def test_a_figure_shows_only_what_there_is():
    """Agents that made no exploration action have no reset rate: the figure was an empty
    frame of axes from -0.04 to 0.04; agents that ask no model cost 0: the cost axis ran
    to -0.04."""
    rates = [{"env": e, "agent": a, "per_100_actions": None}
             for e in ("autumn/a", "autumn/b") for a in ("random", "planner")]
    assert figures.reset_figure(rates) is None
    assert figures.reset_figure([*rates[:3], {**rates[3], "per_100_actions": 2.0}]) is not None
    figure, axes = drawn(figures.score_cost_figure(
        [{"agent": "random", "cost_per_attempt": 0.0, "score": 0.2},
         {"agent": "planner", "cost_per_attempt": 0.0, "score": 1.0}]))
    assert axes.get_xlim()[0] == 0


def test_a_score_of_zero_is_drawn_on_an_axis_from_zero():
    """A task type nobody solved: its bar has no height, and the axis ran from -0.04 to
    0.04 around nothing to see; the axis now starts at 0 and the bar says 0."""
    figure, axes = drawn(figures.task_type_figure(
        [{"challenge": "planning", "agent": "human", "score": 0.0},
         {"challenge": "planning", "agent": "llm:m", "score": 0.0}]))
    assert axes.get_ylim() == (0, 1)
    assert [t.get_text() for t in axes.texts] == ["0", "0"]
    figure, axes = drawn(figures.task_type_figure(SCORES))
    assert axes.get_ylim()[0] == 0 and axes.get_ylim()[1] >= 0.9  # the intervals' tops
    assert all(t.get_text() == "" for t in axes.texts)
