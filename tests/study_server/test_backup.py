"""``gridstudy backup`` (guarantee 1.17): a copy of a live SQLite study taken while people
play holds every input acknowledged before it began, whole, and stops nobody; what it
is not given to overwrite, it does not, and a copy that cannot be finished leaves the
earlier backup as it was."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest

from records.store import Store
from tests.study_server.conftest import own_filesystem
from tests.study_server.people import accounted, keep_pressing, sqlite_reader
from tests.study_server.test_faults import FLUSH_WINDOW, detached_logs, served  # noqa: F401

GRIDSTUDY = str(Path(sys.executable).parent / "gridstudy")


def backup(db: Path | str, out: Path | str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([GRIDSTUDY, "backup", "--db", str(db), "--out", str(out)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_a_backup_taken_while_people_play_holds_every_acknowledged_input_and_stops_nobody(
        served, tmp_path):  # noqa: F811
    """Three people pressing about four keys a second; a backup in the middle. The copy
    passes SQLite's check and holds every input acknowledged before it began, with no
    hole; the server writes on into its database, which keeps its write-ahead log."""
    games = [served.playing(f"b{i}") for i in range(3)]
    stop = threading.Event()
    presser = keep_pressing([player for player, _ in games], rate=4.0, stop=stop)
    time.sleep(2)
    began = time.time()
    made = backup(served.db, tmp_path / "backup.db")
    time.sleep(1)
    stop.set()
    presser.join()
    assert made.returncode == 0, made.stderr
    assert "SQLite checked the copy" in made.stdout and "1 study, 3 participants, " in made.stdout
    copy = sqlite_reader(tmp_path / "backup.db")
    assert copy("PRAGMA quick_check") == [("ok",)]
    for player, episode_id in games:
        counted = accounted(copy, episode_id)
        assert counted["stored"] >= len(player.queued(before=began - FLUSH_WINDOW)) > 0
        assert counted["holes"] == [], counted
        player.settle()
    assert detached_logs(served.process.pid) == []
    served.stop()
    for player, episode_id in games:
        assert accounted(served.sql, episode_id)["stored"] == len(player.queued())
        player.close()
    listed = subprocess.run([GRIDSTUDY, "study", "list", "--db", str(tmp_path / "backup.db")],
                            capture_output=True, text=True, timeout=60)
    assert "faults" in listed.stdout and "3 participants" in listed.stdout, listed.stdout


@pytest.mark.parametrize("out, says", [
    ("g.db", "g.db is the database itself, or one of its files"),
    ("g.db-wal", "g.db-wal is the database itself, or one of its files"),
    ("notes.txt", "notes.txt exists and is not a backup"),
    ("main.db", "main.db exists and is not a backup (another study's database"),
    ("served.db", "served.db is open (its write-ahead log is beside it"),
    ("missing/b.db", "no folder 'missing' for the backup"),
    ("/dev/null", "/dev/null is not a file (a device, a pipe): it is not replaced"),
])
def test_what_a_backup_is_not_given_to_overwrite_it_does_not(tmp_path, out, says):
    """A careless --out: the database itself, its log, a file of another kind, another
    study's database (closed, or open in a server), a folder that is not there. Each is
    one line, and no file changes."""
    Store(str(tmp_path / "g.db")).close()
    Store(str(tmp_path / "main.db")).close()
    (tmp_path / "notes.txt").write_text("the lab's notes\n")
    with Store(str(tmp_path / "served.db")) as held:  # its server runs
        held.setting("secret_key", lambda: "kept")
        before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
        refused = backup("g.db", out, cwd=tmp_path)
        assert refused.returncode == 1
        [line] = refused.stderr.splitlines()
        assert line.startswith(f"Error: {says}"), refused.stderr
        assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


def test_a_backup_replaces_the_backup_of_that_name_and_leaves_nothing_beside_it(tmp_path):
    """Nightly backups to one name: each replaces the last, whole, and no write-ahead log
    of the old file stays beside the new one (a copy moved in beside a log reads it)."""
    db = tmp_path / "g.db"
    with Store(str(db)) as store:
        store.setting("secret_key", lambda: "first")
    assert backup(db, tmp_path / "b.db").returncode == 0
    with closing(sqlite3.connect(db)) as grown:
        grown.execute("UPDATE setting SET value = 'second' WHERE name = 'secret_key'")
        grown.commit()
    again = backup(db, tmp_path / "b.db")
    assert again.returncode == 0, again.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["b.db", "g.db"]
    assert sqlite_reader(tmp_path / "b.db")("SELECT value FROM setting") == [("second",)]


def test_a_postgresql_database_is_pointed_to_its_own_tools(tmp_path):
    refused = backup("postgresql://study:secret@127.0.0.1:1/g", tmp_path / "b.db")
    assert refused.returncode == 1 and "pg_dump" in refused.stderr
    assert "secret" not in refused.stderr + refused.stdout and list(tmp_path.iterdir()) == []


def test_a_backup_that_fills_the_disk_leaves_the_earlier_one_whole(tmp_path):
    """The backups' disk fills as the copy is written: the earlier backup of that name is
    as it was, and nothing of the new copy is left."""
    db = tmp_path / "g.db"
    Store(str(db)).close()
    with own_filesystem(tmp_path / "backups", size="1m") as folder:
        assert backup(db, folder / "b.db").returncode == 0
        earlier = (folder / "b.db").read_bytes()
        with closing(sqlite3.connect(db)) as grown:
            grown.execute("CREATE TABLE pad (x)")
            grown.execute("INSERT INTO pad VALUES (zeroblob(3000000))")
            grown.commit()
        stopped = backup(db, folder / "b.db")
        assert stopped.returncode == 1
        assert "Error: the backup stopped: database or disk is full" in stopped.stderr, stopped.stderr
        assert (folder / "b.db").read_bytes() == earlier
        assert sorted(path.name for path in folder.iterdir()) == ["b.db"]


def test_a_backup_killed_mid_copy_leaves_the_earlier_one_whole_and_the_next_clears_its_part(
        tmp_path):
    """``kill -9`` (the OOM killer, a reboot) in the middle of a 400 MB copy: the earlier
    backup is as it was, and the part the killed copy left beside it, which nothing else
    would remove, is removed by the next backup to that name; a part whose backup is
    still copying is left to it."""
    db = tmp_path / "g.db"
    Store(str(db)).close()
    with closing(sqlite3.connect(db)) as grown:
        grown.execute("CREATE TABLE pad (x)")
        grown.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                      "WHERE i < 100000) INSERT INTO pad SELECT zeroblob(4000) FROM n")
        grown.commit()
    assert backup(db, tmp_path / "b.db").returncode == 0
    earlier = hashlib.sha256((tmp_path / "b.db").read_bytes()).digest()
    copying = subprocess.Popen([GRIDSTUDY, "backup", "--db", str(db), "--out",
                                str(tmp_path / "b.db")], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    part = tmp_path / f".b.db.partial-{copying.pid}"
    end = time.monotonic() + 60
    while not part.exists() and copying.poll() is None and time.monotonic() < end:
        time.sleep(0.005)
    copying.send_signal(signal.SIGKILL)
    copying.wait()
    assert part.exists(), "the copy ended before it could be killed"
    assert hashlib.sha256((tmp_path / "b.db").read_bytes()).digest() == earlier
    still_copying = tmp_path / f".b.db.partial-{os.getpid()}"  # this process runs
    still_copying.write_bytes(b"a copy in progress")
    again = backup(db, tmp_path / "b.db")
    assert again.returncode == 0, again.stderr
    assert "removed what 1 backup killed mid-copy left beside it (" in again.stdout, again.stdout
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        ["b.db", "g.db", still_copying.name])
    assert sqlite_reader(tmp_path / "b.db")("SELECT count(*) FROM pad") == [(100000,)]
