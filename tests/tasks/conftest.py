"""Fixtures for the ``tasks`` tests: the small environments of ``tests/envs.py`` made
without the registry, and registry entries that are forgotten after each test."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import pytest

from tasks import registry
from tests.envs import make_test_env

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
