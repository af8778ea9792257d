"""The background writer behind :class:`records.store.Store`.

Producers (socket handlers, tick loops, agent runners; any number of threads) put rows on
a queue and return at once. One thread drains the queue and writes a batch whenever the
oldest queued row is ``flush_interval`` seconds old, the batch reaches ``batch_size``
rows, or someone asks to flush. A batch is one transaction: frames with
INSERT ... ON CONFLICT DO NOTHING, then each table's rows with one executemany.

A batch that fails is retried with back-off; if it still fails, its rows are written one
at a time so that one bad row cannot take its neighbours down, and the rows that fail
even alone are kept as :class:`Failure` records for the store to raise.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from sqlalchemy import Table, insert
from sqlalchemy.engine import Engine

from records.models import Frame

log = logging.getLogger(__name__)

POLL = 0.25
"""Longest the writer sleeps before checking whether the program is ending."""


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
    size: int = 0

    def add(self, spec: TableSpec, records: list[dict[str, Any]], frames: dict) -> None:
        self.rows[spec].extend(records)
        self.frames.update(frames)
        self.size += len(records)


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
    ) -> None:
        if flush_interval <= 0 or batch_size < 1 or retries < 1:
            raise ValueError("flush_interval must be > 0, batch_size and retries >= 1")
        self.engine = engine
        self.flush_interval = flush_interval
        self.batch_size = batch_size
        self.retries = retries
        self._frame_insert = BulkInsert(
            frame_insert_ignoring_duplicates(engine), {"hash": None, "data": None}, engine)
        self._inserts: dict[TableSpec, BulkInsert] = {}
        self._seen = _SeenHashes(frame_cache)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self.failed: list[Failure] = []
        self._unreported: list[Failure] = []
        # Not a daemon: if the program ends without close(), the thread notices the main
        # thread has gone, writes what is queued and stops (see _run).
        self._thread = threading.Thread(target=self._run, name="store-writer")
        self._thread.start()

    # -- producer side ------------------------------------------------------------------

    def put(self, spec: TableSpec, records: list[dict[str, Any]], frames: dict) -> None:
        self._queue.put((spec, records, frames))

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
        if not marker.done.wait(timeout):
            raise TimeoutError(f"the store writer did not finish within {timeout} s")

    # -- writer side --------------------------------------------------------------------

    def _run(self) -> None:
        batch, deadline = _Batch(), None
        while True:
            wait = POLL if deadline is None else min(POLL, deadline - time.monotonic())
            try:
                item = self._queue.get(timeout=max(wait, 0.0))
            except queue.Empty:
                item = None
            if item is None:
                if not threading.main_thread().is_alive():
                    self._queue.put(_Marker(stop=True))
                if deadline is None or time.monotonic() < deadline:
                    continue
            elif isinstance(item, tuple):
                batch.add(*item)
                deadline = deadline or time.monotonic() + self.flush_interval
                if batch.size < self.batch_size:
                    continue
            if batch.size or batch.frames:
                self._write_safely(batch)
                batch, deadline = _Batch(), None
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

    def _write(self, batch: _Batch) -> None:
        frames = {key: frame for key, frame in batch.frames.items() if key not in self._seen}
        frame_rows = []
        for key, frame in frames.items():
            try:
                frame_rows.append(_frame_row(key, frame))
            except (TypeError, ValueError) as error:
                self._fail("frame", {"hash": key, "frame": frame}, error)
        for attempt in range(self.retries):
            try:
                with self.engine.begin() as connection:
                    if frame_rows:
                        self._frame_insert.run(connection, frame_rows)
                    for spec, records in batch.rows.items():
                        self._insert(spec).run(connection, records)
            except Exception as error:  # any failure: retry, then isolate the bad rows
                log.warning(
                    "store writer: a batch of %d rows failed (attempt %d of %d): %s",
                    batch.size, attempt + 1, self.retries, error,
                )
                time.sleep(0.05 * 2**attempt)
            else:
                self._seen.add_all([row["hash"] for row in frame_rows])
                return
        self._write_one_by_one(batch, frame_rows)

    def _write_one_by_one(self, batch: _Batch, frame_rows: list[dict[str, Any]]) -> None:
        for row in frame_rows:
            if self._write_row(self._frame_insert, "frame", row, row):
                self._seen.add_all([row["hash"]])
        for spec, records in batch.rows.items():
            for record in records:
                self._write_row(self._insert(spec), spec.name, record, record)

    def _insert(self, spec: TableSpec) -> BulkInsert:
        if spec not in self._inserts:
            self._inserts[spec] = BulkInsert(insert(spec.table), spec.defaults, self.engine)
        return self._inserts[spec]

    def _write_row(self, statement: BulkInsert, table: str, row: dict, record: dict) -> bool:
        try:
            with self.engine.begin() as connection:
                statement.run(connection, [row])
        except Exception as error:  # kept and reported, never dropped
            self._fail(table, record, error)
            return False
        return True

    def _fail(self, table: str, record: dict, error: BaseException) -> None:
        failure = Failure(table, record, f"{type(error).__name__}: {error}")
        log.error("store writer: gave up on a %s row: %s", table, failure.error)
        with self._lock:
            self.failed.append(failure)
            self._unreported.append(failure)


def _frame_row(key: str, frame: Any) -> dict[str, str]:
    return {"hash": key, "data": json.dumps(frame, separators=(",", ":"))}
