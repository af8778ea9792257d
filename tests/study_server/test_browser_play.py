"""Browser play's record (``study_server.browser_play``): the log a browser's tick
engine writes (``tasks.worldtest.verify.PlayLog``, the same engine the page runs) is
replayed by the server on its own engine into a real store; an honest log is verified
and stored as the server would have stored it; a tampered one is stored as the server
computes it and marked unverified at the first tick it departs; batches sent twice are
stored once; a hostile batch is refused whole with a clear error."""

from __future__ import annotations

import copy
import time

import pytest
from sqlmodel import select

from records.models import EpisodeRow, Event, RawInput
from records.recorder import EpisodeRecorder
from records.store import Store
from study_server.browser_play import (
    AHEAD,
    MAX_BATCH,
    REFUSALS_PER_SECOND,
    BrowserAttempt,
    LogError,
)
from tasks import registry
from tasks.worldtest.episode import DONE, Episode
from tasks.worldtest.tick import ENDED_BEFORE_TICK, TickEngine
from tasks.worldtest.verify import PlayLog

PROBLEM = "ant_trail/planning"


@pytest.fixture
def store(tmp_path):
    with Store(str(tmp_path / "browser.db"), flush_interval=0.01) as store:
        yield store


def browser_log(inputs: list[str | None]) -> list[dict]:
    """What a browser sends: its own tick engine's log, one tick per item of ``inputs``
    (the keys pressed before that tick; None for none), until the attempt ends, as the
    page stops ticking then."""
    log = PlayLog()
    engine = TickEngine(Episode(registry.get_problem(PROBLEM)), log)
    now = 1000.0
    for keys in inputs:
        if engine.episode.phase == DONE:
            break
        for key in (keys or "").split(",") if keys else ():
            engine.admit(key, client_time=now, now=now)
        engine.tick(now)
        now += 0.125
    return log.entries


def attempt(store, **clock) -> BrowserAttempt:
    """A browser attempt of :data:`PROBLEM`; by default one begun an hour ago, so that
    the logs made here at once keep to its clock."""
    problem = registry.get_problem(PROBLEM)
    return BrowserAttempt(Episode(problem), EpisodeRecorder(store, problem, wait_for_end=False),
                          **(clock or {"began": time.time() - 3600}))


def stored(store, model, episode_id):
    store.flush(timeout=10)
    with store.session() as session:
        return list(session.exec(select(model).where(model.episode_id == episode_id)
                                 .order_by(model.id)))


def row(store, episode_id) -> EpisodeRow:
    store.flush(timeout=10)
    with store.session() as session:
        return session.get(EpisodeRow, episode_id)


SOLVING = [None, "click 3 3", None, "reset", None, "go-to-test", "click 2 6", None, None, None,
           None, None]


def test_an_honest_log_is_verified_and_stored_as_the_server_would_store_it(store):
    log = browser_log(SOLVING)
    kept = attempt(store)
    for start in range(0, len(log), 4):
        taken = kept.take(log[start:start + 4])
        assert taken.verified and taken.next == min(start + 4, len(log))
    events = stored(store, Event, kept.recorder.episode_id)
    assert [e.frame_hash for e in events] == [e["hash"] for e in log if "hash" in e]
    assert [e.action for e in events] == [e["action"] for e in log if "action" in e]
    ended = row(store, kept.recorder.episode_id)
    assert ended.status == "done" and ended.score == 1.0
    assert ended.info["verified"] is True and ended.info["play"] == "browser"


def test_a_tampered_action_is_stored_as_the_server_computes_it_and_marked(store):
    log = browser_log(SOLVING)
    tampered = copy.deepcopy(log)
    changed = next(e for e in tampered if e.get("action") == "click 2 6")
    changed["action"] = "click 5 6"  # the browser claims another click with the same frame
    kept = attempt(store)
    assert kept.take(tampered).verified is False
    assert kept.difference["tick"] == changed["tick"]
    assert kept.difference["browser_hash"] == changed["hash"] != kept.difference["server_hash"]
    events = stored(store, Event, kept.recorder.episode_id)
    assert "click 5 6" in [e.action for e in events]
    assert changed["hash"] not in [e.frame_hash for e in events]


def test_a_claimed_frame_that_differs_is_found_at_its_tick(store):
    log = browser_log(SOLVING)
    log[3]["hash"] = "0123456789abcdef"
    kept = attempt(store)
    kept.take(log)
    assert not kept.verified and kept.difference["n"] == 3
    assert row(store, kept.recorder.episode_id).info["first_difference"]["tick"] == log[3]["tick"]


