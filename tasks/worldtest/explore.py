"""Exploration (000): play a task-DAG map from its start to its goal within its budget.

There is no separate test phase: the episode starts in the test phase, and the
environment ends it (goal reached, or budget spent) and says which in
``info["success"]``. Problem ``params``: nothing required.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks import registry
from tasks.core import Action, Observation
from tasks.worldtest.challenge import (
    DONE,
    GIVE_UP,
    SUBGOAL,
    TASK_DAG_PROMPT,
    Challenge,
    Question,
    Result,
    TestPhase,
    env_verbs,
    register,
)
from tasks.worldtest.problem import Problem


class Explore(TestPhase):
    """A task-DAG map played from its start: the environment ends the episode (goal
    reached, or budget spent) and says which in ``info["success"]``."""

    has_interaction_phase = False

    def start(self) -> Observation:
        self.env = self.make_env(self.problem.env_id)
        self.observation = self.env.reset(self.problem.seed)
        return self.observation

    def allowed_verbs(self, phase: str) -> tuple[str, ...]:
        return (*env_verbs(self.env), "quit")

    def apply(self, action: Action) -> Result:
        if action.verb == "quit":
            return Result(self.observation, DONE, 0.0)
        self.observation = self.env.step(action)
        if self.observation.done:
            return Result(self.observation, DONE, float(bool(self.observation.info.get("success"))))
        return Result(self.observation)

    def view(self, phase: str) -> dict[str, Any]:
        return {"kind": "explore"}

    def outcome(self) -> dict[str, Any]:
        info = self.observation.info
        return {"success": bool(info.get("success")), "achieved": list(info.get("achieved", []))}


def _oracle(problem: Problem, limits: Mapping[str, Any]) -> list[str]:
    """The map's own solution: every prerequisite, then the goal."""
    from tasks.dagmap.oracle import solve

    env = registry.make(problem.env_id)
    env.reset(problem.seed)
    return solve(env.map)


CHALLENGE = register(Challenge(
    name="explore",
    title="exploration",
    phase=Explore,
    goal="reach a goal",
    how="Explore the map and reach the goal before the step budget runs out.",
    buttons={"quit": GIVE_UP},
    guide={"test": ("Find your way to the goal. Each arrow key is one step, and your steps "
                    "are limited: the game ends when you reach the goal or run out of steps.")},
    model_task="you explore a map from its start and reach its goal within the step budget.",
    prompt_style=TASK_DAG_PROMPT,
    questions=(
        Question(
            "explore-goal",
            "What is the goal of an exploration map?",
            ("Reach the goal within the step budget", "Paint every cell", "Find a hidden change"),
            0,
        ),
    ),
    oracle=_oracle,
    progress=SUBGOAL,
    scored_by_steps=True,
))
