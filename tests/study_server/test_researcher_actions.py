"""What a researcher changes by hand on the dashboard: ending a stuck session (its slot
is freed at once), excluding and including attempts and participants, pausing a study
and raising its wanted attempts; each needs a reason and lands in the audit log."""

from __future__ import annotations

import re

import pytest
from sqlmodel import select

from analysis.load import load
from records.models import Audit, EpisodeRow, Participant, Study
from study_server import assignment, auth
from study_server.app import shutdown
from tests.consent.helpers import make_definition, study_app
from tests.consent.test_flow import answer, current
from tests.study_server.test_dashboard import log_in


@pytest.fixture
def app(tmp_path):
    app = study_app(tmp_path / "hand.db")
    auth.create_admin(app.extensions["gridstudy.store"].engine, "researcher", "correct horse")
    yield app
    shutdown(app)


@pytest.fixture
def researcher(app):
    client = app.test_client()
    assert log_in(client).status_code == 302
    return client


def act(client, path, **form):
    page = client.get("/dashboard/").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    return client.post(path, data={**form, "csrf_token": token})


def participant_at_task(app, pid="PID-1"):
    """A participant who has reached their first real problem (its session is live)."""
    client = app.test_client()
    client.get(f"/study/pilot?PROLIFIC_PID={pid}&STUDY_ID=st&SESSION_ID=se-{pid}")
    while current(app, client).stage.name != "task":
        answer(app, client)
    return client, current(app, client)


def rows(app, model, *where):
    app.extensions["gridstudy.store"].wait()
    with app.extensions["gridstudy.store"].session() as db:
        return db.exec(select(model).where(*where)).all()


def slots_taken(app):
    with app.extensions["gridstudy.store"].session() as db:
        return sum(assignment.fill_counts(db, "pilot", list(make_definition().problems)).values())


def test_ending_a_stuck_session_frees_its_slot_at_once(app, researcher):
    _, page = participant_at_task(app)
    scheduler = app.extensions["gridstudy.realtime"]
    live = scheduler.get(page.context["token"])
    taken = slots_taken(app)
    assert live is not None and taken >= 1
    page_text = researcher.get("/dashboard/").text
    assert f'data-end="{live.episode_id}"' in page_text
    refused = act(researcher, f"/dashboard/session/{live.episode_id}/end")
    assert refused.status_code == 400  # no reason given
    done = act(researcher, f"/dashboard/session/{live.episode_id}/end", reason="stuck for 8 min")
    assert done.status_code == 302
    assert scheduler.get(page.context["token"]) is None
    episode = rows(app, EpisodeRow, EpisodeRow.id == live.episode_id)[0]
    assert episode.status == "abandoned" and "stuck for 8 min" in (episode.info or {}).get(
        "reason", "") + (episode.exclusion_reason or "")
    assert slots_taken(app) == taken - 1
    change = rows(app, Audit)[0]
    assert (change.admin, change.action, change.target, change.reason) == (
        "researcher", "end-session", f"episode {live.episode_id}", "stuck for 8 min")
    assert "stuck for 8 min" in researcher.get("/dashboard/").text


def test_attempts_and_participants_are_excluded_and_included_by_hand(app, researcher):
    _, page = participant_at_task(app)
    person = rows(app, Participant)[0]
    episode_id = app.extensions["gridstudy.realtime"].get(page.context["token"]).episode_id
    act(researcher, f"/dashboard/episode/{episode_id}/inclusion", included="0", reason="bot-like")
    row = rows(app, EpisodeRow, EpisodeRow.id == episode_id)[0]
    assert (row.included, row.exclusion_reason) == (False, "by hand: bot-like")
    act(researcher, f"/dashboard/episode/{episode_id}/inclusion", included="1", reason="checked")
    row = rows(app, EpisodeRow, EpisodeRow.id == episode_id)[0]
    assert (row.included, row.exclusion_reason) == (True, None)
    act(researcher, f"/dashboard/participant/{person.id}/inclusion", included="0", reason="twice")
    assert rows(app, Participant)[0].status == "excluded"
    assert "Include again" in researcher.get(f"/dashboard/participant/{person.id}").text
    act(researcher, f"/dashboard/participant/{person.id}/inclusion", included="1", reason="ok")
    assert (rows(app, Participant)[0].status, rows(app, Participant)[0].exclusion_reason) == (
        "active", None)
    assert [c.action for c in rows(app, Audit)] == [
        "exclude-attempt", "include-attempt", "exclude-participant", "include-participant"]
    assert rows(app, Audit)[0].before == {"included": True, "exclusion_reason": None}