def test_an_action_the_servers_episode_refuses_is_a_difference(store):
    log = browser_log([None, None])
    log.append({"n": 2, "tick": 2, "action": "submit_option_1", "source": "input",
                "hash": log[1]["hash"], "t": None})
    kept = attempt(store)
    assert not kept.take(log).verified
    assert "refuses 'submit_option_1'" in kept.difference["why"]
    refused = stored(store, RawInput, kept.recorder.episode_id)
    assert [r.status for r in refused] == ["rejected"]


def test_a_key_pressed_again_as_the_attempt_ends_is_kept_as_dropped(store):
    """Two keys in the last tick: the first is applied by the step that ends the attempt,
    the second waits behind it; the page's engine drops it then, as the server's does,
    and the server keeps it."""
    log = browser_log(SOLVING[:10] + ["noop,noop"])
    assert (log[-2]["tick"], log[-2]["source"]) == (10, "input")
    assert log[-1] == {"n": 11, "refused": "dropped", "text": "noop",
                       "reason": ENDED_BEFORE_TICK, "t": log[-1]["t"]}
    kept = attempt(store)
    assert kept.take(log).verified
    refused = stored(store, RawInput, kept.recorder.episode_id)
    assert [(r.text, r.status, r.reason) for r in refused] == [
        ("noop", "dropped", ENDED_BEFORE_TICK)]
    assert row(store, kept.recorder.episode_id).status == "done"
    with pytest.raises(LogError, match="the attempt is over"):
        kept.take([{**log[-2], "n": 12}])  # a step after the end is still refused


def test_a_batch_sent_again_is_stored_once_and_a_gap_is_refused(store):
    log = browser_log(SOLVING)
    kept = attempt(store)
    kept.take(log[:5])
    assert kept.take(log[2:7]).next == 7  # a lost acknowledgement: sent again
    with pytest.raises(LogError, match="entry 8 leaves a gap: the server expects entry 7"):
        kept.take(log[8:])
    assert kept.take(log[7:]).next == len(log)
    events = stored(store, Event, kept.recorder.episode_id)
    assert [e.seq for e in events] == list(range(len(log)))


def test_refused_inputs_are_kept_as_raw_inputs(store):
    log = browser_log(["up,up,up,up,up,up,up", None])  # a key held down: 4 wait, 3 do not
    kept = attempt(store)
    kept.take(log)
    refused = stored(store, RawInput, kept.recorder.episode_id)
    assert [r.status for r in refused] == ["dropped"] * 3
    assert kept.verified


def test_a_log_ahead_of_the_clock_is_refused_whole(store):
    """A page ticks in real time: ten seconds into an attempt at 8 a second its log holds
    at most (10 + AHEAD) x 8 ticks. A batch beyond that is refused whole, nothing of it
    stored (one connection made the server replay and store 100,000 ticks in eight
    seconds); what keeps to the clock is taken, and more once the time has come."""
    now = [1000.0]
    kept = attempt(store, began=990.0, clock=lambda: now[0])
    allowed = int((10 + AHEAD) * kept.episode.frame_rate)
    log = browser_log([None] * (allowed + 9))
    with pytest.raises(LogError, match=f"ahead of the clock: {allowed + 9} ticks within 12 s"):
        kept.take(log)
    assert kept.next == 0 and stored(store, Event, kept.recorder.episode_id) == []
    assert kept.take(log[:allowed]).next == allowed
    with pytest.raises(LogError, match="ahead of the clock"):
        kept.take(log[allowed:])
    now[0] += 2.0  # the page played on for two seconds
    assert kept.take(log[allowed:]).next == len(log) and kept.verified


