"""A fifth challenge, defined only here, plays everywhere a built-in one does.

``paint`` is a toy: in its test the participant changes the world and presses *I am
done*; the score is 1 when the final frame differs from the first. It declares what any
challenge declares (tasks.worldtest.challenge.Challenge) and nothing else in the project
knows it: the episode, the in-process agent runner, the agent API, the socket protocol,
the browser client, the model's prompt, the quiz and the report all read the registry.
"""

from __future__ import annotations

from typing import Any

import pytest

from analysis import tables
from analysis.load import load
from bench.standin import FakeOpenAI
from consent import quiz
from game_client.agents import ScriptedAgent
from game_client.api_client import AgentAPIClient, run_remote_episode
from game_client.bridge.agent import LLMAgent
from game_client.bridge.provider import ChatProvider
from game_client.runner import run_episode
from tasks import registry
from tasks.core import Observation
from tasks.worldtest import Episode, Problem
from tasks.worldtest.challenge import (
    DONE,
    Challenge,
    Question,
    Result,
    TestPhase,
    env_verbs,
    register,
    unregister,
)


class Paint(TestPhase):
    """The environment from its first frame; ``submit`` scores whether it changed."""

    def start(self) -> Observation:
        self.env = self.make_env(self.problem.env_id)
        self.first = self.observation = self.env.reset(self.problem.seed)
        self.steps = 0
        return self.observation

    def allowed_verbs(self, phase: str) -> tuple[str, ...]:
        return (*env_verbs(self.env), "submit", "quit")

    def apply(self, action) -> Result:
        if action.verb == "submit":
            return Result(self.observation, DONE, float(self.observation.frame != self.first.frame))
        if action.verb == "quit":
            return Result(self.observation, DONE, 0.0)
        self.observation = self.env.step(action)
        self.steps += 1
        return Result(self.observation)

    def view(self, phase: str) -> dict[str, Any]:
        return {"kind": "paint", "steps": self.steps}

    def outcome(self) -> dict[str, Any]:
        return {"steps": self.steps}


PAINT = Challenge(
    name="paint",
    title="painting",
    phase=Paint,
    goal="leave the world different from how it started",
    how="In the test, change something, then press I am done.",
    model_task="change the grid in any way you like, then take the action submit.",
    questions=(Question("paint-goal", "What do you do in the painting test?",
                        ("Change the world, then say I am done", "Nothing"), 0),),
    buttons={"submit": "I am done"},
    keys={"return": "submit"},
)
PLAY = ["right", "go-to-test", "click 1 1", "submit"]


@pytest.fixture
def paint(test_problems):
    register(PAINT)
    problem = Problem("test/paint", "test/walker", "paint", 0)
    registry.add_problem(problem, replace=True)
    yield problem
    registry.unregister(problem_id=problem.id)
    unregister(PAINT.name)


def test_a_problem_of_an_unregistered_challenge_is_refused():
    with pytest.raises(ValueError, match="unknown challenge 'paint'; expected one of mfp, planning, cd, explore"):
        Problem("test/paint", "test/walker", "paint", 0)


def test_the_episode_plays_it_and_shows_its_controls(paint):
    episode = Episode(paint)
    steps = [episode.apply(action) for action in PLAY]
    assert [s.next_phase for s in steps] == ["interaction", "test", "test", "done"]
    assert (episode.score, episode.outcome()["test_steps"]) == (1.0, 1)
    untouched = Episode(paint)
    untouched.apply("go-to-test")
    view = untouched.view()
    assert (view["test"], view["buttons"], view["keys"]) == (
        {"kind": "paint", "steps": 0}, [["submit", "I am done"]], {"return": "submit"})
    assert untouched.apply("submit").score == 0.0


def test_the_quiz_and_the_models_prompt_read_it(paint):
    assert [q.id for q in quiz.questions_for(["paint"])][-1] == "paint-goal"
    replies = [f"<action>{a}</action>" for a in PLAY]
    with FakeOpenAI(replies) as fake:
        result = run_episode(LLMAgent(ChatProvider("fake", base_url=fake.base_url)), paint)
    assert (result.status, result.score, result.turns) == ("done", 1.0, 4)
    first, after_test = (r["messages"][-1]["content"] for r in fake.requests[0:3:2])
    assert "In the test phase, change the grid in any way you like" in first
    assert "Now change the grid in any way you like" in after_test


def test_the_runner_and_the_agent_api_play_it(paint, live_server):
    local = run_episode(ScriptedAgent(PLAY), paint, store=live_server.store)
    api = AgentAPIClient(live_server.url, live_server.token())
    remote = run_remote_episode(ScriptedAgent(PLAY), paint.id, api,
                                api.create_run("scripted", None, {}))
    assert (local.status, local.score) == (remote.status, remote.score) == ("done", 1.0)
    dataset = load(live_server.db_path)
    rows = tables.task_type_scores(dataset)
    assert {(row["challenge"], row["score"]) for row in rows} == {("paint", 1.0)}


def test_the_socket_protocol_plays_it(paint, live_server, player):
    client = player(paint.id)
    for action in PLAY:
        assert client.send(action)["status"] == "queued"
        client.wait_ticks(1)
    done = client.wait_for(lambda s: s["phase"] == "done")
    assert done["score"] == 1.0
    test = client.wait_for(lambda s: s["phase"] == "test")
    assert test["buttons"] == [["submit", "I am done"]]
    assert [e.action for e in live_server.events() if e.source == "input"] == PLAY


def test_the_browser_shows_its_button(paint, live_server, page):
    page.goto(f"{live_server.url}/play/{paint.id}?record=1")
    page.wait_for_selector("section.gs-game[data-phase=interaction]")
    page.get_by_role("button", name="Go to test", exact=True).click()
    page.wait_for_selector("section.gs-game[data-phase=test]")
    page.get_by_role("button", name="I am done", exact=True).click()
    page.wait_for_selector("section.gs-game[data-phase=done]")
    assert page.locator("[data-gs=score]").text_content() == "0"
