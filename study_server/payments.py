"""Paying a study's participants on Prolific: who to approve, who not, and the bonuses.

One row per participant, with the Prolific ids a researcher pastes into Prolific
(``PROLIFIC_PID``, ``STUDY_ID``, every ``SESSION_ID`` seen), when the visit started and
ended, how it ended, the code the participant was given, and a decision that follows
the exclusions, made in one place (:func:`decide`) for the dashboard, ``gridstudy
payments`` and the report:

* completed and included: ``approve``, with the bonus rule
  (:class:`consent.definition.BonusRule`) over the *included* solved attempts only;
* completed but excluded (by a rule, the attention checks among them, or by hand): what
  the study file's ``on_exclusion`` says: ``approve`` without a bonus
  (``approve_without_bonus``, the default) or ``reject`` with Prolific's rejection
  category; review a rejection before making it on Prolific, whose rules decide what
  is fair;
* declined consent, screened out, failed the quiz, wrong device, timed out, or the
  study was full: ``return``, asking the participant to return their submission;
* ``pending``: still taking part.

The ``reason`` column always says why. ``decisions.csv`` is that table; ``approve.txt``
the ids to approve, one per line, as Prolific's bulk approval takes them; ``bonuses.csv``
is in Prolific's bulk-bonus format: one ``PROLIFIC_PID,amount`` line per participant, no
header.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session, func, select

from consent.definition import StudyDefinition
from records.flow import DROPS, EXCLUDED, standing
from records.models import EpisodeRow, Participant
from study_server import assignment

APPROVE, REJECT, RETURN, PENDING = "approve", "reject", "return", "pending"
FAILED_ATTENTION = "failed-attention"
"""A visit ended at a failed attention check (the study file's ``attention_failure:
end``): paid as an excluded participant, by ``on_exclusion``."""
RETURNED = {status: why for _, status, why in DROPS if status not in ("active", FAILED_ATTENTION)}
"""Statuses whose participant is asked to return the submission, with the reason in the
words of the participant flow (declined consent, screened out, wrong device, ...)."""
ASK_TO_RETURN = "ask the participant to return their submission"
REJECTION_CATEGORIES = (("attention check", "FAILED_CHECK"), ("by hand", "OTHER"))
"""Prolific's rejection category by what the exclusion reason says; any other rule
(too few inputs, idle, tab hidden, window left, key-mashing) is ``LOW_EFFORT``."""
COLUMNS = ("participant_id", "prolific_pid", "prolific_study_id", "prolific_sessions", "status",
           "decision", "reason", "rejection_category", "code", "started_at", "ended_at",
           "solved", "bonus")


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
    """Why, always: how the visit ended and, for an excluded participant, the rule."""
    rejection_category: str
    """Prolific's rejection category for a ``reject`` (empty otherwise)."""
    code: str | None
    started_at: datetime | None
    ended_at: datetime | None
    solved: int
    bonus: float


READ = ("id", "external_id", "prolific_study_id", "prolific_session_id", "prolific_sessions",
        "status", "exclusion_reason", "code", "created_at", "ended_at")
"""The participant's columns a payment row is made from."""


def payment_rows(db: Session, study_id: str) -> tuple[StudyDefinition, list[PaymentRow]]:
    """The study's definition and one row per participant, in arrival order."""
    _, definition = assignment.load_study(db, study_id)
    solved = solved_counts(db, study_id, definition)
    rows = []
    # the columns a row needs, not whole participants: their stage records are most of a
    # row, and a study of 16,000 took 0.9 s to read whole
    for person in db.exec(select(*(getattr(Participant, name) for name in READ))
                          .where(Participant.study_id == study_id)
                          .order_by(Participant.id)).all():
        sessions = list(person.prolific_sessions or {}) or \
            [s for s in (person.prolific_session_id,) if s]
        count = solved[person.id]
        decision, reason, category, bonus = decide(definition, person.status,
                                                   person.exclusion_reason, count)
        rows.append(PaymentRow(
            person.id, person.external_id, person.prolific_study_id, " ".join(sessions),
            person.status, decision, reason, category, person.code,
            person.created_at, person.ended_at, count, bonus))
    return definition, rows


def decide(definition: StudyDefinition, status: str | None, exclusion_reason: str | None,
           solved: int) -> tuple[str, str, str, float]:
    """The payment decision for one participant: ``(decision, reason, Prolific's
    rejection category or "", bonus)``. ``solved``: their included solved attempts."""
    status = standing(status, exclusion_reason)
    if status in RETURNED:
        return RETURN, f"{RETURNED[status]}: {ASK_TO_RETURN}", "", 0.0
    if status in (EXCLUDED, FAILED_ATTENTION):
        why = exclusion_reason or "excluded"
        done = "ended at the check" if status == FAILED_ATTENTION else "completed"
        if definition.on_exclusion == "reject":
            category = next((c for words, c in REJECTION_CATEGORIES if words in why), "LOW_EFFORT")
            return REJECT, f"{done}, excluded: {why}", category, 0.0
        return APPROVE, f"{done}, excluded: {why}; approved without bonus", "", 0.0
    if status == "complete":
        return (APPROVE, f"completed and included ({solved} solved)", "",
                definition.bonus.amount(solved))
    if status == "active":
        return PENDING, "still taking part", "", 0.0
    return PENDING, f"ended as {status}: decide by hand", "", 0.0


def solved_counts(db: Session, study_id: str, definition: StudyDefinition) -> Counter:
    """Assigned problems each participant solved (done, score 1, included; tutorials and
    excluded attempts not counted)."""
    found = db.exec(select(EpisodeRow.participant_id, func.count()).where(
        EpisodeRow.study_id == study_id, EpisodeRow.status == "done", EpisodeRow.score >= 1.0,
        EpisodeRow.included,
        EpisodeRow.participant_id.is_not(None),
        EpisodeRow.problem_id.in_(list(definition.problems)))
        .group_by(EpisodeRow.participant_id)).all()
    return Counter(dict(found))


def decisions_csv(rows: list[PaymentRow]) -> str:
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
    return bonus_lines((row.prolific_pid, row.bonus) for row in rows if row.bonus > 0)


def bonus_lines(bonuses: Iterable[tuple[str, float]]) -> str:
    """``PROLIFIC_PID,amount`` lines, as Prolific's bulk bonus takes them."""
    return "".join(f"{pid},{amount:.2f}\n" for pid, amount in bonuses)


def approve_list(rows: list[PaymentRow]) -> str:
    """Prolific's bulk approval: the ``PROLIFIC_PID`` of each participant to approve, one
    per line, nothing else."""
    return "".join(f"{row.prolific_pid}\n" for row in rows if row.decision == APPROVE)


def write_payments(rows: list[PaymentRow], out: Path) -> tuple[Path, Path, Path]:
    """``decisions.csv``, ``approve.txt`` and ``bonuses.csv`` in ``out``, all three or
    none: written beside it first, so that a full disk or a stop part-way leaves the
    earlier three as they were (never an approval list cut short, or one of another
    day's decisions)."""
    from study_server.export import staged

    with staged(out, "gridstudy payments") as staging:
        for name, text in (("decisions.csv", decisions_csv(rows)),
                           ("approve.txt", approve_list(rows)),
                           ("bonuses.csv", bonuses_csv(rows))):
            (staging / name).write_text(text)
    return out / "decisions.csv", out / "approve.txt", out / "bonuses.csv"


def _cell(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float):
        return f"{value:.2f}"
    return "" if value is None else value
