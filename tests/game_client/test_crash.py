"""``kill -9`` on a real ``gridstudy agent run`` process, at several points, then the same
command again: every job is played exactly once, every turn recorded before the kill is
kept (and not paid for again), and nothing is left ``active``."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from bench.standin import Failure, FakeOpenAI, Stall
from records.models import EpisodeRow, Event
from tests.conftest import start_serve
from tests.game_client.test_interrupt import NOOP, start, stored, wait_for_requests

TURNS = 8
"""--max-turns of the command in test_interrupt: each attempt ends abandoned after it."""


def kill(process):
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)


def rerun(db, fake, *extra):
    """The same command again, with an endpoint that answers at once."""
    fake.script[:] = [NOOP] * 200
    fake.requests.clear()
    process = start(db, fake, *extra)
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, err[-3000:]
    return out, err


def check_played_once(db, before, events_before, fake, err):
    """The state after a rerun, against the state the kill left (``before``)."""
    assert before, "the kill came before any attempt was stored"
    episodes, events = stored(db)
    assert [e.status for e in episodes] == ["abandoned"] * 4, [e.status for e in episodes]
    jobs = sorted((e.problem_id, e.info["run_index"]) for e in episodes)
    assert len(set(jobs)) == 4  # 2 problems x 2 runs, each once
    assert {e.id for e in before} <= {e.id for e in episodes}  # continued, not replaced
    kept = {(ev.episode_id, ev.seq, ev.prompt, ev.raw_reply) for ev in events_before}
    after = {(ev.episode_id, ev.seq, ev.prompt, ev.raw_reply) for ev in events}
    assert kept <= after  # every recorded turn kept as it was
    for episode in episodes:
        seqs = [ev.seq for ev in events if ev.episode_id == episode.id]
        assert seqs == list(range(TURNS)), (episode.id, seqs)
    # what was recorded before the kill is not asked for again
    assert len(fake.requests) == 4 * TURNS - len(events_before)
    active = [e.id for e in before if e.status == "active"]
    if active:
        assert "left active by a process that ended without closing them" in err
        reaped = [e for e in episodes if e.id in active]
        assert all(e.info["resumed"] >= 1 for e in reaped)


def test_kill_before_the_first_turn(tmp_path):
    db = tmp_path / "runs.db"
    with FakeOpenAI([Stall(30.0, NOOP)] * 10) as fake:
        process = start(db, fake)
        wait_for_requests(fake, 2, process)
        kill(process)
        before, events_before = stored(db)
        assert [e.status for e in before] == ["active", "active"] and not events_before
        _, err = rerun(db, fake)
        check_played_once(db, before, events_before, fake, err)
    assert "2 of them resumed" in err


def test_kill_in_the_middle_of_attempts(tmp_path):
    db = tmp_path / "runs.db"
    with FakeOpenAI([NOOP] * 11 + [Stall(30.0, NOOP)] * 10) as fake:
        process = start(db, fake)
        wait_for_requests(fake, 13, process)
        time.sleep(0.5)  # the writer's last batch reaches the file
        kill(process)
        before, events_before = stored(db)
        assert len(before) >= 2 and "active" in {e.status for e in before}
        assert events_before
        _, err = rerun(db, fake)
        check_played_once(db, before, events_before, fake, err)


def test_kill_during_a_retry_wait(tmp_path):
    db = tmp_path / "runs.db"
    busy = Failure(429, {"retry-after": "60"}, '{"error": {"message": "slow down"}}')
    # one attempt at a time: a Retry-After holds every request to the endpoint
    with FakeOpenAI([NOOP] * 3 + [busy] + [Stall(30.0, NOOP)] * 10) as fake:
        process = start(db, fake, "--concurrency", "1")
        wait_for_requests(fake, 4, process)
        time.sleep(0.8)  # the attempt now waits out the Retry-After
        kill(process)
        before, events_before = stored(db)
        assert len(events_before) == 3 and [e.status for e in before] == ["active"]
        _, err = rerun(db, fake, "--concurrency", "1")
        check_played_once(db, before, events_before, fake, err)


def test_kill_during_the_final_write(tmp_path):
    """The database is locked by another connection when an attempt's last reply
    arrives, so the process is killed while it writes that turn and the attempt's end."""
    db = tmp_path / "runs.db"
    locked = threading.Event()
    blocker: list[sqlite3.Connection] = []

    def last_reply(messages):
        connection = sqlite3.connect(db, timeout=30, check_same_thread=False)
        connection.execute("BEGIN EXCLUSIVE")
        blocker.append(connection)
        locked.set()
        return NOOP

    # one attempt at a time: requests 1..8 are the first attempt's turns
    with FakeOpenAI([NOOP] * (TURNS - 1) + [last_reply] + [Stall(30.0, NOOP)] * 10) as fake:
        process = start(db, fake, "--concurrency", "1")
        assert locked.wait(60), "the last reply of the first attempt was never asked for"
        time.sleep(1.0)  # it is applied; its event and the attempt's end wait on the lock
        assert process.poll() is None
        kill(process)
        blocker[0].rollback()
        blocker[0].close()
        before, events_before = stored(db)
        assert [e.status for e in before] == ["active"]
        assert len(events_before) < TURNS  # the last turn never reached the file
        _, err = rerun(db, fake, "--concurrency", "1")
        check_played_once(db, before, events_before, fake, err)


