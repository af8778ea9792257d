"""Every stored field, declared once: its name, type, default and meaning.

This module imports nothing from gridstudy and nothing outside the standard library, so
that anything may read it. Everything else about the record is derived from it:

* the database tables (:mod:`records.models` builds the SQLModel classes from it),
* the export's files and their data dictionary (``study_server.export_dictionary``),
* the records the analysis loads (``analysis.dataset``),
* every row the drivers write (:mod:`records.rows` checks rows against it).

A field added here appears in the database, the export, its documentation and the
analysis at once. The event record is the centre of it: one row per applied action
(and per refused model turn), for people and models alike, so that who produced a
trajectory is a column, never a code path.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

EXPORT_UNFINISHED = "EXPORT-UNFINISHED.txt"
"""The file an export's folder holds while the export moves its new files into it
(``study_server.export``): a folder holding it mixes two exports, and is not loaded."""

INT, FLOAT, TEXT, BOOL, TIME, JSON = (
    "integer", "float", "text", "boolean", "timestamp (ISO 8601, UTC)", "JSON")
PYTHON_TYPES = {INT: int, FLOAT: float, TEXT: str, BOOL: bool, TIME: datetime, JSON: dict}
NOW = "now"
"""The default of a timestamp set when its row is created."""


@dataclass(frozen=True)
class Field:
    """One column.

    ``required``: the row cannot be written without it (NOT NULL and no default).
    ``default``: the value a row that leaves the field out gets (``NOW`` for the time of
    creation; a JSON field defaults to an empty object). ``private``: it identifies a
    person, so ``gridstudy export --pseudonymize`` replaces it with a keyed hash.
    """

    name: str
    type: str
    doc: str
    required: bool = False
    default: Any = None
    key: bool = False
    index: bool = False
    foreign_key: str | None = None
    private: bool = False

    @property
    def nullable(self) -> bool:
        """True when a row may hold no value here (not required, not a key, no default)."""
        return not (self.required or self.key) and self.default is None

    def parse(self, value: Any) -> Any:
        """The field's value from what a file or a driver gives back (CSV text, JSON,
        a naive SQLite datetime): an empty cell is null.

        >>> Field("n", INT, "").parse(""), Field("ok", BOOL, "").parse("true")
        (None, True)
        """
        if value is None or value == "":
            return {} if self.type == JSON else None
        return _PARSERS[self.type](value)

    def rejects(self, value: Any) -> str | None:
        """Why ``value`` cannot be stored here (a driver's value, not text from a file),
        or None. Integers must fit a signed 64-bit column, numbers be finite, JSON be a
        JSON value."""
        if value is None:
            return None
        wanted = _CHECKS[self.type]
        if not wanted(value):
            return f"{self.name} must be {_KINDS[self.type]}, not {_shown(value)}"
        return None


def _as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return {"true": True, "false": False, "1": True, "0": False}[value.lower()]
    return bool(value)


def as_utc(stamp: datetime) -> datetime:
    """A stored timestamp as an aware UTC datetime: the store keeps UTC, and SQLite gives
    it back without its zone."""
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def _as_time(value: Any) -> datetime:
    """A stored timestamp, or its ISO 8601 text, as an aware UTC datetime."""
    return as_utc(datetime.fromisoformat(value) if isinstance(value, str) else value)


def _as_json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


_PARSERS = {INT: int, FLOAT: float, TEXT: str, BOOL: _as_bool, TIME: _as_time, JSON: _as_json}
INT_LIMIT = 2**63
"""Integers must lie in [-INT_LIMIT, INT_LIMIT) to fit a signed 64-bit column."""


def _is_int(value: Any) -> bool:
    return type(value) is int and -INT_LIMIT <= value < INT_LIMIT


def is_number(value: Any) -> bool:
    """Whether ``value`` is a number a row can hold: a finite float, or an integer within
    64 bits (not true or false). Python's JSON parser and YAML read ``NaN``, ``Infinity``
    and ``1e999``; whatever comes from outside is checked with this before it is used.

    >>> [is_number(v) for v in (1.5, 3, float("nan"), float("inf"), 2**64, True, "1")]
    [True, True, False, False, False, False, False]
    """
    return (_is_int(value) or type(value) is float) and math.isfinite(value)


STAND_IN = "\ufffd"
"""What a character no database can store is stored as: a NUL (PostgreSQL's text
cannot hold one) and a lone surrogate (UTF-8 cannot encode one, so SQLite and
PostgreSQL both refuse the row). Lone surrogates are valid JSON (``"\\ud83d"``): a
model's reply cut inside an emoji, or a page's message, can carry one. Both databases
store the same text."""
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable_text(value: str) -> str:
    """``value`` as it is stored: each NUL and lone surrogate as :data:`STAND_IN` (a
    no-op for ASCII text without NUL, checked first: every text of every tick passes)."""
    if value.isascii() and "\x00" not in value:
        return value
    return _UNSTORABLE.sub(STAND_IN, value)


def kept(text: str | None, most: int) -> str | None:
    """``text`` as a field of at most ``most`` characters keeps it: whole when it fits,
    else its start and its end (a quarter of the room), with a note of its length between
    them. A model that thinks aloud past the limit writes its action last; a reply is read
    from what its record keeps (:meth:`game_client.bridge.agent.LLMAgent.recall` reads
    the record), so the end is kept too.

    >>> kept("abc", 5)
    'abc'
    >>> kept("a" * 500 + "z" * 500, 100)
    'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa [1,000 characters: the first 33 and the last 10 kept] zzzzzzzzzz'
    """
    if text is None or len(text) <= most:
        return text
    both = f" [{len(text):,} characters: the first {{:,}} and the last {{:,}} kept] "
    room = most - len(both.format(most, most))
    if room >= 4:
        start, end = room - room // 4, room // 4
        return f"{text[:start]}{both.format(start, end)}{text[len(text) - end:]}"
    first = f" [{len(text):,} characters: the first {{:,}} kept]"  # too short for both ends
    start = max(0, most - len(first.format(most)))
    return (text[:start] + first.format(start))[:most]


def storable(value: Any) -> Any:
    """Decoded JSON with every text in it, keys too, made storable (:func:`storable_text`):
    what a request from outside holds before any of it reaches a row."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, list):
        return [storable(item) for item in value]
    if isinstance(value, dict):
        return {storable_text(key): storable(item) for key, item in value.items()}
    return value


def storable_json(value: Any) -> str:
    """A JSON column's text (the database engines' serializer): lone surrogates as
    :data:`STAND_IN`, which a JSON value would otherwise carry into the database as
    escapes that every later reader (the export's CSV and Parquet writers) refuses."""
    text = json.dumps(value)
    if "\\ud" not in text:  # no surrogate escape, paired or lone (the common case)
        return text
    return _UNSTORABLE.sub(STAND_IN, json.dumps(value, ensure_ascii=False))


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


_CHECKS = {INT: _is_int, FLOAT: is_number, TEXT: lambda v: isinstance(v, str),
           BOOL: lambda v: isinstance(v, bool), TIME: lambda v: isinstance(v, datetime),
           JSON: _is_json}
_KINDS = {INT: "an integer", FLOAT: "a finite number", TEXT: "text", BOOL: "true or false",
          TIME: "a timestamp", JSON: "a JSON value"}


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {value!r:.60}"


@dataclass(frozen=True)
class Table:
    """A table's name, what one row is, its fields in order, and the sets of fields no
    two rows may share (each a unique index, made on an existing database too:
    ``records.store.create_tables``)."""

    name: str
    doc: str
    fields: tuple[Field, ...]
    unique: tuple[tuple[str, ...], ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    @functools.cached_property
    def by_name(self) -> dict[str, Field]:
        """The fields by name (every row written is checked against it)."""
        return {f.name: f for f in self.fields}

    @functools.cached_property
    def required(self) -> tuple[str, ...]:
        """The names of the fields a row must fill."""
        return tuple(f.name for f in self.fields if f.required)

    def field(self, name: str) -> Field:
        for found in self.fields:
            if found.name == name:
                return found
        raise KeyError(f"{self.name} has no field {name!r}; it has {', '.join(self.names)}")

    def without(self, *names: str) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.name not in names)


def _id(doc: str) -> Field:
    return Field("id", INT, doc, key=True)


_EPISODE = "the attempt (episodes.csv episode_id)"
STUDY_ID = Field("study_id", TEXT, "Study slug; empty for runs outside a study.", index=True)
PARTICIPANT_ID = Field("participant_id", INT,
                       "Participant (participants.jsonl id); empty for agents.", index=True)
AGENT_RUN_ID = Field("agent_run_id", INT,
                     "Agent run (agent_runs.jsonl id); empty for people.", index=True)
CREATED_AT = Field("created_at", TIME, "When the row was created.", default=NOW)


STUDY = Table("study", "A study a researcher launched.", (
    Field("id", TEXT, "A short slug chosen by the researcher (pilot-1).", key=True),
    Field("title", TEXT, "The study's title.", default=""),
    Field("definition", JSON, "The validated study definition, as loaded from the "
                              "researcher's file."),
    CREATED_AT,
    Field("status", TEXT, "open (taking participants) or closed.", default="open"),
))

PARTICIPANT = Table("participant", "One person who opened the study's link (one row per "
                                   "study and Prolific id).", (
    _id("Participant id (participant_id elsewhere)."),
    Field("study_id", TEXT, "Study slug.", required=True, index=True, foreign_key="study.id"),
    Field("external_id", TEXT, "Prolific's PROLIFIC_PID, or a join code for local "
                               "participants.", required=True, index=True, private=True),
    Field("prolific_study_id", TEXT, "Prolific's STUDY_ID.", private=True),
    Field("prolific_session_id", TEXT, "Prolific's SESSION_ID of the first arrival.", private=True),
    Field("prolific_sessions", JSON, "Every Prolific SESSION_ID the participant arrived with, "
                                     "mapped to when it was first seen (a participant who comes "
                                     "back through Prolific brings a new one).", private=True),
    Field("stage", TEXT, "Last stage of the flow reached (consent ... complete).",
          default="consent"),
    Field("status", TEXT, "active, complete, screened-out, declined, failed-quiz, timed-out, "
                          "full, wrong-device, failed-attention, excluded.", default="active"),
    Field("exclusion_reason", TEXT, "Why the participant is excluded."),
    Field("consent_version", TEXT, "Version of the consent form agreed to."),
    Field("data", JSON, "records: one record per finished stage of the flow (jsPsych-style), "
                        "each with its started_at and finished_at; quality: the visit's "
                        "data-quality flags (consent.quality.summarise) once it ended; "
                        "ended_because: for wrong-device, what the device lacked (no "
                        "JavaScript, or a window too small or no keyboard)."),
    Field("code", TEXT, "The Prolific code the participant was given when the visit ended "
                        "(completion or screen-out); empty while active."),
    Field("created_at", TIME, "When the participant arrived.", default=NOW),
    Field("ended_at", TIME, "When the visit ended (completed, screened out, declined, timed "
                            "out or study full); empty while active."),
    Field("updated_at", TIME, "Last change.", default=NOW),
), unique=(("study_id", "external_id"),))
"""One row per person and study: two arrivals of one person at the same instant (a link
opened twice, a double click) are one participant (before, ten made four rows)."""

AGENT_RUN = Table("agentrun", "One agent configuration; its attempts are episodes.", (
    _id("Agent run id (agent_run_id elsewhere)."),
    Field("study_id", TEXT, "Study slug, if the run belongs to one.", index=True),
    Field("agent_kind", TEXT, "llm, random, scripted, planner, rl.", default="llm"),
    Field("model", TEXT, "The language model, for llm runs."),
    Field("config", JSON, "Provider, prompt variant, history mode, temperature, prices ..."),
    Field("token", TEXT, "Name of the API token that created the run through the agent API; "
                         "empty for runs recorded in process."),
    Field("created_at", TIME, "When the run was created.", default=NOW),
))

EPISODE = Table("episode", "One attempt at one problem, by a person or an agent.", (
    _id("Episode id, unique in the database."),
    STUDY_ID, PARTICIPANT_ID, AGENT_RUN_ID,
    Field("problem_id", TEXT, "Registered problem id.", required=True, index=True),
    Field("challenge", TEXT, "The problem's challenge (mfp, planning, cd, explore ...).",
          required=True),
    Field("env_id", TEXT, "Registered environment id.", required=True),
    Field("seed", INT, "Seed the environment was reset with.", required=True),
    Field("status", TEXT, "assigned (a reserved slot), active (not finished), done, "
                          "abandoned (given up, or a model's invalid replies, turn or budget "
                          "limit: scores 0), error (the environment or the model's provider "
                          "failed), interrupted (stopped by the operator or a batch budget); "
                          "info.resumable says whether a rerun continues it.",
          default="active"),
    Field("phase", TEXT, "Last phase reached.", default="interaction"),
    Field("score", FLOAT, "Challenge score in [0, 1]; empty when the attempt has none."),
    Field("included", BOOL, "False when the attempt itself is excluded from aggregation; "
                            "the attempt of an excluded participant is left out too, whatever "
                            "this says (participant_exclusion_reason says why).",
          default=True),
    Field("exclusion_reason", TEXT, "Why the attempt is excluded."),
    Field("started_at", TIME, "When the attempt began.", default=NOW),
    Field("ended_at", TIME, "When it ended; empty while active."),
    Field("info", JSON, "Challenge outcome details (t*, chosen option, resets, ticks ...), "
                        "and environment_version: the version of the environment the "
                        "attempt was played on (its problem and programs)."),
))

EVENT = Table("event", "One applied action, or one model turn that was refused.", (
    _id("Row id (internal)."),
    Field("episode_id", INT, f"Episode: {_EPISODE}.", required=True, index=True),
    Field("seq", INT, "Order of the row within its episode (applied actions and refused "
                      "turns alike).", required=True),
    Field("study_id", TEXT, STUDY_ID.doc),
    Field("participant_id", INT, PARTICIPANT_ID.doc),
    Field("agent_run_id", INT, AGENT_RUN_ID.doc),
    Field("problem_id", TEXT, "Registered problem id.", required=True),
    Field("phase", TEXT, "Phase the action was applied in: interaction, test, select.",
          required=True),
    Field("tick", INT, "The episode's action index (Step.index); empty for a turn that was "
                       "not applied."),
    Field("action", TEXT, "Canonical action text (noop, up, click X Y, go-to-test ...); "
                          "empty when a model reply named none."),
    Field("source", TEXT, "input (a person pressed it), auto (the clock's noop), agent.",
          required=True),
    Field("applied", BOOL, "Whether the environment applied the action.", default=True),
    Field("server_time", FLOAT, "Unix seconds when the server applied or refused it.",
          required=True),
    Field("client_time", FLOAT, "Unix seconds of the key press on the participant's clock, "
                                "corrected by the estimated offset; empty for agents."),
    Field("frame_hash", TEXT, "Key into frames.jsonl: the frame after the action."),
    Field("next_phase", TEXT, "Phase after the action (done on the row that ended the "
                              "episode)."),
    Field("score", FLOAT, "The episode's score, on the row that ended it."),
    Field("prompt_tokens", INT, "Model turns: prompt tokens."),
    Field("completion_tokens", INT, "Model turns: completion tokens."),
    Field("cost", FLOAT, "Model turns: cost in US dollars from the run's price table."),
    Field("raw_reply", TEXT, "Model turns: the reply as received."),
    Field("prompt", TEXT, "Model turns: the user message sent this turn (earlier turns' "
                          "messages are on their own rows: a request is the system prompt, "
                          "the history window and this message)."),
    Field("system_prompt", TEXT, "Model turns: the system prompt, on an attempt's first turn."),
    Field("reasoning", TEXT, "Model turns: reasoning content the provider returned beside "
                             "the reply."),
    Field("finish_reason", TEXT, "Model turns: why the model stopped (stop, length ...)."),
    Field("retries", INT, "Model turns: requests retried before the reply (429, 5xx, "
                          "timeouts, malformed replies)."),
    Field("trimmed", INT, "Model turns: when older turns had to be left out to fit the "
                          "model's context window, how many of the conversation's first "
                          "turns no request includes any more; empty when none were."),
    Field("parse_valid", BOOL, "Model turns: whether the reply parsed to an allowed action."),
    Field("latency", FLOAT, "Seconds the model took to answer, or the tick's lateness for "
                            "people."),
    Field("error", TEXT, "Why an environment step failed (the action was then not applied), "
                         "or why a model turn was refused."),
))

MODEL_TURN = ("raw_reply", "prompt", "system_prompt", "reasoning", "finish_reason", "retries",
              "trimmed", "prompt_tokens", "completion_tokens", "cost", "latency")
"""The event fields a model turn fills (the rest come from the episode and the step)."""
TURN_TEXT_LIMITS = {"raw_reply": 200_000, "prompt": 400_000, "system_prompt": 200_000,
                    "reasoning": 400_000, "finish_reason": 40, "error": 2000}
"""The most characters a model turn's text fields keep (the agent API refuses more; the
model bridge keeps the start and the end of a longer text, :func:`kept`, in process and
through the server alike)."""
RECORDED_TURN = ("action", "applied", "parse_valid", "error", *MODEL_TURN)
"""What a resumed attempt's agent reads back of each of its recorded turns."""

FRAME = Table("frame", "Every frame the events refer to, once each.", (
    Field("hash", TEXT, "The frame's hash (tasks.core.frame_hash), as in frame_hash.", key=True),
    Field("data", TEXT, "Rows of colour names: frame[y][x], y from the top, x from the left.",
          required=True),
))

RAW_INPUT = Table("rawinput", "An input that arrived but was not applied, or (status "
                  "queued) one acknowledged and still waiting for its tick.", (
    _id("Row id (internal)."),
    Field("episode_id", INT, f"Episode: {_EPISODE}; empty if none was running.", index=True),
    Field("participant_id", INT, "Participant who sent it."),
    Field("received_at", FLOAT, "Unix seconds when the server received it.", required=True),
    Field("client_time", FLOAT, "Unix seconds on the participant's corrected clock."),
    Field("text", TEXT, "The input as sent (at most 200 characters).", required=True),
    Field("status", TEXT, "dropped (the queue was full, or the server stopped or the "
                          "attempt ended before its tick), rejected (not allowed then, "
                          "outside the grid), rate-limited or malformed; queued while an "
                          "acknowledged input waits for its tick (the row goes when the "
                          "tick applies it, and a restart turns a queued row left by a "
                          "crash into dropped).", required=True),
    Field("reason", TEXT, "Why, in words."),
    Field("input_seq", INT, "The number of an acknowledged input in its attempt, from 0 "
                            "(empty for inputs refused on arrival)."),
))

ADMIN = Table("admin", "A researcher who may open the dashboard (gridstudy admin create).", (
    Field("username", TEXT, "The login name.", key=True),
    Field("password_hash", TEXT, "werkzeug.security's salted hash; the password itself is "
                                 "never stored.", required=True, private=True),
    Field("session_nonce", TEXT, "Changes at every login and logout; a dashboard cookie "
                                 "holding another is no longer valid.", private=True),
    Field("created_at", TIME, "When the account was created.", default=NOW),
))

API_TOKEN = Table("apitoken", "A credential for the agent API (gridstudy token create).", (
    Field("name", TEXT, "What the researcher called it (one per model or script).", key=True),
    Field("token_hash", TEXT, "SHA-256 of the token; the token itself is shown once and never "
                              "stored.", required=True, index=True, private=True),
    Field("study_id", TEXT, "The study it may write into; empty: runs outside any study only."),
    Field("created_at", TIME, "When it was created.", default=NOW),
    Field("revoked_at", TIME, "When it was revoked; empty while it is valid."),
))

SETTING = Table("setting", "Values created once per installation (the session-signing secret, "
                           "the pseudonym key).", (
    Field("name", TEXT, "The setting's name.", key=True),
    Field("value", TEXT, "Its value.", required=True, private=True),
))

AUDIT = Table("audit", "What a researcher changed by hand on the dashboard, and why.", (
    _id("Row id, in the order the changes were made."),
    Field("at", TIME, "When.", default=NOW),
    Field("admin", TEXT, "The researcher's login name.", required=True),
    Field("action", TEXT, "end-session, exclude-attempt, include-attempt, exclude-participant, "
                          "include-participant, pause-study, close-study, open-study, "
                          "set-wanted; prolific-publish, prolific-approve, prolific-reject, "
                          "prolific-return, prolific-bonus-setup, prolific-bonus-pay, "
                          "prolific-hooks (also from the command line).", required=True),
    Field("target", TEXT, "What was changed (episode 12, participant 3, study pilot).",
          required=True),
    Field("reason", TEXT, "The reason the researcher gave.", required=True),
    Field("before", JSON, "The changed fields before."),
    Field("after", JSON, "The changed fields after."),
))

SIGNAL = Table("signal", "What a participant's browser reported about how they took part "
                         "(consent/quality.py): the device, the tab hidden and shown, the "
                         "window's focus lost and regained, idle periods, key-mashing.", (
    _id("Row id, in the order the signals arrived."),
    Field("participant_id", INT, "Participant (participants.jsonl id).", required=True,
          index=True, foreign_key="participant.id"),
    Field("study_id", TEXT, "Study slug.", required=True),
    Field("episode_id", INT, f"Episode: {_EPISODE}, when a game was on the page; empty on the "
                             "flow's other pages.", index=True),
    Field("stage", TEXT, "The flow's stage the page showed (consent, screening, task ...)."),
    Field("kind", TEXT, "device (once per page), hidden and shown (the tab), blur and focus (the "
                        "window), idle and active (no key, click or mouse movement for a "
                        "while, then some), mashing (many keys in one second).", required=True),
    Field("client_time", FLOAT, "Unix seconds on the participant's clock."),
    Field("server_time", FLOAT, "Unix seconds when the server received it.", required=True),
    Field("seconds", FLOAT, "shown, focus, active: how long the tab was hidden, the window "
                            "unfocused or the participant idle; idle: seconds without input "
                            "so far."),
    Field("value", JSON, "device: user_agent, screen and window [width, height], pixel_ratio, "
                         "touch (a touch screen without a mouse); mashing: keys, the keys "
                         "pressed within one second; hidden: leaving, true when the page "
                         "was being left (a form sent, a link followed, the tab closed)."),
))

WORKER = Table("worker", "A server process taking part in serving the studies "
                         "(study_server/cluster.py): refreshed every second while it runs.", (
    Field("id", TEXT, "host:pid:random, new at every start.", key=True),
    Field("address", TEXT, "Where it listens (host:port)."),
    Field("started_at", FLOAT, "Unix seconds when it started.", required=True),
    Field("seen_at", FLOAT, "Unix seconds of its last heartbeat; a worker silent for longer "
                            "than the cluster's timeout is dead.", required=True, index=True),
    Field("live", JSON, "What the dashboard's monitor shows of its live sessions and model "
                        "attempts, as of seen_at."),
))

LIVE_SESSION = Table("livesession", "A recorded real-time session being played now, and the "
                                    "one worker that ticks it (its lease).", (
    Field("token", TEXT, "The token a client joins it with.", key=True),
    Field("episode_id", INT, f"Episode: {_EPISODE}.", required=True, index=True),
    Field("worker", TEXT, "The worker ticking it (worker.id).", required=True, index=True),
    Field("wanted_by", TEXT, "A worker a client joined asking for the session; the owner "
                             "hands it over (or declines) at its next heartbeat."),
    Field("takeover", BOOL, "Whether that join takes the session from a connection still "
                            "open (a second tab that chose to continue there).", default=False),
))

LOGIN_FAILURE = Table("loginfailure", "A failed dashboard login, kept for a day to slow down "
                                      "password guessing across every worker "
                                      "(study_server/logins.py).", (
    _id("Row id (internal)."),
    Field("key", TEXT, "What it counts against: addr:<address> or pair:<address> <user name "
                       "hash>.", required=True, index=True, private=True),
    Field("at", FLOAT, "Unix seconds of the attempt.", required=True, index=True),
))

PROLIFIC_STUDY = Table("prolificstudy", "A study's counterpart on Prolific "
                                       "(study_server/prolific.py).", (
    Field("study_id", TEXT, "Study slug.", key=True),
    Field("prolific_id", TEXT, "Prolific's id of the study (its STUDY_ID).", required=True),
    Field("status", TEXT, "Prolific's status of the study when last seen (UNPUBLISHED, "
                          "ACTIVE, ...).", required=True),
    Field("created_at", TIME, "When gridstudy created it on Prolific.", default=NOW),
    Field("published_at", TIME, "When gridstudy published it; empty for a draft."),
    Field("synced_at", TIME, "When its submissions were last listed."),
))

PROLIFIC_SUBMISSION = Table("prolificsubmission", "One Prolific submission of a study: a "
                                                  "place a participant took on Prolific.", (
    Field("id", TEXT, "Prolific's submission id (the SESSION_ID in the study link).", key=True),
    Field("study_id", TEXT, "Study slug.", required=True, index=True),
    Field("prolific_pid", TEXT, "The participant's PROLIFIC_PID.", required=True, private=True),
    Field("participant_id", INT, "Our participant (participants.jsonl id); empty for one "
                                 "who never reached the study.", index=True),
    Field("status", TEXT, "Prolific's status (ACTIVE, AWAITING REVIEW, APPROVED, RETURNED, "
                          "REJECTED, TIMED-OUT, ...).", required=True),
    Field("seen_at", TIME, "When the status was last learnt (a sync or a hook).", default=NOW),
    Field("status_at", FLOAT, "Unix seconds of what the status was learnt from: the time "
                              "Prolific gives the hook's event (X-Timestamp, never later "
                              "than its signed send time), or the start of the sync's "
                              "listing. A hook of an earlier event, arriving late, is "
                              "acknowledged and not taken."),
    Field("action", TEXT, "What gridstudy asked Prolific to do with it: approved, rejected, "
                          "return-requested; approving, rejecting, requesting-return while the "
                          "request is under way."),
    Field("action_at", FLOAT, "Unix seconds when that action was taken or began."),
))

PROLIFIC_BONUS = Table("prolificbonus", "A participant's bonus for a study, entered once "
                                        "and then set up and paid in one batch.", (
    Field("id", TEXT, "study_id/PROLIFIC_PID: one bonus per participant and study.", key=True),
    Field("study_id", TEXT, "Study slug.", required=True, index=True),
    Field("prolific_pid", TEXT, "The participant's PROLIFIC_PID.", required=True, private=True),
    Field("amount", FLOAT, "The bonus, in the study's currency.", required=True),
    Field("batch", INT, "The batch paying it (prolificbatch.id); empty until one takes it.",
          index=True),
    Field("created_at", TIME, "When the bonus was decided.", default=NOW),
))

PROLIFIC_BATCH = Table("prolificbatch", "One bulk bonus payment on Prolific. Paying is not "
                                        "idempotent there, so the pay call is made only "
                                        "from state set-up, which it leaves first.", (
    _id("Batch id."),
    Field("study_id", TEXT, "Study slug.", required=True, index=True),
    Field("state", TEXT, "new, set-up (Prolific's batch exists, unpaid), paying (the pay call "
                         "was sent; its answer is awaited or was lost), paid.", required=True),
    Field("prolific_id", TEXT, "Prolific's bulk bonus payment id."),
    Field("total", FLOAT, "Participants' bonuses in all, in the study's currency."),
    Field("owner", TEXT, "The run that holds the batch while it works on it."),
    Field("claimed_at", FLOAT, "Unix seconds when that run took it."),
    Field("actor", TEXT, "Who ran the review."),
    Field("created_at", TIME, "When the batch was made.", default=NOW),
    Field("paid_at", TIME, "When Prolific accepted the pay call."),
    Field("error", TEXT, "What went wrong last, in Prolific's words."),
))

TABLES = (STUDY, PARTICIPANT, AGENT_RUN, EPISODE, EVENT, FRAME, RAW_INPUT, ADMIN, API_TOKEN,
          SETTING, AUDIT, SIGNAL, WORKER, LIVE_SESSION, LOGIN_FAILURE, PROLIFIC_STUDY,
          PROLIFIC_SUBMISSION, PROLIFIC_BONUS, PROLIFIC_BATCH)


# -- the episode as a reader sees it --------------------------------------------------------

EPISODE_VIEW = Table("episode view", "One row per attempt at a problem, with who made it and "
                     "whether it counts: the export's episodes.csv and the analysis's "
                     "episode records.", (
    Field("episode_id", INT, EPISODE.field("id").doc, required=True),
    STUDY_ID, PARTICIPANT_ID, AGENT_RUN_ID,
    Field("agent_kind", TEXT, "human for a participant's attempt, else the agent run's kind "
                              "(llm, random, scripted, planner, rl); unknown when neither is "
                              "recorded.", required=True),
    Field("model", TEXT, "The language model of an llm agent run."),
    Field("agent_config", JSON, "The agent run's configuration (provider, history mode, prompt "
                                "variant ...); empty for people."),
    Field("agent", TEXT, "How the tables name who made it: human, or the agent "
                         "configuration: its label, else kind:model with the settings that "
                         "differ from the defaults in brackets (records.schema.agent_name)."),
    *(EPISODE.field(name) for name in ("problem_id", "challenge", "env_id", "seed", "status",
                                       "phase", "score", "included", "exclusion_reason")),
    Field("participant_status", TEXT, "The participant's status (complete, excluded, "
                                      "screened-out ...); empty for agents."),
    Field("participant_exclusion_reason", TEXT, "Why the participant is excluded as a whole "
                                                "(their attempts with them): set by hand "
                                                "(status excluded) or by failed attention "
                                                "checks (status complete or failed-attention)."),
    *(EPISODE.field(name) for name in ("started_at", "ended_at")),
    Field("n_events", INT, "Rows in events for this episode.", default=0),
    EPISODE.field("info"),
))
"""The episode table joined with its agent run and participant (see :func:`agent_kind`)."""

VERSION_KEY = "environment_version"
"""``info`` key of an attempt: the version of the environment it was played on
(``tasks.registry.problem_version``: its problem's definition and programs, as the
process that started it ran them)."""
HUMAN = "human"
RL = "rl"
"""The agent kind of a Gymnasium run (``game_client.gym.RecordEpisodes``): its episodes
are played by the researcher's own training process, which nothing else resumes."""
UNKNOWN = "unknown"
"""The agent of a play recorded outside any study and any agent run (a preview with
``?record=1``, local play with ``--record``)."""


def agent_kind(run_kind: str | None, agent_run_id: int | None, participant_id: int | None) -> str:
    """Who made an attempt: ``human`` for a participant's, else its agent run's kind.

    >>> agent_kind(None, None, 7), agent_kind("llm", 3, None), agent_kind(None, None, None)
    ('human', 'llm', 'unknown')
    """
    if agent_run_id is None and participant_id is not None:
        return HUMAN
    return run_kind or UNKNOWN


FULL_HISTORY = "full"
PARAMS_SHOWN = 40
"""Longest request-parameter text an agent's name spells out; longer ones are a digest."""


def history_setting(config: dict[str, Any]) -> str:
    """What an agent saw of earlier turns: ``full`` (also for agents without a history
    option), ``none`` (the current observation only) or ``last K``."""
    mode = config.get("history") or FULL_HISTORY
    return f"last {config.get('k')}" if mode == "last" else str(mode)


def agent_settings(config: dict[str, Any]) -> list[str]:
    """The settings of an agent run that change what its agent does or faces, as they
    differ from the defaults: the protocol profile, the history window, the real-time
    clock, pictures, the task-DAG prompt variant and memory summary, and the request
    parameters (temperature, reasoning effort, seed ...; spelled out when short, else a
    short digest of them).

    >>> agent_settings({"params": {"temperature": 1, "reasoning_effort": "high"}})
    ['reasoning_effort=high, temperature=1']
    >>> agent_settings({"history": "last", "k": 3, "clock": "realtime"})
    ['history last 3', 'realtime clock']
    """
    tags = []
    if config.get("protocol") not in (None, "gridstudy"):
        tags.append(f"{config['protocol']} protocol")
    if history_setting(config) != FULL_HISTORY:
        tags.append(f"history {history_setting(config)}")
    if config.get("clock") == "realtime":
        tags.append("realtime clock")
    observation = config.get("observation") or "text"
    if observation != "text":
        tags.append("image" if observation == "image" else "text+image")
    if config.get("prompt_variant") not in (None, "base"):
        tags.append(f"prompt {config['prompt_variant']}")
    if config.get("summary"):
        tags.append("memory summary")
    params = config.get("params") or {}
    if params:
        text = ", ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                         for k, v in sorted(params.items()))
        if len(text) > PARAMS_SHOWN:
            digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()
            text = f"params {digest[:6]}"
        tags.append(text)
    return tags


def agent_name(kind: str, model: str | None, config: dict[str, Any] | None) -> str:
    """How every table, DataFrame, export and summary names an agent configuration: its
    ``label`` when the run has one; else ``kind:model`` (or ``kind``) with its settings
    (:func:`agent_settings`) in brackets, so that two configurations of one model are
    never pooled. ``human`` for people.

    >>> agent_name("llm", "m", {"label": "m-cold", "params": {"temperature": 0}})
    'm-cold'
    >>> agent_name("llm", "m", {"params": {"temperature": 0}}), agent_name("random", None, {})
    ('llm:m [temperature=0]', 'random')
    """
    if kind == HUMAN:
        return HUMAN
    config = config or {}
    if config.get("label"):
        return str(config["label"])
    base = f"{kind}:{model}" if model else kind
    tags = agent_settings(config)
    return f"{base} [{', '.join(tags)}]" if tags else base
