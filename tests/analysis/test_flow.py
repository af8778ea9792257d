"""The participant flow, the report's second section: every count and reason checked
against the participants table of a real SQLite file, payments by the study's own rule."""

from __future__ import annotations

import csv
import html
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from analysis import figures, flow
from analysis.cli import report
from analysis.load import load
from records.models import Participant, Study
from records.store import Store
from tasks import registry
from tests.consent.helpers import FLOW_PROBLEMS, make_definition, register_walker_problems

START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
PILOT = [  # status, exclusion reason, minutes taken (None: the visit has not ended)
    ("complete", None, 12), ("complete", None, 20), ("complete", None, 16),
    # failed attention checks with attention_failure: continue: played on to the end, excluded
    ("complete", "failed 2 attention checks (at most 0 allowed)", 30),
    ("excluded", "by hand: bot-like", 9),
    ("declined", None, 1), ("screened-out", None, 3), ("screened-out", None, 2),
    ("failed-quiz", None, 6), ("timed-out", None, 60), ("full", None, 1),
    ("wrong-device", None, 1), ("active", None, None),
]


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    """The pilot study (a bonus of 0.25 per problem solved) with PILOT's participants, the
    first of whom solved one assigned problem; and another study's two participants."""
    register_walker_problems(FLOW_PROBLEMS)
    path = tmp_path_factory.mktemp("flow") / "gridstudy.db"
    definition = make_definition(bonus={"per_solved": 0.25}, on_exclusion="reject")
    with Store(f"sqlite:///{path}") as store:
        with store.session() as db:
            db.add(Study(id="pilot", title="Grid worlds", definition=definition.to_dict()))
            db.add(Study(id="other", title="Other", definition=definition.to_dict()))
            for i, (status, why, minutes) in enumerate(PILOT, start=1):
                db.add(Participant(
                    id=i, study_id="pilot", external_id=f"P{i}", status=status,
                    exclusion_reason=why, created_at=START,
                    ended_at=None if minutes is None else START + timedelta(minutes=minutes)))
            db.add_all([Participant(id=100 + i, study_id="other", external_id=f"O{i}",
                                    status="complete") for i in range(2)])
        episode = store.start_episode(problem=registry.get_problem("test/p0"), study_id="pilot",
                                      participant_id=1)
        store.finish_episode(episode, status="done", phase="done", score=1.0, info={})
        for participant, reason in ((2, None), (4, "failed 2 attention checks"), (2, "tutorial")):
            episode = store.start_episode(problem=registry.get_problem("test/p0"),
                                          study_id="pilot", participant_id=participant,
                                          info={"tutorial": "planning"} if reason == "tutorial"
                                          else {})
            store.finish_episode(episode, status="done", phase="done", score=0.0, info={},
                                 excluded=reason)
        store.flush()
    return path


def table(path, query):
    with sqlite3.connect(path) as connection:
        return connection.execute(query).fetchall()


@pytest.fixture(scope="module")
def written(database, tmp_path_factory):
    out = tmp_path_factory.mktemp("flow-report")
    result = CliRunner().invoke(report, ["--db", str(database), "--out", str(out), "--quiet",
                                         "--study", "pilot"])
    assert result.exit_code == 0, result.output
    return out


def read(path):
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_every_drop_is_counted_from_the_participants_table(database, written):
    rows = read(written / "participant_flow.csv")
    assert {r["study"] for r in rows} == {"pilot"}  # the other study is not mixed in
    statuses = dict(table(database, "select status, count(*) from participant "
                                    "where study_id = 'pilot' group by status"))
    arrived = sum(statuses.values())
    assert (rows[0]["step"], int(rows[0]["participants"])) == ("arrived", arrived)
    dropped = {}
    for row in rows:
        if int(row["dropped"]):
            key = row["status"] if row["status"] != "excluded" else f"excluded: {row['reason']}"
            dropped[key] = int(row["dropped"])
    excluded = ("study_id = 'pilot' and (status = 'excluded' "
                "or status = 'complete' and exclusion_reason is not null)")
    reasons = dict(table(database, "select exclusion_reason, count(*) from participant where "
                                   f"{excluded} group by exclusion_reason"))
    expected = {s: n for s, n in statuses.items() if s not in ("complete", "excluded")}
    expected |= {f"excluded: {why}": n for why, n in reasons.items()}
    assert dropped == expected
    [(included,)] = table(database, "select count(*) from participant where study_id = 'pilot'"
                                    " and status = 'complete' and exclusion_reason is null")
    assert (rows[-1]["step"], int(rows[-1]["participants"])) == ("included", included)
    remaining = [int(r["participants"]) for r in rows]
    assert all(a - b == int(r["dropped"])
               for a, b, r in zip(remaining, remaining[1:], rows[1:], strict=False))


def test_each_drop_says_why(written):
    reasons = {r["status"]: r["reason"] for r in read(written / "participant_flow.csv")
               if int(r["dropped"])}
    assert reasons["screened-out"] == "failed the colour-vision screening"
    assert reasons["timed-out"] == "ran out of the study's time limit"
    assert reasons["active"] == "still taking part"


def test_completion_time_and_payments(written):
    [summary] = read(written / "participant_summary.csv")
    # completed (complete or excluded at the end): 12, 20, 16, 30, 9 minutes
    assert (summary["arrived"], summary["completed"], summary["included"]) == ("13", "5", "3")
    assert float(summary["minutes_median"]) == 16.0
    assert (float(summary["minutes_q1"]), float(summary["minutes_q3"])) == (12.0, 20.0)
    # study_server.payments' decisions (the study rejects the excluded): 3 approve,
    # 2 reject, 7 return (declined, screened out twice, failed quiz, timed out, full,
    # wrong device), 1 pending
    assert {k: summary[k] for k in flow.DECISIONS} == {
        "approve": "3", "reject": "2", "return": "7", "pending": "1"}
    assert float(summary["bonus_total"]) == 0.25  # participant 1 solved one problem


def test_the_note_on_exclusions_counts_the_study_problems_attempts_not_the_practice(written):
    page = html.unescape((written / "report.html").read_text())
    assert ("1 of 3 attempts by people at the study's problems are excluded and left out of "
            "every score (reasons under Exclusions; practice games are never scored)") in page


def test_the_flow_is_the_second_section_with_its_figure(written):
    page = (written / "report.html").read_text()
    order = [page.index(f'<section id="{name}">')
             for name in ("task_type_scores", "participant_flow", "problem_scores")]
    assert order == sorted(order)
    assert page.index('<section id="participant_flow">') < page.index("<h2>Data used</h2>")
    svg = (written / "figures" / "participant_flow.svg").read_text()
    assert "Participant flow: pilot" in svg and "(-2: failed the colour-vision" in svg
    # one participant is still playing: not a drop, and not written as one
    assert "(1 still taking part)" in svg and "-1: still taking part" not in svg


def test_an_export_has_no_payments_and_says_so(database):
    people = load(database, study="pilot").participants
    [summary] = flow.summary_rows(people)
    assert summary["payments"].startswith("not read")
    assert figures.flow_figure(flow.flow_rows(people)) is not None
