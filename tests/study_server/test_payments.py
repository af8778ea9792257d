"""Paying a Prolific study from gridstudy: the ids kept at arrival, the code and times of
every ending, the approval and bonus files, pseudonymized exports, and the landing page."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest
from click.testing import CliRunner
from sqlmodel import select

from records.models import AgentRun, EpisodeRow, Participant
from study_server.app import shutdown
from study_server.cli import main
from tasks import registry
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


def test_payments_writes_decisions_the_approve_list_and_prolific_bulk_bonuses(app, visited,
                                                                               tmp_path):
    people, solved = participants(app)
    out = tmp_path / "pay"
    result = CliRunner().invoke(main, ["payments", "--db", visited, "--study", "pilot",
                                       "--out", str(out)])
    assert result.exit_code == 0, result.output
    with (out / "decisions.csv").open() as handle:
        rows = {row["prolific_pid"]: row for row in csv.DictReader(handle)}
    assert {pid: row["decision"] for pid, row in rows.items()} == {
        "PID-DONE": "approve", "PID-NO": "return", "PID-BACK": "pending",
        "PID-IDLE": "pending"}
    assert (out / "approve.txt").read_text() == "PID-DONE\n"  # Prolific's bulk approval
    assert rows["PID-BACK"]["prolific_sessions"] == "s-3 s-4"
    assert (rows["PID-NO"]["code"], rows["PID-NO"]["reason"]) == (
        "SCREEN99", "declined consent: ask the participant to return their submission")
    assert all(row["reason"] for row in rows.values())
    assert rows["PID-DONE"]["ended_at"] and not rows["PID-BACK"]["ended_at"]
    count = solved[people["PID-DONE"].id]
    assert count >= 1 and int(rows["PID-DONE"]["solved"]) == count
    bonus = round(min(count * BONUS["per_solved"], BONUS["max"]), 2)
    assert (out / "bonuses.csv").read_text() == f"PID-DONE,{bonus:.2f}\n"
    assert "pilot: 4 participants (approve 1, return 1, pending 2)" in result.output
    assert (f"wrote {out / 'decisions.csv'}, {out / 'approve.txt'} and {out / 'bonuses.csv'} "
            f"(1 bonus, GBP {bonus:.2f} in all)") in result.output


@pytest.mark.parametrize("command", [["payments", "--out", "."], ["prolific", "sync"],
                                     ["prolific", "review", "--dry-run"]])
def test_payments_of_a_mistyped_database_say_so_and_leave_no_file(tmp_path, monkeypatch,
                                                                   command):
    """``--db`` naming no database is said as such, in one line; before, an empty database
    was made there and the command answered that the study did not exist."""
    monkeypatch.chdir(tmp_path)
    typo = tmp_path / "gridstudy.bd"
    result = CliRunner().invoke(main, [*command, "--db", str(typo), "--study", "pilot"])
    assert result.exit_code == 1
    assert result.output.strip() == f"Error: no database at {str(typo)!r}: check --db / DATABASE_URL"
    assert sorted(tmp_path.iterdir()) == []


def test_payments_of_a_misspelt_study_name_the_studies_there_are(app, visited, tmp_path,
                                                                 monkeypatch):
    """As an export does (``test_export.py``); before, ``gridstudy payments --study pliot``
    said to create the study."""
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    result = CliRunner().invoke(main, ["payments", "--db", visited, "--study", "pliot"])
    assert result.exit_code == 1
    assert result.output.strip() == ("Error: no study 'pliot' in the database (did you mean "
                                     "'pilot'?); it holds: pilot")
    assert sorted((tmp_path / "here").iterdir()) == []  # nothing written


def test_payments_stopped_by_a_full_disk_leave_the_earlier_files_whole(app, visited, tmp_path):
    """A real full filesystem under a second run of ``gridstudy payments`` (the study has
    grown since the first): it says so in one line, and the folder holds the first run's
    three files, whole. Before, each file was rewritten in place: the decisions were cut
    short beside the earlier approval list, with a traceback."""
    from tests.study_server.conftest import own_filesystem

    runner = CliRunner()
    with own_filesystem(tmp_path / "disk", "1m") as disk:
        out = disk / "pay"
        first = runner.invoke(main, ["payments", "--db", visited, "--study", "pilot",
                                     "--out", str(out)])
        assert first.exit_code == 0, first.output
        before = {p.name: p.read_bytes() for p in out.iterdir()}
        assert set(before) == {"decisions.csv", "approve.txt", "bonuses.csv"}
        for n in range(60):  # sixty more arrivals: the decisions outgrow a page of the disk
            arrive(app, f"PID-LATER-{n}", f"s-later-{n}")
        with (disk / "ballast").open("wb", buffering=0) as ballast, pytest.raises(OSError):
            while True:  # the disk full to its last block
                ballast.write(b"\0" * 4096)
        second = runner.invoke(main, ["payments", "--db", visited, "--study", "pilot",
                                      "--out", str(out)])
        assert second.exit_code == 1, second.output
        assert second.stderr.splitlines()[-1] == (
            f"Error: the payments stopped: No space left on device; what it had written is "
            f"removed and {out} is as it was")
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no staging left
        (disk / "ballast").unlink()
        third = runner.invoke(main, ["payments", "--db", visited, "--study", "pilot",
                                     "--out", str(out)])
        assert third.exit_code == 0, third.output
        assert "pilot: 64 participants" in third.output
        assert sorted(p.name for p in out.iterdir()) == ["approve.txt", "bonuses.csv",
                                                         "decisions.csv"]


def test_study_list_shows_each_studys_fill_and_its_participants(app, visited):
    """What `gridstudy study list` prints: the study, how full it is and its participants
    by how their visit stands (the group's help promised it; there was no such command)."""
    from consent.definition import from_stored
    from records.models import Study

    with app.extensions["gridstudy.store"].session() as db:
        study = db.get(Study, "pilot")
        done = len(db.exec(select(EpisodeRow).where(
            EpisodeRow.study_id == "pilot", EpisodeRow.status == "done",
            EpisodeRow.included)).all())
    definition = from_stored(study.definition)
    per, problems = definition.attempts_per_problem, len(definition.problems)
    assert done >= 1 and per > done  # one finished attempt per problem at most: no cap
    store = app.extensions["gridstudy.store"]  # a model's attempt in the study takes no
    with store.session() as db:                # person's place, and is not counted
        db.add(AgentRun(id=7, study_id="pilot", agent_kind="llm", model="m", config={}))
    model = store.start_episode(problem=registry.get_problem(definition.problems[0]),
                                study_id="pilot", agent_run_id=7)
    store.finish_episode(model, status="done", phase="test", score=1.0)
    store.flush()
    result = CliRunner().invoke(main, ["study", "list", "--db", visited])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"pilot  open  {study.title}",
        f"  {problems} problems, {done} of {per * problems} included attempts ({per} each); "
        "4 participants, 2 active, 1 complete, 1 declined"]


