"""The one scheduler that ticks every live session, on a real store."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from records.models import EpisodeRow
from records.store import Store
from study_server.scheduler import EARLY, Scheduler
from study_server.session import GameSession
from tasks import registry
from tasks.worldtest.problem import Problem
from tasks.worldtest.tick import next_deadline
from tests.envs import Walker


class SlowWalker(Walker):
    frame_rate = 4


@pytest.fixture
def store(tmp_path):
    with Store(str(tmp_path / "rt.db"), flush_interval=0.01) as store:
        yield store


@pytest.fixture
def problems(test_problems):
    registry.register_env("test/rt-slow", SlowWalker, replace=True)
    slow = Problem("test/rt-slow-planning", "test/rt-slow", "planning", 0,
                   params={"goal_cells": [[4, 4]], "goal_colours": ["gold"]})
    yield {**test_problems, "slow": slow}
    registry.unregister(env_id="test/rt-slow")


# -- the scheduler ------------------------------------------------------------------------


def run_scheduler(deliveries, started=None):
    def deliver(session, tick):
        deliveries.append((session.token, tick.step.index))

    def start_task(target, *args):
        thread = threading.Thread(target=target, args=args, daemon=True)
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


def test_ticks_due_within_two_milliseconds_run_in_one_wakeup_never_counted_late(
        store, problems):
    deliveries: list = []
    wakeups = [0]

    def sleep(seconds):  # the last 5 ms spun: on a loaded machine the OS woke a sleeping
        wakeups[0] += 1  # thread 1-3 ms late, past the second tick's deadline in every pass
        until = time.monotonic() + seconds
        time.sleep(max(0.0, seconds - 0.005))
        while time.monotonic() < until:
            time.sleep(0)  # lets the test's own thread have the interpreter meanwhile

    loops: list = []  # the loop starts once both are due: it ran the first tick during
    for _ in range(5):  # the wait, holding the interpreter, and the gap came out 4-6 ms
        scheduler = Scheduler(lambda session, tick: deliveries.append((session.token, wakeups[0])),
                              start_task=lambda target, *args: loops.append(threading.Thread(
                                  target=target, args=args, daemon=True)), sleep=sleep)
        first = scheduler.add(GameSession.create(problems["mfp"], store))
        second = scheduler.add(GameSession.create(problems["mfp"], store))
        scheduler.start(first.token)
        begun = time.monotonic()
        while time.monotonic() < begun + EARLY * 3 / 4:  # the second due 1.5 ms later
            pass
        scheduler.start(second.token)
        (due_first, *_), (due_second, *_) = sorted(scheduler.heap)
        if 0 < due_second - due_first < EARLY:  # else preempted between the two: again
            break
    assert 0 < due_second - due_first < EARLY
    loops[-1].start()
    deadline = time.monotonic() + 20  # a pass that woke within 1.5 ms of the first's due
    while (len(deliveries) < 16 or 0.0 not in second.lateness) and time.monotonic() < deadline:
        time.sleep(0.01)  # time: a loaded machine woke every one of 8 passes later than that
    scheduler.stop()
    passes = {token: [w for t, w in deliveries if t == token][:8]
              for token in (first.token, second.token)}
    assert passes[first.token] == passes[second.token]  # each pair in one pass of the loop
    assert min(second.lateness) == 0.0 <= min(first.lateness)  # early counts as on time


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


def test_a_tick_due_behind_a_long_step_goes_on_while_that_step_yields(store, problems):
    """A long Autumn step yields now and then (``tasks.limits.Host.cooperate``); the
    server's ``cooperate`` first lets the scheduler make another task its loop, which
    ticks those due behind the step. Here tasks are threads, and the loop's first sleep
    is long, so that both sessions fall due in one turn, the heavy one first: the
    walker's tick must be delivered while the heavy step still computes, not after it."""
    from tasks.limits import share_time
    from tests.envs import heavy_env

    registry.register_env("test/rt-heavy", heavy_env, replace=True)
    heavy_problem = Problem("test/rt-heavy-planning", "test/rt-heavy", "planning", 0,
                            params={"goal_cells": [[4, 4]], "goal_colours": ["gold"]})
    delivered: dict[str, float] = {}
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        time.sleep(0.3 if len(slept) == 1 else seconds)

    def deliver(session, tick):
        delivered.setdefault(session.token, time.monotonic())

    loops: list[threading.Thread] = []

    def spawn(function, *args):
        thread = threading.Thread(target=function, args=args, daemon=True)
        thread.start()
        loops.append(thread)
        return thread

    scheduler = Scheduler(deliver, start_task=spawn, sleep=sleep)
    heavy = scheduler.add(GameSession.create(heavy_problem, store))
    walker = scheduler.add(GameSession.create(problems["mfp"], store))
    heavy.enqueue_action("left")
    share_time(cooperate=scheduler.lend)
    try:
        scheduler.start(heavy.token)
        scheduler.start(walker.token)
        deadline = time.monotonic() + 20
        while len(delivered) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        # the step handed the loop to a second task once, and its own task ended with it
        assert len(loops) == 2 and [loop.is_alive() for loop in loops] == [False, True]
    finally:
        scheduler.stop()
        share_time(None)
        registry.unregister(env_id="test/rt-heavy")
    assert delivered[walker.token] < delivered[heavy.token]


