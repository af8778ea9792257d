"""Where the record lives: database URLs and engines (SQLAlchemy only, no tables).

The store writes through these engines, the export and the analysis read through them;
a user may type a URL or the path of a SQLite file wherever a database is asked for.
"""

from __future__ import annotations

import sqlite3
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
        return create_engine(url, pool_pre_ping=True, json_serializer=storable_json)
    if parsed.database in (None, "", ":memory:"):
        raise ValueError(
            f"{url!r} is an in-memory SQLite database; the store needs a file, "
            "for example sqlite:///gridstudy.db"
        )
    engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT},
                           json_serializer=storable_json)
    sa_event.listen(engine, "connect", _sqlite_pragmas)
    _spare_the_loop(engine)
    return engine


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


def open_existing(url: str) -> Engine:
    """An engine on a database that must already exist (never create an empty one); a
    file that is not a whole SQLite database is refused with a one-line reason."""
    path = sqlite_path(url)
    if path is not None:
        check_sqlite_file(path)
    return make_engine(url)


def check_sqlite_file(path: Path, *, thorough: bool = False) -> None:
    """Raise ``FileNotFoundError`` or ``ValueError`` (naming the file, in one line) unless
    ``path`` opens as a SQLite database; with ``thorough``, unless every page of it passes
    SQLite's ``PRAGMA quick_check`` too.

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
    try:
        with closing(sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=rw", uri=True,
                                     timeout=30)) as connection:
            connection.execute("PRAGMA schema_version").fetchone()
            if thorough:
                problems = [row[0] for row in connection.execute("PRAGMA quick_check(5)")]
                if problems != ["ok"]:
                    said = " ".join("; ".join(problems).split())  # one line
                    raise ValueError(f"{path}: a damaged SQLite database (quick_check: "
                                     f"{said[:300]})")
    except sqlite3.DatabaseError as error:
        raise ValueError(f"{path}: {_sqlite_refusal(error)}") from None


SQLITE_HEADER_SIZE = 100


def _sqlite_refusal(error: sqlite3.DatabaseError) -> str:
    message = str(error)
    if "not a database" in message:
        return f"not a SQLite database (SQLite says: {message})"
    if "malformed" in message:
        return f"a damaged SQLite database, truncated or overwritten (SQLite says: {message})"
    return f"cannot be read as a SQLite database (SQLite says: {message})"
