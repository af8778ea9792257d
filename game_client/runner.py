"""Running agents on problems: one loop, in-process or through a server's agent API.

:func:`play` is the agent's driver (docs/architecture.md: no clock; one action per
reply): it asks the agent for a decision, hands it to the attempt, and tells the agent
on its next turn how the last one went. The rules of a turn (an invalid reply is logged
and not applied; ``max_invalid`` of them in a row or ``max_turns`` turns end the attempt
as abandoned) are :class:`tasks.worldtest.turn.AgentTurns`'s, kept in one place whether
the attempt is played here (:class:`LocalAttempt`) or on a server
(``game_client.api_client.RemoteAttempt``, the same rules behind the HTTP API). A
provider that cannot answer ends the attempt as an ``error``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from game_client.agents import Agent, Decision, Turn
from game_client.bridge.provider import ProviderError
from records.recorder import EpisodeRecorder
from tasks import registry
from tasks.worldtest.episode import Episode
from tasks.worldtest.problem import Problem
from tasks.worldtest.turn import ERROR, MAX_INVALID, MAX_TURNS, AgentTurns, TurnResult


@dataclass
class EpisodeResult:
    """How one attempt went."""

    problem_id: str
    status: str
    score: float | None
    turns: int
    invalid: int
    episode_id: int | None = None
    reason: str | None = None
    cost: float = 0.0

    @property
    def grounding(self) -> float | None:
        """Share of turns whose reply was applied (None before any turn)."""
        return None if not self.turns else (self.turns - self.invalid) / self.turns


class Attempt(Protocol):
    """An attempt an agent plays turn by turn, wherever its episode lives."""

    problem: Problem
    episode_id: int | None

    def state(self) -> dict[str, Any]:
        """What the agent is shown now (:meth:`AgentTurns.state`)."""

    def take(self, decision: Decision) -> TurnResult:
        """Apply the decision, or record why it was not applied."""

    def end(self, status: str, reason: str) -> None:
        """End the attempt early (the agent's provider failed)."""

    def summary(self) -> dict[str, Any]:
        """``status``, ``reason``, ``turns``, ``invalid`` and ``score``; ``ended`` is
        ``status != "active"``."""


def play(agent: Agent, attempt: Attempt) -> EpisodeResult:
    """Play ``attempt`` with ``agent`` until it ends; how it went."""
    agent.start(attempt.problem)
    last_action, error, cost = None, None, 0.0
    while attempt.summary()["status"] == "active":
        try:
            decision = agent.decide(Turn(attempt.summary()["turns"], attempt.state(),
                                         last_action, error))
        except ProviderError as problem:
            attempt.end(ERROR, str(problem))
            break
        cost += decision.cost or 0.0
        result = attempt.take(decision)
        error = result.error
        last_action = result.action or last_action
    summary = attempt.summary()
    return EpisodeResult(attempt.problem.id, summary["status"], summary["score"],
                         summary["turns"], summary["invalid"], attempt.episode_id,
                         summary["reason"], cost)


class LocalAttempt:
    """An attempt played in this process, recorded in ``store`` when one is given."""

    def __init__(self, problem: Problem, *, store: Any = None, agent_run_id: int | None = None,
                 max_invalid: int = MAX_INVALID, max_turns: int = MAX_TURNS,
                 make_env=registry.make) -> None:
        self.problem = problem
        limits = {"max_invalid": max_invalid, "max_turns": max_turns}
        recorder = (EpisodeRecorder(store, problem, agent_run_id=agent_run_id, info=limits)
                    if store else None)
        self.episode_id = recorder.episode_id if recorder else None
        self.turns = AgentTurns(Episode(problem, make_env), recorder, max_invalid=max_invalid,
                                max_turns=max_turns)

    def state(self) -> dict[str, Any]:
        return self.turns.state()

    def take(self, decision: Decision) -> TurnResult:
        return self.turns.take(decision.action, error=decision.error, **decision.model_fields())

    def end(self, status: str, reason: str) -> None:
        self.turns.end(status, reason)

    def summary(self) -> dict[str, Any]:
        return self.turns.summary()


def run_episode(agent: Agent, problem: Problem, *, store: Any = None,
                agent_run_id: int | None = None, max_turns: int = MAX_TURNS,
                max_invalid: int = MAX_INVALID, make_env=registry.make) -> EpisodeResult:
    """Play one attempt of ``problem`` with ``agent`` in this process; record it when
    ``store`` is given."""
    attempt = LocalAttempt(problem, store=store, agent_run_id=agent_run_id,
                           max_invalid=max_invalid, max_turns=max_turns, make_env=make_env)
    return play(agent, attempt)
