"""The dashboard's exports, made in the background while the researcher watches them.

A study's export reads every row of it and zips the files: 38 s for 1.8 million events.
Made inside the request, the researcher saw nothing until the zip was ready (a page
loading, with no word of how long), the zip was held in memory whole, and a study a
few times larger would have outlasted a proxy's read timeout. Now the request starts a
job and answers at once with its page; the page shows how far the job is (the rows
read, then the bytes compressed) and, once it is made, a link to the zip, written to a
file of its own and kept :data:`KEPT_SECONDS` after it is made.

Jobs run one at a time per server process: each holds one of the native threads kept
for pages (``records.offload.PAGE_THREADS``) while it reads, so two at once would leave
none for the researchers' other pages. They are kept in the process's memory: behind
nginx a researcher's requests reach the worker that has their job (routing is sticky),
and a job lost with its worker (a restart) says so on its page.
"""

from __future__ import annotations

import errno
import logging
import secrets
import shutil
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from records.offload import off_loop_for_pages

log = logging.getLogger(__name__)

KEPT_SECONDS = 3600.0
"""How long a made export stays on the server for download (it holds participants'
Prolific ids: it is not left behind longer than needed)."""
COPY_CHUNK = 1 << 20

FOLDER_PREFIX = "gridstudy-export-"
"""A job's folder is ``FOLDER_PREFIX<process id>-<random>`` in the temporary folder."""

WAITING, READING, ZIPPING, DONE, FAILED = "waiting", "reading", "zipping", "done", "failed"


