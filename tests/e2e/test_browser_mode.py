"""Browser play in Chromium: the page ticks the engine itself and sends its play log;
the server replays it, stores the server's own record and checks every frame. A reload
mid-problem resumes on the same frame."""

from __future__ import annotations

import contextlib
import json

import pytest
from sqlmodel import select

from records.models import EpisodeRow
from tasks import registry
from tasks.worldtest.episode import Episode
from tasks.worldtest.verify import frame_hashes

GAME = "section.gs-game"
PROBLEM = "lamp_grid/planning"


def send(page, action):
    page.evaluate(f"document.querySelector('{GAME}').gridstudy.send({json.dumps(action)})")


def open_game(page, live_server):
    page.goto(f"{live_server.url}/play/{PROBLEM}?play=browser")
    page.wait_for_selector(f"{GAME}[data-engine=ready]", timeout=60000)


def attempt(live_server):
    """The attempt played on the page (the one game under way: a study reserves more)."""
    from study_server.browser_play import sessions

    live_server.store.flush(timeout=10)
    held = [played.episode_id for played in sessions(live_server.app).values()]
    with live_server.store.session() as db:
        rows = db.exec(select(EpisodeRow)).all()
        [row] = [r for r in rows if r.id in held or not held and (r.info or {}).get("play")]
        return row


def test_a_problem_played_in_the_browser_is_the_servers_record_frame_for_frame(live_server, page):
    open_game(page, live_server)
    page.locator("[data-gs=grid]").focus()
    page.keyboard.press("ArrowRight")
    # Two ticks with no key after it: the record must show the automatic no-ops, and
    # without this wait a quick click and the plan's queued actions can fill every tick.
    pressed = int(page.locator(GAME).get_attribute("data-tick"))
    page.wait_for_function(f"+document.querySelector('{GAME}').dataset.tick >= {pressed + 3}")
    page.get_by_role("button", name="Go to test").click()
    page.wait_for_selector(f"{GAME}[data-phase=test]")
    for action in registry.get_problem(PROBLEM).params["plan"]:
        send(page, action)
        page.wait_for_timeout(200)
    page.wait_for_selector(f"{GAME}[data-phase=done]", timeout=30000)
    page.wait_for_function(f"document.querySelector('{GAME}').dataset.verified === 'true'")
    page.wait_for_function("document.querySelector('[data-gs=message]').textContent === 'Saved.'")
    row = attempt(live_server)
    assert row.status == "done" and row.score == 1.0
    assert row.info["play"] == "browser" and row.info["verified"] is True
    events = live_server.events(row.id)
    assert [e.seq for e in events] == list(range(len(events)))
    assert [e.tick for e in events] == list(range(len(events)))  # one event a tick
    assert any(e.source == "auto" for e in events)  # the automatic no-ops, as the server's
    replayed = frame_hashes(registry.get_problem(PROBLEM), [e.action for e in events])
    assert [e.frame_hash for e in events] == replayed[1:]


def held_for(page, seconds: float) -> tuple[int, float]:
    """Hold the page's thread for ``seconds`` (as a background tab's slowed timers, or a
    busy computer, do), then let it run half a second: the ticks the page ran meanwhile
    and the periods of its frame rate that passed."""
    before = page.evaluate(f"[+document.querySelector('{GAME}').dataset.tick, performance.now()]")
    page.evaluate(f"() => {{ const end = performance.now() + {seconds * 1000}; "
                  "while (performance.now() < end) {} }")
    page.wait_for_timeout(500)
    after = page.evaluate(f"[+document.querySelector('{GAME}').dataset.tick, performance.now()]")
    period = 1000 / Episode(registry.get_problem(PROBLEM)).frame_rate
    return after[0] - before[0], (after[1] - before[1]) / period


