"""Fixtures for the ``tasks`` tests: the small environments of ``tests/envs.py`` made
without the registry, and registry entries that are forgotten after each test."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import pytest

from tasks import registry
from tasks.worldtest.problem import Problem
from tests.envs import Stuck, Walker, make_test_env, over_budget_env

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


STUCK_LIMIT = 0.2
"""The time limit the stuck walker is registered with (seconds)."""


def _problem(name: str) -> Problem:
    return Problem(f"test/tick-{name}-planning", f"test/tick-{name}", "planning", 0,
                   params={"goal_cells": [[4, 4]], "goal_colours": ["gold"]})


BROKEN, STUCK, OVER = _problem("broken"), _problem("stuck"), _problem("over-budget")


@pytest.fixture
def problems(test_problems):
    """The walker problems (challenge -> Problem) and planning problems on a walker whose
    clicks raise (``"broken"``), one whose ``left`` never returns (``"stuck"``, time limit
    :data:`STUCK_LIMIT`) and an Autumn program whose ``left`` is over its step budget
    (``"over-budget"``), for the tests that drive every driver the same way."""
    registry.register_env("test/tick-broken", Broken, replace=True)
    registry.register_env("test/tick-stuck", Stuck, replace=True, step_time_limit=STUCK_LIMIT)
    registry.register_env("test/tick-over-budget", over_budget_env, replace=True)
    extra = {"broken": BROKEN, "stuck": STUCK, "over-budget": OVER}
    for problem in extra.values():
        registry.add_problem(problem, replace=True)
    yield {**test_problems, **extra}
    for problem in extra.values():
        registry.unregister(env_id=problem.env_id, problem_id=problem.id)