@pytest.mark.parametrize(("deadline", "now", "expected"), [
    (10.0, 10.01, 10.125),  # on time: the next period
    (10.0, 10.2, 10.125),  # less than a period late: still the next one, due at once
    (10.0, 10.6, 10.5),  # stalled: the missed ticks are skipped, the phase is kept
    (10.0, 12.99, 12.875),
])
def test_after_a_stall_the_next_tick_keeps_the_sessions_phase(deadline, now, expected):
    assert next_deadline(deadline, 0.125, now) == pytest.approx(expected)


def test_a_preview_nobody_joins_is_abandoned_and_a_participants_session_kept(store, problems):
    scheduler = run_scheduler([])
    scheduler.unjoined_timeout = 0.2
    preview = scheduler.add(GameSession.create(problems["mfp"], store))
    participant = scheduler.add(GameSession.create(problems["mfp"], store, participant_id=7))
    joined = scheduler.add(GameSession.create(problems["mfp"], store))
    joined.joined = True  # a client joined, then left a moment ago
    assert scheduler.preview_count() == 2
    time.sleep(0.3)
    scheduler._sweep_idle()
    assert set(scheduler.sessions) == {participant.token, joined.token}
    assert scheduler.preview_count() == 1
    scheduler.add(joined)  # the same session again (a resumed one replaces its token's)
    assert scheduler.preview_count() == 1
    assert scheduler.remove(joined.token) is joined and scheduler.remove(joined.token) is None
    assert scheduler.preview_count() == 0
    store.flush(timeout=10)
    with store.session() as db:
        row = db.get(EpisodeRow, preview.episode_id)
    assert (row.status, row.score, row.info["reason"]) == ("abandoned", 0.0, "nobody joined the preview")


def test_a_step_of_the_systems_clock_abandons_no_game(store, problems, monkeypatch):
    """An NTP correction or a resumed virtual machine steps the system's clock forward an
    hour. The idle sweeps measured on it, so every game whose page was away at that
    moment (a reload, a connection being made again) was abandoned at once, and a
    participant's attempt excluded; in browser play too. They now measure on
    ``steady_time``. ``time.time`` stands in for the system's clock."""
    from flask import Flask

    from study_server import browser_play

    scheduler = run_scheduler([])
    person = scheduler.add(GameSession.create(problems["mfp"], store, participant_id=7))
    preview = scheduler.add(GameSession.create(problems["mfp"], store))
    app = Flask(__name__)
    app.config.update(UNJOINED_TIMEOUT=45.0, IDLE_TIMEOUT=600.0)
    played = browser_play.open_browser_session(store, problems["mfp"], participant_id=8)
    browser_play.sessions(app)[played.token] = played
    wall = time.time
    monkeypatch.setattr(time, "time", lambda: wall() + 3600)
    scheduler._sweep_idle()
    browser_play.sweep(app)
    assert set(scheduler.sessions) == {person.token, preview.token}
    assert played.token in browser_play.sessions(app) and not played.attempt.ended


def test_a_session_nobody_returns_to_is_abandoned_and_a_persons_attempt_excluded_with_why(
        store, problems):
    """The idle timeout abandons a participant's session as a recorded preview's; the
    person's attempt is excluded, with why (it stayed included, without a reason, unlike
    one the abandon timeout released); a recorded preview is nobody's to exclude."""
    scheduler = run_scheduler([])
    scheduler.idle_timeout = 0.2
    person = scheduler.add(GameSession.create(problems["mfp"], store, participant_id=7))
    preview = scheduler.add(GameSession.create(problems["mfp"], store))
    preview.joined = True
    time.sleep(0.3)
    scheduler._sweep_idle()
    assert scheduler.sessions == {}
    store.flush(timeout=10)
    with store.session() as db:
        rows = [db.get(EpisodeRow, session.episode_id) for session in (person, preview)]
    assert [(row.status, row.included, row.exclusion_reason, row.info["reason"])
            for row in rows] == [
        ("abandoned", False, "abandoned: nobody was connected for 0.2 s",
         "nobody was connected for 0.2 s"),
        ("abandoned", True, None, "nobody was connected for 0.2 s")]


def test_previews_are_capped(make_live_server, test_problems):
    import httpx

    live = make_live_server({"MAX_PREVIEWS": 2})
    answers = [httpx.post(f"{live.url}/play/test/rt-walker-mfp/session", timeout=10) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 503]
    assert "2 previews are open already" in answers[2].text


def test_previews_asked_for_all_at_once_keep_to_the_cap(tmp_path):
    """Forty previews asked for at the same instant, from ``gridstudy serve`` (gevent)
    under a cap of 5: five open, played by the server and in the browser alike. Before,
    each was counted only once it was open, and opening one waits on the database and
    the compiler: all forty opened, and forty more played in the browser."""
    import httpx

    from tests.conftest import start_serve
    from tests.consent.helpers import at_once

    server, url = start_serve(tmp_path / "previews.db", log=tmp_path / "serve.log",
                              env={"GRIDSTUDY_PREVIEW": "open", "GRIDSTUDY_MAX_PREVIEWS": "5"})
    try:
        def ask(play: str) -> Callable[[], int]:
            return lambda: httpx.post(f"{url}/play/ant_trail/planning/session?{play}",
                                      timeout=60).status_code

        assert sorted(at_once(40, ask("record=1"))) == [200] * 5 + [503] * 35
        assert at_once(10, ask("play=browser")) == [503] * 10
    finally:
        server.terminate()
        server.wait(60)
    assert "Traceback" not in (tmp_path / "serve.log").read_text()
