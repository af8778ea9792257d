"""A participant's whole visit to the demo study (examples/demo-study.yaml, real library
worlds), in Chromium at 1280x720 on the real server: what each stage says, the
instructions and counter beside every game, every button the participant needs on
screen without scrolling (a wrong quiz try included), no missing file on any page, and a
screenshot of each stage (the README's participant walkthrough is made from them:
``make screenshots``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from sqlmodel import select

from consent.definition import load_definition
from records.models import EpisodeRow, Participant, Study
from tasks import registry
from tasks.worldtest.challenge import EXPLORE_FREELY, get
from tasks.worldtest.episode import env_hint
from tests.e2e.screenshots import shoot
from tests.e2e.test_participant_page import failed_requests, on_screen

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo-study.yaml"
GAME = "section.gs-game"


def simulate(page, live, button, behaviour="pass"):
    """Answer the current stage as its simulate mode says, clicking what a person would
    (the button first checked to be on screen)."""
    with live.store.session() as db:
        participant_id = db.exec(select(Participant.id)).one()
    flow = live.app.extensions["gridstudy.flow"].page("demo", participant_id)
    on_screen(page, page.get_by_role("button", name=button))
    for name, value in flow.stage.simulate(flow.state, behaviour).items():
        page.locator(f'input[name="{name}"][value="{value}"]').check(force=True)
    page.get_by_role("button", name=button).click()


def play_and_give_up(page, folder, name=None):
    """Explore a little, go to the test (checking what each phase says), give up."""
    page.wait_for_selector(f"{GAME}[data-phase=interaction]")
    assert page.inner_text("[data-gs=guide]") == EXPLORE_FREELY
    problem = registry.get_problem(
        page.evaluate(f"document.querySelector('{GAME}').gridstudy.state.problem_id"))
    # the controls this world's program reacts to, nothing more
    assert page.inner_text("[data-gs=message]") == env_hint(registry.make(problem.env_id))
    page.locator("[data-gs=grid]").focus()
    page.keyboard.press("ArrowRight")
    if name:
        shoot(page, folder, f"participant-{name}-explore", full_page=False)
    on_screen(page, page.get_by_role("button", name="Go to test"))
    page.get_by_role("button", name="Go to test").click()
    page.wait_for_selector(f"{GAME}[data-phase=test]")
    challenge = page.evaluate(f"document.querySelector('{GAME}').gridstudy.state.challenge")
    assert page.inner_text("[data-gs=guide]") == get(challenge).guide["test"]
    page.wait_for_selector("[data-gs=goal-panel]:not([hidden])")
    left = page.inner_text("[data-gs=plan-left]")
    assert left != "0:00" and ":" in left
    if name:
        shoot(page, folder, f"participant-{name}-test", full_page=False)
    for needed in (page.get_by_role("button", name="Give up"), page.locator("[data-gs=plan-left]"),
                   page.locator("[data-continue]")):
        on_screen(page, needed)
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Give up").click()
    page.wait_for_selector(f"{GAME}[data-phase=done]")
    assert page.inner_text("[data-gs=ending]") == "You gave up."
    page.locator("[data-continue]:enabled").click()


@pytest.mark.parametrize("play", ["server", "browser"])
def test_a_participant_walks_the_demo_study(make_live_server, page, tmp_path, play, monkeypatch):
    """The same visit whether the server ticks the games or the participant's browser
    does (``play: browser``: the engine loads during the consent, each game is the
    server's record, checked)."""
    definition = replace(load_definition(DEMO, {p.id for p in registry.list_problems()}),
                         play=play)
    if play == "browser":  # the README's screenshots are the server's
        monkeypatch.delenv("GRIDSTUDY_SCREENSHOTS", raising=False)
    live = make_live_server()
    with live.store.session() as db:
        db.add(Study(id="demo", title=definition.title, definition=definition.to_dict()))
    page.set_viewport_size({"width": 1280, "height": 720})
    failed = failed_requests(page)
    page.route("https://app.prolific.com/**", lambda route: route.fulfill(body="Prolific"))
    page.goto(f"{live.url}/study/demo?PROLIFIC_PID=walk-1&STUDY_ID=s&SESSION_ID=x")

    assert "GBP 4.50" in page.inner_text("body")
    shoot(page, tmp_path, "participant-1-consent")
    on_screen(page, page.get_by_role("button", name="I agree to take part"))
    page.get_by_role("button", name="I agree to take part").click()

    assert page.locator(".odd-grid").count() == definition.screening_items
    shoot(page, tmp_path, "participant-2-colour-check")
    simulate(page, live, "Continue")

    assert "Each game has two parts" in page.inner_text("body")
    shoot(page, tmp_path, "participant-3-instructions")
    on_screen(page, page.get_by_role("button", name="Start the practice"))
    page.get_by_role("button", name="Start the practice").click()
    play_and_give_up(page, tmp_path, "4-practice")

    shoot(page, tmp_path, "participant-5-quiz")
    simulate(page, live, "Check my answers", "fail")  # told what was wrong, instructions open
    assert page.locator("p.error").is_visible()
    shoot(page, tmp_path, "participant-5-quiz-again", full_page=False)
    simulate(page, live, "Check my answers")

    assert page.inner_text("h1") == "Game 1 of 2"
    play_and_give_up(page, tmp_path)
    assert "choose the word" in page.inner_text("body")
    shoot(page, tmp_path, "participant-6-attention-check")
    simulate(page, live, "Continue")
    play_and_give_up(page, tmp_path)

    shoot(page, tmp_path, "participant-7-debrief")
    page.fill("#feedback", "The cloud one was hard.")
    on_screen(page, page.get_by_role("button", name="Finish and return to Prolific"))
    page.get_by_role("button", name="Finish and return to Prolific").click()
    assert page.inner_text("[data-code]") == definition.completion_code
    shoot(page, tmp_path, "participant-8-end")
    with live.store.session() as db:
        participant = db.exec(select(Participant)).one()
    assert (participant.status, participant.code) == ("complete", definition.completion_code)
    assert failed == []  # the favicon and every other file each page asks for
    assert [r["stage"] for r in participant.data["records"]] == [
        "consent", "screening", "instructions", "tutorial", "quiz", "task", "attention",
        "task", "debrief"]
    with live.store.session() as db:
        played = [row.info for row in db.exec(select(EpisodeRow).where(
            EpisodeRow.participant_id == participant.id, EpisodeRow.status != "assigned")).all()]
    assert len(played) == 3 and all(info.get("play", "server") == play for info in played)
    if play == "browser":
        assert all(info["verified"] is True for info in played)
        assert "play_fallback" not in participant.data
