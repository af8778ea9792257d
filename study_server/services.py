"""The servers a large study runs beside gridstudy, started from a folder on loopback ports.

``gridstudy serve --workers N`` puts nginx in front of its workers, and with
``--data-dir`` also keeps its own PostgreSQL and Redis there; the tests and benchmarks
start throwaway ones the same way. Each is the Debian package's program run directly
(``apt-get install postgresql redis-server nginx-light``; ``make setup`` installs them),
in the foreground of a child process, so that stopping it is stopping that process.

PostgreSQL refuses to run as root: as root, its folder is given to the ``postgres`` user
the package creates, and it runs as that user.
"""

from __future__ import annotations

import ctypes
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

PACKAGES = {"postgres": "postgresql", "initdb": "postgresql", "redis-server": "redis-server",
            "nginx": "nginx-light"}
"""The Debian package of each program."""


def die_with_parent() -> None:
    """In the child, before it runs: SIGTERM when the process that started it ends, even
    by SIGKILL, so that a killed supervisor or test run leaves no server behind (Linux's
    PR_SET_PDEATHSIG; elsewhere nothing)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


PR_SET_PDEATHSIG = 1


class ServiceError(RuntimeError):
    """A program is missing or did not start (the message says which, and what to do)."""


def find_program(name: str) -> str:
    """The path of ``name``: on the PATH, in /usr/sbin, or PostgreSQL's versioned folder."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if found is None:
        candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                            key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
        found = candidates[-1] if candidates else None
    if found is None:
        raise ServiceError(f"{name} is not installed: apt-get install {PACKAGES.get(name, name)} "
                           "(make setup installs it)")
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, what: str, log: Path,
                  timeout: float = 30.0) -> None:
    """Wait until something accepts connections on ``port``; a clear error if the process
    ends first or the time runs out (with the end of its log)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    process.kill()
    tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
    raise ServiceError(f"{what} did not start on port {port}; its log ({log}) ends:\n{tail}")


@dataclass
class Service:
    """A running server: its process, its port, the URL clients use and its log."""

    name: str
    process: subprocess.Popen
    port: int
    url: str
    log: Path

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM (each of these stops cleanly on it), then SIGKILL after ``timeout``."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _as_postgres_user() -> dict:
    """Popen options that run PostgreSQL as the ``postgres`` user when we are root."""
    if os.geteuid() != 0:
        return {}
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        raise ServiceError("PostgreSQL cannot run as root and there is no postgres user: "
                           "apt-get install postgresql creates it") from None
    return {"user": user.pw_uid, "group": user.pw_gid}


def start_postgres(folder: Path, port: int | None = None, database: str = "gridstudy",
                   durable: bool = True) -> Service:
    """PostgreSQL with its data in ``folder`` (made by ``initdb`` at the first start),
    listening on 127.0.0.1 only, with a database ``database`` for the user ``gridstudy``.
    ``durable=False`` (tests, benchmarks) skips the disk syncs a real study needs."""
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    user = _as_postgres_user()
    if user:
        closed = [str(p) for p in folder.parents if not os.stat(p).st_mode & 0o001]
        if closed:
            raise ServiceError(f"PostgreSQL runs as the postgres user, who cannot enter "
                               f"{closed[0]}: put its folder elsewhere, or chmod o+x {closed[0]}")
        os.chown(folder, user["user"], user["group"])
    log = folder.parent / f"{folder.name}.log"
    if not (folder / "PG_VERSION").exists():
        done = subprocess.run([find_program("initdb"), "-D", str(folder), "-U", "gridstudy",
                               "-A", "trust", "-E", "UTF8", "--no-instructions",
                               *([] if durable else ["--no-sync"])],
                              capture_output=True, text=True, **user)
        if done.returncode:
            raise ServiceError(f"initdb failed in {folder}: {done.stderr.strip()[-1000:]}")
    remembered = folder.parent / f"{folder.name}.port"  # a kept database keeps its URL
    if port is None and remembered.exists():
        port = int(remembered.read_text())
    port = port or free_port()
    remembered.write_text(str(port))
    options = ["-c", "listen_addresses=127.0.0.1", "-p", str(port), "-k", str(folder),
               "-c", "max_connections=200"]
    if not durable:
        options += ["-c", "fsync=off", "-c", "synchronous_commit=off",
                    "-c", "full_page_writes=off"]
    with log.open("ab") as out:
        process = subprocess.Popen([find_program("postgres"), "-D", str(folder), *options],
                                   stdout=out, stderr=subprocess.STDOUT,
                                   preexec_fn=die_with_parent, **user)
    wait_for_port(port, process, "PostgreSQL", log)
    return Service("postgres", process, port, create_database(port, database), log)


def create_database(port: int, database: str) -> str:
    """Make ``database`` on the PostgreSQL at ``port`` unless it exists; its URL."""
    import psycopg

    deadline = time.monotonic() + 30
    while True:
        try:
            with psycopg.connect(host="127.0.0.1", port=port, user="gridstudy",
                                 dbname="postgres", autocommit=True) as connection:
                exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                            (database,)).fetchone()
                if not exists:
                    connection.execute(f'CREATE DATABASE "{database}"')
                return f"postgresql+psycopg://gridstudy@127.0.0.1:{port}/{database}"
        except psycopg.OperationalError:  # still starting up
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def start_redis(folder: Path, port: int | None = None) -> Service:
    """Redis on 127.0.0.1, keeping nothing on disk: it carries Socket.IO's messages
    between workers, which are worth nothing after a restart."""
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    log = folder / "redis.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [find_program("redis-server"), "--port", str(port), "--bind", "127.0.0.1",
             "--dir", str(folder), "--save", "", "--appendonly", "no", "--daemonize", "no"],
            stdout=out, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
    wait_for_port(port, process, "Redis", log)
    return Service("redis", process, port, f"redis://127.0.0.1:{port}/0", log)


def start_nginx(folder: Path, config: str, port: int) -> Service:
    """nginx running ``config`` (written to ``folder/nginx.conf``; its paths are under
    ``folder``), listening on ``port``."""
    folder = Path(folder).resolve()
    (folder / "temp").mkdir(parents=True, exist_ok=True)
    (folder / "nginx.conf").write_text(config)
    log = folder / "error.log"
    nginx = find_program("nginx")
    checked = subprocess.run([nginx, "-t", "-q", "-p", str(folder), "-c", "nginx.conf"],
                             capture_output=True, text=True)
    if checked.returncode:
        raise ServiceError(f"nginx refused its configuration ({folder / 'nginx.conf'}): "
                           f"{checked.stderr.strip()[-1000:]}")
    process = subprocess.Popen([nginx, "-p", str(folder), "-c", "nginx.conf",
                                "-g", "daemon off;"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)
    wait_for_port(port, process, "nginx", log)
    return Service("nginx", process, port, f"http://127.0.0.1:{port}", log)