def test_a_page_whose_timer_fell_behind_runs_the_ticks_it_missed(live_server, page):
    """A tab in the background has its timers slowed (to once a second, and once a
    minute after five minutes). Its world moved on at that pace, where the server's moves
    on at the frame rate for a page connected but not looked at: the two modes recorded
    different attempts. The ticks missed are now run when the timer comes, up to
    ``catchUp`` seconds of them (a computer asleep goes on from where it stopped, as a
    session on the server pauses when its connection is lost); all are stored, verified."""
    open_game(page, live_server)
    page.wait_for_function(f"+document.querySelector('{GAME}').dataset.tick >= 3")
    ran, due = held_for(page, 2.5)
    assert abs(ran - due) <= 2  # before: eight ticks fewer
    page.evaluate(f"document.querySelector('{GAME}').gridstudy.catchUp = 1")
    ran, due = held_for(page, 3.0)
    assert abs(due - ran - 2.0 * 4) <= 2  # the two seconds beyond catchUp are not run
    shown = int(page.locator(GAME).get_attribute("data-tick"))
    page.wait_for_function(f"+document.querySelector('{GAME}').dataset.stored > {shown}",
                           timeout=10000)
    assert page.locator(GAME).get_attribute("data-verified") == "true"
    events = live_server.events(attempt(live_server).id)
    assert [e.tick for e in events] == list(range(len(events))) and len(events) > shown


# -- in a study: reload, a tampered log, a browser that cannot run the engine ---------------


def browser_study(make_live_server, config=None, **changes):
    from dataclasses import replace

    from consent.definition import load_definition
    from records.models import Study
    from tests.e2e.test_walkthrough import DEMO

    definition = replace(load_definition(DEMO, {p.id for p in registry.list_problems()}),
                         play="browser", **changes)
    live = make_live_server(config)
    with live.store.session() as db:
        db.add(Study(id="demo", title=definition.title, definition=definition.to_dict()))
    return live


def to_practice(page, live):
    from tests.e2e.test_walkthrough import simulate

    page.goto(f"{live.url}/study/demo?PROLIFIC_PID=browser-1&STUDY_ID=s&SESSION_ID=x")
    page.get_by_role("button", name="I agree to take part").click()
    simulate(page, live, "Continue")
    page.get_by_role("button", name="Start the practice").click()


def participant(live):
    from records.models import Participant

    with live.store.session() as db:
        return db.exec(select(Participant)).one()


def stored_frames(live):
    row = attempt(live)
    return row, [e.frame_hash for e in live.events(row.id)]


def test_a_reload_mid_game_resumes_on_the_stored_frame(make_live_server, page):
    live = browser_study(make_live_server)
    page.route("https://app.prolific.com/**", lambda route: route.fulfill(body="Prolific"))
    to_practice(page, live)
    page.wait_for_selector(f"{GAME}[data-engine=ready]", timeout=60000)
    page.locator("[data-gs=grid]").focus()
    for key in ("ArrowRight", "ArrowDown", "ArrowRight", "ArrowUp"):
        page.keyboard.press(key)
        page.wait_for_timeout(250)
    page.wait_for_function(f"Number(document.querySelector('{GAME}').dataset.stored) > 4")
    token = page.get_attribute(GAME, "data-token")
    page.reload()
    page.wait_for_selector(f"{GAME}[data-engine=ready]", timeout=60000)
    assert page.get_attribute(GAME, "data-token") == token  # the same attempt
    _, before = stored_frames(live)
    rebuilt = page.evaluate(f"document.querySelector('{GAME}').gridstudy.local.logged()")
    assert rebuilt >= len(before)  # numbering goes on from what the server holds
    page.wait_for_function(f"Number(document.querySelector('{GAME}').dataset.stored) > {rebuilt + 3}")
    row, frames = stored_frames(live)
    assert row.info.get("play") == "browser"
    events = live.events(row.id)
    replayed = frame_hashes(registry.get_problem(row.problem_id), [e.action for e in events])
    assert frames == replayed[1:]  # one attempt across the reload, the server's frames
    assert [e.seq for e in events] == list(range(len(events)))


