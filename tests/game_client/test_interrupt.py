"""Ctrl-C on a real ``gridstudy agent run`` process: the first stops the batch within
seconds and leaves every attempt interrupted (none active); a second ends it at once; a
rerun of the same command resumes the interrupted attempts from their last turn."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlmodel import select

from bench.standin import FakeOpenAI, Stall
from records.models import EpisodeRow, Event
from records.store import Store

PROBLEMS = "ant_trail/planning,cloud_burst/planning"
NOOP = "<action>noop</action>"


def command(db, *extra):
    return [str(Path(sys.executable).parent / "gridstudy"), "agent", "run", "--problems", PROBLEMS,
            "--model", "fake", "--runs", "2", "--concurrency", "2", "--max-turns", "8",
            "--db", str(db), "--quiet", *extra]


def start(db, fake, *extra):
    env = {**os.environ, "OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
    return subprocess.Popen(command(db, *extra), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for_requests(fake, count, process, timeout=60.0):
    deadline = time.monotonic() + timeout
    while len(fake.requests) < count:
        assert process.poll() is None, process.communicate()[1][-2000:]
        assert time.monotonic() < deadline, f"only {len(fake.requests)} requests arrived"
        time.sleep(0.05)


def interrupt(process, *signals):
    """Send the signals 0.3 s apart; the process's output and the seconds it took to
    end after the last one."""
    for index, number in enumerate(signals):
        if index:
            time.sleep(0.3)
        process.send_signal(number)
    sent = time.monotonic()
    out, err = process.communicate(timeout=30)
    return out, err, time.monotonic() - sent


def stored(db):
    with Store(str(db)) as store, store.session() as session:
        episodes = session.exec(select(EpisodeRow).order_by(EpisodeRow.id)).all()
        events = session.exec(select(Event).order_by(Event.episode_id, Event.seq)).all()
    return episodes, events


def test_the_first_ctrl_c_stops_the_batch_and_a_rerun_resumes(tmp_path):
    db = tmp_path / "runs.db"
    with FakeOpenAI([Stall(0.4, NOOP)] * 200) as fake:
        process = start(db, fake)
        wait_for_requests(fake, 5, process)
        out, err, took = interrupt(process, signal.SIGINT)
        assert process.returncode == 130, err[-2000:]
        assert took < 8, f"the batch took {took:.1f} s to stop"
        assert "Stopping: no new attempts" in err
        assert "can be resumed: run the same command again" in out
        episodes, events = stored(db)
        assert episodes and all(e.status == "interrupted" for e in episodes)
        assert all(e.info["resumable"] and "operator" in e.info["reason"] for e in episodes)
        played = {e.id: sum(ev.episode_id == e.id for ev in events) for e in episodes}
        assert sum(played.values()) >= 3

        fake.script[:] = [NOOP] * 200  # the same endpoint answers at once now
        fake.requests.clear()
        process = start(db, fake)
        out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err[-2000:]
    resumed = len(episodes)
    assert f"{4} attempt(s) to play, {resumed} of them resumed" in err
    episodes_after, events_after = stored(db)
    assert len(episodes_after) == 4
    assert all(e.status == "abandoned" and "no end after 8 turns" in e.info["reason"]
               for e in episodes_after)
    for episode in episodes:
        seqs = [ev.seq for ev in events_after if ev.episode_id == episode.id]
        assert seqs == list(range(8))  # continued, not restarted
        assert episode.id in {e.id for e in episodes_after}
    # the first request of a resumed attempt carries its recorded turns: the conversation
    sent = [[m["content"] for m in r["messages"] if m["role"] == "user"] for r in fake.requests]
    for episode in episodes:
        recorded = [ev.prompt for ev in events_after if ev.episode_id == episode.id]
        k = played[episode.id]
        assert recorded[:k + 1] in sent  # turns 0..k-1 as history, turn k asked now


def test_a_second_ctrl_c_stops_at_once(tmp_path):
    db = tmp_path / "runs.db"
    with FakeOpenAI([NOOP, NOOP, *[Stall(30.0, NOOP)] * 50]) as fake:
        process = start(db, fake)
        wait_for_requests(fake, 4, process)
        time.sleep(0.3)
        out, err, took = interrupt(process, signal.SIGINT, signal.SIGINT)
    assert process.returncode == 130, err[-2000:]
    assert took < 3, f"the second Ctrl-C took {took:.1f} s"
    assert "Traceback" not in err
    episodes, _ = stored(db)
    assert episodes and [e.status for e in episodes] == ["interrupted"] * len(episodes)


@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGHUP],
                         ids=["sigterm", "terminal-closed"])
def test_sigterm_stops_like_ctrl_c(tmp_path, signal_number):
    db = tmp_path / "runs.db"
    with FakeOpenAI([Stall(0.3, NOOP)] * 100) as fake:
        process = start(db, fake)
        wait_for_requests(fake, 3, process)
        out, err, _ = interrupt(process, signal_number)
    assert process.returncode == 130, err[-2000:]
    episodes, _ = stored(db)
    assert episodes and all(e.status == "interrupted" for e in episodes)
