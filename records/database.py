"""Where the record lives: database URLs and engines (SQLAlchemy only, no tables).

The store writes through these engines, the export and the analysis read through them;
a user may type a URL or the path of a SQLite file wherever a database is asked for.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import create_engine
from sqlalchemy import event as sa_event
from sqlalchemy.engine import Engine, make_url

from records.offload import off_loop, on_loop_thread
from records.schema import storable_json

BUSY_TIMEOUT = 30.0
"""Seconds a SQLite statement waits for another connection's write lock before it fails
with "database is locked"."""


def database_url(text: str) -> str:
    """A SQLAlchemy URL from what a user may type: a URL, or the path of a SQLite file.

    ``postgres://`` and ``postgresql://`` use the psycopg 3 driver (the ``postgres``
    extra), not SQLAlchemy's default psycopg2.

    >>> database_url("data/gridstudy.db")
    'sqlite:///data/gridstudy.db'
    >>> database_url("postgres://study@db.example/gridstudy")
    'postgresql+psycopg://study@db.example/gridstudy'

    Anything else is refused (``ValueError``) in one line saying what is accepted, its
    password hidden: a MySQL URL, a web address, a SQLite URL without a file (the store's
    writer thread needs a file it can share), or nothing at all.

    >>> database_url("mysql://study:secret@db.example/gridstudy")
    Traceback (most recent call last):
    ValueError: mysql://study:***@db.example/gridstudy is not a database gridstudy can use: give a SQLite file (gridstudy.db, or sqlite:///path/to/gridstudy.db) or a PostgreSQL URL (postgresql://user:password@host/name)
    """
    if not text.strip():
        raise ValueError(f"no database given: {ACCEPTED}")
    if "://" not in text:
        return f"sqlite:///{text}"
    scheme, _, rest = text.partition("://")
    if scheme in ("postgres", "postgresql"):
        return f"postgresql+psycopg://{rest}"
    backend = scheme.partition("+")[0]
    if backend not in ("sqlite", "postgresql"):
        raise ValueError(f"{_hidden(text)} is not a database gridstudy can use: {ACCEPTED}")
    if backend == "sqlite" and make_url(text).database in (None, "", ":memory:"):
        raise ValueError(f"{text} is an in-memory SQLite database; the store needs a file, "
                         "for example sqlite:///gridstudy.db")
    return text


ACCEPTED = ("give a SQLite file (gridstudy.db, or sqlite:///path/to/gridstudy.db) or a "
            "PostgreSQL URL (postgresql://user:password@host/name)")


def _hidden(text: str) -> str:
    """``text``, a URL, with its password as ``***``."""
    try:
        return make_url(text).render_as_string(hide_password=True)
    except Exception:  # not even a URL SQLAlchemy reads: said as typed, without a password
        return text.split("@")[-1] if "@" in text else text


def make_engine(url: str, file: LiveFile | None = None) -> Engine:
    """An engine for ``url``; a SQLite file gets WAL mode and ``synchronous=NORMAL``.

    WAL lets the dashboard and the exports read while the writer writes; NORMAL is safe
    in WAL mode (a power cut may lose the last transactions, never corrupt the file).
    An in-memory SQLite database is refused: the writer thread could not share it.
    A server's store passes its :class:`LiveFile`, which opens the engine's connections.
    """
    url = database_url(url)  # refuses an in-memory SQLite database
    if make_url(url).get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True, json_serializer=storable_json)
    opening: dict[str, Any] = ({"creator": file.connect} if file is not None
                               else {"connect_args": {"timeout": BUSY_TIMEOUT}})
    engine = create_engine(url, json_serializer=storable_json, **opening)
    sa_event.listen(engine, "connect", _sqlite_pragmas)
    _spare_the_loop(engine)
    return engine


def _reading_engine(path: Path) -> Engine:
    """An engine that only reads the SQLite file at ``path``, which this process cannot
    write (:func:`unwritable`); no pragma, since they write."""
    engine = create_engine(f"sqlite:///{path}", json_serializer=storable_json,
                           creator=lambda: _reading_connection(path))
    _spare_the_loop(engine)
    return engine


def _reading_connection(path: Path) -> sqlite3.Connection:
    """A connection that only reads ``path``: ``mode=ro``, and ``immutable`` where no
    write-ahead log holds anything and, off a read-only filesystem, no shared memory
    exists (no connection has the database open: SQLite deletes both with the last).
    Without ``immutable`` SQLite reads a database in WAL mode through its shared memory,
    which this process cannot make; with it, a writer that opened the database while
    this connection read would go unseen (a report started as its server starts)."""
    log, shared = Path(f"{path}-wal"), Path(f"{path}-shm")
    fixed = (not (log.exists() and log.stat().st_size)
             and (not shared.exists() or _read_only_filesystem(path.parent)))
    return sqlite3.connect(file_uri(path, "ro") + ("&immutable=1" if fixed else ""), uri=True,
                           timeout=BUSY_TIMEOUT, check_same_thread=False)


def file_uri(path: Path, mode: str) -> str:
    """The URI that opens the SQLite file at ``path`` in ``mode`` (``ro``, ``rw``, ``rwc``)."""
    return f"file:{quote(str(path.resolve()))}?mode={mode}"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _spare_the_loop(engine: Engine) -> None:
    """Under gevent, make the SQLite work a greenlet does on the loop (a page's reads and
    writes: the study's pages, the dashboard, a preview's start) hold nothing but that
    greenlet: each statement and each commit runs in gevent's native threads
    (:func:`records.offload.off_loop`), and a statement that finds the write lock taken
    (another process writing, the store's writer on a slow disk) waits for it
    cooperatively, tried again every few milliseconds up to :data:`BUSY_TIMEOUT`.

    SQLite's own wait for a lock is a sleep in C that holds its thread: on the loop it
    held every participant's frames while one person's page waited (measured: 3.1 s
    without a frame while another process held the lock for 3 s). Waiting in a native
    thread instead would let a crowd of pages waiting for the lock take every thread
    of the pool, the one the lock's holder needs to commit among them; so on the loop a
    connection does not wait inside SQLite at all (``busy_timeout`` 0), and only the
    statement's own work goes to a thread. Connections used elsewhere wait in SQLite as
    usual. Without gevent nothing changes."""

    def timeout_for_here(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        wanted = 0 if on_loop_thread() else int(BUSY_TIMEOUT * 1000)
        if record.info.get("busy_timeout") != wanted:
            dbapi_connection.execute(f"PRAGMA busy_timeout = {wanted}")
            record.info["busy_timeout"] = wanted

    def run_here(method: str) -> Any:
        def run(cursor: Any, statement: str, *given: Any) -> bool:
            if not on_loop_thread():
                return False
            # given: the parameters (none for do_execute_no_params), then SQLAlchemy's context
            _when_unlocked(getattr(cursor, method), statement, *given[:-1])
            return True
        return run

    commit = engine.dialect.do_commit

    def commit_off_loop(dbapi_connection: Any) -> None:
        off_loop(commit, dbapi_connection)

    sa_event.listen(engine, "checkout", timeout_for_here)
    for name, method in (("do_execute", "execute"), ("do_executemany", "executemany"),
                         ("do_execute_no_params", "execute")):
        sa_event.listen(engine, name, run_here(method))
    engine.dialect.do_commit = commit_off_loop  # the dialect has no event for it


def _when_unlocked(call: Any, *args: Any) -> Any:
    """``call(*args)`` in a native thread, tried again while SQLite answers that the
    database is locked (``SQLITE_BUSY``: the statement started no transaction's snapshot,
    so trying it again is what SQLite's own wait does), the loop's other greenlets running
    in between, until :data:`BUSY_TIMEOUT` has passed."""
    import gevent

    deadline = time.monotonic() + BUSY_TIMEOUT
    pause = 0.001
    while True:
        try:
            return off_loop(call, *args)
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                raise
        gevent.sleep(pause)
        pause = min(2 * pause, 0.05)


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL, None for other databases."""
    parsed = make_url(database_url(url))
    return Path(parsed.database or "") if parsed.get_backend_name() == "sqlite" else None


def one_moment(connection: Any) -> None:
    """Make every later read of ``connection`` (a SQLAlchemy connection not yet used) see
    the database as of its first: one read transaction (SQLite: its snapshot, which does
    not hold up the server's writes, but keeps the write-ahead log from being
    checkpointed past it until the reader is done; PostgreSQL: repeatable read). An
    export or an analysis reading a study as it runs then sees no row written meanwhile
    in some tables and not in others."""
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql("BEGIN")  # the driver begins none for reads by itself
    else:
        connection.execution_options(isolation_level="REPEATABLE READ")


def open_existing(url: str) -> Engine:
    """An engine on a database that must already exist (never create an empty one); a
    file that is not a whole SQLite database is refused with a one-line reason."""
    path = sqlite_path(url)
    if path is None:
        return make_engine(url)
    check_sqlite_file(path)
    return make_engine(url) if unwritable(path) is None else _reading_engine(path)


def check_writable(path: Path) -> None:
    """Raise ``PermissionError``, in one line saying what to change, unless this process
    can write the SQLite database at ``path`` (made there if missing) and the files
    SQLite keeps beside it (:attr:`LiveFile.PARTS`, made and deleted in its folder).

    Before, a server that could not stopped at its first write with SQLite's "attempt to
    write a readonly database" and that statement's SQL; when the check at start met it
    first, it told the operator to restore a sound database from a backup. A folder that
    is not there raises ``FileNotFoundError`` naming it (a mistyped ``--db`` stopped at
    SQLite's "unable to open database file")."""
    if path.name and not path.parent.is_dir():
        raise FileNotFoundError(f"no folder {str(path.parent)!r} for the database "
                                f"{path.name}: check --db / DATABASE_URL, or create the folder")
    reason = unwritable(path)
    if reason is None:
        return
    if reason == ON_READ_ONLY_FILESYSTEM:
        fix = "copy it to a writable disk, or mount that filesystem read-write"
    else:
        fix = ("run the command as the user who owns these files, or let this user write "
               "them (chown or chmod the folder and the database's files)")
    raise PermissionError(f"{path}: {reason}, and this command writes to it: {fix}")


ON_READ_ONLY_FILESYSTEM = "the database is on a read-only filesystem"


def unwritable(path: Path) -> str | None:
    """Why this process cannot write the SQLite database at ``path`` or the files SQLite
    keeps beside it, or None when it can (and when its folder is missing: that is said
    by :func:`check_writable`)."""
    folder = path.parent
    try:
        if _read_only_filesystem(folder):
            return ON_READ_ONLY_FILESYSTEM
    except OSError:
        return None
    for suffix, name in LiveFile.PARTS:
        part = Path(f"{path}{suffix}")
        if part.exists() and not _may(part, os.R_OK | os.W_OK):
            return f"this process's user ({_user()}) cannot write {name} ({_owner(part)})"
    if not _may(folder, os.W_OK | os.X_OK):
        return (f"this process's user ({_user()}) cannot write in the database's folder, "
                f"where SQLite makes its write-ahead log and shared memory ({_owner(folder)})")
    return None


def cannot_create(path: Path) -> str | None:
    """Why this process cannot write ``path`` (a file, or a folder a command makes with
    its parents), or None: the nearest folder that exists must be one it may write in.
    A command checks before its work, not after minutes of it."""
    path = Path(path).absolute()
    if path.exists():
        ok = _may(path, os.W_OK | (os.X_OK if path.is_dir() else 0))
        return None if ok else f"this process's user ({_user()}) may not write {path} ({_owner(path)})"
    folder = path.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    try:
        if _read_only_filesystem(folder):
            return f"{folder} is on a read-only filesystem"
    except OSError:
        pass
    if not _may(folder, os.W_OK | os.X_OK):
        return f"this process's user ({_user()}) may not write in {folder} ({_owner(folder)})"
    return None


def _read_only_filesystem(folder: Path) -> bool:
    return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)


def _may(path: Path, mode: int) -> bool:
    """Whether this process may access ``path`` so, by its effective user and groups."""
    return os.access(path, mode, effective_ids=os.access in os.supports_effective_ids)


def _user() -> str:
    return _name(os.geteuid())


def _owner(path: Path) -> str:
    status = path.stat()
    return f"owned by {_name(status.st_uid)}, mode {status.st_mode & 0o777:o}"


def _name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def check_sqlite_file(path: Path, *, thorough: bool = False) -> None:
    """Raise ``FileNotFoundError`` or ``ValueError`` (naming the file, in one line) unless
    ``path`` opens as a SQLite database; with ``thorough``, unless every page of it passes
    SQLite's ``PRAGMA quick_check`` too. A database this process cannot write is read
    through :func:`_reading_connection`, and ``PermissionError`` says why when SQLite
    cannot read it so.

    The file is read through SQLite only, never with ``open()``: a process's POSIX locks on
    a file belong to the process, and closing *any* descriptor of the file releases all of
    them. A check that opened the live database beside the server's own connections made
    the next process to close it believe it was the last one, which deleted the
    write-ahead log under the server (every answer after that was lost on a crash).
    SQLite keeps one descriptor per file and process, so its connections never do that.
    """
    if not path.is_file():
        raise FileNotFoundError(f"no database at {str(path)!r}: check --db / DATABASE_URL")
    size = path.stat().st_size
    if 0 < size < SQLITE_HEADER_SIZE:
        raise ValueError(f"{path}: a truncated SQLite database ({size} bytes, less than its "
                         f"{SQLITE_HEADER_SIZE}-byte header)")
    cannot_write = unwritable(path)
    try:
        with closing(_reading_connection(path) if cannot_write else
                     sqlite3.connect(file_uri(path, "rw"), uri=True, timeout=30)) as connection:
            connection.execute("PRAGMA schema_version").fetchone()
            if thorough:
                problems = [row[0] for row in connection.execute("PRAGMA quick_check(5)")]
                if problems != ["ok"]:
                    said = " ".join("; ".join(problems).split())  # one line
                    raise ValueError(f"{path}: a damaged SQLite database (quick_check: "
                                     f"{said[:300]})")
    except sqlite3.DatabaseError as error:
        if cannot_write and error.sqlite_errorcode in (sqlite3.SQLITE_READONLY,
                                                       sqlite3.SQLITE_CANTOPEN):
            raise PermissionError(
                f"{path}: {cannot_write}, and SQLite reads what its write-ahead log holds "
                "only through a shared memory file (-shm) this process cannot make or "
                "write: copy the database with its -wal file to a folder this user can "
                "write, or run the command as the user who owns these files") from None
        raise ValueError(f"{path}: {_sqlite_refusal(error)}") from None


SQLITE_HEADER_SIZE = 100


def _sqlite_refusal(error: sqlite3.DatabaseError) -> str:
    message = str(error)
    if "not a database" in message:
        return f"not a SQLite database (SQLite says: {message})"
    if "malformed" in message:
        return f"a damaged SQLite database, truncated or overwritten (SQLite says: {message})"
    return f"cannot be read as a SQLite database (SQLite says: {message})"


def write_back_copy(path: Path) -> Path:
    """Where :meth:`LiveFile.keep` copies the database at ``path`` before moving it into
    place: a copy still there was being written when its server was stopped."""
    return path.with_name(f".{path.name}.restoring")


def check_no_copy_left(path: Path) -> str | None:
    """Raise ``FileNotFoundError``, in one line saying what to do, when the database at
    ``path`` is missing and a copy of it is left beside it by a server stopped (killed)
    as it wrote the database back: starting there would make a new empty database, and
    the study would seem gone, its rows in a hidden file. With the database there, what
    to tell the operator about the copy left (or None when there is none)."""
    copy = write_back_copy(path)
    if not copy.exists():
        return None
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing, and {copy} is the copy of it a server was writing back "
            "when it was stopped (it had been deleted while that server ran): if `sqlite3 "
            f"{copy} 'PRAGMA quick_check'` says ok, move it to {path}; delete it to start "
            "with an empty database")
    return (f"{copy} is left from a server stopped as it wrote the database back; the "
            f"database used is {path}: compare them, and delete the copy when it is no "
            "longer needed")