def failing_attention(app, pid, idle=None):
    """A participant's whole visit, failing the attention check (the study's
    ``attention_failure: continue`` plays on); with ``idle``, the game before the check is
    excluded first by that reason, as a rule of its own would. Their participant row."""
    client = app.test_client()
    client.get(f"/study/pilot?PROLIFIC_PID={pid}&STUDY_ID=st&SESSION_ID=se-{pid}")
    while (page := current(app, client)).stage is not None:
        if page.stage.name == "attention" and idle:
            with app.extensions["gridstudy.store"].session() as db:
                first = db.exec(select(EpisodeRow).where(
                    EpisodeRow.participant_id == page.participant.id,
                    EpisodeRow.exclusion_reason.is_(None), EpisodeRow.status == "done")).one()
                first.included, first.exclusion_reason = False, idle
                db.add(first)
        answer(app, client, "fail" if page.stage.name == "attention" else "pass")
    return rows(app, Participant, Participant.external_id == pid)[0]


def test_one_who_failed_an_attention_check_and_played_on_can_be_included_again(app, researcher):
    """A failed check under ``attention_failure: continue`` excludes the participant (the
    flow and payments say so) and writes its reason on their attempts. Their page offers
    to include them again, which lifts that reason from the attempts and no other: an
    attempt a rule of its own excluded stays out. An attempt included by hand while its
    participant stays excluded does not count, as for one excluded by hand."""
    idle = "idle for 200 s (at most 120 allowed)"
    person = failing_attention(app, "PID-A", idle)
    failed = person.exclusion_reason
    assert person.status == "complete" and failed.startswith("failed 1 attention check")
    attempts = rows(app, EpisodeRow, EpisodeRow.participant_id == person.id)
    assert sorted(e.exclusion_reason for e in attempts) == [failed, idle, "tutorial"]
    [lifted] = [e.id for e in attempts if e.exclusion_reason == failed]
    page = researcher.get(f"/dashboard/participant/{person.id}").text
    assert "Include again" in page and "<td>complete, excluded (stage end)</td>" in page

    def counted():
        app.extensions["gridstudy.store"].wait()
        return sorted(e.episode_id for e in load(app.config["DATABASE_URL"], study="pilot")
                      if e.is_included)

    other = failing_attention(app, "PID-B")
    by_hand = rows(app, EpisodeRow, EpisodeRow.participant_id == other.id,
                   EpisodeRow.exclusion_reason == other.exclusion_reason)[0]
    act(researcher, f"/dashboard/episode/{by_hand.id}/inclusion", included="1", reason="fine")
    assert counted() == []  # its participant still stands excluded
    act(researcher, f"/dashboard/participant/{person.id}/inclusion", included="1",
        reason="the check's picture did not load")
    person = rows(app, Participant, Participant.id == person.id)[0]
    assert (person.status, person.exclusion_reason) == ("complete", None)
    assert rows(app, Audit)[-1].after["included_again"] == [lifted]
    assert counted() == [lifted]  # the idle game still out
    page = researcher.get(f"/dashboard/participant/{person.id}").text
    assert "Exclude this participant" in page and "<td>complete (stage end)</td>" in page


