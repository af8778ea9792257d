"""The durability promises of ``docs/guarantees.md``, each attacked with the fault that
would break it, on ``gridstudy serve`` itself (gevent, one process, a SQLite file):

* a dashboard export, then another process opening the database, then ``kill -9``;
* the disk filling up under players, then room again;
* ``kill -9`` while people press about four keys a second, then a restart;
* a damaged database file at start;
* another process holding the database's write lock while pages need it.

Each case reads the database afterwards against the clients' own ledger of what the
server acknowledged. (PostgreSQL stopped under several workers is in
``test_cluster.py``, beside its PostgreSQL; SIGTERM in ``test_serve_signals.py``.)
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.hostile import largest_gap
from records.store import PAGE_WAIT, Store
from study_server import auth
from study_server.services import free_port
from study_server.session import STOPPED_BEFORE_TICK
from tasks.worldtest.tick import STOOD_STILL
from tests.conftest import start_serve, wait_until
from tests.study_server.conftest import own_filesystem
from tests.study_server.people import (
    PASSWORD,
    Person,
    Player,
    accounted,
    csrf,
    episode_of,
    exported,
    keep_pressing,
    researcher,
    sqlite_reader,
)

STUDY = """
id: faults
title: Faults
problems: [ant_trail/planning, crate_push/planning, key_and_door/planning]
tutorials: {planning: sun_and_ice/planning}
attempts_per_problem: 20
problems_per_participant: 1
completion_code: DONE123
screenout_code: OUT000
stages: [consent, screening, tasks]
consent: {version: "1", text: "You are invited to play."}
"""
PROBLEMS = ["ant_trail/planning", "crate_push/planning", "key_and_door/planning"]
FLUSH_WINDOW = 0.5
"""What a kill -9 may lose: the writer's flush interval (0.25 s) and one write."""


