"""The pygame client, headless: posted keys and clicks play each challenge to its end,
and the recorded events are what replaying the same actions gives."""

from __future__ import annotations

import os
import signal

import pytest
from sqlmodel import select

from game_client.loop import GameLoop
from game_client.play import PygameClient
from game_client.sandbox import Sandbox
from records.models import EpisodeRow, Event
from records.recorder import EpisodeRecorder
from tasks.core import frame_hash
from tasks.worldtest.episode import Episode
from tests.game_client.conftest import CD, MFP, PLANNING


@pytest.fixture(autouse=True)
def headless(monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")


# frame -> what is posted before it: ("key", name), ("cell", x, y) or ("option", i)
SCRIPTS = {
    "mfp": (MFP, {0: ("cell", 1, 1), 1: ("key", "t"), 2: ("key", "right"), 3: ("key", "right"),
                  4: ("key", "right"), 5: ("key", "left"), 6: ("option", 1),
                  7: ("key", "return")},
            ["click 1 1", "go-to-test", "step", "step", "step", "rewind", "choose_option_1",
             "submit"], 1.0),
    "planning": (PLANNING, {0: ("key", "t"), 2: ("key", "right"), 3: ("key", "right"),
                            5: ("key", "down")},
                 ["go-to-test", "noop", "right", "right", "noop", "down"], 1.0),
    "cd": (CD, {0: ("key", "t"), 1: ("key", "right"), 2: ("key", "right"),
                3: ("key", "right"), 4: ("cell", 0, 4), 5: ("key", "f"), 6: ("key", "left"),
                7: ("key", "left"), 8: ("key", "return")},
           ["go-to-test", "right", "right", "right", "click 0 4", "found-change",
            "choose_frame_4", "choose_frame_3", "submit"], 1.0),
}


def post(client: PygameClient, what: tuple) -> None:
    kind, *args = what
    {"key": client.post_key, "cell": client.post_click,
     "option": client.post_option_click}[kind](*args)


def stored_events(store, episode_id):
    store.flush()
    with store.session() as session:
        events = session.exec(select(Event).where(Event.episode_id == episode_id)
                              .order_by(Event.seq)).all()
        row = session.get(EpisodeRow, episode_id)
    return events, row


@pytest.mark.parametrize("challenge", sorted(SCRIPTS))
def test_posted_input_plays_a_challenge_to_its_end(challenge, store):
    problem, script, expected, score = SCRIPTS[challenge]
    episode = Episode(problem)
    recorder = EpisodeRecorder(store, episode.problem)
    client = PygameClient(GameLoop(episode, recorder=recorder), scale=16, realtime=False)

    def before_frame(frame, client):
        if frame in script:
            post(client, script[frame])

    client.run(max_frames=len(expected) + 3, before_frame=before_frame)
    assert [s.action for s in client.loop.steps] == expected
    assert episode.done and episode.score == score

    events, row = stored_events(store, recorder.episode_id)
    assert [e.action for e in events] == expected
    assert [e.source for e in events] == ["auto" if a == "noop" else "input" for a in expected]
    assert (row.status, row.phase, row.score) == ("done", "done", score)
    replayed = Episode(problem)
    hashes = [frame_hash(replayed.apply(e.action).observation.frame) for e in events]
    assert [e.frame_hash for e in events] == hashes
    assert replayed.score == score


def test_the_goal_picture_stays_as_the_test_states_it_while_the_world_moves():
    """The window's goal beside the grid is the test's ``goal_grid`` (what the browser
    draws and a model is shown), not the live frame: it was drawn over the frame of the
    moment, so the walker moved in the goal picture as it did in the world."""
    import pygame

    seen = {}

    def before_frame(frame, client):
        if frame == 0:
            client.post_key("t")
        if frame in (2, 3):
            client.post_key("right" if frame == 2 else "down")
        if frame in (2, 5):
            rect = pygame.Rect(client.layout.goal_grid)
            seen[frame] = (pygame.image.tobytes(client.screen.subsurface(rect), "RGB"),
                           pygame.image.tobytes(client.screen.subsurface(client.layout.grid),
                                                "RGB"))

    client = PygameClient(GameLoop(Episode(PLANNING)), scale=16, realtime=False)
    client.run(max_frames=6, before_frame=before_frame)
    assert client.loop.steps[-1].phase == "test"
    (goal, grid), (goal_later, grid_later) = seen[2], seen[5]
    assert grid_later != grid and goal_later == goal


def test_closing_the_window_abandons_the_recorded_attempt(store):
    episode = Episode(PLANNING)
    recorder = EpisodeRecorder(store, episode.problem)
    client = PygameClient(GameLoop(episode, recorder=recorder), realtime=False)
    client.run(max_frames=5, before_frame=lambda f, c: f == 2 and c.post_key("escape"))
    events, row = stored_events(store, recorder.episode_id)
    assert [e.action for e in events] == ["noop", "noop"]
    assert (row.status, row.phase, row.score) == ("abandoned", "interaction", 0.0)


def test_pause_frame_step_and_speed_keys(store):
    client = PygameClient(GameLoop(Sandbox("test/walker")), realtime=False)
    keys = {0: "space", 1: "right", 2: ".", 3: "+", 4: "space"}
    client.run(max_frames=6, before_frame=lambda f, c: f in keys and c.post_key(keys[f]))
    assert [s.action for s in client.loop.steps] == ["right", "noop", "noop"]
    assert client.loop.fps == 9 and not client.loop.paused
    assert os.environ["SDL_VIDEODRIVER"] == "dummy"


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP],
                         ids=lambda number: signal.Signals(number).name)
def test_a_window_stopped_by_a_signal_records_the_signal_not_a_closed_window(store, number):
    """``kill``, Ctrl-C in the terminal or the terminal closing: SDL turned the first two
    into the window's own close, so the attempt said "the window was closed"."""
    episode = Episode(PLANNING)
    recorder = EpisodeRecorder(store, episode.problem)
    client = PygameClient(GameLoop(episode, recorder=recorder), realtime=False)
    before = signal.getsignal(number)
    client.run(max_frames=5, before_frame=lambda f, c: f == 2 and os.kill(os.getpid(), number))
    events, row = stored_events(store, recorder.episode_id)
    assert (row.status, row.info["reason"]) == ("abandoned", f"stopped by {signal.Signals(number).name}")
    assert len(events) == 2 and signal.getsignal(number) == before  # the handler is given back
