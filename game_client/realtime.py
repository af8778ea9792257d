"""A model on the human clock: the rules and records a participant plays under.

``gridstudy agent run --clock realtime`` plays each attempt as a participant's is played
on the server: a :class:`tasks.worldtest.tick.TickEngine` (the one real-time rule the
server's sessions and the pygame loop keep: one input per tick, an automatic ``noop`` on
every tick without one, the queue, the refusals) ticked at the environment's frame rate
on the fixed schedule the server's scheduler keeps (:func:`~tasks.worldtest.tick.next_deadline`),
each event carrying how late its tick was. The world does not wait for the model: while
it thinks, the clock applies no-ops, as it does while a person thinks.
Each reply's action is queued like a key press (``source`` ``agent``, carrying the
reply, tokens, cost and the model's latency onto the event of the tick that applies it),
and the next turn is shown the state after that tick.

:class:`RealtimeAttempt` is an :class:`game_client.runner.Attempt`, so
:func:`game_client.runner.play` drives it with every guard a turn-based attempt has
(Ctrl-C, budgets, provider errors). What differs from a turn-based attempt:

* a reply naming no action available now is an invalid turn, recorded as one, while
  the clock goes on; ``max_invalid`` in a row abandon the attempt, as do ``max_turns``;
* an interrupted attempt cannot be continued (the clock cannot be replayed): it is kept
  as ``interrupted`` with ``resumable`` false, and a rerun plays a new one in its place.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from game_client import owner
from game_client.agents import Decision
from records.recorder import EpisodeRecorder
from tasks import registry
from tasks.core import parse_action
from tasks.worldtest.episode import Episode
from tasks.worldtest.problem import Problem
from tasks.worldtest.tick import QUEUED, Tick, TickEngine, next_deadline
from tasks.worldtest.turn import (
    ABANDONED,
    ACTIVE,
    AGENT,
    DONE,
    MAX_INVALID,
    MAX_TURNS,
    TurnResult,
)

CLOCK = "realtime"
"""The clock recorded in a realtime attempt's info and its run's config."""
WAIT_FOR_TICK = 10.0
"""Seconds a queued action may wait for its tick before the clock is taken as stopped."""

class RealtimeAttempt:
    """An attempt a model plays on the clock (see the module), recorded in ``store`` when
    one is given."""

    def __init__(self, problem: Problem, *, store: Any = None, agent_run_id: int | None = None,
                 max_invalid: int = MAX_INVALID, max_turns: int = MAX_TURNS,
                 run_index: int = 0, make_env=registry.make) -> None:
        self.problem = problem
        self.recorded: list[Any] = []
        self.max_invalid, self.max_turns = max_invalid, max_turns
        info = {"max_invalid": max_invalid, "max_turns": max_turns, "run_index": run_index,
                "clock": CLOCK, "owner": owner.me()}
        self.recorder = (EpisodeRecorder(store, problem, agent_run_id=agent_run_id, info=info)
                         if store else None)
        self.episode_id = self.recorder.episode_id if self.recorder else None
        self.engine = TickEngine(Episode(problem, make_env), self.recorder)
        self.turns = self.invalid = self.invalid_in_row = self.ticks = 0
        self.status, self.reason = ACTIVE, None
        self.changed = threading.Condition()
        self.clock = threading.Thread(target=self._run_clock, daemon=True,
                                      name=f"clock-{problem.id}")
        self.clock.start()

    # -- the clock's side ---------------------------------------------------------------

    def _run_clock(self) -> None:
        """Tick at the frame rate until the attempt ends (the server scheduler's schedule:
        late ticks are skipped, never run in a burst)."""
        period = 1.0 / self.engine.episode.frame_rate
        deadline = time.monotonic() + period
        while self.status == ACTIVE:
            time.sleep(max(0.0, deadline - time.monotonic()))
            with self.changed:  # never a tick after the attempt was ended
                if self.status != ACTIVE:
                    return
                self._ticked(self.engine.tick(latency=time.monotonic() - deadline))
            deadline = next_deadline(deadline, period, time.monotonic())

    def _ticked(self, tick: Tick) -> None:
        with self.changed:
            self.ticks += 1
            if tick.done and self.status == ACTIVE:
                self.status = DONE
            self.changed.notify_all()

    # -- the model's side ---------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """What the model is shown now (as :meth:`tasks.worldtest.turn.AgentTurns.state`)."""
        engine = self.engine
        with engine.lock:
            episode = engine.episode
            ended = self.status != ACTIVE
            return {**engine.view(), "text": episode.observation.text,
                    "actions": [] if ended else episode.allowed_actions(),
                    "info": episode.observation.info, "ended": ended,
                    "attempt": self.summary()}

    def take(self, decision: Decision) -> TurnResult | None:
        """Queue the reply's action for the next tick and wait for that tick; or record
        the reply as an invalid turn (the clock goes on either way)."""
        if self.status != ACTIVE:
            return None
        self.turns += 1
        fields = decision.model_fields()
        error = decision.error or self._refusal(decision.action)
        if error is None:
            with self.changed:
                before = self.ticks
                status = self.engine.admit(decision.action, time.time(), source=AGENT,
                                           fields=fields)
                if status == QUEUED:
                    self.changed.wait_for(lambda: self.status != ACTIVE or (
                        self.ticks > before and not self.engine.queue), WAIT_FOR_TICK)
                else:
                    error = f"the action was {status}"
        if error is not None:
            self._invalid(decision, error, fields)
            result = TurnResult(False, error=error)
        else:
            self.invalid_in_row = 0
            result = TurnResult(True, action=str(parse_action(decision.action)))
        if self.status == ACTIVE and self.turns >= self.max_turns:
            self.end(ABANDONED, f"no end after {self.turns} turns")
        return result

    def _refusal(self, action: str | None) -> str | None:
        if action is None:
            return "the reply names no action"
        try:
            parsed = parse_action(action)
        except ValueError as error:
            return str(error)
        with self.engine.lock:
            return self.engine.episode.refusal(parsed)

    def _invalid(self, decision: Decision, error: str, fields: dict[str, Any]) -> None:
        self.invalid += 1
        self.invalid_in_row += 1
        if self.recorder is not None:
            fields = {k: v for k, v in fields.items() if k != "raw_reply"}
            self.recorder.invalid(phase=self.engine.episode.phase,
                                  raw_reply=decision.raw_reply or "", error=error, **fields)
        if self.invalid_in_row >= self.max_invalid and self.status == ACTIVE:
            self.end(ABANDONED, f"{self.invalid_in_row} invalid replies in a row")

    def end(self, status: str, reason: str, *, resumable: bool = False) -> None:
        """Stop the clock and end the attempt; never resumable (see the module)."""
        with self.changed:
            if self.status != ACTIVE:
                return
            self.status, self.reason = status, reason
            self.changed.notify_all()
        self.engine.end(status, {"reason": reason, "turns": self.turns,
                                         "invalid": self.invalid, "resumable": False})

    def summary(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "resumable": False,
                "turns": self.turns, "invalid": self.invalid,
                "score": self.engine.episode.final_score}
