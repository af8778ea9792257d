"""Real-time play: the game session (no socket code) and the one scheduler that ticks them all.

A :class:`GameSession` is overcooked-demo's game object: ``enqueue_action`` (called by
whoever receives input), ``tick`` (called by the clock) and ``get_state`` (what a client
draws), under one lock. It knows nothing about sockets, so it is tested alone.

The :class:`Scheduler` is the single background task that drives every live session: a
heap of next-tick deadlines, one per session, each session ticking at its environment's
frame rate. On every tick a session applies at most one queued input, otherwise an
automatic ``noop``; the event goes to the store's batching writer (never blocking on
disk) and the new state to ``deliver``, which the socket layer binds to that
participant's room. There is no thread per participant.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from study_server.clock import ClockOffset
from study_server.store import event_from_step
from tasks.core import parse_action
from tasks.worldtest.episode import Episode, Step
from tasks.worldtest.problem import Problem

log = logging.getLogger(__name__)

QUEUE_SIZE = 4
"""Inputs waiting for a tick; more are dropped (and logged), as a key held down would be."""
RATE_LIMIT = 30
"""Inputs per second one client may send; more are refused (and logged)."""


@dataclass
class Input:
    """One queued input: canonical action text and when it was made and received."""

    action: str
    client_time: float | None
    received_at: float


@dataclass
class Tick:
    """What one tick did: the step (None if the step raised), its event row, the new state."""

    step: Step | None
    event: dict[str, Any]
    state: dict[str, Any]

    @property
    def done(self) -> bool:
        return self.step is not None and self.step.done


class GameSession:
    """One participant's live episode: inputs queue up, the clock ticks it.

    ``store`` is a :class:`study_server.store.Store` or None (a preview that records
    nothing). ``episode_id`` is the store's episode row.
    """

    def __init__(
        self,
        episode: Episode,
        *,
        store: Any = None,
        episode_id: int | None = None,
        study_id: str | None = None,
        participant_id: int | None = None,
        token: str | None = None,
        queue_size: int = QUEUE_SIZE,
        rate_limit: int = RATE_LIMIT,
    ) -> None:
        self.token = token or secrets.token_urlsafe(16)
        self.episode = episode
        self.store = store
        self.episode_id = episode_id
        self.study_id = study_id
        self.participant_id = participant_id
        self.queue: deque[Input] = deque()
        self.queue_size = queue_size
        self.rate_limit = rate_limit
        self.recent: deque[float] = deque()
        self.clock = ClockOffset()
        self.seq = 0
        self.lock = threading.Lock()
        self.sid: str | None = None
        """The connection bound to this session (only it may send input)."""
        self.idle_since: float | None = time.time()
        """Server time since when no connection is bound (None while one is)."""

    @classmethod
    def create(
        cls,
        problem: Problem,
        store: Any = None,
        *,
        study_id: str | None = None,
        participant_id: int | None = None,
        **options: Any,
    ) -> GameSession:
        """A fresh episode of ``problem``, with its episode row when ``store`` is given."""
        episode = Episode(problem)
        episode_id = None
        if store is not None:
            episode_id = store.start_episode(
                problem=problem, study_id=study_id, participant_id=participant_id,
                agent_run_id=None,
            )
        return cls(episode, store=store, episode_id=episode_id, study_id=study_id,
                   participant_id=participant_id, **options)

    @property
    def period(self) -> float:
        """Seconds between ticks."""
        return 1.0 / self.episode.frame_rate

    @property
    def problem_id(self) -> str:
        return self.episode.problem.id

    # -- input ----------------------------------------------------------------------------

    def enqueue_action(self, text: Any, client_time: float | None = None,
                       now: float | None = None) -> str:
        """Queue one input for the next tick; return ``queued`` or why it was refused.

        Refusals (``rate-limited``, ``malformed``, ``rejected`` for a click outside the
        grid, ``dropped`` when the queue is full) are logged as raw inputs. Whether the
        action is allowed in the phase is decided when it is applied, since inputs
        queued before it (``go-to-test``) may change the phase.
        """
        now = time.time() if now is None else now
        with self.lock:
            corrected = self.clock.to_server(client_time)
            status, reason, action = self._admit(text, now)
            if status == "queued":
                self.queue.append(Input(action, corrected, now))
            else:
                self._log_raw(str(text), status, reason, now, corrected)
            return status

    def _admit(self, text: Any, now: float) -> tuple[str, str | None, str]:
        while self.recent and self.recent[0] <= now - 1.0:
            self.recent.popleft()
        if len(self.recent) >= self.rate_limit:
            return "rate-limited", f"more than {self.rate_limit} inputs per second", ""
        self.recent.append(now)
        if self.episode.done:
            return "rejected", "the episode is over", ""
        try:
            action = parse_action(text)
        except ValueError as error:
            return "malformed", str(error), ""
        try:
            parse_action(action, size=self.episode.size)
        except ValueError as error:
            return "rejected", str(error), ""
        if len(self.queue) >= self.queue_size:
            return "dropped", f"{self.queue_size} inputs already wait for the next tick", ""
        return "queued", None, str(action)

    def _next_input(self, now: float) -> Input | None:
        """The first queued input allowed in the current phase; the others are rejected."""
        while self.queue:
            item = self.queue.popleft()
            if self.episode.is_allowed(item.action):
                return item
            reason = (f"{item.action} is not allowed in the {self.episode.phase} phase; "
                      f"allowed: {', '.join(self.episode.allowed_actions())}")
            self._log_raw(item.action, "rejected", reason, now, item.client_time)
        return None

    def _log_raw(self, text: str, status: str, reason: str | None, now: float,
                 client_time: float | None) -> None:
        log.info("session %s: input %r %s (%s)", self.token[:6], text, status, reason)
        if self.store is not None:
            self.store.write_raw_input({
                "episode_id": self.episode_id, "participant_id": self.participant_id,
                "received_at": now, "client_time": client_time, "text": text[:200],
                "status": status, "reason": reason,
            })

    # -- the clock ------------------------------------------------------------------------

    def tick(self, lateness: float = 0.0, now: float | None = None) -> Tick:
        """Apply the next queued input, or an automatic ``noop``; record it; say what
        happened. A step that raises is recorded with its error and not applied."""
        now = time.time() if now is None else now
        with self.lock:
            item = self._next_input(now)
            action = item.action if item else "noop"
            source = "input" if item else "auto"
            client_time = item.client_time if item else None
            try:
                step = self.episode.apply(action)
            except Exception as error:  # an environment's runtime error must not end play
                log.warning("session %s: %s raised %s", self.token[:6], action, error)
                step, event = None, self._error_event(action, source, error, now, client_time)
            else:
                event = self._step_event(step, source, now, client_time)
            event["latency"] = lateness
            self.seq += 1
            self._record(step, event)
            return Tick(step, event, self.episode.view())

    def _step_event(self, step: Step, source: str, now: float,
                    client_time: float | None) -> dict[str, Any]:
        if self.store is None:  # a preview: nothing is recorded, only said
            return {"seq": self.seq, "tick": step.index, "action": step.action,
                    "source": source, "applied": True, "server_time": now}
        return event_from_step(
            step, episode_id=self.episode_id, seq=self.seq, problem_id=self.problem_id,
            source=source, study_id=self.study_id, participant_id=self.participant_id,
            client_time=client_time, server_time=now,
        )

    def _error_event(self, action: str, source: str, error: Exception, now: float,
                     client_time: float | None) -> dict[str, Any]:
        return {
            "episode_id": self.episode_id, "seq": self.seq, "study_id": self.study_id,
            "participant_id": self.participant_id, "problem_id": self.problem_id,
            "phase": self.episode.phase, "tick": None, "action": action, "source": source,
            "applied": False, "server_time": now, "client_time": client_time,
            "error": f"{type(error).__name__}: {error}",
        }

    def _record(self, step: Step | None, event: dict[str, Any]) -> None:
        if self.store is None:
            return
        self.store.write_event(event)
        if step is not None and step.done:
            self.store.finish_episode(
                self.episode_id, status="done", phase=step.next_phase, score=step.score,
                info={**self.episode.outcome(), "ticks": step.index + 1},
            )

    def abandon(self) -> None:
        """Close the episode row of a session nobody came back to; inputs still queued
        are logged as dropped."""
        with self.lock:
            for item in self.queue:
                self._log_raw(item.action, "dropped", "the session was abandoned",
                              time.time(), item.client_time)
            self.queue.clear()
        if self.store is not None and not self.episode.done:
            self.store.finish_episode(self.episode_id, status="abandoned",
                                      phase=self.episode.phase, score=None, info={})

    def get_state(self) -> dict[str, Any]:
        """Everything a client draws now (the episode's view, plus the session token)."""
        with self.lock:
            return {**self.episode.view(), "token": self.token}


Deliver = Callable[[GameSession, Tick], None]


def next_deadline(deadline: float, period: float, now: float) -> float:
    """The tick after the one due at ``deadline``, on the session's fixed schedule.

    After a stall longer than a period the missed ticks are skipped (never run in a
    burst) but the phase is kept: restarting every late session at ``now`` lined them all
    up on the same instant, and the next ticks then queued behind one another.

    >>> next_deadline(10.0, 0.125, now=10.01), next_deadline(10.0, 0.125, now=10.6)
    (10.125, 10.5)
    """
    following = deadline + period
    if following > now - period:
        return following
    return following + period * math.floor((now - following) / period)


class Scheduler:
    """The one background task that ticks every live session at its frame rate.

    ``start_task`` and ``sleep`` come from the async mode in use (Flask-SocketIO's
    ``start_background_task`` and ``sleep``), so the same loop runs under threads or
    greenlets. Sessions are kept by token; only scheduled (joined) sessions tick.
    """

    def __init__(
        self,
        deliver: Deliver,
        *,
        start_task: Callable[..., Any],
        sleep: Callable[[float], Any],
        idle_timeout: float = 600.0,
        max_sleep: float = 0.01,
    ) -> None:
        self.deliver = deliver
        self.start_task = start_task
        self.sleep = sleep
        self.idle_timeout = idle_timeout
        self.max_sleep = max_sleep
        self.sessions: dict[str, GameSession] = {}
        self.heap: list[tuple[float, int, str]] = []
        self.scheduled: dict[str, int] = {}
        """token -> the heap entry number that is current (older entries are stale)."""
        self.counter = itertools.count()
        self.lock = threading.Lock()
        self.task: Any = None
        self.running = False
        self.next_sweep = 0.0

    # -- sessions -------------------------------------------------------------------------

    def add(self, session: GameSession) -> GameSession:
        """Keep ``session`` under its token (it ticks once :meth:`start` is called)."""
        with self.lock:
            self.sessions[session.token] = session
        return session

    def get(self, token: Any) -> GameSession | None:
        return self.sessions.get(token) if isinstance(token, str) else None

    def sessions_of(self, sid: str) -> list[GameSession]:
        """The sessions bound to connection ``sid``: a snapshot taken under the lock, since
        handler threads read while others add sessions (iterating the live dict raised
        "dictionary changed size during iteration" under load)."""
        with self.lock:
            return [s for s in self.sessions.values() if s.sid == sid]

    def start(self, token: str) -> None:
        """Tick this session from one period from now on (idempotent)."""
        session = self.sessions[token]
        with self.lock:
            if token not in self.scheduled and not session.episode.done:
                self._push(token, time.monotonic() + session.period)
        self._ensure_running()

    def pause(self, token: str) -> None:
        """Stop ticking this session (its participant left); it may be started again."""
        with self.lock:
            self.scheduled.pop(token, None)

    def remove(self, token: str) -> GameSession | None:
        with self.lock:
            self.scheduled.pop(token, None)
            return self.sessions.pop(token, None)

    def _push(self, token: str, deadline: float) -> None:
        number = next(self.counter)
        self.scheduled[token] = number
        heapq.heappush(self.heap, (deadline, number, token))

    # -- the loop -------------------------------------------------------------------------

    def _ensure_running(self) -> None:
        with self.lock:
            if self.running:
                return
            self.running = True
        self.task = self.start_task(self.run)

    def stop(self) -> None:
        """End the loop (tests and shutdown); sessions stay where they are."""
        self.running = False

    def run(self) -> None:
        """Tick whatever is due, then sleep until the next deadline (at most max_sleep,
        so that a session started meanwhile is never late because of the sleep)."""
        while self.running:
            for token, deadline in self._pop_due(time.monotonic()):
                self._tick(token, deadline)
            self._sweep_idle()
            self.sleep(self._time_to_next())

    def _pop_due(self, now: float) -> list[tuple[str, float]]:
        due = []
        with self.lock:
            while self.heap and self.heap[0][0] <= now:
                deadline, number, token = heapq.heappop(self.heap)
                if self.scheduled.get(token) == number:
                    due.append((token, deadline))
        return due

    def _time_to_next(self) -> float:
        with self.lock:
            if not self.heap:
                return self.max_sleep
            return min(self.max_sleep, max(0.0, self.heap[0][0] - time.monotonic()))

    def _tick(self, token: str, deadline: float) -> None:
        session = self.sessions.get(token)
        if session is None:
            return
        lateness = time.monotonic() - deadline
        try:
            tick = session.tick(lateness)
        except Exception:  # the store or the view failed: keep every other session going
            log.exception("session %s: tick failed", token[:6])
            self.pause(token)
            return
        self._reschedule(session, deadline, done=tick.done)
        try:
            self.deliver(session, tick)
        except Exception:
            log.exception("session %s: delivering the state failed", token[:6])

    def _reschedule(self, session: GameSession, deadline: float, done: bool) -> None:
        with self.lock:
            if done:
                self.scheduled.pop(session.token, None)
                return
            if session.token not in self.scheduled:
                return  # paused while it ticked
            self._push(session.token, next_deadline(deadline, session.period, time.monotonic()))

    def _sweep_idle(self) -> None:
        """Abandon sessions nobody has been connected to for ``idle_timeout`` seconds."""
        now = time.time()
        if now < self.next_sweep:
            return
        self.next_sweep = now + 5.0
        stale = [s for s in list(self.sessions.values())
                 if s.idle_since is not None and now - s.idle_since > self.idle_timeout]
        for session in stale:
            self.remove(session.token)
            session.abandon()
