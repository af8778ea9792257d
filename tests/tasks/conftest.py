"""Fixtures for the ``tasks`` tests: the small environments of ``tests/envs.py`` made
without the registry, and registry entries that are forgotten after each test."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import pytest

from tasks import registry
from tasks.worldtest.problem import Problem
from tests.envs import Walker, make_test_env

_ids = itertools.count()


@pytest.fixture
def make_env() -> Callable[[str], object]:
    """The factory episodes, derivations and checks are given instead of the registry."""
    return make_test_env


@pytest.fixture
def scratch_ids() -> Iterator[Callable[[str], str]]:
    """Unique registry ids for one test; every environment and problem registered under
    them is unregistered afterwards."""
    made: list[str] = []

    def new_id(prefix: str) -> str:
        made.append(f"scratch/{prefix}-{next(_ids)}")
        return made[-1]

    yield new_id
    for name in made:
        registry.unregister(env_id=name, problem_id=name)


class Broken(Walker):
    """A walker whose clicks raise, as an Autumn runtime error would."""

    def step(self, action):
        if str(action).startswith("click"):
            raise RuntimeError("division by zero in on-click")
        return super().step(action)


BROKEN = Problem("test/tick-broken-planning", "test/tick-broken", "planning", 0,
                 params={"goal_cells": [[4, 4]], "goal_colours": ["gold"]})


@pytest.fixture
def problems(test_problems):
    """The walker problems (challenge -> Problem) and a planning problem on a walker whose
    clicks raise (``"broken"``), for the tests that drive every driver the same way."""
    registry.register_env("test/tick-broken", Broken, replace=True)
    registry.add_problem(BROKEN, replace=True)
    yield {**test_problems, "broken": BROKEN}
    registry.unregister(env_id="test/tick-broken", problem_id=BROKEN.id)
