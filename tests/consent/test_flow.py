"""The participant flow through Flask's test client, stages answered by their simulate mode."""

from __future__ import annotations

import json
import re
import sqlite3
import time

import pytest
from sqlmodel import select

from consent.stages import FlowState
from records.models import EpisodeRow, Participant, Study
from records.store import StoreWriteError
from study_server.app import shutdown
from study_server.arrivals import Arrivals, TooManyArrivals
from tests.consent.helpers import FLOW_PROBLEMS, make_definition, study_app

PROBLEMS = FLOW_PROBLEMS
ENTRY = "/study/pilot?PROLIFIC_PID=abc123&STUDY_ID=s1&SESSION_ID=x9"


@pytest.fixture
def app(tmp_path):
    app = study_app(tmp_path / "flow.db")
    yield app
    shutdown(app)


def current(app, client):
    """The stage and state the flow would show now."""
    with client.session_transaction() as cookie:
        participant_id = cookie["participant:pilot"]
    return app.extensions["gridstudy.flow"].page("pilot", participant_id)


def assigned(db):
    """The study's attempts at its assigned problems (not the practice rounds)."""
    rows = db.exec(select(EpisodeRow).where(EpisodeRow.study_id == "pilot")).all()
    return [row for row in rows if "tutorial" not in (row.info or {})]


def post(client, form):
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/study/pilot/flow").text).group(1)
    return client.post("/study/pilot/flow", data={**form, "csrf_token": token})


def finish_game(app, page):
    """Play the current game to its end on the server: go to test, walk right twice."""
    session = app.extensions["gridstudy.realtime"].get(page.context["token"])
    for action in ("go-to-test", "right", "right", "right"):
        session.enqueue_action(action)
        if session.tick().done:
            return


def answer(app, client, behaviour="pass"):
    page = current(app, client)
    if page.stage.name in ("task", "tutorial"):
        finish_game(app, page)
    return post(client, page.stage.simulate(page.state, behaviour))


def test_whole_flow_ends_on_the_completion_code_then_goes_to_prolific(app):
    client = app.test_client()
    assert client.get(ENTRY).status_code == 302
    seen = []
    while True:
        page = current(app, client)
        if page.stage is None:
            break
        seen.append(page.stage.name)
        response = answer(app, client)
        assert response.status_code == 302, response.text
    assert seen == ["consent", "screening", "instructions", "tutorial", "quiz", "task", "attention", "task", "debrief"]
    final = client.get("/study/pilot/flow")
    link = "https://app.prolific.com/submissions/complete?cc=DONE1234"
    assert final.status_code == 200 and "<strong data-code>DONE1234</strong>" in final.text
    assert f'content="5;url={link}"' in final.text and f'href="{link}"' in final.text
    with app.extensions["gridstudy.store"].session() as db:
        participant = db.exec(select(Participant)).one()
        episodes = db.exec(select(EpisodeRow).order_by(EpisodeRow.id)).all()
    assert (participant.status, participant.consent_version, participant.prolific_session_id) == ("complete", "v1", "x9")
    assert [r["stage"] for r in participant.data["records"]] == seen
    assert [(e.status, e.included) for e in episodes] == [("done", True), ("done", True), ("done", False)]
    assert episodes[2].exclusion_reason == "tutorial"
    assert {e.study_id for e in episodes} == {"pilot"}  # the tutorial belongs to the study too


def test_a_nul_pasted_into_the_last_page_costs_nothing(app):
    """A NUL in a form is stored as U+FFFD (guarantee 1.13): the participant pasted it
    into the debrief's comment and gets the completion code; before, the page was a bare
    400 and the visit stayed unfinished."""
    client = app.test_client()
    client.get(ENTRY)
    while current(app, client).stage.name != "debrief":
        assert answer(app, client).status_code == 302
    response = post(client, {"feedback": "copied\x00from a PDF"})
    assert response.status_code == 302, response.text
    assert "DONE1234" in client.get("/study/pilot/flow").text
    with app.extensions["gridstudy.store"].session() as db:
        participant = db.exec(select(Participant)).one()
    assert participant.status == "complete"
    assert participant.data["records"][-1]["feedback"] == "copied\ufffdfrom a PDF"
    # a NUL in the link is still refused: nobody types one into an address
    assert client.get("/study/pilot?PROLIFIC_PID=%00a").status_code == 400


