"""``gridstudy backup``: a whole copy of a SQLite database, taken while its server writes.

A copy made with ``cp`` of a database a server is writing can be torn (a page copied
before a write, the next after it), and misses what the write-ahead log holds beside the
file: with the defaults, up to the last thousand pages of the study. This copy goes
through SQLite's backup API on one read transaction, so it is the database as it stood at
one moment, every row the server had written by then included; the server's writes go on
meanwhile (a reader holds no writer up in WAL mode), and SQLite checks the copy before it
takes the backup's name, so an earlier backup of that name stays whole until then (a full
disk, a Ctrl-C or a copy that fails its check leave it as it was). A backup killed
mid-copy (``kill -9``, the machine's OOM killer, a reboot) leaves its part beside the
backup's name; the next backup to that name removes it.
"""

from __future__ import annotations

import glob
import os
import re
import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from records.database import database_url, open_existing, sqlite_path
from tasks.words import count

POSTGRESQL = ("a PostgreSQL database is backed up with PostgreSQL's own tools: "
              "pg_dump --format=custom --file=FILE URL (or its continuous archiving, for a "
              "long study)")
HEADER = 100
"""Bytes of a SQLite file's header; its ``application_id`` is at offset 68."""
MARK = 0x67734231
"""The copy's SQLite ``application_id``: the file is a backup, which a backup may replace."""
COUNTED = {"study": ("study", "studies"), "participant": ("participant", None),
           "episode": ("attempt", None), "event": ("event", None)}
"""The tables whose rows the summary counts, with what it calls a row and rows."""


@dataclass(frozen=True)
class Backup:
    """What :func:`backup` wrote."""

    path: Path
    bytes: int
    rows: dict[str, int]
    seconds: float
    cleared: tuple[Path, ...] = ()
    """Parts that backups killed mid-copy had left, removed."""
    cleared_bytes: int = 0

    def __str__(self) -> str:
        counts = ", ".join(count(self.rows[table], *COUNTED[table])
                           for table in COUNTED if table in self.rows)
        held = f": {counts}" if counts else ", no study's tables in it"
        said = (f"backed up to {self.path} ({self.bytes / 1e6:,.1f} MB{held}) in "
                f"{self.seconds:.1f} s; SQLite checked the copy: serve, export and report "
                "read it as they read the database")
        if self.cleared:
            said += (f"; removed what {count(len(self.cleared), 'backup')} killed mid-copy "
                     f"left beside it ({self.cleared_bytes / 1e6:,.1f} MB)")
        return said


def backup(url: str, out: str | Path, starting: Callable[[Path], None] | None = None) -> Backup:
    """Copy the SQLite database at ``url`` to the file ``out`` (an earlier backup there is
    replaced only by a whole, checked copy), calling ``starting`` with the database's path
    once it is found.

    Raises ``ValueError`` for a PostgreSQL URL; ``FileExistsError`` when ``out`` is the
    database itself or one of its files, or a file that is not a backup (another study's
    database above all) or is open; ``OSError`` when the copy cannot be written (nothing
    is left of it)."""
    path = sqlite_path(database_url(url))
    if path is None:
        raise ValueError(POSTGRESQL)
    out = Path(out)
    _check_target(path, out)
    engine = open_existing(url)  # a database that is not there is refused, never made
    if starting is not None:
        starting(path)
    cleared = _clear_killed(out)
    part = out.with_name(f"{_PART.format(name=out.name)}{os.getpid()}")
    started = time.monotonic()
    try:
        with engine.connect() as connection, closing(sqlite3.connect(part)) as target:
            connection.connection.driver_connection.backup(target)  # one step: one snapshot
            target.execute(f"PRAGMA application_id = {MARK}")
            checked = target.execute("PRAGMA quick_check").fetchone()[0]
            if checked != "ok":
                raise OSError(f"the copy failed SQLite's check ({checked}); {out} is as it was")
            rows = {table: target.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                    for table in COUNTED if _has(target, table)}
        _sync(part)
        os.replace(part, out)
        _sync(out.parent)
    except sqlite3.Error as error:  # a full disk, above all
        _remove(part)
        raise OSError(f"the backup stopped: {error}; nothing of it is left, and {out} is as "
                      "it was") from None
    except BaseException:
        _remove(part)
        raise
    finally:
        engine.dispose()
    return Backup(out, out.stat().st_size, rows, time.monotonic() - started,
                  tuple(cleared), sum(cleared.values()))


