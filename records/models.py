"""The database tables, built from their one declaration in :mod:`records.schema`.

One ``Event`` row per applied action, for humans and models alike: the analysis reads
the same columns whoever produced them. Frames are stored once each in ``Frame`` (keyed
by :func:`tasks.core.frame_hash`), because a real-time session repeats the same frame on
most idle ticks. Inputs that arrived but were not applied are ``RawInput`` rows.

Each class is an ordinary SQLModel table (``Event(seq=0, ...)``, ``select(Event)``,
``Event.seq``); only its fields come from the schema, so that the database, the export
and the analysis cannot disagree about them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Index
from sqlmodel import JSON, Column, SQLModel
from sqlmodel import Field as SQLField

from records import schema


def utcnow() -> datetime:
    return datetime.now(UTC)


def _column(field: schema.Field) -> tuple[Any, Any]:
    """The annotation and the SQLModel ``Field`` of one schema field."""
    kind = schema.PYTHON_TYPES[field.type]
    options: dict[str, Any] = {"description": field.doc}
    if field.type == schema.JSON:
        options.update(default_factory=dict, sa_column=Column(JSON))
    elif field.default == schema.NOW:
        options["default_factory"] = utcnow
    elif field.key:
        options.update(primary_key=True, default=None)
    elif not field.required:
        options["default"] = field.default
    if field.index:
        options["index"] = True
    if field.foreign_key:
        options["foreign_key"] = field.foreign_key
    nullable = kind is int if field.key else field.nullable
    return (kind | None if nullable and field.type != schema.JSON else kind), SQLField(**options)


def table_model(class_name: str, table: schema.Table) -> type[SQLModel]:
    """The SQLModel table class for ``table``."""
    namespace: dict[str, Any] = {"__annotations__": {}, "__tablename__": table.name,
                                 "__doc__": table.doc, "__module__": __name__}
    for field in table.fields:
        namespace["__annotations__"][field.name], namespace[field.name] = _column(field)
    namespace["__table_args__"] = tuple(Index(f"uq_{table.name}_{'_'.join(fields)}", *fields,
                                              unique=True) for fields in table.unique)
    return type(class_name, (SQLModel,), namespace, table=True)


Study = table_model("Study", schema.STUDY)
Participant = table_model("Participant", schema.PARTICIPANT)
AgentRun = table_model("AgentRun", schema.AGENT_RUN)
EpisodeRow = table_model("EpisodeRow", schema.EPISODE)
Event = table_model("Event", schema.EVENT)
Frame = table_model("Frame", schema.FRAME)
RawInput = table_model("RawInput", schema.RAW_INPUT)
Admin = table_model("Admin", schema.ADMIN)
ApiToken = table_model("ApiToken", schema.API_TOKEN)
Setting = table_model("Setting", schema.SETTING)
Audit = table_model("Audit", schema.AUDIT)
Signal = table_model("Signal", schema.SIGNAL)
Worker = table_model("Worker", schema.WORKER)
LiveSession = table_model("LiveSession", schema.LIVE_SESSION)
LoginFailure = table_model("LoginFailure", schema.LOGIN_FAILURE)
ProlificStudy = table_model("ProlificStudy", schema.PROLIFIC_STUDY)
ProlificSubmission = table_model("ProlificSubmission", schema.PROLIFIC_SUBMISSION)
ProlificBonus = table_model("ProlificBonus", schema.PROLIFIC_BONUS)
ProlificBatch = table_model("ProlificBatch", schema.PROLIFIC_BATCH)
