"""End to end: the answer a participant sees at Submit is the answer stored and scored.

The frame picker of change detection and the options of masked frame prediction are the
page's own until Submit: keys at full speed (41 presses as fast as Playwright sends them,
and a held key repeating) move the label and the picture at once, and Submit sends the
chosen value once, with the submit, at one tick. The episode's stored choice is then read
from the database and compared with what the page showed.
"""

from __future__ import annotations

from dataclasses import replace

from tasks import registry
from tests.e2e.test_endings import answer, consent, open_study
from tests.e2e.test_play import GAME, act, button, click_cell, open_problem, tick_of
from tests.e2e.test_study_flow import play_game

STORED = "[data-gs=stored]"


def label(page) -> int:
    return int(page.locator("[data-gs=cd-frame]").text_content())


def grid_pixels(page) -> str:
    return page.eval_on_selector("canvas[data-gs=grid]", "c => c.toDataURL()")


def stored_info(live_server, episode_id) -> dict:
    return live_server.episode(episode_id).info


def test_the_frame_picker_stores_the_frame_its_label_shows_at_full_key_speed(page, live_server,
                                                                            tmp_path):
    episode_id = open_problem(page, live_server, "test/rt-walker-cd")
    button(page, "Go to test")
    page.wait_for_selector(f"{GAME}[data-phase=test]")
    start = tick_of(page)
    for key in ("ArrowRight", "ArrowRight", "ArrowRight"):
        act(page, lambda key=key: page.keyboard.press(key))
    act(page, lambda: click_cell(page, 0, 4))  # the change shows from here
    act(page, lambda: None, ticks=48 - (tick_of(page) - start))  # some 50 test frames
    shown = grid_pixels(page)
    button(page, "Found the change")
    page.wait_for_selector(f"{GAME}[data-phase=select]")
    last = int(page.locator("[data-gs=cd-last]").text_content())
    assert last >= 45
    # The picker opens on the frame the picture shows: the last one, its label says so.
    assert label(page) == last and grid_pixels(page) == shown

    slider = page.locator("input[data-gs=cd-slider]")
    slider.focus()
    page.keyboard.press("Home")
    assert label(page) == 0
    frame_zero = grid_pixels(page)
    for _ in range(41):  # as fast as keys come: no wait between them
        page.keyboard.press("ArrowRight")
    assert label(page) == 41
    # The picture moved with the label: frame 41 is after the walk and the change, as the
    # last frame is; frame 0 is before them.
    assert grid_pixels(page) == shown != frame_zero
    page.keyboard.down("ArrowLeft")  # held: the browser repeats it
    for _ in range(5):
        page.keyboard.down("ArrowLeft")
    page.keyboard.up("ArrowLeft")
    at_submit = label(page)
    assert at_submit == 35
    page.screenshot(path=str(tmp_path / "cd-picker.png"))
    page.get_by_role("button", name="Submit", exact=True).click()
    page.wait_for_selector(f"{GAME}[data-phase=done]")
    assert page.locator(STORED).text_content() == f"Your answer, as saved: frame {at_submit}."
    page.screenshot(path=str(tmp_path / "cd-done.png"))

    info = stored_info(live_server, episode_id)
    assert info["test_chosen"] == at_submit
    sent = [e.action for e in live_server.events(episode_id) if e.phase == "select"
            and e.source == "input"]
    assert sent == [f"submit_frame_{at_submit}"]  # the choice went once, with the submit
    assert not [r for r in live_server.raw_inputs(episode_id) if r.status != "queued"]


def test_submit_on_frame_zero_is_stored_and_scored(page, live_server):
    episode_id = open_problem(page, live_server, "test/rt-walker-cd")
    button(page, "Go to test")
    act(page, lambda: page.keyboard.press("ArrowRight"))
    button(page, "Found the change")
    page.wait_for_selector(f"{GAME}[data-phase=select]")
    page.locator("input[data-gs=cd-slider]").focus()
    page.keyboard.press("Home")
    page.get_by_role("button", name="Submit", exact=True).click()
    page.wait_for_selector(f"{GAME}[data-phase=done]")
    assert page.locator(STORED).text_content() == "Your answer, as saved: frame 0."
    assert stored_info(live_server, episode_id)["test_chosen"] == 0