def test_a_step_of_the_systems_clock_refuses_no_page_log(store, monkeypatch):
    """An NTP correction or a resumed virtual machine steps the system's clock. The
    check above measured an attempt's time on it: after a step back of an hour, every
    page's batches were refused for the hour (the pages kept their logs, and their games
    waited at the end). It now counts on the monotonic clock from the server's start
    (``steady_time``). ``time.time`` stands in for the system's clock: a step under a
    running server cannot be made here (libfaketime, which could, breaks
    ``time.sleep`` once its offset changes), so this guards the clock the attempt reads,
    and a reading of ``time.time`` would fail it."""
    from study_server.clock import steady_time

    kept = attempt(store, began=steady_time() - 10)  # ten seconds of play so far
    wall = time.time
    monkeypatch.setattr(time, "time", lambda: wall() - 3600)
    log = browser_log([None] * int(10 * kept.episode.frame_rate))
    assert kept.take(log).next == len(log)
    monkeypatch.setattr(time, "time", lambda: wall() + 3600)  # and forward: no more allowed
    with pytest.raises(LogError, match="ahead of the clock"):
        kept.take(browser_log([None] * int(20 * kept.episode.frame_rate))[len(log):])


def test_more_refused_inputs_than_anyone_can_press_are_refused(store):
    """Refused inputs are stored too (as raw inputs): at most REFUSALS_PER_SECOND of them
    for each second of the attempt, with the same slack."""
    kept = attempt(store, began=1000.0, clock=lambda: 1000.0)
    most = int(AHEAD * REFUSALS_PER_SECOND)
    spam = [{"n": i, "refused": "dropped", "text": "up", "reason": "too fast", "t": None}
            for i in range(most + 1)]
    with pytest.raises(LogError, match=f"more refused inputs than anyone can press: {most + 1}"):
        kept.take(spam)
    assert kept.take(spam[:most]).next == most


HOSTILE = [
    ("not a list", {"n": 0}, "a batch is a list"),
    ("too long", [{"n": i} for i in range(MAX_BATCH + 1)], "at most 512 entries"),
    ("no number", [{"tick": 0}], "with its number n"),
    ("out of order", [{"n": 0, "tick": 0, "action": "noop", "source": "auto",
                       "hash": "0" * 16}, {"n": 5}], "numbered in order: 5 after 0"),
    ("bad hash", [{"n": 0, "tick": 0, "action": "noop", "source": "auto", "hash": "x"}],
     "16-hex-digit hash"),
    ("bad action", [{"n": 0, "tick": 0, "action": "fly 1", "source": "input",
                     "hash": "0" * 16}], "entry 0: "),
    ("bad source", [{"n": 0, "tick": 0, "action": "noop", "source": "server",
                     "hash": "0" * 16}], "source"),
    ("bad time", [{"n": 0, "tick": 0, "action": "noop", "source": "auto",
                   "hash": "0" * 16, "t": "soon"}], "t is Unix seconds"),
    ("bad refusal", [{"n": 0, "refused": "dropped", "text": 3, "reason": "x"}],
     "refused, text"),
    ("refusal claimed applied", [{"n": 0, "refused": "applied", "text": "up", "reason": "x"}],
     "refused is one of dropped, malformed, rate-limited, rejected"),
]


@pytest.mark.parametrize(("batch", "message"), [c[1:] for c in HOSTILE],
                         ids=[c[0] for c in HOSTILE])
def test_a_hostile_batch_is_refused_whole_and_nothing_is_stored(store, batch, message):
    kept = attempt(store)
    with pytest.raises(LogError, match=message):
        kept.take(batch)
    assert kept.next == 0
    assert stored(store, Event, kept.recorder.episode_id) == []


@pytest.mark.parametrize("t", [float("nan"), float("inf"), 10**30, -5.0, 1e11, True],
                         ids=["NaN", "Infinity", "10**30", "negative", "year 5138", "true"])
def test_a_batch_with_an_impossible_time_is_refused_whole_and_the_honest_log_verifies(store, t):
    """Python's JSON parser reads NaN, Infinity and 1e999, which no browser sends. Such a
    time in the fourth entry was refused by the event row only after the server had
    stepped its episode: the first entries were stored, and the honest batch sent next
    replayed that step twice and was marked unverified at a frame that was the same."""
    kept, honest = attempt(store), browser_log(SOLVING)
    hostile = copy.deepcopy(honest)
    hostile[3]["t"] = t
    with pytest.raises(LogError, match="entry 3: t is Unix seconds"):
        kept.take(hostile)
    assert kept.next == 0 and stored(store, Event, kept.recorder.episode_id) == []
    taken = kept.take(honest)
    assert (taken.next, taken.verified, kept.difference) == (len(honest), True, None)


def test_a_refusals_reason_is_kept_to_a_line(store):
    kept = attempt(store)
    kept.take([{"n": 0, "refused": "rejected", "text": "up", "reason": "x" * 60_000, "t": None}])
    (raw,) = stored(store, RawInput, kept.recorder.episode_id)
    assert (raw.status, raw.reason) == ("rejected", "x" * 500)


