"""The environment contract checker (``tasks.checker``) accepts the test environments and
names each way a broken environment breaks the contract."""

from __future__ import annotations

import random

import pytest

from tasks.checker import ContractError, check_env, contract_violations, random_actions
from tasks.core import Observation
from tests.envs import Rain, Walker


@pytest.mark.parametrize("env", [Walker(), Walker(changed=True), Rain(), Rain(skewed=True)])
def test_the_test_environments_keep_the_contract(env: Walker) -> None:
    assert contract_violations(env, seed=4, steps=120) == []
    check_env(env, seed=4, steps=120)


def test_random_actions_are_reproducible_and_inside_the_grid() -> None:
    env = Walker(width=3, height=2)
    actions = random_actions(env, 300, rng_seed=5)
    assert actions == random_actions(env, 300, rng_seed=5)
    assert {a.verb for a in actions} == {"noop", "up", "down", "left", "right", "click"}
    clicks = [(a.x, a.y) for a in actions if a.verb == "click"]
    assert all(0 <= x < 3 and 0 <= y < 2 for x, y in clicks)


class Rate(Walker):
    def __init__(self, rate: object) -> None:
        super().__init__()
        self.frame_rate = rate


@pytest.mark.parametrize("rate", [2, 9, 5.0, True, None])
def test_frame_rate_must_be_an_int_in_3_to_8(rate: object) -> None:
    assert contract_violations(Rate(rate)) == [
        f"frame_rate must be an int in 3..8 frames per second, not {rate!r}"]


class Sized(Walker):
    size = [5, 5]

    def __init__(self) -> None:
        super().__init__()
        self.size = [5, 5]


class Verbs(Walker):
    def available_actions(self) -> tuple[str, ...]:
        return ("up", "jump", "reset")


def test_size_and_verbs_are_checked_first() -> None:
    assert contract_violations(Sized()) == [
        "size must be a tuple (width, height) of positive ints, not [5, 5]"]
    assert contract_violations(Verbs()) == [
        "available_actions() must be a non-empty subset of noop, up, down, left, right, click; "
        "got ['up', 'jump', 'reset']"]


class HexColours(Walker):
    def render(self) -> list[list[str]]:
        frame = super().render()
        frame[4][4] = "#ff0000"
        return frame


class Ragged(Walker):
    def render(self) -> list[list[str]]:
        return super().render()[:4]


class TupleFrame(Walker):
    def _observe(self) -> Observation:
        observation = super()._observe()
        observation.frame = tuple(tuple(row) for row in observation.frame)
        observation.done = 0
        return observation


class NoObservation(Walker):
    def step(self, action):
        return super().step(action).frame


@pytest.mark.parametrize(
    ("env", "violations"),
    [
        (HexColours(), ["reset: cells must hold CSS colour names; found #ff0000"]),
        (Ragged(), ["reset: the frame must be a list of 5 lists of 5 cells"]),
        (TupleFrame(), ["reset: the frame must be a list of 5 lists of 5 cells",
                        "reset: done must be a bool"]),
        (NoObservation(), ["step(left): returned list, expected an Observation"]),
    ],
)
def test_observations_are_checked(env: Walker, violations: list[str]) -> None:
    assert contract_violations(env, seed=0, steps=30) == violations


class Unseeded(Walker):
    """Draws from a generator that reset does not seed: not deterministic."""

    def __init__(self) -> None:
        super().__init__()
        self.rng = random.Random(99)

    def _step_extra(self, action) -> None:
        if self.rng.random() < 0.2:
            self.painted[(4, 4)] = "red"


def test_nondeterminism_is_found_and_located() -> None:
    violations = contract_violations(Unseeded(), seed=0, steps=50, rng_seed=0)
    assert len(violations) == 1
    assert violations[0].startswith("not deterministic: with seed 0 the frame after action ")


class LeakyReset(Walker):
    """Keeps the painted cells across a reset."""

    def reset(self, seed: int) -> Observation:
        painted = dict(self.painted)
        observation = super().reset(seed)
        self.painted = painted
        return self._observe() if painted else observation


def test_a_reset_that_keeps_state_is_not_deterministic() -> None:
    assert contract_violations(LeakyReset(), steps=50)[0].startswith("not deterministic")


class ShallowSnapshot(Walker):
    """Its snapshot forgets the painted cells."""

    def restore(self, snapshot: tuple) -> None:
        self.position, self.triggered = snapshot[0], snapshot[2]


class BadHash(Walker):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def state_hash(self) -> str:
        self.calls += 1
        return str(self.calls)


def test_the_optional_hooks_are_checked() -> None:
    assert contract_violations(ShallowSnapshot(), steps=200) == [
        "restore(snapshot()) does not return to the same state: the next frames differ"]
    assert contract_violations(BadHash(), steps=20) == [
        "state_hash() differs for the same seed and actions"]


def test_check_env_raises_with_every_violation() -> None:
    with pytest.raises(ContractError) as error:
        check_env(Rate(12), seed=0, steps=10)
    assert str(error.value) == ("Rate breaks the environment contract:\n"
                                "- frame_rate must be an int in 3..8 frames per second, not 12")
    assert isinstance(error.value, ValueError)


@pytest.mark.parametrize(("env", "reason"), [
    (HexColours, "reset: cells must hold CSS colour names; found #ff0000"),
    (Unseeded, "not deterministic: with seed 1 the frame after action "),
    (lambda: Rate(12), "frame_rate must be an int in 3..8 frames per second, not 12"),
], ids=["colours", "nondeterministic", "frame-rate"])
def test_a_python_environment_that_breaks_the_contract_never_reaches_a_participant(
        tmp_path, env, reason: str) -> None:
    """``study create`` refuses a study of it and ``problems check`` calls its problem
    invalid, as for a program that fails its checks. Before, only programs were checked:
    a Python environment that drew cells no browser can draw, or whose frames a replay
    could not reproduce, was played by participants."""
    from tasks import registry
    from tasks.worldtest.check import check_problem
    from tests.consent.helpers import study_refusal, walker_problem

    registry.register_env("test/breaking", env, replace=True, tags=("test",))
    problem = walker_problem("test/breaking/planning")
    registry.add_problem(type(problem)(problem.id, "test/breaking", problem.challenge,
                                       problem.seed, problem.params), replace=True)
    try:
        refused = study_refusal(tmp_path, "test/breaking/planning")
        report = check_problem(registry.get_problem("test/breaking/planning"), samples=2)
    finally:
        registry.unregister(env_id="test/breaking", problem_id="test/breaking/planning")
    assert "test/breaking/planning: its environment has errors" in refused
    assert f"contract check: test/breaking: {reason}" in refused
    assert not report.valid and report.reasons[0].startswith(f"contract check: test/breaking: {reason}")
