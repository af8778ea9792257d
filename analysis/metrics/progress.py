"""Progress rate and grounding accuracy (001 Sec. 3.3 Eq. 2, Sec. 5.3).

Success alone treats a near miss like doing nothing; the progress rate ``r_t`` is the
best matching score ``f(s_i, g)`` over the states ``s_0 .. s_t`` seen so far, so it
rises as an agent gets closer and never falls. Two forms; each challenge declares its
own (``Challenge.progress``):

* **subgoal** (task-DAG ``explore`` problems): ``f`` = fraction of the DAG's nodes
  achieved in the state;
* **match** (``planning``): ``f`` = fraction of the goal-masked cells whose colour
  equals the goal colour.

Masked frame prediction and change detection end in one answer, with no goal state to
come closer to, so the progress rate is not defined for them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from analysis.metrics.records import field
from tasks.core import region
from tasks.worldtest.challenge import MATCH, challenges, get


def subgoal_fraction(achieved: Collection[Any], nodes: Collection[Any]) -> float:
    """Fraction of the DAG ``nodes`` that are in ``achieved`` (the subgoal form's f).

    >>> subgoal_fraction({"key", "door"}, ["key", "door", "chest", "goal"])
    0.5
    """
    nodes = nodes if isinstance(nodes, (set, frozenset)) else set(nodes)
    if not nodes:
        raise ValueError("the task DAG has no nodes: the subgoal form needs at least one")
    return len(nodes.intersection(achieved)) / len(nodes)


def match_fraction(
    frame: Sequence[Sequence[str]],
    goal_cells: Sequence[Sequence[int]],
    goal_colours: Sequence[str],
) -> float:
    """Fraction of ``goal_cells`` (``[x, y]``) whose colour in ``frame`` is the goal's.

    >>> match_fraction([["red", "black"]], [[0, 0], [1, 0]], ["red", "red"])
    0.5
    """
    cells = _goal_cells(goal_cells, goal_colours)
    seen = region(frame, cells)
    return sum(a == b for a, b in zip(seen, goal_colours)) / len(goal_colours)


def _goal_cells(goal_cells: Sequence[Sequence[int]], goal_colours: Sequence[str]) -> list[tuple]:
    if not goal_cells or len(goal_cells) != len(goal_colours):
        raise ValueError(
            f"the goal needs one colour per goal cell and at least one cell; got "
            f"{len(goal_cells)} cells and {len(goal_colours)} colours"
        )
    return [tuple(cell) for cell in goal_cells]


def _form(challenge: str) -> str:
    """The form the challenge declares (``Challenge.progress``)."""
    form = get(challenge).progress
    if form is None:
        defined = ", ".join(f"{name} ({c.progress} form)" for name, c in challenges().items() if c.progress)
        raise ValueError(
            f"the progress rate is not defined for {challenge!r} problems: they end in "
            f"one answer with no goal state to approach (001 Sec. 3.3); it is defined for {defined}"
        )
    return form


def progress_curve(challenge: str, states: Iterable[Any], goal: Any) -> list[float]:
    """``[r_0, ..., r_T]``: the running maximum of the matching score over ``states``.

    * ``challenge="planning"``: ``states`` are the test-phase frames from the initial
      one on; ``goal`` is a mapping with ``goal_cells`` and ``goal_colours`` (a planning
      problem's ``params`` will do).
    * ``challenge="explore"``: ``states`` are, per state, the collection of DAG node ids
      achieved so far; ``goal`` is the collection of all the DAG's node ids.

    >>> progress_curve("explore", [set(), {"a"}, set(), {"a", "b"}], ["a", "b"])
    [0.0, 0.5, 0.5, 1.0]
    """
    if _form(challenge) == MATCH:
        if not isinstance(goal, Mapping) or not {"goal_cells", "goal_colours"} <= set(goal):
            raise ValueError("a planning goal is a mapping with goal_cells and goal_colours")
        colours = list(goal["goal_colours"])
        cells = _goal_cells(goal["goal_cells"], colours)
        scored: dict[int, tuple[Any, float]] = {}  # by frame object: a stored frame repeats
        scores = []
        for frame in states:
            found = scored.get(id(frame))
            if found is None:  # the frame is kept with its score, so its id is not reused
                seen = region(frame, cells)
                found = scored[id(frame)] = (frame, sum(a == b for a, b in zip(seen, colours))
                                             / len(colours))
            scores.append(found[1])
    else:
        nodes = set(goal)
        scores = [subgoal_fraction(achieved, nodes) for achieved in states]
    return np.maximum.accumulate(scores).tolist() if scores else []


def progress_rate(challenge: str, states: Iterable[Any], goal: Any) -> float | None:
    """The episode's progress rate: the last ``r_t`` of :func:`progress_curve`, or
    ``None`` when there is no state at all."""
    curve = progress_curve(challenge, states, goal)
    return curve[-1] if curve else None


def grounding_accuracy(turns: Iterable[Any]) -> float | None:
    """Share of model turns whose reply parsed to an action available at that step.

    ``turns`` are event records (mappings or objects). A record is a model turn when
    its ``parse_valid`` is set (people's inputs and the clock's no-ops leave it null);
    the turn is grounded when ``parse_valid`` is true and the action was applied
    (``applied`` not false: an unavailable action is refused and not applied).
    ``None`` when there is no model turn.

    >>> grounding_accuracy([{"parse_valid": True}, {"parse_valid": False},
    ...                     {"parse_valid": True, "applied": False},
    ...                     {"parse_valid": None}])
    0.3333333333333333
    """
    model_turns, grounded = grounding_counts(turns)
    return grounded / model_turns if model_turns else None


def grounding_counts(turns: Iterable[Any]) -> tuple[int, int]:
    """``(model turns, grounded turns)`` among ``turns`` (see :func:`grounding_accuracy`);
    events held as columns are read by column."""
    column = getattr(turns, "column", None)
    if column is not None:
        pairs: Iterable[tuple[Any, Any]] = zip(column("parse_valid"), column("applied"))
    else:
        pairs = ((field(t, "parse_valid"), field(t, "applied", True)) for t in turns)
    model_turns = grounded = 0
    for valid, applied in pairs:
        if valid is None:
            continue
        model_turns += 1
        grounded += bool(valid) and applied is not False
    return model_turns, grounded
