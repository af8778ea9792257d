"""Bad files get one line naming the file and what is wrong, exit code 1, never a
traceback; a broken file in the user's library is skipped while the rest loads."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from study_server.services import free_port

GRIDSTUDY = str(Path(sys.executable).parent / "gridstudy")
LIBRARY = Path(__file__).resolve().parents[2] / "tasks" / "library"
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def gridstudy(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([GRIDSTUDY, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


def valid_db(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("create table t (x)")
        db.executemany("insert into t values (?)", [("x" * 1000,)] * 200)
    return path


def garbled(folder: Path) -> Path:
    path = folder / "garbled.db"
    path.write_bytes(os.urandom(5000))
    return path


def truncated(folder: Path) -> Path:
    path = valid_db(folder / "whole.db")
    cut = folder / "truncated.db"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return cut


def header_only(folder: Path) -> Path:
    path = folder / "header.db"
    path.write_bytes(b"SQLite format 3\x00garbage")
    return path


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """The one line a command that failed as it should printed: exit status 1, no
    traceback, a line starting ``Error:``."""
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    [line] = [line for line in result.stderr.splitlines() if line.strip()]
    assert line.startswith("Error: ")
    return line


@pytest.mark.parametrize("make, message", [
    (garbled, "not a SQLite database"),
    (truncated, "a damaged SQLite database"),
    (header_only, "a truncated SQLite database"),
], ids=["garbled", "truncated", "header-only"])
@pytest.mark.parametrize("command", [
    ["export", "--db", "{db}", "--out", "out"],
    ["report", "--db", "{db}", "--out", "report"],
    ["token", "list", "--db", "{db}"],
    ["study", "list", "--db", "{db}"],
    ["backup", "--db", "{db}", "--out", "b.db"],
], ids=["export", "report", "token-list", "study-list", "backup"])
def test_a_broken_database_is_one_line_and_exit_1(tmp_path, make, message, command):
    db = make(tmp_path)
    line = one_error_line(gridstudy(*[a.format(db=db) for a in command], cwd=tmp_path))
    assert db.name in line and message in line


@pytest.mark.parametrize("command", [["token", "list"], ["study", "list"], ["token", "revoke", "x"]])
def test_a_listing_of_a_database_that_is_not_there_says_so_and_makes_none(tmp_path, command):
    """A mistyped --db is said so in one line. Before, the listing made an empty
    database of that name and listed nothing in it, as if every study were gone."""
    line = one_error_line(gridstudy(*command, "--db", "gridstuddy.db", cwd=tmp_path))
    assert line == "Error: no database at 'gridstuddy.db': check --db / DATABASE_URL"
    assert list(tmp_path.iterdir()) == []


def test_an_account_made_in_a_database_that_was_not_there_says_where_it_went(tmp_path):
    """The README's launch line gave `--db URL` to study create and serve but not to admin
    create, which wrote the admin into ./gridstudy.db, said it "can now log in", and the
    dashboard refused the login. Each command that adds an account or a token names the
    database it wrote to, and says when it had to make it."""
    env = {"DATABASE_URL": ""}
    study = gridstudy("study", "create", str(EXAMPLES / "demo-study.yaml"), "--db", "lab.db",
                      cwd=tmp_path, env=env)
    assert study.returncode == 0, study.stderr
    made = gridstudy("admin", "create", "ada", "--password", "correct horse", cwd=tmp_path,
                     env=env)
    assert made.returncode == 0, made.stderr
    assert made.stdout == "admin 'ada' can now log in at /dashboard/ of the server on sqlite:///gridstudy.db\n"
    assert made.stderr == ("note: there was no database at gridstudy.db: a new one was made, "
                           "holding no study; give the server and the other commands the "
                           "same --db (or DATABASE_URL)\n")
    again = gridstudy("admin", "create", "ada", "--password", "correct horse", "--db", "lab.db",
                      cwd=tmp_path, env=env)
    assert again.stdout.endswith("of the server on sqlite:///lab.db\n") and again.stderr == ""
    token = gridstudy("token", "create", "model", "--db", "lab.db", cwd=tmp_path, env=env)
    assert token.stderr.startswith("token 'model' created in sqlite:///lab.db;"), token.stderr
    assert "note:" not in token.stderr


ARCHIVE_FILES = ("events.jsonl", "episodes.csv", "frames.jsonl", "participants.jsonl",
                 "agent_runs.jsonl", "raw_inputs.jsonl")


def archive(tmp_path: Path, parts: tuple[str, ...], keyed: bool = False) -> Iterator[tuple[Path, Path]]:
    """The sample study's database on a filesystem of its own mounted read-only (an
    archived study on a read-only share, a container's volume mounted ``:ro``), and the
    same files on a writable disk. ``parts``: the files copied beside the database while
    its store still has it open, from ``-wal`` and ``-shm`` (a copy of a live database);
    with none, the database as its store left it at close. ``keyed``: it has its
    pseudonym key (it was exported pseudonymized before)."""
    from records.store import Store
    from study_server.export import pseudonym_key
    from tests.sample_study import fill
    from tests.study_server.conftest import own_filesystem, remount

    source, writable = tmp_path / "source", tmp_path / "writable"
    source.mkdir()
    writable.mkdir()
    with own_filesystem(tmp_path / "archive") as disk:

        def copy(*suffixes: str) -> None:
            for suffix in suffixes:
                for folder in (disk, writable):
                    shutil.copy(source / f"study.db{suffix}", folder / f"study.db{suffix}")

        with Store(str(source / "study.db")) as store:
            fill(store)
            if keyed:
                pseudonym_key(store)
            if parts:
                assert (source / "study.db-wal").stat().st_size  # the log holds the study
                copy("", *parts)
        if not parts:
            copy("")
        remount(disk, "ro")
        yield disk / "study.db", writable / "study.db"


@pytest.mark.parametrize("parts", [(), ("-wal", "-shm")], ids=["closed", "copied-live"])
def test_a_database_on_a_read_only_filesystem_is_read_whole_and_never_written(tmp_path,
                                                                              parts):
    """The commands that only read a study read it from a read-only filesystem, every row
    as from a writable copy; those that write say so in one line, naming what to do.
    Before, every one of them stopped at "unable to open database file" (SQLite could not
    make the shared memory through which it reads a database in WAL mode), and `serve`
    told the operator to restore the database from a backup. A log that holds changes is
    read through its shared memory: opening the file alone as immutable would have
    silently left out everything the log held, the whole study here."""
    for archived, writable in archive(tmp_path, parts):
        for db, out in ((archived, "from-archive"), (writable, "from-copy")):
            result = gridstudy("export", "--db", str(db), "--out", out, cwd=tmp_path)
            assert result.returncode == 0, result.stderr
        for name in ARCHIVE_FILES:
            assert ((tmp_path / "from-archive" / name).read_bytes()
                    == (tmp_path / "from-copy" / name).read_bytes()), name
        assert (tmp_path / "from-archive" / "events.jsonl").read_text().count("\n") > 10
        report = gridstudy("report", "--db", str(archived), "--out", "report", "--all-studies",
                           cwd=tmp_path)
        assert report.returncode == 0 and (tmp_path / "report" / "report.html").is_file(), \
            report.stderr
        for command in (["serve", "--db", str(archived), "--port", str(free_port())],
                        ["token", "create", "lab", "--db", str(archived)]):
            line = one_error_line(gridstudy(*command, cwd=tmp_path))
            assert (f"{archived}: the database is on a read-only filesystem, and this "
                    "command writes to it: copy it to a writable disk") in line, line


def test_an_archived_study_exported_pseudonymized_before_is_again_with_the_same_hashes(tmp_path):
    """A study pseudonymized before it was archived on a read-only filesystem: its
    pseudonymized export from the archive is the writable copy's, the same hashes (its key
    is read, never written). One never pseudonymized is refused in one line: a key made
    and not kept would give other hashes in the next export. Before, both were refused."""
    for archived, writable in archive(tmp_path, (), keyed=True):
        for db, out in ((archived, "from-archive"), (writable, "from-copy")):
            result = gridstudy("export", "--db", str(db), "--out", out, "--pseudonymize",
                               cwd=tmp_path)
            assert result.returncode == 0, result.stderr
        shared = (tmp_path / "from-archive" / "participants.jsonl").read_text()
        assert shared == (tmp_path / "from-copy" / "participants.jsonl").read_text()
        assert '"external_id": "h-' in shared and "P1" not in shared
    (tmp_path / "never").mkdir()
    for archived, _ in archive(tmp_path / "never", ()):
        line = one_error_line(gridstudy("export", "--db", str(archived), "--out", "out",
                                        "--pseudonymize", cwd=tmp_path))
        assert "read-only filesystem" in line, line


def test_a_log_on_a_read_only_filesystem_without_its_shared_memory_is_said_in_one_line(
        tmp_path):
    """A copy of a live database without its shared memory, on a read-only filesystem:
    SQLite cannot read what the log holds, and the export says why and what to do,
    instead of exporting the database without its log (or a query's error)."""
    for archived, _ in archive(tmp_path, ("-wal",)):
        line = one_error_line(gridstudy("export", "--db", str(archived), "--out", "out",
                                        cwd=tmp_path))
        assert "read-only filesystem" in line and "copy the database with its -wal file" in line


def test_invalid_json_in_a_stored_column(tmp_path):
    from records.store import Store

    db = tmp_path / "g.db"
    with Store(str(db)) as store, store.session() as session:
        from records.models import AgentRun

        session.add(AgentRun(agent_kind="llm", model="m", config={}))
    with sqlite3.connect(db) as raw:
        raw.execute("update agentrun set config = '{not json'")
    for command in (["export", "--db", str(db), "--out", "out"],):
        result = gridstudy(*command, cwd=tmp_path)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert "a value stored as JSON is not valid JSON" in result.stderr


def test_a_study_file_that_is_not_utf8(tmp_path):
    (tmp_path / "study.yaml").write_bytes(b"id: pilot\ntitle: \xff\xfe caf\xe9\n")
    result = gridstudy("study", "create", "study.yaml", "--db", "s.db", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "study.yaml: not UTF-8 text (byte 17); save it as UTF-8" in result.stderr


def test_a_broken_library_problem_is_skipped_and_the_rest_loads(tmp_path):
    library = tmp_path / "lib"
    good = library / "autumnbench" / "lamp"
    (good / "problems").mkdir(parents=True)
    shutil.copy(LIBRARY / "lamp_grid" / "program.sexp", good / "program.sexp")
    problem = json.loads((LIBRARY / "lamp_grid" / "problems" / "mfp.json").read_text())
    problem.update(id="autumnbench/lamp/mfp", env_id="autumnbench/lamp")
    (good / "problems" / "mfp.json").write_text(json.dumps(problem))
    (good / "problems" / "planning.json").write_text("{not json")
    env = {"GRIDSTUDY_LIBRARY": str(library)}
    for command in (["problems", "list"], ["envs", "list"]):
        result = gridstudy(*command, cwd=tmp_path, env=env)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        assert "planning.json" in result.stderr and "not valid JSON" in result.stderr
    listed = gridstudy("problems", "list", cwd=tmp_path, env=env).stdout
    assert "autumnbench/lamp/mfp" in listed and "lamp_grid/planning" in listed


def test_a_program_that_cannot_load_is_a_clear_page_not_a_500(live_server, tmp_path):
    import httpx

    from tasks import registry
    from tasks.imported import load_program
    from tasks.worldtest.problem import Problem

    (tmp_path / "program.sexp").write_text("")
    registry.register_env("test/empty-program", load_program, path=str(tmp_path / "program.sexp"),
                          replace=True)
    registry.add_problem(Problem("test/empty-program/cd", "test/empty-program", "planning", 1,
                                 {"goal_cells": [[0, 0]], "goal_colours": ["red"]}), replace=True)
    try:
        page = httpx.get(f"{live_server.url}/play/test/empty-program/cd", timeout=10)
        script = httpx.post(f"{live_server.url}/play/test/empty-program/cd/session", timeout=10)
    finally:
        registry.unregister(env_id="test/empty-program", problem_id="test/empty-program/cd")
    assert page.status_code == script.status_code == 422
    assert "test/empty-program cannot be played" in page.text


def create_study_of_a_broken_lamp(tmp_path, program: str):
    """``study create`` of a study whose problem runs ``program`` (imported as
    ``autumnbench/lamp`` into the user's library); the command's result and the file."""
    import yaml

    from tests.consent.helpers import definition_data

    broken = tmp_path / "lib" / "autumnbench" / "lamp"
    (broken / "problems").mkdir(parents=True)
    (broken / "program.sexp").write_text(program)
    problem = json.loads((LIBRARY / "lamp_grid" / "problems" / "mfp.json").read_text())
    problem.update(id="autumnbench/lamp/mfp", env_id="autumnbench/lamp")
    (broken / "problems" / "mfp.json").write_text(json.dumps(problem))
    study = definition_data(problems=["autumnbench/lamp/mfp", "lamp_grid/mfp"],
                            problems_per_participant=1, tutorials={"mfp": "lamp_grid/mfp"})
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study))
    env = {"GRIDSTUDY_LIBRARY": str(tmp_path / "lib")}
    result = gridstudy("study", "create", "study.yaml", "--db", "s.db", cwd=tmp_path, env=env)
    return result, broken