@dataclass
class Job:
    """One export: where it is (``state``), how far (``done`` of ``total``: rows while
    reading, bytes while zipping), and its zip once made."""

    id: str
    study: str | None
    pseudonymized: bool = False
    started: float = field(default_factory=time.time)
    state: str = WAITING
    done: int = 0
    total: int = 0
    error: str | None = None
    folder: Path | None = None
    size: int = 0
    finished: float | None = None
    since: float = field(default_factory=time.time)

    @property
    def name(self) -> str:
        """The zip's file name, as the browser saves it."""
        hidden = "-pseudonymized" if self.pseudonymized else ""
        return f"gridstudy-{self.study or 'all'}-export{hidden}.zip"

    @property
    def path(self) -> Path | None:
        return self.folder / self.name if self.folder and self.state == DONE else None

    @property
    def running(self) -> bool:
        return self.state in (WAITING, READING, ZIPPING)

    def tell(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def begin(self, state: str) -> None:
        self.state, self.done, self.total, self.since = state, 0, 0, time.time()

    @property
    def percent(self) -> int:
        return min(100, 100 * self.done // self.total) if self.total else 0

    def seconds_left(self, now: float | None = None) -> float | None:
        """At the pace of this stage so far, how long it has left (None: too soon to say)."""
        spent = (time.time() if now is None else now) - self.since
        if not self.running or self.done <= 0 or spent < 1.0:
            return None
        return spent * (self.total - self.done) / self.done

    def expires(self) -> float | None:
        return None if self.finished is None else self.finished + KEPT_SECONDS


class Exports:
    """The process's export jobs. ``make(url, out, study, pseudonymize, key, progress)``
    writes an export's files (``study_server.export.export``) and ``key()`` is the
    database's pseudonym key, read through the server's own store; ``start_task`` runs a
    function in the background and ``sleep`` waits in it (Socket.IO's
    ``start_background_task`` and ``sleep``: a greenlet under gevent, a thread
    otherwise)."""

    def __init__(self, url: str, make: Callable[..., Any], key: Callable[[], bytes],
                 start_task: Callable[..., Any], sleep: Callable[[float], Any] = time.sleep) -> None:
        self.url, self.make, self.key = url, make, key
        self.start_task, self.sleep = start_task, sleep
        self.jobs: dict[str, Job] = {}
        self.turn = threading.Lock()  # gevent's under gevent: a waiting job blocks no one
        remove_orphans()

    def start(self, study: str | None, pseudonymized: bool = False) -> Job:
        """A new job exporting ``study`` (None: every study; ``pseudonymized``: its
        participants' ids as keyed hashes, ``gridstudy export --pseudonymize``), started
        in the background; or the one making that export already: an export asked for
        again (a button pressed twice, twenty tabs) makes no second zip on the server's
        disk."""
        self.forget_old()
        making = [job for job in self.of(study, pseudonymized) if job.running]
        if making:
            return making[0]
        job = Job(id=secrets.token_urlsafe(16), study=study, pseudonymized=pseudonymized)
        self.jobs[job.id] = job
        self.start_task(self._run, job)
        return job

    def get(self, job_id: str) -> Job | None:
        self.forget_old()
        return self.jobs.get(job_id)

    def of(self, study: str | None, pseudonymized: bool | None = None) -> list[Job]:
        """The jobs exporting ``study`` that are kept (only those ``pseudonymized`` or
        not, when it is given), the newest first."""
        self.forget_old()
        return sorted((job for job in self.jobs.values() if job.study == study and
                       pseudonymized in (None, job.pseudonymized)),
                      key=lambda job: job.started, reverse=True)

    def forget_old(self, now: float | None = None) -> None:
        """Remove the zips kept past :data:`KEPT_SECONDS`, and their jobs."""
        now = time.time() if now is None else now
        for job in list(self.jobs.values()):
            expires = job.expires()
            if expires is not None and expires <= now:
                self._remove(job)
                del self.jobs[job.id]

    def close(self) -> None:
        """Remove every kept zip (the server stops: nobody can download them any more)."""
        for job in self.jobs.values():
            self._remove(job)

    def _run(self, job: Job) -> None:
        with self.turn:
            off_loop_for_pages(self._export, job)
        if job.state == DONE:  # the study's older zips say less: removed
            for older in self.of(job.study, job.pseudonymized):
                if older is not job and not older.running:
                    self._remove(older)
                    self.jobs.pop(older.id, None)
        self.sleep(KEPT_SECONDS)  # removed then, whether or not anyone looks again
        self.forget_old()

    def _export(self, job: Job) -> None:
        from study_server.export import owner_mark

        job.folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{owner_mark()}-"))
        files = job.folder / "files"
        ending = FAILED
        try:
            job.begin(READING)
            self.make(self.url, files, study=job.study, pseudonymize=job.pseudonymized,
                      key=self.key() if job.pseudonymized else None, progress=job.tell)
            job.begin(ZIPPING)
            self._zip(job, files)
            job.size = (job.folder / job.name).stat().st_size
            ending = DONE
        except Exception as error:  # the page says what went wrong; the log has the rest
            log.exception("the export %s of %s failed", job.id, job.study or "every study")
            job.error = failure(error)
            self._remove(job)
        finally:
            shutil.rmtree(files, ignore_errors=True)
            # its page reads the end's time (and the zip's size) once the state says it
            # ended: the state is told last (the page, read while the files were removed,
            # answered 500)
            job.finished = time.time()
            job.state = ending

    def _zip(self, job: Job, files: Path) -> None:
        paths = sorted(path for path in files.rglob("*") if path.is_file())
        job.tell(0, sum(path.stat().st_size for path in paths))
        done = 0
        with zipfile.ZipFile(job.folder / job.name, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in paths:
                with path.open("rb") as source, archive.open(
                        str(path.relative_to(files)), "w", force_zip64=True) as target:
                    while chunk := source.read(COPY_CHUNK):
                        target.write(chunk)
                        done += len(chunk)
                        job.tell(done, job.total)

    @staticmethod
    def _remove(job: Job) -> None:
        if job.folder is not None:
            shutil.rmtree(job.folder, ignore_errors=True)


def remove_orphans(folder: str | Path | None = None) -> list[Path]:
    """Remove the exports left in the temporary ``folder`` by server processes that are
    gone (killed with ``kill -9``, or the machine stopped, while making or keeping one):
    they hold participants' Prolific ids. The folders removed."""
    from study_server.export import left_by_the_dead

    removed = left_by_the_dead(Path(folder or tempfile.gettempdir()), FOLDER_PREFIX)
    if removed:
        log.warning("removed %d export(s) left by a server process that is gone", len(removed))
    return removed


def failure(error: Exception) -> str:
    """Why an export failed, as its page says it: what to do about a full disk; of the
    database's errors, only that it could not be read (their words may name its address
    and password: they are in the server's log, as for every page, guarantee 1.6)."""
    if isinstance(error, SQLAlchemyError):
        return "the database could not be read"
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return (f"No space left on device in the server's temporary folder "
                f"({tempfile.gettempdir()}): free room there, or start the server with "
                "TMPDIR set to a folder on a larger disk, then try again")
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return "an unexpected error"
