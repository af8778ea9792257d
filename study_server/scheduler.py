"""The one scheduler that ticks every live session at its environment's frame rate.

A heap of next-tick deadlines, one per session, drained by a single background task:
there is no thread per participant. Each due session ticks once
(:meth:`study_server.session.GameSession.tick`); the new state goes to ``deliver``,
which the socket layer binds to that participant's room. A session nobody has been
connected to for ``idle_timeout`` seconds is abandoned, a preview nobody joined within
``unjoined_timeout`` seconds too.

While the store cannot keep up (``holding`` names why: a full disk, a stopped database),
the recorded sessions do not tick: each is told once (its state carries ``paused``), its
clock and its timers stand still, and it goes on by itself, on its schedule, once the
store has caught up. A game played on unrecorded would be a game nobody can score.
Previews, which record nothing, play on.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from study_server.clock import steady_time
from study_server.session import GameSession, label
from tasks.worldtest.tick import STOOD_STILL, Tick, next_deadline

log = logging.getLogger(__name__)

EARLY = 0.002
"""Seconds before its deadline a tick may run, with the ticks due then: the loop wakes
at most once in that time, not once for each session (200 sessions at 8 FPS woke it 1,600
times a second, and each wakeup costs a timer, a switch and a task). Two milliseconds
are a sixtieth of the shortest frame; the tick keeps its schedule and counts no
lateness for being early."""


Deliver = Callable[[GameSession, Tick | None], None]
"""Sends a session's state after a tick (None: it stopped or went on; see ``paused``)."""


def _alive(task: Any) -> bool:
    """Whether a task (a greenlet or a thread) has not ended."""
    alive = getattr(task, "is_alive", None)
    return alive() if alive is not None else not getattr(task, "dead", False)


def _preview(session: GameSession) -> bool:
    """Whether ``session`` is outside the participant flow (a preview, a script)."""
    return session.participant_id is None