def test_a_game_played_in_the_browser_is_on_the_monitor_and_ended_from_it(make_live_server,
                                                                        page):
    """A participant's game played in their browser is on the live monitor, as one the
    server ticks; End session stops it: the page says so, ticks and sends no more, and
    goes on. Before, the monitor did not list it, and an attempt ended otherwise (from a
    participant's page, or released by the abandon timeout) was left to a page that
    played on, its log stored into the ended attempt, without a word."""
    from study_server import auth, monitor
    from tests.e2e.test_walkthrough import simulate
    from tests.study_server.people import PASSWORD, csrf, researcher

    live = browser_study(make_live_server)
    auth.create_admin(live.store.engine, "researcher", PASSWORD)
    to_practice(page, live)
    page.wait_for_selector(f"{GAME}[data-engine=ready]", timeout=60000)
    page.get_by_role("button", name="Go to test").click()  # the practice, given up
    page.wait_for_selector(f"{GAME}[data-phase=test]")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Give up").click()
    page.locator("[data-continue]:enabled").click()
    simulate(page, live, "Check my answers")
    page.wait_for_selector(f"{GAME}[data-engine=ready]", timeout=60000)
    page.locator("[data-gs=grid]").focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"Number(document.querySelector('{GAME}').dataset.stored) > 3")
    from study_server.browser_play import sessions

    def played_here() -> int:
        return sessions(live.app)[page.get_attribute(GAME, "data-token")].episode_id

    ended, token = played_here(), page.get_attribute(GAME, "data-token")
    with live.app.app_context():
        [row] = [r for r in monitor.snapshot(live.app)["playing"] if r["episode_id"] == ended]
    assert row["play"] == "browser" and row["connected"] and row["idle_seconds"] is not None
    board = researcher(live.url)
    shown = board.get("/dashboard/").text
    assert f'/dashboard/session/{ended}/end"' in shown and "in the browser" in shown
    person = participant(live).id  # ended from the participant's page too
    assert f'/dashboard/session/{ended}/end"' in board.get(f"/dashboard/participant/{person}").text
    answer = board.post(f"/dashboard/session/{ended}/end", data={
        "reason": "looked stuck", "csrf_token": csrf(board, "/dashboard/")})
    assert answer.status_code == 200
    page.wait_for_function(f"document.querySelector('{GAME}').dataset.ended === '1'")
    assert "This game was ended by the study" in page.inner_text(GAME)
    stopped = page.evaluate(f"document.querySelector('{GAME}').gridstudy.ticking")
    assert stopped is None  # the page ticks no more
    page.wait_for_selector(f"{GAME}[data-engine=ready]:not([data-token='{token}'])",
                           timeout=60000)
    assert played_here() != ended  # an unseen problem in its place
    live.store.flush(timeout=10)
    with live.store.session() as db:
        row = db.get(EpisodeRow, ended)
    assert (row.status, row.included) == ("abandoned", False)
    assert row.exclusion_reason == "ended by researcher: looked stuck"
    assert row.info["reason"] == "ended by researcher: looked stuck"
    # the game in its place released by the abandon timeout, as for a participant away:
    # the page is told at the server's next heartbeat, and its log is taken no more
    from datetime import timedelta

    from records.models import utcnow
    from study_server import assignment

    page.wait_for_function(f"Number(document.querySelector('{GAME}').dataset.stored) > 2")
    replaced = played_here()
    with live.store.session() as db:
        _, definition = assignment.load_study(db, "demo")
        assert replaced in assignment.release_stale(db, "demo", definition,
                                                    utcnow() + timedelta(hours=1))
    page.wait_for_function(f"document.querySelector('{GAME}').dataset.ended === '1'",
                           timeout=15_000)
    assert sessions(live.app)[page.get_attribute(GAME, "data-token")].attempt.ended
    page.locator("[data-episode-done]").wait_for(timeout=15_000)
    assert "no other to play in its place" in page.inner_text("[data-episode-done]")


