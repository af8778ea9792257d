"""The game session alone (no sockets) and the one scheduler, on a real store."""

from __future__ import annotations

import threading
import time

import pytest
from sqlmodel import select

from study_server.models import EpisodeRow, Event, RawInput
from study_server.realtime import GameSession, Scheduler, next_deadline
from study_server.store import Store
from tasks import registry
from tasks.worldtest.problem import Problem
from tests.envs import Walker


class Broken(Walker):
    """A walker whose clicks raise, as an Autumn runtime error would."""

    def step(self, action):
        if str(action).startswith("click"):
            raise RuntimeError("division by zero in on-click")
        return super().step(action)


class SlowWalker(Walker):
    frame_rate = 4


@pytest.fixture
def store(tmp_path):
    with Store(str(tmp_path / "rt.db"), flush_interval=0.01) as store:
        yield store


@pytest.fixture
def problems(test_problems):
    registry.register_env("test/rt-broken", Broken, replace=True)
    registry.register_env("test/rt-slow", SlowWalker, replace=True)
    extra = {
        "broken": Problem("test/rt-broken-planning", "test/rt-broken", "planning", 0,
                          params={"goal_cells": [[4, 4]], "goal_colours": ["gold"]}),
        "slow": Problem("test/rt-slow-planning", "test/rt-slow", "planning", 0,
                        params={"goal_cells": [[4, 4]], "goal_colours": ["gold"]}),
    }
    yield {**test_problems, **extra}
    registry.unregister(env_id="test/rt-broken")
    registry.unregister(env_id="test/rt-slow")


def rows(store, model, order):
    store.flush(timeout=10)
    with store.session() as session:
        return list(session.exec(select(model).order_by(order)))


def test_idle_ticks_are_automatic_noops_and_an_input_is_applied_on_the_next(store, problems):
    session = GameSession.create(problems["mfp"], store)
    session.tick(lateness=0.002)
    assert session.enqueue_action("Right", client_time=None) == "queued"
    session.tick(lateness=0.001)
    session.tick()
    events = rows(store, Event, Event.seq)
    assert [(e.seq, e.tick, e.action, e.source, e.applied) for e in events] == [
        (0, 0, "noop", "auto", True), (1, 1, "right", "input", True),
        (2, 2, "noop", "auto", True),
    ]
    assert [e.latency for e in events] == [0.002, 0.001, 0.0]
    assert session.get_state()["frame"][0] == ["black", "gold", "black", "black", "black"]


def test_inputs_apply_one_per_tick_in_order_and_a_full_queue_drops(store, problems):
    session = GameSession.create(problems["mfp"], store, queue_size=4)
    statuses = [session.enqueue_action(a) for a in ("right", "down", "left", "up", "right")]
    assert statuses == ["queued"] * 4 + ["dropped"]
    for _ in range(5):
        session.tick()
    assert [e.action for e in rows(store, Event, Event.seq)] == [
        "right", "down", "left", "up", "noop"]
    dropped = rows(store, RawInput, RawInput.id)
    assert [(r.text, r.status, r.episode_id) for r in dropped] == [
        ("right", "dropped", session.episode_id)]


@pytest.mark.parametrize(("text", "status", "reason"), [
    ("jump", "malformed", "unknown action 'jump'"),
    ("click 5 0", "rejected", "click 5 0 is outside the grid"),
    ("click 2", "malformed", "malformed click 'click 2'"),
])
def test_bad_inputs_are_refused_and_logged(store, problems, text, status, reason):
    session = GameSession.create(problems["mfp"], store)
    assert session.enqueue_action(text, now=50.0) == status
    [raw] = rows(store, RawInput, RawInput.id)
    assert (raw.text, raw.status, raw.received_at) == (text, status, 50.0)
    assert raw.reason.startswith(reason)


def test_an_action_not_allowed_when_its_tick_comes_is_rejected_and_noop_applied(store, problems):
    session = GameSession.create(problems["mfp"], store)
    session.enqueue_action("step")
    tick = session.tick()
    assert (tick.event["action"], tick.event["source"]) == ("noop", "auto")
    [raw] = rows(store, RawInput, RawInput.id)
    assert (raw.text, raw.status) == ("step", "rejected")
    assert raw.reason.startswith("step is not allowed in the interaction phase")


def test_a_queued_go_to_test_makes_the_next_test_verb_allowed(store, problems):
    session = GameSession.create(problems["mfp"], store)
    assert [session.enqueue_action(a) for a in ("go-to-test", "step")] == ["queued"] * 2
    assert [session.tick().event["action"] for _ in range(2)] == ["go-to-test", "step"]
    assert session.get_state()["test"]["position"] == 1


def test_more_than_thirty_inputs_in_a_second_are_rate_limited(store, problems):
    session = GameSession.create(problems["mfp"], store, queue_size=100)
    statuses = [session.enqueue_action("noop", now=10.0 + i / 100) for i in range(35)]
    assert statuses == ["queued"] * 30 + ["rate-limited"] * 5
    assert session.enqueue_action("noop", now=11.001) == "queued"  # the window moved on
    assert [r.status for r in rows(store, RawInput, RawInput.id)] == ["rate-limited"] * 5