_PART = ".{name}.partial-"
"""A copy's name until it is checked, then the process's id: ``.b.db.partial-4242``."""


def _clear_killed(out: Path) -> dict[Path, int]:
    """Remove the parts, and their journals, that backups to ``out`` left when they were
    killed mid-copy: those whose process is no longer running on this machine (one that
    is, a backup still copying, keeps its part). Returns each part removed with its bytes,
    its journal's counted in."""
    prefix = _PART.format(name=out.name)
    parts = {next((file.with_name(file.name.removesuffix(suffix)) for suffix in _COMPANIONS
                   if file.name.endswith(suffix)), file)
             for file in out.parent.glob(f"{glob.escape(prefix)}*")}
    cleared: dict[Path, int] = {}
    for part in sorted(parts):
        pid = part.name[len(prefix):]
        if not re.fullmatch("[1-9][0-9]{0,8}", pid) or _running(int(pid)):
            continue  # a backup still copying keeps its part; no process has such a number
        cleared[part] = sum(_size(file) for file in (
            part, *(Path(f"{part}{suffix}") for suffix in _COMPANIONS)))
        _remove(part)
    return cleared


def _size(file: Path) -> int:
    """The file's bytes; 0 when it is not there (another backup to that name removed it)."""
    try:
        return file.stat().st_size
    except FileNotFoundError:
        return 0


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _check_target(database: Path, out: Path) -> None:
    if not out.parent.is_dir():
        raise FileNotFoundError(f"no folder {str(out.parent)!r} for the backup: create it, "
                                "or give another path")
    if out.is_dir():
        raise IsADirectoryError(f"{out} is a folder: give the backup's file, for example "
                                f"{out / database.name}")
    own = [Path(f"{database}{suffix}") for suffix in ("", "-wal", "-shm", "-journal")]
    if any(out.resolve() == part.resolve() or (out.exists() and part.exists()
                                                and out.samefile(part)) for part in own):
        raise FileExistsError(f"{out} is the database itself, or one of its files: give the "
                              "backup another name")
    if any(Path(f"{out}{suffix}").exists() for suffix in ("-wal", "-shm", "-journal")):
        raise FileExistsError(f"{out} is open (its write-ahead log is beside it: a server or "
                              "another program has it open): it is not replaced; give the "
                              "backup another name")
    if out.exists() and not out.is_file():
        raise FileExistsError(f"{out} is not a file (a device, a pipe): it is not replaced; "
                              "give the backup a file's name")
    if out.exists() and not _a_backup(out):
        raise FileExistsError(f"{out} exists and is not a backup (another study's database, "
                              "or another file): it is not replaced; give the backup another "
                              "name")


def _a_backup(path: Path) -> bool:
    """Whether ``path`` is a backup this command made (an empty file counts as none): its
    header's ``application_id``, read from the file itself, since nothing has it open. A
    connection would make the write-ahead log of a backup, which is in WAL mode, and a
    read-only one leaves it beside the file; the copy moved in would then have read it."""
    with path.open("rb") as file:
        header = file.read(HEADER)
    return not header or (header.startswith(b"SQLite format 3\x00") and len(header) == HEADER
                          and int.from_bytes(header[68:72], "big") == MARK)


_COMPANIONS = ("-journal", "-wal", "-shm")
"""The files SQLite may make beside a copy while it is written."""


def _remove(part: Path) -> None:
    for leftover in (part, *(Path(f"{part}{suffix}") for suffix in _COMPANIONS)):
        leftover.unlink(missing_ok=True)


def _has(connection: sqlite3.Connection, table: str) -> bool:
    return connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                              (table,)).fetchone() is not None


def _sync(path: Path) -> None:
    """Make ``path`` (a file, or a folder after a move into it) survive a power cut."""
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