def test_a_participant_playing_in_the_browser_at_the_limit_is_sent_to_the_ending(
        make_live_server, page):
    """The visit's time limit passes while the page plays the practice in the browser:
    the page is sent to the timed-out ending, as in server play, and the server takes no
    more of its log. Before, the page played on, its log stored into an ended visit."""
    from consent.definition import load_definition
    from tests.e2e.test_walkthrough import DEMO

    live = browser_study(make_live_server, {"DEADLINE_SWEEP": 0.3}, time_limit_minutes=0.5)
    to_practice(page, live)
    page.wait_for_selector(f"{GAME}[data-engine=ready]", timeout=60000)
    token = page.get_attribute(GAME, "data-token")
    page.locator("[data-gs=grid]").focus()
    page.keyboard.press("ArrowRight")
    page.locator("[data-code]").wait_for(timeout=45_000)  # no reload: the server sends it
    assert page.inner_text("[data-code]") == load_definition(DEMO).code_for("timed-out")
    assert participant(live).status == "timed-out"
    from study_server.browser_play import sessions

    assert sessions(live.app)[token].attempt.ended


def test_a_tampered_log_marks_the_attempt_unverified_and_excludes_it(make_live_server, page):
    live = browser_study(make_live_server)
    to_practice(page, live)
    page.wait_for_selector(f"{GAME}[data-engine=ready]", timeout=60000)
    page.evaluate(f"""() => {{
      const game = document.querySelector('{GAME}').gridstudy, real = game.local;
      game.local = {{  // a page that lies about the frame it showed at its third entry
        tick: () => real.tick(), view: () => real.view(), logged: () => real.logged(),
        admit: (a, t) => real.admit(a, t),
        since: (n, most) => JSON.stringify(JSON.parse(real.since(n, most)).map(
          e => e.n === 2 && e.hash ? {{...e, hash: "0123456789abcdef"}} : e)),
      }};
    }}""")
    page.wait_for_function(f"document.querySelector('{GAME}').dataset.verified === 'false'")
    row = attempt(live)
    from study_server.browser_play import sessions

    [played] = sessions(live.app).values()
    assert played.attempt.difference["tick"] == 2 and played.attempt.difference["n"] == 2
    from consent.definition import ExclusionRules
    from consent.exclusion import unverified_reason

    info = {**(row.info or {}), **played.attempt.outcome()}
    assert unverified_reason(ExclusionRules(), info).startswith("unverified: the browser's play "
                                                                "differs from the server's replay at tick 2")
    assert unverified_reason(ExclusionRules(exclude_unverified=False), info) is None


def test_a_browser_that_cannot_run_the_engine_plays_from_the_server_and_it_is_recorded(
        make_live_server, page):
    live = browser_study(make_live_server)
    page.route("**/engine/*.zip", lambda route: route.abort())
    to_practice(page, live)
    page.wait_for_selector(f"{GAME}[data-phase=interaction]", timeout=60000)
    assert page.get_attribute(GAME, "data-play") is None  # the server's game now
    fallback = participant(live).data["play_fallback"]
    assert "Failed to fetch" in fallback["error"] or "fetch" in fallback["error"].lower()
    page.locator("[data-gs=grid]").focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"Number(document.querySelector('{GAME}').dataset.tick) > 3")
    row = attempt(live)
    assert row.info["play"] == "server" and row.info["fallback"] == fallback["error"]


def test_at_a_300_ms_round_trip_a_key_shows_within_a_frame_period_plus_20_ms(live_server, browser):
    """Through a network holding every packet 150 ms each way, the page still shows each
    key's effect at its next local tick: p95 from keydown to the frame that applied it is
    at most one frame period plus 20 ms (server play measured 475 ms here)."""
    import random

    from bench.latency import BROWSER_PROBLEM, applied_inputs, delayed, figures, play

    port = int(live_server.url.rsplit(":", 1)[1])
    with delayed(port, 300) as proxy:
        context = browser.new_context()
        seen = play(context.new_page(), proxy.url, 25, random.Random(3), BROWSER_PROBLEM, "browser")
        context.close()
    inputs, _ = applied_inputs(str(live_server.db_path))
    found = figures(seen, inputs, 0.0, browser=True)
    period = 1000 / registry.make(registry.get_problem(BROWSER_PROBLEM).env_id).frame_rate
    assert found["applied"] == found["keys"] >= 25
    assert found["late"] == 0
    assert found["p95"] <= period + 20, found


