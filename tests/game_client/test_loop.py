"""The local game loop keeps the real-time server's rules: one input per tick, noop
otherwise, a short queue, rejected inputs logged."""

from __future__ import annotations

from game_client.loop import GameLoop
from game_client.sandbox import Sandbox
from study_server.realtime import GameSession
from tasks.worldtest.episode import Episode
from tests.game_client.conftest import CD, MFP


class Log:
    """A recorder that keeps what it is told (the loop's reporting, not our store)."""

    def __init__(self) -> None:
        self.steps, self.raw, self.finished = [], [], []

    def on_step(self, step, *, source, client_time):
        self.steps.append((step.index, step.action, source))

    def on_raw(self, text, *, status, reason, client_time):
        self.raw.append((text, status))

    def on_finish(self, driver):
        self.finished.append(driver.phase)


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
    assert loop.enqueue("step") is True  # not allowed in the interaction phase
    assert loop.enqueue("left") is True
    assert loop.enqueue("up") is False
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
    assert loop.done and loop.tick() is None and loop.enqueue("noop") is False
    loop.close()
    assert log.finished == ["done"]
    assert loop.driver.score == 1.0
    assert loop.status_line() == "done | tick 3 | last submit | 8 fps | score 1.000"


def test_the_same_inputs_give_the_same_events_as_the_server_session():
    inputs = {0: ["right"], 1: ["right", "right"], 3: ["go-to-test"], 4: ["bogus"],
              5: ["right", "up", "right"], 9: ["found-change"], 10: ["choose_frame_2"],
              11: ["submit"]}
    session = GameSession.create(CD)
    log = Log()
    loop = GameLoop(Episode(CD), recorder=log)
    server = []
    for tick in range(13):
        for text in inputs.get(tick, []):
            session.enqueue_action(text)
            loop.enqueue(text)
        if not session.episode.done:
            event = session.tick().event
            server.append((event["tick"], event["action"], event["source"]))
        loop.tick()
    assert log.steps == server
    assert loop.driver.score == session.episode.score


def test_a_sandbox_plays_an_environment_with_reset_and_quit():
    loop = GameLoop(Sandbox("test/rain", seed=3))
    for action in ["right", "reset", "quit"]:
        loop.enqueue(action)
        loop.tick()
    assert [s.action for s in loop.steps] == ["right", "reset", "quit"]
    assert loop.done and loop.driver.view()["problem_id"] == "test/rain"