class Served:
    """``gridstudy serve`` on a SQLite file holding the study; ``sql`` reads the file
    from this (another) process, as any tool would."""

    def __init__(self, db: Path, log: Path, env: dict[str, str] | None = None) -> None:
        self.db, self.log, self.env = db, log, env
        if not db.exists():
            study = db.parent / "study.yaml"
            study.write_text(STUDY)
            subprocess.run([sys.executable, "-m", "study_server.cli", "study", "create",
                            str(study), "--db", str(db)], check=True, capture_output=True)
            with Store(str(db)) as store:
                auth.create_admin(store.engine, "researcher", PASSWORD)
        self.start()

    def start(self) -> None:
        self.process, self.url = start_serve(self.db, "gevent", log=self.log, env=self.env)

    def sql(self, query: str, **params: Any) -> list[Any]:
        return sqlite_reader(self.db)(query, **params)

    def person(self, pid: str) -> Person:
        return Person(self.url, "faults", pid, PROBLEMS, self.sql)

    def playing(self, pid: str) -> tuple[Player, int]:
        """A participant through consent and the colour screen, playing their first
        game; the player and the attempt, once the first state came."""
        person = self.person(pid)
        person.consent()
        person.post(person.screening_answers())
        token = person.task_token()
        player = Player(self.url, token, person.cookie())
        deadline = time.monotonic() + 15
        while not player.states and time.monotonic() < deadline:
            time.sleep(0.05)
        assert player.states, f"{pid}'s game never started: {self.log.read_text()[-2000:]}"
        return player, episode_of(self.sql, token)

    def kill(self) -> float:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        return time.time()

    def stop(self) -> None:
        """SIGTERM (every acknowledged row written first); a server still waiting for its
        storage a minute later is killed, so that a failed test leaves nothing running."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
                raise


@pytest.fixture
def served(tmp_path: Path) -> Any:
    found = Served(tmp_path / "g.db", tmp_path / "serve.log")
    yield found
    found.stop()


def detached_logs(pid: int) -> list[str]:
    """Files the process holds open that were deleted under it (a detached log)."""
    found = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.endswith("(deleted)"):
            found.append(target)
    return found


def test_an_export_then_another_process_then_kill_9_keeps_every_answer(served):
    """The reproduction of the export that detached the write-ahead log: p2 and p3 must
    survive the crash, and other processes must see them before it."""
    served.person("p1").consent()
    client = researcher(served.url)
    made, _ = exported(client, "faults")
    assert made[:2] == b"PK"
    subprocess.run([sys.executable, "-c", f"import sqlite3; sqlite3.connect({str(served.db)!r})"
                    ".execute('select 1').fetchall()"], check=True)
    subprocess.run([str(Path(sys.executable).parent / "gridstudy"), "token", "list", "--db",
                    str(served.db)], check=True, capture_output=True)
    assert detached_logs(served.process.pid) == []
    served.person("p2").consent()
    served.person("p3").consent()
    seen = {row[0] for row in served.sql("SELECT external_id FROM participant")}
    assert seen == {"p1", "p2", "p3"}  # other processes read what the server wrote
    served.kill()
    assert {row[0] for row in served.sql("SELECT external_id FROM participant")} == seen


def test_kill_9_loses_no_input_acknowledged_before_the_flush_window(served):
    """People pressing about four keys a second; ``kill -9``; a restart. Every input the
    server answered ``queued`` before the last flush window is in the record (applied,
    or dropped with the reason), no attempt has a hole, nothing stays ``queued``."""
    games = [served.playing(f"k{i}") for i in range(4)]
    stop = threading.Event()
    presser = keep_pressing([player for player, _ in games], rate=4.0, stop=stop)
    time.sleep(4)
    killed = served.kill()
    stop.set()
    presser.join()
    for player, _ in games:
        player.close()
    served.start()  # the restart stores the inputs the crash left waiting as dropped
    try:
        for player, episode_id in games:
            counted = accounted(served.sql, episode_id)
            before = len(player.queued(before=killed - FLUSH_WINDOW))
            assert counted["stored"] >= before, (counted, before)
            assert counted["stored"] <= len(player.queued())
            assert counted["queued"] == 0 and counted["holes"] == [], counted
        reasons = {row[0] for row in served.sql(
            "SELECT reason FROM rawinput WHERE status = 'dropped' AND input_seq IS NOT NULL")}
        assert reasons <= {STOPPED_BEFORE_TICK}
    finally:
        served.stop()


def test_a_damaged_database_is_refused_at_start_in_one_line(tmp_path):
    db = tmp_path / "g.db"
    Served(db, tmp_path / "first.log").stop()
    with closing(sqlite3.connect(db)) as raw:  # a few hundred pages of rows
        raw.execute("create table filler (x)")
        raw.executemany("insert into filler values (?)", [("x" * 2000,)] * 400)
        raw.commit()
    data = bytearray(db.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 8192] = os.urandom(8192)
    db.write_bytes(bytes(data))
    gridstudy = str(Path(sys.executable).parent / "gridstudy")
    refused = subprocess.run([gridstudy, "serve", "--db", str(db), "--port", str(free_port())],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1, refused.stderr
    [line] = [line for line in refused.stderr.splitlines() if line.strip()]
    assert line.startswith("Error: ") and "g.db" in line and "damaged SQLite database" in line
    assert "--skip-check" in line


@pytest.mark.parametrize("command", [
    ["serve", "--port", "{port}"], ["study", "create", "{study}"],
    ["admin", "create", "ada", "--password", "correct horse"], ["token", "create", "model"],
    ["agent", "run", "--agent", "random", "--problems", "lamp_grid/planning"],
])
def test_a_database_in_a_missing_folder_is_refused_in_one_line(tmp_path, command):
    """A mistyped --db: the folder is named, not SQLite's 'unable to open database file'
    (which every command but serve said)."""
    gridstudy = str(Path(sys.executable).parent / "gridstudy")
    study = Path(__file__).resolve().parents[2] / "examples" / "demo-study.yaml"
    command = [part.format(port=free_port(), study=study) for part in command]
    refused = subprocess.run([gridstudy, *command, "--db", str(tmp_path / "nowhere" / "g.db")],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1, refused.stderr
    [line] = [line for line in (refused.stdout + refused.stderr).splitlines() if line.strip()]
    assert line.startswith("Error: no folder") and "nowhere" in line and "--db" in line
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("url, says", [
    ("mysql://study:secret@127.0.0.1/g", "mysql://study:***@127.0.0.1/g is not a database gridstudy can use"),
    ("https://example.org/g.db", "https://example.org/g.db is not a database gridstudy can use"),
    ("sqlite://", "sqlite:// is an in-memory SQLite database; the store needs a file"),
    ("postgresql://study:secret@127.0.0.1:{port}/g", "the database could not be used: connection failed"),
])
@pytest.mark.parametrize("command", [["serve", "--port", "{port}"], ["export", "--out", "out"],
                                     ["token", "create", "model"]])
def test_a_database_url_no_store_can_use_is_refused_in_one_line(tmp_path, url, says, command):
    """A careless --db: a MySQL URL, a web address, SQLite without a file, a PostgreSQL
    nobody listens to. Each is one line saying what is accepted or what the driver said,
    the password hidden. Before: a traceback (MySQL), "Can't load plugin:
    sqlalchemy.dialects:https", "PosixPath('.') has an empty name", and SQLAlchemy's class
    name and link to its documentation."""
    gridstudy = str(Path(sys.executable).parent / "gridstudy")
    port = free_port()
    command = [part.format(port=port) for part in command]
    refused = subprocess.run([gridstudy, *command, "--db", url.format(port=port)], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1, refused.stderr
    [line] = [line for line in (refused.stdout + refused.stderr).splitlines() if line.strip()]
    assert line.startswith(f"Error: {says}") and "secret" not in line, line
    assert "sqlalche.me" not in line and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["serve", "--port", "{port}"], ["study", "list"],
                                     ["token", "create", "model"], ["agent", "run", "--problems",
                                     "lamp_grid/planning", "--model", "m"],
                                     ["play", "lamp_grid/planning", "--record"],
                                     ["admin", "create", "ada"],
                                     ["export", "--out", "out"], ["report", "--out", "out"]])
def test_a_db_given_empty_is_refused_not_read_as_the_default(tmp_path, command):
    """``--db "$DB"`` with ``DB`` unset: before, a server, a listing, a model run or a
    recorded play ran on a new ``gridstudy.db`` in the current folder, holding none of the
    study, and the report read the current folder as an export."""
    gridstudy = str(Path(sys.executable).parent / "gridstudy")
    command = [part.format(port=free_port()) for part in command]
    environment = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    refused = subprocess.run([gridstudy, *command, "--db", ""], cwd=tmp_path, env=environment,
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert refused.returncode in (1, 2), refused.stderr
    said = refused.stdout + refused.stderr
    assert "--db is empty: give a SQLite file" in said or "no database given: give a SQLite" in said, said
    assert list(tmp_path.iterdir()) == [] and "Password" not in said  # asked for nothing first


@pytest.mark.parametrize("setting, value, says", [
    ("SOCKET_RATE", "fast", "SOCKET_RATE (GRIDSTUDY_SOCKET_RATE) must be a number above 0, not 'fast'"),
    ("ARRIVALS_PER_ADDRESS", "thirty", "must be a whole number above 0, not 'thirty'"),
    ("IDLE_TIMEOUT", "NaN", "IDLE_TIMEOUT (GRIDSTUDY_IDLE_TIMEOUT) must be a number above 0, not nan"),
    ("SOCKET_RATE", "Infinity", "must be a number above 0, not inf"),
    ("UNJOINED_TIMEOUT", "-1", "must be a number above 0, not -1"),
    ("MAX_PREVIEWS", "0", "must be a whole number above 0, not 0"),
    ("SESSION_COOKIE_SECURE", "maybe", "SESSION_COOKIE_SECURE (GRIDSTUDY_SESSION_COOKIE_SECURE) "
     "must be true or false (1, true, yes, on or 0, false, no, off), not 'maybe'"),
    ("PREVIEW", "researcher", "PREVIEW (GRIDSTUDY_PREVIEW) must be one of open, researchers or "
     "off, not 'researcher'"),
])
def test_a_setting_that_cannot_be_read_is_named_in_one_line(tmp_path, setting, value, says):
    """A number said only "could not convert string to float: 'fast'", naming no setting;
    a yes-or-no setting or the previews' took any text: ``maybe`` was true, and
    ``researcher`` opened the previews to anyone."""
    gridstudy = str(Path(sys.executable).parent / "gridstudy")
    refused = subprocess.run([gridstudy, "serve", "--db", str(tmp_path / "g.db"), "--port", str(free_port())],
                             capture_output=True, text=True, timeout=60,
                             env={**os.environ, f"GRIDSTUDY_{setting}": value})
    assert refused.returncode == 1, refused.stderr
    [line] = [line for line in (refused.stdout + refused.stderr).splitlines() if line.strip()]
    assert line.startswith("Error: the setting ") and says in line


@pytest.mark.parametrize(("limits", "taken", "warned"), [
    ("1024:8192", 8192, False), ("1024:1024", 1024, True)], ids=["raised", "said"])
def test_the_server_takes_every_open_file_the_system_allows_or_says_why_not(tmp_path, limits,
                                                                            taken, warned):
    """Each connection is an open file. A login shell or a systemd service gives 1,024
    unasked (the soft limit); the server takes the hard limit at start, and says so when
    even that is few (before, it served at 1,024 and stopped accepting anyone after about
    a thousand connections, ``test_no_freeze.py``)."""
    gridstudy = str(Path(sys.executable).parent / "gridstudy")
    log = tmp_path / "serve.log"
    with log.open("w") as stderr:
        server = subprocess.Popen(["prlimit", f"--nofile={limits}", gridstudy, "serve", "--db",
                                   str(tmp_path / "g.db"), "--port", str(free_port())],
                                  stdout=stderr, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "serving on" in log.read_text(), 60, "the server announced")
        limit = re.search(r"Max open files\s+(\d+)", Path(f"/proc/{server.pid}/limits").read_text())
        assert int(limit.group(1)) == taken
        said = "Warning: this process may hold at most 1024 open files" in log.read_text()
        assert said == warned, log.read_text()
    finally:
        server.terminate()
        server.wait(60)


def test_a_second_server_on_a_taken_address_says_so_in_one_line_and_starts_nothing(tmp_path):
    """The careless operator's second ``serve`` or ``demo`` (the first still running): one
    line, exit 1, before announcing or changing anything; the first server goes on
    answering."""
    db = tmp_path / "g.db"
    first, url = start_serve(db, log=tmp_path / "first.log")
    try:
        port = url.rsplit(":", 1)[1]
        gridstudy = str(Path(sys.executable).parent / "gridstudy")
        for command in (["serve", "--db", str(db)], ["demo", "--data-dir", str(tmp_path / "demo")]):
            second = subprocess.run([gridstudy, *command, "--port", port],
                                    capture_output=True, text=True, timeout=60)
            assert second.returncode == 1
            lines = [line for line in (second.stdout + second.stderr).splitlines() if line.strip()]
            assert len(lines) == 1, lines  # it used to announce "serving on" first
            assert f"cannot listen on 127.0.0.1:{port}" in lines[0]
            assert "another gridstudy serve" in lines[0]
        assert not (tmp_path / "demo").exists()  # the demo replaced its study first
        assert httpx.get(f"{url}/", timeout=10).status_code == 200
    finally:
        first.terminate()
        first.wait(60)


@pytest.mark.parametrize("address, line", [
    (["--port", "70000"], "Invalid value for '--port': 70000 is not in the range 0<=x<=65535."),
    (["--port", "0"], "--port 0 would listen on a port chosen at random, which no link could "
                      "name: choose a port (the default is 5000)"),
    (["--host", "nosuchhost.invalid"], "cannot listen on nosuchhost.invalid:5000: "),
], ids=["port-out-of-range", "port-0", "unknown-host"])
def test_an_address_no_participant_could_reach_is_refused_in_one_line(tmp_path, address, line):
    """The careless operator's address: refused before anything starts. Before, --port
    70000 ended in a traceback, --port 0 served on a random port while printing a link to
    port 0, and a host that does not resolve was blamed on another server."""
    gridstudy = str(Path(sys.executable).parent / "gridstudy")
    for command in (["serve", "--db", str(tmp_path / "g.db")],
                    ["demo", "--data-dir", str(tmp_path / "demo")]):
        refused = subprocess.run([gridstudy, *command, *address], capture_output=True,
                                 text=True, timeout=60)
        lines = [x for x in (refused.stdout + refused.stderr).splitlines() if x.strip()]
        assert refused.returncode in (1, 2) and "Traceback" not in refused.stderr, refused.stderr
        assert line in lines[-1], lines
        assert "another gridstudy serve" not in lines[-1]
    assert not (tmp_path / "demo").exists()


def test_a_second_demo_on_the_same_folder_is_refused_and_the_first_login_still_works(tmp_path):
    """The careless operator's second ``make demo`` in another terminal, on another port
    (the first forgotten there): refused in one line, before anything changes. Before,
    it started beside the first with a warning, gave the demo login a new password and
    revoked the first's agent token, so what the first terminal printed no longer
    worked. A demo killed a moment before (``kill -9``) is not taken for a running one."""
    gridstudy = str(Path(sys.executable).parent / "gridstudy")
    data = tmp_path / "demo-data"

    def demo(log: Path) -> subprocess.Popen:
        with log.open("w") as out:
            return subprocess.Popen([gridstudy, "demo", "--data-dir", str(data), "--port",
                                     str(free_port())], stdout=out, stderr=subprocess.STDOUT)

    first = demo(tmp_path / "first.log")
    try:
        wait_until(lambda: "Dashboard login" in (tmp_path / "first.log").read_text(), 60,
                   "the first demo announced")
        time.sleep(1.5)  # its first heartbeat
        said = (tmp_path / "first.log").read_text()
        password = re.search(r"password '([^']+)'", said).group(1)
        token = re.search(r"GRIDSTUDY_TOKEN=(\S+)", said).group(1)
        second = subprocess.run([gridstudy, "demo", "--data-dir", str(data), "--port",
                                 str(free_port())], capture_output=True, text=True, timeout=60)
        assert second.returncode == 1
        lines = [line for line in (second.stdout + second.stderr).splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith(
            f"Error: a demo is already running on {data} (process {first.pid}, "), lines
        from study_server import tokens

        with Store(str(data / "gridstudy.db")) as store:
            assert auth.verify(store.engine, "demo", password)
            assert tokens.holder(store.engine, token) is not None
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        again = demo(tmp_path / "again.log")
        try:
            wait_until(lambda: "Dashboard login" in (tmp_path / "again.log").read_text(), 60,
                       "the demo started again after a kill")
        finally:
            again.terminate()
            again.wait(60)
    finally:
        first.kill()
        first.wait(10)


def test_a_second_server_on_another_port_warns_of_the_first(tmp_path):
    """The careless operator's second ``serve`` of the same database on another port (the
    first forgotten in another terminal, perhaps on older code): it starts, since several
    servers may share a database, but says that another serves it, naming its process;
    the links given out earlier lead there. A server killed a moment before (``kill
    -9``, then started again) is not taken for another."""
    db = tmp_path / "g.db"
    first, _ = start_serve(db, log=tmp_path / "first.log")
    try:
        time.sleep(1.5)  # its first heartbeat
        second, _ = start_serve(db, log=tmp_path / "second.log")
        second.terminate()
        second.wait(60)
        warned = (tmp_path / "second.log").read_text()
        assert (f"Warning: another gridstudy server serves this database too (process "
                f"{first.pid} on ") in warned
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        third, _ = start_serve(db, log=tmp_path / "third.log")
        third.terminate()
        third.wait(60)
        assert "another gridstudy server" not in (tmp_path / "third.log").read_text()
    finally:
        first.kill()
        first.wait(10)


@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    """A 16 MB filesystem of its own (tmpfs), so that the test can fill it up for real."""
    with own_filesystem(tmp_path / "disk") as mount:
        yield mount


def fill(folder: Path) -> Path:
    """Fill the filesystem of ``folder`` to the last byte; the filler's path."""
    filler = folder / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (1 << 20, 65536, 4096, 1):
            try:
                while True:
                    os.write(descriptor, b"\0" * size)
            except OSError:
                continue
    finally:
        os.close(descriptor)
    return filler


