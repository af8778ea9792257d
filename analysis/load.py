"""Trajectories as plain records, from the store's database or from an export directory.

``load(source)`` is where every analysis starts. It never asks who produced a
trajectory: a person's attempt and a model's differ only in ``agent_kind``. The
database is read by table name (episode, event, frame, agentrun, participant) with
SQLAlchemy alone, so analysis needs nothing from the server; an export directory
(``gridstudy export``) is read from its files. Both give equal records.

The records themselves are :mod:`analysis.dataset`'s, and so are their DataFrames
(``episodes``, ``events``, ``turns``, ``participants``); grid frames are fetched when asked.
Excluded attempts stay in the dataset with their reasons; ``included_only=True`` drops
them.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.dataset import (
    EVENT_FIELDS,
    Dataset,
    EpisodeRecord,
    Events,
    Frame,
    FrameSource,
    episode_record,
    events_by_episode,
)
from records import schema
from records.database import one_moment, open_existing


@dataclass(frozen=True)
class Selection:
    """Which episodes :func:`load` keeps.

    ``study`` None keeps every study; ``outside`` keeps the model runs recorded outside
    any study (``study_id`` empty); ``agent_runs`` keeps these runs' episodes whatever
    their study.
    """

    study: frozenset[str] | None = None
    problems: frozenset[str] | None = None
    agent_kind: frozenset[str] | None = None
    included_only: bool = False
    agent_runs: frozenset[int] | None = None
    outside: bool = True

    def in_scope(self, episode: EpisodeRecord) -> bool:
        """Whether the episode belongs to the chosen studies or runs."""
        if self.agent_runs is not None and episode.agent_run_id in self.agent_runs:
            return True
        if episode.study_id is None:
            return self.outside
        return self.study is None or episode.study_id in self.study

    def keeps(self, episode: EpisodeRecord) -> bool:
        return (
            self.in_scope(episode)
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
    agent_runs: Iterable[int] | None = None,
    outside: bool | None = None,
) -> Dataset:
    """Load episodes with their events from a database (a URL, or a SQLite file) or
    from an export directory.

    ``study``, ``problems`` and ``agent_kind`` (``human``, ``llm`` ...) restrict what is
    loaded; each takes one value or several. ``agent_runs`` adds these agent runs'
    episodes; ``outside`` keeps the model runs recorded outside any study (by default
    only when no study is named).
    """
    studies = _set(study)
    runs = None if agent_runs is None else frozenset(int(r) for r in agent_runs)
    selection = Selection(studies, _set(problems), _set(agent_kind), included_only, runs,
                          studies is None if outside is None else outside)
    url, path = located(source)
    return read_database(url, selection) if url else read_export(path, selection)


def located(source: str | Path) -> tuple[str | None, Path]:
    """``(database URL, None)`` or ``(None, export directory)`` for ``source``."""
    path = Path(source)
    if "://" in str(source):
        return str(source), path
    if path.is_file():
        return f"sqlite:///{path}", path
    if not path.is_dir():
        raise FileNotFoundError(
            f"{source}: neither a database URL (sqlite:///file.db, postgresql://...) "
            "nor an export directory"
        )
    return None, path


PLAYS = "recorded plays"
""":func:`study_counts`' key for the attempts recorded outside any study and any agent
run: a preview played with ``?record=1``, a local play with ``--record`` (no study's id
holds a space)."""


def _outside(study_id: str | None, agent_run_id: Any) -> str | None:
    """The key :func:`study_counts` counts an episode under."""
    return study_id or (None if agent_run_id not in (None, "") else PLAYS)


def study_counts(source: str | Path) -> dict[str | None, int]:
    """Episodes per study in ``source`` (a database or an export directory), without
    loading them; ``None`` counts the model runs recorded outside any study, and
    :data:`PLAYS` the plays recorded outside any study and any run. A database's studies
    that hold no episode yet count 0 (an export names only the studies it holds)."""
    url, path = located(source)
    if url is None:
        if not (path / "episodes.csv").is_file():
            raise FileNotFoundError(f"{path} is not a gridstudy export: missing episodes.csv")
        _finished(path)
        with (path / "episodes.csv").open(newline="") as rows:
            found = Counter(_outside(row.get("study_id") or None, row.get("agent_run_id"))
                            for row in csv.DictReader(rows))
        return dict(found)
    from sqlalchemy import MetaData, Table, func, inspect, select
    from sqlalchemy.exc import NoSuchTableError

    engine = open_existing(url)
    try:
        with engine.connect() as connection:
            try:
                episode = Table("episode", MetaData(), autoload_with=connection)
            except NoSuchTableError:
                raise ValueError(f"{url} is not a gridstudy database: no table episode") from None
            run = episode.c.agent_run_id.is_not(None)
            query = select(episode.c.study_id, run, func.count()).group_by(episode.c.study_id, run)
            found: Counter = Counter()
            for study, with_run, n in connection.execute(query).all():
                found[_outside(study, 1 if with_run else None)] += n
            if inspect(connection).has_table("study"):  # a study nobody has finished yet
                studies = Table("study", MetaData(), autoload_with=connection)
                found.update({study: 0 for study in
                              connection.execute(select(studies.c.id)).scalars()})
            return dict(found)
    finally:
        engine.dispose()


def _set(value: str | Iterable[str] | None) -> frozenset[str] | None:
    if value is None:
        return None
    return frozenset([value] if isinstance(value, str) else value)


def attach_events(episodes: list[EpisodeRecord], events: dict[Any, Events]) -> None:
    """Give each episode its events (columns, in seq order); none when it has none."""
    for episode in episodes:
        episode.events = events.get(episode.episode_id) or Events.of([])


# -- an export directory ------------------------------------------------------------------


def _finished(path: Path) -> None:
    """A ``ValueError`` for an export folder whose export stopped as it moved its files in
    (they may come from two exports: ``schema.EXPORT_UNFINISHED``)."""
    if (path / schema.EXPORT_UNFINISHED).exists():
        raise ValueError(f"{path} holds an export that did not finish (its "
                         f"{schema.EXPORT_UNFINISHED}): its files may come from two exports; "
                         "run gridstudy export again")


def read_export(path: Path, selection: Selection) -> Dataset:
    """Read ``episodes.csv``, ``events.parquet`` (or ``events.jsonl``),
    ``participants.jsonl`` and, lazily, the grid frames."""
    missing = [name for name in ("episodes.csv", "frames.jsonl") if not (path / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{path} is not a gridstudy export: missing {', '.join(missing)}")
    _finished(path)
    grid_frames = FrameSource(_frames_file(path / "frames.jsonl"))
    with (path / "episodes.csv").open(newline="") as rows:
        episodes = [episode_record(row, grid_frames) for row in csv.DictReader(rows)]
    episodes = [e for e in episodes if selection.keeps(e)]
    attach_events(episodes, _export_events(path, {e.episode_id for e in episodes}))
    file = path / "participants.jsonl"
    people = [json.loads(line) for line in file.open()] if file.is_file() else []
    return Dataset(str(path), episodes, grid_frames, _participants(people, selection))


def _participants(rows: Iterable[dict[str, Any]], selection: Selection) -> Any:
    """The participants of the selected studies as a typed DataFrame."""
    from analysis.dataframes import typed

    kept = [r for r in rows if selection.study is None or r.get("study_id") in selection.study]
    return typed(kept, schema.PARTICIPANT.fields)


def _export_events(path: Path, ids: set[int]) -> dict[Any, Events]:
    """The selected episodes' events, read in columns from the Parquet file (or rows from
    the JSONL one), ordered by episode and seq."""
    names = [f.name for f in EVENT_FIELDS]
    if not ids:
        return {}
    if (path / "events.parquet").is_file():
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        table = pq.read_table(path / "events.parquet", columns=names,
                              filters=[("episode_id", "in", ids)])
        table = table.take(pc.sort_indices(table, [("episode_id", "ascending"),
                                                   ("seq", "ascending")]))
        rows: Iterable[Sequence[Any]] = _table_rows(table, names)
    elif (path / "events.jsonl").is_file():
        with (path / "events.jsonl").open() as lines:
            found = [json.loads(line) for line in lines]
        found = sorted((r for r in found if r["episode_id"] in ids),
                       key=lambda r: (r["episode_id"], r["seq"]))
        rows = [[r[name] for name in names] for r in found]
    else:
        raise FileNotFoundError(f"{path} holds neither events.parquet nor events.jsonl")
    return events_by_episode(names, rows)


def _table_rows(table: Any, names: list[str], chunk: int = 200_000) -> Iterable[Sequence[Any]]:
    """The rows of an Arrow table as tuples, converted ``chunk`` rows at a time so that a
    large export is never held as Python objects all at once."""
    for start in range(0, table.num_rows, chunk):
        part = table.slice(start, chunk)
        yield from zip(*(part.column(name).to_pylist() for name in names), strict=True)


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

TABLES = tuple(t.name for t in (schema.EPISODE, schema.EVENT, schema.FRAME, schema.AGENT_RUN,
                                schema.PARTICIPANT))
EPISODE_VIEW_NAMES = frozenset(schema.EPISODE_VIEW.names)


FRAMES_PER_QUERY = 500
"""Frames fetched by one query (``FrameSource.many``): well under SQLite's limit on a
statement's parameters."""