def test_an_attempt_of_a_live_process_is_left_to_it(tmp_path):
    """Two commands on one database: the second leaves the first's running attempts
    alone (and plays no second copy of them) while the first lives."""
    db = tmp_path / "runs.db"
    with FakeOpenAI([Stall(30.0, NOOP)] * 2 + [NOOP] * 100) as fake:
        first = start(db, fake)
        wait_for_requests(fake, 2, first)
        second = start(db, fake)
        out, err = second.communicate(timeout=60)
        try:
            assert second.returncode == 0, err[-3000:]
            assert "2 attempt(s) are being played by another process" in err
            assert "2 attempt(s) to play" in err  # the two runs not started yet, only
            assert "left active by a process" not in err
            episodes, _ = stored(db)
            assert [e.status for e in episodes] == ["active", "active", "abandoned", "abandoned"]
        finally:
            kill(first)


@pytest.fixture(params=["in process (threading)", "gridstudy serve (gevent)"])
def agent_server(request, tmp_path) -> Iterator[tuple[str, str, Callable[[], tuple]]]:
    """A server of each kind: its URL, an agent token, and a reader of what it stored.
    ``gridstudy serve`` runs gevent, whose native threads wait differently: there every
    resume answered 500 while the in-process server passed."""
    if request.param.startswith("in process"):
        live = request.getfixturevalue("live_server")

        def stored_live():
            live.store.wait()
            with live.store.session() as session:
                return (session.exec(select(EpisodeRow).order_by(EpisodeRow.id)).all(),
                        session.exec(select(Event).order_by(Event.episode_id, Event.seq)).all())

        yield live.url, live.token(), stored_live
        return
    db = tmp_path / "served.db"
    token = agent_token(db)
    process, url = start_serve(db, log=tmp_path / "serve.log")

    def stored_served():
        time.sleep(1.0)  # past the server's flush window
        return stored(db)

    try:
        yield url, token, stored_served
    finally:
        process.terminate()
        process.wait(60)
        assert "Traceback" not in (tmp_path / "serve.log").read_text()


def agent_token(db: Path) -> str:
    """A new agent-API token on the database ``db`` (``gridstudy token create``)."""
    return subprocess.run([str(Path(sys.executable).parent / "gridstudy"), "token", "create",
                           "agents", "--db", str(db)], capture_output=True, text=True,
                          check=True).stdout.strip()


