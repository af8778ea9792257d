"""Registering, making and listing environments and problems (``tasks.registry``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tasks import registry
from tasks.worldtest.problem import Problem
from tests.envs import Rain, Walker


def test_register_then_make_a_fresh_instance(scratch_ids: Callable[[str], str]) -> None:
    env_id = scratch_ids("walker")
    spec = registry.register_env(env_id, Walker, description="a walker", tags=("test",), width=7)
    assert spec == registry.env_spec(env_id)
    first, second = registry.make(env_id), registry.make(env_id)
    assert isinstance(first, Walker) and first is not second
    assert first.size == (7, 5)


def test_make_overrides_the_registered_kwargs(scratch_ids: Callable[[str], str]) -> None:
    env_id = scratch_ids("walker")
    registry.register_env(env_id, Walker, width=7, height=6)
    assert registry.make(env_id, height=3).size == (7, 3)


def test_entry_points_are_loaded_lazily_from_text(scratch_ids: Callable[[str], str]) -> None:
    env_id = scratch_ids("rain")
    registry.register_env(env_id, "tests.envs:Rain", changed=True)
    env = registry.make(env_id)
    assert isinstance(env, Rain) and env.changed


@pytest.mark.parametrize(
    ("entry_point", "error", "message"),
    [
        ("tests.envs", ValueError, "entry point 'tests.envs' must look like 'package.module:Name'"),
        ("tests.no_such_module:X", ModuleNotFoundError, "tests.no_such_module"),
        ("tests.envs:NoSuchClass", AttributeError, "NoSuchClass"),
    ],
)
def test_a_bad_entry_point_fails_when_made(
    scratch_ids: Callable[[str], str], entry_point: str, error: type, message: str
) -> None:
    env_id = scratch_ids("broken")
    registry.register_env(env_id, entry_point)
    with pytest.raises(error, match=message):
        registry.make(env_id)


def test_a_second_registration_is_an_error_unless_replacing(scratch_ids: Callable[[str], str]) -> None:
    env_id = scratch_ids("walker")
    registry.register_env(env_id, Walker)
    with pytest.raises(ValueError, match=f"environment '{env_id}' is already registered"):
        registry.register_env(env_id, Rain)
    registry.register_env(env_id, Rain, replace=True)
    assert isinstance(registry.make(env_id), Rain)


def test_unknown_environment_lists_known_ids(scratch_ids: Callable[[str], str]) -> None:
    env_id = scratch_ids("walker")
    registry.register_env(env_id, Walker)
    with pytest.raises(KeyError) as error:
        registry.make("no/such-env")
    message = error.value.args[0]
    assert message.startswith("unknown environment 'no/such-env'; known: ")
    known = sorted(spec.id for spec in registry.list_envs())
    assert message.split("known: ")[1].removesuffix(" ...").split(", ") == known[:20]
    assert message.endswith(" ...") == (len(known) > 20)


def test_list_envs_is_sorted_and_includes_new_ones(scratch_ids: Callable[[str], str]) -> None:
    first, second = scratch_ids("b"), scratch_ids("a")
    registry.register_env(first, Walker)
    registry.register_env(second, Walker)
    ids = [spec.id for spec in registry.list_envs()]
    assert ids == sorted(ids)
    assert first in ids and second in ids
    registry.unregister(env_id=first)
    assert first not in [spec.id for spec in registry.list_envs()]


def test_problems_are_built_once_on_first_use(scratch_ids: Callable[[str], str]) -> None:
    problem_id, env_id = scratch_ids("problem"), scratch_ids("walker")
    calls = []

    def load() -> Problem:
        calls.append(1)
        return Problem(problem_id, env_id, "planning", 3,
                       {"goal_cells": [[1, 0]], "goal_colours": ["gold"]})

    spec = registry.register_problem(problem_id, load, env_id=env_id, challenge="planning")
    assert calls == []
    assert registry.problem_spec(problem_id) == spec
    assert registry.get_problem(problem_id) is registry.get_problem(problem_id)
    assert calls == [1]


def test_re_registering_a_problem_forgets_the_cached_one(scratch_ids: Callable[[str], str]) -> None:
    problem_id = scratch_ids("problem")
    old = Problem(problem_id, "test/walker", "cd", 1, {"changed_env_id": "x"})
    new = Problem(problem_id, "test/walker", "cd", 2, {"changed_env_id": "x"})
    registry.add_problem(old)
    assert registry.get_problem(problem_id).seed == 1
    with pytest.raises(ValueError, match=f"problem '{problem_id}' is already registered"):
        registry.add_problem(new)
    registry.add_problem(new, replace=True)
    assert registry.get_problem(problem_id).seed == 2


def test_list_problems_filters_by_challenge_and_environment(scratch_ids: Callable[[str], str]) -> None:
    env_id = scratch_ids("walker")
    a, b = scratch_ids("p"), scratch_ids("p")
    registry.add_problem(Problem(a, env_id, "cd", 0, {"changed_env_id": "x"}))
    registry.add_problem(Problem(b, env_id, "planning", 0, {}))
    assert [s.id for s in registry.list_problems(env_id=env_id)] == sorted([a, b])
    assert [s.id for s in registry.list_problems(challenge="cd", env_id=env_id)] == [a]
    assert [s.id for s in registry.list_problems(challenge="mfp", env_id=env_id)] == []
    ids = [s.id for s in registry.list_problems()]
    assert ids == sorted(ids) and a in ids


def test_unknown_problem_names_the_id() -> None:
    for lookup in (registry.get_problem, registry.problem_spec):
        with pytest.raises(KeyError) as error:
            lookup("no/such-problem")
        assert error.value.args[0].startswith("unknown problem 'no/such-problem'; known: ")
