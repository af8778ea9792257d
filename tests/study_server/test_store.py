"""The event store: round trips, the batching writer under load, failures, frames."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest
from sqlmodel import select

from records.database import FileTrouble, LiveFile, database_url, make_engine
from records.models import AgentRun, EpisodeRow, Event, Frame, RawInput
from records.rows import step_row
from records.store import Store, StoreWriteError
from records.writer import BulkInsert, frame_insert_ignoring_duplicates
from study_server.services import free_port
from tasks import registry
from tasks.core import frame_hash
from tasks.worldtest import Episode
from tests.envs import register_test_envs
from tests.sample_study import PLAN

VERSION = {"environment_version": registry.problem_version(PLAN)}
"""What every attempt's info records at its start (the version of its environment)."""


@pytest.fixture
def store(tmp_path):
    register_test_envs()
    store = Store(f"sqlite:///{tmp_path / 'gridstudy.db'}")
    yield store
    store.close()


def play(store: Store, actions: list[str]) -> tuple[int, list]:
    """Play PLAN through a real Episode, writing one event per step; return id, steps."""
    episode_id = store.start_episode(problem=PLAN, study_id="pilot", participant_id=7)
    episode = Episode(PLAN)
    steps = []
    for seq, action in enumerate(actions):
        step = episode.apply(action)
        steps.append(step)
        store.write_event(step_row(
            step, episode_id=episode_id, seq=seq, problem_id=PLAN.id, source="input",
            study_id="pilot", participant_id=7, client_time=100.0 + seq,
            server_time=200.0 + seq,
        ))
    return episode_id, steps


def event_record(episode_id: int, seq: int, frame=None, **fields) -> dict:
    record = {"episode_id": episode_id, "seq": seq, "problem_id": "p", "phase": "interaction",
              "tick": seq, "action": "noop", "source": "auto", "server_time": float(seq)}
    if frame is not None:
        record["frame"] = frame
    return {**record, **fields}


def solid(colour: str, size: int = 16) -> list[list[str]]:
    return [[colour] * size for _ in range(size)]


def count(store: Store, model) -> int:
    with store.session() as session:
        return len(session.exec(select(model)).all())


# -- the record of a step -----------------------------------------------------------------


def test_step_row_maps_every_step_field():
    register_test_envs()
    step = Episode(PLAN).apply("right")
    record = step_row(step, episode_id=4, seq=0, problem_id=PLAN.id, source="agent",
                      agent_run_id=2, server_time=5.0, prompt_tokens=11, cost=0.5,
                      raw_reply="right", parse_valid=True, latency=1.25)
    assert record == {
        "episode_id": 4, "seq": 0, "agent_run_id": 2, "problem_id": PLAN.id,
        "phase": "interaction", "tick": 0, "action": "right", "applied": True,
        "source": "agent", "server_time": 5.0, "next_phase": "interaction", "score": None,
        "frame": step.observation.frame, "prompt_tokens": 11, "cost": 0.5,
        "raw_reply": "right", "parse_valid": True, "latency": 1.25,
    }


@pytest.mark.parametrize("fields, error, message", [
    ({"tick": 3}, TypeError, "takes ['tick'] from the step"),
    ({"applied": False}, TypeError, "takes ['applied'] from the step"),
    ({"frame_hash": "ab"}, TypeError, "takes ['frame_hash'] from the step"),
    ({"tokens": 3}, ValueError, "unknown event field(s) ['tokens']"),
])
def test_step_row_refuses_fields_it_owns_or_does_not_know(fields, error, message):
    register_test_envs()
    step = Episode(PLAN).apply("noop")
    with pytest.raises(error) as raised:
        step_row(step, episode_id=1, seq=0, problem_id="p", source="auto", **fields)
    assert message in str(raised.value)


