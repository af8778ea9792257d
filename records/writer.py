"""The background writer behind :class:`records.store.Store`.

Producers (socket handlers, tick loops, agent runners; any number of threads) put rows on
a queue and return at once. One thread drains the queue and writes a batch whenever the
oldest queued row is ``flush_interval`` seconds old, the batch reaches ``batch_size``
rows, or someone asks to flush. A batch is one transaction: frames with
INSERT ... ON CONFLICT DO NOTHING, then each table's rows with one executemany.

Besides rows, a producer may queue a :class:`Change`: a statement that must run after
the rows queued before it (an input applied, an attempt finished). A batch runs its
inserts first and then its changes, in the order they were queued, in the same
transaction.

Nothing queued is given up because the database is away. A batch that fails for a
reason of the storage (:func:`unavailable`: the disk is full, the database is stopped or
restarting, a lock timed out) is retried, in order, with back-off, for as long as it
takes; meanwhile :meth:`BatchWriter.status` says so, and the server pauses its games (see
``docs/guarantees.md``). Only a batch the database refuses for a reason of its content
(a constraint, a value it cannot hold) is written row by row, so that one bad row cannot
take its neighbours down; a row that fails even alone is kept as a :class:`Failure`, with
its content, for the store to raise.

The transactions run through :func:`records.offload.off_loop`: under gevent they happen
in a native thread, so that a slow disk never holds the event loop.

On a SQLite file the writer also keeps the file where it is (:class:`LiveFile`): before
each batch, and about once a second between batches, it puts the database back at its
path if it was deleted under the server, and then reopens the store's connections there.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from sqlalchemy import Table, exc, insert
from sqlalchemy.engine import Connection, Engine

from records.database import FileTrouble, LiveFile
from records.models import Frame
from records.offload import off_loop

log = logging.getLogger(__name__)

POLL = 0.25
"""Longest the writer sleeps before checking whether the program is ending."""
BACKOFF_LIMIT = 2.0
"""Longest wait, in seconds, between two tries of a batch while the storage is away."""
LOOK_EVERY = 1.0
"""Seconds between two looks at a SQLite file's place while no batch is written."""
OUTAGE_LOG_EVERY = 30.0
"""Seconds between the log lines that say the storage is still away."""


def unavailable(error: BaseException) -> bool:
    """Whether ``error`` says the storage is away for now (retry) rather than that the
    batch itself is wrong (isolate its bad rows): a full disk, a stopped or restarting
    database, a dropped connection, a lock or pool timeout."""
    if isinstance(error, exc.DBAPIError) and error.connection_invalidated:
        return True
    if isinstance(error, exc.OperationalError) and _sqlite(error):
        # SQLite says "no such table" as an OperationalError too: that is the batch's fault
        message = str(error.orig).lower()
        return any(words in message for words in SQLITE_AWAY)
    return isinstance(error, exc.OperationalError | exc.InterfaceError | exc.DisconnectionError
                      | exc.TimeoutError | OSError)


SQLITE_AWAY = ("disk is full", "database is locked", "database table is locked", "disk i/o",
               "unable to open", "readonly", "busy", "interrupted", "out of memory")
"""What SQLite says when the storage, not the batch, is the trouble."""


def _sqlite(error: exc.DBAPIError) -> bool:
    return type(error.orig).__module__.startswith("sqlite3")


@dataclass(frozen=True, eq=False)
class Change:
    """A statement queued behind rows: ``run(connection)`` inside the batch's transaction,
    after its inserts; ``what`` names it in a log line or a :class:`Failure`. One made by
    :meth:`statement` also keeps its ``sql`` and ``params``, so that neighbours with the
    same statement run as one executemany (:func:`run_changes`)."""

    run: Callable[[Connection], None]
    what: dict[str, Any]
    sql: Any = None
    params: dict[str, Any] | None = None

    @classmethod
    def statement(cls, sql: Any, params: dict[str, Any], what: dict[str, Any]) -> Change:
        """One execution of ``sql`` with ``params`` (an input resolved at its tick: run one
        by one, they cost the writer a statement each)."""
        return cls(lambda connection: connection.execute(sql, params), what, sql, params)


