"""Trajectories as plain records, from the store's database or from an export directory.

``load(source)`` is where every analysis starts. It never asks who produced a
trajectory: a person's attempt and a model's differ only in ``agent_kind``. The
database is read by table name (episode, event, frame, agentrun, participant) with
SQLAlchemy alone, so analysis needs nothing from the server; an export directory
(``gridstudy export``) is read from its files. Both give equal records.

Frames are not loaded with the events: ``episode.frame(event)`` or
``dataset.frame(hash)`` fetch one when asked, and remember it.

Excluded attempts stay in the dataset with their reasons (``episode.exclusion_reasons``)
so that a report can say what it left out; ``included_only=True`` drops them.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

Frame = list[list[str]]
EXCLUDED_PARTICIPANTS = ("excluded", "screened-out")
"""Participant statuses whose attempts are all left out of aggregation."""


@dataclass(frozen=True)
class EventRecord:
    """One event row: an applied action (or a refused model turn), humans and models alike."""

    episode_id: int
    seq: int
    study_id: str | None
    participant_id: int | None
    agent_run_id: int | None
    problem_id: str
    phase: str
    tick: int | None
    action: str | None
    source: str
    applied: bool
    server_time: float
    client_time: float | None
    frame_hash: str | None
    next_phase: str | None
    score: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost: float | None
    raw_reply: str | None
    parse_valid: bool | None
    latency: float | None
    error: str | None


class FrameSource:
    """Frames by hash, fetched on first use and then remembered."""

    def __init__(self, fetch: Any) -> None:
        self._fetch = fetch
        self._cache: dict[str, Frame] = {}

    def __call__(self, key: str) -> Frame:
        frame = self._cache.get(key)
        if frame is None:
            frame = self._cache[key] = self._fetch(key)
        return frame


@dataclass
class EpisodeRecord:
    """One attempt at one problem, with its events in order."""

    episode_id: int
    study_id: str | None
    participant_id: int | None
    agent_run_id: int | None
    agent_kind: str
    """``human``, or the agent run's kind (``llm``, ``random``, ``scripted`` ...)."""
    model: str | None
    agent_config: dict[str, Any]
    """The agent run's configuration (``history``, ``prompt_variant`` ...); ``{}`` for people."""
    problem_id: str
    challenge: str
    env_id: str
    seed: int
    status: str
    phase: str
    score: float | None
    included: bool
    exclusion_reason: str | None
    participant_status: str | None
    participant_exclusion_reason: str | None
    started_at: datetime
    ended_at: datetime | None
    info: dict[str, Any]
    events: list[EventRecord] = field(default_factory=list)
    frames: FrameSource | None = field(default=None, compare=False, repr=False)

    @property
    def is_human(self) -> bool:
        return self.agent_kind == "human"

    @property
    def exclusion_reasons(self) -> tuple[str, ...]:
        """Why the attempt is left out of aggregation; empty when it counts."""
        reasons = []
        if self.status != "done":
            reasons.append(f"episode {self.status}")
        if not self.included:
            reasons.append(self.exclusion_reason or "excluded")
        if self.participant_status in EXCLUDED_PARTICIPANTS:
            why = self.participant_exclusion_reason
            reasons.append(f"participant {self.participant_status}" + (f": {why}" if why else ""))
        return tuple(reasons)

    @property
    def is_included(self) -> bool:
        return not self.exclusion_reasons

    @property
    def actions(self) -> list[str]:
        """The applied action texts, in order (enough to replay the episode)."""
        return [e.action for e in self.events if e.applied and e.action is not None]

    def frame(self, event: EventRecord | str) -> Frame | None:
        """The frame after ``event`` (or with hash ``event``); None if none was stored."""
        key = event if isinstance(event, str) else event.frame_hash
        if key is None:
            return None
        if self.frames is None:
            raise LookupError("this record was built without a frame source; use load()")
        return self.frames(key)


@dataclass
class Dataset:
    """The episodes a :func:`load` selected, and the frames they refer to."""

    source: str
    episodes: list[EpisodeRecord]
    frames: FrameSource

    def __iter__(self) -> Iterator[EpisodeRecord]:
        return iter(self.episodes)

    def __len__(self) -> int:
        return len(self.episodes)

    def frame(self, key: str) -> Frame:
        return self.frames(key)

    def included(self) -> list[EpisodeRecord]:
        return [e for e in self.episodes if e.is_included]

    def excluded(self) -> dict[int, tuple[str, ...]]:
        """Episode id -> reasons, for every episode left out of aggregation."""
        return {e.episode_id: e.exclusion_reasons for e in self.episodes if not e.is_included}

    def by_problem(self) -> dict[str, list[EpisodeRecord]]:
        out: dict[str, list[EpisodeRecord]] = {}
        for episode in self.episodes:
            out.setdefault(episode.problem_id, []).append(episode)
        return out


