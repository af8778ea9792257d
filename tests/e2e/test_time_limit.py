"""The visit's time limit, kept by the server (``study_server/deadlines.py``), in
Chromium on the real server: a participant who closes the tab is ended at the limit with
nobody loading a page, their slots freed; one playing at the limit is sent to the
timed-out ending at once; a restart before the limit changes nothing; every page shows
the time left."""

from __future__ import annotations

import time

from sqlmodel import select

from records.models import EpisodeRow, Participant
from study_server import assignment
from tests.conftest import start_live_server
from tests.e2e.test_endings import answer, arrive, consent, open_study

SWEEP = {"DEADLINE_SWEEP": 0.3}


def person(live, pid):
    with live.store.session() as db:
        return db.exec(select(Participant).where(Participant.external_id == pid)).one()


def held_slots(live, participant_id):
    with live.store.session() as db:
        rows = db.exec(select(EpisodeRow).where(EpisodeRow.participant_id == participant_id))
        return [row for row in rows if row.status in assignment.HOLDING]


def wait_for_status(live, pid, status, within):
    end = time.monotonic() + within
    while time.monotonic() < end:
        if person(live, pid).status == status:
            return
        time.sleep(0.2)
    raise AssertionError(f"{pid} is {person(live, pid).status}, not {status}, after {within} s")


def test_a_visit_left_alone_ends_at_its_limit_without_anyone_loading_a_page(
        make_live_server, page):
    live = open_study(make_live_server, SWEEP, time_limit_minutes=0.1)  # 6 s
    consent(page, live, "p-gone")
    answer(page, live, "p-gone", "Continue")  # screening reserves the problems
    # The next page is there before the tab closes: Chromium can drop a close that races
    # a navigation's commit, and the test would wait on it forever.
    page.get_by_role("button", name="Start the practice").wait_for()
    participant_id = person(live, "p-gone").id
    assert held_slots(live, participant_id)
    page.close()  # the tab is closed and never comes back
    wait_for_status(live, "p-gone", "timed-out", within=15)
    gone = person(live, "p-gone")
    assert gone.code == "END-TIME"
    assert held_slots(live, participant_id) == []


def test_a_participant_playing_at_the_limit_is_sent_to_the_ending_at_once(
        make_live_server, page, tmp_path):
    live = open_study(make_live_server, SWEEP, time_limit_minutes=0.25)  # 15 s
    consent(page, live, "p-playing")
    answer(page, live, "p-playing", "Continue")
    page.get_by_role("button", name="Start the practice").click()
    page.locator(".gs-game").wait_for()
    assert "Time left for the study" in page.inner_text(".time-left")
    page.screenshot(path=str(tmp_path / "game-with-time-left.png"))
    page.keyboard.press("ArrowRight")
    page.locator("[data-code]").wait_for(timeout=25_000)  # no reload: the server sends it
    assert page.inner_text("[data-code]") == "END-TIME"
    assert "time allowed for this study has passed" in page.inner_text("body")
    page.screenshot(path=str(tmp_path / "timed-out-mid-game.png"))
    assert person(live, "p-playing").status == "timed-out"


def test_a_restart_before_the_limit_changes_nothing(make_live_server, page):
    live = open_study(make_live_server, SWEEP, time_limit_minutes=0.1)
    arrive(page, live, "p-restart")
    page.close()
    live.stop()
    again = start_live_server(live.db_path, SWEEP)
    try:
        wait_for_status(again, "p-restart", "timed-out", within=15)
    finally:
        again.stop()


def test_every_page_shows_the_time_left_and_it_runs_down(make_live_server, page):
    live = open_study(make_live_server, time_limit_minutes=30)
    arrive(page, live, "p-clock")
    shown = page.inner_text("[data-time-left]")
    assert shown.startswith(("29:", "30:"))
    page.wait_for_function(
        f"document.querySelector('[data-time-left]').textContent !== '{shown}'")
    agree = page.get_by_role("button", name="I agree to take part")
    agree.click()
    # the next page, once it is there: checked at once, the consent page was sometimes
    # half gone (and checking the consent page's own timer again would prove nothing)
    agree.wait_for(state="detached")
    page.wait_for_selector("[data-time-left]", state="visible")
    assert page.locator("[data-time-left]").is_visible()