def test_one_address_brings_at_most_thirty_new_participants_in_ten_minutes(app):
    """Made-up Prolific ids from one address: one client made 30 participants a second,
    each counted as arrived and able to hold problems' slots. The 31st new one within
    the window is asked to come back later; people already in, other addresses and the
    server's own machine are not held up."""
    def enter(pid, address):
        return app.test_client().get(f"/study/pilot?PROLIFIC_PID={pid}",
                                     environ_base={"REMOTE_ADDR": address})

    bot, other = "203.0.113.7", "198.51.100.4"
    assert [enter(f"made{i}", bot).status_code for i in range(30)] == [302] * 30
    refused = enter("made30", bot)
    assert refused.status_code == 429 and 0 < int(refused.headers["Retry-After"]) <= 600
    assert refused.text.count("Please try again in 10 minutes") == 1  # said once
    assert enter("made3", bot).status_code == 302  # already in: never counted again
    assert enter("someone", other).status_code == 302
    assert all(enter(f"local{i}", "127.0.0.1").status_code == 302 for i in range(40))
    with app.extensions["gridstudy.store"].session() as db:
        ids = set(db.exec(select(Participant.external_id)).all())
    assert "made30" not in ids and len(ids) == 30 + 1 + 40


def test_an_address_brings_new_participants_again_as_its_window_moves_on():
    now = [0.0]
    arrivals = Arrivals(limit=2, window=600.0, clock=lambda: now[0])
    arrivals.admit("203.0.113.7")
    now[0] = 100.0
    arrivals.admit("203.0.113.7")
    with pytest.raises(TooManyArrivals) as refused:
        arrivals.admit("203.0.113.7")
    assert refused.value.retry_after == 500.0
    arrivals.admit("2001:db8::1")  # another address
    arrivals.admit("2001:db8::2")  # its /64: one home network
    with pytest.raises(TooManyArrivals):
        arrivals.admit("2001:db8::ffff:1")
    now[0] = 600.0  # the first left the window
    arrivals.admit("203.0.113.7")
    assert len(arrivals.order) == 4 and list(arrivals.seen["203.0.113.7"]) == [100.0, 600.0]
    arrivals.admit("::1")  # loopback: never counted
    assert len(arrivals.order) == 4


def test_the_study_file_sets_the_order_of_the_stages(app):
    definition = make_definition(stages=["consent", "screening", "quiz", "tasks"], attention_checks=False)
    with app.extensions["gridstudy.store"].session() as db:
        db.get(Study, "pilot").definition = definition.to_dict()
    client = app.test_client()
    client.get(ENTRY)
    seen = []
    while (page := current(app, client)).stage is not None:
        seen.append(page.stage.name)
        assert answer(app, client).status_code == 302
    assert seen == ["consent", "screening", "quiz", "task", "task"]
    with app.extensions["gridstudy.store"].session() as db:
        participant = db.exec(select(Participant)).one()
        episodes = db.exec(select(EpisodeRow).order_by(EpisodeRow.id)).all()
    assert participant.status == "complete"
    assert [(e.status, e.included) for e in episodes] == [("done", True), ("done", True)]


def test_declining_consent_shows_the_screenout_code(app):
    client = app.test_client()
    client.get(ENTRY)
    answer(app, client, "fail")
    page = client.get("/study/pilot/flow")
    assert "SCREEN99" in page.text and "chose not to take part" in page.text
    with app.extensions["gridstudy.store"].session() as db:
        assert db.exec(select(Participant.status)).one() == "declined"


def test_quiz_failed_twice_screens_out_and_releases_the_slots(app):
    client = app.test_client()
    client.get(ENTRY)
    for _ in range(4):  # consent, screening, instructions, tutorial
        answer(app, client)
    retry = answer(app, client, "fail")
    assert retry.status_code == 200 and "You have 1 try left" in retry.text
    assert current(app, client).stage.name == "quiz"
    answer(app, client, "fail")
    with app.extensions["gridstudy.store"].session() as db:
        participant = db.exec(select(Participant)).one()
        held = assigned(db)
    assert participant.status == "failed-quiz"
    assert {row.status for row in held} == {"abandoned"}


