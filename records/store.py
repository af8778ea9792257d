"""The event store: the one way trajectories reach the database.

A real-time tick must never wait on the disk, so events and raw inputs are *enqueued*
(:meth:`Store.write_event`) and a background thread writes them in batches: at least every
``flush_interval`` seconds, sooner when a batch reaches ``batch_size`` rows, each batch one
transaction of bulk inserts. Frames are stored once each, keyed by
:func:`tasks.core.frame_hash`; the writer remembers which hashes it has already written so
that the idle ticks of a session, which repeat the same frame, cost one short row each.

An acknowledged input is written when it is acknowledged, as a ``rawinput`` row with
status ``queued`` (:meth:`Store.write_raw_input`), not when its tick comes: a ``kill -9``
then loses at most the inputs of the last flush interval. Its tick removes that row (the
event holds the input) or sets why it was refused (:meth:`Store.resolve_input`), behind
the rows queued before, in the same order.

An attempt's id is needed at once, so :meth:`Store.start_episode` writes synchronously
(off gevent's loop, :mod:`records.offload`); how it ended (:meth:`Store.finish_episode`)
is queued behind its last events, and a real-time session does not wait for it, so the
tick that ends an attempt never waits on the disk.

While the storage is away (a full disk, a stopped database) the writer keeps every row in
order and retries until it comes back; :meth:`Store.status` says how far behind it is,
and the server pauses its games past a bound (``docs/guarantees.md``). Rows the database
refuses for their content are kept in :attr:`Store.failed` and raised by the next
:meth:`Store.flush` or :meth:`Store.close`, so nothing is lost silently.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import bindparam, delete, func, inspect, select, text, update
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError
from sqlmodel import Session, SQLModel

from records import schema
from records.database import (
    ACCEPTED,
    FileTrouble,
    LiveFile,
    check_no_copy_left,
    check_sqlite_file,
    check_writable,
    database_url,
    make_engine,
    sqlite_path,
)
from records.models import AgentRun, EpisodeRow, Event, RawInput, Setting, utcnow
from records.offload import blocking
from records.rows import check
from records.writer import BatchWriter, Change, Failure, TableSpec
from tasks import registry
from tasks.core import frame_hash
from tasks.worldtest.turn import holds_its_place

log = logging.getLogger(__name__)

EVENT = TableSpec.of(Event)
RAW_INPUT = TableSpec.of(RawInput)
PAGE_WAIT = 10.0
"""Seconds a request waits for the rows queued before it (:meth:`Store.wait`) before it
gives up with :class:`StorageUnavailable`, which the server answers with 503 (the rows
are kept and written when the storage is back)."""


class StorageUnavailable(RuntimeError):
    """The storage has not written what was queued within the time a caller could wait
    (a full disk, a stopped database): the server answers 503, and nothing is lost."""


class RunIndexTaken(RuntimeError):
    """Another attempt of the agent run holds this problem's run index: another process
    started it first (two invocations of one evaluation at once). ``holder`` is that
    attempt's id, ``status`` and ``info``."""

    def __init__(self, message: str, holder: tuple[int, str, dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.holder = holder


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


# -- the store ----------------------------------------------------------------------------


def add_missing_columns(engine: Any) -> list[str]:
    """Add to existing tables the nullable columns the schema has gained since the
    database was made (``ALTER TABLE ... ADD COLUMN``), so that an installation keeps its
    data across upgrades. Returns ``table.column`` of each one added."""
    inspector = inspect(engine)
    present = set(inspector.get_table_names())
    added = []
    with engine.begin() as connection:
        for table in SQLModel.metadata.sorted_tables:
            if table.name not in present:
                continue
            have = {c["name"] for c in inspector.get_columns(table.name)}
            for column in table.columns:
                if column.name not in have and column.nullable:
                    kind = column.type.compile(dialect=engine.dialect)
                    connection.execute(text(f'ALTER TABLE "{table.name}" ADD COLUMN "{column.name}" {kind}'))
                    added.append(f"{table.name}.{column.name}")
    return added


@contextmanager
def locked(engine: Any, model: Any, key: Any) -> Iterator[Session]:
    """A session holding the write lock of ``model``'s row ``key`` until it commits (or
    rolls back): what is read in it is not changed meanwhile by another request, on this
    worker or another. ``BEGIN IMMEDIATE`` on SQLite (one writer at a time: the others
    wait on the busy timeout), ``SELECT ... FOR UPDATE`` of the row elsewhere."""
    with Session(engine, expire_on_commit=False) as session:
        try:
            if engine.dialect.name == "sqlite":
                session.connection().exec_driver_sql("BEGIN IMMEDIATE")
            else:
                session.exec(select(model).where(model.id == key).with_for_update()).one()
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


def hold(connection: Any, model: Any, key: Any) -> bool:
    """Take the write lock of ``model``'s row ``key`` in ``connection``'s transaction,
    before reading the row to write it again (False: there is no such row). The
    statement-level :func:`locked`, for a transaction already begun (the store writer's):
    a no-op update, which on SQLite also begins the transaction the read then belongs to
    (Python's ``sqlite3`` begins one only at the first write)."""
    if connection.dialect.name != "sqlite":
        return connection.execute(select(model.id).where(model.id == key)
                                  .with_for_update()).first() is not None
    return connection.execute(update(model).where(model.id == key)
                              .values(id=model.id)).rowcount == 1


def add_missing_unique_indexes(engine: Any) -> list[str]:
    """Make on existing tables the unique indexes the schema has gained
    (``records.schema.Table.unique``). An index whose rows are not unique yet (made
    before it, by a race it now closes) is not made: the log says which values repeat,
    for the researcher to look at, and the server goes on. Returns the names made."""
    made = []
    present = set(inspect(engine).get_table_names())
    for table in SQLModel.metadata.sorted_tables:
        for index in table.indexes:
            if not index.unique or table.name not in present:
                continue
            try:
                with engine.begin() as connection:
                    if index.name in {i["name"] for i in inspect(connection).get_indexes(table.name)}:
                        continue
                    index.create(connection)
                made.append(index.name)
            except IntegrityError:
                columns = ", ".join(column.name for column in index.columns)
                with engine.connect() as connection:
                    repeated = connection.execute(select(func.count()).select_from(
                        select(*index.columns).group_by(*index.columns)
                        .having(func.count() > 1).subquery())).scalar()
                log.warning("%s: %d value(s) of (%s) are on more than one row, made before "
                            "the unique index %s, which is therefore not made yet; see them "
                            "with SELECT %s, count(*) FROM %s GROUP BY %s HAVING count(*) > 1",
                            table.name, repeated, columns, index.name, columns, table.name,
                            columns)
    return made


def create_tables(engine: Any) -> None:
    """Create the missing tables and columns. Several processes started together on a
    new database race to create them; the loser of a race finds the table or column
    made by the winner, and looks again. Each lost race means one more thing made, so
    there are at most as many as the tables and columns (five tries were too few once
    there were twenty tables: six processes racing lost one of them on a busy machine)."""
    attempts = sum(1 + len(table.columns) for table in SQLModel.metadata.tables.values())
    for attempt in range(attempts):
        try:
            SQLModel.metadata.create_all(engine)
            add_missing_columns(engine)
            add_missing_unique_indexes(engine)
            return
        except (OperationalError, ProgrammingError, IntegrityError) as error:
            if not _created_meanwhile(error) or attempt == attempts - 1:
                raise


def _created_meanwhile(error: Exception) -> bool:
    """SQLite and PostgreSQL saying another process made it first (PostgreSQL may say
    so through the unique index of its catalogue of types)."""
    message = str(error).lower()
    return ("already exists" in message or "duplicate column" in message
            or "pg_type_typname_nsp_index" in message)


_WAITING = ((RawInput.episode_id == bindparam("episode")) & (RawInput.input_seq == bindparam("number"))
            & (RawInput.status == "queued"))
_APPLIED = delete(RawInput).where(_WAITING)
_REFUSED = update(RawInput).where(_WAITING).values(status=bindparam("new_status"),
                                                   reason=bindparam("new_reason"))
"""What becomes of an acknowledged input's row at its tick, built once (one per applied
input otherwise, on the tick's path)."""

DEFAULT_DB = "gridstudy.db"
"""Where a command keeps its database when given none."""


def command_url(db: str | None) -> str:
    """The database a command was pointed at: ``--db``, else ``$DATABASE_URL``, else
    :data:`DEFAULT_DB`.

    A ``--db`` given empty is refused (``ValueError``), not read as no ``--db``: typed
    as ``--db "$DB"`` with ``DB`` unset, it made a server, an export or a payment run on
    ``gridstudy.db`` in the current folder, a database holding nothing of the study."""
    if db is not None and not db.strip():
        raise ValueError(f"--db is empty: {ACCEPTED}, or leave --db out to use "
                         f"$DATABASE_URL, else {DEFAULT_DB}")
    return db or os.environ.get("DATABASE_URL") or DEFAULT_DB


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
        existing = sqlite_path(self.url)
        if existing is not None:
            check_writable(existing)
            left = check_no_copy_left(existing)
            if left:
                log.warning("%s", left)
            if existing.is_file() and existing.stat().st_size:
                check_sqlite_file(existing)
        self.file = LiveFile(existing) if existing is not None else None
        self.engine = make_engine(self.url, self.file)
        create_tables(self.engine)
        if self.file is not None:
            self.file.open()
        self._writer = BatchWriter(self.engine, flush_interval=flush_interval,
                                   batch_size=batch_size, retries=retries, file=self.file)
        self._closed = False
        self._lock = threading.Lock()
        self._last_frames: dict[Any, tuple[Any, str]] = {}
        """Each attempt's last frame and its hash: most ticks show the frame the tick
        before showed, and comparing costs a twentieth of hashing (frames are never
        changed in place, ``tasks.core``)."""

    @classmethod
    def from_env(cls, default_url: str, **options: Any) -> Store:
        """A store on ``$DATABASE_URL``, or on ``default_url`` when it is unset."""
        return cls(os.environ.get("DATABASE_URL") or default_url, **options)

    @classmethod
    def for_command(cls, db: str | None) -> Store:
        """The store a command was pointed at (:func:`command_url`)."""
        return cls(command_url(db))

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

    def setting(self, name: str, make: Callable[[], str]) -> str:
        """The installation's value of ``name``, made by ``make`` the first time any
        process asks (a process racing to make it reads the winner's value)."""
        with self.session() as db:
            row = db.get(Setting, name)
            if row is not None:
                return row.value
        try:
            with self.session() as db:
                db.add(Setting(name=name, value=make()))
        except IntegrityError:
            pass
        with self.session() as db:
            return db.get(Setting, name).value

    @blocking
    def start_episode(
        self,
        *,
        problem: Any,
        study_id: str | None = None,
        participant_id: int | None = None,
        agent_run_id: int | None = None,
        info: dict[str, Any] | None = None,
        claim_run: bool = False,
    ) -> int:
        """Insert the row of a new attempt at ``problem`` (a ``Problem``); return its id.
        Its ``info`` records the version of the environment it is played on.

        ``claim_run``: the attempt is its agent run's ``info["run_index"]`` at this
        problem (a job of a batch), inserted only if no attempt of the run holds that
        place already (``tasks.worldtest.turn.holds_its_place``), under the run's write
        lock; :class:`RunIndexTaken` otherwise. Without it, two invocations of one
        evaluation started a few seconds apart each played every job the first had not
        started yet: ten attempts for six jobs, the model paid twice for four."""
        info = {schema.VERSION_KEY: registry.problem_version(problem), **(info or {})}
        row = EpisodeRow(
            study_id=study_id,
            participant_id=participant_id,
            agent_run_id=agent_run_id,
            problem_id=problem.id,
            challenge=problem.challenge,
            env_id=problem.env_id,
            seed=problem.seed,
            info=info,
        )
        with locked(self.engine, AgentRun, agent_run_id) if claim_run else self.session() \
                as session:
            if claim_run:
                index = info["run_index"]
                held = session.exec(select(EpisodeRow.id, EpisodeRow.status, EpisodeRow.info)
                                    .where(EpisodeRow.agent_run_id == agent_run_id,
                                           EpisodeRow.problem_id == problem.id))
                for holder in held:
                    other = holder.info or {}
                    if other.get("run_index") == index and holds_its_place(holder.status, other):
                        raise RunIndexTaken(f"run {index} of {problem.id} in agent run "
                                            f"{agent_run_id} was started by another process",
                                            (holder.id, holder.status, other))
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
        excluded: str | None = None,
        wait: bool = True,
    ) -> None:
        """Record how an attempt ended; ``info`` is merged into the episode's info, and
        ``excluded`` says why the attempt is excluded from now on (one excluded already
        keeps its reason). Queued behind the attempt's events, then waited for (an unknown
        episode raises :class:`StoreWriteError`); with ``wait`` false it returns at once (a
        real-time tick, which must never wait on the disk), and the next :meth:`flush`
        reports an unknown episode."""
        ended_at = utcnow()
        self._last_frames.pop(episode_id, None)

        def run(connection: Any) -> None:
            if not hold(connection, EpisodeRow, episode_id):  # its info as it is now
                raise LookupError(f"no episode {episode_id} in {self!r}; start_episode first")
            row = connection.execute(select(EpisodeRow.info, EpisodeRow.included)
                                     .where(EpisodeRow.id == episode_id)).one()
            values: dict[str, Any] = {"status": status, "phase": phase, "score": score,
                                      "ended_at": ended_at}
            if info:
                values["info"] = {**(row.info or {}), **info}
            if excluded and row.included:
                values |= {"included": False, "exclusion_reason": excluded}
            connection.execute(update(EpisodeRow).where(EpisodeRow.id == episode_id)
                               .values(values))

        change = Change(run, {"finish_episode": episode_id, "status": status})
        self._enqueue_change(change)
        if wait:
            self.wait()
            mine = [f for f in self._writer.failed if f.record is change.what]
            if mine:
                raise StoreWriteError(mine)

    @blocking
    def reopen_episode(self, episode_id: int) -> None:
        """Make an ended attempt active again (it is resumed): no end, no score; its info
        counts the resumptions."""
        self.wait()  # its queued end is written first
        with locked(self.engine, EpisodeRow, episode_id) as session:
            row = session.get(EpisodeRow, episode_id)  # its info as it is now
            if row is None:
                raise LookupError(f"no episode {episode_id} in {self!r}")
            info = {k: v for k, v in (row.info or {}).items() if k not in ("reason", "resumable")}
            info["resumed"] = int(info.get("resumed", 0)) + 1
            session.execute(update(EpisodeRow).where(EpisodeRow.id == episode_id).values(
                status="active", score=None, ended_at=None, info=info))

    # -- the batching writer ------------------------------------------------------------

    def write_event(self, record: dict[str, Any], *, checked: bool = False) -> str | None:
        """Enqueue one event record (Event's fields, optionally ``frame``); never blocks.
        The hash its frame is recorded under (None without a frame)."""
        return self.write_events([record], checked=checked)[0]

    def write_events(self, records: Iterable[dict[str, Any]], *,
                     checked: bool = False) -> list[str | None]:
        """Enqueue event records in order; checked here so that mistakes fail at once,
        unless ``checked`` says they come straight from :mod:`records.rows`, which checks
        every row it builds (the recorder's, one a tick: checking twice cost 3 % of a
        server)."""
        rows, frames = [], {}
        for record in records:
            if not checked:
                check(schema.EVENT, record, extra=("frame",))
            row = dict(record)
            frame = row.pop("frame", None)
            if frame is not None:
                key = row["frame_hash"] = self._frame_key(row.get("episode_id"), frame)
                if not self._writer.has_frame(key):
                    frames[key] = frame
            rows.append(row)
        self._enqueue(EVENT, rows, frames)
        return [row.get("frame_hash") for row in rows]

    def _frame_key(self, episode_id: Any, frame: Any) -> str:
        """``tasks.core.frame_hash`` of ``frame``, a frame of attempt ``episode_id``: the
        attempt's last one's when they are equal."""
        last = self._last_frames.get(episode_id)
        if last is not None and (last[0] is frame or last[0] == frame):
            return last[1]
        key = frame_hash(frame)
        self._last_frames[episode_id] = (frame, key)
        return key

    def write_raw_input(self, record: dict[str, Any]) -> None:
        """Enqueue one input that arrived but was not applied, or (status ``queued``, with
        its ``input_seq``) one acknowledged and waiting for its tick; never blocks."""
        check(schema.RAW_INPUT, record)
        self._enqueue(RAW_INPUT, [dict(record)], {})

    def resolve_input(self, episode_id: int, input_seq: int, status: str | None = None,
                      reason: str | None = None) -> None:
        """What became of an acknowledged input, queued behind its row: applied (no
        ``status``: the row goes, its event holds the input) or refused at its tick
        (``status`` and ``reason``, such as ``dropped`` when the server stops first)."""
        statement = _APPLIED if status is None else _REFUSED
        params = {"episode": episode_id, "number": input_seq, "new_status": status,
                  "new_reason": reason}
        self._enqueue_change(Change.statement(statement, params, {
            "episode_id": episode_id, "input_seq": input_seq, "status": status or "applied"}))

    @blocking
    def drop_waiting_inputs(self, reason: str, episode_id: int | None = None) -> int:
        """Store as ``dropped`` (with ``reason``) the acknowledged inputs that a stopped
        process left ``queued``, of one attempt or (None) of every attempt; how many.
        Called when an attempt is rebuilt after a crash, and when a lone server starts."""
        where = RawInput.status == "queued"
        if episode_id is not None:
            where = where & (RawInput.episode_id == episode_id)
        with self.engine.begin() as connection:
            return connection.execute(update(RawInput).where(where).values(
                status="dropped", reason=reason)).rowcount

    def _enqueue(self, spec: TableSpec, rows: list[dict[str, Any]], frames: dict) -> None:
        # Under the lock, so that nothing can be queued behind close()'s last flush.
        with self._lock:
            self._refuse_closed()
            self._writer.put(spec, rows, frames)

    def _enqueue_change(self, change: Change) -> None:
        with self._lock:
            self._refuse_closed()
            self._writer.put_change(change)

    def _refuse_closed(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed; open a new Store to write")

    def status(self) -> dict[str, Any]:
        """How far behind the writer is (:meth:`records.writer.BatchWriter.status`)."""
        return self._writer.status()

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

    def wait(self, timeout: float | None = None) -> None:
        """Block until everything enqueued so far is written, reporting nothing: a
        request must never fail for another request's row (the writer logs each row it
        gives up on, and :meth:`flush` or :meth:`close` report them). Raises
        :class:`StorageUnavailable` when ``timeout`` seconds pass first."""
        try:
            self._writer.flush(timeout)
        except TimeoutError:
            status = self.status()
            raise StorageUnavailable(
                f"the storage has not written {status['waiting']} queued row(s) within "
                f"{timeout} s ({status['error'] or 'it is slow'}); they are kept and "
                "retried") from None

    def close(self) -> None:
        """Write everything still queued, stop the writer and release connections.

        Idempotent; raises :class:`StoreWriteError` for failures not yet reported.
        """
        with self._lock:
            closing, self._closed = not self._closed, True
        if closing:
            self._writer.stop()
            if self.file is not None:
                self._keep_file_at_close(self.file)
            self.engine.dispose()
        self._raise_failures()

    def _keep_file_at_close(self, file: LiveFile) -> None:
        """Write the database back a last time if it was deleted since the writer's last
        look (what pages wrote meanwhile), then let the file go."""
        try:
            self._writer.keep_file()
        except FileTrouble as error:
            log.error("store: closing, the database could not be written back: %s", error)
        finally:
            file.close()

    def _raise_failures(self) -> None:
        failures = self._writer.take_unreported()
        if failures:
            raise StoreWriteError(failures)
