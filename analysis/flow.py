"""The participant flow a Methods section reports: how many arrived, where each left and
why, how many completed and were included, how long they took and what they were paid.

Read from the ``participant`` table (``Dataset.participants``): a participant's
``status`` says how the visit ended (``consent.definition.ENDINGS``), and excluded
participants carry their ``exclusion_reason``. The steps follow the flow's order
(``consent.stages``): consent, the device check, colour screening, the reservation of
problems (a full study), the comprehension quiz, the time limit, the end of the visit,
then exclusion. Each step keeps the participants who did not leave at it, so the last
count is the participants included. Payments are not decided here: the report is given
each study's decisions by the study's own payment rule (``gridstudy report`` reads
``study_server.payments``), so the flow and the payments agree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd

from analysis.readings import Row

DROPS = (
    ("consented", "declined", "declined consent"),
    ("on a suitable device", "wrong-device", "ended on a device the study cannot be played on"),
    ("passed screening", "screened-out", "failed the colour-vision screening"),
    ("given problems", "full", "the study was full"),
    ("passed the quiz", "failed-quiz", "failed the comprehension quiz"),
    ("finished in time", "timed-out", "ran out of the study's time limit"),
    ("finished", "active", "still taking part"),
)
"""(step reached by those who stay, status of those who leave there, the reason in words),
in the flow's order; exclusion comes last, one drop per reason."""
INCLUDED, EXCLUDED, COMPLETE = "included", "excluded", "complete"
DECISIONS = ("approve", "reject", "screened-out", "return", "pending")
"""The payment decisions the flow's payment columns count (``study_server.payments``)."""

Payments = Callable[[str], dict[str, Any] | str]
"""A study id -> its decision counts and ``bonus_total``, or why they are not available."""


def flow_rows(participants: pd.DataFrame) -> list[Row]:
    """Per study, one row per step of the flow: the participants still in after it
    (``participants``), and those who left at it (``dropped``) with their ``status`` and
    ``reason``. Steps nobody left at are kept, so every study lists every step."""
    rows = []
    for study, people in by_study(participants):
        statuses = Counter(people["status"].astype("string").fillna("active"))
        remaining = len(people)
        rows.append(_row(study, "arrived", remaining, 0, None, None))
        drops = [(step, status, why, statuses.pop(status, 0)) for step, status, why in DROPS]
        statuses.pop(COMPLETE, 0)
        excluded = people[people["status"] == EXCLUDED]["exclusion_reason"]
        statuses.pop(EXCLUDED, 0)
        reasons = Counter(excluded.astype("string").fillna("excluded"))
        drops += [("not excluded", EXCLUDED, why, n) for why, n in sorted(reasons.items())]
        drops += [(f"not {status}", status, f"ended as {status}", n)  # a status not listed
                  for status, n in sorted(statuses.items())]
        for step, status, why, n in drops:
            remaining -= n
            rows.append(_row(study, step, remaining, n, status, why))
        rows.append(_row(study, INCLUDED, remaining, 0, None, None))
    return rows


def _row(study: str, step: str, remaining: int, dropped: int, status: str | None,
         reason: str | None) -> Row:
    return {"study": study, "step": step, "participants": remaining, "dropped": dropped,
            "status": status, "reason": reason}


def by_study(participants: pd.DataFrame) -> Iterable[tuple[str, pd.DataFrame]]:
    """The participants of each study, in study order."""
    if participants.empty:
        return []
    return [(str(study), people) for study, people in participants.groupby("study_id", sort=True)]


def summary_rows(participants: pd.DataFrame, payments: Payments | None = None) -> list[Row]:
    """Per study: participants arrived, completed and included; the completion time of
    those who reached the end of the visit (median and interquartile range, minutes); and,
    when ``payments`` is given, how many were approved, rejected, screened out, asked to
    return or still pending, and the bonuses' total."""
    rows = []
    for study, people in by_study(participants):
        ended = people[people["status"].isin([COMPLETE, EXCLUDED])]
        minutes = ((ended["ended_at"] - ended["created_at"]).dt.total_seconds() / 60).dropna()
        row: Row = {"study": study, "arrived": len(people), "completed": len(ended),
                    "included": int((people["status"] == COMPLETE).sum()),
                    "minutes_median": _quantile(minutes, 0.5),
                    "minutes_q1": _quantile(minutes, 0.25), "minutes_q3": _quantile(minutes, 0.75)}
        rows.append(row | payment_columns(payments, study))
    return rows


def _quantile(values: pd.Series, q: float) -> float | None:
    return None if values.empty else float(values.quantile(q))


def payment_columns(payments: Payments | None, study: str) -> Row:
    """The study's payment decisions as columns, or a ``payments`` note saying why not."""
    if payments is None:
        return {"payments": "not read (an export, or analysis without the study's database)"}
    decided = payments(study)
    if isinstance(decided, str):
        return {"payments": decided}
    return {decision: int(decided.get(decision, 0)) for decision in DECISIONS} | {
        "bonus_total": float(decided.get("bonus_total", 0.0))}