NOT_JOINED = "nobody joined the preview"
"""Why a preview no page joined within the unjoined timeout is abandoned."""


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
        unjoined_timeout: float = 45.0,
        max_sleep: float = 0.01,
        holding: Callable[[], str | None] = lambda: None,
        early: float = EARLY,
    ) -> None:
        self.deliver = deliver
        self.holding = holding
        self.due: collections.deque[tuple[str, float, str | None]] = collections.deque()
        """Ticks popped from the heap that the loop has not begun."""
        self.start_task = start_task
        self.sleep = sleep
        self.idle_timeout = idle_timeout
        self.unjoined_timeout = unjoined_timeout
        self.max_sleep = max_sleep
        self.early = early
        self.sessions: dict[str, GameSession] = {}
        self.previews = 0
        """Sessions outside the participant flow in :attr:`sessions`, counted as they come
        and go (a count over every session on each preview opened made a burst of them
        cost the square of its size)."""
        self.heap: list[tuple[float, int, str]] = []
        self.scheduled: dict[str, int] = {}
        """token -> the heap entry number that is current (older entries are stale)."""
        self.counter = itertools.count()
        self.lock = threading.Lock()
        self.tasks: list[Any] = []
        """The loop's tasks that may still run: the current one, and those that handed
        the loop on in a long step (:meth:`lend`) and finish their tick."""
        self.turn = 0
        """Which task is the loop: the one started for this turn (older ones stop)."""
        self.ticking: int | None = None
        """The thread (a greenlet's, under gevent) of the loop while it ticks."""
        self.running = False
        self.next_sweep = 0.0

    # -- sessions -------------------------------------------------------------------------

    def add(self, session: GameSession) -> GameSession:
        """Keep ``session`` under its token (it ticks once :meth:`start` is called)."""
        with self.lock:
            replaced = self.sessions.get(session.token)
            self.sessions[session.token] = session
            self.previews += _preview(session) - (replaced is not None and _preview(replaced))
        return session

    def preview_count(self) -> int:
        """Live sessions outside the participant flow (previews, scripts)."""
        return self.previews

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
            session = self.sessions.pop(token, None)
            self.previews -= session is not None and _preview(session)
            return session

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
        self._start_loop()

    def _start_loop(self) -> None:
        self.turn += 1
        self.tasks = [task for task in self.tasks if _alive(task)]
        self.tasks.append(self.start_task(self.run, self.turn))

    def stop(self, timeout: float = 5.0) -> None:
        """End the loop and wait for a tick in flight to finish (tests and shutdown);
        sessions stay where they are."""
        self.running = False
        for task in list(self.tasks):
            join = getattr(task, "join", None)
            if join is not None:
                join(timeout)

    def run(self, turn: int) -> None:
        """Tick whatever is due, then sleep until the next deadline (at most max_sleep,
        so that a session started meanwhile is never late because of the sleep), as
        long as this task is the loop.

        The ticks run in the loop's own task, as soon as it wakes: a task for them
        started only after every connection ready in the same turn of gevent's loop had
        been served, which made a burst of arrivals every tick's wait (p99 10 ms against
        4.5 at 200 joining within a second, three runs each)."""
        while self.running and self.turn == turn:
            due = self._pop_due(time.monotonic())
            if due:
                held = self.holding()
                self.due.extend((token, deadline, held) for token, deadline in due)
            if self.due:  # with those a task that handed the loop on left
                self.ticking = threading.get_ident()
                self._run_due(turn)
                if self.turn != turn:
                    return  # a long step handed the loop on; its tick is done
                self.ticking = None
            self._sweep_idle()
            self.sleep(self._time_to_next())

    def _run_due(self, turn: int) -> None:
        """Tick what is due, in deadline order, until none is left or another task has
        become the loop (which takes the rest)."""
        due = self.due
        while due and self.turn == turn:
            token, deadline, held = due.popleft()
            try:
                self._tick(token, deadline, held)
            except Exception:  # a mistake in one tick must not stop the loop of them all
                log.exception("session %s: the tick failed", label(token))

    def lend(self) -> None:
        """A step is about to yield (``tasks.limits.Host.cooperate``). When it is the
        loop's, a new task becomes the loop: it takes the ticks still due and those that
        fall due, so none waits behind the long step, whose task ends with its tick."""
        if self.ticking == threading.get_ident():
            self.ticking = None
            self._start_loop()

    def _pop_due(self, now: float) -> list[tuple[str, float]]:
        """The ticks due at ``now`` and, when one is, those due within ``early`` of it."""
        due: list[tuple[str, float]] = []
        with self.lock:
            if not self.heap or self.heap[0][0] > now:
                return due
            until = now + self.early
            while self.heap and self.heap[0][0] <= until:
                deadline, number, token = heapq.heappop(self.heap)
                if self.scheduled.get(token) == number:
                    due.append((token, deadline))
        return due

    def _time_to_next(self) -> float:
        with self.lock:
            if not self.heap:
                return self.max_sleep
            return min(self.max_sleep, max(0.0, self.heap[0][0] - time.monotonic()))

    def _tick(self, token: str, deadline: float, held: str | None = None) -> None:
        session = self.sessions.get(token)
        if session is None:
            return
        if session.recorder is not None and self._held(session, held):
            self._reschedule(session, deadline, done=False)
            return
        lateness = max(0.0, time.monotonic() - deadline)
        try:
            tick = session.tick(lateness)
        except Exception:  # the store or the view failed: keep every other session going
            log.exception("session %s: tick failed", label(token))
            self.pause(token)
            return
        self._reschedule(session, deadline, done=tick.done)
        try:
            self.deliver(session, tick)
        except Exception:
            log.exception("session %s: delivering the state failed", label(token))

    def _held(self, session: GameSession, held: str | None) -> bool:
        """Whether ``session`` stands still this tick (the store is behind); its client
        is told when it stops and when it goes on."""
        if (held is None) == (session.paused is None):
            return held is not None
        session.paused = held
        session.engine.held = None if held is None else STOOD_STILL  # no key acts late
        if held is None:
            log.info("session %s: the store caught up; playing on", label(session.token))
        try:
            self.deliver(session, None)
        except Exception:
            log.exception("session %s: delivering the pause failed", label(session.token))
        return held is not None

    def _reschedule(self, session: GameSession, deadline: float, done: bool) -> None:
        with self.lock:
            if done:
                self.scheduled.pop(session.token, None)
                return
            if session.token not in self.scheduled:
                return  # paused while it ticked
            self._push(session.token, next_deadline(deadline, session.period, time.monotonic()))

    def _sweep_idle(self) -> None:
        """Abandon sessions nobody has been connected to for ``idle_timeout`` seconds, and
        previews nobody joined within ``unjoined_timeout`` seconds (a flood of them then
        holds memory for under a minute). Measured on :func:`study_server.clock.steady_time`:
        a step of the system's clock forward would abandon every game whose page was away
        at that moment."""
        now = steady_time()
        if now < self.next_sweep:
            return
        self.next_sweep = now + 5.0
        for session in list(self.sessions.values()):
            if session.idle_since is None:
                continue
            unjoined = session.participant_id is None and not session.joined
            if unjoined and now - session.idle_since > self.unjoined_timeout:
                self.remove(session.token)
                session.abandon(NOT_JOINED)
            elif now - session.idle_since > self.idle_timeout:
                self.remove(session.token)
                session.abandon(f"nobody was connected for {self.idle_timeout:g} s")
