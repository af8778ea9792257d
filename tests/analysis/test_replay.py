"""analysis.replay: an attempt rebuilt from its record, with the hidden state it omits."""

from __future__ import annotations

import pytest

from analysis import tables
from analysis.load import load
from analysis.metrics import pooled_loop_ratio
from analysis.replay import replay
from records.store import Store
from tasks import registry
from tasks.worldtest import Problem
from tests.analysis.report_study import play
from tests.envs import Walker, register_test_envs


class Tally(Walker):
    """A Walker that counts its first two no-ops in a tally nothing on screen shows."""

    def snapshot(self) -> tuple:
        return (*super().snapshot(), self.tally)

    def _reset_extra(self, seed: int) -> None:
        self.tally = 0

    def _step_extra(self, action) -> None:
        if action.verb == "noop":
            self.tally = min(self.tally + 1, 2)


HIDDEN = Problem(id="test/replay-hidden", env_id="test/tally", challenge="planning",
                 seed=0, params={"goal_cells": [[4, 4]], "goal_colours": ["red"], "horizon": 20})
PLAYED = ["right", "go-to-test", "noop", "noop", "noop", "noop", "noop"]
"""Five test-phase no-ops: one frame throughout, while the tally goes 1, 2, 2, 2, 2."""


@pytest.fixture
def dataset(tmp_path):
    register_test_envs()
    registry.register_env("test/tally", Tally, replace=True, tags=("test",))
    registry.add_problem(HIDDEN, replace=True)
    url = f"sqlite:///{tmp_path / 'replay.db'}"
    with Store(url) as store:
        play(store, HIDDEN, PLAYED, source="agent")
        store.flush()
    yield load(url)
    registry.unregister(env_id="test/tally", problem_id=HIDDEN.id)


def test_replay_reads_hidden_state_that_frames_do_not_show(dataset):
    record = dataset.records[0]
    replayed = replay(record)
    assert [s.action for s in replayed.steps] == ["noop"] * 5
    frames = [e.frame_hash for e in record.events if e.phase == "test"]
    assert len(set(frames)) == 1
    states = replayed.states
    assert states[0] != states[1] and len(set(states[1:])) == 1  # tally 1, then 2, 2, 2, 2
    assert replayed.start.frame == record.frame(record.events[1])  # what go-to-test showed


def test_loop_ratio_reads_states_not_frames(dataset):
    # by frames, four repeats of one state: 3 of 4 steps loop; by states, the step from
    # tally 1 to 2 is not a cycle, 2 -> 2 is the first cycle, then two loops: 2 of 4
    row = tables.auv_rows(dataset, t_max=3)[0]
    assert row["loop_ratio"] == 0.5
    assert pooled_loop_ratio([["f"] * 5]) == 0.75


def test_an_unregistered_problem_is_not_replayed_and_loops_read_frames(dataset):
    registry.unregister(problem_id=HIDDEN.id)
    record = dataset.records[0]
    assert replay(record) is None
    frames = [e.frame_hash for e in record.events if e.phase == "test"]
    assert tables.auv_rows(dataset, t_max=3)[0]["loop_ratio"] == pooled_loop_ratio([frames])
    registry.add_problem(HIDDEN, replace=True)  # for the fixture's teardown
