"""``gridstudy serve`` stopped by SIGTERM, Ctrl-C or its terminal closing (SIGHUP) while
people play: it exits, and every tick it ran is in the database.

The real command in a subprocess (the default gevent mode, and threading), real
Socket.IO clients playing recorded preview sessions of a library problem, a real SQLite
file read after the process has gone.
"""

from __future__ import annotations

import os
import select
import signal
import sqlite3
import threading

import httpx
import pytest
from socketio.exceptions import SocketIOError as socketio_errors

from tests.conftest import Player, start_serve

PROBLEM = "tilt_box/planning"
PLAYERS = 8


class Terminal:
    """A pseudo-terminal for a server to run in; what it printed is read as it comes (a
    terminal whose output nobody reads stops its writer once full)."""

    def __init__(self) -> None:
        self._ours, self.side = os.openpty()
        self.output = ""
        self._closing = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        # a read blocked on the descriptor would keep it open past close(): no hang-up
        while not self._closing.is_set():
            if select.select([self._ours], [], [], 0.05)[0]:
                try:
                    chunk = os.read(self._ours, 4096)
                except OSError:  # nobody has the other side open any more
                    return
                self.output += chunk.decode(errors="replace")

    def close(self) -> None:
        """Hang up, as a terminal window closing or an SSH connection dropping does."""
        if self._closing.is_set():
            return
        self._closing.set()
        self._reader.join()
        os.close(self.side)
        os.close(self._ours)


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
                          ("gevent", signal.SIGHUP), ("threading", signal.SIGTERM),
                          ("threading", signal.SIGHUP)],
                         ids=["gevent-sigterm", "gevent-ctrl-c", "gevent-terminal-closed",
                              "threading-sigterm", "threading-terminal-closed"])
def test_a_signal_mid_play_stops_the_server_and_keeps_every_tick(tmp_path, async_mode, signum):
    """SIGHUP is sent the way it comes: the server runs in a pseudo-terminal, and the
    terminal is closed (an SSH connection dropped), after which its output goes nowhere.
    Left to its default, SIGHUP ended the server at once, as a ``kill -9`` does."""
    db = tmp_path / "gridstudy.db"
    terminal = Terminal() if signum == signal.SIGHUP else None
    process, url = start_serve(db, async_mode, env={"GRIDSTUDY_PREVIEW": "open"},
                               terminal=terminal and terminal.side)
    players, episodes = [], []
    try:
        join_players(url, PLAYERS, players, episodes)
        for key in ("right", "go-to-test", "left", "noop"):
            for player in players:
                player.send(key)
        for player in players:
            player.wait_ticks(8)
        if terminal:
            terminal.close()
        else:
            process.send_signal(signum)
        said = terminal.output if terminal else process.stderr.read().decode()
        assert process.wait(timeout=30) == 0, said[-2000:]
    finally:
        for player in players:
            player.close()
        if process.poll() is None:
            process.kill()
        if terminal:
            terminal.close()
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