def pressing(served: Served, prefix: str, count: int) -> tuple[
        list[tuple[Player, int]], list[Player], threading.Event, threading.Thread]:
    """``count`` participants in their first game, pressing about four keys a second for
    two seconds already: their games, players, the event that stops them and the presser."""
    games = [served.playing(f"{prefix}{i}") for i in range(count)]
    players = [player for player, _ in games]
    stop = threading.Event()
    presser = keep_pressing(players, rate=4.0, stop=stop)
    time.sleep(2)
    return games, players, stop, presser


def stop_and_account(served: Served, games: list[tuple[Player, int]], stop: threading.Event,
                     presser: threading.Thread) -> None:
    """Stop pressing and the server (SIGTERM); every input the server acknowledged is
    stored, no attempt has a hole and none is left queued."""
    stop.set()
    presser.join()
    for player, _ in games:
        player.settle()
        player.close()
    served.stop()
    for player, episode_id in games:
        counted = accounted(served.sql, episode_id)
        assert counted["stored"] == len(player.queued()), (counted, len(player.queued()))
        assert counted["queued"] == 0 and counted["holes"] == [], counted


def test_a_full_disk_pauses_the_games_and_loses_nothing(small_disk, tmp_path):
    """The reproduction: the disk full for fifteen seconds under ten players. The games
    stand still with a plain message, new visitors get 503 with Retry-After (never 500),
    the dashboard says so, and a researcher's page that needs every row written (an
    attempt's replay) answers 503 after at most PAGE_WAIT seconds instead of waiting for
    the disk; when room comes back everything goes on by itself; every
    acknowledged input is stored, no attempt has a hole."""
    served = Served(small_disk / "g.db", tmp_path / "serve.log")
    try:
        games, players, stop, presser = pressing(served, "d", 10)
        watcher = researcher(served.url)
        filler = fill(small_disk)
        full_at = time.time()
        time.sleep(3)
        newcomer = served.person("late").arrive()
        assert newcomer.status_code == 503, newcomer.text[:300]
        assert newcomer.headers["Retry-After"] and "Saving your progress" in newcomer.text
        board = watcher.get("/dashboard/")
        assert board.status_code in (200, 503)
        if board.status_code == 200:
            assert "data-storage-outage" in board.text
        asked = time.monotonic()  # a page that needs every row written: 503, not a hang
        replay = watcher.get(f"/dashboard/episode/{games[0][1]}")
        waited = time.monotonic() - asked
        assert replay.status_code == 503 and replay.headers["Retry-After"], replay.text[:300]
        assert waited < PAGE_WAIT + 3
        time.sleep(max(0.0, 12 - waited))
        paused = [p for p in players if any(s.get("paused") for s in p.states_after(full_at))]
        assert paused == players  # every game stood still, and said so
        stood_at = max(min(at for at, s in p.states if s.get("paused")) for p in players)
        ticks = [p.states[-1][1]["tick"] for p in players]
        time.sleep(1)
        assert [p.states[-1][1]["tick"] for p in players] == ticks  # no tick while full
        filler.unlink()
        room_at = time.time()

        def playing_on(player: Player, tick: int) -> bool:
            after = [s for s in player.states_after(room_at) if not s.get("paused")]
            return bool(after) and after[-1]["tick"] > tick

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not all(map(playing_on, players, ticks)):
            time.sleep(0.2)
        assert all(map(playing_on, players, ticks))  # on by itself, the message gone
        assert served.person("later").arrive().status_code == 200
        time.sleep(2)
        stop_and_account(served, games, stop, presser)
        log = served.log.read_text()
        assert "refuses to write" in log and "Traceback" not in log
        # a key pressed while the games stood still never acts late: it is kept as dropped
        acted_late = served.sql("SELECT count(*) FROM event WHERE source = 'input' AND "
                                "client_time BETWEEN :a AND :b", a=stood_at + 0.2, b=room_at - 0.5)
        stood = served.sql("SELECT count(*) FROM rawinput WHERE status = 'dropped' AND "
                           "reason = :r", r=STOOD_STILL)
        assert acted_late[0][0] == 0 and stood[0][0] > 10, (acted_late, stood)
    finally:
        (small_disk / "filler").unlink(missing_ok=True)
        served.stop()