def run_changes(connection: Connection, changes: list[Change]) -> None:
    """Run ``changes`` in order; neighbours with the same statement as one executemany."""
    at = 0
    while at < len(changes):
        change, end = changes[at], at + 1
        if change.sql is None:
            change.run(connection)
        else:
            while end < len(changes) and changes[end].sql is change.sql:
                end += 1
            connection.execute(change.sql, [c.params for c in changes[at:end]])
        at = end


@dataclass(frozen=True, eq=False)
class TableSpec:
    """The columns of one table as the writer sees them: every column but the row id."""

    table: Table
    defaults: dict[str, Any]
    """Column name -> value used when a record leaves it out."""

    @classmethod
    def of(cls, model: Any) -> TableSpec:
        table = model.__table__
        defaults = {}
        for column in table.columns:
            if column.primary_key and column.autoincrement in (True, "auto"):
                continue
            defaults[column.name] = column.default.arg if column.default is not None else None
        return cls(table, defaults)

    @property
    def name(self) -> str:
        return self.table.name


@dataclass(frozen=True)
class Failure:
    """A row the writer gave up on, and why."""

    table: str
    record: dict[str, Any]
    error: str


@dataclass
class _Batch:
    rows: dict[TableSpec, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    frames: dict[str, Any] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    size: int = 0
    since: float | None = None
    """When its oldest item was queued (time.monotonic())."""

    def add(self, item: tuple, queued_at: float) -> None:
        if isinstance(item[0], Change):
            self.changes.append(item[0])
            self.size += 1
        else:
            spec, records, frames = item
            self.rows[spec].extend(records)
            self.frames.update(frames)
            self.size += len(records)
        self.since = queued_at if self.since is None else self.since


WAIT_SLICE = 0.5
"""Seconds a flush waits at a time. Under gevent a request that waits in one of gevent's
native threads (``records.offload.off_loop``: resuming an agent's attempt) waits in that
thread's own hub, which, given no timeout, finds nothing else to run and gives up at once
("This operation would block forever"): every resume through a gevent server answered
500. A timeout keeps that hub running until the writer's thread says it is done."""


@dataclass
class _Marker:
    """A flush request (or, with ``stop``, the last item the writer reads)."""

    stop: bool = False
    done: threading.Event = field(default_factory=threading.Event)


class _SeenHashes:
    """Frame hashes already on disk, bounded: two generations, the older dropped whole.

    Forgetting a hash only costs re-sending a frame the database then ignores.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._new: set[str] = set()
        self._old: set[str] = set()

    def __contains__(self, key: str) -> bool:
        return key in self._new or key in self._old

    def add_all(self, keys: list[str]) -> None:
        self._new.update(keys)
        if len(self._new) >= self.capacity:
            self._old, self._new = self._new, set()


class BulkInsert:
    """One INSERT, compiled once for the engine's dialect, run as a driver executemany.

    SQLAlchemy's per-row parameter processing costs as much as SQLite's own insert; the
    store's columns hold plain numbers, text and booleans, which every driver takes as
    they are, so the rows go to the driver directly.
    """

    def __init__(self, statement: Any, defaults: dict[str, Any], engine: Engine) -> None:
        compiled = statement.compile(dialect=engine.dialect, column_keys=list(defaults))
        self.sql = str(compiled)
        self.defaults = defaults
        self.values = itemgetter(*compiled.positiontup) if compiled.positional else None

    def run(self, connection: Any, records: list[dict[str, Any]]) -> None:
        defaults = self.defaults
        if self.values is None:
            params: list = [{**defaults, **r} for r in records]
        else:
            values = self.values
            params = [values({**defaults, **r}) for r in records]
        connection.exec_driver_sql(self.sql, params)


def frame_insert_ignoring_duplicates(engine: Engine) -> Any:
    """INSERT into ``frame`` that skips hashes already stored, in the engine's dialect."""
    dialect = engine.dialect.name
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as dialect_insert
    elif dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    else:
        raise ValueError(f"the store supports SQLite and PostgreSQL, not {dialect}")
    return dialect_insert(Frame.__table__).on_conflict_do_nothing(index_elements=["hash"])


class BatchWriter:
    """One thread that writes what many producer threads enqueue, in batches."""

    def __init__(
        self,
        engine: Engine,
        *,
        flush_interval: float = 0.25,
        batch_size: int = 5000,
        retries: int = 3,
        frame_cache: int = 100_000,
        file: LiveFile | None = None,
    ) -> None:
        if flush_interval <= 0 or batch_size < 1 or retries < 1:
            raise ValueError("flush_interval must be > 0, batch_size and retries >= 1")
        self.engine = engine
        self.file = file
        self._next_look = 0.0
        self.flush_interval = flush_interval
        self.batch_size = batch_size
        self.retries = retries
        self._frame_insert = BulkInsert(
            frame_insert_ignoring_duplicates(engine), {"hash": None, "data": None}, engine)
        self._inserts: dict[TableSpec, BulkInsert] = {}
        self._seen = _SeenHashes(frame_cache)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._urgent = threading.Event()
        """Set when the batch in hand must not wait for its deadline: a flush asked for,
        or a batch's worth of rows queued."""
        self._lock = threading.Lock()
        self.failed: list[Failure] = []
        self._unreported: list[Failure] = []
        self.queued = 0
        """Rows and changes queued since the start (the producers count them)."""
        self.written = 0
        """Rows and changes written (or given up as failures) since the start."""
        self._oldest: float | None = None
        """When the oldest item not yet written was queued (the batch in hand)."""
        self.outage: tuple[float, str] | None = None
        """Since when (time.time()) and why the storage refuses to write, or None."""
        self._last_log = 0.0
        # Not a daemon: if the program ends without close(), the thread notices the main
        # thread has gone, writes what is queued and stops (see _run).
        self._thread = threading.Thread(target=self._run, name="store-writer")
        self._thread.start()

    # -- producer side ------------------------------------------------------------------

    def put(self, spec: TableSpec, records: list[dict[str, Any]], frames: dict) -> None:
        self.queued += len(records)
        self._queue.put(((spec, records, frames), time.monotonic()))
        self._wake_if_full()

    def put_change(self, change: Change) -> None:
        """Queue ``change`` behind everything queued so far."""
        self.queued += 1
        self._queue.put(((change,), time.monotonic()))
        self._wake_if_full()

    def _wake_if_full(self) -> None:
        if self.queued - self.written >= self.batch_size:
            self._urgent.set()

    def status(self) -> dict[str, Any]:
        """How far behind the writer is: ``waiting`` (rows and changes not yet written),
        ``age`` (seconds since the oldest of them was queued), and while the storage
        refuses to write, ``outage_since`` (Unix seconds) and ``error``."""
        oldest = self._oldest
        since, error = self.outage or (None, None)
        return {"waiting": max(0, self.queued - self.written),
                "age": 0.0 if oldest is None else max(0.0, time.monotonic() - oldest),
                "outage_since": since, "error": error}

    def has_frame(self, key: str) -> bool:
        """True if the frame ``key`` is known to be stored (producers then omit it)."""
        return key in self._seen

    def flush(self, timeout: float | None = None) -> None:
        """Wait until everything put before this call has been written (or has failed)."""
        self._wait(_Marker(), timeout)

    def stop(self) -> None:
        """Write everything queued and end the thread."""
        if self._thread.is_alive():
            self._wait(_Marker(stop=True), None)
            self._thread.join()

    def take_unreported(self) -> list[Failure]:
        with self._lock:
            failures, self._unreported = self._unreported, []
        return failures

    def _wait(self, marker: _Marker, timeout: float | None) -> None:
        if not self._thread.is_alive():
            raise RuntimeError("the store's writer thread has stopped; the store is closed")
        self._queue.put(marker)
        self._urgent.set()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not marker.done.wait(WAIT_SLICE if deadline is None
                                   else max(0.0, min(WAIT_SLICE, deadline - time.monotonic()))):
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"the store writer did not finish within {timeout} s")

    # -- writer side --------------------------------------------------------------------

    def _next(self, deadline: float | None) -> Any:
        """The next queued item, or None when there is none for now.

        With no batch in hand, the first row wakes the writer. With one, the rows that
        follow do not: the writer sleeps until the batch's deadline (or a flush, or a full
        batch, :attr:`_urgent`) and then takes everything queued at once. Waking for each
        row cost a switch to this thread and a timer per row: 6 % of a server's CPU at 100
        players, and at 200 the writer fell behind the tick loop it competes with."""
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            pass
        if deadline is None:
            try:
                return self._queue.get(timeout=POLL)
            except queue.Empty:
                return None
        wait = min(POLL, deadline - time.monotonic())
        if wait > 0 and self._urgent.wait(wait):
            self._urgent.clear()
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            return None

    def _run(self) -> None:
        batch, deadline = _Batch(), None
        while True:
            item = self._next(deadline)
            if item is None:
                self._look()
                if not threading.main_thread().is_alive():
                    self._queue.put(_Marker(stop=True))
                if deadline is None or time.monotonic() < deadline:
                    continue
            elif isinstance(item, tuple):
                batch.add(*item)  # (the rows or change, when queued)
                self._oldest = batch.since
                deadline = deadline or time.monotonic() + self.flush_interval
                if batch.size < self.batch_size:
                    continue
            if batch.size or batch.frames:
                self._write_safely(batch)
                self.written += batch.size
                batch, deadline, self._oldest = _Batch(), None, None
            if isinstance(item, _Marker):
                item.done.set()
                if item.stop:
                    return

    def _write_safely(self, batch: _Batch) -> None:
        """Write a batch; whatever goes wrong, its rows end written or kept as failures."""
        try:
            self._write(batch)
        except Exception as error:  # the thread must survive to serve the next batch
            log.exception("store writer: unexpected error")
            for spec, records in batch.rows.items():
                for record in records:
                    self._fail(spec.name, record, error)
            for change in batch.changes:
                self._fail("change", change.what, error)

    def _write(self, batch: _Batch) -> None:
        frames = {key: frame for key, frame in batch.frames.items() if key not in self._seen}
        frame_rows = []
        for key, frame in frames.items():
            try:
                frame_rows.append(_frame_row(key, frame))
            except (TypeError, ValueError) as error:
                self._fail("frame", {"hash": key, "frame": frame}, error)
        refused, tries = 0, 0
        while True:
            tries += 1
            try:
                off_loop(self._transaction, frame_rows, batch)
            except Exception as error:  # the storage away: wait; the rows wrong: isolate them
                if not unavailable(error):
                    refused += 1
                    log.warning("store writer: a batch of %d rows failed (attempt %d of %d): "
                                "%s", batch.size, refused, self.retries, error)
                    if refused >= self.retries:
                        break
                    time.sleep(0.05 * 2**refused)
                    continue
                self._storage_away(error)
                time.sleep(min(BACKOFF_LIMIT, 0.05 * 2**min(tries, 6)))
            else:
                self._seen.add_all([row["hash"] for row in frame_rows])
                self._storage_back()
                return
        self._write_one_by_one(batch, frame_rows)

    def _transaction(self, frame_rows: list[dict[str, Any]], batch: _Batch) -> None:
        self.keep_file()
        with self.engine.begin() as connection:
            if frame_rows:
                self._frame_insert.run(connection, frame_rows)
            for spec, records in batch.rows.items():
                self._insert(spec).run(connection, records)
            run_changes(connection, batch.changes)

    def keep_file(self) -> None:
        """Put the database back at its path if it was deleted (:class:`LiveFile`), and
        reopen the engine's connections there; raise :class:`FileTrouble` while it cannot
        be (the storage is away)."""
        if self.file is None:
            return
        self._next_look = time.monotonic() + LOOK_EVERY
        try:
            happened = self.file.keep()
        except FileTrouble:
            self.engine.dispose()  # pooled connections to the old file: new ones are refused
            raise
        if happened is not None:
            self.engine.dispose()
            log.error("store writer: %s while the server ran; the server wrote the database "
                      "back to %s from its open connections, and nothing is lost", happened,
                      self.file.path)

    def _look(self) -> None:
        """Between batches: the file kept about once every :data:`LOOK_EVERY` seconds."""
        if self.file is None or time.monotonic() < self._next_look:
            return
        try:
            off_loop(self.keep_file)
        except OSError as error:  # FileTrouble, or the file's folder unreachable
            self._storage_away(error)
        else:
            self._storage_back()

    def _storage_away(self, error: BaseException) -> None:
        """The storage refused a batch (or the database file could not be kept at its
        path): say so once, then every :data:`OUTAGE_LOG_EVERY` seconds, and keep the
        rows."""
        now = time.time()
        text = f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
        if self.outage is None:
            log.error("store writer: the storage refuses to write (%s); %d rows are kept in "
                      "memory and retried until it comes back", text, self.status()["waiting"])
            self.outage, self._last_log = (now, text), now
        elif now - self._last_log >= OUTAGE_LOG_EVERY:
            log.error("store writer: the storage has refused to write for %.0f s (%s); %d rows "
                      "wait", now - self.outage[0], text, self.status()["waiting"])
            self.outage, self._last_log = (self.outage[0], text), now

    def _storage_back(self) -> None:
        if self.outage is not None:
            log.warning("store writer: the storage writes again after %.1f s; nothing was lost",
                        time.time() - self.outage[0])
            self.outage = None

    def _write_one_by_one(self, batch: _Batch, frame_rows: list[dict[str, Any]]) -> None:
        for row in frame_rows:
            if self._write_row(self._frame_insert.run, "frame", [row], row):
                self._seen.add_all([row["hash"]])
        for spec, records in batch.rows.items():
            for record in records:
                self._write_row(self._insert(spec).run, spec.name, [record], record)
        for change in batch.changes:
            self._write_row(lambda connection, _rows, c=change: c.run(connection), "change",
                            [], change.what)

    def _insert(self, spec: TableSpec) -> BulkInsert:
        if spec not in self._inserts:
            self._inserts[spec] = BulkInsert(insert(spec.table), spec.defaults, self.engine)
        return self._inserts[spec]

    def _write_row(self, run: Callable[[Connection, list], None], table: str, rows: list,
                   record: dict) -> bool:
        """One row (or change) alone, retried while the storage is away; False when the
        database refuses it, which is then kept as a :class:`Failure`."""
        tries = 0
        while True:
            tries += 1
            try:
                off_loop(self._alone, run, rows)
            except Exception as error:  # kept and reported, never dropped
                if unavailable(error):
                    time.sleep(min(BACKOFF_LIMIT, 0.05 * 2**min(tries, 6)))
                    continue
                self._fail(table, record, error)
                return False
            return True

    def _alone(self, run: Callable[[Connection, list], None], rows: list) -> None:
        with self.engine.begin() as connection:
            run(connection, rows)

    def _fail(self, table: str, record: dict, error: BaseException) -> None:
        failure = Failure(table, record, f"{type(error).__name__}: {error}")
        log.error("store writer: gave up on a %s row: %s", table, failure.error)
        with self._lock:
            self.failed.append(failure)
            self._unreported.append(failure)


def _frame_row(key: str, frame: Any) -> dict[str, str]:
    return {"hash": key, "data": json.dumps(frame, separators=(",", ":"))}
