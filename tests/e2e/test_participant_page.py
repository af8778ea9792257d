"""What a participant reads and reaches, in Chromium at 1280x720 on the real server: no
internal names; hints that name only the controls the environment reacts to (read from
its program's handlers); every button they need on screen without scrolling, in every
phase of every kind of test; a favicon and no missing file on any page."""

from __future__ import annotations

import pytest

from tests.e2e.test_endings import answer, consent, open_study
from tests.e2e.test_play import GAME, act, button

VIEW = {"width": 1280, "height": 720}


def on_screen(page, locator) -> None:
    """``locator`` is visible and wholly inside the window (no scrolling needed)."""
    locator.wait_for()
    box = locator.bounding_box()
    assert box is not None, locator
    assert box["y"] >= 0 and box["y"] + box["height"] <= VIEW["height"], (locator, box)
    assert box["x"] >= 0 and box["x"] + box["width"] <= VIEW["width"], (locator, box)


def failed_requests(page) -> list[str]:
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    return failed


def status_line(page) -> str:
    return page.inner_text(f"{GAME} .gs-status")


def test_a_practice_game_fits_the_window_and_speaks_plainly(make_live_server, page, tmp_path):
    page.set_viewport_size(VIEW)
    failed = failed_requests(page)
    live = open_study(make_live_server)
    consent(page, live, "p-words")
    answer(page, live, "p-words", "Continue")
    page.get_by_role("button", name="Start the practice").click()
    page.wait_for_selector(f"{GAME}[data-phase=interaction]")
    assert status_line(page).startswith("Planning · exploring")
    for name in ("Reset", "Go to test"):
        on_screen(page, page.get_by_role("button", name=name, exact=True))
    page.screenshot(path=str(tmp_path / "practice-interaction.png"))
    button(page, "Go to test")
    page.wait_for_selector(f"{GAME}[data-phase=test]")
    assert status_line(page).startswith("Planning · the test")
    on_screen(page, page.get_by_role("button", name="Give up", exact=True))
    on_screen(page, page.locator("[data-gs=plan-left]"))
    on_screen(page, page.locator("[data-continue]"))
    page.screenshot(path=str(tmp_path / "practice-test.png"))
    assert failed == []


@pytest.mark.parametrize(("problem", "hint"), [
    ("ant_trail/planning", "Click a cell to act on it."),
    ("brick_breaker/planning", "The up, left and right arrow keys act."),
    ("crate_push/planning", "Arrow keys move."),
])
def test_the_hint_names_only_what_the_program_reacts_to(live_server, page, problem, hint):
    page.goto(f"{live_server.url}/play/{problem}")
    page.wait_for_selector(f"{GAME}[data-phase=interaction]")
    page.wait_for_function(f"document.querySelector('[data-gs=message]').textContent === {hint!r}")
    assert page.get_attribute("canvas[data-gs=grid]", "aria-label") == f"The grid. {hint}"
    guide = page.text_content("[data-gs=guide]")  # names no control, so never contradicts
    assert guide.startswith("Explore freely") and "arrow" not in guide
    assert "click" not in guide.lower()


def test_every_test_kind_keeps_its_buttons_on_screen(live_server, page, tmp_path):
    page.set_viewport_size(VIEW)
    failed = failed_requests(page)
    page.goto(f"{live_server.url}/play/key_and_door/mfp")
    page.wait_for_selector(f"{GAME}[data-phase=interaction]")
    button(page, "Go to test")
    page.wait_for_selector(f"{GAME}[data-phase=test]")
    assert status_line(page).strip() == "Masked frame prediction · the test"
    for name in ("Submit", "Step one frame", "Rewind one frame"):
        on_screen(page, page.get_by_role("button", name=name).first)
    page.screenshot(path=str(tmp_path / "mfp-test.png"))

    page.goto(f"{live_server.url}/play/key_and_door/cd")
    page.wait_for_selector(f"{GAME}[data-phase=interaction]")
    button(page, "Go to test")
    page.wait_for_selector(f"{GAME}[data-phase=test]")
    on_screen(page, page.get_by_role("button", name="Found the change"))
    act(page, lambda: page.get_by_role("button", name="Found the change").click())
    page.wait_for_selector(f"{GAME}[data-phase=select]")
    assert status_line(page).startswith("Change detection · choosing the frame")
    on_screen(page, page.locator("[data-gs=cd-select] button", has_text="Submit"))
    on_screen(page, page.locator("input[data-gs=cd-slider]"))
    page.screenshot(path=str(tmp_path / "cd-select.png"))
    assert failed == []


def test_the_favicon_is_served(live_server):
    import httpx

    for path in ("/favicon.ico", "/static/gridstudy/favicon.svg"):
        answer_ = httpx.get(f"{live_server.url}{path}")
        assert answer_.status_code == 200
        assert answer_.headers["content-type"].startswith("image/svg+xml")