def test_only_problems_of_the_package_play_in_the_browser(tmp_path):
    """The engine archive holds the ``tasks`` package: a problem registered from
    elsewhere (here the tests' walker) is played by the server, even in a study whose file
    says ``play: browser``; the built-in library and the task-DAG maps play in the page."""
    from study_server.app import shutdown
    from study_server.engine import in_engine
    from tests.consent.helpers import study_app
    from tests.consent.test_flow import walk_to_first_task

    assert in_engine("lamp_grid/planning") and in_engine("dagmap/high-n4")
    app = study_app(tmp_path / "walker.db", play="browser")
    try:
        page = walk_to_first_task(app, app.test_client())
        assert not in_engine(page.context["problem_id"])
        assert page.context["play"] == "server" and page.context["token"]
    finally:
        shutdown(app)


def test_ended_browser_attempts_are_forgotten_and_previews_are_bounded(tmp_path):
    """An ended attempt is held a minute (a lost last acknowledgement is answered), then
    forgotten; previews played in the browser count against MAX_PREVIEWS like the
    server's."""
    import httpx

    from study_server import browser_play
    from tests.conftest import start_live_server

    live = start_live_server(tmp_path / "held.db", {"MAX_PREVIEWS": 2})
    try:
        made = [httpx.post(f"{live.url}/play/lamp_grid/planning/session",
                           params={"play": "browser"}).json() for _ in range(2)]
        refused = httpx.post(f"{live.url}/play/lamp_grid/planning/session", params={"play": "browser"})
        assert refused.status_code == 503 and "previews are open already" in refused.text
        held = browser_play.sessions(live.app)
        first = held[made[0]["token"]]
        first.attempt.ended, first.attempt.ended_at = True, 0.0  # ended long ago
        browser_play.keep(live.app, held.pop(made[1]["token"]), leased=True)
        assert set(held) == {made[1]["token"]}
    finally:
        live.stop()


def test_previews_and_attempts_no_page_came_to_are_let_go(tmp_path):
    """A preview played in the browser that no page joins within UNJOINED_TIMEOUT ends
    abandoned and is let go, as the scheduler's own previews are; a game no page has been
    connected to for IDLE_TIMEOUT is forgotten, its row untouched (its page may play it on
    another worker), and a page that comes back gets it again, rebuilt from the store.
    Before, both were held for good: once MAX_PREVIEWS previews had been opened, no page
    could open another until the server restarted."""
    import httpx
    import socketio

    from study_server import browser_play
    from tests.conftest import start_live_server, wait_until

    live = start_live_server(tmp_path / "held.db", {"MAX_PREVIEWS": 2, "UNJOINED_TIMEOUT": 2.0,
                                                    "IDLE_TIMEOUT": 6.0})

    def open_preview() -> httpx.Response:
        return httpx.post(f"{live.url}/play/lamp_grid/planning/session",
                          params={"play": "browser"})

    def join(token: str) -> dict:
        page = socketio.Client(reconnection=False)
        page.connect(live.url, transports=["websocket"])
        try:
            return page.call("join-browser", {"token": token}, timeout=10)
        finally:
            page.disconnect()

    try:
        made = [open_preview().json() for _ in range(2)]
        assert open_preview().status_code == 503
        assert join(made[1]["token"])["ok"]  # joined, then left
        held = browser_play.sessions(live.app)
        wait_until(lambda: made[0]["token"] not in held, timeout=10)  # (a busy machine took
        assert open_preview().status_code == 200  # longer than a fixed wait) let go, and
        assert made[1]["token"] in held  # its place taken; the one joined is still held
        deadline = time.monotonic() + 20
        while made[1]["token"] in held and time.monotonic() < deadline:
            time.sleep(0.2)  # the heartbeat forgets it after the idle timeout
        assert made[1]["token"] not in held
        gone, left = (row(live.store, made[k]["episode_id"]) for k in (0, 1))
        assert (gone.status, gone.info["reason"]) == ("abandoned", "nobody joined the preview")
        assert left.status == "active"
        back = join(made[1]["token"])  # its page comes back: rebuilt from the store
        assert back["ok"] and back["record"]["next"] == 0
        assert held[made[1]["token"]].episode_id == made[1]["episode_id"]
    finally:
        live.stop()
