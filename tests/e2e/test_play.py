"""End to end: Debian's Chromium plays a problem of each challenge on the real server.

Each test presses keys, clicks cells and buttons the way a participant would, waits for
the server's ticks between inputs (the session applies one input per tick), then reads
the database: the exact applied inputs, the idle ticks stored as automatic noops, the
phase changes and the score.
"""

from __future__ import annotations

import json
import time

import pytest

from tasks import registry
from tasks.core import frame_hash
from tasks.worldtest.changes import KEYFRAME_EVERY
from tasks.worldtest.episode import Episode
from tasks.worldtest.problem import Problem
from tests.envs import over_budget_env

GAME = "section.gs-game"


def tick_of(page) -> int:
    return int(page.get_attribute(GAME, "data-tick") or 0)


def act(page, do, ticks: int = 2) -> None:
    """Do something, then wait until ``ticks`` more ticks have been applied (or the
    episode ended: a finished session no longer ticks)."""
    start = tick_of(page)
    do()
    page.wait_for_function(
        f"(game => Number(game.dataset.tick) >= {start + ticks} || game.dataset.phase == 'done')"
        f"(document.querySelector('{GAME}'))")


def open_problem(page, live_server, problem_id: str) -> int:
    """Open the recorded preview; return its episode id."""
    before = set(live_server.scheduler.sessions)
    page.goto(f"{live_server.url}/play/{problem_id}?record=1")
    page.wait_for_selector(f"{GAME}[data-phase=interaction]")
    [token] = set(live_server.scheduler.sessions) - before
    return live_server.scheduler.get(token).episode_id


def click_cell(page, x: int, y: int) -> None:
    grid = page.locator("canvas[data-gs=grid]")
    box = grid.bounding_box()
    cell = box["width"] / 5
    grid.click(position={"x": cell * x + cell / 2, "y": cell * y + cell / 2})


def press(page, key: str) -> None:
    act(page, lambda: page.keyboard.press(key))


def button(page, name: str) -> None:
    act(page, lambda: page.get_by_role("button", name=name, exact=True).click())


def inputs(events) -> list[str]:
    return [e.action for e in events if e.source == "input"]


def phase_changes(events) -> list[tuple[str, str, str]]:
    return [(e.action, e.phase, e.next_phase) for e in events if e.phase != e.next_phase]


def check_record(live_server, episode_id, expected_inputs, expected_changes, score):
    events = live_server.events(episode_id)
    assert inputs(events) == expected_inputs
    assert [e.seq for e in events] == list(range(len(events)))
    assert all(e.applied and e.error is None for e in events)
    idle = [e for e in events if e.source == "auto"]
    assert idle and {e.action for e in idle} == {"noop"}
    assert all(e.client_time is not None for e in events if e.source == "input")
    assert all(e.client_time is None for e in idle)
    assert phase_changes(events) == expected_changes
    assert (events[-1].next_phase, events[-1].score) == ("done", score)
    row = live_server.episode(episode_id)
    assert (row.status, row.phase, row.score) == ("done", "done", score)
    return events


def test_masked_frame_prediction_played_in_the_browser(page, live_server):
    episode_id = open_problem(page, live_server, "test/rt-walker-mfp")
    press(page, "ArrowRight")
    press(page, "ArrowDown")
    act(page, lambda: click_cell(page, 3, 3))
    button(page, "Reset")
    act(page, lambda: None, ticks=4)  # idle: automatic noops
    button(page, "Go to test")
    page.wait_for_selector(f"{GAME}[data-phase=test]")
    button(page, "Step one frame")
    button(page, "Step one frame")
    button(page, "Rewind one frame")
    page.locator("input[data-gs=mfp-slider]").fill("4")  # steps to the last frame
    page.wait_for_function("document.querySelector('[data-gs=mfp-position]').textContent == '4'")
    assert page.locator("[data-gs=mfp-action]").text_content() == "click 0 4"
    button(page, "Option 1")
    assert page.get_by_role("button", name="Option 1").get_attribute("aria-pressed") == "true"
    button(page, "Submit")
    page.wait_for_selector(f"{GAME}[data-phase=done]")
    assert page.locator("[data-gs=score]").text_content() == "1"
    check_record(
        live_server, episode_id,
        ["right", "down", "click 3 3", "reset", "go-to-test", "step", "step", "rewind",
         "step", "step", "step", "submit_option_0"],
        [("go-to-test", "interaction", "test"), ("submit_option_0", "test", "done")],
        1.0,
    )


