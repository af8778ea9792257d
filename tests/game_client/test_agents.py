"""Random, scripted and planner agents, and a model on a task-DAG map."""

from __future__ import annotations

import json
import random

import pytest

from bench.standin import FakeOpenAI
from game_client.agents import PlannerAgent, RandomAgent, ScriptedAgent, random_env_action
from game_client.bridge.agent import LLMAgent
from game_client.bridge.provider import ChatProvider
from game_client.runner import run_episode
from tasks import registry
from tests.game_client.conftest import CD, MFP, PLANNING, PROBLEMS


def test_random_actions_are_uniform_over_the_six_types_and_cells():
    rng = random.Random(0)
    draws = [random_env_action(rng, ["noop", "up", "down", "left", "right", "click"], (4, 3))
             for _ in range(6000)]
    kinds = {k: sum(d.split()[0] == k for d in draws) for k in ("click", "up", "down", "left", "right", "noop")}
    assert all(900 < n < 1100 for n in kinds.values())
    cells = {tuple(map(int, d.split()[1:])) for d in draws if d.startswith("click")}
    assert cells == {(x, y) for x in range(4) for y in range(3)}
    assert random_env_action(rng, ["up", "quit"], (4, 3)) == "up"
    with pytest.raises(ValueError, match="no random action is allowed now"):
        random_env_action(rng, ["step", "quit"], (4, 3))


@pytest.mark.parametrize("challenge", sorted(PROBLEMS))
def test_the_random_agent_finishes_every_challenge_the_same_way_for_a_seed(challenge):
    problem = PROBLEMS[challenge]
    first = run_episode(RandomAgent(seed=7, interaction_steps=5), problem, max_turns=2000)
    again = run_episode(RandomAgent(seed=7, interaction_steps=5), problem, max_turns=2000)
    assert first.status == "done" and first.invalid == 0
    assert (first.turns, first.score) == (again.turns, again.score)


def test_a_scripted_agent_replays_and_then_quits():
    result = run_episode(ScriptedAgent(["go-to-test", "right"]), PLANNING)
    assert (result.status, result.score, result.turns) == ("done", 0.0, 3)
    bad = run_episode(ScriptedAgent(["fly", "fly"]), MFP, max_invalid=2)
    assert (bad.status, bad.invalid) == ("abandoned", 2)


def test_the_planner_solves_planning_by_a_shortest_plan():
    agent = PlannerAgent()
    result = run_episode(agent, PLANNING)
    assert agent.plan[0] == "go-to-test" and sorted(agent.plan[1:]) == ["down", "right", "right"]
    assert (result.status, result.score, result.turns) == ("done", 1.0, 4)
    with pytest.raises(ValueError, match="the planner plays planning and explore problems, not cd"):
        PlannerAgent().start(CD)


def test_the_planner_reaches_the_goal_of_a_task_dag_map():
    result = run_episode(PlannerAgent(), registry.get_problem("dagmap/low-n4"))
    assert (result.status, result.score) == ("done", 1.0)


def test_a_model_plays_a_task_dag_map_with_json_replies_and_the_memory_summary():
    problem = registry.get_problem("dagmap/low-n4")
    planner = PlannerAgent()
    planner.start(problem)
    replies = ["```json\n{\"action\": \"sideways\"}\n```",
               *(lambda messages, m=m: json.dumps({"action": m}) for m in planner.plan)]
    with FakeOpenAI(replies) as fake:
        provider = ChatProvider("fake", base_url=fake.base_url)
        result = run_episode(LLMAgent(provider, prompt_variant="exploration", summary=True), problem)
    assert (result.status, result.score, result.invalid) == ("done", 1.0, 1)
    assert result.turns == len(planner.plan) + 1
    system = fake.requests[0]["messages"][0]["content"]
    assert "Favour exploration" in system and "summary of what you have learnt" in system
    second = fake.requests[1]["messages"][-1]["content"]
    assert second.startswith("Your previous reply was not applied, and you did not move: the reply names 'sideways'")
    assert "OBSERVATION: You are at" in second and "You have visited" in second
