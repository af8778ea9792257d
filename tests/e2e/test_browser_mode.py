"""Browser play in Chromium: the page ticks the engine itself and sends its play log;
the server replays it, stores the server's own record and checks every frame. A reload
mid-problem resumes on the same frame."""

from __future__ import annotations

import json

from sqlmodel import select

from records.models import EpisodeRow
from tasks import registry
from tasks.worldtest.verify import frame_hashes

GAME = "section.gs-game"
PROBLEM = "lamp_grid/planning"


def send(page, action):
    page.evaluate(f"document.querySelector('{GAME}').gridstudy.send({json.dumps(action)})")


def open_game(page, live_server):
    page.goto(f"{live_server.url}/play/{PROBLEM}?play=browser")
    page.wait_for_selector(f"{GAME}[data-engine=ready]", timeout=60000)


def attempt(live_server):
    live_server.store.flush(timeout=10)
    with live_server.store.session() as db:
        return db.exec(select(EpisodeRow)).one()


def test_a_problem_played_in_the_browser_is_the_servers_record_frame_for_frame(live_server, page):
    open_game(page, live_server)
    page.locator("[data-gs=grid]").focus()
    page.keyboard.press("ArrowRight")
    page.get_by_role("button", name="Go to test").click()
    page.wait_for_selector(f"{GAME}[data-phase=test]")
    for action in registry.get_problem(PROBLEM).params["plan"]:
        send(page, action)
        page.wait_for_timeout(200)
    page.wait_for_selector(f"{GAME}[data-phase=done]", timeout=30000)
    page.wait_for_function(f"document.querySelector('{GAME}').dataset.verified === 'true'")
    page.wait_for_function("document.querySelector('[data-gs=message]').textContent === 'Finished.'")
    row = attempt(live_server)
    assert row.status == "done" and row.score == 1.0
    assert row.info["play"] == "browser" and row.info["verified"] is True
    events = live_server.events(row.id)
    assert [e.seq for e in events] == list(range(len(events)))
    assert [e.tick for e in events] == list(range(len(events)))  # one event a tick
    assert any(e.source == "auto" for e in events)  # the automatic no-ops, as the server's
    replayed = frame_hashes(registry.get_problem(PROBLEM), [e.action for e in events])
    assert [e.frame_hash for e in events] == replayed[1:]
