"""The researcher dashboard: login, live sessions, escaped feedback, export read back."""

from __future__ import annotations

import io
import re
import zipfile

import pytest
from sqlmodel import select

from analysis.load import load
from records.models import Participant, Study
from study_server import auth
from study_server.app import create_app, shutdown
from tests.consent.helpers import make_definition, register_walker_problems
from tests.study_server.people import csrf, exported

PROBLEMS = ["test/p0", "test/p1", "test/p2", "test/tutorial"]


@pytest.fixture
def app(tmp_path):
    register_walker_problems(PROBLEMS)
    app = create_app({"DATABASE_URL": str(tmp_path / "dash.db"), "TESTING": True})
    definition = make_definition()
    store = app.extensions["gridstudy.store"]
    with store.session() as db:
        db.add(Study(id="pilot", title=definition.title, definition=definition.to_dict()))
    auth.create_admin(store.engine, "researcher", "correct horse")
    yield app
    shutdown(app)


def log_in(client, password="correct horse"):
    token = csrf(client, "/dashboard/login")
    return client.post("/dashboard/login", data={"username": "researcher", "password": password,
                                                 "csrf_token": token})


def playing(app, external_id: str, records: list | None = None):
    """A participant of the study at their first attempt: its id, the attempt's and its
    live session (the flow's)."""
    from study_server import assignment, cluster

    store = app.extensions["gridstudy.store"]
    with store.session() as db:
        participant = Participant(study_id="pilot", external_id=external_id,
                                  data={"records": records or []})
        db.add(participant)
        db.flush()
        participant_id = participant.id
    first, _ = assignment.assign(store.engine, "pilot", participant_id)
    return participant_id, first, app.extensions["gridstudy.realtime"].get(
        cluster.live_token(app, first))


def play_one_episode(app):
    """A participant of the study playing test/p0 to its end, through the flow's session."""
    store = app.extensions["gridstudy.store"]
    participant_id, first, session = playing(
        app, "pid-1", [{"stage": "debrief", "feedback": "<b>hi</b>"}])
    for action in ("go-to-test", "right", "right", "right"):
        session.enqueue_action(action)
        if session.tick().done:
            break
    store.flush()
    return participant_id, first, session.problem_id


def test_dashboard_requires_login_and_refuses_a_wrong_password(app):
    client = app.test_client()
    assert client.get("/dashboard/").headers["Location"].startswith("/dashboard/login")
    response = log_in(client, password="wrong")
    assert response.status_code == 200 and "Wrong username or password." in response.text
    assert client.post("/dashboard/login", data={"username": "researcher", "password": "correct horse"}).status_code == 400


def test_logged_in_sees_live_session_fill_and_escaped_feedback(app):
    participant_id, episode_id, problem_id = play_one_episode(app)
    client = app.test_client()
    assert log_in(client).headers["Location"] == "/dashboard/"
    home = client.get("/dashboard/").text
    finished = home.split("Finished, waiting to close:")[1].split("</p>")[0]
    assert f'/dashboard/episode/{episode_id}"' in finished  # played to its end: apart
    assert f'<tr data-problem="{problem_id}"><td>{problem_id}</td><td>1</td><td>1</td><td>5</td></tr>' in home
    timeline = client.get(f"/dashboard/participant/{participant_id}").text
    assert "&lt;b&gt;hi&lt;/b&gt;" in timeline and "<b>hi</b>" not in timeline
    replay = client.get(f"/dashboard/episode/{episode_id}").text
    assert "go-to-test" in replay


def test_export_download_is_read_back_by_analysis(app, tmp_path):
    _, _, problem_id = play_one_episode(app)
    client = app.test_client()
    log_in(client)
    made, _ = exported(client, "pilot")
    board = client.get("/dashboard/").text  # beside its study, with its size as people read it
    assert 'data-export-job="done"' in board and re.search(r"made, \d+\.\d KB</li>", board)
    zipfile.ZipFile(io.BytesIO(made)).extractall(tmp_path / "export")
    dataset = load(tmp_path / "export")
    episodes = list(dataset.records)
    assert [e.problem_id for e in episodes].count(problem_id) == 1
    played = next(e for e in episodes if e.problem_id == problem_id)
    assert [event.action for event in played.events][:2] == ["go-to-test", "right"]


