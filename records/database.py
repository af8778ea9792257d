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


SQLITE_HEADER = b"SQLite format 3\x00"


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


def check_sqlite_file(path: Path) -> None:
    """Raise ``FileNotFoundError`` or ``ValueError`` (naming the file) unless ``path`` is
    a SQLite database whose pages are all there."""
    if not path.is_file():
        raise FileNotFoundError(f"no database at {str(path)!r}: check --db / DATABASE_URL")
    with path.open("rb") as handle:
        header = handle.read(100)
    if not header.startswith(SQLITE_HEADER):
        raise ValueError(f"{path}: not a SQLite database (it does not start with the SQLite header)")
    if len(header) < 100:
        raise ValueError(f"{path}: a truncated SQLite database ({len(header)} bytes, less than "
                         "its 100-byte header)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    if pages and path.stat().st_size < pages * page_size:
        raise ValueError(f"{path}: a truncated SQLite database ({path.stat().st_size} bytes, "
                         f"its header says {pages} pages of {page_size})")