def test_a_study_of_a_program_with_static_errors_is_refused(tmp_path):
    source = (LIBRARY / "lamp_grid" / "program.sexp").read_text()
    result, broken = create_study_of_a_broken_lamp(
        tmp_path, source.replace("(adjacentPoss", "(adjacentPos", 1))
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "autumnbench/lamp/mfp: its program has errors" in result.stderr
    assert f"{broken / 'program.sexp'}:" in result.stderr
    assert "unknown function 'adjacentPos' (did you mean 'adjacentPoss'?)" in result.stderr
    assert not (tmp_path / "s.db").exists() or "pilot" not in (tmp_path / "s.db").read_bytes().decode("latin-1")


@pytest.mark.parametrize(("lines", "message", "at"), [
    ("(= t (initnext 0 (+ (prev t) 1)))\n(on (== t 50) (= t (/ 1 0)))", "division by zero",
     "at tick 51, seed 1, "),
    ("(= n (initnext 0 (prev n)))\n(on clicked (= n (length (range 0 200000000))))",
     "step budget exceeded", " play; replay: gridstudy play "),
], ids=["division-by-zero-at-tick-50", "over-the-step-budget"])
def test_a_study_of_a_program_that_fails_when_rolled_out_is_refused(tmp_path, lines, message, at):
    source = (LIBRARY / "lamp_grid" / "program.sexp").read_text().rstrip()
    result, broken = create_study_of_a_broken_lamp(tmp_path, source[:-1] + "\n" + lines + "\n)\n")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "autumnbench/lamp/mfp: its program has errors" in result.stderr
    failures = [line for line in result.stderr.splitlines() if "rollout check: " in line]
    assert all(f"rollout check: {broken / 'program.sexp'}:" in line for line in failures)
    assert any(f"runtime error: {message}" in line and at in line for line in failures), failures
    assert len(failures) == len({line.split(" (at tick ")[0] for line in failures})  # once each
    assert not (tmp_path / "s.db").exists() or "pilot" not in (tmp_path / "s.db").read_bytes().decode("latin-1")


