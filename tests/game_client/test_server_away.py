"""The server an evaluation plays through goes away mid-batch (``kill -9``, then started
again, as a crash restarted by its service manager, or a deploy): ``gridstudy agent run
--server`` waits for it and goes on, and the record ends as if nothing had happened."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.standin import FakeOpenAI, Stall
from study_server.services import free_port
from tests.conftest import start_serve
from tests.game_client.test_crash import agent_token, kill, through_server
from tests.game_client.test_interrupt import NOOP, stored, wait_for_requests

TURNS = 20


@contextlib.contextmanager
def writes_held(db: Path) -> Iterator[None]:
    """Another connection holds the database's write lock: the server keeps what it
    answers in memory, unwritten (guarantee 1.4), until it is let go."""
    holder = sqlite3.connect(db, isolation_level=None, timeout=10)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def stored_turns(db: Path) -> int:
    with contextlib.closing(sqlite3.connect(db)) as connection:
        return connection.execute("SELECT count(*) FROM event WHERE parse_valid IS NOT NULL"
                                  ).fetchone()[0]


@pytest.mark.parametrize("async_mode", ["gevent", "threading"])
def test_a_server_killed_and_started_again_mid_evaluation_costs_it_nothing(tmp_path, async_mode):
    """The server is killed while it holds turns it answered but has not written, and
    started again 2 s later on the same port. The batch says it waits, goes on with every
    attempt where it stood, sends the turns the server lost from its own copy, and never
    asks the model for a reply twice. Before, every attempt it was playing ended in
    error at the first refused connection, each with a paid reply lost, the jobs not
    started yet failed, and the command ended without its summary."""
    db, port = tmp_path / "served.db", free_port()
    token = agent_token(db)
    server, url = start_serve(db, async_mode, port=port, log=tmp_path / "first.log")
    batch = None
    try:
        with FakeOpenAI([Stall(0.1, NOOP)] * 400) as fake:
            batch = through_server(url, token, "--runs", "2", "--concurrency", "2",
                                   turns=TURNS)(fake)
            wait_for_requests(fake, 6, batch)
            with writes_held(db):
                wait_for_requests(fake, len(fake.requests) + 10, batch)
                # at most two replies are still with the model and two on their way
                answered = len(fake.requests) - 4
                kill(server)
            assert stored_turns(db) < answered  # turns it answered died with it
            time.sleep(2.0)
            server, _ = start_serve(db, async_mode, port=port, log=tmp_path / "second.log")
            out, err = batch.communicate(timeout=240)
            asked = len(fake.requests)
    finally:
        if batch is not None and batch.poll() is None:
            kill(batch)
        server.terminate()
        server.wait(60)
    assert batch.returncode == 0, err[-3000:]
    assert f"The server at {url} failed" in err and "trying again for up to 5 min" in err
    assert f"The server at {url} answers again, after" in err
    assert "4 attempts (abandoned 4)" in out
    episodes, events = stored(db)
    assert len({(e.problem_id, e.info["run_index"]) for e in episodes}) == len(episodes) == 4
    assert [e.info["reason"] for e in episodes] == [f"no end after {TURNS} turns"] * 4
    for episode in episodes:
        seqs = [ev.seq for ev in events if ev.episode_id == episode.id]
        assert seqs == list(range(TURNS)), (episode.id, seqs)
    assert asked == 4 * TURNS  # no reply lost, none asked for twice
    assert "Traceback" not in (tmp_path / "second.log").read_text()


def test_ctrl_c_while_the_server_is_away_stops_the_batch_at_once(tmp_path):
    """Ctrl-C while the batch waits for its server stops it within the grace period, as
    when it waits for a model (guarantee 5.3), and a rerun once the server is back plays
    every job once."""
    db, port = tmp_path / "served.db", free_port()
    token = agent_token(db)
    server, url = start_serve(db, port=port, log=tmp_path / "first.log")
    command = through_server(url, token, "--runs", "2", "--concurrency", "2", turns=TURNS)
    try:
        with FakeOpenAI([Stall(0.1, NOOP)] * 400) as fake:
            batch = command(fake)
            wait_for_requests(fake, 6, batch)
            kill(server)
            time.sleep(1.0)
            batch.send_signal(signal.SIGINT)
            sent = time.monotonic()
            out, err = batch.communicate(timeout=60)
            took = time.monotonic() - sent
            assert batch.returncode == 130, err[-3000:]
            assert took < 8, f"the batch took {took:.1f} s to stop"
            assert "trying again for up to 5 min" in err and "stopped while waiting" in out
            assert "can be resumed: run the same command again" in out
            server, _ = start_serve(db, port=port, log=tmp_path / "second.log")
            fake.script[:] = [NOOP] * 400
            again = command(fake)
            out, err = again.communicate(timeout=240)
            assert again.returncode == 0, err[-3000:]
    finally:
        server.terminate()
        server.wait(60)
    episodes, events = stored(db)
    assert len({(e.problem_id, e.info["run_index"]) for e in episodes}) == len(episodes) == 4
    for episode in episodes:
        assert [ev.seq for ev in events if ev.episode_id == episode.id] == list(range(TURNS))


def test_a_server_that_never_answered_is_said_at_once_and_one_gone_for_good_after_the_wait(
        tmp_path):
    """A wrong address (a server that never answered) fails at once; a server that
    answered and then went for good fails after the client's patience, naming why."""
    from game_client.api_client import AgentAPIClient, AgentAPIError

    db, port = tmp_path / "served.db", free_port()
    token = agent_token(db)
    said: list[str] = []
    wrong = AgentAPIClient(f"http://127.0.0.1:{free_port()}", token, patience=60, say=said.append)
    began = time.monotonic()
    with pytest.raises(AgentAPIError, match="GET /runs/1/spending failed: .*refused"):
        wrong.spent(1)
    assert time.monotonic() - began < 5 and not said
    server, url = start_serve(db, port=port, log=tmp_path / "serve.log")
    client = AgentAPIClient(url, token, patience=3, say=said.append)
    try:
        run_id = client.create_run("scripted", None, {})
    finally:
        kill(server)
    began = time.monotonic()
    with pytest.raises(AgentAPIError, match=f"GET /runs/{run_id}/spending failed: .*refused"):
        client.spent(run_id)
    assert 3 <= time.monotonic() - began < 10
    assert said == [f"The server at {url} failed: [Errno 111] Connection refused; trying again "
                    "for up to 3 s (its attempts go on where they stood)."]
