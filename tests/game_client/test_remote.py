"""The pygame client joined to a live server: keys sent as inputs, the server's frames
drawn, the stored events those of the same actions replayed."""

from __future__ import annotations

import pytest

from game_client.play import PygameClient
from game_client.remote import JoinError, RemoteLoop, RemoteSession
from tasks.core import frame_hash
from tasks.worldtest.episode import Episode


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
