"""The pygame client joined to a live server: keys sent as inputs, the server's frames
drawn, the stored events those of the same actions replayed."""

from __future__ import annotations

import signal
import sqlite3
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from game_client.play import PygameClient
from game_client.remote import JoinError, RemoteLoop, RemoteSession
from tasks.core import frame_hash
from tasks.worldtest.episode import Episode
from tests.conftest import start_serve, wait_until

PROBLEM = "ant_trail/planning"


@pytest.fixture(autouse=True)
def headless(monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")


def test_remote_play_reaches_the_end_and_is_recorded(live_server, test_problems):
    opened = live_server.new_session("test/rt-walker-cd")
    session = RemoteSession(live_server.url, opened["token"])
    assert session.join()["phase"] == "interaction"
    client = PygameClient(RemoteLoop(session), scale=16, realtime=True)
    keys = ["t", "right", "right", "right", ("cell", 0, 4), "f", "left", "left", "return"]

    def before_frame(frame, client):
        # one input every 6 redraws (30 fps): slower than the server's 8 ticks a second
        if frame % 6 == 5 and frame // 6 < len(keys):
            key = keys[frame // 6]
            client.post_click(*key[1:]) if isinstance(key, tuple) else client.post_key(key)
        if client.loop.done:
            client.running = False

    client.run(max_frames=300, before_frame=before_frame)
    state = session.state
    assert state["phase"] == "done"
    events = live_server.events(opened["episode_id"])
    applied = [e.action for e in events if e.source == "input"]
    last = sum(e.phase == "test" and e.action != "found-change" for e in events)
    assert applied == ["go-to-test", "right", "right", "right", "click 0 4", "found-change",
                       f"choose_frame_{last}", f"choose_frame_{last - 1}", "submit"]
    replayed = Episode.replay(test_problems["cd"], [e.action for e in events])
    assert replayed.score == state["score"] > 0.19  # how late depends on the clock
    # the view the client rebuilt from the server's changes is the recorded one
    assert replayed.observation.frame == state["frame"]
    assert frame_hash(state["frame"]) == events[-1].frame_hash
    assert state["version"] > 8  # many states, each but the first a change


def test_an_unknown_join_code_is_refused(live_server):
    with pytest.raises(JoinError, match="unknown or missing session token"):
        RemoteSession(live_server.url, "no-such-code").join()


def test_a_window_whose_server_was_killed_joins_it_again_when_it_is_back(tmp_path):
    """``kill -9`` of the server under a pygame player, then a restart on the same address:
    the window reconnects by itself and joins its game again (the server rebuilds it from
    the record by its token, so it goes on from the last tick stored, at most the writer's
    flush window behind the frame shown); the key pressed before the kill was kept once,
    and keys move the game again. Keys pressed while the server is away do nothing, and
    the window says so; they are told to the server once it is back and stored as never
    applied. Before, the first such key closed the window with a traceback."""

    env = {"GRIDSTUDY_PREVIEW": "open"}
    process, url = start_serve(tmp_path / "g.db", log=tmp_path / "first.log", env=env)
    port = int(url.rsplit(":", 1)[1])
    try:
        opened, session, loop = playing_window(url)
        loop.enqueue("right")
        wait_until(lambda: loop.view()["tick"] >= 8, 30, "the first ticks")  # the key a second ago
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        shown = loop.view()
        wait_until(lambda: not session.joined, 10, "the connection lost")
        for key in ("left", "up"):
            assert loop.enqueue(key)
        assert "connection lost: keys do nothing" in loop.status_line()
        process, _ = start_serve(tmp_path / "g.db", log=tmp_path / "second.log", env=env,
                                 port=port)
        wait_until(lambda: loop.view()["tick"] > shown["tick"], 30, "ticks after the restart")
        assert session.sio.connected
        ticks, actions = zip(*stored_steps(tmp_path / "g.db", opened["episode_id"]))
        assert list(ticks) == list(range(len(ticks)))  # one game, no tick twice, no hole
        assert actions.count("right") == 1 and "left" not in actions
        wait_until(lambda: unsent_rows(tmp_path / "g.db") == [("left", "dropped"),
                                                              ("up", "dropped")],
                   10, "the keys pressed while the server was away")
        assert "remote" in loop.status_line()
        before = loop.view()["tick"]
        loop.enqueue("go-to-test")
        wait_until(lambda: loop.view()["phase"] == "test", 30, "the key after the restart")
        assert loop.view()["tick"] > before
    finally:
        session.close()
        process.kill()
        process.wait(10)


def unsent_rows(db: Path) -> list[tuple[str, str]]:
    from tasks.worldtest.tick import UNSENT

    with closing(sqlite3.connect(db)) as raw:
        return raw.execute("SELECT text, status FROM rawinput WHERE reason = ? ORDER BY id",
                           (UNSENT,)).fetchall()


def test_a_window_whose_game_another_server_holds_joins_again_until_it_can(tmp_path):
    """``kill -9`` under a pygame player, and before its server is back another worker
    (on another host) takes the game's lease and keeps beating without ever handing it
    over: the restarted server's join waits for it, then refuses saying ``retry``. The
    window joins again by itself every two seconds and gets its game once that worker
    goes silent. Before, it stood still for good at the first refusal (so did a page)."""
    import threading

    from sqlalchemy import create_engine

    from study_server.cluster import HELD_ELSEWHERE, Cluster

    db = tmp_path / "g.db"
    env = {"GRIDSTUDY_PREVIEW": "open"}
    process, url = start_serve(db, log=tmp_path / "first.log", env=env)
    port = int(url.rsplit(":", 1)[1])
    stop = threading.Event()
    try:
        opened, session, loop = playing_window(url)
        wait_until(lambda: loop.view()["tick"] >= 4, 30, "the first ticks")
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        shown = loop.view()
        wedged = Cluster(create_engine(f"sqlite:///{db}"), worker_id="elsewhere:1:1")
        wedged.beat()
        assert wedged.take(opened["token"], wedged.lease(opened["token"]).worker)

        def beating() -> None:
            while not stop.wait(0.5):
                wedged.beat()

        threading.Thread(target=beating, daemon=True).start()
        process, _ = start_serve(db, log=tmp_path / "second.log", env=env, port=port)
        wait_until(lambda: any(r.get("retry") for r in session.refusals), 30,
                   "a refusal saying retry")
        assert {r["reason"] for r in session.refusals} == {HELD_ELSEWHERE}
        assert loop.view()["tick"] == shown["tick"]
        stop.set()  # the other worker goes silent: taken for dead after 4 s
        wait_until(lambda: loop.view()["tick"] > shown["tick"], 30, "ticks once it did")
        ticks, _ = zip(*stored_steps(db, opened["episode_id"]))
        assert list(ticks) == list(range(len(ticks)))
    finally:
        stop.set()
        session.close()
        process.kill()
        process.wait(10)


def playing_window(url: str) -> tuple[dict, RemoteSession, RemoteLoop]:
    """A recorded attempt of ``PROBLEM`` opened at ``url``, and a window's session joined
    to it: ``(opened, session, loop)``."""
    opened = httpx.post(f"{url}/play/{PROBLEM}/session", params={"record": "1"},
                        timeout=10).json()
    session = RemoteSession(url, opened["token"])
    session.join()
    return opened, session, RemoteLoop(session)


def stored_steps(db: Path, episode_id: int) -> list[tuple[int, str]]:
    """The tick and action of each of an attempt's applied steps, in order, read from the
    file."""
    with closing(sqlite3.connect(db, timeout=30)) as raw:
        return raw.execute("SELECT tick, action FROM event WHERE episode_id = ? AND applied "
                           "ORDER BY seq", (episode_id,)).fetchall()


def test_a_window_says_when_its_game_stands_still_and_keys_do_nothing(test_problems):
    """The server's store behind (a full disk): the state the window is sent says
    ``paused``, and its status line says why and that keys do nothing, as the page does
    (the server drops keys pressed meanwhile, ``tasks.worldtest.tick.STOOD_STILL``)."""
    from study_server.session import GameSession

    game = GameSession.create(test_problems["cd"])
    session = RemoteSession("http://127.0.0.1:9", game.token)
    loop = RemoteLoop(session)
    session._on_state(game.whole_state())  # what a join is answered with
    assert loop.status_line().split(" | ")[2] == "remote"
    game.paused = "Saving your progress, one moment..."
    session._on_state(game.whole_state())
    assert loop.status_line().endswith(" | Saving your progress, one moment... Keys do nothing")
