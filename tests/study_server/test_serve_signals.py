"""``gridstudy serve`` stopped by SIGTERM or Ctrl-C while people play: it exits, and
every tick it ran is in the database.

The real command in a subprocess (the default gevent mode, and threading), real
Socket.IO clients playing recorded preview sessions of a library problem, a real SQLite
file read after the process has gone.
"""

from __future__ import annotations

import signal
import sqlite3

import httpx
import pytest
from socketio.exceptions import SocketIOError as socketio_errors

from tests.conftest import Player, start_serve

PROBLEM = "tilt_box/planning"
PLAYERS = 8


def join_players(url: str, count: int, players: list, episodes: list) -> None:
    """Open ``count`` recorded preview sessions and join each with a socket client,
    appending them to ``players`` and ``episodes`` (so a caller can close what opened)."""
    for _ in range(count):
        opened = httpx.post(f"{url}/play/{PROBLEM}/session", params={"record": "1"},
                            timeout=10).json()
        player = Player(url, opened["token"]).connect()
        player.join()
        players.append(player)
        episodes.append(opened["episode_id"])


@pytest.mark.parametrize(("async_mode", "signum"),
                         [("gevent", signal.SIGTERM), ("gevent", signal.SIGINT),
                          ("threading", signal.SIGTERM)],
                         ids=["gevent-sigterm", "gevent-ctrl-c", "threading-sigterm"])
def test_a_signal_mid_play_stops_the_server_and_keeps_every_tick(tmp_path, async_mode, signum):
    db = tmp_path / "gridstudy.db"
    process, url = start_serve(db, async_mode, env={"GRIDSTUDY_PREVIEW": "open"})
    players, episodes = [], []
    try:
        join_players(url, PLAYERS, players, episodes)
        for key in ("right", "go-to-test", "left", "noop"):
            for player in players:
                player.send(key)
        for player in players:
            player.wait_ticks(8)
        process.send_signal(signum)
        assert process.wait(timeout=30) == 0, process.stderr.read().decode()[-2000:]
    finally:
        for player in players:
            player.close()
        if process.poll() is None:
            process.kill()
    seen = {episode: max(s["tick"] for s in p.states) for episode, p in zip(episodes, players)}
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT episode_id, COUNT(*), MAX(seq) FROM event GROUP BY episode_id").fetchall()
    stored = {episode: count for episode, count, _ in rows}
    assert set(stored) == set(episodes)
    assert all(count == top + 1 for _, count, top in rows)  # no gap in any episode
    # every tick a player was shown is stored (a few more may have run after)
    assert all(stored[e] >= seen[e] >= 8 for e in episodes), (stored, seen)


DRAIN_PLAYERS = 30


def test_sigterm_applies_or_stores_every_acknowledged_input(tmp_path):
    """30 players keep sending while the server gets SIGTERM: every input the server
    acknowledged as queued is in the database, applied (an event) or dropped with the
    reason the server stopped (a raw input)."""
    db = tmp_path / "gridstudy.db"
    process, url = start_serve(db, env={"GRIDSTUDY_PREVIEW": "open"})
    players, episodes, queued = [], [], {}
    try:
        join_players(url, DRAIN_PLAYERS, players, episodes)
        queued.update(dict.fromkeys(episodes, 0))
        for round_ in range(6):
            for player, episode in zip(players, episodes):
                for key in ("left", "right", "up"):
                    if player.send(key)["status"] == "queued":
                        queued[episode] += 1
            if round_ == 4:
                process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    except (OSError, TimeoutError, socketio_errors):
        pass  # the server went away mid-round: what it acknowledged is counted
    finally:
        for player in players:
            player.close()
        if process.poll() is None:
            process.kill()
    with sqlite3.connect(db) as connection:
        applied = dict(connection.execute(
            "SELECT episode_id, COUNT(*) FROM event WHERE source = 'input' GROUP BY episode_id"))
        dropped = dict(connection.execute(
            "SELECT episode_id, COUNT(*) FROM rawinput WHERE status = 'dropped' "
            "AND reason LIKE 'the server stopped%' GROUP BY episode_id"))
    stored = {e: applied.get(e, 0) + dropped.get(e, 0) for e in episodes}
    assert sum(queued.values()) > 300
    assert stored == queued
