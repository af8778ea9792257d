"""One WorldTest problem as a Gymnasium environment.

Description
    The whole WorldTest episode of one library problem (``tasks.worldtest.Episode``):
    the reward-free interaction phase, then the challenge's test, as one Gymnasium
    episode. Each ``step`` is one turn of :class:`tasks.worldtest.turn.AgentTurns`, the
    same turn a language model plays, so the rules, the scores and (through
    :class:`game_client.gym.RecordEpisodes`) the recorded rows are those of people's and
    models' attempts. The problem's world and seed are fixed (people and models play
    that seed too); ``reset(seed=...)`` seeds only ``np_random`` and the spaces' sampling.

Actions
    ``Discrete(n)``: no-op, the arrows, a click per cell, the controls and test verbs,
    one per option or test frame (:mod:`game_client.gym.spaces`). An action the current
    phase does not allow changes nothing (the episode's tick does not advance) and
    ``info["invalid"]`` says why; it counts as a turn, and is recorded as an invalid turn.
    ``info["action_mask"]`` marks the actions allowed now.

Observation
    ``Box(0, len(PALETTE) - 1, (height, width), uint8)``: the grid the player sees now,
    as colour indices (:data:`game_client.gym.spaces.PALETTE`). ``render_mode=
    "rgb_array"`` draws it as the picture vision models get (16-pixel cells, grid lines).

Rewards, termination
    0 on every step but the last; at the end of the test, the challenge's score (the
    score people's and models' attempts get). ``terminated`` when the episode is over
    (the test was answered, quit, or the environment failed: ``info["status"]`` is then
    ``error``); ``truncated`` after the time limit, ``interaction_steps`` + 1 + the test's
    horizon + a few turns to answer, in turns (invalid ones included).

Info
    ``phase`` (``interaction``, ``test``, ``select``, ``done``), ``tick`` (actions applied),
    ``action`` (the text of the action taken, on ``step``), ``invalid`` (why it was not
    applied, or None), ``status`` (``active``, ``done``, ``abandoned``, ``error``), ``score``
    (once done), ``action_mask`` and, outside the interaction phase, ``question``: the
    test's own view (``kind``; for mfp the ``options`` frames, ``mask`` cells and
    ``position``; for planning ``goal_cells``, ``goal_colours`` and ``goal_grid``; for cd
    ``steps``, ``horizon``, ``frame_count``; for explore ``budget``, ``achieved``) and
    ``guide``, the sentence people are shown.

Registered ids
    ``gridstudy/`` + the problem id with ``/`` as ``-`` + ``-v0`` (:func:`gym_id`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from game_client.agents import RandomAgent
from game_client.bridge.images import frame_rows
from game_client.gym.spaces import PALETTE, ActionTable, encode
from tasks import registry
from tasks.worldtest.episode import DONE, INTERACTION, Episode
from tasks.worldtest.problem import Problem
from tasks.worldtest.tick import Sink
from tasks.worldtest.turn import ABANDONED, ACTIVE, ERROR, AgentTurns

INTERACTION_STEPS = 100
"""Turns the time limit grants the interaction phase unless told otherwise."""


class GridstudyEnv(gymnasium.Env):
    """One problem's WorldTest episode (see the module)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 8}

    def __init__(self, problem_id: str, render_mode: str | None = None,
                 interaction_steps: int = INTERACTION_STEPS) -> None:
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode {render_mode!r} is not supported; use "
                             f"{self.metadata['render_modes']} or None")
        try:  # an int or NumPy integer; "10" (a config file's text) failed on a comparison
            steps = -1 if isinstance(interaction_steps, bool) else operator.index(interaction_steps)
        except TypeError:
            steps = -1
        if steps < 0:
            raise ValueError(f"interaction_steps must be a whole number of 0 or more, not "
                             f"{interaction_steps!r:.40}")
        interaction_steps = steps
        self.problem: Problem = registry.get_problem(problem_id)
        self.render_mode = render_mode
        self.interaction_steps = interaction_steps
        self.episode = Episode(self.problem)
        self.table = ActionTable.for_problem(self.problem, self.episode.size)
        width, height = self.episode.size
        self.action_space = spaces.Discrete(len(self.table))
        self.observation_space = spaces.Box(0, len(PALETTE) - 1, (height, width), np.uint8)
        self.metadata = {**self.metadata, "render_fps": self.episode.frame_rate}
        self.recorder: Callable[[Problem], Sink] | None = None
        """Makes each episode's sink (set by ``RecordEpisodes``); None records nothing."""
        self.turns: AgentTurns | None = None

    @property
    def time_limit(self) -> int:
        """Turns after which an episode is truncated (see the module)."""
        return RandomAgent.turn_limit(self.problem, self.interaction_steps)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._abandon("the environment was reset before the episode ended")
        self.episode = Episode(self.problem)
        sink = self.recorder(self.problem) if self.recorder else None
        limit = self.time_limit
        self.turns = AgentTurns(self.episode, sink, max_turns=limit, max_invalid=limit + 1)
        return self._observation(), self._info(None, None)

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self.turns is None:
            raise RuntimeError("call reset() before step()")
        if self.turns.ended:
            raise RuntimeError(f"the episode is over ({self.turns.status}); call reset() to "
                               "start another")
        try:  # an int or NumPy integer; int() read 1.7 as action 1, recorded as chosen
            index = operator.index(action)
        except TypeError:
            raise TypeError(f"an action is a whole number of this problem's "
                            f"0..{len(self.table) - 1}, not {type(action).__name__} "
                            f"{action!r:.40}") from None
        text = self.table.text(index)
        result = self.turns.take(text, raw_reply=text)
        status = self.turns.status
        done = self.episode.done
        reward = float(self.episode.score or 0.0) if done else 0.0
        terminated = done or status == ERROR
        truncated = status == ABANDONED and not terminated
        return (self._observation(), reward, terminated, truncated,
                self._info(text, None if result.applied else result.error))

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        rows = frame_rows(self.episode.observation.frame)
        return np.frombuffer(b"".join(rows), np.uint8).reshape(len(rows), -1, 3).copy()

    def close(self) -> None:
        self._abandon("the environment was closed before the episode ended")

    def _abandon(self, reason: str) -> None:
        if self.turns is not None and self.turns.status == ACTIVE:
            self.turns.end(ABANDONED, reason)

    def _observation(self) -> np.ndarray:
        return encode(self.episode.observation.frame, self.episode.size)

    def _info(self, action: str | None, invalid: str | None) -> dict[str, Any]:
        episode, turns = self.episode, self.turns
        info: dict[str, Any] = {
            "phase": episode.phase, "tick": len(episode.history), "action": action,
            "invalid": invalid, "status": turns.status if turns else ACTIVE,
            "score": episode.score if episode.phase == DONE else None,
            "action_mask": self.action_mask(), "guide": episode.guide(),
        }
        if episode.phase != INTERACTION:
            info["question"] = episode.test.view(episode.phase)
        return info

    def action_mask(self) -> np.ndarray:
        """1 for each action allowed now (see :meth:`ActionTable.mask`)."""
        verbs = self.episode.allowed_verbs() if self.turns and not self.turns.ended else ()
        counts = {verb: self.episode.test.choice_count(verb)
                  for verb in ("choose_option", "choose_frame") if verb in verbs}
        return self.table.mask(verbs, counts)