def test_write_event_checks_fields_before_enqueueing(store):
    with pytest.raises(ValueError, match=r"unknown event field\(s\) \['colour'\]"):
        store.write_event({**event_record(1, 0), "colour": "red"})
    with pytest.raises(ValueError, match=r"missing required field\(s\) \['phase', 'source'\]"):
        store.write_event({**event_record(1, 0), "phase": None, "source": None})
    with pytest.raises(ValueError, match=r"missing required field\(s\) \['text'\]"):
        store.write_raw_input({"received_at": 1.0, "status": "dropped"})


# -- round trip ---------------------------------------------------------------------------


def test_round_trip_of_events_frames_raw_inputs_and_episode(store):
    episode_id, steps = play(store, ["right", "go-to-test", "right", "right"])
    store.write_raw_input({"episode_id": episode_id, "participant_id": 7, "received_at": 201.5,
                           "client_time": 201.4, "text": "left", "status": "dropped",
                           "reason": "second input in one tick"})
    store.finish_episode(episode_id, status="done", phase="done", score=1.0,
                         info={"ticks": 4})
    store.flush()
    with store.session() as session:
        events = session.exec(select(Event).order_by(Event.seq)).all()
        frames = {f.hash: json.loads(f.data) for f in session.exec(select(Frame))}
        raw = session.exec(select(RawInput)).one()
        row = session.get(EpisodeRow, episode_id)
    assert [(e.seq, e.tick, e.phase, e.action, e.next_phase, e.score) for e in events] == [
        (0, 0, "interaction", "right", "interaction", None),
        (1, 1, "interaction", "go-to-test", "test", None),
        (2, 2, "test", "right", "test", None),
        (3, 3, "test", "right", "done", 1.0),
    ]
    assert [frames[e.frame_hash] for e in events] == [s.observation.frame for s in steps]
    assert {(e.study_id, e.participant_id, e.source, e.applied) for e in events} == {
        ("pilot", 7, "input", True)}
    assert [(e.client_time, e.server_time) for e in events] == [
        (100.0, 200.0), (101.0, 201.0), (102.0, 202.0), (103.0, 203.0)]
    assert (raw.episode_id, raw.text, raw.status, raw.reason, raw.received_at) == (
        episode_id, "left", "dropped", "second input in one tick", 201.5)
    assert (row.problem_id, row.challenge, row.env_id, row.seed) == (
        PLAN.id, "planning", "test/walker", 3)
    assert (row.status, row.phase, row.score, row.info) == ("done", "done", 1.0, {**VERSION, "ticks": 4})
    assert row.ended_at is not None and row.study_id == "pilot" and row.participant_id == 7


def test_finish_episode_merges_info_and_refuses_unknown_episodes(store):
    episode_id = store.start_episode(problem=PLAN, agent_run_id=3, info={"model": "m"})
    store.finish_episode(episode_id, status="abandoned", phase="test", score=None,
                         info={"resets": 2})
    with store.session() as session:
        row = session.get(EpisodeRow, episode_id)
    assert (row.status, row.agent_run_id, row.info) == ("abandoned", 3, {**VERSION, "model": "m",
                                                                          "resets": 2})
    with pytest.raises(StoreWriteError, match="no episode 999"):
        store.finish_episode(999, status="done", phase="done", score=0.0)
    store.finish_episode(999, status="done", phase="done", score=0.0, wait=False)
    with pytest.raises(StoreWriteError, match="no episode 999"):
        store.flush()


def test_session_rolls_back_a_failed_unit_of_work(store):
    with pytest.raises(RuntimeError):
        with store.session() as session:
            session.add(EpisodeRow(problem_id="p", challenge="mfp", env_id="e", seed=0))
            session.flush()
            raise RuntimeError("boom")
    assert count(store, EpisodeRow) == 0


# -- the batching writer ------------------------------------------------------------------


