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
            self.gave_up = True
            return Result(self.observation, DONE, 0.0)
        self.observation = self.env.step(action)
        if self.observation.done:
            return Result(self.observation, DONE, float(bool(self.observation.info.get("success"))))
        return Result(self.observation)

    gave_up = False

    def view(self, phase: str) -> dict[str, Any]:
        """The moves taken and the budget, whether the goal was found, and how the map
        ended: what a person is shown beside the map (a model's text keeps the budget
        hidden, as in 000)."""
        info = self.observation.info
        ending = None
        if self.gave_up:
            ending = "gave-up"
        elif self.observation.done:
            ending = "goal" if info.get("success") else "budget"
        return {"kind": "explore", "steps": info.get("steps", 0), "budget": info.get("budget"),
                "goal_found": "goal" in info, "achieved": len(info.get("achieved", ())),
                "ending": ending}

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
    guide={"test": ("You are the blue square; the map shows itself as you walk (white: where "
                    "you have been, grey: floor "
                    "you can reach, brown: wall). Coloured squares are tasks: step on one to "
                    "do it once the tasks it needs are done (orange: not yet possible, yellow: "
                    "possible, green: done). Reach the goal (red, then pink when possible, "
                    "cyan when done) before your moves run out. Each arrow key is one move.")},
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
