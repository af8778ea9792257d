"""Exports: the store's trajectories as plain files a researcher can share and reload.

``export(url, out)`` writes, for the whole database or one study:

* ``events.jsonl`` and ``events.parquet``: one row per event, ordered by episode and seq;
* ``episodes.csv``: one row per attempt, with who made it (``agent_kind``) and whether
  it counts (``included``, the exclusion reasons);
* ``frames.jsonl``: each frame the events refer to, once, keyed by hash;
* ``raw_inputs.jsonl``, ``agent_runs.jsonl``, ``participants.jsonl``, ``signals.jsonl``
  (the data-quality signals of participants' browsers);
* ``data_dictionary.json`` and ``data_dictionary.md``: every column of every file.

``participants.jsonl`` holds each participant's Prolific ids (``external_id`` is the
PROLIFIC_PID), with the code given and the start and end of the visit, so that a lab can
pay and audit from its own export. ``pseudonymize=True`` (``gridstudy export
--pseudonymize``) replaces every id with a keyed hash before the data is shared: the same
id gives the same hash in every export of the database, and the key stays in the
database (its ``setting`` table). ``analysis.load(out)`` reads an export as it reads the
database.
Rows are streamed in chunks, so an export of millions of events needs little memory.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import func, select, true
from sqlalchemy.engine import Connection

from records import schema
from records.database import one_moment, open_existing
from records.models import (
    AgentRun,
    EpisodeRow,
    Event,
    Frame,
    Participant,
    RawInput,
    Setting,
    Signal,
    Study,
)
from records.schema import as_utc
from study_server.export_dictionary import COLUMNS, write_dictionary
from tasks.words import suggest

CHUNK = 10_000
ARROW_TYPES = {schema.BOOL: pa.bool_(), schema.INT: pa.int64(), schema.FLOAT: pa.float64(),
               schema.TEXT: pa.string()}


@dataclass(frozen=True)
class ExportSummary:
    """What an export wrote."""

    out: Path
    episodes: int
    events: int
    frames: int
    raw_inputs: int
    participants: int = 0

    def __str__(self) -> str:
        return (f"wrote {self.episodes} episodes, {self.events} events, {self.frames} frames, "
                f"{self.raw_inputs} raw inputs and {self.participants} participants to {self.out}")


Progress = Callable[[int, int], None]
"""Told ``(rows written, rows to write)`` as an export goes (every :data:`CHUNK` rows)."""


def export(url: str, out: str | Path, *, study: str | None = None,
           pseudonymize: bool = False, key: bytes | None = None,
           progress: Progress | None = None) -> ExportSummary:
    """Export the database at ``url`` (every study, or only ``study``) into ``out``;
    with ``pseudonymize``, participants' ids are keyed hashes (``key``: the database's
    :func:`pseudonym_key`, read from it when not given: a server gives its own store's).
    ``progress`` is told how far it is: the rows to write are counted first."""
    engine = open_existing(url)
    out = Path(out)
    try:
        if study is not None:
            known_study(engine, study)
        with engine.connect() as connection:  # first: a database out of reach leaves no folder
            hide = Pseudonyms(key or _stored_key(engine) or _made_key(url)) if pseudonymize else None
            with staged(out, "gridstudy export") as staging:
                one_moment(connection)
                scope = _Scope(study)
                tables = {"episodes": episode_rows(connection, scope),
                          "events": event_rows(connection, scope),
                          "frames": frame_rows(connection, scope),
                          "raw_inputs": raw_rows(connection, scope),
                          "participants": participant_rows(connection, scope, hide),
                          "agent_runs": run_rows(connection, scope),
                          "signals": signal_rows(connection, scope)}
                if progress is not None:
                    tables = _Tally(progress, _row_count(connection, scope)).over(tables)
                summary = ExportSummary(
                    out=out,
                    episodes=write_csv(staging / "episodes.csv", tables["episodes"]),
                    events=write_events(staging, tables["events"]),
                    frames=write_jsonl(staging / "frames.jsonl", tables["frames"]),
                    raw_inputs=write_jsonl(staging / "raw_inputs.jsonl", tables["raw_inputs"]),
                    participants=write_jsonl(staging / "participants.jsonl",
                                             tables["participants"]),
                )
                write_jsonl(staging / "agent_runs.jsonl", tables["agent_runs"])
                write_jsonl(staging / "signals.jsonl", tables["signals"])
                write_dictionary(staging)
    finally:
        engine.dispose()
    return summary


def known_study(engine: Any, study: str) -> None:
    """Raise ``LookupError`` naming the studies there are, unless ``study`` is one (a
    mistyped id exported nothing, and said it wrote 0 episodes; ``gridstudy payments``
    said to create it)."""
    with engine.connect() as connection:
        held = sorted(connection.execute(select(Study.id)).scalars())
    if study not in held:
        raise LookupError(f"no study {study!r} in the database{suggest(study, held)}; it "
                          "holds: " + (", ".join(held) or "none"))


STAGING = ".export-"
"""The prefix of the hidden folder inside the export's folder where an export writes its
files before they replace the folder's (:func:`_publish`): ``STAGING<owner>-<random>``
(:func:`owner_mark`), so that the next export removes one whose process was killed
(:func:`left_by_the_dead`)."""


def owner_mark(pid: int | None = None) -> str:
    """``<process id>.<its start time>`` (in clock ticks since the machine started, from
    ``/proc``; the id alone where there is none): what names a folder's owning process
    in a way a process given the same number later does not share."""
    pid = os.getpid() if pid is None else pid
    started = _started(pid)
    return f"{pid}" if started is None else f"{pid}.{started}"


def _started(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot; None when this system
    does not say (no ``/proc``) or the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])  # field 22; the name may hold ")"


def left_by_the_dead(folder: Path, prefix: str) -> list[Path]:
    """Remove the folders ``prefix<owner>-...`` in ``folder`` whose process is gone (an
    export killed while it wrote them: they hold participants' Prolific ids); the
    folders removed. A process of that number alive keeps its folder only if it is the
    same process (it started when the owner did): a number given again to another
    process no longer keeps a dead export's folder as long as that one runs."""
    removed = []
    for path in folder.glob(f"{prefix}*"):
        found = re.match(rf"{re.escape(prefix)}(\d+)(?:\.(\d+))?-", path.name)
        if found and path.is_dir() and not _alive(int(found.group(1)), found.group(2)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _alive(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        pass
    now = _started(pid)
    return started is None or now is None or int(started) == now


@contextmanager
def staged(out: Path, again: str) -> Iterator[Path]:
    """A hidden folder in ``out`` for the block to write its files in; when the block
    ends well they replace ``out``'s (:func:`_publish`), and when it fails or is stopped
    (a full disk, Ctrl-C, a lost database) what it wrote is removed and ``out`` is left
    as it was. ``again`` is the command that writes the folder (said if it must be run
    again)."""
    out.mkdir(parents=True, exist_ok=True)
    left_by_the_dead(out, STAGING)
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING}{owner_mark()}-", dir=out))
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _publish(staging, out, again)


def _publish(staging: Path, out: Path, again: str) -> None:
    """Move every file written in ``staging`` into ``out``, replacing the earlier ones.

    One killed while it writes leaves its hidden staging folder, which the next one
    removes. The moves themselves take moments, and while they are made ``out`` holds
    :data:`records.schema.EXPORT_UNFINISHED`, which the analysis refuses to load: a
    process killed among them, or a move that fails, leaves files of two runs, said so,
    never silently."""
    unfinished = out / schema.EXPORT_UNFINISHED
    unfinished.write_text(
        "This folder's files were being replaced when the command writing them stopped:\n"
        f"they may come from two runs. Run {again} again; gridstudy report refuses this\n"
        "folder until then.\n")
    for path in staging.iterdir():
        os.replace(path, out / path.name)
    staging.rmdir()
    unfinished.unlink()


class _Tally:
    """Counts the rows an export writes, telling ``progress`` every :data:`CHUNK`."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0
        progress(0, total)

    def over(self, tables: dict[str, Iterator[dict[str, Any]]]) -> dict[str, Iterator[dict[str, Any]]]:
        return {name: self._counted(rows) for name, rows in tables.items()}

    def _counted(self, rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for row in rows:
            yield row
            self.done += 1
            if self.done % CHUNK == 0:
                self.progress(self.done, max(self.total, self.done))
        self.progress(self.done, max(self.total, self.done))


def _row_count(connection: Connection, scope: _Scope) -> int:
    """The rows the export of ``scope`` writes, every file together."""
    used = select(Event.frame_hash).where(scope.events())
    counted = [(EpisodeRow, scope.episodes()), (Event, scope.events()),
               (Frame, Frame.hash.in_(used)), (RawInput, scope.raw_inputs()),
               (Participant, scope.participants()), (AgentRun, scope.agent_runs()),
               (Signal, scope.signals())]
    return sum(connection.execute(select(func.count()).select_from(model).where(where)).scalar()
               for model, where in counted)


# -- what belongs to the export -----------------------------------------------------------


class _Scope:
    """The WHERE clauses that restrict each table to one study (or to nothing)."""

    def __init__(self, study: str | None) -> None:
        self.study = study

    def episodes(self) -> Any:
        return true() if self.study is None else EpisodeRow.study_id == self.study

    def episode_ids(self) -> Any:
        return select(EpisodeRow.id).where(self.episodes())

    def events(self) -> Any:
        return true() if self.study is None else Event.episode_id.in_(self.episode_ids())

    def participants(self) -> Any:
        return true() if self.study is None else Participant.study_id == self.study

    def raw_inputs(self) -> Any:
        if self.study is None:
            return true()
        ids = select(Participant.id).where(self.participants())
        return RawInput.episode_id.in_(self.episode_ids()) | RawInput.participant_id.in_(ids)

    def signals(self) -> Any:
        return true() if self.study is None else Signal.study_id == self.study

    def agent_runs(self) -> Any:
        if self.study is None:
            return true()
        used = select(EpisodeRow.agent_run_id).where(self.episodes())
        return (AgentRun.study_id == self.study) | AgentRun.id.in_(used)


def _stream(connection: Connection, query: Any) -> Iterator[dict[str, Any]]:
    result = connection.execution_options(yield_per=CHUNK).execute(query)
    for row in result.mappings():
        yield dict(row)


def _columns(model: Any) -> list[Any]:
    return [c for c in model.__table__.columns if c.name != "id"]


def episode_rows(connection: Connection, scope: _Scope) -> Iterator[dict[str, Any]]:
    """episodes.csv: each attempt joined with its agent run, participant and event count."""
    counts = (select(Event.episode_id, func.count().label("n_events"))
              .group_by(Event.episode_id).subquery())
    query = (
        select(
            EpisodeRow.id.label("episode_id"), *_columns(EpisodeRow),
            AgentRun.agent_kind.label("run_kind"), AgentRun.model,
            AgentRun.config.label("agent_config"),
            Participant.status.label("participant_status"),
            Participant.exclusion_reason.label("participant_exclusion_reason"),
            counts.c.n_events,
        )
        .outerjoin(AgentRun, AgentRun.id == EpisodeRow.agent_run_id)
        .outerjoin(Participant, Participant.id == EpisodeRow.participant_id)
        .outerjoin(counts, counts.c.episode_id == EpisodeRow.id)
        .where(scope.episodes())
        .order_by(EpisodeRow.id)
    )
    for row in _stream(connection, query):
        kind = row.pop("run_kind")
        row["agent_kind"] = schema.agent_kind(kind, row["agent_run_id"], row["participant_id"])
        row["agent"] = schema.agent_name(row["agent_kind"], row["model"], row["agent_config"])
        row["n_events"] = row["n_events"] or 0
        yield {name: row[name] for name in COLUMNS["episodes.csv"]}


def event_rows(connection: Connection, scope: _Scope) -> Iterator[dict[str, Any]]:
    query = (select(*_columns(Event)).where(scope.events())
             .order_by(Event.episode_id, Event.seq, Event.id))
    return _stream(connection, query)


def frame_rows(connection: Connection, scope: _Scope) -> Iterator[dict[str, Any]]:
    used = select(Event.frame_hash).where(scope.events())
    query = select(Frame.hash, Frame.data).where(Frame.hash.in_(used)).order_by(Frame.hash)
    for row in _stream(connection, query):
        yield {"hash": row["hash"], "frame": json.loads(row["data"])}


def raw_rows(connection: Connection, scope: _Scope) -> Iterator[dict[str, Any]]:
    query = select(*_columns(RawInput)).where(scope.raw_inputs()).order_by(RawInput.id)
    return _stream(connection, query)


def signal_rows(connection: Connection, scope: _Scope) -> Iterator[dict[str, Any]]:
    query = select(*_columns(Signal)).where(scope.signals()).order_by(Signal.id)
    return _stream(connection, query)


def run_rows(connection: Connection, scope: _Scope) -> Iterator[dict[str, Any]]:
    query = select(*AgentRun.__table__.columns).where(scope.agent_runs()).order_by(AgentRun.id)
    return _stream(connection, query)


def participant_rows(connection: Connection, scope: _Scope,
                     hide: Pseudonyms | None = None) -> Iterator[dict[str, Any]]:
    columns = [Participant.__table__.c[name] for name in COLUMNS["participants.jsonl"]]
    query = select(*columns).where(scope.participants()).order_by(Participant.id)
    for row in _stream(connection, query):
        yield hide.participant(row) if hide else row


PSEUDONYM_KEY = "pseudonym_key"
"""The ``setting`` that keeps the database's pseudonym key."""


def pseudonym_key(store: Any) -> bytes:
    """The pseudonym key of ``store``'s database (made on first use and kept in it)."""
    import secrets

    return bytes.fromhex(store.setting(PSEUDONYM_KEY, lambda: secrets.token_hex(32)))


def _stored_key(engine: Any) -> bytes | None:
    """The database's pseudonym key if it has one, read without writing: an archived
    study, on a read-only filesystem, pseudonymized before, is pseudonymized again with
    the same hashes."""
    with engine.connect() as connection:
        value = connection.execute(select(Setting.value).where(
            Setting.name == PSEUDONYM_KEY)).scalar()
    return bytes.fromhex(value) if value else None


def _made_key(url: str) -> bytes:
    """A new pseudonym key, kept in the database at ``url`` (which must be writable: a
    key not kept would give other hashes in the next export)."""
    from records.store import Store

    with Store(url) as store:
        return pseudonym_key(store)


class Pseudonyms:
    """Keyed hashes (HMAC-SHA256) in place of the ids that identify a participant."""

    def __init__(self, key: bytes) -> None:
        self.key = key

    def of(self, value: str | None) -> str | None:
        import hashlib
        import hmac

        if value is None:
            return None
        return "h-" + hmac.new(self.key, value.encode(), hashlib.sha256).hexdigest()[:20]

    def participant(self, row: dict[str, Any]) -> dict[str, Any]:
        out = dict(row)
        for declared in schema.PARTICIPANT.fields:
            if not declared.private or declared.name not in out:
                continue
            value = out[declared.name]
            out[declared.name] = ({self.of(k): v for k, v in value.items()}
                                  if isinstance(value, dict) else self.of(value))
        return out


# -- writing ------------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """A value as JSON and CSV carry it: datetimes as ISO 8601 in UTC."""
    if isinstance(value, datetime):
        return as_utc(value).isoformat()
    return value


def write_jsonl(path: Path, rows: Iterator[dict[str, Any]]) -> int:
    n = 0
    with path.open("w") as out:
        for row in rows:
            out.write(json.dumps({k: plain(v) for k, v in row.items()}) + "\n")
            n += 1
    return n


def write_csv(path: Path, rows: Iterator[dict[str, Any]]) -> int:
    """CSV with ``true``/``false``, empty cells for nulls and JSON for dict columns."""
    n = 0
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(COLUMNS[path.name])
        for row in rows:
            writer.writerow(_csv_cell(v) for v in row.values())
            n += 1
    return n


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return plain(value)


def write_events(out: Path, rows: Iterator[dict[str, Any]]) -> int:
    """events.jsonl and events.parquet from one pass over the event rows."""
    schema = events_schema()
    n, chunk = 0, []
    with (out / "events.jsonl").open("w") as jsonl, pq.ParquetWriter(
        out / "events.parquet", schema
    ) as parquet:
        for row in rows:
            jsonl.write(json.dumps(row) + "\n")
            chunk.append(row)
            if len(chunk) == CHUNK:
                parquet.write_table(pa.Table.from_pylist(chunk, schema))
                n, chunk = n + len(chunk), []
        if chunk or n == 0:
            parquet.write_table(pa.Table.from_pylist(chunk, schema))
    return n + len(chunk)


def events_schema() -> pa.Schema:
    """The Parquet schema of events, from the event fields' declared types."""
    return pa.schema([pa.field(f.name, ARROW_TYPES[f.type], nullable=f.nullable)
                      for f in schema.EVENT.without("id")])