def test_an_empty_quiz_costs_no_try_and_a_wrong_one_says_which(app):
    client = app.test_client()
    client.get(ENTRY)
    for _ in range(4):  # consent, screening, instructions, tutorial
        answer(app, client)
    empty = post(client, {})
    assert empty.status_code == 200 and "You have 2 tries left" in empty.text
    assert "did not use a try" in empty.text
    form = current(app, client).stage.simulate(current(app, client).state)
    form["reset"] = "0"
    wrong = post(client, form)
    assert "You have 1 try left" in wrong.text
    assert "What does the Reset button do?" in wrong.text.split("Not right yet")[1][:300]
    assert '<details class="reread" open>' in wrong.text and "How the study" not in wrong.text
    assert "Each game has two parts" in wrong.text  # the instructions, one click away
    assert 'name="tick" value="1" checked' in wrong.text  # answers are kept


def test_missing_prolific_id_and_forged_form_are_refused(app):
    client = app.test_client()
    assert client.get("/study/pilot").status_code == 400
    client.get(ENTRY)
    assert client.post("/study/pilot/flow", data={"choice": "agree"}).status_code == 400


def test_the_link_as_given_to_prolific_says_how_to_try_the_study(app):
    """A researcher opening the study's link as the server printed it, Prolific's
    placeholders still in it, to try their study: told what the link is and how to try
    it, and no participant is made. Before: "This Prolific id is not valid"."""
    from records.models import Participant

    client = app.test_client()
    page = client.get("/study/pilot?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
                      "&SESSION_ID={{%SESSION_ID%}}")
    text = page.get_data(as_text=True)
    assert page.status_code == 400 and "as it is given to Prolific" in text
    assert "PROLIFIC_PID=try-1" in text
    with app.extensions["gridstudy.store"].session() as db:
        assert db.exec(select(Participant)).all() == []


def test_returning_participant_resumes_at_the_same_stage(app):
    client = app.test_client()
    client.get(ENTRY)
    answer(app, client)
    answer(app, client)
    other_browser = app.test_client()
    other_browser.get(ENTRY)
    assert current(app, other_browser).stage.name == "instructions"


def test_one_person_arriving_ten_times_at_once_is_one_participant(tmp_path):
    """The study's link opened ten times at the same instant by one person (a double
    click, a link opened in two tabs, a browser fetching it ahead) on a real server:
    one participant row, and every answer is that participant's consent page. Before,
    each arrival looked for the person, found nobody yet and made a row: ten made four
    to ten, each a participant of its own in the record, the dashboard and the analysis."""
    from contextlib import closing

    import httpx

    from tests.consent.helpers import at_once, serving_demo_study

    def arrive() -> httpx.Response:
        with httpx.Client(timeout=60, follow_redirects=True) as browser:
            return browser.get(f"{url}/study/demo?PROLIFIC_PID=5f0123456789abcdef012345"
                               "&STUDY_ID=s1&SESSION_ID=x9")

    with serving_demo_study(tmp_path) as (url, db):
        pages = at_once(10, arrive)
    assert [page.status_code for page in pages] == [200] * 10
    stages = {re.search(r'data-stage="([^"]+)"', page.text).group(1) for page in pages}
    assert stages == {"consent"}
    with closing(sqlite3.connect(db)) as raw:
        assert raw.execute("SELECT count(*) FROM participant").fetchone() == (1,)


