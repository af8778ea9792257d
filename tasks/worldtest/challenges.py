"""The test phases of the WorldTest challenges (002 App. C), one class each.

A test phase owns what happens after ``go-to-test``: which verbs are allowed, what each
does, and the score. ``noop`` is allowed in every phase that is not over, because a
real-time session applies it on every tick without input.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tasks.core import Action, GridEnv, Observation, masked, region
from tasks.worldtest.problem import Problem
from tasks.worldtest.scoring import cd_score

TEST, SELECT, DONE = "test", "select", "done"
EnvFactory = Callable[[str], GridEnv]


@dataclass
class Result:
    observation: Observation
    next_phase: str | None = None
    score: float | None = None


class TestPhase:
    """Base class: a challenge's test phase."""

    has_interaction_phase = True

    def __init__(self, problem: Problem, make_env: EnvFactory) -> None:
        self.problem = problem
        self.make_env = make_env
        self.params = problem.params

    def start(self) -> Observation:
        raise NotImplementedError

    def allowed_verbs(self, phase: str) -> tuple[str, ...]:
        raise NotImplementedError

    def apply(self, action: Action) -> Result:
        raise NotImplementedError

    def choice_count(self, verb: str) -> int:
        return 0

    def view(self, phase: str) -> dict[str, Any]:
        return {}

    def outcome(self) -> dict[str, Any]:
        """What the episode's record keeps about how this test went (JSON values)."""
        return {}


def _env_verbs(env: GridEnv) -> tuple[str, ...]:
    return tuple(env.available_actions())


# -- masked frame prediction ----------------------------------------------------------------


class MaskedFramePrediction(TestPhase):
    """Step and rewind through a recorded trajectory whose last frames are masked, choose
    one of six options for the masked region of the final frame, submit. Score 1 iff the
    chosen option is the correct one."""

    def __init__(self, problem: Problem, make_env: EnvFactory) -> None:
        super().__init__(problem, make_env)
        self.actions: list[str] = list(self.params["actions"])
        self.mask = [tuple(cell) for cell in self.params["mask"]]
        self.masked_from = int(self.params.get("masked_from", len(self.actions)))
        self.options = [tuple(option) for option in self.params["options"]]
        self.answer = int(self.params["answer"])
        self.frames: list[list[list[str]]] = []
        self.position = 0
        self.chosen: int | None = None

    def start(self) -> Observation:
        env = self.make_env(self.problem.env_id)
        self.frames = [env.reset(self.problem.seed).frame]
        self.frames += [env.step(action).frame for action in self.actions]
        self.position = 0
        return self._observation()

    @property
    def length(self) -> int:
        """Index of the final frame (the trajectory has ``length + 1`` frames)."""
        return len(self.actions)

    def allowed_verbs(self, phase: str) -> tuple[str, ...]:
        verbs = ["noop"]
        if self.position < self.length:
            verbs.append("step")
        if self.position > 0:
            verbs.append("rewind")
        verbs.append("choose_option")
        if self.chosen is not None:
            verbs.append("submit")
        verbs.append("quit")
        return tuple(verbs)

    def choice_count(self, verb: str) -> int:
        return len(self.options) if verb == "choose_option" else 0

    def apply(self, action: Action) -> Result:
        verb = action.verb
        if verb == "step":
            self.position += 1
        elif verb == "rewind":
            self.position -= 1
        elif verb == "choose_option":
            if not 0 <= action.index < len(self.options):
                raise ValueError(
                    f"{action} is not an option: expected choose_option_0 to "
                    f"choose_option_{len(self.options) - 1}"
                )
            self.chosen = action.index
        elif verb == "submit":
            return Result(self._observation(), DONE, float(self.chosen == self.answer))
        elif verb == "quit":
            return Result(self._observation(), DONE, 0.0)
        return Result(self._observation())

    def frame_at(self, position: int) -> list[list[str]]:
        frame = self.frames[position]
        return masked(frame, self.mask) if position >= self.masked_from else frame

    def _observation(self) -> Observation:
        frame = self.frame_at(self.position)
        text = json.dumps({
            "video_location": f"{self.position}/{self.length}",
            "render": frame,
            "action_taken": self.actions[self.position - 1] if self.position else "start",
            "is_finished": self.position == self.length,
        })
        return Observation(frame, text, {"position": self.position})

    def view(self, phase: str) -> dict[str, Any]:
        return {
            "kind": "mfp",
            "position": self.position,
            "length": self.length,
            "masked_from": self.masked_from,
            "mask": [list(c) for c in self.mask],
            "action_taken": self.actions[self.position - 1] if self.position else "start",
            "options": [list(o) for o in self.options],
            "chosen": self.chosen,
        }

    def outcome(self) -> dict[str, Any]:
        return {"chosen": self.chosen, "answer": self.answer}


# -- planning -----------------------------------------------------------------------------