def test_the_dashboard_lists_agent_api_tokens_but_never_the_token(app):
    from study_server import tokens

    engine = app.extensions["gridstudy.store"].engine
    secret = tokens.create(engine, "gpt-eval")
    tokens.create(engine, "old-script")
    tokens.revoke(engine, "old-script")
    client = app.test_client()
    log_in(client)
    page = client.get("/dashboard/").text
    assert 'data-token="gpt-eval"' in page and 'data-token="old-script"' in page
    assert "revoked" in page and secret not in page and tokens.digest(secret) not in page


def test_the_participant_page_shows_data_quality_per_visit_and_per_attempt(app):
    from records.models import Signal

    participant_id, episode_id, _ = play_one_episode(app)
    with app.extensions["gridstudy.store"].session() as db:
        db.add_all([
            Signal(participant_id=participant_id, study_id="pilot", episode_id=episode_id,
                   stage="task", kind=kind, server_time=1.7e9 + i, seconds=seconds, value=value)
            for i, (kind, seconds, value) in enumerate([
                ("device", None, {"user_agent": "Firefox <script>", "window": [800, 600]}),
                ("hidden", None, {}), ("shown", 42.0, {}), ("mashing", None, {"keys": 13})])])
        db.add(Signal(participant_id=participant_id, study_id="pilot", stage="consent",
                      kind="blur", server_time=1.7e9))
    client = app.test_client()
    log_in(client)
    page = client.get(f"/dashboard/participant/{participant_id}").text
    quality = page.split('id="quality"')[1].split("</table>")[0]
    assert "1 time, 42.0 s in all" in quality  # hidden
    assert "<code>Firefox &lt;script&gt;</code>" in quality and "<td>yes</td>" in quality
    attempt = page.split(f'/dashboard/episode/{episode_id}"')[1]
    assert "<td>42.0</td><td>0</td><td>1</td>" in attempt.split("</tr>")[0]
    assert "5 signals" in page and "keys=13" in page


def test_the_study_page_draws_its_fill_and_its_participant_flow(app):
    """The figures read the same tables the counts come from: one more point per
    included attempt on its problem's line, one bar per step someone left at."""
    from xml.etree import ElementTree

    client = app.test_client()
    log_in(client)
    empty = client.get("/dashboard/").text.split('data-figure="fill"')[1].split("</figure>")[0]
    assert "no attempt included yet" in empty  # not a bare axis, as if it were broken
    _, _, problem_id = play_one_episode(app)
    store = app.extensions["gridstudy.store"]
    with store.session() as db:
        db.add_all([Participant(study_id="pilot", external_id=f"x{i}", status=status,
                                exclusion_reason=why)
                    for i, (status, why) in enumerate([("screened-out", None),
                                                       ("screened-out", None),
                                                       ("excluded", "failed 2 attention checks"),
                                                       ("complete", None)])])
    home = client.get("/dashboard/").text
    assert "no attempt included yet" not in home
    figures = {}
    for name in ("fill", "flow"):
        found = re.search(rf'<figure data-figure="{name}">\s*(<svg.*?</svg>)', home, re.S)
        figures[name] = ElementTree.fromstring(found.group(1))
    lines = {line.get("data-problem"): line.get("points").split()
             for line in figures["fill"].iter("{http://www.w3.org/2000/svg}polyline")}
    assert set(lines) == {"test/p0", "test/p1", "test/p2"}  # the tutorial is no problem
    # start, the included attempt, the end of the span; untouched problems stay at start
    assert len(lines[problem_id]) == 3
    assert all(len(points) == 1 for p, points in lines.items() if p != problem_id)
    steps = {g.get("data-step"): "".join(g.itertext()).split()
             for g in figures["flow"].iter("{http://www.w3.org/2000/svg}g")}
    assert list(steps) == ["arrived", "passed screening", "finished", "not excluded", "included"]
    assert steps["arrived"][-1] == "5"  # the one who played (still active) and four more
    assert steps["passed screening"][-2:] == ["3", "(-2)"]
    # the player has not left: still taking part, not a drop
    assert steps["finished"][-5:] == ["2", "(1", "still", "taking", "part)"]
    assert steps["included"][-1] == "1"