def test_a_form_sent_twice_at_once_is_answered_once(tmp_path):
    """A participant double-clicks on a real server: "I agree" sent twice at the same
    instant moves them on to the colour screening, once; a wrong quiz answer sent twice
    costs one of its two tries, so they may try again, and both clicks' pages say what was
    wrong (before, the second's said nothing). Before, each click moved them on:
    the screening was skipped every time, and the double click on a wrong answer spent
    both tries and screened them out."""
    from contextlib import closing

    from consent import quiz
    from tests.consent.helpers import at_once, serving_demo_study
    from tests.study_server.people import Person

    def sql(query: str, **params) -> list:
        with closing(sqlite3.connect(db, timeout=30)) as raw:
            return raw.execute(query, params).fetchall()

    def twice(person: Person, answers: dict[str, str]) -> list:
        page = person.get("/study/demo/flow").text
        form = {**answers, **dict(re.findall(r'name="(csrf_token|answering)" value="([^"]+)"',
                                             page))}
        return at_once(2, lambda: person.http.post("/study/demo/flow", data=form))

    def stage(person: Person) -> str:
        page = person.get("/study/demo/flow").text
        return re.search(r'data-stage="([^"]*)"', page).group(1)

    stages = ["consent", "screening", "quiz", "tasks"]
    with serving_demo_study(tmp_path, stages=stages) as (url, db):
        person = Person(url, "demo", "5f0123456789abcdef012345", [], sql)
        person.arrive()
        twice(person, {"choice": "agree"})
        assert stage(person) == "screening"
        [(records,)] = sql("SELECT data FROM participant")
        assert [r["stage"] for r in json.loads(records)["records"]] == ["consent"]
        person.problems = ["lamp_grid/planning", "cloud_burst/planning", "crate_push/planning"]
        person.post(person.screening_answers())
        assert stage(person) == "quiz"
        right = quiz.right_answers(quiz.questions_for(["planning"]))
        shown = twice(person, {name: str((int(value) + 1) % 3) for name, value in right.items()})
        page = person.get("/study/demo/flow").text
        assert 'data-stage="quiz"' in page and "You have 1 try left" in page
        # both answers say what was wrong: the browser shows the second click's
        assert [("Not right yet" in answer.text) for answer in shown] == [True, True]


def test_flow_state_needs_no_database():
    state = FlowState(make_definition(), 7, ["test/p0"], {"test/p0": "planning"}, palette=["black", "gold"])
    from consent.stages import Screening

    stage = Screening(items=4, min_correct=4)
    assert stage.evaluate(state, stage.simulate(state, "pass")).status == "continue"
    assert stage.evaluate(state, stage.simulate(state, "fail")).status == "screened-out"


def walk_to_first_task(app, client):
    client.get(ENTRY)
    while current(app, client).stage.name != "task":
        answer(app, client)
    return current(app, client)


def test_session_lost_by_the_server_is_rebuilt_by_replay(app):
    client = app.test_client()
    page = walk_to_first_task(app, client)
    scheduler = app.extensions["gridstudy.realtime"]
    session = scheduler.get(page.context["token"])
    for action in ("right", "go-to-test"):
        session.enqueue_action(action)
        session.tick()
    session.tick()  # an automatic noop
    frame = session.episode.observation.frame
    scheduler.remove(session.token)  # as after a restart: only the store remembers
    rebuilt = scheduler.get(current(app, client).context["token"])
    assert rebuilt is not session and rebuilt.episode_id == session.episode_id
    assert (rebuilt.episode.phase, rebuilt.episode.observation.frame, rebuilt.recorder.seq) == ("test", frame, 3)
    rebuilt.enqueue_action("right")
    rebuilt.tick()
    events = app.extensions["gridstudy.store"]
    events.flush()
    from records.models import Event

    with events.session() as db:
        rows = db.exec(select(Event).where(Event.episode_id == session.episode_id).order_by(Event.seq)).all()
    assert [(e.seq, e.action, e.source) for e in rows] == [
        (0, "right", "input"), (1, "go-to-test", "input"), (2, "noop", "auto"), (3, "right", "input")]


def test_time_limit_ends_the_visit_and_releases_the_slots(app):
    client = app.test_client()
    walk_to_first_task(app, client)
    from datetime import timedelta

    from records.models import utcnow

    with app.extensions["gridstudy.store"].session() as db:
        participant = db.exec(select(Participant)).one()
        participant.created_at = utcnow() - timedelta(minutes=61)
    page = client.get("/study/pilot/flow")
    assert "The time allowed for this study has passed" in page.text and "SCREEN99" in page.text
    with app.extensions["gridstudy.store"].session() as db:
        rows = assigned(db)
        status = db.exec(select(Participant.status)).one()
    assert status == "timed-out"
    assert [(r.status, r.included) for r in rows] == [("abandoned", False), ("abandoned", False)]