class Killable:
    """``gridstudy serve`` (previews open) on one free port, that a test may ``kill``
    (``kill -9``) and ``start`` again on the same address."""

    def __init__(self, tmp_path, db) -> None:
        import os
        import sys
        from pathlib import Path

        from tests.conftest import free_port

        self.log = tmp_path / "serve.log"
        self.port = free_port()
        self.command = [str(Path(sys.executable).parent / "gridstudy"), "serve", "--port",
                        str(self.port), "--db", str(db)]
        self.environ = {**os.environ, "GRIDSTUDY_PREVIEW": "open"}
        self.process = None

    def start(self) -> None:
        import subprocess
        import time

        import httpx

        self.process = subprocess.Popen(self.command, env=self.environ,
                                        stdout=subprocess.DEVNULL, stderr=self.log.open("a"))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{self.port}/play/", timeout=2)
                return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise AssertionError(self.log.read_text()[-2000:])

    def kill(self) -> None:
        import signal

        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        import signal

        self.process.send_signal(signal.SIGTERM)
        self.process.wait(60)


@contextlib.contextmanager
def killable_game(tmp_path, browser, db, problem):
    """A page playing ``problem`` in the browser, its engine ready, on a :class:`Killable`
    server: ``(server, page)``; the page is closed and the server stopped after."""
    server = Killable(tmp_path, db)
    server.start()
    page = browser.new_page()
    try:
        page.goto(f"http://127.0.0.1:{server.port}/play/{problem}?play=browser")
        page.wait_for_selector(f"{GAME}[data-engine=ready]", timeout=60000)
        yield server, page
    finally:
        page.close()
        server.stop()


def test_a_page_plays_on_through_a_kill_9_and_the_restart_stores_everything_it_played(
        tmp_path, browser):
    """``kill -9`` of the server mid-game: the page keeps ticking and keeps its log; when
    the server is back on the same address, the page joins the same attempt again (by its
    token), sends what the new server has not stored, and the record holds every entry
    the page played, the server's frames, without a hole."""
    db = tmp_path / "kill.db"
    with killable_game(tmp_path, browser, db, PROBLEM) as (server, page):
        page.locator("[data-gs=grid]").focus()
        for key in ("ArrowRight", "ArrowDown", "ArrowRight"):
            page.keyboard.press(key)
            page.wait_for_timeout(300)
        page.wait_for_function(f"Number(document.querySelector('{GAME}').dataset.stored) > 3")
        server.kill()
        for key in ("ArrowLeft", "ArrowUp"):  # played while nobody stores it
            page.keyboard.press(key)
            page.wait_for_timeout(400)
        server.start()
        page.wait_for_timeout(500)
        played = page.evaluate(f"document.querySelector('{GAME}').gridstudy.local.logged()")
        page.wait_for_function(f"Number(document.querySelector('{GAME}').dataset.stored) >= {played}",
                               timeout=30000)
        assert page.get_attribute(GAME, "data-verified") == "true"
    from records.store import Store

    with Store(str(db)) as store, store.session() as session:
        [row] = session.exec(select(EpisodeRow)).all()
        from records.models import Event

        events = session.exec(select(Event).where(Event.episode_id == row.id)
                              .order_by(Event.seq)).all()
    assert len(events) >= played and [e.seq for e in events] == list(range(len(events)))
    assert {"left", "up"} <= {e.action for e in events}  # the keys pressed while it was down
    replayed = frame_hashes(registry.get_problem(PROBLEM), [e.action for e in events])
    assert [e.frame_hash for e in events] == replayed[1:]


