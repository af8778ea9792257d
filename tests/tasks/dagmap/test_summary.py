"""The App. D memory summary says only what the observations said, organised."""

from __future__ import annotations

import random

from tasks.core import Observation
from tasks.dagmap import DagMapEnv
from tasks.dagmap.summary import Memory, memory_summary

R = {"name": "R0X1", "new": True, "goal": False, "prerequisites": [], "leads_to": ["B0X2"],
     "activated": True, "activated_now": True}
B = {"name": "B0X2", "new": True, "goal": False, "prerequisites": [["Q0X3", "R0X1"]],
     "leads_to": ["G0X0"], "activated": False, "activated_now": False}
G = {"name": "G0X0", "new": True, "goal": True, "prerequisites": [["B0X2"]], "leads_to": [],
     "activated": False, "activated_now": False}
HISTORY = [
    {"position": [0, 0], "action": None, "moved": False, "directions": ["down"], "node": None},
    {"position": [0, 1], "action": "down", "moved": True, "directions": ["up", "right"], "node": R},
    {"position": [1, 1], "action": "right", "moved": True, "directions": ["down", "left"], "node": B},
    {"position": [1, 1], "action": "right", "moved": False, "directions": ["down", "left"],
     "node": {**B, "new": False}},
]


def test_summary_of_a_short_history():
    assert memory_summary(HISTORY) == (
        "From your movements so far, coordinate system: [x, y] where down=y+1, right=x+1. "
        "You have not discovered the goal state yet. "
        "You have visited [0, 0], [0, 1], [1, 1]. "
        "You have not visited these cells yet, but you know you can pass through them: [1, 2]. "
        "You know you cannot pass through these cells: [-1, 0], [-1, 1], [0, -1], [0, 2], [1, 0], [2, 1]. "
        "You discovered R0X1 at [0, 1]. It is already activated. Once it is activated, you can next "
        "pursue B0X2. "
        "You discovered B0X2 at [1, 1]. It is not activated yet. To activate it, you should activate "
        "Q0X3 and R0X1 first. Once it is activated, you can next pursue G0X0. "
        "Activated states: R0X1. "
        "The discovered states whose prerequisites are already satisfied: none."
    )


def test_the_goal_is_named_once_discovered_and_ready_states_are_listed():
    later = HISTORY + [
        {"position": [1, 2], "action": "down", "moved": True, "directions": ["up"], "node": G},
        {"position": [1, 1], "action": "up", "moved": True, "directions": ["down", "left"],
         "node": {**B, "new": False, "prerequisites": [["R0X1"]]}},
    ]
    summary = memory_summary(later)
    assert "The goal state is G0X0." in summary
    assert "up=y-1, down=y+1, right=x+1." in summary
    assert summary.endswith("The discovered states whose prerequisites are already satisfied: B0X2.")


def test_summary_agrees_with_the_environment_it_summarises():
    env = DagMapEnv("medium-n8", map_seed=4)
    history: list[Observation] = [env.reset(0)]
    rng = random.Random(1)
    for _ in range(60):
        history.append(env.step(rng.choice(["up", "down", "left", "right", "noop"])))
        memory = Memory()
        for obs in history:
            memory.add(obs.info)
        progress = env.progress
        assert list(memory.visited) == list(progress.visited)
        assert memory.passable - memory.visited.keys() == progress.frontier
        assert set(memory.states) == set(progress.discovered)
        assert set(memory.activated) == set(progress.achieved)
        assert set(memory.ready()) == progress.pending()
    assert memory_summary(history) == memory_summary(obs.info for obs in history)
