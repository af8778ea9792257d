"""The pygame client, headless, on five library programs modelled on published examples
(gravity, paint, sokoban, particles, magnets): posted keys and a click are applied one per
tick and change the frame, then idle ticks apply noops."""

from __future__ import annotations

import pytest

from game_client.loop import GameLoop
from game_client.play import PygameClient
from tasks import registry
from tasks.worldtest.episode import Episode
from tests.e2e.test_library_play import LIBRARY_PROBLEMS
from tests.game_client.test_play import post


@pytest.fixture(autouse=True)
def headless(monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")


@pytest.mark.parametrize("problem_id", LIBRARY_PROBLEMS)
def test_a_library_program_plays_in_the_pygame_client(problem_id):
    episode = Episode(registry.get_problem(problem_id))
    start = episode.observation.frame
    width, height = episode.env.size
    centre = (width // 2, height // 2)
    script = {0: ("key", "left"), 1: ("key", "up"), 2: ("cell", *centre)}
    client = PygameClient(GameLoop(episode), scale=16, realtime=False)

    def before_frame(frame, client):
        if frame in script:
            post(client, script[frame])

    assert client.run(max_frames=5, before_frame=before_frame) == 5
    assert [s.action for s in client.loop.steps] == [
        "left", "up", f"click {centre[0]} {centre[1]}", "noop", "noop"]
    assert [s.index for s in client.loop.steps] == [0, 1, 2, 3, 4]
    assert (episode.phase, episode.done) == ("interaction", False)
    assert episode.observation.frame != start