def test_keys_pressed_while_a_server_played_page_is_cut_off_are_stored_never_applied(
        tmp_path, browser):
    """Server play, ``kill -9`` of the server mid-game, a key held and keys tapped while it
    is down, the server started again: the page says keys do nothing now, joins again,
    tells the server what was pressed and says those keys did nothing; each key is stored as a ``dropped`` raw input,
    with why, and none acts. Before, the page queued them in its socket and sent them
    before joining again: the server's door refused each unread (a key held through ten
    seconds of outage queued 61, past the door's bound for a flood), and the record held
    none."""
    import sqlite3
    from contextlib import closing

    from tasks.worldtest.tick import UNSENT

    db = tmp_path / "cut.db"
    server = Killable(tmp_path, db)
    server.start()
    page = browser.new_page()
    try:
        page.goto(f"http://127.0.0.1:{server.port}/play/key_and_door/planning?record=1")
        page.wait_for_function(f"Number(document.querySelector('{GAME}').dataset.tick) > 3",
                               timeout=60000)
        page.locator("[data-gs=grid]").focus()
        server.kill()
        page.wait_for_function(f"document.querySelector('{GAME} [data-gs=message]')"
                               ".textContent.includes('Keys pressed now do nothing')")
        page.keyboard.down("ArrowRight")
        page.wait_for_timeout(4000)
        page.keyboard.up("ArrowRight")
        for key in ("ArrowUp", "ArrowLeft"):
            page.keyboard.press(key)
        pressed = page.evaluate(f"document.querySelector('{GAME}').gridstudy.unsent"
                                ".map(function (k) {{ return k.action; }})")
        server.start()
        tick = int(page.get_attribute(GAME, "data-tick"))
        page.wait_for_function(f"Number(document.querySelector('{GAME}').dataset.tick) > {tick}",
                               timeout=60000)
        said = page.inner_text(f"{GAME} [data-gs=message]")
        page.keyboard.press("ArrowDown")  # joined again: keys act
        page.wait_for_timeout(1000)
    finally:
        page.close()
        server.stop()
    assert len(pressed) >= 15 and pressed[-2:] == ["up", "left"]
    assert said == f"Back. The {len(pressed)} keys pressed while the connection was lost did nothing."
    with closing(sqlite3.connect(db)) as raw:
        kept = raw.execute("SELECT text, status FROM rawinput WHERE reason = ?"
                           " ORDER BY id", (UNSENT,)).fetchall()
        acted = [a for (a,) in raw.execute("SELECT action FROM event WHERE source = 'input'")]
    assert kept == [(action, "dropped") for action in pressed]
    assert acted == ["down"]
    assert "closed for sending too much" not in server.log.read_text()


@pytest.mark.parametrize("play", ["server", "browser"])
def test_a_page_whose_game_another_server_holds_joins_again_until_it_can(tmp_path, browser,
                                                                        play):
    """``kill -9`` of the server mid-game, and before it is back another worker (on
    another host) takes the game's lease and keeps beating without ever handing it over:
    the restarted server's join waits for it, then refuses saying ``retry``. The page,
    played by the server or in the browser, joins again by itself every two seconds and
    goes on once that worker goes silent. Before, it stood still at the first refusal:
    no more frames from the server, or a log nobody stored."""
    import threading

    from sqlalchemy import create_engine

    from study_server.cluster import ADOPT_WAIT, Cluster

    db = tmp_path / "held.db"
    server = Killable(tmp_path, db)
    server.start()
    page = browser.new_page()
    stop = threading.Event()
    progress = "stored" if play == "browser" else "tick"

    def reached() -> int:
        return int(page.get_attribute(GAME, f"data-{progress}") or 0)

    try:
        page.goto(f"http://127.0.0.1:{server.port}/play/{PROBLEM}?play={play}&record=1")
        page.wait_for_function(f"Number(document.querySelector('{GAME}').dataset.{progress})"
                               " > 3", timeout=60000)
        server.kill()
        token = page.evaluate(f"document.querySelector('{GAME}').gridstudy.token")
        wedged = Cluster(create_engine(f"sqlite:///{db}"), worker_id="elsewhere:1:1")
        wedged.beat()
        assert wedged.take(token, wedged.lease(token).worker)

        def beating() -> None:
            while not stop.wait(0.5):
                wedged.beat()

        threading.Thread(target=beating, daemon=True).start()
        server.start()
        page.wait_for_timeout(1000 * ADOPT_WAIT + 4000)  # a join refused, another waiting
        held = reached()
        page.wait_for_timeout(1000)
        assert reached() == held
        stop.set()  # the other worker goes silent: taken for dead after 4 s
        page.wait_for_function(f"Number(document.querySelector('{GAME}').dataset.{progress})"
                               f" > {held}", timeout=30000)
    finally:
        stop.set()
        page.close()
        server.stop()
    assert "held by another server that did not answer" in server.log.read_text()


