"""Every registered environment keeps the contract, and every registered problem is valid.

The lists are read from the registry when the tests are collected, so environments and
problems added to the library (Autumn programs, task-DAG maps) are tested with no change
here; each is its own test case. The test environments of ``tests/envs.py`` are included
through their own factory.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tasks import registry
from tasks.checker import check_env, random_actions
from tasks.core import frame_hash, rollout
from tasks.worldtest.check import check_problem
from tests.envs import TEST_ENVS, make_test_env

SEEDS = (0, 1, 2)
STEPS = 200
PROBLEM_SAMPLES = 4

FACTORIES: dict[str, Callable] = {
    **{spec.id: spec.make for spec in registry.list_envs()},
    **{env_id: (lambda env_id=env_id: make_test_env(env_id)) for env_id in TEST_ENVS},
}
PROBLEM_IDS = [spec.id for spec in registry.list_problems()]


@pytest.mark.parametrize("env_id", sorted(FACTORIES))
@pytest.mark.parametrize("seed", SEEDS)
def test_environment_keeps_the_contract(env_id: str, seed: int) -> None:
    check_env(FACTORIES[env_id](), seed=seed, steps=STEPS, rng_seed=seed)


@pytest.mark.parametrize("env_id", sorted(FACTORIES))
def test_two_instances_give_the_same_frames(env_id: str) -> None:
    """No state shared between instances (class attributes, module globals)."""
    first, second = FACTORIES[env_id](), FACTORIES[env_id]()
    actions = random_actions(first, STEPS // 4, rng_seed=7)
    frames = [frame_hash(o.frame) for o in _play(first, actions)]
    assert [frame_hash(o.frame) for o in _play(second, actions)] == frames


def _play(env, actions):
    """A rollout that stops where the environment ends (a map's budget)."""
    observations = rollout(env, 3, [])
    for action in actions:
        if observations[-1].done:
            break
        observations.append(env.step(action))
    return observations


@pytest.mark.parametrize("problem_id", PROBLEM_IDS)
def test_registered_problem_is_valid(problem_id: str) -> None:
    report = check_problem(registry.get_problem(problem_id), samples=PROBLEM_SAMPLES)
    assert report.reasons == []
    assert report.valid


def test_the_loops_are_not_empty() -> None:
    assert set(TEST_ENVS) <= set(FACTORIES)