@pytest.mark.parametrize("deleted", [("g.db", "g.db-wal", "g.db-shm"), ("g.db-wal", "g.db-shm"),
                                     ("g.db-wal",)], ids=["all", "log-and-shm", "log"])
def test_a_database_deleted_under_the_server_is_written_back_and_loses_nothing(served,
                                                                               deleted):
    """The careless operator: the database (or only its write-ahead log) deleted while
    people play. The server used to go on acknowledging into a file nobody else could
    open, and the system freed it at the stop: everything was lost, and nothing said so.
    Now the file is back at its path within about a second, holding what came before
    and after (another process reads it), and a ``kill -9`` after that loses nothing
    acknowledged before the flush window."""
    served.person("before").consent()
    games, _, stop, presser = pressing(served, "r", 3)
    for name in deleted:
        (served.db.parent / name).unlink()
    wait_until(lambda: "the server wrote the database back" in served.log.read_text(), 5,
               "the database written back")  # the file, then the connections on it
    served.person("after").consent()
    time.sleep(2)
    seen = {row[0] for row in served.sql("SELECT external_id FROM participant")}
    assert {"before", "after"} <= seen, seen
    killed = served.kill()
    stop.set()
    presser.join()
    for player, _ in games:
        player.close()
    log = served.log.read_text()
    assert "was deleted while the server ran; the server wrote the database back" in log
    assert "Traceback" not in log
    served.start()  # the restart stores the inputs the kill left waiting as dropped
    try:
        for player, episode_id in games:
            counted = accounted(served.sql, episode_id)
            assert counted["stored"] >= len(player.queued(before=killed - FLUSH_WINDOW))
            assert counted["queued"] == 0 and counted["holes"] == [], counted
    finally:
        served.stop()


