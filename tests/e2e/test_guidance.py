"""What a participant is told while playing, in Chromium on the real server: what to do in
each phase of each challenge, what keys and clicks do now, the time left in a planning
test, a refusal in plain words that goes away, a goal framed whatever its colours, and a
Give up button that asks first."""

from __future__ import annotations

import pytest

from tasks import registry
from tasks.worldtest.challenge import EXPLORE_FREELY, get
from tests.e2e.test_play import GAME, act, open_problem, press


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
    if challenge == "mfp":  # the counter of this test: the frame shown, of how many
        assert page.is_visible("[data-gs=mfp-position]") and page.is_hidden("[data-gs=plan-left]")
        assert int(page.inner_text("[data-gs=mfp-length]")) > 0
    else:  # planning and change detection: the time left, running down by itself
        first = page.inner_text("[data-gs=plan-left]")
        assert first != "0:00"
        page.wait_for_function(f"document.querySelector('[data-gs=plan-left]').textContent"
                               f" != '{first}'", timeout=8000)
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


GOAL_AND_GRID = """() => ['goal', 'grid'].map(name => {
    const canvas = document.querySelector(`canvas[data-gs=${name}]`);
    return [canvas.width, canvas.height, canvas.toDataURL()]; })"""


def test_the_goal_picture_keeps_its_picture_when_the_window_changes_size(page, live_server,
                                                                         test_problems):
    """The goal beside the grid is drawn at the grid's size over the first test frame
    the page showed: a window made smaller kept the goal at its old size, and one redrawn
    took the frame of that moment as its backdrop."""
    page.set_viewport_size({"width": 1280, "height": 720})
    open_problem(page, live_server, test_problems["planning"].id)
    act(page, lambda: page.click("button[data-gs-action=go-to-test]"))
    page.wait_for_selector("[data-gs=goal-panel]:not([hidden])")
    (goal_w, goal_h, first), (grid_w, grid_h, _) = page.evaluate(GOAL_AND_GRID)
    assert (goal_w, goal_h) == (grid_w, grid_h)
    press(page, "ArrowRight")  # the world moves on
    page.set_viewport_size({"width": 1000, "height": 560})
    page.wait_for_function("document.querySelector('canvas[data-gs=grid]').width < "
                           f"{grid_w}", timeout=5000)
    (goal_w2, goal_h2, _), (grid_w2, grid_h2, _) = page.evaluate(GOAL_AND_GRID)
    assert (goal_w2, goal_h2) == (grid_w2, grid_h2) != (grid_w, grid_h)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.wait_for_function(f"document.querySelector('canvas[data-gs=goal]').width == {goal_w}",
                           timeout=5000)
    assert page.evaluate(GOAL_AND_GRID)[0][2] == first  # the same picture as at first


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


def test_a_held_key_moves_once_per_tick_and_stops_when_released(page, live_server,
                                                                 test_problems):
    problem = test_problems["planning"]
    episode_id = open_problem(page, live_server, problem.id)
    page.focus("[data-gs=grid]")
    page.keyboard.down("ArrowRight")
    page.wait_for_timeout(1500)
    page.keyboard.up("ArrowRight")
    page.wait_for_timeout(1000)  # long enough for a repeat that did not stop to show
    moves = [e for e in live_server.events(episode_id) if e.source == "input"]
    rate = registry.make(problem.env_id).frame_rate
    assert all(e.action == "right" for e in moves)
    assert 0.6 * 1.5 * rate <= len(moves) <= 1.5 * rate + 2, len(moves)
    assert [r for r in live_server.raw_inputs(episode_id) if r.status == "dropped"] == []
    held_until = max(e.server_time for e in moves)
    later = [e for e in live_server.events(episode_id)
             if e.source == "input" and e.server_time > held_until]
    assert later == []


def test_an_input_refused_at_its_tick_is_said_in_plain_words(page, live_server, test_problems):
    open_problem(page, live_server, test_problems["planning"].id)
    # both arrive before the next tick: the second is no longer allowed once the first
    # has moved the episode to its test
    page.evaluate("() => { const game = document.querySelector('section.gs-game');"
                  " for (const action of ['go-to-test', 'reset']) {"
                  " game.gridstudy.socket.emit('input', {token: game.dataset.token, action,"
                  " client_time: Date.now() / 1000}); } }")
    page.wait_for_function("document.querySelector('[data-gs=message]').textContent"
                           " == 'That does not work at this point of the game: use the buttons"
                           " shown.'", timeout=5000)
    assert page.get_attribute(GAME, "data-phase") == "test"


def test_an_exploration_map_shows_moves_budget_goal_and_its_end(page, live_server):
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{live_server.url}/play/dagmap/low-n4?record=1")
    page.wait_for_selector(f"{GAME}[data-phase=test]")
    assert "blue square" in guide(page) and "before your moves run out" in guide(page)
    assert page.is_visible("[data-gs=explore]")
    budget = int(page.inner_text("[data-gs=explore-budget]"))
    assert budget > 0 and page.inner_text("[data-gs=explore-steps]") == "0"
    assert page.inner_text("[data-gs=explore-goal]") == "goal not found yet"
    assert message(page) == "Arrow keys move."  # no clicks on a map
    page.wait_for_timeout(800)  # automatic no-ops cost no move
    assert page.inner_text("[data-gs=explore-steps]") == "0"
    page.focus("[data-gs=grid]")
    for key in ("ArrowRight", "ArrowDown", "ArrowLeft"):
        page.keyboard.press(key)
    page.wait_for_function("document.querySelector('[data-gs=explore-steps]').textContent == '3'")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button[data-gs-action=quit]")
    page.wait_for_selector(f"{GAME}[data-phase=done]")
    assert page.inner_text("[data-gs=ending]") == "You gave up."


def test_the_goal_picture_is_the_same_after_a_reload(page, make_live_server):
    """A participant reloads the page mid-test, after the world moved: the goal beside
    the grid is the one the test states (its first frame with the goal colours), as it
    was before the reload. It was drawn over the first frame the page happened to show,
    so the reloaded page's goal showed the world as it was at the reload."""
    from tests.e2e.test_study_flow import answer_with_simulate, enter, start

    live = start(make_live_server)
    page.set_viewport_size({"width": 1280, "height": 720})
    enter(page, live, "p-goal")
    page.get_by_role("button", name="I agree to take part").click()
    answer_with_simulate(page, live, "Continue")
    page.get_by_role("button", name="Start the practice").click()
    page.wait_for_selector(f"{GAME}[data-phase=interaction]")
    act(page, lambda: page.click("button[data-gs-action=go-to-test]"))
    page.wait_for_selector("[data-gs=goal-panel]:not([hidden])")
    (_, _, goal), (_, _, grid) = page.evaluate(GOAL_AND_GRID)
    press(page, "ArrowDown")  # the world moves on (away from the goal, one step right)
    page.wait_for_function(f"document.querySelector('canvas[data-gs=grid]').toDataURL() != "
                           f"'{grid}'", timeout=5000)
    page.reload()
    page.wait_for_selector(f"{GAME}[data-phase=test]")
    page.wait_for_selector("[data-gs=goal-panel]:not([hidden])")
    (_, _, again), (_, _, moved) = page.evaluate(GOAL_AND_GRID)
    assert moved != grid and again == goal