def test_a_study_served_without_the_library_it_was_made_with_is_refused_at_start(tmp_path):
    """The library is ``$GRIDSTUDY_LIBRARY``, else ``./gridstudy-library`` of the folder a
    command starts in: a study made of the researcher's own environment, served from
    another folder, is refused in one line naming the study, its problems and the library
    read, before anyone arrives. Before, the server started and answered the study's
    first page, to every participant arriving from Prolific, with a bare Internal Server
    Error. Served with its library, or with ``--skip-check``, it starts."""
    import signal

    import httpx

    from tests.conftest import free_port, start_serve

    library = tmp_path / "lib"
    env = {"GRIDSTUDY_LIBRARY": str(library)}
    for args in (("envs", "new", "glass_house", "--category", "tool use", "--library",
                  str(library)), ("problems", "derive", "glass_house", "--samples", "4")):
        made = gridstudy(*args, cwd=tmp_path, env=env)
        assert made.returncode == 0, made.stderr
    study = tmp_path / "glass.yaml"
    study.write_text("id: glass\ntitle: Glass\nproblems: [glass_house/planning]\n"
                     "tutorials: {planning: ant_trail/planning}\nattempts_per_problem: 5\n"
                     "problems_per_participant: 1\ncompletion_code: GLASS1\n"
                     "screenout_code: GLASS0\nstages: [consent, screening, tasks]\n"
                     "consent: {version: '1', text: Play.}\n")
    db = tmp_path / "glass.db"
    made = gridstudy("study", "create", str(study), "--db", str(db), cwd=tmp_path, env=env)
    assert made.returncode == 0, made.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    refused = gridstudy("serve", "--db", str(db), "--port", str(free_port()), cwd=elsewhere,
                        env={"GRIDSTUDY_LIBRARY": ""})
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert refused.stderr.strip().splitlines() == [
        f"Error: problems not registered here: study 'glass' plays glass_house/planning. "
        f"The library read here is {elsewhere / 'gridstudy-library'}: start in the folder "
        "that holds the library the study was made with, or set GRIDSTUDY_LIBRARY to it "
        "(--skip-check serves it anyway, and its participants' pages fail)"]
    for args, more in (((), env), (("--skip-check",), {"GRIDSTUDY_LIBRARY": ""})):
        process, url = start_serve(db, "gevent", *args, env=more)
        try:
            arrived = httpx.get(f"{url}/study/glass?PROLIFIC_PID=p1&STUDY_ID=s&SESSION_ID=x",
                                follow_redirects=True, timeout=30)
            assert arrived.status_code == (200 if more is env else 500)
            if more is not env:  # plain words, not the framework's bare page
                assert "Something went wrong on our side" in arrived.text
                assert "Internal Server Error" not in arrived.text
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(30)