def test_a_file_put_in_the_databases_place_is_never_written_and_the_games_wait(served):
    """Another database moved to the live one's path (a backup put back while the server
    runs): the server never writes into it, nor opens it. Until it is moved away the
    store is away (the games stand still and say why, a new visitor gets 503); then the
    server writes its database back and everything goes on, nothing lost."""
    games, players, stop, presser = pressing(served, "m", 3)
    watcher = researcher(served.url)
    other = served.db.parent / "other.db"
    with closing(sqlite3.connect(other)) as made:
        made.execute("CREATE TABLE mine (x)")
        made.commit()
    content = other.read_bytes()
    os.replace(other, served.db)
    replaced_at = time.time()
    wait_until(lambda: all(any(s.get("paused") for s in p.states_after(replaced_at))
                           for p in players), 10, "every game standing still")
    newcomer = served.person("late").arrive()
    assert newcomer.status_code == 503, newcomer.text[:300]
    board = watcher.get("/dashboard/")  # the researcher is told what, not a participant's words
    assert board.status_code == 503 and "database is not available" in board.text
    assert "row(s) in memory" in board.text and str(served.db) not in board.text
    time.sleep(2)
    assert served.db.read_bytes() == content  # never written
    os.replace(served.db, other)
    wait_until(served.db.is_file, 10, "the database written back")
    moved_at = time.time()
    wait_until(lambda: all(any(not s.get("paused") for s in p.states_after(moved_at))
                           for p in players), 20, "every game going on")
    assert served.person("later").arrive().status_code == 200
    assert other.read_bytes() == content
    stop_and_account(served, games, stop, presser)
    log = served.log.read_text()
    assert "is another file" in log and "Traceback" not in log