def read_database(url: str, selection: Selection) -> Dataset:
    """Read the store's tables by name; the engine stays open to fetch frames later."""
    from sqlalchemy import MetaData, select

    engine = open_existing(url)
    url = engine.url.render_as_string(hide_password=True)
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

    def fetch_many(keys: list[str]) -> dict[str, Frame]:
        found = {}
        with engine.connect() as connection:
            for start in range(0, len(keys), FRAMES_PER_QUERY):
                chunk = keys[start:start + FRAMES_PER_QUERY]
                query = select(frame.c.hash, frame.c.data).where(frame.c.hash.in_(chunk))
                found.update((key, json.loads(data)) for key, data in connection.execute(query))
        return found  # a key not found is fetched alone, and its KeyError raised there

    grid_frames = FrameSource(fetch, fetch_many)
    with engine.connect() as connection:
        one_moment(connection)
        rows = connection.execute(_episode_query(meta, selection)).mappings()
        episodes = [_db_episode(dict(row), grid_frames) for row in rows]
        episodes = [e for e in episodes if selection.keeps(e)]
        attach_events(episodes, _db_events(connection, meta, [e.episode_id for e in episodes]))
        people = connection.execute(select(meta.tables["participant"])).mappings()
        participants = _participants((dict(r) for r in people), selection)
    for episode in episodes:
        episode.n_events = len(episode.events)
    return Dataset(url, episodes, grid_frames, participants)