def test_a_row_the_writer_gives_up_on_does_not_break_a_participants_form(app, tmp_path):
    store = app.extensions["gridstudy.store"]
    with sqlite3.connect(tmp_path / "flow.db") as operator:
        operator.execute("alter table event rename to event_kept")  # a careless operator
    store.write_events([{"episode_id": 1, "seq": 0, "problem_id": "p", "phase": "test",
                         "source": "agent", "server_time": 1.0}])
    store.wait(timeout=30)
    client = app.test_client()
    client.get(ENTRY)
    assert answer(app, client).status_code == 302  # the consent form, after the failed row
    assert current(app, client).stage.name == "screening"
    with sqlite3.connect(tmp_path / "flow.db") as operator:
        operator.execute("alter table event_kept rename to event")
    with pytest.raises(StoreWriteError, match="no such table: event"):
        store.flush()  # reported to whoever asks (the operator's export, the shutdown)


CODES = {"completed": "FIN0001", "no_consent": "NOC0002", "screened_out": "SCR0003",
         "failed_quiz": "QUI0004", "timed_out": "TIM0005", "study_full": "FUL0006",
         "study_closed": "CLO0007"}


@pytest.fixture
def coded(tmp_path):
    app = study_app(tmp_path / "codes.db", codes=CODES)
    yield app
    shutdown(app)


def shown_code(page) -> str:
    return re.search(r"<strong data-code>([^<]+)</strong>", page.text).group(1)


def test_every_ending_shows_its_own_code_with_a_copy_button(coded):
    app = coded
    ends = {}
    client = app.test_client()  # declines consent
    client.get("/study/pilot?PROLIFIC_PID=p-no&SESSION_ID=a")
    answer(app, client, "fail")
    ends["declined"] = client.get("/study/pilot/flow")
    client = app.test_client()  # fails the quiz twice
    client.get("/study/pilot?PROLIFIC_PID=p-quiz&SESSION_ID=b")
    for _ in range(4):
        answer(app, client)
    answer(app, client, "fail")
    answer(app, client, "fail")
    ends["failed-quiz"] = client.get("/study/pilot/flow")
    client = app.test_client()  # completes
    client.get("/study/pilot?PROLIFIC_PID=p-done&SESSION_ID=c")
    while current(app, client).stage is not None:
        answer(app, client)
    ends["complete"] = client.get("/study/pilot/flow")
    with app.extensions["gridstudy.store"].session() as db:
        db.get(Study, "pilot").status = "closed"
    ends["closed"] = app.test_client().get("/study/pilot?PROLIFIC_PID=p-late&SESSION_ID=d")
    assert {status: shown_code(page) for status, page in ends.items()} == {
        "declined": "NOC0002", "failed-quiz": "QUI0004", "complete": "FIN0001",
        "closed": "CLO0007"}
    for page in ends.values():
        assert page.status_code == 200 and 'data-copy="' in page.text and "Return to Prolific" in page.text
    assert "url=https://app.prolific.com" in ends["complete"].text  # goes on by itself
    assert "url=" not in ends["declined"].text
    with app.extensions["gridstudy.store"].session() as db:
        given = {p.external_id: p.code for p in db.exec(select(Participant)).all()}
    assert given == {"p-no": "NOC0002", "p-quiz": "QUI0004", "p-done": "FIN0001"}


def test_a_study_file_without_codes_keeps_the_two_codes():
    definition = make_definition()
    assert [definition.code_for(s) for s in ("complete", "declined", "failed-quiz", "full")] == [
        "DONE1234", "SCREEN99", "SCREEN99", "SCREEN99"]


def away_past_the_abandon_timeout(app, client):
    """The participant at their first game leaves it, and the abandon timeout releases
    the attempt as it does a silent one: the attempt's id and problem."""
    from datetime import timedelta

    from records.models import utcnow
    from study_server import assignment

    client.get(ENTRY)
    while current(app, client).stage.name != "task":
        answer(app, client)
    page = current(app, client)
    store = app.extensions["gridstudy.store"]
    store.flush()
    with store.session() as db:
        _, definition = assignment.load_study(db, "pilot")
        released = assignment.release_stale(db, "pilot", definition, utcnow() + timedelta(hours=1))
    assert page.context["episode_id"] in released
    return page.context["episode_id"], page.context["problem_id"]


def test_a_participant_back_after_the_abandon_timeout_plays_an_unseen_problem(app):
    client = app.test_client()
    released, problem = away_past_the_abandon_timeout(app, client)
    page = current(app, client)
    assert page.stage.name == "task" and page.context["token"] is not None
    assert page.context["episode_id"] != released
    with app.extensions["gridstudy.store"].session() as db:
        seen = {row.problem_id for row in assigned(db) if row.id != page.context["episode_id"]}
    assert page.context["problem_id"] not in seen  # a problem the participant had not met
    answer(app, client)
    assert current(app, client).stage.name == "attention"
    with app.extensions["gridstudy.store"].session() as db:
        rows = {row.id: row for row in assigned(db)}
    assert (rows[released].status, rows[released].included) == ("abandoned", False)
    assert rows[page.context["episode_id"]].status == "done"


