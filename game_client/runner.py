"""Running agents on problems, in-process, with every turn written to the store.

:func:`run_episode` is the agent's driver (ARCHITECTURE.md: no clock; one action per
reply): it asks the agent for a decision, applies a valid one to the
:class:`~tasks.worldtest.Episode`, and logs an invalid one (a reply naming no action, or
one not available now) with its raw text, without stepping the environment (grounding
accuracy, METRICS.md). After ``max_invalid`` invalid replies in a row, or ``max_turns``
turns, the attempt ends as abandoned with score 0; a provider that cannot answer ends it
as an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from game_client.agents import Agent, Decision, Turn, state_of
from game_client.bridge.provider import ProviderError
from game_client.record import EpisodeRecorder
from tasks import registry
from tasks.worldtest.episode import Episode
from tasks.worldtest.problem import Problem


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


def availability_error(episode: Episode, decision: Decision) -> str | None:
    """Why ``decision`` cannot be applied now, or None."""
    if decision.action is None:
        return decision.error or "the reply names no action"
    if not episode.is_allowed(decision.action):
        return (f"{decision.action} is not available now; available: "
                f"{', '.join(episode.allowed_actions())}")
    return None


def run_episode(agent: Agent, problem: Problem, *, store: Any = None,
                agent_run_id: int | None = None, max_turns: int = 1000, max_invalid: int = 5,
                make_env=registry.make) -> EpisodeResult:
    """Play one attempt of ``problem`` with ``agent``; record it when ``store`` is given."""
    episode = Episode(problem, make_env)
    recorder = EpisodeRecorder(store, episode, agent_run_id=agent_run_id) if store else None
    result = EpisodeResult(problem.id, "done", None, 0, 0,
                           recorder.episode_id if recorder else None)
    agent.start(problem)
    streak, last_action, error = 0, None, None
    while not episode.done:
        if result.turns >= max_turns:
            result.status, result.reason = "abandoned", f"no end after {max_turns} turns"
            break
        try:
            decision = agent.decide(Turn(result.turns, state_of(episode), last_action, error))
        except ProviderError as problem_error:
            result.status, result.reason = "error", str(problem_error)
            break
        result.turns += 1
        result.cost += decision.cost or 0.0
        error = availability_error(episode, decision)
        if error is None:
            step = episode.apply(decision.action)
            last_action, streak = step.action, 0
            if recorder:
                recorder.on_step(step, source="agent", parse_valid=True, **decision.model_fields())
            continue
        result.invalid += 1
        streak += 1
        if recorder:
            recorder.on_invalid(error=error, **{**decision.model_fields(),
                                                "raw_reply": decision.raw_reply or ""})
        if streak >= max_invalid:
            result.status, result.reason = "abandoned", f"{streak} invalid replies in a row"
            break
    result.score = episode.score if episode.done else 0.0
    if recorder:
        info = {"turns": result.turns, "invalid": result.invalid}
        if result.reason:
            info["reason"] = result.reason
        recorder.on_finish(episode, status=result.status, info=info)
    return result
