"""Every row a driver writes, built in one place and checked against :mod:`records.schema`.

* :func:`step_row`: an applied action (a :class:`tasks.worldtest.Step`), humans and
  models alike, with the frame it produced;
* :func:`failed_step_row`: an action whose step raised (not applied, no tick);
* :func:`invalid_turn_row`: a model turn that named no action available then (not
  applied, no tick, ``parse_valid`` false, so grounding accuracy counts it);
* :func:`raw_input_row`: an input that arrived but was not applied.

A mistake (a field the schema does not know, a required one missing, a value of the
wrong type: text for an integer, a nested object for text, a non-finite number) raises
``ValueError`` where the row is built, so nothing the writer cannot store reaches it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from records import schema

STEP_FIELDS = ("phase", "tick", "action", "next_phase", "score", "frame")
"""Event fields :func:`step_row` takes from the step; callers may not pass them."""


def check(table: schema.Table, record: dict[str, Any], extra: Iterable[str] = ()) -> None:
    """Raise ``ValueError`` naming the fields of ``record`` that ``table`` does not know,
    the required ones it leaves empty, or the first value its field cannot store. A
    text value's NUL characters and lone surrogates are replaced, in ``record``
    (:func:`records.schema.storable_text`).

    Every row of every tick passes here (where it is built; the store checks again only
    rows that did not come from here), so only the record's own values are looked at
    while all is well; the table's order decides which error is named first."""
    fields = table.by_name
    if not record.keys() <= fields.keys():
        unknown = record.keys() - fields.keys() - set(extra)
        if unknown:
            raise ValueError(f"unknown {table.name} field(s) {sorted(unknown)}; "
                             f"expected some of {sorted(table.names)}")
    missing = [name for name in table.required if record.get(name) is None]
    if missing:
        raise ValueError(f"{table.name} record is missing required field(s) {missing}")
    for name, value in record.items():
        field = fields.get(name)
        if value is None or field is None:
            continue
        if field.rejects(value):
            _raise_first_rejected(table, record)
        if field.type == schema.TEXT:
            record[name] = schema.storable_text(value)


def _raise_first_rejected(table: schema.Table, record: dict[str, Any]) -> None:
    for field in table.fields:
        reason = field.rejects(record.get(field.name))
        if reason:
            raise ValueError(f"{table.name} record: {reason}")


def event_row(*, server_time: float | None = None, **fields: Any) -> dict[str, Any]:
    """An event row from its fields (``frame`` too: the store keeps it apart);
    ``server_time`` defaults to now."""
    record = {**fields, "server_time": time.time() if server_time is None else server_time}
    check(schema.EVENT, record, extra=("frame",))
    return record


def step_row(step: Any, **fields: Any) -> dict[str, Any]:
    """The event row of one applied step; ``fields`` are the others (``episode_id``,
    ``seq``, ``problem_id``, ``source``, who played, times, model fields ...)."""
    clash = set(fields) & {*STEP_FIELDS, "frame_hash", "applied"}
    if clash:
        raise TypeError(f"step_row takes {sorted(clash)} from the step; do not pass them")
    return event_row(phase=step.phase, tick=step.index, action=step.action,
                     next_phase=step.next_phase, score=step.score,
                     frame=step.observation.frame, applied=True, **fields)


def failed_step_row(action: str, *, error: str, **fields: Any) -> dict[str, Any]:
    """The event row of an action whose step raised: not applied, no tick, the error."""
    return event_row(action=action, tick=None, applied=False, error=error, **fields)


def invalid_turn_row(*, raw_reply: str, error: str, **fields: Any) -> dict[str, Any]:
    """The event row of a model turn that was not applied: no tick, no action, no frame,
    ``parse_valid`` false."""
    return event_row(tick=None, action=None, applied=False, raw_reply=raw_reply,
                     parse_valid=False, error=error, **fields)


def raw_input_row(**fields: Any) -> dict[str, Any]:
    """The row of an input that arrived but was not applied."""
    check(schema.RAW_INPUT, fields)
    return fields