def test_planning_played_in_the_browser(page, live_server):
    episode_id = open_problem(page, live_server, "test/rt-walker-planning")
    press(page, "ArrowRight")
    button(page, "Reset")
    button(page, "Go to test")
    page.wait_for_selector("[data-gs=goal-panel]:not([hidden])")
    goal = page.locator("canvas[data-gs=goal]").bounding_box()
    grid = page.locator("canvas[data-gs=grid]").bounding_box()
    assert goal["x"] > grid["x"] + grid["width"] - 1  # beside the live grid
    act(page, lambda: click_cell(page, 4, 4))
    for key in ("ArrowRight", "ArrowRight", "ArrowDown", "ArrowDown"):
        press(page, key)
    page.wait_for_selector(f"{GAME}[data-phase=done]")
    check_record(
        live_server, episode_id,
        ["right", "reset", "go-to-test", "click 4 4", "right", "right", "down", "down"],
        [("go-to-test", "interaction", "test"), ("down", "test", "done")],
        1.0,
    )


def test_change_detection_played_in_the_browser(page, live_server):
    episode_id = open_problem(page, live_server, "test/rt-walker-cd")
    act(page, lambda: click_cell(page, 2, 2))
    button(page, "Go to test")
    for key in ("ArrowRight", "ArrowRight", "ArrowRight"):
        press(page, key)
    act(page, lambda: click_cell(page, 0, 4))  # painted red: the change shows
    button(page, "Found the change")
    page.wait_for_selector(f"{GAME}[data-phase=select]")
    events = live_server.events(episode_id)
    test_steps = [e.action for e in events if e.phase == "test"]
    t_star = test_steps.index("click 0 4") + 1
    page.locator("input[data-gs=cd-slider]").fill(str(t_star))
    page.wait_for_function(
        f"document.querySelector('[data-gs=cd-frame]').textContent == '{t_star}'")
    act(page, lambda: None)
    button(page, "Submit")
    page.wait_for_selector(f"{GAME}[data-phase=done]")
    events = check_record(
        live_server, episode_id,
        ["click 2 2", "go-to-test", "right", "right", "right", "click 0 4", "found-change",
         f"submit_frame_{t_star}"],
        [("go-to-test", "interaction", "test"), ("found-change", "test", "select"),
         (f"submit_frame_{t_star}", "select", "done")],
        1.0,
    )
    assert sum(e.phase == "test" and e.source == "auto" for e in events) >= 1


@pytest.mark.parametrize("record", [False, True])
def test_a_preview_records_only_when_asked(page, live_server, record):
    suffix = "?record=1" if record else ""
    page.goto(f"{live_server.url}/play/test/rt-walker-mfp{suffix}")
    page.wait_for_selector(f"{GAME}[data-phase=interaction]")
    press(page, "ArrowRight")
    assert page.locator("[data-gs=phase]").text_content() == "exploring"
    assert bool(live_server.events()) is record


def test_the_problem_list_links_every_registered_problem(page, live_server):
    page.goto(f"{live_server.url}/play/")
    for problem_id in ("test/rt-walker-mfp", "test/rt-walker-planning", "test/rt-walker-cd"):
        assert page.get_by_role("link", name=problem_id, exact=True).count() == 1
    page.goto(f"{live_server.url}/play/no/such-problem")
    assert "no problem 'no/such-problem' is registered" in page.content()


def test_the_controls_work_from_the_keyboard_alone(page, live_server):
    episode_id = open_problem(page, live_server, "test/rt-walker-mfp")
    page.locator("canvas[data-gs=grid]").focus()
    press(page, "ArrowDown")
    page.keyboard.press("Tab")  # Reset
    page.keyboard.press("Tab")  # Go to test
    assert page.evaluate("document.activeElement.textContent") == "Go to test"
    act(page, lambda: page.keyboard.press("Enter"))
    page.wait_for_selector(f"{GAME}[data-phase=test]")
    assert inputs(live_server.events(episode_id)) == ["down", "go-to-test"]
    labels = page.eval_on_selector_all(
        "[data-gs=mfp] button, [data-gs=mfp] input",
        "els => els.map(e => e.getAttribute('aria-label') || e.labels?.[0]?.textContent"
        " || e.textContent)")
    assert all(label and label.strip() for label in labels)


