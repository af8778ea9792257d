"""Running agents on problems: one loop, in-process or through a server's agent API.

:func:`play` is the agent's driver (docs/architecture.md: no clock; one action per
reply): it asks the agent for a decision, hands it to the attempt, and tells the agent
on its next turn how the last one went. The rules of a turn (an invalid reply is logged
and not applied; ``max_invalid`` of them in a row or ``max_turns`` turns end the attempt
as abandoned) are :class:`tasks.worldtest.turn.AgentTurns`'s, kept in one place whether
the attempt is played here (:class:`LocalAttempt`) or on a server
(``game_client.api_client.RemoteAttempt``, the same rules behind the HTTP API).

How an attempt ends besides its own rules:

* the model spent its attempt's :class:`Budget`: ``abandoned`` (it scores 0, like any
  attempt the model did not finish);
* its provider failed after the retries: ``error``, resumable;
* the batch is stopping (Ctrl-C, the batch's budget, a refused key: :class:`Guard`):
  ``interrupted``, resumable.

A resumed attempt is continued from its record: the server or the store rebuilds the
environment (:func:`records.rebuild.stored_attempt`), and :func:`catch_up` rebuilds the
agent's side by replaying its recorded replies (:meth:`LLMAgent.recall`), so that the
conversation it continues is the one it had.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, make_dataclass
from typing import Any, Protocol

from game_client import owner
from game_client.agents import Agent, Decision, Turn
from game_client.bridge.provider import FatalProviderError, ProviderError
from records.rebuild import CannotResume, stored_attempt
from records.recorder import EpisodeRecorder, merge_info
from records.schema import RECORDED_TURN
from tasks import registry
from tasks.worldtest import protocol as protocols
from tasks.worldtest.episode import Episode
from tasks.worldtest.problem import Problem
from tasks.worldtest.turn import (
    ABANDONED,
    ACTIVE,
    ERROR,
    INTERRUPTED,
    MAX_INVALID,
    MAX_TURNS,
    AgentTurns,
    TurnResult,
    resumable,
)


@dataclass
class EpisodeResult:
    """How one attempt went. ``cost`` is None when the model has no price."""

    problem_id: str
    status: str
    score: float | None
    turns: int
    invalid: int
    episode_id: int | None = None
    reason: str | None = None
    cost: float | None = 0.0
    tokens: int = 0
    agent: str = ""
    """The agent's label in a batch of several (the model's name)."""
    resumed: bool = False
    resumable: bool = False
    """Whether a rerun continues it (interrupted, or its provider failed)."""

    @property
    def grounding(self) -> float | None:
        """Share of turns whose reply was applied (None before any turn)."""
        return None if not self.turns else (self.turns - self.invalid) / self.turns


# -- what a batch shares, and what one attempt may spend -----------------------------------


@dataclass(frozen=True)
class Budget:
    """Most dollars and tokens (prompt plus completion) to spend; None: no limit."""

    cost: float | None = None
    tokens: int | None = None

    def exceeded(self, cost: float, tokens: int) -> str | None:
        """Why ``cost`` and ``tokens`` spent pass this budget, or None."""
        if self.cost is not None and cost >= self.cost:
            return f"spent ${cost:.4f} of a ${self.cost:g} budget"
        if self.tokens is not None and tokens >= self.tokens:
            return f"spent {tokens} tokens of a {self.tokens}-token budget"
        return None

    @property
    def limited(self) -> bool:
        """Whether this budget limits anything."""
        return self.cost is not None or self.tokens is not None

    def uncountable(self, decision: Decision) -> str | None:
        """Why a model's turn cannot be counted against this budget, or None: its reply
        gave no token counts (the response's ``usage``), or, for a budget in dollars, its
        model has no price. A budget that counts such a turn as nothing would never stop
        what it was set to stop."""
        if not decision.from_model or not self.limited:
            return None
        if decision.uncounted:
            return ("the provider's reply gave no token counts (its response's usage is "
                    "missing or holds no whole numbers), so a budget cannot be kept")
        if self.cost is not None and decision.cost is None:
            return "the model has no price, so a budget in dollars cannot be kept"
        return None


@dataclass(frozen=True)
class Spending:
    """Dollars and tokens spent; ``cost`` None: tokens were spent and none had a price.
    ``uncounted``: model turns whose replies gave no token counts, so that what they
    spent is in neither figure."""

    cost: float | None = 0.0
    tokens: int = 0
    uncounted: int = 0

    def __add__(self, other: Spending) -> Spending:
        cost = None if self.cost is None and other.cost is None else \
            (self.cost or 0.0) + (other.cost or 0.0)
        return Spending(cost, self.tokens + other.tokens, self.uncounted + other.uncounted)

    def __sub__(self, other: Spending) -> Spending:
        cost = None if self.cost is None else self.cost - (other.cost or 0.0)
        return Spending(cost, self.tokens - other.tokens, self.uncounted - other.uncounted)

    def dollars(self) -> str:
        if self.cost is None:
            return "unpriced"
        if self.uncounted:
            return f"at least ${self.cost:.4f}" if self.cost else "unknown"
        return f"${self.cost:.4f}"


class Guard:
    """What every attempt of a batch shares: whether the batch is stopping (and why),
    the batch's budget, and what has been spent (for the progress bar).

    ``sleep`` is what a provider waits with between retries: it returns True, early,
    when the batch starts stopping."""

    def __init__(self, budget: Budget | None = None) -> None:
        self.budget = budget or Budget()
        self.stopped = threading.Event()
        self.reason: str | None = None
        self.fatal: str | None = None
        """The provider's message when a refused key or an unknown model stopped the batch."""
        self.cost, self.tokens, self.turns = 0.0, 0, 0
        self.unpriced = False
        self.uncounted = 0
        """Model turns whose replies gave no token counts, this invocation."""
        self.before = Spending()
        """What earlier invocations of the batch's agent runs spent (:meth:`carry`)."""
        self.lock = threading.Lock()

    @property
    def stopping(self) -> str | None:
        return self.reason if self.stopped.is_set() else None

    def stop(self, reason: str, *, fatal: bool = False) -> None:
        """Stop the batch: no new attempt starts, running ones end at their next turn."""
        with self.lock:
            if self.reason is None:
                self.reason = reason
            if fatal and self.fatal is None:
                self.fatal = reason
        self.stopped.set()

    def sleep(self, seconds: float) -> bool:
        return self.stopped.wait(seconds)

    def carry(self, before: Spending) -> None:
        """Count what earlier invocations of the same agent runs spent against the
        budget (a rerun continues the run, and its budget); stop at once when it is spent."""
        with self.lock:
            self.before = before
            self.cost += before.cost or 0.0
            self.tokens += before.tokens
            self.unpriced |= before.cost is None and before.tokens > 0
            over = self.budget.exceeded(self.cost, self.tokens)
        if over:
            self.stop(f"the batch's budget ran out ({over}, all of it by earlier runs of "
                      "the same command)")

    def charge(self, decision: Decision) -> None:
        """Count one turn's spending; stop the batch when it passes the batch's budget,
        or when the turn cannot be counted against it (:meth:`Budget.uncountable`)."""
        uncountable = self.budget.uncountable(decision)
        if uncountable:
            self.stop(f"{uncountable}; to play on uncounted, rerun without --max-cost and "
                      "--token-budget", fatal=True)
        with self.lock:
            self.turns += 1
            self.tokens += decision.tokens
            self.cost += decision.cost or 0.0
            self.unpriced |= decision.cost is None and decision.tokens > 0
            self.uncounted += decision.uncounted
            over = self.budget.exceeded(self.cost, self.tokens)
        if over:
            self.stop(f"the batch's budget ran out ({over})")


# -- the attempt --------------------------------------------------------------------------


RecordedTurn = make_dataclass(
    "RecordedTurn", [(name, Any, None) for name in RECORDED_TURN], frozen=True)
RecordedTurn.__doc__ = """One recorded model turn (the fields of ``records.schema.RECORDED_TURN``),
as a resumed attempt's agent reads it back: ``recorded_turn(row)``."""


def recorded_turn(row: Any) -> Any:
    """A :data:`RecordedTurn` from an event row or its JSON (a mapping)."""
    get = row.get if isinstance(row, dict) else lambda name: getattr(row, name, None)
    return RecordedTurn(**{name: get(name) for name in RECORDED_TURN})


def _spent(cost: float | None, decision: Decision) -> float | None:
    """``cost`` plus the decision's; None (unpriced) once a turn used tokens without a
    price."""
    if cost is None or (decision.cost is None and decision.tokens):
        return None
    return cost + (decision.cost or 0.0)


class Attempt(Protocol):
    """An attempt an agent plays turn by turn, wherever its episode lives."""

    problem: Problem
    episode_id: int | None
    recorded: list[Any]
    """Turns already in the record (a resumed attempt); empty for a new one."""

    def state(self) -> dict[str, Any]:
        """What the agent is shown now (:meth:`AgentTurns.state`)."""

    def take(self, decision: Decision) -> TurnResult | None:
        """Apply the decision, or record why it was not applied; None when the attempt
        was ended meanwhile (from another thread: the batch stopped)."""

    def end(self, status: str, reason: str, *, resumable: bool = False) -> None:
        """End the attempt early (once)."""

    def summary(self) -> dict[str, Any]:
        """``status``, ``reason``, ``turns``, ``invalid`` and ``score``."""


def catch_up(agent: Agent, attempt: Attempt,
             make_env=registry.make) -> tuple[str | None, str | None, float | None, int]:
    """Start ``agent`` on ``attempt`` and, for a resumed one, replay its recorded turns
    through the agent (its recorded replies, not new ones: :meth:`LLMAgent.recall`;
    agents without a model decide again, deterministically) on a copy of the episode.
    Returns the last applied action, the last turn's error, and the cost and tokens
    already spent. Raises :class:`CannotResume` when the replay does not arrive where the
    record stands (the problem or the agent changed since)."""
    agent.start(attempt.problem)
    last_action = error = None
    cost: float | None = 0.0
    tokens = 0
    if not attempt.recorded:
        return last_action, error, cost, tokens
    copy = AgentTurns(Episode(attempt.problem, make_env), None, max_invalid=10**9,
                      max_turns=10**9)
    recall = getattr(agent, "recall", None)
    for index, recorded in enumerate(attempt.recorded):
        turn = Turn(index, copy.state(), last_action, error)
        decision = recall(turn, recorded) if recall else agent.decide(turn)
        result = copy.take(decision.action, error=decision.error)
        error, last_action = result.error, result.action or last_action
        cost, tokens = _spent(cost, decision), tokens + decision.tokens
    stored = attempt.summary()
    if (copy.turns, copy.invalid) != (stored["turns"], stored["invalid"]) or \
            copy.state()["text"] != attempt.state()["text"]:
        raise CannotResume(
            f"episode {attempt.episode_id}: replaying its {len(attempt.recorded)} recorded "
            f"turns does not arrive where the record stands; the problem or the agent "
            f"changed since it was played, so it cannot be resumed")
    return last_action, error, cost, tokens


def play(agent: Agent, attempt: Attempt, *, guard: Guard | None = None,
         budget: Budget | None = None, agent_label: str = "") -> EpisodeResult:
    """Play ``attempt`` with ``agent`` until it ends (resumed from its record when it
    has one); how it went."""
    guard = guard or Guard()
    budget = budget or Budget()
    last_action, error, cost, tokens = catch_up(agent, attempt)
    while attempt.summary()["status"] == ACTIVE:
        if guard.stopping:
            attempt.end(INTERRUPTED, guard.stopping, resumable=True)
            break
        try:
            decision = agent.decide(Turn(attempt.summary()["turns"], attempt.state(),
                                         last_action, error))
        except FatalProviderError as problem:
            guard.stop(str(problem), fatal=True)
            attempt.end(INTERRUPTED, str(problem), resumable=True)
            break
        except ProviderError as problem:
            if guard.stopping:
                attempt.end(INTERRUPTED, guard.stopping, resumable=True)
            else:
                attempt.end(ERROR, f"the model's provider failed: {problem}", resumable=True)
            break
        result = attempt.take(decision)
        if result is None:
            break
        cost, tokens = _spent(cost, decision), tokens + decision.tokens
        guard.charge(decision)
        uncountable = budget.uncountable(decision)
        if uncountable:
            guard.stop(f"{uncountable}; to play on uncounted, rerun with --new-run and "
                       "without --max-cost-per-attempt and --token-budget-per-attempt (an "
                       "attempt's budget is part of its agent run)", fatal=True)
        over = budget.exceeded(cost or 0.0, tokens)
        if over and attempt.summary()["status"] == ACTIVE:
            attempt.end(ABANDONED, f"the attempt's budget ran out ({over})")
        error = result.error
        last_action = result.action or last_action
    summary = attempt.summary()
    return EpisodeResult(attempt.problem.id, summary["status"], summary["score"],
                         summary["turns"], summary["invalid"], attempt.episode_id,
                         summary["reason"], cost, tokens, agent_label, bool(attempt.recorded),
                         bool(summary.get("resumable")))


class LocalAttempt:
    """An attempt played in this process, recorded in ``store`` when one is given;
    ``claim_run``: as a batch's job, its run index claimed (``Store.start_episode``)."""

    def __init__(self, problem: Problem, *, store: Any = None, agent_run_id: int | None = None,
                 max_invalid: int = MAX_INVALID, max_turns: int = MAX_TURNS,
                 run_index: int = 0, make_env=registry.make,
                 turns: AgentTurns | None = None, episode_id: int | None = None,
                 recorded: Sequence[Any] = (),
                 protocol: protocols.Protocol = protocols.GRIDSTUDY,
                 claim_run: bool = False) -> None:
        self.problem = problem
        self.recorded = list(recorded)
        self.lock = threading.Lock()
        if turns is not None:
            self.episode_id, self.turns = episode_id, turns
            return
        info = {"max_invalid": max_invalid, "max_turns": max_turns, "run_index": run_index,
                "owner": owner.me()}
        if protocol is not protocols.GRIDSTUDY:
            info["protocol"] = protocol.name
        recorder = (EpisodeRecorder(store, problem, agent_run_id=agent_run_id, info=info,
                                    claim_run=claim_run) if store else None)
        self.episode_id = recorder.episode_id if recorder else None
        self.turns = AgentTurns(Episode(problem, make_env), recorder, max_invalid=max_invalid,
                                max_turns=max_turns, protocol=protocol)

    @classmethod
    def resume(cls, store: Any, episode_id: int, make_env=registry.make) -> LocalAttempt:
        """Continue the stored attempt ``episode_id`` (interrupted, or ended by its
        provider), as this process's (``info.owner``); ``ValueError`` when it cannot be
        continued."""
        stored = stored_attempt(store, episode_id, make_env)
        if stored is None:
            raise ValueError(f"no agent attempt {episode_id} in {store!r}")
        if not resumable(stored.row.status, stored.row.info):
            raise ValueError(f"attempt {episode_id} is {stored.row.status}; only an interrupted "
                             "attempt, or one its provider failed, can be resumed")
        stored.turns.reopen()
        merge_info(store, episode_id, {"owner": owner.me()})
        return cls(registry.get_problem(stored.row.problem_id), turns=stored.turns,
                   episode_id=episode_id,
                   recorded=[recorded_turn(e) for e in stored.events if e.source == "agent"])

    def state(self) -> dict[str, Any]:
        return self.turns.state()

    def take(self, decision: Decision) -> TurnResult | None:
        with self.lock:
            if self.turns.ended:
                return None
            return self.turns.take(decision.action, error=decision.error,
                                   **decision.model_fields())

    def end(self, status: str, reason: str, *, resumable: bool = False) -> None:
        with self.lock:
            self.turns.end(status, reason, resumable=resumable)

    def summary(self) -> dict[str, Any]:
        return self.turns.summary()


def run_episode(agent: Agent, problem: Problem, *, store: Any = None,
                agent_run_id: int | None = None, max_turns: int = MAX_TURNS,
                max_invalid: int = MAX_INVALID, make_env=registry.make,
                guard: Guard | None = None, budget: Budget | None = None) -> EpisodeResult:
    """Play one attempt of ``problem`` with ``agent`` in this process; record it when
    ``store`` is given."""
    attempt = LocalAttempt(problem, store=store, agent_run_id=agent_run_id,
                           max_invalid=max_invalid, max_turns=max_turns, make_env=make_env)
    return play(agent, attempt, guard=guard, budget=budget)
