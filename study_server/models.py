"""The tables of the event store, and nothing else.

One ``Event`` row per applied action, for humans and models alike: the analysis reads
the same columns whoever produced them. Frames are stored once each in ``Frame`` (keyed
by :func:`tasks.core.frame_hash`), because a real-time session repeats the same frame on
most idle ticks. Inputs that arrived but were not applied are ``RawInput`` rows.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import JSON, Column, Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(UTC)


class Study(SQLModel, table=True):
    id: str = Field(primary_key=True)
    """A short slug chosen by the researcher (``pilot-1``)."""
    title: str = ""
    definition: dict = Field(default_factory=dict, sa_column=Column(JSON))
    """The validated study definition, as loaded from the researcher's file."""
    created_at: datetime = Field(default_factory=utcnow)
    status: str = "open"
    """``open`` (taking participants), ``closed``."""


class Participant(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    study_id: str = Field(foreign_key="study.id", index=True)
    external_id: str = Field(index=True)
    """Prolific's ``PROLIFIC_PID``, or a join code for local participants."""
    prolific_study_id: str | None = None
    prolific_session_id: str | None = None
    stage: str = "consent"
    """Where the participant is in the flow (consent, screening, ..., complete)."""
    status: str = "active"
    """``active``, ``complete``, ``screened-out``, ``declined``, ``timed-out``, ``excluded``."""
    exclusion_reason: str | None = None
    consent_version: str | None = None
    data: dict = Field(default_factory=dict, sa_column=Column(JSON))
    """One record per finished stage of the flow (jsPsych-style)."""
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class AgentRun(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    study_id: str | None = Field(default=None, index=True)
    agent_kind: str = "llm"
    """``llm``, ``random``, ``scripted``, ``planner``."""
    model: str | None = None
    config: dict = Field(default_factory=dict, sa_column=Column(JSON))
    """Provider, prompt variant, history mode, temperature, price table ..."""
    created_at: datetime = Field(default_factory=utcnow)


class EpisodeRow(SQLModel, table=True):
    __tablename__ = "episode"

    id: int | None = Field(default=None, primary_key=True)
    study_id: str | None = Field(default=None, index=True)
    participant_id: int | None = Field(default=None, index=True)
    agent_run_id: int | None = Field(default=None, index=True)
    problem_id: str = Field(index=True)
    challenge: str
    env_id: str
    seed: int
    status: str = "active"
    """``active``, ``done``, ``abandoned``, ``error``."""
    phase: str = "interaction"
    score: float | None = None
    included: bool = True
    """False when the attempt is excluded from aggregation (the reason says why)."""
    exclusion_reason: str | None = None
    started_at: datetime = Field(default_factory=utcnow)
    ended_at: datetime | None = None
    info: dict = Field(default_factory=dict, sa_column=Column(JSON))
    """Challenge outcome details (t*, chosen option, steps used ...)."""


class Event(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    episode_id: int = Field(index=True)
    seq: int
    """Order of this row within its episode (applied actions and invalid turns alike)."""
    study_id: str | None = None
    participant_id: int | None = None
    agent_run_id: int | None = None
    problem_id: str
    phase: str
    """Phase the action was applied in."""
    tick: int | None
    """The episode's action index (``Step.index``); null for a turn that was not applied."""
    action: str | None
    """Canonical action text; null when a model reply did not parse."""
    source: str
    """``input`` (a person pressed it), ``auto`` (the clock's no-op), ``agent``."""
    applied: bool = True
    server_time: float
    """Unix seconds when the server applied (or rejected) it."""
    client_time: float | None = None
    """Unix seconds on the participant's clock, corrected by the estimated offset."""
    frame_hash: str | None = None
    """Key into ``frame``: the frame after the action."""
    next_phase: str | None = None
    score: float | None = None
    """Set on the row that ended the episode."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    raw_reply: str | None = None
    parse_valid: bool | None = None
    latency: float | None = None
    """Seconds the model took to answer (agents) or tick lateness (real-time)."""
    error: str | None = None
    """A failed environment step's message (the step was not applied)."""


class Frame(SQLModel, table=True):
    hash: str = Field(primary_key=True)
    data: str
    """JSON of the frame (list of rows of colour names)."""


class RawInput(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    episode_id: int | None = Field(default=None, index=True)
    participant_id: int | None = None
    received_at: float
    client_time: float | None = None
    text: str
    status: str
    """``dropped`` (more than one input in a tick, queue full), ``rejected`` (not allowed
    now, outside the grid), ``rate-limited``, ``malformed``."""
    reason: str | None = None


class Admin(SQLModel, table=True):
    """A researcher who may open the dashboard (``gridstudy admin create``)."""

    username: str = Field(primary_key=True)
    password_hash: str
    """werkzeug.security's salted hash; the password itself is never stored."""
    created_at: datetime = Field(default_factory=utcnow)
