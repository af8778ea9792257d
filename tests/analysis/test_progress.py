"""Progress rate (001 Eq. 2, both forms) and grounding accuracy (001 Sec. 5.3)."""

import pytest

from analysis.metrics import (
    grounding_accuracy,
    match_fraction,
    progress_curve,
    progress_rate,
    subgoal_fraction,
)
from records.models import Event
from tasks.worldtest import Problem

GOAL = {"goal_cells": [[0, 0], [1, 0], [1, 1]], "goal_colours": ["red", "red", "blue"]}


def frame(a, b, c, d):
    return [[a, b], [c, d]]


def test_match_fraction_counts_goal_cells_of_the_goal_colour():
    assert match_fraction(frame("red", "black", "black", "blue"), **GOAL) == pytest.approx(2 / 3)


def test_match_curve_is_a_running_maximum():
    frames = [
        frame("black", "black", "black", "black"),  # 0
        frame("red", "black", "black", "black"),  # 1/3
        frame("black", "black", "black", "black"),  # 0, but r stays 1/3
        frame("red", "red", "black", "blue"),  # 1
    ]
    assert progress_curve("planning", frames, GOAL) == pytest.approx([0, 1 / 3, 1 / 3, 1])
    assert progress_rate("planning", frames[:3], GOAL) == pytest.approx(1 / 3)


def test_a_planning_problems_params_are_its_goal():
    problem = Problem("p", "test/walker", "planning", 0, params={**GOAL, "horizon": 5})
    assert progress_rate("planning", [frame("red", "red", "red", "blue")], problem.params) == 1.0


def test_subgoal_curve_is_the_fraction_of_dag_nodes_achieved():
    nodes = ["key", "door", "chest", "goal"]
    achieved = [set(), {"key"}, {"key", "door"}, {"key", "door"}, set(nodes)]
    assert progress_curve("explore", achieved, nodes) == [0.0, 0.25, 0.5, 0.5, 1.0]
    assert subgoal_fraction({"key", "elsewhere"}, nodes) == 0.25


def test_no_state_has_no_progress_rate():
    assert progress_curve("explore", [], ["a"]) == []
    assert progress_rate("explore", [], ["a"]) is None


@pytest.mark.parametrize("challenge", ["mfp", "cd"])
def test_progress_rate_is_not_defined_for_one_answer_challenges(challenge):
    with pytest.raises(ValueError, match=f"not defined for '{challenge}' problems"):
        progress_rate(challenge, [frame("red", "red", "red", "blue")], GOAL)


@pytest.mark.parametrize(
    ("challenge", "goal", "message"),
    [
        ("chess", GOAL, "unknown challenge 'chess'"),
        ("planning", {"goal_cells": [[0, 0]]}, "goal_cells and goal_colours"),
        ("planning", {"goal_cells": [[0, 0]], "goal_colours": []}, "one colour per goal cell"),
        ("explore", [], "no nodes"),
    ],
)
def test_malformed_goals_are_refused(challenge, goal, message):
    with pytest.raises(ValueError, match=message):
        progress_curve(challenge, [frame("red", "red", "red", "blue")], goal)


def turn(valid, applied=True, phase="interaction"):
    return Event(episode_id=1, seq=0, problem_id="p", phase=phase, tick=0 if applied else None,
                 action="up" if valid else None, source="agent", applied=applied,
                 server_time=0.0, parse_valid=valid)


def test_grounding_accuracy_counts_parsed_and_available_replies():
    turns = [
        turn(True),
        turn(True, phase="test"),
        turn(False, applied=False),  # did not parse
        turn(True, applied=False),  # parsed, but not available at that step
        {"parse_valid": None, "action": "noop"},  # the clock's no-op: not a model turn
    ]
    assert grounding_accuracy(turns) == 0.5


def test_grounding_accuracy_without_model_turns_is_none():
    assert grounding_accuracy([]) is None
    assert grounding_accuracy([{"action": "up", "source": "input"}]) is None