class Planning(TestPhase):
    """The same environment from its initial state; the goal (target colours on masked
    cells) is checked after every step; success within the horizon scores 1. No reset;
    ``quit`` ends with 0."""

    def __init__(self, problem: Problem, make_env: EnvFactory) -> None:
        super().__init__(problem, make_env)
        self.goal_cells = [tuple(cell) for cell in self.params["goal_cells"]]
        self.goal_colours = tuple(self.params["goal_colours"])
        self.horizon = int(self.params.get("horizon", 1000))
        self.steps = 0
        self.goal_reached = False

    def start(self) -> Observation:
        self.env = self.make_env(self.problem.env_id)
        self.steps = 0
        self.goal_reached = False
        self.observation = self.env.reset(self.problem.seed)
        return self.observation

    def allowed_verbs(self, phase: str) -> tuple[str, ...]:
        return (*_env_verbs(self.env), "quit")

    def reached(self, frame: list[list[str]]) -> bool:
        return region(frame, self.goal_cells) == self.goal_colours

    def apply(self, action: Action) -> Result:
        if action.verb == "quit":
            return Result(self.observation, DONE, 0.0)
        self.observation = self.env.step(action)
        self.steps += 1
        if self.reached(self.observation.frame):
            self.goal_reached = True
            return Result(self.observation, DONE, 1.0)
        if self.steps >= self.horizon:
            return Result(self.observation, DONE, 0.0)
        return Result(self.observation)

    def view(self, phase: str) -> dict[str, Any]:
        return {
            "kind": "planning",
            "goal_cells": [list(c) for c in self.goal_cells],
            "goal_colours": list(self.goal_colours),
            "steps": self.steps,
            "horizon": self.horizon,
        }

    def outcome(self) -> dict[str, Any]:
        return {"steps": self.steps, "reached": self.goal_reached}


# -- change detection ---------------------------------------------------------------------


class ChangeDetection(TestPhase):
    """The changed program runs; the original runs beside it in lockstep on the same
    actions from the same seed, and the defect time ``t*`` is the first frame index where
    their frames differ. ``found-change`` (or reaching the horizon) opens the selection
    phase: ``choose_frame_I`` shows test frame I, ``submit`` scores it with
    :func:`cd_score`. No reset in the test phase, so frame indices stay unambiguous."""

    def __init__(self, problem: Problem, make_env: EnvFactory) -> None:
        super().__init__(problem, make_env)
        self.changed_env_id = self.params["changed_env_id"]
        self.horizon = int(self.params.get("horizon", 1000))
        self.frames: list[list[list[str]]] = []
        self.t_star: int | None = None
        self.selecting = False
        self.chosen: int | None = None

    def start(self) -> Observation:
        self.env = self.make_env(self.changed_env_id)
        self.original = self.make_env(self.problem.env_id)
        self.observation = self.env.reset(self.problem.seed)
        reference = self.original.reset(self.problem.seed)
        self.frames = [self.observation.frame]
        self.t_star = 0 if self.observation.frame != reference.frame else None
        return self.observation

    def allowed_verbs(self, phase: str) -> tuple[str, ...]:
        if not self.selecting:
            return (*_env_verbs(self.env), "found-change", "quit")
        if self.chosen is None:
            return ("noop", "choose_frame", "quit")
        return ("noop", "choose_frame", "submit", "quit")

    def choice_count(self, verb: str) -> int:
        return len(self.frames) if verb == "choose_frame" else 0

    def apply(self, action: Action) -> Result:
        verb = action.verb
        if verb == "quit":
            return Result(self.observation, DONE, 0.0)
        if verb == "found-change":
            self.selecting = True
            return Result(self.observation, SELECT)
        if verb == "choose_frame":
            return Result(self._choose(action))
        if verb == "submit":
            return Result(self.observation, DONE, cd_score(self.chosen, self.t_star))
        if self.selecting:  # a noop while choosing
            return Result(self.observation)
        return self._step(action)

    def _step(self, action: Action) -> Result:
        self.observation = self.env.step(action)
        self.frames.append(self.observation.frame)
        if self.t_star is None:
            reference = self.original.step(action)
            if reference.frame != self.observation.frame:
                self.t_star = len(self.frames) - 1
        if len(self.frames) - 1 >= self.horizon:
            self.selecting = True
            return Result(self.observation, SELECT)
        return Result(self.observation)

    def _choose(self, action: Action) -> Observation:
        if not 0 <= action.index < len(self.frames):
            raise ValueError(
                f"{action} is not a test frame: expected choose_frame_0 to "
                f"choose_frame_{len(self.frames) - 1}"
            )
        self.chosen = action.index
        frame = self.frames[self.chosen]
        text = json.dumps({"frame_index": self.chosen, "render": frame})
        self.observation = Observation(frame, text, {"frame_index": self.chosen})
        return self.observation

    def view(self, phase: str) -> dict[str, Any]:
        return {
            "kind": "cd",
            "steps": len(self.frames) - 1,
            "horizon": self.horizon,
            "frame_count": len(self.frames),
            "chosen": self.chosen,
        }

    def outcome(self) -> dict[str, Any]:
        """``t_star`` is this attempt's defect time, ``None`` when its actions never
        made the changed program depart from the original (``triggered`` false)."""
        return {"steps": max(len(self.frames) - 1, 0), "t_star": self.t_star,
                "triggered": self.t_star is not None, "chosen": self.chosen}


# -- task-DAG exploration ------------------------------------------------------------------


class Explore(TestPhase):
    """A task-DAG map played from its start: the environment ends the episode (goal
    reached, or budget spent) and says which in ``info["success"]``."""

    has_interaction_phase = False

    def start(self) -> Observation:
        self.env = self.make_env(self.problem.env_id)
        self.observation = self.env.reset(self.problem.seed)
        return self.observation

    def allowed_verbs(self, phase: str) -> tuple[str, ...]:
        return (*_env_verbs(self.env), "quit")

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


_PHASES: dict[str, type[TestPhase]] = {
    "mfp": MaskedFramePrediction,
    "planning": Planning,
    "cd": ChangeDetection,
    "explore": Explore,
}


def make_test_phase(problem: Problem, make_env: EnvFactory) -> TestPhase:
    return _PHASES[problem.challenge](problem, make_env)