class FileTrouble(OSError):
    """The server's SQLite file is not the one it opened, and could not be put back yet
    (another file took its place, or writing the copy failed): the storage is away."""


class LiveFile:
    """A server's SQLite file, kept at its path for as long as the server holds it open.

    SQLite writes through the files it opened, not through their names. Deleted under a
    running server (``rm -rf demo-data`` in another terminal, a cleanup script, ``git
    clean -xdf`` in the folder of ``make demo``), the database lives on in a file no
    other process can open, the server goes on acknowledging every input into it, and the
    system frees it when the server stops: the whole study is gone, and nothing said so.
    A deleted write-ahead log (``-wal``) or shared memory (``-shm``) is as bad: another
    process opening the database sees it as it was at the last checkpoint, and a crash
    loses everything since.

    The store opens every connection through :meth:`connect`, and its writer calls
    :meth:`keep` before each batch and about once a second between them. When any of the
    three files is not the one opened, :meth:`keep` writes the whole database, as the
    server's own connections still see it, back to its path (SQLite's backup, into a new
    file moved into place) and the store reopens its connections there. While it copies,
    two connections opened at start hold the old file: one is the copy's source, the
    other holds its write lock from then on, so that a page's connection still on the
    old file waits and then fails (503) rather than writing where nobody will read.

    A file that took the database's place is never overwritten: :meth:`keep` raises
    :class:`FileTrouble` (the storage is away: the games stand still, nothing is lost,
    the rows wait in memory) until it is moved away, and then writes the database back.
    """

    PARTS = (("", "the database file"), ("-wal", "its write-ahead log (-wal)"),
             ("-shm", "its shared memory (-shm)"))

    def __init__(self, path: Path) -> None:
        self.path = path.resolve()
        self._lock = threading.Lock()
        self._held: list[sqlite3.Connection] = []
        """The two connections of each earlier file (the last holding its write lock)."""
        self.identity: tuple[tuple[int, int] | None, ...] | None = None
        """Device and inode of the database file, its log and its shared memory as the
        server opened them (None for one that did not exist); None until :meth:`open`."""
        self._source: sqlite3.Connection | None = None
        self._locker: sqlite3.Connection | None = None

    def open(self) -> None:
        """Open the two connections that hold the file and note what it is (once the
        database is in WAL mode, so that its log and shared memory exist)."""
        self._source, self._locker = self._own(), self._own()
        self.identity = self._identities()

    def _own(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self._uri(), uri=True, timeout=2.0,
                                     isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA schema_version").fetchone()  # opens the log now
        return connection

    def _uri(self) -> str:
        """The file's URI: made if missing only before the server has opened it."""
        return file_uri(self.path, "rwc" if self.identity is None else "rw")

    def _identities(self) -> tuple[tuple[int, int] | None, ...]:
        found = []
        for suffix, _ in self.PARTS:
            try:
                status = os.stat(f"{self.path}{suffix}")
            except OSError:  # gone, its folder gone too, or no longer reachable
                found.append(None)
            else:
                found.append((status.st_dev, status.st_ino))
        return tuple(found)

    def trouble(self) -> str | None:
        """What is no longer the file opened ("the database file was deleted"), or None."""
        if self.identity is None:
            return None
        for (_, name), was, now in zip(self.PARTS, self.identity, self._identities(),
                                       strict=True):
            if was is not None and now != was:
                return f"{name} was {'deleted' if now is None else 'replaced'}"
        return None

    def connect(self) -> sqlite3.Connection:
        """A connection to the database file (never a new empty one where it was deleted;
        refused, as an unopenable file, while the file is not the one opened)."""
        self._refuse_if_changed()
        connection = sqlite3.connect(self._uri(), uri=True, timeout=BUSY_TIMEOUT,
                                     check_same_thread=False)
        try:
            self._refuse_if_changed()  # changed while it opened
        except sqlite3.OperationalError:
            connection.close()  # before any read: it has opened no log
            raise
        return connection

    def _refuse_if_changed(self) -> None:
        trouble = self.trouble()
        if trouble is not None:
            raise sqlite3.OperationalError(f"unable to open database file {self.path}: "
                                           f"{trouble} while the server ran")

    def keep(self) -> str | None:
        """Put the database back at its path if it is not there: what had happened, or
        None when nothing had. Raises :class:`FileTrouble` when it cannot (yet)."""
        if self.trouble() is None:
            return None
        with self._lock:
            trouble = self.trouble()
            if trouble is None:
                return None
            try:
                if not self._locker.in_transaction:
                    self._locker.execute("BEGIN IMMEDIATE")  # the old file's writes stop
                main = self._identities()[0]
                if main is not None and main != self.identity[0]:
                    raise FileTrouble(f"{self.path} is another file: {trouble} while the "
                                      "server ran, and it is not overwritten; the server keeps "
                                      "the study's rows in memory until that file is moved "
                                      "away, then writes the database back")
                self._write_back()
            except FileTrouble:
                raise
            except (sqlite3.Error, OSError) as error:  # a full disk, a folder not writable
                raise FileTrouble(f"{trouble} while the server ran, and writing the database "
                                  f"back to {self.path} failed: {error}") from None
            return trouble

    def _write_back(self) -> None:
        copy = write_back_copy(self.path)
        for suffix, _ in self.PARTS:
            Path(f"{copy}{suffix}").unlink(missing_ok=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(copy)) as target:
            self._source.backup(target)
        for suffix, _ in self.PARTS[1:]:  # the old file's: the copy must not read them
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        os.replace(copy, self.path)
        folder = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)  # the move itself survives a power cut
        finally:
            os.close(folder)
        self._held += [self._source, self._locker]
        self.open()

    def close(self) -> None:
        """Close the held connections (after a last :meth:`keep`, by the store)."""
        with self._lock:
            for connection in [*self._held, self._source, self._locker]:
                if connection is not None:
                    connection.close()
            self._held, self._source, self._locker = [], None, None