def through_server(url: str, token: str, *options: str,
                   turns: int = TURNS) -> Callable[[Any], subprocess.Popen]:
    """A starter of ``gridstudy agent run`` on two problems through the server at ``url``
    with ``options`` and ``turns`` an attempt, given the model stand-in."""

    def command(fake):
        env = {**os.environ, "OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test",
               "GRIDSTUDY_TOKEN": token}
        return subprocess.Popen(
            [str(Path(sys.executable).parent / "gridstudy"), "agent", "run", "--problems",
             "ant_trail/planning,cloud_burst/planning", "--model", "fake", *options,
             "--max-turns", str(turns), "--server", url, "--quiet"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    return command


def test_kill_while_playing_through_a_server(agent_server):
    """The same through a running server's agent API: the server keeps the attempts, the
    rerun finds those its killed client left active and continues them there."""
    url, token, stored_here = agent_server
    command = through_server(url, token, "--runs", "1", "--concurrency", "2")

    with FakeOpenAI([NOOP] * 5 + [Stall(30.0, NOOP)] * 10) as fake:
        process = command(fake)
        wait_for_requests(fake, 7, process)
        kill(process)
        before, events_before = stored_here()
        assert [e.status for e in before] == ["active", "active"]
        fake.script[:] = [NOOP] * 100
        fake.requests.clear()
        again = command(fake)
        out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err[-3000:]
    assert "2 attempt(s) were left active by a process that ended" in err
    after, events = stored_here()
    assert [e.id for e in after] == [e.id for e in before]  # continued, not replaced
    assert [e.status for e in after] == ["abandoned", "abandoned"]
    assert {(ev.episode_id, ev.seq, ev.raw_reply) for ev in events_before} <= \
        {(ev.episode_id, ev.seq, ev.raw_reply) for ev in events}
    assert len(fake.requests) == 2 * TURNS - len(events_before)


def both_at_once(start_command: Callable[[Any], subprocess.Popen]) -> tuple[list, FakeOpenAI]:
    """One command started twice, the second once the first is under way (launched
    twice by mistake, a scheduler's retry): the two processes' ``(returncode, out,
    err)``, and the model stand-in they shared."""
    with FakeOpenAI([Stall(0.05, NOOP)] * 400) as fake:
        first = start_command(fake)
        wait_for_requests(fake, 3, first)
        second = start_command(fake)
        outputs = [p.communicate(timeout=180) for p in (first, second)]
        ended = [(p.returncode, *output) for p, output in zip((first, second), outputs)]
    return ended, fake


def check_each_job_once(ended: list, fake: FakeOpenAI, episodes: list, jobs: int) -> None:
    for returncode, _, err in ended:
        assert returncode == 0, err[-3000:]
    assert len({(e.problem_id, e.info["run_index"]) for e in episodes}) == len(episodes) == jobs
    assert [e.status for e in episodes] == ["abandoned"] * jobs
    assert len(fake.requests) == jobs * TURNS  # no turn asked of the model twice
    left = sum(int(line.split()[0]) for _, out, _ in ended for line in out.splitlines()
               if "started meanwhile by another invocation of this batch" in line)
    assert left > 0  # the two met, and each job went to one of them


def test_two_invocations_at_once_play_each_job_once(tmp_path):
    """The same ``gridstudy agent run`` started twice on one database, the second a
    moment after the first: each job is played once, by one of them, and each says
    which it left to the other. Before, each played every job the other had not
    started when it listed them: ten attempts for six jobs, the model paid twice for
    four of them."""
    db = tmp_path / "runs.db"
    ended, fake = both_at_once(lambda fake: start(db, fake, "--runs", "4", "--concurrency", "1"))
    episodes, _ = stored(db)
    check_each_job_once(ended, fake, episodes, 8)


def test_two_invocations_at_once_through_a_server_play_each_job_once(agent_server):
    """The same through a running server's agent API: the server claims each run index
    for one client (409 for the other)."""
    url, token, stored_here = agent_server
    ended, fake = both_at_once(through_server(url, token, "--runs", "4", "--concurrency", "1"))
    episodes, _ = stored_here()
    check_each_job_once(ended, fake, episodes, 8)