def test_an_option_is_the_pages_until_submit_and_submit_without_one_says_what_to_do(
        page, live_server, tmp_path):
    episode_id = open_problem(page, live_server, "test/rt-walker-mfp")
    button(page, "Go to test")
    page.wait_for_selector(f"{GAME}[data-phase=test]")
    mfp = page.locator("[data-gs=mfp]")
    mfp.get_by_role("button", name="Submit", exact=True).click()
    assert page.locator("[data-gs=message]").text_content() == (
        "Choose one of the options first, then press Submit.")
    for option in (3, 6, 2, 5, 4, 1, 6, 2, 4):  # clicked as fast as they come
        page.get_by_role("button", name=f"Option {option}", exact=True).click()
    pressed = [b.get_attribute("aria-label") for b in page.locator(".gs-option").all()
               if b.get_attribute("aria-pressed") == "true"]
    assert pressed == ["Option 4"]
    mfp.get_by_role("button", name="Submit", exact=True).click()
    page.wait_for_selector(f"{GAME}[data-phase=done]")
    assert page.locator(STORED).text_content() == "Your answer, as saved: option 4."
    assert page.locator("[data-gs=score]").text_content() == "0"
    page.screenshot(path=str(tmp_path / "mfp-done.png"))
    info = stored_info(live_server, episode_id)
    assert info["test_chosen"] == 3
    inputs = [e.action for e in live_server.events(episode_id) if e.source == "input"]
    assert inputs == ["go-to-test", "submit_option_3"]


def test_after_a_reload_in_the_picker_the_frame_shown_is_the_one_stored(
        make_live_server, page, test_problems):
    """A participant reloads the page in the change-detection picker (their practice
    game): the page lost the frames it kept, so it asks the server for the frame the
    slider settles on (``choose_frame_N``); what is stored is still what the label says."""
    registry.add_problem(replace(test_problems["cd"], id="test/cd-task"), replace=True)
    live = open_study(make_live_server, problems=["test/p0", "test/cd-task"],
                      tutorials={"planning": "test/p1", "cd": "test/rt-walker-cd"})
    consent(page, live, "p-reload")
    answer(page, live, "p-reload", "Continue")
    page.get_by_role("button", name="Start the practice").click()
    while True:  # the planning practice first, then the change-detection one
        page.wait_for_selector(f"{GAME}[data-phase=interaction]")
        if page.evaluate(f"document.querySelector('{GAME}').gridstudy.state.challenge") == "cd":
            break
        play_game(page)
        page.get_by_role("button", name="Continue").click()
    button(page, "Go to test")
    for key in ("ArrowRight", "ArrowRight"):
        act(page, lambda key=key: page.keyboard.press(key))
    act(page, lambda: None, ticks=8)
    button(page, "Found the change")
    page.wait_for_selector(f"{GAME}[data-phase=select]")
    page.reload()
    page.wait_for_selector(f"{GAME}[data-phase=select]")
    slider = page.locator("input[data-gs=cd-slider]")
    slider.focus()
    page.keyboard.press("Home")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert label(page) == 3
    # the page asked for frame 3 once the slider stopped; the server shows it
    page.wait_for_function(f"document.querySelector('{GAME}').gridstudy.state.test.chosen === 3")
    shown = grid_pixels(page)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowLeft")  # back to frame 3: drawn from what the page now keeps
    assert label(page) == 3 and grid_pixels(page) == shown
    page.get_by_role("button", name="Submit", exact=True).click()
    page.wait_for_selector(f"{GAME}[data-phase=done]")
    assert page.locator(STORED).text_content() == "Your answer, as saved: frame 3."
    episode_id = int(page.get_attribute("body", "data-episode"))
    assert stored_info(live, episode_id)["test_chosen"] == 3
