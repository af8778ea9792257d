"""What a participant is told while playing, in Chromium on the real server: what to do in
each phase of each challenge, what keys and clicks do now, the time left in a planning
test, a refusal in plain words that goes away, a goal framed whatever its colours, and a
Give up button that asks first."""

from __future__ import annotations

import pytest

from tasks.worldtest.challenge import EXPLORE_FREELY, get
from tests.e2e.test_play import GAME, act, open_problem


def guide(page) -> str:
    return page.inner_text("[data-gs=guide]")


def message(page) -> str:
    return page.inner_text("[data-gs=message]")


@pytest.mark.parametrize("challenge", ["planning", "mfp", "cd"])
def test_each_phase_says_what_to_do(challenge, page, live_server, test_problems):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_problem(page, live_server, test_problems[challenge].id)
    assert guide(page) == EXPLORE_FREELY
    assert page.inner_text("[data-gs=phase]") == "exploring"
    assert message(page) == "Arrow keys move; click a cell to act on it."
    act(page, lambda: page.click("button[data-gs-action=go-to-test]"))
    page.wait_for_selector(f"{GAME}[data-phase=test]")
    assert guide(page) == get(challenge).guide["test"]
    assert page.locator("button[data-gs-action=quit]").inner_text() == "Give up"
    assert "developer" not in page.inner_text("body") and "join:" not in page.inner_text("body")


def test_planning_shows_time_left_a_framed_goal_and_a_plain_refusal(page, live_server,
                                                                   test_problems):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_problem(page, live_server, test_problems["planning"].id)
    act(page, lambda: page.click("button[data-gs-action=go-to-test]"))
    page.wait_for_selector("[data-gs=goal-panel]:not([hidden])")
    assert "framed" in page.inner_text("[data-gs=goal-panel] figcaption")
    first = page.inner_text("[data-gs=plan-left]")
    minutes, seconds = first.split(":")
    assert int(minutes) * 60 + int(seconds) > 0
    page.wait_for_function(
        f"document.querySelector('[data-gs=plan-left]').textContent != '{first}'", timeout=5000)
    # a target cell is outlined in red inside the goal picture
    has_outline = page.evaluate("""() => {
        const canvas = document.querySelector('canvas[data-gs=goal]');
        const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        for (let i = 0; i < data.length; i += 4) {
            if (data[i] > 150 && data[i + 1] < 90 && data[i + 2] < 90) { return true; }
        }
        return false; }""")
    assert has_outline
    page.evaluate("document.querySelector('section.gs-game').gridstudy.socket.emit('input', "
                  "{token: document.querySelector('section.gs-game').dataset.token, "
                  "action: 'jump', client_time: Date.now() / 1000})")
    page.wait_for_function("document.querySelector('[data-gs=message]').textContent"
                           " == 'That was not accepted.'", timeout=5000)
    page.wait_for_function("document.querySelector('[data-gs=message]').textContent"
                           ".startsWith('Arrow keys')", timeout=5000)  # it goes away
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button[data-gs-action=quit]")
    page.wait_for_selector(f"{GAME}[data-phase=done]")
    assert page.inner_text("[data-gs=score]") == "0.0" or page.inner_text("[data-gs=score]") == "0"


def test_giving_up_asks_first(page, live_server, test_problems):
    open_problem(page, live_server, test_problems["planning"].id)
    act(page, lambda: page.click("button[data-gs-action=go-to-test]"))
    page.once("dialog", lambda dialog: dialog.dismiss())
    act(page, lambda: page.click("button[data-gs-action=quit]"))
    assert page.get_attribute(GAME, "data-phase") == "test"  # still playing


def test_an_ending_page_copies_its_code(page, make_live_server, tmp_path):
    from records.models import Study
    from tests.consent.helpers import make_definition, register_walker_problems
    from tests.consent.test_flow import PROBLEMS

    register_walker_problems(PROBLEMS)
    live = make_live_server()
    definition = make_definition(codes={"study_closed": "CLOSED77"})
    with live.store.session() as db:
        db.add(Study(id="pilot", title=definition.title, definition=definition.to_dict(),
                     status="paused"))
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live.url)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{live.url}/study/pilot?PROLIFIC_PID=late-1&SESSION_ID=s")
    assert page.inner_text("[data-code]") == "CLOSED77"
    assert "not taking new participants" in page.inner_text("body")
    page.click("[data-copy]")
    page.wait_for_function("document.querySelector('[data-copied]').textContent == 'Copied.'")
    assert page.evaluate("navigator.clipboard.readText()") == "CLOSED77"
    assert page.get_attribute("[data-return]", "href").endswith("cc=CLOSED77")
