"""The event store: the one way trajectories reach the database.

A real-time tick must never wait on the disk, so events and raw inputs are *enqueued*
(:meth:`Store.write_event`) and a background thread writes them in batches: at least every
``flush_interval`` seconds, sooner when a batch reaches ``batch_size`` rows, each batch one
transaction of bulk inserts. Frames are stored once each, keyed by
:func:`tasks.core.frame_hash`; the writer remembers which hashes it has already written so
that the idle ticks of a session, which repeat the same frame, cost one short row each.

Episodes are few and their ids are needed at once, so :meth:`Store.start_episode` and
:meth:`Store.finish_episode` write synchronously.

A failed write is retried; rows that still cannot be written are kept in
:attr:`Store.failed` and the failure is raised by the next :meth:`Store.flush` or
:meth:`Store.close`, so nothing is lost silently.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event as sa_event
from sqlalchemy import update
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session, SQLModel, create_engine

from study_server.models import EpisodeRow, Event, RawInput, utcnow
from study_server.writer import BatchWriter, Failure, TableSpec
from tasks.core import frame_hash

EVENT = TableSpec.of(Event)
RAW_INPUT = TableSpec.of(RawInput)
STEP_FIELDS = ("phase", "tick", "action", "next_phase", "score", "frame")
"""Event fields :func:`event_from_step` takes from the step; callers may not pass them."""


class StoreWriteError(RuntimeError):
    """Rows the background writer could not write (they are kept in ``Store.failed``)."""

    def __init__(self, failures: list[Failure]) -> None:
        self.failures = failures
        first = failures[0]
        super().__init__(
            f"{len(failures)} row(s) could not be written to the store; first: "
            f"{first.table} row {first.record!r:.200} failed with {first.error}. "
            "The rows are kept in Store.failed; fix the cause and write them again."
        )


# -- engines ------------------------------------------------------------------------------


def database_url(text: str) -> str:
    """A SQLAlchemy URL from what a user may type: a URL, or the path of a SQLite file.

    ``postgres://`` and ``postgresql://`` use the psycopg 3 driver (the ``postgres``
    extra), not SQLAlchemy's default psycopg2.

    >>> database_url("data/gridstudy.db")
    'sqlite:///data/gridstudy.db'
    >>> database_url("postgres://study@db.example/gridstudy")
    'postgresql+psycopg://study@db.example/gridstudy'
    """
    if "://" not in text:
        return f"sqlite:///{text}"
    scheme, _, rest = text.partition("://")
    if scheme in ("postgres", "postgresql"):
        return f"postgresql+psycopg://{rest}"
    return text


def make_engine(url: str) -> Engine:
    """An engine for ``url``; a SQLite file gets WAL mode and ``synchronous=NORMAL``.

    WAL lets the dashboard and the exports read while the writer writes; NORMAL is safe
    in WAL mode (a power cut may lose the last transactions, never corrupt the file).
    An in-memory SQLite database is refused: the writer thread could not share it.
    """
    url = database_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True)
    if parsed.database in (None, "", ":memory:"):
        raise ValueError(
            f"{url!r} is an in-memory SQLite database; the store needs a file, "
            "for example sqlite:///gridstudy.db"
        )
    engine = create_engine(url, connect_args={"timeout": 30})
    sa_event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


# -- records ------------------------------------------------------------------------------


def event_from_step(
    step: Any,
    *,
    episode_id: int,
    seq: int,
    problem_id: str,
    source: str,
    study_id: str | None = None,
    participant_id: int | None = None,
    agent_run_id: int | None = None,
    client_time: float | None = None,
    server_time: float | None = None,
    **model_fields: Any,
) -> dict[str, Any]:
    """The event record of one applied :class:`tasks.worldtest.Step`.

    The one mapping from a step to a row, shared by the real-time server and the agent
    runner. ``model_fields`` are the other Event fields (``prompt_tokens``, ``cost``,
    ``raw_reply``, ``parse_valid``, ``latency`` ...). ``server_time`` defaults to now.
    """
    clash = set(model_fields) & {*STEP_FIELDS, "frame_hash"}
    if clash:
        raise TypeError(f"event_from_step takes {sorted(clash)} from the step; do not pass them")
    record = {
        "episode_id": episode_id,
        "seq": seq,
        "study_id": study_id,
        "participant_id": participant_id,
        "agent_run_id": agent_run_id,
        "problem_id": problem_id,
        "phase": step.phase,
        "tick": step.index,
        "action": step.action,
        "source": source,
        "server_time": time.time() if server_time is None else server_time,
        "client_time": client_time,
        "next_phase": step.next_phase,
        "score": step.score,
        "frame": step.observation.frame,
        **model_fields,
    }
    EVENT.check(record, extra=("frame",))
    return record


def event_from_invalid_turn(
    *,
    episode_id: int,
    seq: int,
    problem_id: str,
    phase: str,
    raw_reply: str,
    error: str,
    source: str = "agent",
    server_time: float | None = None,
    **other_fields: Any,
) -> dict[str, Any]:
    """The event record of a model turn that was not applied: its reply named no action
    available then. No tick, no action, no frame; ``parse_valid`` False, so grounding
    accuracy counts it (METRICS.md). Shared by the agent runner and the agent API."""
    record = {
        "episode_id": episode_id, "seq": seq, "problem_id": problem_id, "phase": phase,
        "tick": None, "action": None, "source": source, "applied": False,
        "server_time": time.time() if server_time is None else server_time,
        "raw_reply": raw_reply, "parse_valid": False, "error": error, **other_fields,
    }
    EVENT.check(record)
    return record


# -- the store ----------------------------------------------------------------------------


class Store:
    """The database of one deployment: tables, sessions and the batching event writer."""

    def __init__(
        self,
        url: str,
        *,
        flush_interval: float = 0.25,
        batch_size: int = 5000,
        retries: int = 3,
    ) -> None:
        self.url = database_url(url)
        self.engine = make_engine(self.url)
        SQLModel.metadata.create_all(self.engine)
        self._writer = BatchWriter(
            self.engine, flush_interval=flush_interval, batch_size=batch_size, retries=retries
        )
        self._closed = False
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls, default_url: str, **options: Any) -> Store:
        """A store on ``$DATABASE_URL``, or on ``default_url`` when it is unset."""
        return cls(os.environ.get("DATABASE_URL") or default_url, **options)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.engine.url.render_as_string(hide_password=True)!r})"

    # -- units of work ----------------------------------------------------------------

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session for one unit of work: committed on success, rolled back on error."""
        with Session(self.engine, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def start_episode(
        self,
        *,
        problem: Any,
        study_id: str | None = None,
        participant_id: int | None = None,
        agent_run_id: int | None = None,
        info: dict[str, Any] | None = None,
    ) -> int:
        """Insert the row of a new attempt at ``problem`` (a ``Problem``); return its id."""
        row = EpisodeRow(
            study_id=study_id,
            participant_id=participant_id,
            agent_run_id=agent_run_id,
            problem_id=problem.id,
            challenge=problem.challenge,
            env_id=problem.env_id,
            seed=problem.seed,
            info=dict(info or {}),
        )
        with self.session() as session:
            session.add(row)
            session.flush()
            return row.id

    def finish_episode(
        self,
        episode_id: int,
        *,
        status: str,
        phase: str,
        score: float | None,
        info: dict[str, Any] | None = None,
    ) -> None:
        """Record how an attempt ended; ``info`` is merged into the episode's info."""
        with self.session() as session:
            row = session.get(EpisodeRow, episode_id)
            if row is None:
                raise LookupError(f"no episode {episode_id} in {self!r}; start_episode first")
            values: dict[str, Any] = {
                "status": status,
                "phase": phase,
                "score": score,
                "ended_at": utcnow(),
            }
            if info:
                values["info"] = {**(row.info or {}), **info}
            session.execute(update(EpisodeRow).where(EpisodeRow.id == episode_id).values(values))

    # -- the batching writer ------------------------------------------------------------

    def write_event(self, record: dict[str, Any]) -> None:
        """Enqueue one event record (Event's fields, optionally ``frame``); never blocks."""
        self.write_events([record])

    def write_events(self, records: Iterable[dict[str, Any]]) -> None:
        """Enqueue event records in order; checked here so that mistakes fail at once."""
        rows, frames = [], {}
        for record in records:
            EVENT.check(record, extra=("frame",))
            row = dict(record)
            frame = row.pop("frame", None)
            if frame is not None:
                key = row["frame_hash"] = frame_hash(frame)
                if not self._writer.has_frame(key):
                    frames[key] = frame
            rows.append(row)
        self._enqueue(EVENT, rows, frames)

    def write_raw_input(self, record: dict[str, Any]) -> None:
        """Enqueue one input that arrived but was not applied; never blocks."""
        RAW_INPUT.check(record)
        self._enqueue(RAW_INPUT, [dict(record)], {})

    def _enqueue(self, spec: TableSpec, rows: list[dict[str, Any]], frames: dict) -> None:
        # Under the lock, so that nothing can be queued behind close()'s last flush.
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self!r} is closed; open a new Store to write")
            self._writer.put(spec, rows, frames)

    @property
    def failed(self) -> list[Failure]:
        """Every row the writer gave up on, with its error (kept until the store closes)."""
        return self._writer.failed

    def flush(self, timeout: float | None = None) -> None:
        """Block until everything enqueued so far is on disk.

        Raises :class:`StoreWriteError` for rows that failed since the last report, and
        ``TimeoutError`` when ``timeout`` seconds pass first.
        """
        self._writer.flush(timeout)
        self._raise_failures()

    def close(self) -> None:
        """Write everything still queued, stop the writer and release connections.

        Idempotent; raises :class:`StoreWriteError` for failures not yet reported.
        """
        with self._lock:
            closing, self._closed = not self._closed, True
        if closing:
            self._writer.stop()
            self.engine.dispose()
        self._raise_failures()

    def _raise_failures(self) -> None:
        failures = self._writer.take_unreported()
        if failures:
            raise StoreWriteError(failures)