def test_a_step_over_its_budget_stops_the_game_with_a_plain_message(page, live_server):
    problem = Problem("test/rt-over-budget-planning", "test/rt-over-budget", "planning", 0,
                      params={"goal_cells": [[4, 4]], "goal_colours": ["gold"]})
    registry.register_env(problem.env_id, over_budget_env, replace=True)
    registry.add_problem(problem, replace=True)
    try:
        episode_id = open_problem(page, live_server, problem.id)
        press(page, "ArrowRight")
        page.keyboard.press("ArrowLeft")  # its handler asks for 200 million items
        page.wait_for_selector(f"{GAME}[data-stopped=true]")
        message = page.locator("[data-gs=message]").text_content()
        assert "stopped because of a fault in the game itself" in message
        assert page.locator("[data-gs=phase]").text_content() == "stopped"
        live_server.store.flush(timeout=10)
        row = live_server.episode(episode_id)
        events = live_server.events(episode_id)
    finally:
        registry.unregister(env_id=problem.env_id, problem_id=problem.id)
    assert (row.status, row.info["reason"]) == (
        "error", "the environment's step went over its step budget, so this attempt was "
        "stopped (the environment needs fixing, not the player)")
    failed = [e for e in events if not e.applied]
    assert [(e.action, e.source) for e in failed] == [("left", "input")]
    assert failed[0].error.startswith("StepBudgetExceeded: over_budget.sexp:7:29: runtime "
                                      "error: step budget exceeded")
    assert events[-1] == failed[0]  # nothing was played after it


def test_the_page_rebuilds_each_frame_from_changes_and_rejoins_after_a_lost_one(
        page, live_server, test_problems):
    """The server sends what changed since the state before; one change lost on the way
    (dropped here between the server and the page) makes the page join again for the
    whole state, and the page ends on the recorded frame."""
    seen = {"whole": 0, "changes": 0, "dropped": 0, "joins": 0, "version": 0}

    def route(ws):
        server = ws.connect_to_server()

        def from_server(message):
            if isinstance(message, str) and message.startswith('42["state"'):
                state = json.loads(message[2:])[1]
                seen["version"] = max(seen["version"], state["version"])
                if "since" not in state:
                    seen["whole"] += 1
                elif state["version"] >= 20 and not seen["dropped"]:
                    seen["dropped"] += 1
                    return  # lost
                else:
                    seen["changes"] += 1
            ws.send(message)

        def from_page(message):
            if isinstance(message, str) and message.startswith('42["join"'):
                seen["joins"] += 1
            server.send(message)

        server.on_message(from_server)
        ws.on_message(from_page)

    page.route_web_socket("**/socket.io/**", route)
    episode_id = open_problem(page, live_server, "test/rt-walker-planning")
    page.evaluate("document.addEventListener('gridstudy:done', e => window.shown = e.detail)")
    press(page, "ArrowRight")
    act(page, lambda: click_cell(page, 1, 1))
    press(page, "ArrowDown")
    button(page, "Reset")
    deadline = time.monotonic() + 30
    while seen["version"] <= KEYFRAME_EVERY and time.monotonic() < deadline:
        page.wait_for_timeout(100)  # idle, past a periodic whole state
    button(page, "Go to test")
    act(page, lambda: click_cell(page, 4, 4))
    for key in ("ArrowRight", "ArrowRight", "ArrowDown", "ArrowDown"):
        press(page, key)
    page.wait_for_selector(f"{GAME}[data-phase=done]")
    shown = page.evaluate("window.shown.frame")
    events = live_server.events(episode_id)
    assert frame_hash(shown) == events[-1].frame_hash
    assert Episode.replay(test_problems["planning"], [e.action for e in events]).observation.frame == shown
    assert seen["dropped"] == 1 and seen["joins"] == 2  # the first, and the one after the loss
    # the join's whole state, the one after the loss, and at least one periodic one
    assert seen["whole"] >= 3 and seen["changes"] > 4 * seen["whole"]
