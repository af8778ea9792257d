"""A researcher in Chromium on the real server's dashboard: Prolific ids and payments at a
glance, ending a stuck session with a reason (its slot is freed), the audit log, and a
screenshot of each page at 1280x720 (written to $GRIDSTUDY_SCREENSHOTS when set)."""

from __future__ import annotations

from sqlmodel import select

from records.models import Audit, EpisodeRow, Study
from study_server import assignment, auth
from tests.consent.helpers import make_definition, register_walker_problems
from tests.consent.test_flow import PROBLEMS, answer, current
from tests.e2e.screenshots import shoot


def study_at_task(make_live_server, definition, query):
    """The real server with the study and a researcher account, and one participant (the
    ``query`` of their Prolific link) at their first real problem: the server, that
    session's token and the participant's flow cookie (their game is theirs only)."""
    register_walker_problems(PROBLEMS)
    live = make_live_server()
    with live.store.session() as db:
        db.add(Study(id="pilot", title=definition.title, definition=definition.to_dict()))
    auth.create_admin(live.store.engine, "researcher", "correct horse")
    participant = live.app.test_client()
    participant.get(f"/study/pilot?{query}")
    while current(live.app, participant).stage.name != "task":
        answer(live.app, participant)
    return (live, current(live.app, participant).context["token"],
            f"session={participant.get_cookie('session').value}")


def test_a_researcher_pays_and_unsticks_a_study_in_the_browser(make_live_server, page, tmp_path):
    definition = make_definition(bonus={"per_solved": 0.2})
    live, _, _ = study_at_task(make_live_server, definition,
                            "PROLIFIC_PID=5f1e2d3c4b5a&STUDY_ID=st-9&SESSION_ID=se-1")
    with live.store.session() as db:
        stuck = db.exec(select(EpisodeRow).where(EpisodeRow.status == "active",
                                                 EpisodeRow.exclusion_reason.is_(None))).first()
        taken = sum(assignment.fill_counts(db, "pilot", list(definition.problems)).values())

    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{live.url}/")
    assert "sign in to the dashboard" in page.inner_text("body")
    page.click("text=sign in to the dashboard")
    page.fill("input[name=username]", "researcher")
    page.fill("input[name=password]", "correct horse")
    page.click("button[type=submit]")
    page.wait_for_selector("#live")
    row = page.locator("table.participants tr[data-participant]")
    assert "5f1e2d3c4b5a" in row.inner_text() and "se-1" in row.inner_text()
    assert "pending" in row.inner_text()
    shoot(page, tmp_path, "dashboard-studies")

    live_row = page.locator(f'tr[data-live-episode="{stuck.id}"]')
    live_row.locator("input[name=reason]").fill("participant gone for 9 minutes")
    live_row.locator(f'button[data-end="{stuck.id}"]').click()
    page.wait_for_selector("#audit")
    assert page.locator(f'tr[data-live-episode="{stuck.id}"]').count() == 0
    assert "participant gone for 9 minutes" in page.locator("#audit").inner_text()
    with live.store.session() as db:
        assert db.get(EpisodeRow, stuck.id).status == "abandoned"
        assert sum(assignment.fill_counts(db, "pilot", list(definition.problems)).values()) == taken - 1
        assert [a.action for a in db.exec(select(Audit)).all()] == ["end-session"]
    shoot(page, tmp_path, "dashboard-after-ending")

    page.click("table.participants a")
    page.wait_for_selector("table.identity")
    assert "st-9" in page.inner_text("table.identity")
    assert page.locator("#records tr[data-record]").count() >= 4
    shoot(page, tmp_path, "dashboard-participant")
    bonuses = page.request.get(f"{live.url}/dashboard/study/pilot/decisions.csv")
    assert bonuses.ok and "5f1e2d3c4b5a" in bonuses.text()