def test_the_episode_page_says_the_phase_an_attempt_being_played_is_in(app):
    _, first, session = playing(app, "pid-live")
    session.enqueue_action("go-to-test")
    session.tick()
    app.extensions["gridstudy.store"].flush()
    client = app.test_client()
    log_in(client)
    page = client.get(f"/dashboard/episode/{first}").text
    assert "still being played" in page and "; phase test;" in page


def test_the_replay_sends_each_frame_once_and_every_event_names_its_own(app):
    """200 ticks of a walker that moves now and then: each event names the hash of the
    frame after it, and each frame is sent once (the page of a 10-minute attempt of
    bee_hive held 4.2 MB, its 362 frames repeated over 2,400 events; 1.3 MB now)."""
    import json

    from records.models import Event

    store = app.extensions["gridstudy.store"]
    _, first, session = playing(app, "pid-long")
    for tick in range(200):
        if tick % 40 == 0:
            session.enqueue_action("click 1 1" if tick % 80 else "down")
        session.tick()
    store.flush()
    client = app.test_client()
    log_in(client)
    page = client.get(f"/dashboard/episode/{first}").text
    data = {name: json.loads(re.search(f'<script type="application/json" id="{name}">(.*?)'
                                       "</script>", page, re.S).group(1))
            for name in ("replay-data", "replay-frames")}
    with store.session() as db:
        events = db.exec(select(Event).where(Event.episode_id == first).order_by(Event.seq)).all()
    assert [step["frame"] for step in data["replay-data"]] == [e.frame_hash for e in events]
    assert set(data["replay-frames"]) == {e.frame_hash for e in events}
    assert 2 <= len(data["replay-frames"]) <= 10 < len(events) == 200
    assert page.count('"gold"') == len(data["replay-frames"])  # the walker, once a frame


def test_a_large_studys_index_lists_the_last_arrivals_and_its_list_pages_them_all(app):
    """1,100 participants: the index shows the 50 who arrived last, newest first, and
    links the study's participant list, which shows them all in arrival order, 500 a
    page; a page past the last is a 404, a study nobody made too."""
    from study_server.dashboard import INDEX_PARTICIPANTS, PAGE_PARTICIPANTS

    store = app.extensions["gridstudy.store"]
    with store.session() as db:
        db.add_all(Participant(study_id="pilot", external_id=f"pid-{n}") for n in range(1, 1101))
    client = app.test_client()
    assert client.get("/dashboard/study/pilot/participants").status_code == 302  # log in first
    log_in(client)
    rows = re.compile(r'<tr data-participant="(\d+)">')

    index = client.get("/dashboard/").text
    assert INDEX_PARTICIPANTS == 50 and PAGE_PARTICIPANTS == 500
    assert [int(n) for n in rows.findall(index)] == list(range(1100, 1050, -1))
    assert "The 50 who arrived last, newest first; all 1100 on" in index
    assert 'href="/dashboard/study/pilot/participants"' in index
    assert "1100 participants;" in index  # the counts are the whole study's

    pages = [client.get(f"/dashboard/study/pilot/participants?page={k}") for k in (1, 2, 3)]
    assert [page.status_code for page in pages] == [200, 200, 200]
    shown = [[int(n) for n in rows.findall(page.text)] for page in pages]
    assert shown == [list(range(1, 501)), list(range(501, 1001)), list(range(1001, 1101))]
    assert "1001 to 1100 of 1100, in arrival order; page 3 of 3." in pages[2].text
    assert 'rel="prev"' in pages[2].text and 'rel="next"' not in pages[2].text
    assert 'rel="next"' in pages[0].text and 'rel="prev"' not in pages[0].text
    assert client.get("/dashboard/study/pilot/participants").text == pages[0].text
    assert client.get("/dashboard/study/pilot/participants?page=4").status_code == 404
    assert client.get("/dashboard/study/pilot/participants?page=0").status_code == 404
    assert client.get("/dashboard/study/nope/participants").status_code == 404