EVENT_FIELDS = tuple(f.name for f in fields(EventRecord))
EPISODE_FIELDS = tuple(f.name for f in fields(EpisodeRecord) if f.name not in ("events", "frames"))


@dataclass(frozen=True)
class Selection:
    """Which episodes :func:`load` keeps."""

    study: frozenset[str] | None = None
    problems: frozenset[str] | None = None
    agent_kind: frozenset[str] | None = None
    included_only: bool = False

    def keeps(self, episode: EpisodeRecord) -> bool:
        return (
            (self.study is None or episode.study_id in self.study)
            and (self.problems is None or episode.problem_id in self.problems)
            and (self.agent_kind is None or episode.agent_kind in self.agent_kind)
            and (not self.included_only or episode.is_included)
        )


def load(
    source: str | Path,
    *,
    study: str | Iterable[str] | None = None,
    problems: Iterable[str] | None = None,
    agent_kind: str | Iterable[str] | None = None,
    included_only: bool = False,
) -> Dataset:
    """Load episodes with their events from a database (a URL, or a SQLite file) or
    from an export directory.

    ``study``, ``problems`` and ``agent_kind`` (``human``, ``llm`` ...) restrict what is
    loaded; each takes one value or several.
    """
    selection = Selection(_set(study), _set(problems), _set(agent_kind), included_only)
    path = Path(source)
    if "://" not in str(source):
        if path.is_file():
            return read_database(f"sqlite:///{path}", selection)
        if not path.is_dir():
            raise FileNotFoundError(
                f"{source}: neither a database URL (sqlite:///file.db, postgresql://...) "
                "nor an export directory"
            )
        return read_export(path, selection)
    return read_database(str(source), selection)


def _set(value: str | Iterable[str] | None) -> frozenset[str] | None:
    if value is None:
        return None
    return frozenset([value] if isinstance(value, str) else value)


# -- turning stored values into typed ones (shared by the database and the files) ---------


def as_time(value: Any) -> datetime | None:
    """A stored timestamp as an aware UTC datetime (the store keeps UTC)."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def as_json(value: Any) -> Any:
    """A JSON column's value; an empty CSV cell is null."""
    if value == "":
        return None
    return json.loads(value) if isinstance(value, str) else value


def as_bool(value: Any) -> bool | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return {"true": True, "false": False, "1": True, "0": False}[value.lower()]
    return bool(value)


def _optional(kind: type) -> Any:
    return lambda value: None if value is None or value == "" else kind(value)


EPISODE_CONVERTERS = {
    "episode_id": int, "participant_id": _optional(int), "agent_run_id": _optional(int),
    "seed": int, "score": _optional(float), "included": as_bool, "started_at": as_time,
    "ended_at": as_time, "info": lambda v: as_json(v) or {},
    "agent_config": lambda v: as_json(v) or {},
}
"""Episode fields that need converting from CSV text or raw database values."""


def episode_record(row: dict[str, Any], frames: FrameSource) -> EpisodeRecord:
    """An EpisodeRecord from a mapping with every episode field (CSV row or DB row)."""
    values = {}
    for name in EPISODE_FIELDS:
        value = row[name]
        convert = EPISODE_CONVERTERS.get(name)
        values[name] = convert(value) if convert else (None if value == "" else value)
    values["agent_kind"] = values["agent_kind"] or "unknown"
    return EpisodeRecord(**values, frames=frames)


def event_record(row: dict[str, Any]) -> EventRecord:
    """An EventRecord from a mapping with every event field."""
    values = {name: row[name] for name in EVENT_FIELDS}
    values["applied"] = bool(values["applied"])
    values["parse_valid"] = as_bool(values["parse_valid"])
    return EventRecord(**values)


def attach_events(episodes: list[EpisodeRecord], events: Iterable[EventRecord]) -> None:
    """Give each episode its events, ordered by seq."""
    by_id = {e.episode_id: e for e in episodes}
    for event in events:
        episode = by_id.get(event.episode_id)
        if episode is not None:
            episode.events.append(event)
    for episode in episodes:
        episode.events.sort(key=lambda e: e.seq)


def agent_kind(run_kind: str | None, agent_run_id: int | None, participant_id: int | None) -> str:
    """``human`` for a participant's attempt, else the agent run's kind (as the export)."""
    if agent_run_id is None and participant_id is not None:
        return "human"
    return run_kind or "unknown"


# -- an export directory ------------------------------------------------------------------