def test_a_write_lock_held_by_another_process_delays_no_game(tmp_path):
    """Guarantee 1.9 attacked: another process (a researcher's tool) holds the SQLite
    write lock for three seconds while a new participant arrives and a researcher
    excludes an attempt, two pages that write. Another person's game goes on with no
    wait longer than its idle frames' (before, SQLite's wait for the lock held the event
    loop: 3.1 s without a frame); both pages are answered once the lock is free, and
    what they wrote is stored."""
    from tests.study_server.test_no_freeze import Victim

    served = Served(tmp_path / "g.db", tmp_path / "serve.log",
                    env={"GRIDSTUDY_PREVIEW": "open"})
    answers: dict[str, int] = {}
    try:
        board = researcher(served.url)
        _, episode_id = served.playing("first")
        victim = Victim(served.url)
        time.sleep(1)
        token = csrf(board, f"/dashboard/episode/{episode_id}")
        newcomer = served.person("second")
        pages = [
            ("arrival", lambda: newcomer.arrive()),
            ("exclusion", lambda: board.post(f"/dashboard/episode/{episode_id}/inclusion",
                                             data={"included": "0", "reason": "lock test",
                                                   "csrf_token": token})),
        ]
        with closing(sqlite3.connect(served.db, timeout=30, isolation_level=None)) as tool:
            tool.execute("BEGIN IMMEDIATE")
            locked = time.monotonic()
            asking = [threading.Thread(target=lambda name=name, ask=ask: answers.update(
                {name: ask().status_code})) for name, ask in pages]
            for thread in asking:
                thread.start()
            time.sleep(3)
            assert answers == {}  # both pages are waiting for the lock
            tool.execute("COMMIT")
            unlocked = time.monotonic()
        for thread in asking:
            thread.join(30)
        time.sleep(1)
        victim.close()
        assert largest_gap(victim.frames, locked, unlocked + 1) <= 0.5
        assert answers == {"arrival": 200, "exclusion": 200}
        assert served.sql("SELECT included, exclusion_reason FROM episode WHERE id = :id",
                          id=episode_id) == [(0, "by hand: lock test")]
        assert served.sql("SELECT count(*) FROM participant WHERE external_id = 'second'") == [(1,)]
    finally:
        served.stop()