def test_eight_threads_of_ten_thousand_events_lose_nothing(store):
    frames = [solid(c) for c in ("black", "gold", "blue")]

    def produce(thread: int) -> None:
        for seq in range(10_000):
            store.write_event(event_record(thread, seq, frames[0] if seq % 7 else frames[seq % 3]))

    threads = [threading.Thread(target=produce, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store.flush()
    with store.session() as session:
        rows = session.exec(select(Event.episode_id, Event.seq)).all()
    assert len(rows) == 80_000
    by_thread = {n: set() for n in range(8)}
    for episode_id, seq in rows:
        by_thread[episode_id].add(seq)
    assert all(seqs == set(range(10_000)) for seqs in by_thread.values())
    assert count(store, Frame) == 3


def test_events_reach_the_disk_within_the_flush_interval_without_flush(tmp_path):
    path = tmp_path / "g.db"
    store = Store(f"sqlite:///{path}", flush_interval=0.05)
    store.write_events([event_record(1, seq) for seq in range(5)])
    deadline, seen = time.monotonic() + 5.0, 0
    while seen < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
        with sqlite3.connect(path) as reader:
            seen = reader.execute("select count(*) from event").fetchone()[0]
    store.close()
    assert seen == 5


def test_a_full_batch_is_written_before_its_flush_interval(tmp_path):
    """The writer sleeps through a batch's flush interval without waking for each row;
    a batch's worth of rows wakes it at once (and what is short of one waits)."""
    path = tmp_path / "g.db"
    store = Store(f"sqlite:///{path}", flush_interval=60.0, batch_size=50)

    def on_disk() -> int:
        with sqlite3.connect(path) as reader:
            return reader.execute("select count(*) from event").fetchone()[0]

    try:
        store.write_events([event_record(1, seq) for seq in range(49)])
        time.sleep(0.5)
        assert on_disk() == 0
        store.write_event(event_record(1, 49))
        deadline = time.monotonic() + 10.0
        while on_disk() < 50 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert on_disk() == 50
    finally:
        store.close()


def test_inputs_resolved_together_are_each_applied_or_refused_in_order(tmp_path):
    """Resolutions queued one after another run as one statement per kind; each input's
    row still ends as its own resolution says, and a later one wins over an earlier."""
    path = tmp_path / "g.db"
    store = Store(f"sqlite:///{path}", flush_interval=60.0)
    try:
        for seq in range(8):
            store.write_raw_input({"episode_id": 1, "input_seq": seq, "received_at": 1.0,
                                   "text": "up", "status": "queued"})
        for seq in (0, 1, 2):
            store.resolve_input(1, seq)
        for seq in (3, 4):
            store.resolve_input(1, seq, "refused", "not allowed now")
        store.resolve_input(1, 5)
        store.resolve_input(1, 6, "dropped", "the server stopped first")
        store.resolve_input(1, 6)  # already refused: no longer waiting, so kept as it is
        store.flush()
    finally:
        store.close()
    with sqlite3.connect(path) as reader:
        rows = reader.execute("select input_seq, status, reason from rawinput "
                              "order by input_seq").fetchall()
    assert rows == [(3, "refused", "not allowed now"), (4, "refused", "not allowed now"),
                    (6, "dropped", "the server stopped first"), (7, "queued", None)]


def test_close_writes_everything_still_queued_and_is_idempotent(tmp_path):
    path = tmp_path / "g.db"
    store = Store(f"sqlite:///{path}", flush_interval=60.0)
    store.write_events([event_record(1, seq, solid("red")) for seq in range(300)])
    store.write_raw_input({"received_at": 1.0, "text": "up", "status": "dropped"})
    store.close()
    store.close()
    with sqlite3.connect(path) as reader:
        counts = [reader.execute(f"select count(*) from {t}").fetchone()[0]
                  for t in ("event", "frame", "rawinput")]
    assert counts == [300, 1, 1]
    with pytest.raises(RuntimeError, match="is closed"):
        store.write_event(event_record(1, 300))


def test_a_failing_table_surfaces_on_flush_and_keeps_the_rows(store, tmp_path):
    with sqlite3.connect(tmp_path / "gridstudy.db") as other:
        other.execute("drop table rawinput")
    store.write_raw_input({"received_at": 1.0, "text": "up", "status": "dropped"})
    store.write_event(event_record(1, 0))
    with pytest.raises(StoreWriteError, match=r"1 row\(s\) could not be written.*rawinput") as raised:
        store.flush()
    assert [(f.table, f.record["text"]) for f in raised.value.failures] == [("rawinput", "up")]
    assert "no such table: rawinput" in raised.value.failures[0].error
    assert [f.record for f in store.failed] == [
        {"received_at": 1.0, "text": "up", "status": "dropped"}]
    assert count(store, Event) == 1
    store.flush()  # reported once; the rows stay in store.failed
    assert len(store.failed) == 1


def test_finish_episode_excludes_with_why_and_an_attempt_excluded_before_keeps_its_reason(store):
    first = store.start_episode(problem=PLAN, study_id="pilot", participant_id=7)
    second = store.start_episode(problem=PLAN, study_id="pilot", participant_id=7)
    with store.session() as session:
        row = session.get(EpisodeRow, second)
        row.included, row.exclusion_reason = False, "ended by researcher: left the room"
    for episode_id in (first, second):
        store.finish_episode(episode_id, status="abandoned", phase="test", score=None,
                             excluded="abandoned: nobody was connected for 600 s")
    with store.session() as session:
        rows = [session.get(EpisodeRow, episode_id) for episode_id in (first, second)]
    assert [(row.status, row.included, row.exclusion_reason) for row in rows] == [
        ("abandoned", False, "abandoned: nobody was connected for 600 s"),
        ("abandoned", False, "ended by researcher: left the room")]


def test_a_nul_or_a_lone_surrogate_is_stored_as_a_replacement_character(store, tmp_path):
    """Half an emoji (a model's reply cut inside one, a page's message) is valid JSON but
    no database stores it; neither text nor JSON fields refuse the row for it."""
    half = "\ud83d"
    store.write_event(event_record(1, 0, raw_reply=f"a{half}b\x00c", reasoning=f"{half}😀"))
    episode_id = store.start_episode(problem=PLAN, info={"reason": f"cut{half}", f"k{half}": [half]})
    store.finish_episode(episode_id, status="abandoned", phase="test", score=None,
                         info={"why": f"\x00{half}"})
    store.close()
    with sqlite3.connect(tmp_path / "gridstudy.db") as reader:
        [(reply, reasoning)] = reader.execute("select raw_reply, reasoning from event").fetchall()
        [(info,)] = reader.execute("select info from episode").fetchall()
    assert (reply, reasoning) == ("a\ufffdb\ufffdc", "\ufffd😀")  # a whole emoji is kept
    assert json.loads(info) == {**VERSION, "reason": "cut\ufffd", "k\ufffd": ["\ufffd"],
                                "why": "\x00\ufffd"}


@pytest.mark.parametrize("field, value, message", [
    ("raw_reply", {"not": "text"}, "raw_reply must be text, not dict {'not': 'text'}"),
    ("prompt_tokens", "lots", "prompt_tokens must be an integer, not str 'lots'"),
    ("prompt_tokens", 2**63, "prompt_tokens must be an integer"),
    ("cost", float("nan"), "cost must be a finite number, not float nan"),
    ("client_time", float("inf"), "client_time must be a finite number"),
    ("applied", "yes", "applied must be true or false"),
])
def test_a_row_the_database_cannot_store_is_refused_at_the_door(store, tmp_path, field, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        store.write_events([event_record(1, 0), event_record(1, 1, **{field: value})])
    store.write_event(event_record(1, 0))
    store.close()
    with sqlite3.connect(tmp_path / "gridstudy.db") as reader:
        seqs = [r[0] for r in reader.execute("select seq from event order by seq")]
    assert seqs == [0]


def test_frames_are_stored_once_across_batches_and_stores(tmp_path):
    url = f"sqlite:///{tmp_path / 'g.db'}"
    palette = [solid("black"), solid("gold"), [["red", "blue"], ["blue", "red"]]]
    with Store(url) as store:
        store.write_events([event_record(1, n, palette[n % 3]) for n in range(90)])
        store.flush()
        store.write_events([event_record(1, n, palette[n % 3]) for n in range(90, 120)])
    with Store(url) as store:
        store.write_event(event_record(2, 0, palette[2]))
        store.flush()
        with store.session() as session:
            stored = {f.hash: json.loads(f.data) for f in session.exec(select(Frame))}
            hashes = session.exec(select(Event.frame_hash).order_by(Event.id)).all()
    assert stored == {frame_hash(f): f for f in palette}
    assert hashes == [frame_hash(palette[n % 3]) for n in range(120)] + [frame_hash(palette[2])]



def test_each_tick_is_stored_with_its_own_frames_hash_when_attempts_interleave(tmp_path):
    # Most ticks repeat the frame before: the store reuses that frame's hash, and must
    # never reuse it for a frame that changed, or for another attempt's frame.
    frames = {1: [solid("black"), solid("black"), solid("gold"), solid("gold"), solid("black")],
              2: [solid("gold"), solid("black"), solid("black"), solid("red"), solid("red")]}
    frames[1][1][3][4] = "blue"  # one cell of an equal-looking frame
    with Store(f"sqlite:///{tmp_path / 'g.db'}") as store:
        answered = [(episode, store.write_event(event_record(episode, seq, frames[episode][seq])))
                    for seq in range(5) for episode in (1, 2)]
        store.flush()
        with store.session() as session:
            stored = session.exec(select(Event.episode_id, Event.frame_hash)
                                  .order_by(Event.id)).all()
    assert stored == answered == [(episode, frame_hash(frames[episode][seq]))
                                  for seq in range(5) for episode in (1, 2)]


# -- engines ------------------------------------------------------------------------------


@pytest.mark.parametrize("text, url", [
    ("gridstudy.db", "sqlite:///gridstudy.db"),
    ("sqlite:////srv/g.db", "sqlite:////srv/g.db"),
    ("postgres://u:p@db:5432/g", "postgresql+psycopg://u:p@db:5432/g"),
    ("postgresql://u@db/g", "postgresql+psycopg://u@db/g"),
    ("postgresql+psycopg://u@db/g", "postgresql+psycopg://u@db/g"),
])
def test_database_url_normalises_what_users_type(text, url):
    assert database_url(text) == url


def test_a_postgresql_url_builds_a_postgresql_engine_without_connecting():
    engine = make_engine("postgresql://study:secret@db.invalid:5432/gridstudy")
    assert (engine.dialect.name, engine.driver) == ("postgresql", "psycopg")
    assert engine.url.database == "gridstudy"
    frames = BulkInsert(frame_insert_ignoring_duplicates(engine), {"hash": None, "data": None},
                        engine)
    assert frames.sql == ("INSERT INTO frame (hash, data) VALUES (%(hash)s::VARCHAR, "
                          "%(data)s::VARCHAR) ON CONFLICT (hash) DO NOTHING")
    assert frames.values is None  # named parameters: rows go to psycopg as mappings


def test_sqlite_store_uses_wal_and_refuses_memory(store):
    with store.engine.connect() as connection:
        modes = [connection.exec_driver_sql(f"pragma {p}").scalar()
                 for p in ("journal_mode", "synchronous")]
    assert modes == ["wal", 1]  # 1 is NORMAL
    with pytest.raises(ValueError, match="in-memory SQLite database"):
        make_engine("sqlite://")


def test_from_env_prefers_database_url(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    with Store.from_env(f"sqlite:///{tmp_path / 'default.db'}") as store:
        assert store.engine.url.database == str(tmp_path / "env.db")
    monkeypatch.delenv("DATABASE_URL")
    with Store.from_env(str(tmp_path / "default.db")) as store:
        assert store.engine.url.database == str(tmp_path / "default.db")


def test_a_program_that_never_closes_its_store_still_writes_everything(tmp_path):
    path = tmp_path / "g.db"
    code = (
        "from records.store import Store\n"
        f"store = Store({str(path)!r}, flush_interval=60.0)\n"
        "store.write_events([{'episode_id': 1, 'seq': n, 'problem_id': 'p', 'phase': 'test',\n"
        "                     'source': 'auto', 'server_time': 1.0} for n in range(1000)])\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    with sqlite3.connect(path) as reader:
        assert reader.execute("select count(*) from event").fetchone()[0] == 1000


def test_a_database_made_by_an_older_version_gains_the_new_columns(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as old:
        old.execute("create table agentrun (id integer primary key, study_id varchar, "
                    "agent_kind varchar not null default 'llm', model varchar, config json, "
                    "created_at datetime)")
        old.execute("insert into agentrun (agent_kind, model, config) values ('llm', 'm', '{}')")
    with Store(str(path)) as store, store.session() as session:
        [run] = session.exec(select(AgentRun)).all()
    assert (run.model, run.token) == ("m", None)


def test_a_row_the_writer_gives_up_on_fails_no_other_request(store, tmp_path):
    store.write_events([event_record(1, 0)])
    store.wait(timeout=10)
    with sqlite3.connect(tmp_path / "gridstudy.db") as operator:
        operator.execute("alter table event rename to event_kept")  # a careless operator
    store.write_events([event_record(1, 1)])
    store.wait(timeout=30)  # what a request does: it never raises another's failure
    with pytest.raises(StoreWriteError) as raised:
        store.flush()  # reported where someone asks for it
    assert [f.record["seq"] for f in raised.value.failures] == [1]


def test_processes_started_together_on_a_new_database_all_open_it(tmp_path):
    """Several `gridstudy agent run` processes started at once on a fresh SQLite file
    race to create the tables; every one of them must open the store."""
    db = tmp_path / "fresh.db"
    code = f"from records.store import Store\nStore({str(db)!r}).close()\nprint('opened')"
    processes = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(6)]
    outputs = [p.communicate(timeout=60) for p in processes]
    for process, (out, err) in zip(processes, outputs):
        assert process.returncode == 0, err[-2000:]
        assert out.strip() == "opened"
    with sqlite3.connect(db) as connection:
        tables = {row[0] for row in connection.execute("select name from sqlite_master where type='table'")}
    assert {"episode", "event", "agentrun"} <= tables


def _count(path, table: str) -> int:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        return db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def _live(path) -> LiveFile:
    """A database in WAL mode with one row in ``t``, held as a server holds its file."""
    with closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE t (x)")
        db.execute("INSERT INTO t VALUES (1)")
        db.commit()
        file = LiveFile(path)
        file.open()
    return file


def test_a_live_file_deleted_opens_no_new_one_and_is_written_back_whole(tmp_path):
    """The database deleted under its open connections: a new connection is refused
    rather than made on a new empty file, and keep() writes the database back, rows
    written after the deletion included; the connections still on the old file can no
    longer write into it."""
    path = tmp_path / "live.db"
    engine = make_engine(str(path))
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE t (x)")
        connection.exec_driver_sql("INSERT INTO t VALUES (1)")
    engine.dispose()
    file = LiveFile(path)
    file.open()
    straggler = sqlite3.connect(path, isolation_level=None, timeout=0.2)
    straggler.execute("SELECT 1 FROM t").fetchall()  # opens the log before it goes
    try:
        assert file.keep() is None
        for suffix in ("", "-wal", "-shm"):
            (tmp_path / f"live.db{suffix}").unlink()
        straggler.execute("INSERT INTO t VALUES (2)")  # acknowledged into the deleted file
        assert file.trouble() == "the database file was deleted"
        with pytest.raises(sqlite3.OperationalError, match="unable to open .* was deleted"):
            file.connect()
        assert not path.exists()
        assert file.keep() == "the database file was deleted"
        assert _count(path, "t") == 2 and file.trouble() is None
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            straggler.execute("INSERT INTO t VALUES (3)")  # the old file takes no more
        with closing(file.connect()) as fresh:
            assert fresh.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 2
    finally:
        straggler.close()
        file.close()


def test_a_live_file_replaced_is_left_as_it_is_until_it_goes(tmp_path):
    path, other = tmp_path / "live.db", tmp_path / "other.db"
    file = _live(path)
    try:
        with closing(sqlite3.connect(other)) as made:
            made.execute("CREATE TABLE mine (y)")
            made.commit()
        content = other.read_bytes()
        os.replace(other, path)
        with pytest.raises(FileTrouble, match="is another file: the database file was replaced"):
            file.keep()
        with pytest.raises(sqlite3.OperationalError, match="was replaced"):
            file.connect()
        assert path.read_bytes() == content
        os.replace(path, other)
        assert file.keep() == "the database file was deleted"
        assert _count(path, "t") == 1 and other.read_bytes() == content
    finally:
        file.close()


def test_closing_a_store_writes_back_a_database_deleted_since_the_writers_last_look(tmp_path):
    """What a page wrote in the last second before the stop is kept too."""
    path = tmp_path / "gridstudy.db"
    store = Store(str(path))
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"gridstudy.db{suffix}").unlink()
    with store.session() as db:
        db.add(AgentRun(agent_kind="random", model="written after the deletion"))
    store.close()
    assert _count(path, "agentrun") == 1


def test_a_live_file_that_cannot_be_written_back_yet_is_written_back_when_it_can(tmp_path):
    """Its folder deleted and a file made in the folder's place: writing back fails, as
    the storage being away (FileTrouble), and succeeds once the way is clear."""
    folder = tmp_path / "data"
    folder.mkdir()
    path = folder / "live.db"
    file = _live(path)
    try:
        shutil.rmtree(folder)
        folder.write_text("not a folder")
        with pytest.raises(FileTrouble, match="writing the database back .* failed"):
            file.keep()
        folder.unlink()
        assert file.keep() == "the database file was deleted"
        assert _count(path, "t") == 1
    finally:
        file.close()


@pytest.mark.parametrize(("denied", "says"), [
    ("study.db", "cannot write the database file (owned by "),
    ("study.db-wal", "cannot write its write-ahead log (-wal) (owned by "),
    ("", "cannot write in the database's folder, where SQLite makes its write-ahead log"),
], ids=["file", "log", "folder"])
def test_a_database_this_user_cannot_write_is_refused_with_what_to_change(tmp_path, monkeypatch,
                                                                          denied, says):
    """A server run as a user who cannot write the database or its folder (made by
    ``sudo make demo``, run by a service's own user) is refused at once, naming the user,
    the file's owner and mode, and the fix; before, it stopped at its first write with
    SQLite's "attempt to write a readonly database" and the SQL, or was told to restore
    the database from a backup. Checked by hand as ``nobody``; here, as root, whom no
    permission stops, ``os.access`` answers for the files as it does for another user.
    A reading command still reads the database (``mode=ro``)."""
    from records.database import check_writable, open_existing

    db = tmp_path / "study.db"
    with Store(str(db)) as store, store.session() as session:
        session.add(AgentRun(agent_kind="random", config={}))
    if denied == "study.db-wal":
        (tmp_path / "study.db-wal").write_bytes(b"")  # left behind, as after a crash
    refused = tmp_path / denied if denied else tmp_path
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **options: os.fspath(path) != str(
        refused) and real_access(path, mode, **options))
    for attempt in (lambda: Store(str(db)), lambda: check_writable(db)):
        with pytest.raises(PermissionError) as refusal:
            attempt()
        assert str(refusal.value).startswith(f"{db}: this process's user (")
        assert says in str(refusal.value) and "run the command as the user who owns" in str(
            refusal.value)
    engine = open_existing(str(db))  # the export, the report
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("SELECT count(*) FROM agentrun").scalar() == 1
    finally:
        engine.dispose()


def test_a_copy_left_by_a_server_killed_as_it_wrote_the_database_back_is_pointed_to(tmp_path,
                                                                                   caplog):
    """A server killed in the milliseconds between copying a deleted database and moving
    the copy into place leaves the study in a hidden file and no database. Started
    again, it made a new empty database there: the study seemed gone. Now every command
    that writes refuses, in one line saying what to do; done, the study is back. A copy
    left beside a database in place is said, and the database is used."""
    db = tmp_path / "g.db"
    with Store(str(db)) as store, store.session() as session:
        session.add(AgentRun(agent_kind="random", config={}))
    copy = tmp_path / ".g.db.restoring"
    shutil.copy(db, copy)  # the copy made, not yet moved into place
    db.unlink()
    with pytest.raises(FileNotFoundError) as refusal:
        Store(str(db))
    assert str(refusal.value).startswith(f"{db} is missing, and {copy} is the copy of it a "
                                         "server was writing back when it was stopped")
    served = subprocess.run([str(Path(sys.executable).parent / "gridstudy"), "serve", "--db",
                             str(db), "--port", str(free_port())], capture_output=True, text=True, timeout=60)
    assert served.returncode == 1 and "Traceback" not in served.stderr, served.stderr
    assert f"{db} is missing, and {copy}" in served.stderr.splitlines()[-1]
    assert not db.exists()  # no empty database made in its place
    os.replace(copy, db)  # as the line says
    with Store(str(db)) as store, store.session() as session:
        assert len(session.exec(select(AgentRun)).all()) == 1
    shutil.copy(db, copy)
    with caplog.at_level("WARNING", logger="records.store"):
        Store(str(db)).close()
    assert f"{copy} is left from a server stopped as it wrote the database back" in caplog.text


def test_a_database_made_before_a_unique_index_gets_it_once_its_rows_allow(tmp_path, caplog):
    """A database from before participants were kept one per Prolific id, holding a
    person twice (two arrivals at the same instant): the store opens it, says in the log
    that the index is not made yet and how to see the repeated ids (never the ids), and
    works on; once the researcher has removed the copy, the next start makes the index,
    and the database then refuses a second row for the person."""
    from sqlalchemy.exc import IntegrityError

    from records.models import Participant

    db = tmp_path / "old.db"
    with Store(str(db)) as store:
        pass
    with closing(sqlite3.connect(db)) as raw:  # as a database made before the index was
        raw.execute("DROP INDEX uq_participant_study_id_external_id")
        raw.executemany("INSERT INTO participant (study_id, external_id, stage, status, data, "
                        "created_at, updated_at) VALUES ('demo', '5f0123456789abcdef012345', "
                        "'consent', 'active', '{}', ?, ?)", [("2026-01-01", "2026-01-01")] * 2)
        raw.commit()
    with Store(str(db)) as store:
        with store.session() as session:
            assert len(session.exec(select(Participant)).all()) == 2
    said = [r.getMessage() for r in caplog.records if "uq_participant" in r.getMessage()]
    assert said == ["participant: 1 value(s) of (study_id, external_id) are on more than one "
                    "row, made before the unique index uq_participant_study_id_external_id, "
                    "which is therefore not made yet; see them with SELECT study_id, "
                    "external_id, count(*) FROM participant GROUP BY study_id, external_id "
                    "HAVING count(*) > 1"]
    assert "5f0123456789abcdef012345" not in caplog.text
    with closing(sqlite3.connect(db)) as raw:
        raw.execute("DELETE FROM participant WHERE id = 2")
        raw.commit()
    caplog.clear()
    with Store(str(db)) as store:
        with pytest.raises(IntegrityError), store.session() as session:
            session.add(Participant(study_id="demo", external_id="5f0123456789abcdef012345",
                                    data={}))
    assert "uq_participant" not in caplog.text