def read_export(path: Path, selection: Selection) -> Dataset:
    """Read ``episodes.csv``, ``events.parquet`` (or ``events.jsonl``) and, lazily, frames."""
    missing = [name for name in ("episodes.csv", "frames.jsonl") if not (path / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{path} is not a gridstudy export: missing {', '.join(missing)}")
    frames = FrameSource(_frames_file(path / "frames.jsonl"))
    with (path / "episodes.csv").open(newline="") as rows:
        episodes = [episode_record(row, frames) for row in csv.DictReader(rows)]
    episodes = [e for e in episodes if selection.keeps(e)]
    attach_events(episodes, _export_events(path, {e.episode_id for e in episodes}))
    return Dataset(str(path), episodes, frames)


def _export_events(path: Path, ids: set[int]) -> Iterator[EventRecord]:
    if not ids:
        return
    if (path / "events.parquet").is_file():
        import pyarrow.parquet as pq

        table = pq.read_table(path / "events.parquet", filters=[("episode_id", "in", ids)])
        rows: Iterable[dict] = table.to_pylist()
    elif (path / "events.jsonl").is_file():
        rows = (json.loads(line) for line in (path / "events.jsonl").open())
    else:
        raise FileNotFoundError(f"{path} holds neither events.parquet nor events.jsonl")
    for row in rows:
        if row["episode_id"] in ids:
            yield event_record(row)


def _frames_file(path: Path) -> Any:
    """A fetch function over frames.jsonl, indexing the file on first use."""
    index: dict[str, str] = {}

    def fetch(key: str) -> Frame:
        if not index:
            with path.open() as lines:
                for line in lines:
                    index[json.loads(line)["hash"]] = line
        if key not in index:
            raise KeyError(f"frame {key} is not in {path}")
        return json.loads(index[key])["frame"]

    return fetch


# -- a database ---------------------------------------------------------------------------

TABLES = ("episode", "event", "frame", "agentrun", "participant")


def read_database(url: str, selection: Selection) -> Dataset:
    """Read the store's tables by name; the engine stays open to fetch frames later."""
    from sqlalchemy import MetaData, create_engine, select
    from sqlalchemy.engine import make_url

    url = _driver_url(url)
    database = make_url(url).database
    if url.startswith("sqlite") and not Path(database or "").is_file():
        raise FileNotFoundError(f"no database at {database!r}")
    engine = create_engine(url)
    meta = MetaData()
    meta.reflect(engine)
    missing = [name for name in TABLES if name not in meta.tables]
    if missing:
        raise ValueError(f"{url} is not a gridstudy database: no table(s) {', '.join(missing)}")
    frame = meta.tables["frame"]

    def fetch(key: str) -> Frame:
        with engine.connect() as connection:
            data = connection.execute(select(frame.c.data).where(frame.c.hash == key)).scalar()
        if data is None:
            raise KeyError(f"frame {key} is not in the database")
        return json.loads(data)

    frames = FrameSource(fetch)
    with engine.connect() as connection:
        rows = connection.execute(_episode_query(meta, selection)).mappings()
        episodes = [_db_episode(dict(row), frames) for row in rows]
        episodes = [e for e in episodes if selection.keeps(e)]
        attach_events(episodes, _db_events(connection, meta, [e.episode_id for e in episodes]))
    return Dataset(url, episodes, frames)


def _driver_url(url: str) -> str:
    """``postgres(ql)://`` with the psycopg 3 driver gridstudy installs."""
    scheme, _, rest = url.partition("://")
    return f"postgresql+psycopg://{rest}" if scheme in ("postgres", "postgresql") else url


def _episode_query(meta: Any, selection: Selection) -> Any:
    from sqlalchemy import select

    episode, run, person = (meta.tables[n] for n in ("episode", "agentrun", "participant"))
    own = [c for c in episode.c if c.name in EPISODE_FIELDS]
    query = (
        select(episode.c.id.label("episode_id"), *own, run.c.agent_kind.label("run_kind"),
               run.c.model, run.c.config.label("agent_config"),
               person.c.status.label("participant_status"),
               person.c.exclusion_reason.label("participant_exclusion_reason"))
        .outerjoin(run, run.c.id == episode.c.agent_run_id)
        .outerjoin(person, person.c.id == episode.c.participant_id)
        .order_by(episode.c.id)
    )
    if selection.study is not None:
        query = query.where(episode.c.study_id.in_(sorted(selection.study)))
    if selection.problems is not None:
        query = query.where(episode.c.problem_id.in_(sorted(selection.problems)))
    return query


def _db_episode(row: dict[str, Any], frames: FrameSource) -> EpisodeRecord:
    kind = row.pop("run_kind")
    row["agent_kind"] = agent_kind(kind, row["agent_run_id"], row["participant_id"])
    return episode_record(row, frames)


def _db_events(connection: Any, meta: Any, ids: list[int]) -> Iterator[EventRecord]:
    from sqlalchemy import select

    event = meta.tables["event"]
    columns = [event.c[name] for name in EVENT_FIELDS]
    for start in range(0, len(ids), 500):
        query = (select(*columns).where(event.c.episode_id.in_(ids[start:start + 500]))
                 .order_by(event.c.episode_id, event.c.seq, event.c.id))
        for row in connection.execute(query).mappings():
            yield event_record(dict(row))