def _episode_query(meta: Any, selection: Selection) -> Any:
    from sqlalchemy import select

    episode, run, person = (meta.tables[n] for n in ("episode", "agentrun", "participant"))
    own = [c for c in episode.c if c.name in EPISODE_VIEW_NAMES]
    query = (
        select(episode.c.id.label("episode_id"), *own, run.c.agent_kind.label("run_kind"),
               run.c.model, run.c.config.label("agent_config"),
               person.c.status.label("participant_status"),
               person.c.exclusion_reason.label("participant_exclusion_reason"))
        .outerjoin(run, run.c.id == episode.c.agent_run_id)
        .outerjoin(person, person.c.id == episode.c.participant_id)
        .order_by(episode.c.id)
    )
    if selection.problems is not None:
        query = query.where(episode.c.problem_id.in_(sorted(selection.problems)))
    return query


def _db_episode(row: dict[str, Any], grid_frames: FrameSource) -> EpisodeRecord:
    kind = row.pop("run_kind")
    row["agent_kind"] = schema.agent_kind(kind, row["agent_run_id"], row["participant_id"])
    return episode_record(row, grid_frames)


def _db_events(connection: Any, meta: Any, ids: list[int]) -> dict[Any, Events]:
    """The events of ``ids``, read as plain row tuples in batches and held as columns."""
    from sqlalchemy import select

    event = meta.tables["event"]
    names = [f.name for f in EVENT_FIELDS]
    columns = [event.c[name] for name in names]
    found: dict[Any, Events] = {}
    shared: dict[Any, Any] = {}  # each distinct frame hash, action ... held once
    for start in range(0, len(ids), 500):
        query = (select(*columns).where(event.c.episode_id.in_(ids[start:start + 500]))
                 .order_by(event.c.episode_id, event.c.seq, event.c.id))
        found.update(events_by_episode(names, connection.execute(query), shared))
    return found
