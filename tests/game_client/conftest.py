"""Problems of every challenge on the test Walker, a store on a temporary file."""

from __future__ import annotations

import pytest

from records.store import Store
from tasks import registry
from tasks.worldtest.problem import Problem
from tests.envs import register_test_envs

MFP = Problem(
    "test/walker-mfp", "test/walker", "mfp", 0,
    params={
        "actions": ["right", "right", "down"], "mask": [[2, 1]], "masked_from": 3,
        "options": [["black"], ["gold"], ["blue"], ["red"], ["grey"], ["white"]], "answer": 1,
    },
)
PLANNING = Problem(
    "test/walker-planning", "test/walker", "planning", 0,
    params={"goal_cells": [[2, 1]], "goal_colours": ["gold"], "horizon": 20},
)
CD = Problem(
    "test/walker-cd", "test/walker", "cd", 0,
    params={"changed_env_id": "test/walker-changed", "horizon": 12},
)
PROBLEMS = {"mfp": MFP, "planning": PLANNING, "cd": CD}


@pytest.fixture(autouse=True)
def test_envs() -> None:
    register_test_envs()


@pytest.fixture
def store(tmp_path):
    with Store(str(tmp_path / "gridstudy.db"), flush_interval=0.01) as store:
        yield store


@pytest.fixture
def registered():
    """The problems above in the registry (a batch finds its problems there)."""
    for problem in PROBLEMS.values():
        registry.add_problem(problem, replace=True)
    yield
    for problem in PROBLEMS.values():
        registry.unregister(problem_id=problem.id)
