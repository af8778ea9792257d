"""Paying a study's participants on Prolific: who to approve, who not, and the bonuses.

One row per participant, with the Prolific ids a researcher pastes into Prolific
(``PROLIFIC_PID``, ``STUDY_ID``, every ``SESSION_ID`` seen), when the visit started and
ended, how it ended, the code the participant was given, and a decision:

* ``approve``: completed and not excluded;
* ``reject``: excluded by the study's attention rule (the reason says which checks
  failed); review it before rejecting on Prolific, whose rules decide what is fair;
* ``screened-out``: screened out (colour vision), failed the comprehension quiz, or
  declined consent, each with its code; Prolific pays screen-outs by its own rule;
* ``return``: the visit timed out or the study was full; ask the participant to return
  the submission;
* ``pending``: still taking part.

The bonus is the study file's rule (:class:`consent.definition.BonusRule`: an amount per
assigned problem solved, capped) for approved participants. ``bonuses.csv`` is in
Prolific's bulk-bonus format: one ``PROLIFIC_PID,amount`` line per participant, no
header.
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session, func, select

from consent.definition import StudyDefinition
from records.models import EpisodeRow, Participant
from study_server import assignment

DECISIONS = {"complete": "approve", "excluded": "reject", "screened-out": "screened-out",
             "failed-quiz": "screened-out", "declined": "screened-out", "timed-out": "return",
             "full": "return", "wrong-device": "return", "active": "pending"}
COLUMNS = ("participant_id", "prolific_pid", "prolific_study_id", "prolific_sessions", "status",
           "decision", "reason", "code", "started_at", "ended_at", "solved", "bonus")


@dataclass(frozen=True)
class PaymentRow:
    participant_id: int
    prolific_pid: str
    prolific_study_id: str | None
    prolific_sessions: str
    """Every SESSION_ID seen, space-separated, first first."""
    status: str
    decision: str
    reason: str
    code: str | None
    started_at: datetime | None
    ended_at: datetime | None
    solved: int
    bonus: float


def payment_rows(db: Session, study_id: str) -> tuple[StudyDefinition, list[PaymentRow]]:
    """The study's definition and one row per participant, in arrival order."""
    _, definition = assignment.load_study(db, study_id)
    solved = solved_counts(db, study_id, definition)
    rows = []
    for person in db.exec(select(Participant).where(Participant.study_id == study_id)
                          .order_by(Participant.id)).all():
        decision = DECISIONS.get(person.status, "pending")
        sessions = list(person.prolific_sessions or {}) or \
            [s for s in (person.prolific_session_id,) if s]
        count = solved[person.id]
        rows.append(PaymentRow(
            person.id, person.external_id, person.prolific_study_id, " ".join(sessions),
            person.status, decision, _reason(person, decision), person.code,
            person.created_at, person.ended_at, count,
            definition.bonus.amount(count) if decision == "approve" else 0.0))
    return definition, rows


def _reason(person: Participant, decision: str) -> str:
    if decision == "approve":
        return "completed"
    if decision == "pending":
        return "still taking part"
    return person.exclusion_reason or person.status


def solved_counts(db: Session, study_id: str, definition: StudyDefinition) -> Counter:
    """Assigned problems each participant solved (done, score 1; tutorials not counted)."""
    found = db.exec(select(EpisodeRow.participant_id, func.count()).where(
        EpisodeRow.study_id == study_id, EpisodeRow.status == "done", EpisodeRow.score >= 1.0,
        EpisodeRow.participant_id.is_not(None),
        EpisodeRow.problem_id.in_(list(definition.problems)))
        .group_by(EpisodeRow.participant_id)).all()
    return Counter(dict(found))


def approvals_csv(rows: list[PaymentRow]) -> str:
    """Every participant with the decision and why (a CSV with a header)."""
    from io import StringIO

    text = StringIO()
    writer = csv.DictWriter(text, COLUMNS)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in asdict(row).items()})
    return text.getvalue()


def bonuses_csv(rows: list[PaymentRow]) -> str:
    """Prolific's bulk-bonus format: ``PROLIFIC_PID,amount`` per approved participant
    with a bonus, no header."""
    return "".join(f"{row.prolific_pid},{row.bonus:.2f}\n" for row in rows if row.bonus > 0)


def write_payments(rows: list[PaymentRow], out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    approvals, bonuses = out / "approvals.csv", out / "bonuses.csv"
    approvals.write_text(approvals_csv(rows))
    bonuses.write_text(bonuses_csv(rows))
    return approvals, bonuses


def _cell(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float):
        return f"{value:.2f}"
    return "" if value is None else value
