"""A participant in Chromium, from a Prolific-style link to the completion redirect.

The real server (``make_live_server``), the real browser client, small Walker problems
at 8 FPS. Prolific's completion URL is intercepted by a Playwright route, so nothing
leaves the machine. Answers come from each stage's simulate mode, as a bot would give
them; the games are played with real key presses.
"""

from __future__ import annotations

from sqlmodel import select

from records.models import EpisodeRow, Participant, Study
from tests.consent.helpers import make_definition, register_walker_problems

PROBLEMS = ["test/p0", "test/p1", "test/p2", "test/tutorial"]
PROLIFIC = "https://app.prolific.com/**"


def start(make_live_server):
    register_walker_problems(PROBLEMS)
    live = make_live_server()
    definition = make_definition(problems=["test/p0", "test/p1"])
    with live.store.session() as db:
        db.add(Study(id="pilot", title=definition.title, definition=definition.to_dict()))
    return live


def enter(page, live, pid):
    page.goto(f"{live.url}/study/pilot?PROLIFIC_PID={pid}&STUDY_ID=s1&SESSION_ID=sess-{pid}")


def current(live):
    """The flow page of the only participant (for the simulate answers)."""
    with live.store.session() as db:
        participant_id = db.exec(select(Participant.id)).one()
    return live.app.extensions["gridstudy.flow"].page("pilot", participant_id)


def answer_with_simulate(page, live, button):
    flow = current(live)
    for name, value in flow.stage.simulate(flow.state).items():
        page.check(f'input[name="{name}"][value="{value}"]')
    page.get_by_role("button", name=button).click()


def play_game(page, reload_midway=False):
    """Go to the test and walk right until the goal is reached; Continue."""
    game = page.locator(".gs-game")
    game.wait_for()
    page.wait_for_function("document.querySelector('.gs-game').dataset.phase === 'interaction'")
    page.get_by_role("button", name="Go to test").click()
    page.wait_for_function("document.querySelector('.gs-game').dataset.phase === 'test'")
    if reload_midway:
        token = game.get_attribute("data-token")
        page.keyboard.press("ArrowRight")
        page.wait_for_function("Number(document.querySelector('.gs-game').dataset.tick) > 2")
        page.reload()
        page.wait_for_function("document.querySelector('.gs-game').dataset.phase === 'test'")
        assert page.locator(".gs-game").get_attribute("data-token") == token
    for _ in range(6):
        if page.locator("[data-continue]").is_enabled():
            break
        page.locator(".gs-grid").focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(300)
    page.locator("[data-continue]:enabled").click()


def walk_to_first_task(page, live, pid):
    enter(page, live, pid)
    page.get_by_role("button", name="I agree to take part").click()
    answer_with_simulate(page, live, "Continue")
    page.get_by_role("button", name="Start the practice").click()
    play_game(page)
    answer_with_simulate(page, live, "Check my answers")
    page.locator("body[data-stage=task]").wait_for()


def test_participant_walks_from_prolific_link_to_completion(make_live_server, page):
    live = start(make_live_server)
    completed = []
    page.route(PROLIFIC, lambda route: (completed.append(route.request.url),
                                        route.fulfill(body="back at Prolific")))
    walk_to_first_task(page, live, "walker-1")
    play_game(page)
    answer_with_simulate(page, live, "Continue")  # the attention check
    play_game(page)
    page.fill("#feedback", "<script>alert(1)</script> nice")
    page.get_by_role("button", name="Finish and return to Prolific").click()
    page.get_by_text("back at Prolific").wait_for()
    assert completed == ["https://app.prolific.com/submissions/complete?cc=DONE1234"]
    live.store.flush()
    with live.store.session() as db:
        participant = db.exec(select(Participant)).one()
        episodes = db.exec(select(EpisodeRow).order_by(EpisodeRow.id)).all()
    assert (participant.status, participant.external_id, participant.consent_version) == ("complete", "walker-1", "v1")
    assert [r["stage"] for r in participant.data["records"]] == [
        "consent", "screening", "instructions", "tutorial", "quiz", "task", "attention", "task", "debrief"]
    assert participant.data["records"][-1]["feedback"] == "<script>alert(1)</script> nice"
    assert {e.study_id for e in episodes} == {"pilot"}  # the tutorial belongs to it too
    study_rows = [e for e in episodes if "tutorial" not in e.info]
    assert sorted(e.problem_id for e in study_rows) == ["test/p0", "test/p1"]
    assert all((e.status, e.score, e.included) == ("done", 1.0, True) for e in study_rows)
    for row in study_rows:
        events = live.events(row.id)
        assert [e.seq for e in events] == list(range(len(events)))
        assert events[-1].next_phase == "done"


