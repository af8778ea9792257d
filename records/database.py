"""Where the record lives: database URLs and engines (SQLAlchemy only, no tables).

The store writes through these engines, the export and the analysis read through them;
a user may type a URL or the path of a SQLite file wherever a database is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy import event as sa_event
from sqlalchemy.engine import Engine, make_url


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


def open_existing(url: str) -> Engine:
    """An engine on a database that must already exist (never create an empty one)."""
    url = database_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and not Path(parsed.database or "").is_file():
        raise FileNotFoundError(f"no database at {parsed.database!r}: check --db / DATABASE_URL")
    return make_engine(url)