def test_the_dashboard_shows_the_ids_and_serves_the_same_files(app, visited):
    from study_server import auth
    from tests.study_server.test_dashboard import log_in

    auth.create_admin(app.extensions["gridstudy.store"].engine, "researcher", "correct horse")
    client = app.test_client()
    assert log_in(client).status_code == 302
    page = client.get("/dashboard/").text
    for shown in ("PID-DONE", "s-3 s-4", "DONE1234", "approve", "declined consent: ask"):
        assert shown in page
    bonuses = client.get("/dashboard/study/pilot/bonuses.csv")
    assert bonuses.status_code == 200 and bonuses.text.startswith("PID-DONE,")
    decisions = client.get("/dashboard/study/pilot/decisions.csv").text
    assert decisions.splitlines()[0].startswith("participant_id,prolific_pid")
    assert client.get("/dashboard/study/pilot/approve.txt").text == "PID-DONE\n"
    assert client.get("/dashboard/study/nope/bonuses.csv").status_code == 404
    assert app.test_client().get("/dashboard/study/pilot/bonuses.csv").status_code in (302, 401)


# -- one test per decision rule ------------------------------------------------------------


def complete_failing(app, client, failing=()):
    """Go through the whole flow, failing the stages named in ``failing``."""
    while (page := current(app, client)).stage is not None:
        answer(app, client, "fail" if page.stage.name in failing else "pass")


def decisions(app):
    from study_server.payments import payment_rows

    app.extensions["gridstudy.store"].wait()
    with app.extensions["gridstudy.store"].session() as db:
        _, rows = payment_rows(db, "pilot")
    return {row.prolific_pid: row for row in rows}


