"""Every ending of a visit, in Chromium at 1280x720 on the real server: each shows the code
the study file sets for it, a button that copies it and the link back to Prolific, and
the participant's row keeps the status and the code."""

from __future__ import annotations

import pytest
from playwright.sync_api import Error as PlaywrightError
from sqlmodel import select

from records.models import Participant, Study
from tests.consent.helpers import make_definition, register_walker_problems
from tests.e2e.test_study_flow import PROBLEMS, play_game

CODES = {"completed": "END-DONE", "no_consent": "END-NOCONSENT", "screened_out": "END-SCREEN",
         "failed_quiz": "END-QUIZ", "timed_out": "END-TIME", "study_full": "END-FULL",
         "study_closed": "END-CLOSED", "wrong_device": "END-DEVICE",
         "failed_attention": "END-ATTN"}


def open_study(make_live_server, config=None, **overrides):
    """The real server (``config`` on top of the tests' defaults) holding the pilot study
    (``overrides`` change its definition, ``codes`` adds to :data:`CODES`)."""
    register_walker_problems(PROBLEMS)
    live = make_live_server(config)
    codes = {**CODES, **overrides.pop("codes", {})}
    problems = overrides.pop("problems", ["test/p0", "test/p1"])
    definition = make_definition(problems=problems, codes=codes, **overrides)
    with live.store.session() as db:
        db.add(Study(id="pilot", title=definition.title, definition=definition.to_dict()))
    return live


def arrive(page, live, pid):
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{live.url}/study/pilot?PROLIFIC_PID={pid}&STUDY_ID=s1&SESSION_ID=x-{pid}")


def answer(page, live, pid, button, behaviour="pass"):
    """Answer the participant's current stage as its simulate mode says."""
    with live.store.session() as db:
        participant_id = db.exec(select(Participant.id).where(Participant.external_id == pid)).one()
    flow = live.app.extensions["gridstudy.flow"].page("pilot", participant_id)
    for name, value in flow.stage.simulate(flow.state, behaviour).items():
        page.check(f'input[name="{name}"][value="{value}"]')
    page.get_by_role("button", name=button).click()


def consent(page, live, pid):
    arrive(page, live, pid)
    page.get_by_role("button", name="I agree to take part").click()


def declined(page, live):
    arrive(page, live, "p-declined")
    page.get_by_role("button", name="I do not agree").click()


def screened_out(page, live):
    consent(page, live, "p-screen")
    answer(page, live, "p-screen", "Continue", "fail")


def failed_quiz(page, live):
    consent(page, live, "p-quiz")
    answer(page, live, "p-quiz", "Continue")
    page.get_by_role("button", name="Start the practice").click()
    play_game(page)
    answer(page, live, "p-quiz", "Check my answers", "fail")
    assert "Not right yet" in page.inner_text(".error")
    answer(page, live, "p-quiz", "Check my answers", "fail")


def failed_attention(page, live):
    consent(page, live, "p-careless")
    answer(page, live, "p-careless", "Continue")
    page.get_by_role("button", name="Start the practice").click()
    play_game(page)
    answer(page, live, "p-careless", "Check my answers")
    page.locator("body[data-stage=task]").wait_for()
    play_game(page)
    page.locator("body[data-stage=attention]").wait_for()
    answer(page, live, "p-careless", "Continue", "fail")


def timed_out(page, live):
    consent(page, live, "p-time")
    page.wait_for_timeout(3500)  # the study allows 3 seconds
    try:
        page.reload()
    except PlaywrightError:  # the server's deadline sweep sent the page to its ending first
        pass
    page.wait_for_selector("[data-code]")


def full(page, live):
    for pid in ("p-first", "p-full"):  # the first takes the only places
        consent(page, live, pid)
        answer(page, live, pid, "Continue")


def closed(page, live):
    with live.store.session() as db:
        db.get(Study, "pilot").status = "closed"
    arrive(page, live, "p-late")


def wrong_device(page, live):
    arrive(page, live, "p-phone")
    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_role("button", name="End the study on this device").click()


ENDINGS = [
    (declined, "declined", "no_consent", "chose not to take part", {}),
    (screened_out, "screened-out", "screened_out", "not eligible", {}),
    (failed_quiz, "failed-quiz", "failed_quiz", "after the tries allowed", {}),
    (timed_out, "timed-out", "timed_out", "time allowed for this study has passed",
     {"time_limit_minutes": 0.05}),
    (full, "full", "study_full", "All places in this study have just been filled",
     {"attempts_per_problem": 1}),
    (closed, None, "study_closed", "not taking new participants", {}),
    (wrong_device, "wrong-device", "wrong_device", "needs a computer with a keyboard", {}),
    (failed_attention, "failed-attention", "failed_attention",
     "attention question was not right", {"attention_failure": "end"}),
]


@pytest.mark.parametrize("reach, status, ending, says, overrides", ENDINGS,
                         ids=[e[2] for e in ENDINGS])
def test_each_ending_shows_its_own_code(reach, status, ending, says, overrides,
                                        make_live_server, page):
    live = open_study(make_live_server, **overrides)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live.url)
    reach(page, live)
    code = CODES[ending]
    assert page.inner_text("[data-code]") == code
    assert says in page.inner_text("body")
    assert page.get_attribute("[data-return]", "href") == (
        f"https://app.prolific.com/submissions/complete?cc={code}")
    page.click("[data-copy]")
    page.wait_for_function("document.querySelector('[data-copied]').textContent == 'Copied.'")
    assert page.evaluate("navigator.clipboard.readText()") == code
    with live.store.session() as db:
        people = db.exec(select(Participant).order_by(Participant.id)).all()
    if status is None:
        assert people == []  # a turned-away arrival is not a participant
    else:
        assert (people[-1].status, people[-1].code) == (status, code)


def test_completing_shows_its_code_and_then_goes_to_prolific(make_live_server, page):
    live = open_study(make_live_server, attention_checks=False)
    arrived = []
    page.route("https://app.prolific.com/**", lambda route: (
        arrived.append(route.request.url), route.fulfill(body="back at Prolific")))
    consent(page, live, "p-done")
    answer(page, live, "p-done", "Continue")
    page.get_by_role("button", name="Start the practice").click()
    play_game(page)
    answer(page, live, "p-done", "Check my answers")
    play_game(page)
    play_game(page)
    page.get_by_role("button", name="Finish and return to Prolific").click()
    assert page.inner_text("[data-code]") == CODES["completed"]
    page.get_by_text("back at Prolific").wait_for(timeout=10_000)
    assert arrived == [f"https://app.prolific.com/submissions/complete?cc={CODES['completed']}"]
