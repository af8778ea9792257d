"""The participant flow a Methods section reports: how many arrived, where each left and
why, how many completed and were included, how long they took and what they were paid.

The steps of one study are :func:`records.flow.flow_steps` (the dashboard draws the same
ones), read from the ``participant`` table of the chosen studies
(``Dataset.participants``). Payments are not decided here: the report is given each
study's decisions by the study's own payment rule (``gridstudy report`` reads
``study_server.payments``), so the flow and the payments agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd

from analysis.readings import Row
from records.flow import COMPLETE, EXCLUDED, flow_steps, standing

DECISIONS = ("approve", "reject", "return", "pending")
"""The payment decisions the flow's payment columns count (``study_server.payments``)."""

Payments = Callable[[str], dict[str, Any] | str]
"""A study id -> its decision counts and ``bonus_total``, or why they are not available."""


def flow_rows(participants: pd.DataFrame) -> list[Row]:
    """Per study, one row per step of the flow (:func:`records.flow.flow_steps`): the
    participants still in after it, and those who left at it with their status and
    reason."""
    rows = []
    for study, people in by_study(participants):
        rows += [{"study": study, **step} for step in flow_steps(_statuses(people))]
    return rows


def _statuses(people: pd.DataFrame) -> list[tuple[str | None, str | None]]:
    """Each participant's ``(status, exclusion_reason)``, None where empty."""
    columns = [people[name].astype("object").where(people[name].notna(), None)
               for name in ("status", "exclusion_reason")]
    return list(zip(*columns, strict=True))


def by_study(participants: pd.DataFrame) -> Iterable[tuple[str, pd.DataFrame]]:
    """The participants of each study, in study order."""
    if participants.empty:
        return []
    return [(str(study), people) for study, people in participants.groupby("study_id", sort=True)]


def summary_rows(participants: pd.DataFrame, payments: Payments | None = None) -> list[Row]:
    """Per study: participants arrived, completed and included; the completion time of
    those who reached the end of the visit (median and interquartile range, minutes); and,
    when ``payments`` is given, how many were approved, rejected, asked to return or
    still pending, and the bonuses' total."""
    rows = []
    for study, people in by_study(participants):
        ended = people[people["status"].isin([COMPLETE, EXCLUDED])]
        minutes = ((ended["ended_at"] - ended["created_at"]).dt.total_seconds() / 60).dropna()
        standings = [standing(*pair) for pair in _statuses(people)]
        row: Row = {"study": study, "arrived": len(people), "completed": len(ended),
                    "included": standings.count(COMPLETE),
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