def test_a_participant_back_with_no_problem_left_to_play_goes_on(tmp_path):
    """Every problem is the participant's already: the released game cannot be replaced.
    The page says the game was ended and Continue goes on; before, it showed a game
    that could not start ("please reload"), Continue disabled, on every reload."""
    app = study_app(tmp_path / "flow.db", problems_per_participant=3)
    try:
        client = app.test_client()
        released, _ = away_past_the_abandon_timeout(app, client)
        shown = client.get("/study/pilot/flow").text
        assert "This game was ended, and there is no other to play in its place." in shown
        assert "data-continue >" in shown and 'class="gs-game"' not in shown
        assert post(client, {}).status_code == 302
        assert current(app, client).stage.name == "attention"
        with app.extensions["gridstudy.store"].session() as db:
            assert db.get(EpisodeRow, released).status == "abandoned"
    finally:
        shutdown(app)


def test_a_participant_whose_problem_changed_across_a_restart_plays_another(tmp_path):
    """The participant's game is under way when its problem is edited and the server
    started again: their next page ends that attempt abandoned, with why, and gives them
    a problem they have not met, as after the abandon timeout (the attempt cannot go on:
    replayed on the edited problem it would be a world they never saw)."""
    import dataclasses

    from study_server.app import create_app
    from tasks import registry
    from tests.study_server.test_restart import carried

    db = tmp_path / "flow.db"
    first = study_app(db)
    client = first.test_client()
    client.get(ENTRY)
    while current(first, client).stage.name != "task":
        answer(first, client)
    page = current(first, client)
    session = first.extensions["gridstudy.realtime"].get(page.context["token"])
    session.enqueue_action("right")
    shutdown(first)
    problem = registry.get_problem(page.context["problem_id"])
    registry.add_problem(dataclasses.replace(problem, seed=problem.seed + 1), replace=True)
    second = create_app({"DATABASE_URL": str(db), "TESTING": True})
    try:
        back = carried(client, second)
        now = current(second, back)
        assert now.stage.name == "task" and now.context["token"] is not None
        assert now.context["episode_id"] != page.context["episode_id"]
        assert now.context["problem_id"] != problem.id
        with second.extensions["gridstudy.store"].session() as db_session:
            ended = db_session.get(EpisodeRow, page.context["episode_id"])
        assert (ended.status, ended.included) == ("abandoned", False)
        assert ended.exclusion_reason.startswith("abandoned: its environment changed since it "
                                                 "began (version ")
    finally:
        shutdown(second)
        registry.add_problem(problem, replace=True)


def test_a_study_replaced_while_the_server_runs_is_followed_within_seconds(tmp_path, monkeypatch):
    """A researcher relaxes the study's ``max_round_trip_ms`` with ``gridstudy study create
    --replace --live`` while the server runs, seeing participants sent away for a slow
    connection. The server judges connections on the new limit within
    ``STUDY_REREAD`` seconds. Before, it kept
    the limit it read first until it was restarted."""
    import yaml
    from click.testing import CliRunner

    from study_server import flow as flows
    from study_server.cli import main
    from tests.consent.helpers import definition_data

    monkeypatch.setattr(flows, "STUDY_REREAD", 0.2)
    database = tmp_path / "flow.db"
    app = study_app(database, max_round_trip_ms=150)
    try:
        flow = app.extensions["gridstudy.flow"]
        assert flow.round_trip_limit("pilot") == 150
        study = tmp_path / "study.yaml"
        study.write_text(yaml.safe_dump(definition_data(max_round_trip_ms=400,
                                                        problems=["test/p0", "test/p1"])))
        replaced = CliRunner().invoke(main, ["study", "create", str(study), "--db", str(database),
                                             "--replace", "--live"])
        assert replaced.exit_code == 0, replaced.output
        time.sleep(0.3)
        assert flow.round_trip_limit("pilot") == 400
    finally:
        shutdown(app)