def exclude_by_hand(app, what, reason):
    """A signed-in researcher excludes ``what`` (``episode/ID`` or ``participant/ID``)
    on the dashboard, with ``reason``."""
    from study_server import auth
    from tests.study_server.test_dashboard import csrf, log_in

    auth.create_admin(app.extensions["gridstudy.store"].engine, "researcher", "correct horse")
    client = app.test_client()
    assert log_in(client).status_code == 302
    response = client.post(f"/dashboard/{what}/inclusion", data={
        "reason": reason, "included": "0", "csrf_token": csrf(client, "/dashboard/")})
    assert response.status_code == 302, response.text


def test_completed_and_included_is_approved_with_a_bonus_for_included_solved_attempts_only(app):
    complete(app, arrive(app, "PID-A", "s-1"))
    before = decisions(app)["PID-A"]
    assert (before.decision, before.rejection_category) == ("approve", "")
    assert before.solved >= 1 and before.bonus == round(min(before.solved * 0.15, 0.25), 2)
    assert before.reason == f"completed and included ({before.solved} solved)"
    people, _ = participants(app)
    with app.extensions["gridstudy.store"].session() as db:
        solved = db.exec(select(EpisodeRow).where(
            EpisodeRow.participant_id == people["PID-A"].id, EpisodeRow.score == 1.0,
            EpisodeRow.included)).first()
    exclude_by_hand(app, f"episode/{solved.id}", "played by a sibling")
    after = decisions(app)["PID-A"]
    assert (after.decision, after.solved) == ("approve", before.solved - 1)
    assert after.bonus == round(min((before.solved - 1) * 0.15, 0.25), 2)


@pytest.mark.parametrize(("on_exclusion", "decision", "category"), [
    (None, "approve", ""), ("approve_without_bonus", "approve", ""),
    ("reject", "reject", "FAILED_CHECK")])
def test_a_failed_attention_check_follows_on_exclusion(tmp_path, on_exclusion, decision,
                                                        category):
    extra = {} if on_exclusion is None else {"on_exclusion": on_exclusion}
    app = study_app(tmp_path / "att.db", bonus=BONUS, **extra)
    try:
        complete_failing(app, arrive(app, "PID-CARELESS", "s-1"), failing=("attention",))
        complete(app, arrive(app, "PID-CAREFUL", "s-2"))
        rows = decisions(app)
    finally:
        shutdown(app)
    careless = rows["PID-CARELESS"]
    assert careless.status == "complete" and careless.solved == 0  # every attempt excluded
    assert (careless.decision, careless.rejection_category, careless.bonus) == (
        decision, category, 0.0)
    assert careless.reason.startswith("completed, excluded: failed 1 attention check")
    assert ("approved without bonus" in careless.reason) == (decision == "approve")
    assert rows["PID-CAREFUL"].decision == "approve" and rows["PID-CAREFUL"].bonus > 0


@pytest.mark.parametrize(("on_exclusion", "decision", "category"), [
    ("approve_without_bonus", "approve", ""), ("reject", "reject", "FAILED_CHECK")])
def test_attention_failure_end_ends_the_visit_with_its_own_code_and_pays_by_on_exclusion(
        tmp_path, on_exclusion, decision, category):
    app = study_app(tmp_path / "end.db", bonus=BONUS, on_exclusion=on_exclusion,
                    attention_failure="end", codes={"failed_attention": "ATTN4321"})
    try:
        client = arrive(app, "PID-CARELESS", "s-1")
        seen = []
        while (page := current(app, client)).stage is not None:
            seen.append(page.stage.name)
            answer(app, client, "fail" if page.stage.name == "attention" else "pass")
        ending = client.get("/study/pilot/flow").text
        people, _ = participants(app)
        with app.extensions["gridstudy.store"].session() as db:
            attempts = db.exec(select(EpisodeRow).where(
                EpisodeRow.participant_id == people["PID-CARELESS"].id)).all()
        row = decisions(app)["PID-CARELESS"]
    finally:
        shutdown(app)
    assert seen[-2:] == ["task", "attention"]  # nothing after the failed check
    assert "<strong data-code>ATTN4321</strong>" in ending
    assert "attention question was not right" in ending
    careless = people["PID-CARELESS"]
    assert (careless.status, careless.code) == ("failed-attention", "ATTN4321")
    assert not [a for a in attempts if a.status in ("assigned", "active")]  # slots freed
    assert (row.decision, row.rejection_category, row.bonus) == (decision, category, 0.0)
    assert row.reason.startswith("ended at the check, excluded: failed 1 attention check")


@pytest.mark.parametrize(("on_exclusion", "decision", "category"), [
    ("approve_without_bonus", "approve", ""), ("reject", "reject", "OTHER")])
