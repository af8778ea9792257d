"""The local game loop: what it adds to the tick engine for developers (pause, single
frames, the frame rate, the status line). tests/tasks/test_tick.py drives the rules it
shares with the server's sessions through both."""

from __future__ import annotations

from game_client.loop import GameLoop
from game_client.sandbox import Sandbox
from tasks.worldtest.episode import Episode
from tests.game_client.conftest import MFP


class Log:
    """A sink that keeps what it is told (the engine's reports, not our store)."""

    def __init__(self) -> None:
        self.steps, self.raw, self.ends = [], [], []

    def applied(self, step, *, source, **fields):
        self.steps.append((step.index, step.action, source))

    def acknowledged(self, text, *, input_seq, received_at, client_time):
        pass

    def refused(self, text, *, status, reason, received_at, client_time, input_seq=None):
        self.raw.append((text, status))

    def finished(self, episode, *, status, info):
        self.ends.append((episode.phase, status))


def test_idle_ticks_are_auto_noops_and_inputs_apply_one_per_tick():
    log = Log()
    loop = GameLoop(Episode(MFP), recorder=log)
    loop.tick()
    loop.enqueue("right")
    loop.enqueue("down")
    loop.tick()
    loop.tick()
    loop.tick()
    assert log.steps == [(0, "noop", "auto"), (1, "right", "input"), (2, "down", "input"),
                         (3, "noop", "auto")]
    assert loop.driver.observation.frame[1][1] == "gold"


def test_a_full_queue_drops_and_a_disallowed_input_is_rejected_then_skipped():
    log = Log()
    loop = GameLoop(Episode(MFP), recorder=log, queue_size=2)
    assert loop.enqueue("step") == "queued"  # not allowed in the interaction phase
    assert loop.enqueue("left") == "queued"
    assert loop.enqueue("up") == "dropped"
    loop.tick()
    assert log.raw == [("up", "dropped"), ("step", "rejected")]
    assert log.steps == [(0, "left", "input")]


def test_pause_stops_ticks_and_frame_steps_one():
    loop = GameLoop(Episode(MFP))
    loop.toggle_pause()
    loop.enqueue("right")
    assert loop.tick() is None
    step = loop.step_frame()
    assert (step.index, step.action) == (0, "right")
    assert "PAUSED" in loop.status_line()
    assert loop.change_fps(+100) == 60 and loop.change_fps(-100) == 1


def test_finishing_reports_once_and_stops_ticking():
    log = Log()
    loop = GameLoop(Episode(MFP), recorder=log)
    for action in ["go-to-test", "choose_option_1", "submit"]:
        loop.enqueue(action)
        loop.tick()
    assert loop.done and loop.tick() is None and loop.enqueue("noop") == "rejected"
    loop.close()
    assert log.ends == [("done", "done")]
    assert loop.driver.score == 1.0
    assert loop.status_line() == "done | tick 3 | last submit | 8 fps | score 1.000"


def test_closing_an_unfinished_run_reports_it_abandoned():
    log = Log()
    loop = GameLoop(Episode(MFP), recorder=log)
    loop.tick()
    loop.close()
    assert log.ends == [("interaction", "abandoned")]


def test_a_sandbox_plays_an_environment_with_reset_and_quit():
    loop = GameLoop(Sandbox("test/rain", seed=3))
    for action in ["right", "reset", "quit"]:
        loop.enqueue(action)
        loop.tick()
    assert [s.action for s in loop.steps] == ["right", "reset", "quit"]
    assert loop.done and loop.driver.view()["problem_id"] == "test/rain"