def test_a_participant_excluded_by_hand_gives_their_slots_back(app, researcher):
    """The study wants so many included attempts per problem: an excluded participant's
    attempts are not among them, so their slots are free for someone else (before, they
    stayed taken and the study stopped taking people short of what it wanted). Included
    again, they take them back; a failed attention check frees them the same way."""
    client = app.test_client()
    client.get("/study/pilot?PROLIFIC_PID=PID-1&STUDY_ID=st&SESSION_ID=se-1")
    while current(app, client).stage is not None:
        answer(app, client)
    person = rows(app, Participant)[0]

    def included():
        with app.extensions["gridstudy.store"].session() as db:
            return sum(assignment.included_done(db, "pilot").values())

    assert (slots_taken(app), included()) == (2, 2)
    act(researcher, f"/dashboard/participant/{person.id}/inclusion", included="0", reason="bot")
    assert (slots_taken(app), included()) == (0, 0)
    act(researcher, f"/dashboard/participant/{person.id}/inclusion", included="1", reason="ok")
    assert (slots_taken(app), included()) == (2, 2)
    failing_attention(app, "PID-2")
    assert (slots_taken(app), included()) == (2, 2)


def test_a_paused_study_turns_new_arrivals_away_politely_and_keeps_those_in(app, researcher):
    client, _ = participant_at_task(app, "PID-IN")
    act(researcher, "/dashboard/study/pilot/manage", status="paused", reason="bug in p1")
    newcomer = app.test_client().get("/study/pilot?PROLIFIC_PID=PID-NEW&SESSION_ID=x")
    assert newcomer.status_code == 200
    assert "not taking new participants" in newcomer.text and "SCREEN99" in newcomer.text
    assert client.get("/study/pilot?PROLIFIC_PID=PID-IN&SESSION_ID=se-PID-IN").status_code == 302
    assert current(app, client).stage.name == "task"
    act(researcher, "/dashboard/study/pilot/manage", status="open", wanted="9", reason="more")
    study = rows(app, Study)[0]
    assert (study.status, study.definition["attempts_per_problem"]) == ("open", 9)
    lowered = act(researcher, "/dashboard/study/pilot/manage", wanted="2", reason="fewer")
    assert lowered.status_code == 400 and "can only be raised" in lowered.text
    for typed in ("²", "9" * 5000, "ten", "-12"):  # "²" passes str.isdigit, not int(): a 500
        refused = act(researcher, "/dashboard/study/pilot/manage", wanted=typed, reason="typo")
        assert refused.status_code == 400 and "wanted must be a whole number of at least 9" in refused.text
    assert [c.action for c in rows(app, Audit)] == ["pause-study", "open-study", "set-wanted"]
    assert "attempts_per_problem: 9" in researcher.get("/dashboard/").text


def test_the_timeline_has_a_time_for_every_stage(app, researcher):
    participant_at_task(app)
    person = rows(app, Participant)[0]
    page = researcher.get(f"/dashboard/participant/{person.id}").text
    for stage in ("consent", "screening", "instructions", "tutorial", "quiz"):
        assert f'data-record="{stage}"' in page
    records = person.data["records"]
    assert all(r["started_at"] <= r["finished_at"] for r in records)
    assert [r["started_at"] for r in records[1:]] == [r["finished_at"] for r in records[:-1]]
    assert "PID-1" in page and "se-PID-1" in page


def test_changes_by_hand_need_a_login_and_the_form_token(app):
    stranger = app.test_client()
    answer_ = stranger.post("/dashboard/study/pilot/manage", data={"status": "closed", "reason": "x"})
    assert answer_.status_code in (302, 400, 401, 403)
    assert rows(app, Study)[0].status == "open" and rows(app, Audit) == []


def test_only_a_logged_in_researcher_may_watch_the_monitor(live_server):
    import socketio

    stranger = socketio.Client(reconnection=False)
    with pytest.raises(socketio.exceptions.ConnectionError):
        stranger.connect(live_server.url, namespaces=["/monitor"], transports=["websocket"],
                         wait_timeout=5)
    stranger.disconnect()
