"""Agents that play without a language model, and what every agent is handed and returns.

An agent is started on a problem (:meth:`start`) and then asked, once per turn, for a
:class:`Decision` given a :class:`Turn`. Drivers (the in-process runner, or a client of
the server's agent API) apply the decision and record it; agents never touch episodes.

* :class:`RandomAgent`: the 002 App. C baseline: uniform over click, up, down, left,
  right and noop (those the phase allows), a click at a uniform cell; uniform options and
  frames when a choice is due.
* :class:`ScriptedAgent`: replays a list of replies (any text: malformed ones too).
* :class:`PlannerAgent`: follows the plan the problem's challenge gives as its oracle
  (``Challenge.oracle``): a shortest plan found breadth first for planning problems, the
  map's own solution for task-DAG maps.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from records.schema import MODEL_TURN
from tasks.worldtest.challenge import challenges, get
from tasks.worldtest.problem import Problem

RANDOM_TYPES = ("click", "up", "down", "left", "right", "noop")
CHOICE_TURNS = 10
"""Turns beyond the test horizon for answering (found-change, choose, submit)."""


@dataclass(frozen=True)
class Turn:
    """What an agent sees on one turn: the episode state and how the last turn went."""

    index: int
    state: dict[str, Any]
    """What the attempt shows the agent (:meth:`tasks.worldtest.turn.AgentTurns.state`:
    the episode's view, the observation ``text`` and ``info``, the allowed ``actions``),
    the same whether it is played here or through the agent API."""
    last_action: str | None = None
    error: str | None = None
    """Why the previous reply was not applied (None if it was)."""


@dataclass(frozen=True)
class Decision:
    """An agent's answer: the action text (None if the reply named none, ``error`` says
    why) and the turn's model fields (:data:`records.schema.MODEL_TURN`: the raw reply,
    the message sent, tokens, cost, seconds, reasoning, finish reason, retries)."""

    action: str | None
    raw_reply: str | None = None
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    latency: float | None = None
    prompt: str | None = None
    system_prompt: str | None = None
    reasoning: str | None = None
    finish_reason: str | None = None
    retries: int | None = None
    trimmed: int | None = None

    def model_fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in MODEL_TURN}

    @property
    def tokens(self) -> int:
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)

    @property
    def from_model(self) -> bool:
        """Whether a model was asked for this decision (a random agent, a planner or a
        scripted reply asks no one, and takes no time)."""
        return self.latency is not None

    @property
    def uncounted(self) -> bool:
        """Whether a model was asked and its reply gave no token counts: what the turn
        spent is unknown."""
        return self.from_model and (self.prompt_tokens is None or self.completion_tokens is None)


class Agent(Protocol):
    kind: str

    def start(self, problem: Problem) -> None: ...

    def decide(self, turn: Turn) -> Decision: ...

    def config(self) -> dict[str, Any]: ...


# -- random -------------------------------------------------------------------------------


@dataclass
class RandomAgent:
    """Uniform random play; ``interaction_steps`` random actions before ``go-to-test``."""

    seed: int = 0
    interaction_steps: int = 0
    kind: str = "random"
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def start(self, problem: Problem) -> None:
        self.steps = 0

    def config(self) -> dict[str, Any]:
        return {"seed": self.seed, "interaction_steps": self.interaction_steps}

    @staticmethod
    def turn_limit(problem: Problem, interaction_steps: int = 0) -> int:
        """Turns an attempt at ``problem`` may need: the interaction steps, going to the
        test, every step of its horizon (1,000 when it declares none) and the answer's
        few turns, so that the random agent is never cut short."""
        return interaction_steps + 1 + int(problem.params.get("horizon") or 1000) + CHOICE_TURNS

    def decide(self, turn: Turn) -> Decision:
        return Decision(self.choose(turn.state))

    def choose(self, state: dict[str, Any]) -> str:
        allowed, test = state["allowed"], state.get("test") or {}
        if state["phase"] == "interaction":
            self.steps += 1
            if self.steps > self.interaction_steps and "go-to-test" in allowed:
                return "go-to-test"
        if "choose_option" in allowed or "choose_frame" in allowed:
            return self._choice(allowed, test)
        return random_env_action(self.rng, allowed, state["size"])

    def _choice(self, allowed: list[str], test: dict[str, Any]) -> str:
        if test.get("chosen") is not None and "submit" in allowed:
            return "submit"
        if "choose_option" in allowed:
            return f"choose_option_{self.rng.randrange(len(test['options']))}"
        return f"choose_frame_{self.rng.randrange(test['frame_count'])}"


def random_env_action(rng: random.Random, allowed: Iterable[str], size: list[int] | tuple[int, int]) -> str:
    """One of click/up/down/left/right/noop uniformly (those allowed), a click at a uniform cell."""
    types = [verb for verb in RANDOM_TYPES if verb in set(allowed)]
    if not types:
        raise ValueError(f"no random action is allowed now (allowed: {', '.join(allowed)})")
    verb = rng.choice(types)
    if verb == "click":
        return f"click {rng.randrange(size[0])} {rng.randrange(size[1])}"
    return verb


# -- scripted -----------------------------------------------------------------------------


@dataclass
class ScriptedAgent:
    """Replays ``replies`` in order, as raw replies; ``quit`` once they run out."""

    replies: list[str]
    kind: str = "scripted"

    def start(self, problem: Problem) -> None:
        self.position = 0

    def config(self) -> dict[str, Any]:
        return {"replies": list(self.replies)}

    def decide(self, turn: Turn) -> Decision:
        if self.position >= len(self.replies):
            return Decision("quit", "quit")
        reply = self.replies[self.position]
        self.position += 1
        return Decision(reply, reply)


# -- planner ------------------------------------------------------------------------------


class CannotPlay(ValueError):
    """The agent cannot play this problem, and would not on a second try (the planner on a
    problem without an oracle, or one it finds no plan for within its limits): the
    attempt ends in an error that a rerun does not resume."""


@dataclass
class PlannerAgent:
    """Goes to the test at once and follows a shortest plan."""

    clicks: str = "foreground"
    max_depth: int = 30
    max_states: int = 200_000
    kind: str = "planner"

    def config(self) -> dict[str, Any]:
        return {"clicks": self.clicks, "max_depth": self.max_depth, "max_states": self.max_states}

    @staticmethod
    def cannot_play(problem: Problem) -> str | None:
        """Why the planner cannot play ``problem`` at all, or None."""
        if get(problem.challenge).oracle is not None:
            return None
        playable = " and ".join(name for name, c in challenges().items() if c.oracle)
        return f"the planner plays {playable} problems, not {problem.challenge}"

    def start(self, problem: Problem) -> None:
        why = self.cannot_play(problem)
        if why is not None:
            raise CannotPlay(f"{why} ({problem.id}); use the random or an LLM agent")
        try:
            self.plan = get(problem.challenge).oracle(problem, self.config())
        except ValueError as error:  # no plan within its limits: the same on every try
            raise CannotPlay(str(error)) from None
        self.position = 0

    def decide(self, turn: Turn) -> Decision:
        if self.position >= len(self.plan):
            return Decision("quit")
        self.position += 1
        return Decision(self.plan[self.position - 1])