def test_a_large_studys_index_lists_the_last_excluded_attempts_and_its_list_pages_them_all(app):
    """620 excluded attempts, and excluded practice rounds: the index shows the 50 most
    recent attempts, newest first, and links the study's excluded attempts, 500 a page,
    in the order they were made; practice rounds are on neither (the index listed every
    excluded attempt, the way it listed every participant)."""
    from records.models import EpisodeRow

    store = app.extensions["gridstudy.store"]
    with store.session() as db:
        person = Participant(study_id="pilot", external_id="pid-1")
        db.add(person)
        db.flush()
        db.add_all(EpisodeRow(study_id="pilot", participant_id=person.id, status="done",
                              problem_id="test/tutorial" if n % 7 == 0 else f"test/p{n % 3}",
                              env_id="test/walker", challenge="planning", seed=n,
                              included=n % 2 == 1, exclusion_reason=f"reason {n}")
                   for n in range(1, 1500))
    with store.session() as db:
        excluded = [row.id for row in db.exec(select(EpisodeRow).order_by(EpisodeRow.id))
                    if not row.included and row.problem_id != "test/tutorial"]
    assert len(excluded) == 642
    client = app.test_client()
    assert client.get("/dashboard/study/pilot/excluded").status_code == 302  # log in first
    log_in(client)
    rows = re.compile(r'<tr data-excluded="(\d+)">')

    index = client.get("/dashboard/").text
    assert [int(n) for n in rows.findall(index)] == excluded[::-1][:50]
    assert "The 50 most recent attempts, newest first; all 642 on" in index
    assert 'href="/dashboard/study/pilot/excluded"' in index

    pages = [client.get(f"/dashboard/study/pilot/excluded?page={k}") for k in (1, 2)]
    assert [int(n) for page in pages for n in rows.findall(page.text)] == excluded
    assert "501 to 642 of 642, in the order they were made; page 2 of 2." in pages[1].text
    assert f"reason {excluded[-1]}" in pages[1].text
    assert 'href="/dashboard/participant/1"' in pages[0].text
    assert client.get("/dashboard/study/pilot/excluded?page=3").status_code == 404
    assert client.get("/dashboard/study/nope/excluded").status_code == 404
    with store.session() as db:
        db.add(Study(id="empty", title="nobody", definition=make_definition(id="empty").to_dict()))
    assert "None yet." in client.get("/dashboard/study/empty/excluded").text


def test_a_small_studys_index_lists_everyone_and_its_list_says_nobody_yet(app):
    store = app.extensions["gridstudy.store"]
    with store.session() as db:
        db.add_all(Participant(study_id="pilot", external_id=f"pid-{n}") for n in range(1, 4))
    client = app.test_client()
    log_in(client)
    index = client.get("/dashboard/").text
    assert re.findall(r'<tr data-participant="(\d+)">', index) == ["3", "2", "1"]
    assert "who arrived last" not in index
    with store.session() as db:
        db.add(Study(id="empty", title="nobody", definition=make_definition(id="empty").to_dict()))
    listed = client.get("/dashboard/study/empty/participants").text
    assert "Nobody yet." in listed and "nobody yet" in listed


def test_a_participants_live_attempt_is_ended_from_their_page(app):
    """The monitor lists at most 100 of those playing: a researcher who looks a participant
    up ends their attempt from the participant's page, with a reason, as from the monitor."""
    from records.models import Audit, EpisodeRow

    store = app.extensions["gridstudy.store"]
    participant_id, first, session = playing(app, "pid-live")
    assert session is not None
    client = app.test_client()
    log_in(client)
    page = client.get(f"/dashboard/participant/{participant_id}").text
    assert page.count("End session") == 1 and f'/dashboard/session/{first}/end"' in page
    token = csrf(client, f"/dashboard/participant/{participant_id}")
    ended = client.post(f"/dashboard/session/{first}/end",
                        data={"reason": "stuck on a frozen tab", "csrf_token": token},
                        headers={"Referer": f"/dashboard/participant/{participant_id}"})
    assert ended.status_code == 302 and ended.location.endswith(f"/participant/{participant_id}")
    with store.session() as db:
        row = db.get(EpisodeRow, first)
        assert (row.status, row.included) == ("abandoned", False)
        assert row.exclusion_reason == "ended by researcher: stuck on a frozen tab"
        assert [a.reason for a in db.exec(select(Audit)).all()] == ["stuck on a frozen tab"]
    assert all(s.episode_id != first for s in app.extensions["gridstudy.realtime"].sessions.values())
    assert "End session" not in client.get(f"/dashboard/participant/{participant_id}").text
