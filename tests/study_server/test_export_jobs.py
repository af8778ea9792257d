"""The dashboard's export as a researcher makes it on a running server: started, its
progress followed on its page, its zip downloaded, and nothing of it left on the
server's disk once it is not needed (it holds participants' Prolific ids)."""

from __future__ import annotations

import io
import re
import time
import zipfile
from pathlib import Path

import httpx

from analysis.load import load
from records.store import Store
from study_server import auth
from tests.conftest import start_serve
from tests.study_server.conftest import own_filesystem
from tests.study_server.people import PASSWORD, csrf, exported, followed_export, researcher
from tests.study_server.test_no_freeze import many_events

EVENTS = 20_000


def serving(db: Path, tmp: Path):
    """``gridstudy serve`` on ``db`` with its temporary files in ``tmp``, a researcher
    signed in: ``(process, dashboard)``."""
    with Store(str(db)) as store:
        auth.create_admin(store.engine, "researcher", PASSWORD)
    process, url = start_serve(db, env={"TMPDIR": str(tmp)})
    return process, researcher(url)


def left_behind(tmp: Path) -> list[Path]:
    """What exports left in ``tmp``: the files in their folders."""
    return sorted(path for folder in tmp.glob("gridstudy-export-*") for path in folder.rglob("*"))


def test_an_export_shows_how_far_it_is_then_its_zip_and_leaves_nothing_when_the_server_stops(
        tmp_path):
    """The export of 20,000 events: the dashboard answers at once with the export's
    page, which says how far it is (rows read, then megabytes compressed) and links the
    zip once made; the study's section of the dashboard links to it too. The zip holds
    every event. Asked for again while it is made, the same export is shown. Only the
    zip stays on the server's disk, and it is removed when the server stops. Before, the request answered only once the zip was made, in memory,
    with no word meanwhile: 38 s at 1.8 million events, and past a proxy's timeout for a
    study some fifteen times larger."""
    many_events(tmp_path / "g.db", EVENTS)
    (tmp_path / "tmp").mkdir()
    process, board = serving(tmp_path / "g.db", tmp_path / "tmp")
    try:
        asked = time.monotonic()
        started = board.post("/dashboard/export", data={"study": "", "csrf_token": csrf(board, "/dashboard/")},
                             follow_redirects=False)
        answered = time.monotonic() - asked
        assert started.status_code == 303, started.text[:300]
        again = board.post("/dashboard/export", data={"study": "", "csrf_token": csrf(board, "/dashboard/")},
                           follow_redirects=False)  # pressed twice: the same export
        assert again.headers["Location"] == started.headers["Location"]
        page = board.get(started.headers["Location"]).text
        assert answered < 1.0 and "Export of every study" in page
        made, page = followed_export(board, started.headers["Location"])
        assert 'data-export-state="done"' in page and "kept on the server for 60 minutes" in page
        total = int(re.search(r'data-total="(\d+)"', page).group(1))
        assert total > 0
        zipfile.ZipFile(io.BytesIO(made)).extractall(tmp_path / "export")
        assert sum(len(e.events) for e in load(tmp_path / "export").records) == EVENTS
        assert [p.name for p in left_behind(tmp_path / "tmp")] == ["gridstudy-all-export.zip"]
        unknown = board.get("/dashboard/export/not-a-job")
        assert unknown.status_code == 404 and "Make it again" in unknown.text
        stranger = httpx.get(f"{board.base_url}{started.headers['Location']}", follow_redirects=False)
        assert stranger.status_code in (302, 303) and "login" in stranger.headers["Location"]
    finally:
        process.terminate()
        process.wait(60)
    assert left_behind(tmp_path / "tmp") == []


def test_an_export_that_fills_the_disk_says_so_and_leaves_nothing(tmp_path):
    """The server's temporary folder on a 1 MB filesystem: the export of 20,000 events
    does not fit. Its page says it failed and why, offers to try again, the dashboard
    goes on answering, and no part of the export is left on the disk."""
    many_events(tmp_path / "g.db", EVENTS)
    with own_filesystem(tmp_path / "tmp", "1m") as tmp:
        process, board = serving(tmp_path / "g.db", tmp)
        try:
            made, page = exported(board)
            assert made is None and 'data-export-state="failed"' in page, page[-2000:]
            assert "No space left on device" in page and "Try again" in page
            assert left_behind(tmp) == [] and list(tmp.iterdir()) == []
            assert board.get("/dashboard/").status_code == 200
        finally:
            process.terminate()
            process.wait(60)


def test_an_export_left_by_a_server_killed_while_making_it_is_removed_at_the_next_start(tmp_path):
    """``kill -9`` of the server while it reads the study for an export: its folder,
    participants' Prolific ids among its files, stays in the temporary folder. The next
    server to start removes it, and says so in its log."""
    import signal

    many_events(tmp_path / "g.db", 4 * EVENTS)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    process, board = serving(tmp_path / "g.db", tmp)
    try:
        started = board.post("/dashboard/export", data={"study": "", "csrf_token": csrf(board, "/dashboard/")},
                             follow_redirects=False)
        deadline = time.monotonic() + 60
        while 'data-export-state="reading"' not in board.get(started.headers["Location"]).text \
                or not left_behind(tmp):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait(60)
        assert left_behind(tmp)
    finally:
        process.kill()
    log = tmp_path / "again.log"
    process, _ = start_serve(tmp_path / "g.db", env={"TMPDIR": str(tmp)}, log=log)
    try:
        assert list(tmp.glob("gridstudy-export-*")) == []
        assert "removed 1 export(s) left by a server process that is gone" in log.read_text()
    finally:
        process.terminate()
        process.wait(60)


def test_an_exports_page_read_as_it_ends_answers_with_its_state(tmp_path):
    """The page of an export read again and again while the export ends, as its own
    refresh does: every answer is the page with the export's state. Before, the job said
    ``done`` while its files were still being removed, before it knew when it had ended:
    a page read then answered 500 (seen once in a full run of the tests; made likely
    here by an export of many files, whose removal takes a while)."""
    from study_server.app import create_app, shutdown

    app = create_app({"DATABASE_URL": str(tmp_path / "g.db"), "TESTING": True})
    exports = app.extensions["gridstudy.exports"]
    real = exports.make

    def many_files(url, out, **options):
        made = real(url, out, **options)
        for index in range(2000):
            (Path(out) / f"extra-{index}.txt").write_text("x")
        return made

    exports.make = many_files
    try:
        auth.create_admin(app.extensions["gridstudy.store"].engine, "researcher", PASSWORD)
        client = app.test_client()
        client.post("/dashboard/login", data={"username": "researcher", "password": PASSWORD,
                                              "csrf_token": csrf(client, "/dashboard/login")})
        started = client.post("/dashboard/export", data={"study": "",
                                                         "csrf_token": csrf(client, "/dashboard/")})
        answers, deadline = [], time.monotonic() + 120
        while not answers or 'data-export-state="done"' not in answers[-1][1]:
            assert time.monotonic() < deadline, answers[-1]
            page = client.get(started.headers["Location"])
            answers.append((page.status_code, page.get_data(as_text=True)))
            time.sleep(0.005)  # the export's own thread needs the interpreter too
        assert {status for status, _ in answers} == {200}, [a for a in answers if a[0] != 200][:1]
        assert "Made in" in answers[-1][1]
    finally:
        shutdown(app)