def test_declining_consent_ends_with_the_screenout_code(make_live_server, page):
    live = start(make_live_server)
    enter(page, live, "walker-2")
    page.get_by_role("button", name="I do not agree").click()
    assert page.locator("[data-code]").inner_text() == "SCREEN99"
    assert page.get_by_role("link", name="Return to Prolific").get_attribute("href") == (
        "https://app.prolific.com/submissions/complete?cc=SCREEN99")
    with live.store.session() as db:
        assert db.exec(select(Participant.status)).one() == "declined"
        assert db.exec(select(EpisodeRow)).all() == []


def test_reload_mid_episode_resumes_with_the_event_log_intact(make_live_server, page):
    live = start(make_live_server)
    walk_to_first_task(page, live, "walker-3")
    play_game(page, reload_midway=True)
    page.locator("body[data-stage=attention]").wait_for()
    with live.store.session() as db:
        first = db.exec(select(EpisodeRow).where(EpisodeRow.study_id == "pilot").order_by(EpisodeRow.id)).first()
    events = live.events(first.id)
    assert first.status == "done" and first.score == 1.0
    assert [e.seq for e in events] == list(range(len(events)))
    applied = [e.tick for e in events if e.applied]
    assert applied == list(range(len(applied)))
    assert [e.action for e in events if e.source == "input"][:1] == ["go-to-test"]


def test_a_second_tab_offers_to_continue_here_and_takes_over(make_live_server, page):
    live = start(make_live_server)
    walk_to_first_task(page, live, "walker-tabs")
    page.locator("section.gs-game[data-tick]").wait_for()
    second = page.context.new_page()
    try:
        second.set_viewport_size({"width": 1280, "height": 720})
        second.goto(f"{live.url}/study/pilot/flow")
        button = second.locator("button[data-gs-takeover]")
        button.wait_for()
        assert "open in another tab or window" in second.inner_text("[data-gs=message]")
        assert "join:" not in second.inner_text("body")  # no developer text
        button.click()
        second.wait_for_function(
            "Number(document.querySelector('section.gs-game').dataset.tick) > 0")
        page.wait_for_function("document.querySelector('section.gs-game').dataset.takenOver == '1'")
        assert "continues in another tab" in page.inner_text("[data-gs=message]")
        start_tick = int(second.get_attribute("section.gs-game", "data-tick"))
        second.wait_for_function(
            f"Number(document.querySelector('section.gs-game').dataset.tick) > {start_tick + 2}")
    finally:
        second.close()


def test_a_game_the_researcher_ends_says_so_and_the_page_goes_on(make_live_server, page):
    """A researcher ends the attempt of a participant whose page is open (End session on
    the monitor or the participant's page): the page says the game was ended, then opens
    the flow's page, which says there is no other game in its place (each of the study's
    two problems is the participant's already), and Continue goes on. Before, the game
    stood still for good without a word, and a reload showed a game that never started,
    Continue disabled."""
    from study_server import auth
    from tests.study_server.people import PASSWORD, csrf, researcher

    live = start(make_live_server)
    auth.create_admin(live.store.engine, "researcher", PASSWORD)
    walk_to_first_task(page, live, "walker-ended")
    page.wait_for_function("document.querySelector('.gs-game').dataset.phase === 'interaction'")
    token = page.locator(".gs-game").get_attribute("data-token")
    ended = live.app.extensions["gridstudy.realtime"].get(token).episode_id
    board = researcher(live.url)
    answer = board.post(f"/dashboard/session/{ended}/end", data={
        "reason": "looked stuck", "csrf_token": csrf(board, "/dashboard/")})
    assert answer.status_code == 200
    page.wait_for_function("document.querySelector('.gs-game').dataset.ended === '1'")
    assert "This game was ended by the study" in page.inner_text(".gs-game")
    page.keyboard.press("ArrowRight")  # a key pressed meanwhile does not hide why
    assert "This game was ended by the study" in page.inner_text(".gs-game")
    page.locator("[data-episode-done]").wait_for(timeout=15_000)
    assert "no other to play in its place" in page.inner_text("[data-episode-done]")
    page.locator("[data-continue]:enabled").click()
    page.locator("body[data-stage=attention]").wait_for()
    with live.store.session() as db:
        row = db.get(EpisodeRow, ended)
    assert (row.status, row.included) == ("abandoned", False)
    assert row.exclusion_reason == "ended by researcher: looked stuck"
