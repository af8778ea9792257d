"""Every problem an example study serves can be played to its goal by a scripted player,
through the real episode and the real-time tick rule (one input a tick, the queue and
its limits): the study's problems and its practice ones, for every file in
``examples/``. A planning problem is played by its recorded plan after ``go-to-test``
(``tests/tasks/test_solvability.py`` checks that the goal also stays reachable for a
player who wanders first); a map by its own solution (the challenge's oracle)."""

from __future__ import annotations

from pathlib import Path

import pytest

from consent.definition import load_definition
from tasks import registry
from tasks.worldtest.challenge import get
from tasks.worldtest.episode import DONE, Episode
from tasks.worldtest.tick import TickEngine

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))


def served(path: Path) -> list[str]:
    definition = load_definition(path, {s.id for s in registry.list_problems()})
    return [*definition.problems, *definition.tutorials.values()]


CASES = [(path.name, problem_id) for path in EXAMPLES for problem_id in served(path)]


def script(problem_id: str) -> list[str]:
    problem = registry.get_problem(problem_id)
    if problem.challenge == "planning":
        return ["go-to-test", *problem.params["plan"]]
    return get(problem.challenge).oracle(problem, {})


@pytest.mark.parametrize(("study", "problem_id"), CASES, ids=[f"{s}:{p}" for s, p in CASES])
def test_a_scripted_player_reaches_the_goal(study, problem_id):
    engine = TickEngine(Episode(registry.get_problem(problem_id)))
    now = 0.0
    for action in script(problem_id):
        assert engine.admit(action, now=now) == "queued", action
        now += 0.5  # slower than the rate limit: every input is admitted
        engine.tick(now)
    assert engine.episode.phase == DONE and engine.episode.score == 1.0, (
        f"{problem_id} in {study}: ended {engine.episode.phase} with {engine.episode.score}")


def test_every_example_study_is_covered():
    assert {path.name for path in EXAMPLES} == {"demo-study.yaml", "explore-study.yaml"}
    assert len(CASES) >= 8
