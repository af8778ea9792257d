"""Paying a Prolific study from gridstudy: the ids kept at arrival, the code and times of
every ending, the approval and bonus files, pseudonymized exports, and the landing page."""

from __future__ import annotations

import csv
import json

import pytest
from click.testing import CliRunner
from sqlmodel import select

from records.models import EpisodeRow, Participant
from study_server.app import shutdown
from study_server.cli import main
from tests.consent.helpers import study_app
from tests.consent.test_flow import answer, current

BONUS = {"per_solved": 0.15, "max": 0.25}


@pytest.fixture
def app(tmp_path):
    app = study_app(tmp_path / "pay.db", bonus=BONUS)
    yield app
    shutdown(app)


def arrive(app, pid, session_id):
    client = app.test_client()
    assert client.get(f"/study/pilot?PROLIFIC_PID={pid}&STUDY_ID=study-1&SESSION_ID={session_id}"
                      ).status_code == 302
    return client


def complete(app, client):
    while current(app, client).stage is not None:
        answer(app, client)


def participants(app):
    app.extensions["gridstudy.store"].wait()
    with app.extensions["gridstudy.store"].session() as db:
        people = {p.external_id: p for p in db.exec(select(Participant)).all()}
        solved = {}
        for row in db.exec(select(EpisodeRow).where(EpisodeRow.status == "done",
                                                    EpisodeRow.exclusion_reason.is_(None))):
            solved[row.participant_id] = solved.get(row.participant_id, 0) + (row.score == 1.0)
    return people, solved


@pytest.fixture
def visited(app, tmp_path):
    """Four participants: one completes, one declines, one comes back with a second
    SESSION_ID and is still playing, one arrives and stops at consent."""
    complete(app, arrive(app, "PID-DONE", "s-1"))
    answer(app, arrive(app, "PID-NO", "s-2"), "fail")
    returning = arrive(app, "PID-BACK", "s-3")
    answer(app, returning)
    arrive(app, "PID-BACK", "s-4")
    arrive(app, "PID-BACK", "s-3")  # a reload with the first link: nothing new
    arrive(app, "PID-IDLE", "s-5")
    return app.extensions["gridstudy.store"].url


def test_every_ending_keeps_its_code_and_time_and_every_session_id(app, visited):
    people, _ = participants(app)
    done, declined, back = people["PID-DONE"], people["PID-NO"], people["PID-BACK"]
    assert (done.status, done.code) == ("complete", "DONE1234")
    assert (declined.status, declined.code) == ("declined", "SCREEN99")
    assert done.ended_at >= done.created_at and declined.ended_at is not None
    assert (back.status, back.code, back.ended_at) == ("active", None, None)
    assert list(back.prolific_sessions) == ["s-3", "s-4"]
    assert (back.prolific_study_id, back.prolific_session_id) == ("study-1", "s-3")


def test_payments_writes_approvals_and_prolific_bulk_bonuses(app, visited, tmp_path):
    people, solved = participants(app)
    out = tmp_path / "pay"
    result = CliRunner().invoke(main, ["payments", "--db", visited, "--study", "pilot",
                                       "--out", str(out)])
    assert result.exit_code == 0, result.output
    with (out / "approvals.csv").open() as handle:
        rows = {row["prolific_pid"]: row for row in csv.DictReader(handle)}
    assert {pid: row["decision"] for pid, row in rows.items()} == {
        "PID-DONE": "approve", "PID-NO": "screened-out", "PID-BACK": "pending",
        "PID-IDLE": "pending"}
    assert rows["PID-BACK"]["prolific_sessions"] == "s-3 s-4"
    assert (rows["PID-NO"]["code"], rows["PID-NO"]["reason"]) == ("SCREEN99", "declined")
    assert rows["PID-DONE"]["ended_at"] and not rows["PID-BACK"]["ended_at"]
    count = solved[people["PID-DONE"].id]
    assert count >= 1 and int(rows["PID-DONE"]["solved"]) == count
    bonus = round(min(count * BONUS["per_solved"], BONUS["max"]), 2)
    assert (out / "bonuses.csv").read_text() == f"PID-DONE,{bonus:.2f}\n"
    assert "pilot: 4 participants (approve 1, screened-out 1, pending 2)" in result.output


def test_the_dashboard_shows_the_ids_and_serves_the_same_files(app, visited):
    from study_server import auth
    from tests.study_server.test_dashboard import log_in

    auth.create_admin(app.extensions["gridstudy.store"].engine, "researcher", "correct horse")
    client = app.test_client()
    assert log_in(client).status_code == 302
    page = client.get("/dashboard/").text
    for shown in ("PID-DONE", "s-3 s-4", "DONE1234", "approve", "screened-out"):
        assert shown in page
    bonuses = client.get("/dashboard/study/pilot/bonuses.csv")
    assert bonuses.status_code == 200 and bonuses.text.startswith("PID-DONE,")
    approvals = client.get("/dashboard/study/pilot/approvals.csv").text
    assert approvals.splitlines()[0].startswith("participant_id,prolific_pid")
    assert client.get("/dashboard/study/nope/bonuses.csv").status_code == 404
    assert app.test_client().get("/dashboard/study/pilot/bonuses.csv").status_code in (302, 401)


def test_exports_carry_the_ids_unless_pseudonymized(app, visited, tmp_path):
    from analysis.load import load
    from study_server.export import export

    export(visited, tmp_path / "plain")
    plain = [json.loads(line) for line in (tmp_path / "plain/participants.jsonl").open()]
    assert {p["external_id"] for p in plain} == {"PID-DONE", "PID-NO", "PID-BACK", "PID-IDLE"}
    export(visited, tmp_path / "shared", pseudonymize=True)
    export(visited, tmp_path / "again", pseudonymize=True)
    shared = [json.loads(line) for line in (tmp_path / "shared/participants.jsonl").open()]
    again = [json.loads(line) for line in (tmp_path / "again/participants.jsonl").open()]
    assert shared == again  # the same key: the same hashes in every export
    for folder in ("shared", "again"):
        for path in (tmp_path / folder).iterdir():
            text = path.read_bytes()
            assert b"PID-" not in text and b"s-3" not in text and b"study-1" not in text, path
    back = next(p for p in shared if len(p["prolific_sessions"]) == 2)
    assert all(key.startswith("h-") for key in back["prolific_sessions"])
    assert {p["external_id"][:2] for p in shared} == {"h-"}
    assert len({p["external_id"] for p in shared}) == 4
    assert [p["code"] for p in shared] == [p["code"] for p in plain]  # codes are not ids
    assert len(load(str(tmp_path / "shared"))) == len(load(str(tmp_path / "plain")))
    result = CliRunner().invoke(main, ["export", "--db", visited, "--out", str(tmp_path / "x")])
    assert "participants.jsonl holds Prolific ids" in result.output


def test_the_root_is_a_landing_page_that_names_no_study(app, visited):
    page = app.test_client().get("/")
    assert page.status_code == 200
    assert "sign in to the dashboard" in page.text and "/dashboard/" in page.text
    assert "pilot" not in page.text and "Grid worlds" not in page.text