def test_a_participant_excluded_by_hand_follows_on_exclusion(tmp_path, on_exclusion, decision,
                                                             category):
    app = study_app(tmp_path / "hand.db", bonus=BONUS, on_exclusion=on_exclusion)
    try:
        complete(app, arrive(app, "PID-X", "s-1"))
        people, _ = participants(app)
        exclude_by_hand(app, f"participant/{people['PID-X'].id}",
                        "answered in a language not asked for")
        row = decisions(app)["PID-X"]
    finally:
        shutdown(app)
    assert (row.decision, row.rejection_category, row.bonus) == (decision, category, 0.0)
    assert "by hand: answered in a language not asked for" in row.reason


@pytest.mark.parametrize(("status", "why"), [
    ("declined", "declined consent"), ("screened-out", "failed the colour-vision screening"),
    ("wrong-device", "ended on a device the study cannot be played on"),
    ("timed-out", "ran out of the study's time limit"),
    ("slow-connection", "ended because the connection's round trip stayed above the study's limit"),
    ("failed-quiz", "failed the comprehension quiz"), ("full", "the study was full")])
def test_who_did_not_complete_is_asked_to_return_with_the_reason(status, why):
    from study_server.payments import decide
    from tests.consent.helpers import make_definition

    for on_exclusion in ("approve_without_bonus", "reject"):
        decided = decide(make_definition(on_exclusion=on_exclusion, bonus=BONUS), status, None, 2)
        assert decided == ("return", f"{why}: ask the participant to return their submission",
                           "", 0.0)


def test_the_screened_out_and_the_decliner_are_asked_to_return_in_the_files(app, tmp_path):
    answer(app, arrive(app, "PID-NO", "s-1"), "fail")  # declines consent
    screened = arrive(app, "PID-COLOUR", "s-2")
    answer(app, screened)
    answer(app, screened, "fail")  # fails the colour screening
    rows = decisions(app)
    assert (rows["PID-NO"].status, rows["PID-COLOUR"].status) == ("declined", "screened-out")
    assert {row.decision for row in rows.values()} == {"return"}
    assert rows["PID-COLOUR"].reason == ("failed the colour-vision screening: ask the "
                                         "participant to return their submission")


def test_on_exclusion_and_attention_failure_must_be_one_of_their_choices():
    from consent.definition import DefinitionError
    from tests.consent.helpers import make_definition

    assert make_definition().on_exclusion == "approve_without_bonus"
    with pytest.raises(DefinitionError, match="on_exclusion: expected one of "
                                              "approve_without_bonus, reject, got 'pay'"):
        make_definition(on_exclusion="pay")
    assert make_definition().attention_failure == "continue"
    with pytest.raises(DefinitionError, match="attention_failure: expected one of "
                                              "continue, end, got 'stop'"):
        make_definition(attention_failure="stop")


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
    made, page = dashboard_export(app, pseudonymize="1")  # the same key, through the server
    assert "gridstudy-pilot-export-pseudonymized.zip" in page and "keyed hashes" in page
    with zipfile.ZipFile(io.BytesIO(made)) as archive:
        assert not [name for name in archive.namelist() if b"PID-" in archive.read(name)]
        served = [json.loads(line) for line in archive.read("participants.jsonl").splitlines()]
    assert served == shared
    made, page = dashboard_export(app)  # the lab's own, with the ids it pays with
    with zipfile.ZipFile(io.BytesIO(made)) as archive:
        assert b"PID-DONE" in archive.read("participants.jsonl")
    assert "Before sharing the data, export it pseudonymized" in page


def dashboard_export(app, **form):
    """The pilot study's export from the dashboard, as a signed-in researcher asks for it
    (``form``: the export form's other fields): the zip and the export's last page."""
    from study_server import auth
    from tests.study_server.people import csrf, followed_export
    from tests.study_server.test_dashboard import log_in

    auth.create_admin(app.extensions["gridstudy.store"].engine, "researcher", "correct horse")
    client = app.test_client()
    log_in(client)
    asked = client.post("/dashboard/export", data={"study": "pilot", **form,
                                                   "csrf_token": csrf(client, "/dashboard/")})
    return followed_export(client, asked.headers["Location"])


def test_the_root_is_a_landing_page_that_names_no_study(app, visited):
    page = app.test_client().get("/")
    assert page.status_code == 200
    assert "sign in to the dashboard" in page.text and "/dashboard/" in page.text
    assert "pilot" not in page.text and "Grid worlds" not in page.text