def test_a_step_that_raises_is_logged_not_applied_and_play_goes_on(store, problems):
    session = GameSession.create(problems["broken"], store)
    session.enqueue_action("click 1 1")
    failed = session.tick()
    session.enqueue_action("right")
    session.tick()
    events = rows(store, Event, Event.seq)
    assert [(e.seq, e.tick, e.action, e.applied) for e in events] == [
        (0, None, "click 1 1", False), (1, 0, "right", True)]
    assert events[0].error == "RuntimeError: division by zero in on-click"
    assert failed.step is None and not failed.done


def test_the_step_that_ends_the_episode_finishes_its_row(store, problems):
    session = GameSession.create(problems["planning"], store)
    for action in ("go-to-test", "click 4 4", "right", "right", "down", "down"):
        session.enqueue_action(action)
        tick = session.tick()
    assert tick.done and tick.state["score"] == 1.0
    with store.session() as db:
        row = db.get(EpisodeRow, session.episode_id)
        assert (row.status, row.phase, row.score, row.info["ticks"]) == ("done", "done", 1.0, 6)
        assert (row.info["test_steps"], row.info["test_reached"]) == (5, True)
    assert session.enqueue_action("up") == "rejected"


def test_a_finished_cd_session_records_when_it_triggered_the_change(store, problems):
    session = GameSession.create(problems["cd"], store)
    for action in ("go-to-test", "right", "right", "right", "click 0 4", "found-change",
                   "choose_frame_4", "submit"):
        session.enqueue_action(action)
        tick = session.tick()
    assert tick.done and tick.state["score"] == 1.0
    with store.session() as db:
        info = db.get(EpisodeRow, session.episode_id).info
    assert (info["test_triggered"], info["test_t_star"], info["test_chosen"]) == (True, 4, 4)


def test_a_preview_session_records_nothing(problems):
    session = GameSession.create(problems["cd"], None)
    session.enqueue_action("down")
    tick = session.tick()
    assert session.episode_id is None
    assert (tick.event["action"], tick.state["frame"][1][0]) == ("down", "gold")


# -- the scheduler ------------------------------------------------------------------------


def run_scheduler(deliveries, started=None):
    def deliver(session, tick):
        deliveries.append((session.token, tick.event["tick"], tick.event["latency"]))

    def start_task(target):
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        if started is not None:
            started.append(thread)
        return thread

    return Scheduler(deliver, start_task=start_task, sleep=time.sleep)


def test_one_scheduler_ticks_each_session_at_its_own_frame_rate(store, problems):
    deliveries: list = []
    started: list = []
    scheduler = run_scheduler(deliveries, started)
    fast = scheduler.add(GameSession.create(problems["mfp"], store))
    slow = scheduler.add(GameSession.create(problems["slow"], store))
    scheduler.start(fast.token)
    scheduler.start(slow.token)
    deadline = time.monotonic() + 10
    while sum(1 for d in deliveries if d[0] == slow.token) < 8 and time.monotonic() < deadline:
        time.sleep(0.01)
    scheduler.stop()
    counts = {t: sum(1 for d in deliveries if d[0] == t) for t in (fast.token, slow.token)}
    # 8 FPS against 4 FPS: twice the ticks, give or take the one in flight at stop.
    assert counts[slow.token] >= 8
    assert abs(counts[fast.token] - 2 * counts[slow.token]) <= 2
    for token in counts:
        assert [d[1] for d in deliveries if d[0] == token] == list(range(counts[token]))
    assert len(started) == 1  # one loop for every session, not a thread per session


def test_a_paused_session_stops_ticking_and_a_finished_one_is_unscheduled(store, problems):
    deliveries: list = []
    scheduler = run_scheduler(deliveries)
    paused = scheduler.add(GameSession.create(problems["mfp"], store))
    finished = scheduler.add(GameSession.create(problems["mfp"], store))
    for action in ("go-to-test", "choose_option_0", "submit"):
        finished.enqueue_action(action)
    scheduler.start(paused.token)
    scheduler.start(finished.token)
    time.sleep(0.3)
    scheduler.pause(paused.token)
    seen = [d for d in deliveries if d[0] == paused.token]
    time.sleep(0.6)
    scheduler.stop()
    assert [d for d in deliveries if d[0] == paused.token] == seen
    assert [d[1] for d in deliveries if d[0] == finished.token] == [0, 1, 2]
    assert finished.token not in scheduler.scheduled


@pytest.mark.parametrize(("deadline", "now", "expected"), [
    (10.0, 10.01, 10.125),  # on time: the next period
    (10.0, 10.2, 10.125),  # less than a period late: still the next one, due at once
    (10.0, 10.6, 10.5),  # stalled: the missed ticks are skipped, the phase is kept
    (10.0, 12.99, 12.875),
])
def test_after_a_stall_the_next_tick_keeps_the_sessions_phase(deadline, now, expected):
    assert next_deadline(deadline, 0.125, now) == pytest.approx(expected)
