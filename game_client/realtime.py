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
  the clock goes on. The turns are counted, limited and ended by
  :class:`tasks.worldtest.turn.AgentTurns`, the rule of every agent turn (``max_invalid``
  in a row or ``max_turns`` abandon the attempt, with the same reasons and summary); the
  clock only applies the actions;
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
from tasks.worldtest.tick import QUEUED, TickEngine, next_deadline
from tasks.worldtest.turn import (
    AGENT,
    DONE,
    MAX_INVALID,
    MAX_TURNS,
    AgentTurns,
    TurnResult,
)

CLOCK = "realtime"
"""The clock recorded in a realtime attempt's info and its run's config."""
WAIT_FOR_TICK = 10.0
"""Seconds a queued action may wait for its tick before the clock is taken as stopped."""

class _ClockEnd:
    """What the turn rule reports to on the clock: invalid turns go to the record, and
    the attempt's end goes through the clock's engine (which refuses what is still
    queued, and writes the end unless a tick already ended the episode)."""

    def __init__(self, engine: TickEngine, recorder: EpisodeRecorder | None) -> None:
        self.engine, self.recorder = engine, recorder

    def invalid(self, **fields: Any) -> None:
        if self.recorder is not None:
            self.recorder.invalid(**fields)

    def finished(self, episode: Episode, *, status: str, info: dict[str, Any]) -> None:
        self.engine.end(status, info)


class RealtimeAttempt:
    """An attempt a model plays on the clock (see the module), recorded in ``store`` when
    one is given. Its turns follow :class:`tasks.worldtest.turn.AgentTurns`, the rule of
    every agent turn; only applying an action is the clock's."""

    def __init__(self, problem: Problem, *, store: Any = None, agent_run_id: int | None = None,
                 max_invalid: int = MAX_INVALID, max_turns: int = MAX_TURNS,
                 run_index: int = 0, make_env=registry.make, claim_run: bool = False) -> None:
        self.problem = problem
        self.recorded: list[Any] = []
        info = {"max_invalid": max_invalid, "max_turns": max_turns, "run_index": run_index,
                "clock": CLOCK, "owner": owner.me()}
        self.recorder = (EpisodeRecorder(store, problem, agent_run_id=agent_run_id, info=info,
                                         claim_run=claim_run) if store else None)
        self.episode_id = self.recorder.episode_id if self.recorder else None
        episode = Episode(problem, make_env)
        self.engine = TickEngine(episode, self.recorder)
        self.turns = AgentTurns(episode, _ClockEnd(self.engine, self.recorder),
                                max_invalid=max_invalid, max_turns=max_turns)
        self.ticks = 0
        self.changed = threading.Condition()
        """Guards :attr:`turns` and :attr:`ticks`; taken before the engine's lock."""
        self.clock = threading.Thread(target=self._run_clock, daemon=True,
                                      name=f"clock-{problem.id}")
        self.clock.start()

    # -- the clock's side ---------------------------------------------------------------

    def _run_clock(self) -> None:
        """Tick at the frame rate until the attempt ends (the server scheduler's schedule:
        late ticks are skipped, never run in a burst)."""
        period = 1.0 / self.engine.episode.frame_rate
        deadline = time.monotonic() + period
        while not self.turns.ended:
            time.sleep(max(0.0, deadline - time.monotonic()))
            with self.changed:  # never a tick after the attempt was ended
                if self.turns.ended:
                    return
                tick = self.engine.tick(latency=time.monotonic() - deadline)
                self.ticks += 1
                if tick.done:
                    self.turns.end(DONE)
                self.changed.notify_all()
            deadline = next_deadline(deadline, period, time.monotonic())

    # -- the model's side ---------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """What the model is shown now: :meth:`AgentTurns.state` with the clock's view
        (the inputs the last tick refused)."""
        with self.changed, self.engine.lock:
            return {**self.turns.state(), **self.engine.view()}

    def take(self, decision: Decision) -> TurnResult | None:
        """Queue the reply's action for the next tick and wait for that tick; or record
        the reply as an invalid turn (the clock goes on either way)."""
        fields = {k: v for k, v in decision.model_fields().items() if k != "raw_reply"}
        with self.changed:
            if self.turns.ended:
                return None
            with self.engine.lock:
                error = self.turns.why_invalid(decision.action, decision.error)
            if error is None:
                before = self.ticks
                status = self.engine.admit(decision.action, time.time(), source=AGENT,
                                           fields={**fields, "raw_reply": decision.raw_reply})
                if status == QUEUED:
                    self.changed.wait_for(lambda: self.turns.ended or (
                        self.ticks > before and not self.engine.queue), WAIT_FOR_TICK)
                else:
                    error = f"the action was {status}"
            if error is not None:
                return self.turns.refused_elsewhere(decision.action, decision.raw_reply or "",
                                                    error, fields)
            self.turns.applied_elsewhere()
            return TurnResult(True, action=str(parse_action(decision.action)))

    def end(self, status: str, reason: str, *, resumable: bool = False) -> None:
        """Stop the clock and end the attempt; never resumable (see the module)."""
        with self.changed:
            self.turns.end(status, reason, resumable=False)
            self.changed.notify_all()

    def summary(self) -> dict[str, Any]:
        with self.changed:
            return self.turns.summary()