def test_a_server_without_the_browser_files_from_npm_is_refused_at_start(tmp_path):
    """gridstudy's Python packages installed out of its checkout (a ``pip install``) have
    no ``node_modules``: the server started, printed its links, and every participant's
    game page failed to load the Socket.IO client and stayed on "Connecting...". It is
    refused in one line saying what is missing and where it comes from; Pyodide is needed
    only while a study plays in the browser. With the files, the same copy serves."""
    import signal

    import httpx

    from tests.conftest import _wait_until_serving

    installed = tmp_path / "site"
    for package in ("study_server", "tasks", "records", "consent", "game_client", "analysis"):
        shutil.copytree(ROOT / package, installed / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    study = tmp_path / "browser.yaml"
    study.write_text((EXAMPLES / "demo-study.yaml").read_text() + "play: browser\n")
    db = tmp_path / "b.db"
    made = gridstudy("study", "create", str(study), "--db", str(db), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    command = [sys.executable, "-c", "from study_server.cli import main; main()", "serve",
               "--db", str(db), "--async-mode", "gevent"]

    def serve(*more: str) -> subprocess.CompletedProcess:
        return subprocess.run([*command, "--port", str(free_port()), *more], cwd=installed,
                              capture_output=True, text=True, timeout=120)

    client = installed / "node_modules/socket.io-client/dist/socket.io.min.js"
    refused = serve()
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert refused.stderr.strip().splitlines() == [
        f"Error: missing: the Socket.IO browser client every game page loads ({client}); "
        f"Pyodide, which study 'demo' plays its games in (play: browser) "
        f"({installed / 'node_modules/pyodide/pyodide.js'}). They come from npm: run `make "
        "setup` in gridstudy's checkout and serve from there (a `pip install` elsewhere does "
        "not bring them; --skip-check serves anyway, and participants' games never connect)"]
    client.parent.mkdir(parents=True)
    shutil.copy(ROOT / "node_modules/socket.io-client/dist/socket.io.min.js", client)
    refused = serve()
    assert refused.returncode == 1 and "Pyodide, which study 'demo'" in refused.stderr
    assert "Socket.IO" not in refused.stderr, refused.stderr
    (installed / "node_modules/pyodide").symlink_to(ROOT / "node_modules/pyodide")
    port = free_port()
    process = subprocess.Popen([*command, "--port", str(port)], cwd=installed,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = _wait_until_serving(process, port, None)
        assert httpx.get(f"{url}/vendor/socket.io.min.js", timeout=30).status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