def test_the_monitor_updates_without_a_reload_while_a_participant_plays(make_live_server, page,
                                                                       tmp_path):
    from tests.conftest import Player

    live, token, cookie = study_at_task(make_live_server, make_definition(),
                                "PROLIFIC_PID=PID-M&STUDY_ID=st&SESSION_ID=se")
    episode_id = live.app.extensions["gridstudy.realtime"].get(token).episode_id

    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{live.url}/dashboard/login")
    page.fill("input[name=username]", "researcher")
    page.fill("input[name=password]", "correct horse")
    page.click("button[type=submit]")
    row = page.locator(f'tr[data-live-episode="{episode_id}"]')
    row.wait_for()
    assert "no" in row.locator("td").nth(10).inner_text()  # not connected yet
    assert "none yet" in row.inner_text()
    page.evaluate("window.loadedOnce = true")
    row.locator("input[name=reason]").fill("half-typed")  # survives the pushes

    player = Player(live.url, token, cookie=cookie).connect()
    try:
        player.join()
        player.send("go-to-test")
        player.wait_ticks(3)
        page.wait_for_function(
            f"""() => {{ const row = document.querySelector('tr[data-live-episode="{episode_id}"]');
                return row && row.cells[10].textContent.includes('yes')
                    && row.cells[6].textContent.includes('test')
                    && row.cells[8].textContent.includes('s ago'); }}""", timeout=10_000)
        tick_before = int(row.locator("td").nth(7).inner_text())
        page.wait_for_function(
            f"""() => Number(document.querySelector('tr[data-live-episode="{episode_id}"]')
                .cells[7].textContent) > {tick_before}""", timeout=10_000)
    finally:
        player.close()
    # A second participant arrives and reads the consent page: listed apart, with the stage.
    newcomer = live.app.test_client()
    newcomer.get("/study/pilot?PROLIFIC_PID=PID-N&STUDY_ID=st&SESSION_ID=sn")
    newcomer.get("/study/pilot/flow")
    waiting = page.locator("#on-pages tr[data-on-page]")
    waiting.wait_for(timeout=10_000)
    assert waiting.locator("td").nth(2).inner_text() == "consent"
    assert page.locator("#on-pages").inner_text().count("consent") == 1  # the player is not there
    assert page.evaluate("window.loadedOnce") is True  # pushed, not reloaded
    assert row.locator("input[name=reason]").input_value() == "half-typed"
    assert row.locator("input.csrf").input_value() != ""
    shoot(page, tmp_path, "dashboard-monitor")
    # The study's own figures and tables are as the page was loaded, and say so: the
    # monitor listed two people while "1 participant" stood below it, with nothing said.
    section = page.locator("section[data-study=pilot]")
    assert "reload it to see who has come" in section.locator(".as-of").inner_text()
    assert "1 participant;" in section.inner_text()
    page.reload()
    assert "2 participants;" in page.locator("section[data-study=pilot]").inner_text()


def test_replay_plays_marks_clicks_and_jumps_to_an_event(make_live_server, page, tmp_path):
    from tests.conftest import Player

    live, token, cookie = study_at_task(make_live_server, make_definition(),
                                "PROLIFIC_PID=PID-R&STUDY_ID=st&SESSION_ID=se")
    episode_id = live.app.extensions["gridstudy.realtime"].get(token).episode_id
    player = Player(live.url, token, cookie=cookie).connect()
    try:
        player.join()
        for action in ("click 2 1", "go-to-test", "right"):
            player.send(action)
            player.wait_ticks(1)
    finally:
        player.close()
    live.store.wait()
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{live.url}/dashboard/login")
    page.fill("input[name=username]", "researcher")
    page.fill("input[name=password]", "correct horse")
    page.click("button[type=submit]")
    page.goto(f"{live.url}/dashboard/episode/{episode_id}")
    rows = page.locator("#events tr[data-index]")
    count = rows.count()
    assert count >= 3
    texts = [rows.nth(i).inner_text() for i in range(count)]
    clicked = next(i for i, text in enumerate(texts) if "click 2 1" in text)
    rows.nth(clicked).click()
    assert "click 2 1" in page.inner_text("#caption")
    cell = page.locator("#frame tr").nth(1).locator("td").nth(2)
    assert cell.get_attribute("class") == "clicked"
    assert page.locator("#events tr.phase-change").count() >= 1  # interaction -> test
    page.select_option("#speed", "8")
    page.click("#play")
    page.wait_for_function(
        f"() => document.querySelector('#events tr.current').dataset.index == '{count - 1}'",
        timeout=15_000)
    assert page.inner_text("#play") == "Play"  # stopped at the end
    shoot(page, tmp_path, "dashboard-replay")


def test_what_a_participant_wrote_keeps_the_participants_page_within_the_window(
        make_live_server, page, tmp_path):
    """A participant's feedback of 2,000 letters with no space (the form's limit) made
    their page on the dashboard 18,582 pixels wide (19,405 with a user agent of 300 letters,
    the longest kept): the researcher scrolled sideways to read any of it. What a
    participant's browser sent wraps."""
    from tests.consent.test_flow import post
    from tests.consent.test_quality import send

    live, _, _ = study_at_task(make_live_server, make_definition(),
                               "PROLIFIC_PID=PID-W&STUDY_ID=st&SESSION_ID=se")
    participant = live.app.test_client()
    participant.get("/study/pilot?PROLIFIC_PID=PID-W&STUDY_ID=st&SESSION_ID=se")
    assert send(participant, [{"kind": "device", "value": {"user_agent": "y" * 300}}]).status_code == 200
    while current(live.app, participant).stage.name != "debrief":
        answer(live.app, participant)
    post(participant, {"feedback": "x" * 2000})
    assert current(live.app, participant).stage is None

    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{live.url}/dashboard/login")
    page.fill("input[name=username]", "researcher")
    page.fill("input[name=password]", "correct horse")
    page.click("button[type=submit]")
    page.click("table.participants a")
    page.wait_for_selector("q.feedback")
    assert page.inner_text("q.feedback") == "x" * 2000  # kept whole, wrapped
    assert "y" * 300 in page.inner_text("body")
    assert "0 periods" in page.inner_text("#quality") and page.inner_text("summary") == "1 signal"
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    shoot(page, tmp_path, "dashboard-participant-long-feedback")