def test_an_answer_submitted_while_the_server_is_down_is_said_saved_only_once_it_is(
        tmp_path, browser):
    """Masked frame prediction in the browser, the server killed before Submit: the page
    finishes the game at once but says "Saving..." and not "as saved" until the server,
    back on its address, has stored the log; the stored choice is the one submitted."""
    from records.store import Store

    db = tmp_path / "answer.db"
    with killable_game(tmp_path, browser, db, "lamp_grid/mfp") as (server, page):
        page.get_by_role("button", name="Go to test").click()
        page.wait_for_selector(f"{GAME}[data-phase=test]")
        for option in (3, 1, 2, 3, 2):  # as fast as they come
            page.get_by_role("button", name=f"Option {option}", exact=True).click()
        page.wait_for_function(f"Number(document.querySelector('{GAME}').dataset.stored) > 2")
        server.kill()
        page.locator("[data-gs=mfp]").get_by_role("button", name="Submit", exact=True).click()
        page.wait_for_selector(f"{GAME}[data-phase=done]")
        page.wait_for_timeout(500)
        assert page.locator("[data-gs=message]").text_content() == "Saving..."
        assert page.locator("[data-gs=stored]").text_content() == ""  # not saved yet
        server.start()
        page.wait_for_function(
            "document.querySelector('[data-gs=message]').textContent === 'Saved.'",
            timeout=30000)
        assert page.locator("[data-gs=stored]").text_content() == "Your answer, as saved: option 2."
    with Store(str(db)) as store, store.session() as session:
        [row] = session.exec(select(EpisodeRow)).all()
    assert row.info["test_chosen"] == 1 and row.info["verified"] is True


def test_a_refused_batch_is_sent_again_at_the_next_interval_not_at_once(live_server, page):
    """A batch the server refuses (here: the log runs ahead of the server's clock, as
    after the server's clock stepped back or on a worker whose clock is behind) is sent
    again at the page's next interval (once a second). The page used to send it again
    the moment the refusal came, as fast as the round trip allowed: the socket door
    counted the refusals and closed the connection, again and again. Once the clock has
    caught up, everything is stored."""
    from study_server.browser_play import sessions

    open_game(page, live_server)
    page.evaluate(f"""() => {{
        const game = document.querySelector('{GAME}').gridstudy;
        window.logsSent = 0;
        const emit = game.socket.emit.bind(game.socket);
        game.socket.emit = (event, ...rest) => {{
            if (event === 'log') {{ window.logsSent += 1; }}
            return emit(event, ...rest);
        }};
    }}""")
    [played] = sessions(live_server.app).values()
    played.attempt.began += 3600  # the server's clock an hour behind the page's
    sent = page.evaluate("window.logsSent")
    page.wait_for_timeout(3000)
    refused_for_three_seconds = page.evaluate("window.logsSent") - sent
    assert 1 <= refused_for_three_seconds <= 4, refused_for_three_seconds
    assert page.evaluate(f"document.querySelector('{GAME}').gridstudy.socket.connected")
    played.attempt.began -= 3600
    page.wait_for_function(f"(() => {{ const game = document.querySelector('{GAME}'); "
                           "return +game.dataset.stored >= game.gridstudy.local.logged() - 8; })()")
