"""The whole Prolific loop against a stand-in of Prolific's API: publish, sync (every
page), review (approve in bulk, reject, ask for returns, bonuses paid exactly once,
through crashes, reruns and two reviews at once), signed hooks, and the failures a
researcher meets."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from sqlmodel import select

from records.models import Audit, ProlificBatch, ProlificStudy, ProlificSubmission, Study
from study_server import auth
from study_server.app import shutdown
from study_server.cli import main
from study_server.prolific import Api, review
from study_server.prolific import publish as prolific_publish
from tests.conftest import start_live_server
from tests.consent.helpers import make_definition, study_app
from tests.consent.test_flow import answer
from tests.prolific_standin import TOKEN, Prolific
from tests.study_server.test_dashboard import log_in
from tests.study_server.test_payments import complete, complete_failing

BONUS = {"per_solved": 0.15, "max": 0.25}
BASE = "https://study.example.org"


@pytest.fixture
def standin(monkeypatch):
    prolific = Prolific(page_size=2)
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_API_URL", prolific.url)
    yield prolific
    prolific.close()


@pytest.fixture
def db(tmp_path):
    return tmp_path / "prolific.db"


@pytest.fixture
def app(db):
    app = study_app(db, bonus=BONUS, codes={"no_consent": "NOCONSNT"})
    yield app
    shutdown(app)


def gridstudy(*args, ok=True):
    result = CliRunner().invoke(main, ["prolific", *args], catch_exceptions=False)
    assert (result.exit_code == 0) == ok, result.output
    return result.output


def publish(db, *extra, ok=True):
    return gridstudy("publish", "--study", "pilot", "--db", str(db), "--base-url", BASE,
                     "--places", "3", *extra, ok=ok)


def prolific_id(app):
    with app.extensions["gridstudy.store"].session() as session:
        return session.get(ProlificStudy, "pilot").prolific_id


def visit(app, standin, pid, finish):
    """A participant takes a place on Prolific, opens our link with its ids, goes through
    the study as ``finish`` says, and enters the code they were given on Prolific."""
    submission = standin.join(prolific_id(app), pid)
    client = app.test_client()
    assert client.get(f"/study/pilot?PROLIFIC_PID={pid}&STUDY_ID={prolific_id(app)}"
                      f"&SESSION_ID={submission}").status_code == 302
    finish(app, client)
    app.extensions["gridstudy.store"].wait()
    with app.extensions["gridstudy.store"].session() as session:
        from records.models import Participant

        code = session.exec(select(Participant).where(Participant.external_id == pid)).one().code
    return submission, code


def decline(app, client):
    answer(app, client, "fail")


def inattentive(app, client):
    complete_failing(app, client, failing=("attention",))


def test_publish_sends_the_study_file_with_our_link_and_every_code_then_publishes_once(app, db, standin):
    output = publish(db)
    assert "published (ACTIVE)" in output
    [study] = standin.studies.values()
    definition = make_definition(bonus=BONUS, codes={"no_consent": "NOCONSNT"})
    assert study["external_study_url"] == (f"{BASE}/study/pilot?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
                                           "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
    assert study["reward"] == 250 and study["total_available_places"] == 3  # "GBP 2.50"
    assert study["estimated_completion_time"] == 10 and study["device_compatibility"] == ["desktop"]
    assert study["name"] == definition.title and study["prolific_id_option"] == "url_parameters"
    codes = {c["code"]: c for c in study["completion_codes"]}
    assert codes[definition.completion_code]["code_type"] == "COMPLETED"
    assert codes[definition.completion_code]["actions"] == [{"action": "MANUALLY_REVIEW"}]
    assert codes["NOCONSNT"]["code_type"] == "NO_CONSENT"
    assert codes["NOCONSNT"]["actions"] == [{"action": "REQUEST_RETURN",
                                             "return_reason": "Withdrew consent"}]
    assert codes[definition.screenout_code]["actions"][0]["action"] == "REQUEST_RETURN"
    assert study["status"] == "ACTIVE"
    again = publish(db)
    assert "already published on Prolific as" in again
    assert len(standin.called("POST", "/api/v1/studies/")) == 2  # one create, one publish
    assert all(call["authorization"] == f"Token {TOKEN}" for call in standin.calls)
    with app.extensions["gridstudy.store"].session() as session:
        actions = [a.action for a in session.exec(select(Audit)).all()]
    assert actions.count("prolific-publish") == 2


def test_a_draft_is_published_later_without_a_second_study(app, db, standin):
    assert "left as a draft" in publish(db, "--draft")
    [study] = standin.studies.values()
    assert study["status"] == "UNPUBLISHED"
    assert "published (ACTIVE)" in publish(db)
    assert len(standin.studies) == 1 and study["status"] == "ACTIVE"


def test_two_publishes_at_once_create_one_study_on_prolific(app, db, standin):
    """The dashboard's button clicked twice, or the command run twice: while the first
    waits for Prolific to create the study, the second says so and creates nothing; the
    study is created and published once. Before, the second created a second study on
    Prolific (a draft nobody would publish) and the first ended in a 500. A creation
    Prolific refused leaves nothing behind: the next publish creates it."""
    from study_server.commands.study import PROLIFIC_QUERY
    from study_server.prolific import ProlificError

    store = app.extensions["gridstudy.store"]
    link = f"{BASE}/study/pilot?{PROLIFIC_QUERY}"
    terms = {"places": 3, "reward_cents": 250, "minutes": 10, "draft": False}
    standin.fail("POST", "/api/v1/studies/", 400, detail="reward too low")
    with pytest.raises(ProlificError, match="reward too low"):
        prolific_publish(store, Api(), "pilot", link, **terms, actor="one")
    arrived, release = standin.hold("POST", "/api/v1/studies/")
    first = threading.Thread(target=prolific_publish, args=(store, Api(), "pilot", link),
                             kwargs={**terms, "actor": "one"})
    first.start()
    assert arrived.wait(30)  # Prolific made the study; its answer has not reached us
    with pytest.raises(ProlificError, match="pilot is being created on Prolific by another "
                                            "request"):
        prolific_publish(store, Api(), "pilot", link, **terms, actor="two")
    auth.create_admin(store.engine, "researcher", "correct horse")
    page = app.test_client()
    log_in(page)
    assert "data-prolific-creating" in page.get("/dashboard/").text
    release.set()
    first.join(30)
    [study] = standin.studies.values()
    assert study["status"] == "ACTIVE" and prolific_id(app) == study["id"]
    assert "already published" in publish(db)


def test_prolific_pays_what_the_consent_page_promises(app, db, standin, tmp_path):
    """The consent page tells participants "Payment: GBP 2.50" and "about 10 minutes";
    publish took the reward and the time as two more numbers. Typed as 25 for 2.50 (or 20
    minutes for 10) they went to Prolific, and participants promised 2.50 were paid 0.25.
    Now both are read from the study file, and another value is refused before Prolific
    is asked, on the command line and on the dashboard."""
    page = app.test_client().get("/study/pilot?PROLIFIC_PID=P1&STUDY_ID=S&SESSION_ID=X",
                                 follow_redirects=True).text
    assert "about 10 minutes. Payment: GBP 2.50." in page
    refused = publish(db, "--reward-cents", "25", ok=False)
    assert ("the consent page tells participants they are paid GBP 2.50, and a reward of 25 "
            "cents pays 0.25: give 250") in refused
    refused = publish(db, "--minutes", "20", ok=False)
    assert "the consent page says the study takes about 10 minutes, and Prolific would be told 20" in refused
    auth.create_admin(app.extensions["gridstudy.store"].engine, "researcher", "correct horse")
    researcher = app.test_client()
    log_in(researcher)
    dashboard = researcher.get("/dashboard/").text
    assert 'name="reward_cents" type="number" min="1" value="250"' in dashboard
    assert 'name="minutes" type="number" min="1" value="10"' in dashboard
    from tests.study_server.test_dashboard import csrf

    shown = researcher.post("/dashboard/study/pilot/prolific/publish", data={
        "places": "3", "reward_cents": "25", "minutes": "10",
        "csrf_token": csrf(researcher, "/dashboard/")}).text
    assert "error: the consent page tells participants they are paid GBP 2.50" in shown
    assert not standin.studies  # nothing was asked of Prolific
    assert "published (ACTIVE)" in publish(db, "--reward-cents", "250", "--minutes", "10")
    [study] = standin.studies.values()
    assert (study["reward"], study["estimated_completion_time"]) == (250, 10)


@pytest.mark.parametrize(("payment", "message"), [
    ("", "the study file's payment ('none') names no amount"),
    ("£9 an hour, pro rata", "the study file's payment ('£9 an hour, pro rata') names no amount"),
])
def test_a_payment_without_an_amount_needs_the_reward_given(db, standin, payment, message):
    app = study_app(db, payment=payment)
    try:
        assert f"give the reward in cents: {message}" in publish(db, ok=False)
        assert not standin.studies
        assert "published (ACTIVE)" in publish(db, "--reward-cents", "450")
        assert [s["reward"] for s in standin.studies.values()] == [450]
    finally:
        shutdown(app)


def test_a_creation_that_never_finished_is_taken_over_after_a_while(app, db, standin, caplog):
    """A publish killed while Prolific created the study leaves its claim: the next
    publish waits ``STALE_CLAIM`` for it, then creates the study and says that a draft
    from then may be on Prolific."""
    from datetime import UTC, datetime, timedelta

    from study_server.prolific import STALE_CLAIM

    with app.extensions["gridstudy.store"].session() as session:
        session.add(ProlificStudy(study_id="pilot", prolific_id="", status="CREATING",
                                  created_at=datetime.now(UTC) - timedelta(seconds=30)))
    assert "is being created on Prolific by another request (for 30 s)" in publish(db, ok=False)
    with app.extensions["gridstudy.store"].session() as session:
        session.get(ProlificStudy, "pilot").created_at = \
            datetime.now(UTC) - timedelta(seconds=STALE_CLAIM + 1)
    assert "published (ACTIVE)" in publish(db)
    assert "never finished; created again" in caplog.text and "'gridstudy pilot'" in caplog.text
    assert len(standin.studies) == 1


def test_a_study_in_the_wrong_state_is_said_plainly(app, db, standin):
    publish(db, "--draft")
    [study] = standin.studies.values()
    study["status"] = "ACTIVE"  # published by hand on Prolific's pages meanwhile
    output = publish(db, ok=False)
    assert "created on Prolific but not published" in output
    assert "cannot be published: it is ACTIVE" in output


def test_sync_follows_every_page_and_names_who_is_missing_on_either_side(app, db, standin):
    publish(db)
    here = [visit(app, standin, f"PID-{n}", lambda app, client: None)[0] for n in range(3)]
    nowhere = standin.join(prolific_id(app), "PID-NEVER-CAME")
    client = app.test_client()  # reached us with a session Prolific does not have
    client.get(f"/study/pilot?PROLIFIC_PID=PID-STRAY&STUDY_ID={prolific_id(app)}&SESSION_ID=zzz")
    standin.submissions[here[0]]["status"] = "RETURNED"
    output = gridstudy("sync", "--study", "pilot", "--db", str(db))
    assert "4 submissions on Prolific (ACTIVE 3, RETURNED 1)" in output
    assert f"on Prolific, never reached the study: 1\n  PID-NEVER-CAME ({nowhere}, ACTIVE)" in output
    assert "reached the study, no submission on Prolific: 1\n  participant 4 (PID-STRAY" in output
    assert len(standin.called("GET", "/api/v1/submissions/")) == 2  # two pages of two
    with app.extensions["gridstudy.store"].session() as session:
        rows = {r.id: r for r in session.exec(select(ProlificSubmission)).all()}
    assert rows[here[0]].status == "RETURNED" and rows[here[0]].participant_id == 1
    assert rows[nowhere].participant_id is None


def three_participants(app, db, standin):
    """One completes, one declines consent, one fails the attention check: each enters on
    Prolific the code we gave them."""
    publish(db)
    people = {}
    for pid, finish in (("PID-DONE", complete), ("PID-NO", decline), ("PID-CARELESS", inattentive)):
        submission, code = visit(app, standin, pid, finish)
        standin.submit(submission, code)
        people[pid] = submission
    return people


def test_review_carries_out_the_decisions_and_pays_bonuses_exactly_once(app, db, standin):
    people = three_participants(app, db, standin)
    dry = gridstudy("review", "--study", "pilot", "--db", str(db), "--dry-run")
    assert f"would approve {people['PID-DONE']}" in dry and "would pay a bonus of 0.25" in dry
    assert not standin.called("POST", "/api/v1/submissions/")  # nothing sent
    output = gridstudy("review", "--study", "pilot", "--db", str(db))
    [approval] = standin.called("POST", "/api/v1/submissions/bulk-approve/")
    assert sorted(approval["body"]["submission_ids"]) == sorted([people["PID-DONE"], people["PID-CARELESS"]])
    assert standin.returns == {people["PID-NO"]: ["Withdrew consent"]}
    [setup] = standin.called("POST", "/api/v1/submissions/bonus-payments/")
    assert setup["body"] == {"study_id": prolific_id(app), "csv_bonuses": "PID-DONE,0.25\n"}
    assert len(standin.payments) == 1
    assert "approved 2, rejected 0, asked to return 1" in output
    assert "paid bonus batch 1 (Prolific" in output and "0.25 in all" in output
    rerun = gridstudy("review", "--study", "pilot", "--db", str(db))
    assert len(standin.payments) == 1 and len(standin.called("POST", "/api/v1/submissions/bonus-payments/")) == 1
    assert len(standin.called("POST", "/api/v1/submissions/bulk-approve/")) == 1
    assert len(standin.returns[people["PID-NO"]]) == 1
    assert "approved 0, rejected 0, asked to return 0" in rerun
    assert "bonus batch 1: paid earlier (" in rerun and "0.25 in all" in rerun
    with app.extensions["gridstudy.store"].session() as session:
        audit = session.exec(select(Audit).where(Audit.action.startswith("prolific-"))).all()
    kinds = [a.action for a in audit]
    assert kinds.count("prolific-approve") == 2 and kinds.count("prolific-return") == 1
    assert "prolific-bonus-setup" in kinds and "prolific-bonus-pay" in kinds
    assert all("(command line)" in a.admin for a in audit)
    assert TOKEN.encode() not in db.read_bytes()  # the token is never stored


def test_an_excluded_participant_is_rejected_with_the_reason_and_category_when_the_file_says(
        tmp_path, standin):
    db = tmp_path / "reject.db"
    app = study_app(db, bonus=BONUS, on_exclusion="reject")
    try:
        publish(db)
        submission, code = visit(app, standin, "PID-CARELESS", inattentive)
        standin.submit(submission, code)
        gridstudy("review", "--study", "pilot", "--db", str(db))
    finally:
        shutdown(app)
    rejection = standin.rejections[submission]
    assert rejection["rejection_category"] == "FAILED_CHECK"
    assert "failed 1 attention check" in rejection["message"] and len(rejection["message"]) >= 100
    assert standin.submissions[submission]["status"] == "REJECTED" and not standin.payments


def test_an_approval_racing_the_participants_own_submit_is_retried(app, db, standin):
    publish(db)
    submission, code = visit(app, standin, "PID-DONE", complete)  # not yet submitted there
    later = threading.Timer(1.0, standin.submit, (submission, code))
    later.start()
    output = gridstudy("review", "--study", "pilot", "--db", str(db), "--wait", "10")
    assert f"approved {submission}" in output and standin.submissions[submission]["status"] == "APPROVED"
    assert len(standin.payments) == 1


def test_a_participant_who_never_submits_is_left_for_the_next_review(app, db, standin):
    publish(db)
    submission, code = visit(app, standin, "PID-DONE", complete)
    output = gridstudy("review", "--study", "pilot", "--db", str(db), "--wait", "0")
    assert f"their submission {submission} is ACTIVE on Prolific" in output
    assert not standin.approved and not standin.payments
    standin.submit(submission, code)
    gridstudy("review", "--study", "pilot", "--db", str(db), "--wait", "0")
    assert standin.approved == [submission] and len(standin.payments) == 1


def review_process(db, standin):
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "gridstudy"), "prolific", "review", "--study", "pilot",
         "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PROLIFIC_API_TOKEN": TOKEN, "PROLIFIC_API_URL": standin.url})


def test_a_review_killed_between_setting_up_and_paying_is_paid_once_by_the_next(app, db, standin):
    three_participants(app, db, standin)
    arrived, release = standin.hold("POST", "/api/v1/submissions/bonus-payments/")
    process = review_process(db, standin)
    assert arrived.wait(60)  # Prolific set the batch up; the answer has not reached us
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    release.set()
    assert len(standin.batches) == 1 and not standin.payments
    gridstudy("review", "--study", "pilot", "--db", str(db))
    assert len(standin.payments) == 1 and len(standin.batches) == 2
    assert standin.payments[0] != next(iter(standin.batches))  # the orphan is never paid
    gridstudy("review", "--study", "pilot", "--db", str(db))
    assert len(standin.payments) == 1


def test_a_pay_call_whose_answer_was_lost_is_never_sent_again_by_itself(app, db, standin):
    three_participants(app, db, standin)
    arrived, release = standin.hold("POST", "/api/v1/bulk-bonus-payments/")
    process = review_process(db, standin)
    assert arrived.wait(60)
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    release.set()
    assert len(standin.payments) == 1  # Prolific paid; we never heard
    output = gridstudy("review", "--study", "pilot", "--db", str(db), ok=False)
    assert "its answer was lost. It is not sent again" in output and "--unpaid 1" in output
    assert len(standin.payments) == 1
    with app.extensions["gridstudy.store"].session() as session:
        assert session.get(ProlificBatch, 1).state == "paying"


def test_a_pay_call_prolific_refused_is_paid_by_the_next_review(app, db, standin):
    three_participants(app, db, standin)
    standin.fail("POST", "/api/v1/bulk-bonus-payments/", 400, detail="Insufficient balance.")
    output = gridstudy("review", "--study", "pilot", "--db", str(db))
    assert "Prolific refused to pay it" in output and "Insufficient balance." in output
    assert not standin.payments
    gridstudy("review", "--study", "pilot", "--db", str(db))
    assert len(standin.payments) == 1 and len(standin.batches) == 1


def test_unpaid_after_a_look_on_prolific_pays_the_batch_once(app, db, standin):
    three_participants(app, db, standin)
    standin.fail("POST", "/api/v1/bulk-bonus-payments/", 502)  # refused, but is that sure?
    gridstudy("review", "--study", "pilot", "--db", str(db), ok=False)
    assert not standin.payments
    gridstudy("review", "--study", "pilot", "--db", str(db), "--unpaid", "1")
    assert len(standin.payments) == 1
    gridstudy("review", "--study", "pilot", "--db", str(db))
    assert len(standin.payments) == 1


def test_two_reviews_at_once_pay_once(app, db, standin):
    people = three_participants(app, db, standin)
    store = app.extensions["gridstudy.store"]
    arrived, release = standin.hold("POST", "/api/v1/submissions/bonus-payments/")
    first = threading.Thread(target=review, args=(store, Api(), "pilot"), kwargs={"actor": "one"})
    first.start()
    assert arrived.wait(30)  # the first review waits for Prolific's answer to its set-up
    review(store, Api(), "pilot", actor="two")  # the second does everything meanwhile
    release.set()
    first.join(30)
    assert len(standin.payments) == 1
    approved = [i for call in standin.called("POST", "/api/v1/submissions/bulk-approve/")
                for i in call["body"]["submission_ids"]]
    assert sorted(approved) == sorted([people["PID-DONE"], people["PID-CARELESS"]])
    assert len(standin.returns[people["PID-NO"]]) == 1


# -- failures a researcher meets ------------------------------------------------------------


def test_no_token_or_a_refused_one_is_one_line_naming_the_variable(app, db, standin, monkeypatch):
    monkeypatch.delenv("PROLIFIC_API_TOKEN")
    output = publish(db, ok=False)
    assert "no Prolific API token: set PROLIFIC_API_TOKEN" in output and "Traceback" not in output
    monkeypatch.setenv("PROLIFIC_API_TOKEN", "not-the-token")
    output = publish(db, ok=False)
    assert "Prolific refused the API token (HTTP 401): check PROLIFIC_API_TOKEN" in output
    assert "not-the-token" not in output
    standin.fail("POST", "/api/v1/studies/", 403)
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    assert "(HTTP 403)" in publish(db, ok=False)
    payments = CliRunner().invoke(main, ["payments", "--study", "pilot", "--db", str(db),
                                         "--out", str(db.parent / "pay")])
    assert payments.exit_code == 0, payments.output  # needs no token


def test_429_and_5xx_are_retried_honouring_retry_after(app, db, standin):
    publish(db)
    standin.fail("GET", "/api/v1/submissions/", 429, headers={"Retry-After": "1"})
    standin.fail("GET", "/api/v1/submissions/", 503, times=2)
    started = time.monotonic()
    assert "0 submissions on Prolific" in gridstudy("sync", "--study", "pilot", "--db", str(db))
    assert time.monotonic() - started >= 1.0
    assert len(standin.called("GET", "/api/v1/submissions/")) == 4


def test_a_wait_of_a_day_or_a_proxys_page_is_said_at_once(app, db, standin):
    """A 429 asking to wait a day held the command for that day without a word; a proxy's
    HTML page with status 200 was a traceback."""
    publish(db)
    standin.fail("GET", "/api/v1/submissions/", 429, headers={"Retry-After": "86400"})
    started = time.monotonic()
    output = gridstudy("sync", "--study", "pilot", "--db", str(db), ok=False)
    assert time.monotonic() - started < 10
    assert "it asks to wait 86400 s before trying again (longer than 600 s)" in output
    standin.fail("GET", "/api/v1/submissions/", 200, page="<html><body>Gateway</body></html>")
    output = gridstudy("sync", "--study", "pilot", "--db", str(db), ok=False)
    assert "Prolific answered 200 with something that is not JSON" in output
    assert "Traceback" not in output


def test_a_validation_error_shows_prolifics_message(app, db, standin):
    standin.fail("POST", "/api/v1/studies/", 400,
                 detail={"reward": ["Reward is below the minimum hourly rate."]})
    output = publish(db, ok=False)
    assert "reward: Reward is below the minimum hourly rate." in output


def test_review_before_publish_says_what_to_do(app, db, standin):
    output = gridstudy("review", "--study", "pilot", "--db", str(db), ok=False)
    assert "pilot is not on Prolific yet: run `gridstudy prolific publish --study pilot`" in output


# -- hooks ------------------------------------------------------------------------------------


def signed(secret, body, timestamp=None):
    timestamp = str(int(time.time() if timestamp is None else timestamp))
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return {"X-Prolific-Request-Timestamp": timestamp,
            "X-Prolific-Request-Signature": base64.b64encode(digest).decode(),
            "Content-Type": "application/json"}


def test_hooks_subscribe_and_only_signed_recent_hooks_change_a_status(tmp_path, standin):
    live = start_live_server(tmp_path / "hooks.db")
    try:
        definition = make_definition()
        with live.store.session() as session:
            session.add(Study(id="pilot", title="t", definition=definition.to_dict()))
            session.add(ProlificStudy(study_id="pilot", prolific_id="p1", status="ACTIVE"))
            session.add(ProlificSubmission(id="sub1", study_id="pilot", prolific_pid="PID-1",
                                           status="ACTIVE"))
        output = gridstudy("hooks", "--study", "pilot", "--db", str(live.db_path),
                           "--url", "https://study.example.org/prolific/hook")
        assert "subscribed https://study.example.org/prolific/hook" in output
        [subscription] = standin.subscriptions
        assert subscription["event_type"] == "submission.status.change"
        secret = next(iter(standin.secrets.values()))["value"]
        hook = f"{live.url}/prolific/hook"

        def status():
            with live.store.session() as session:
                return session.get(ProlificSubmission, "sub1").status

        body = json.dumps({"event_type": "submission.status.change", "resource_id": "sub1",
                           "status": "AWAITING REVIEW", "study_id": "p1"}).encode()
        assert httpx.post(hook, content=body, headers=signed("wrong", body)).status_code == 401
        assert httpx.post(hook, content=body, headers=signed(secret, body, time.time() - 3600)
                          ).status_code == 401  # a recorded hook sent again an hour later
        assert httpx.post(hook, content=body, headers={"Content-Type": "application/json"}
                          ).status_code == 401
        tampered = body.replace(b"AWAITING REVIEW", b"APPROVED")
        assert httpx.post(hook, content=tampered, headers=signed(secret, body)).status_code == 401
        assert status() == "ACTIVE"
        good = httpx.post(hook, content=body, headers=signed(secret, body))
        assert good.status_code == 200, good.text
        assert status() == "AWAITING REVIEW"
        junk = b"{not json"
        assert httpx.post(hook, content=junk, headers=signed(secret, junk)).status_code == 400
        assert gridstudy("hooks", "--study", "pilot", "--db", str(live.db_path), "--url",
                         "http://study.example.org/prolific/hook", ok=False).count("https://") == 1
    finally:
        live.stop()


def test_hooks_arriving_out_of_order_keep_the_newest_status(tmp_path, standin):
    """Prolific does not promise the order of its hooks: one that failed is sent again
    later, after a newer one was taken, with its event's time in ``X-Timestamp``. The
    status kept is the newest event's, whatever order they arrive in, a sync's listing
    counts as of when it began, and ``X-Timestamp`` (not signed) cannot make a hook newer
    than its signed send time. Before, the last hook to arrive won: a submission approved
    went back to AWAITING REVIEW when the earlier hook was sent again."""
    from tests.consent.helpers import at_once

    live = start_live_server(tmp_path / "order.db")
    try:
        with live.store.session() as session:
            session.add(Study(id="pilot", title="t", definition=make_definition().to_dict()))
            session.add(ProlificStudy(study_id="pilot", prolific_id="p1", status="ACTIVE"))
            session.add(ProlificSubmission(id="sub1", study_id="pilot", prolific_pid="PID-1",
                                           status="ACTIVE"))
        gridstudy("hooks", "--study", "pilot", "--db", str(live.db_path),
                  "--url", "https://study.example.org/prolific/hook")
        secret = next(iter(standin.secrets.values()))["value"]
        now = time.time()

        def hook(submission, status, event_at, sent_at=None):
            body = json.dumps({"event_type": "submission.status.change", "study_id": "p1",
                               "resource_id": submission, "participant_id": "PID-1",
                               "status": status}).encode()
            headers = {**signed(secret, body, sent_at), "X-Timestamp": str(int(event_at))}
            answer = httpx.post(f"{live.url}/prolific/hook", content=body, headers=headers,
                                timeout=30)
            assert answer.status_code == 200, answer.text  # acknowledged, taken or not
            return answer.json()["done"]

        def status(submission):
            with live.store.session() as session:
                return session.get(ProlificSubmission, submission).status

        assert hook("sub1", "AWAITING REVIEW", now - 30) == "submission sub1: AWAITING REVIEW"
        assert hook("sub1", "APPROVED", now - 10) == "submission sub1: APPROVED"
        # the first hook sent again: its event is older than the approval
        assert hook("sub1", "AWAITING REVIEW", now - 30) == (
            "submission sub1: AWAITING REVIEW is older than the APPROVED kept: not taken")
        assert hook("sub1", "ACTIVE", now - 10).endswith("not taken")  # same second
        assert status("sub1") == "APPROVED"

        # a recorded hook sent again within the five minutes, its X-Timestamp moved an
        # hour on, counts as of its signed time: a later real hook still wins
        assert hook("sub2", "AWAITING REVIEW", now + 3600, sent_at=now - 60).endswith("(new)")
        assert hook("sub2", "RETURNED", now - 30) == "submission sub2: RETURNED"
        assert status("sub2") == "RETURNED"

        # the sync's listing is newer than a hook of an event before it
        listed = standin.join("p1", "PID-3")
        standin.submissions[listed]["status"] = "RETURNED"
        gridstudy("sync", "--study", "pilot", "--db", str(live.db_path))
        assert status(listed) == "RETURNED"
        assert hook(listed, "ACTIVE", now - 5).endswith("not taken")
        assert status(listed) == "RETURNED"

        # hooks of one submission at once, in any order: the newest event is kept
        events = [("ACTIVE", now - 50), ("AWAITING REVIEW", now - 40), ("REJECTED", now - 20),
                  ("AWAITING REVIEW", now - 45), ("ACTIVE", now - 55), ("AWAITING REVIEW", now - 41)]
        queue = list(events)
        lock = threading.Lock()

        def next_hook():
            with lock:
                event = queue.pop()
            return hook("sub1", *event)

        with live.store.session() as session:  # a submission older than every event here
            row = session.get(ProlificSubmission, "sub1")
            row.status, row.status_at = "ACTIVE", now - 60
        at_once(len(events), next_hook)
        assert status("sub1") == "REJECTED"
    finally:
        live.stop()


def test_hooks_for_a_new_submission_at_once_are_each_taken(tmp_path, standin):
    """Prolific sends the hooks of a submission our study has not seen yet close
    together (it joined, then returned at once); ``gridstudy serve`` takes each, and keeps
    one row. Before, the second insert of the row failed: a 500, and that status was
    lost."""
    from records.store import Store
    from tests.conftest import start_serve
    from tests.consent.helpers import at_once

    db = tmp_path / "hooks.db"
    with Store(str(db)) as store, store.session() as session:
        session.add(Study(id="pilot", title="t", definition=make_definition().to_dict()))
        session.add(ProlificStudy(study_id="pilot", prolific_id="p1", status="ACTIVE"))
    gridstudy("hooks", "--study", "pilot", "--db", str(db),
              "--url", "https://study.example.org/prolific/hook")
    secret = next(iter(standin.secrets.values()))["value"]
    # the study plays the tests' own problems, which the served process does not know:
    # only its hooks are used here
    server, url = start_serve(db, "gevent", "--skip-check", log=tmp_path / "serve.log")
    try:
        body = json.dumps({"event_type": "submission.status.change", "resource_id": "sub9",
                           "status": "RETURNED", "study_id": "p1",
                           "participant_id": "PID-9"}).encode()
        answers = at_once(8, lambda: httpx.post(f"{url}/prolific/hook", content=body,
                                                headers=signed(secret, body), timeout=30))
    finally:
        server.terminate()
        server.wait(60)
    assert [a.status_code for a in answers] == [200] * 8, [a.text for a in answers]
    with Store(str(db)) as store, store.session() as session:
        [row] = session.exec(select(ProlificSubmission)).all()
    assert (row.id, row.status, row.prolific_pid) == ("sub9", "RETURNED", "PID-9")
    assert "Traceback" not in (tmp_path / "serve.log").read_text()


# -- the dashboard --------------------------------------------------------------------------


def test_the_dashboard_publishes_reviews_and_shows_each_participants_prolific_status(app, db, standin):
    from study_server import auth
    from tests.study_server.test_dashboard import csrf, log_in

    auth.create_admin(app.extensions["gridstudy.store"].engine, "researcher", "correct horse")
    researcher = app.test_client()
    assert log_in(researcher).status_code == 302

    def press(action, **form):
        response = researcher.post(f"/dashboard/study/pilot/prolific/{action}", data={
            **form, "csrf_token": csrf(researcher, "/dashboard/")})
        assert response.status_code == 200, response.text
        return response.text

    assert "Publish on Prolific" in researcher.get("/dashboard/").text
    for places in ("0", "²"):  # "²" passed str.isdigit and then failed int(): a 500
        typo = researcher.post("/dashboard/study/pilot/prolific/publish", data={
            "places": places, "reward_cents": "250", "minutes": "10",
            "csrf_token": csrf(researcher, "/dashboard/")})
        assert typo.status_code == 400 and "places must be a whole number of at least 1" in typo.text
    assert not standin.studies
    shown = press("publish", places="3", reward_cents="250", minutes="10")
    [study] = standin.studies.values()
    assert f"on Prolific as {study['id']} (ACTIVE)" in shown
    assert study["external_study_url"].startswith("http://localhost/study/pilot?PROLIFIC_PID={{%PROLIFIC_PID%}}")
    submission, code = visit(app, standin, "PID-DONE", complete)
    standin.submit(submission, code)
    assert f"would approve {submission}" in press("dry-run") and not standin.approved
    shown = press("review")
    assert f"approved {submission}" in shown and "paid bonus batch 1" in shown
    page = researcher.get("/dashboard/").text
    assert '<td data-prolific-status>APPROVED</td>' in page and "Bonus batch 1: paid, 0.25 in all" in page
    assert "bonus batch 1: paid earlier" in press("review")
    with app.extensions["gridstudy.store"].session() as session:
        admins = {a.admin for a in session.exec(select(Audit).where(Audit.action.startswith("prolific-")))}
    assert admins == {"researcher"}
    standin.fail("GET", "/api/v1/submissions/", 401)
    assert "error: Prolific refused the API token (HTTP 401)" in press("sync")
