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

from study_server.session import GameSession, label
from tasks.worldtest.tick import Tick, next_deadline

log = logging.getLogger(__name__)

EARLY = 0.002
"""Seconds before its deadline a tick may run, with the ticks due then: the loop wakes
at most once in that time, not once for each session (200 sessions at 8 FPS woke it 1,600
times a second, and each wakeup costs a timer, a switch and a task). Two milliseconds
are a sixtieth of the shortest frame; the tick keeps its schedule and counts no
lateness for being early."""


Deliver = Callable[[GameSession, Tick | None], None]
"""Sends a session's state after a tick (None: it stopped or went on; see ``paused``)."""


def _preview(session: GameSession) -> bool:
    """Whether ``session`` is outside the participant flow (a preview, a script)."""
    return session.participant_id is None


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
        spawn: Callable[..., Any] | None = None,
        early: float = EARLY,
    ) -> None:
        self.deliver = deliver
        self.holding = holding
        self.spawn = spawn
        """Starts a task that runs the due ticks (gevent's greenlets): one per turn of
        the loop, and another whenever a long step yields (:meth:`lend`), so that every
        other session ticks meanwhile; None ticks in the loop itself."""
        self.due: collections.deque[tuple[str, float, str | None]] = collections.deque()
        """Ticks popped from the heap that no task has begun (with ``spawn``)."""
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
        self.task: Any = None
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
        self.task = self.start_task(self.run)

    def stop(self, timeout: float = 5.0) -> None:
        """End the loop and wait for a tick in flight to finish (tests and shutdown);
        sessions stay where they are."""
        self.running = False
        join = getattr(self.task, "join", None)
        if join is not None:
            join(timeout)

    def run(self) -> None:
        """Tick whatever is due, then sleep until the next deadline (at most max_sleep,
        so that a session started meanwhile is never late because of the sleep)."""
        while self.running:
            due = self._pop_due(time.monotonic())
            held = self.holding() if due else None
            if self.spawn is None:
                for token, deadline in due:
                    self._tick(token, deadline, held)
            elif due:
                self.due.extend((token, deadline, held) for token, deadline in due)
                self.spawn(self._run_due)
            self._sweep_idle()
            self.sleep(self._time_to_next())

    def _run_due(self) -> None:
        """Tick what is due, in deadline order, until none is left. A task per tick cost a
        greenlet and two switches each (4 % of the server at 100 players)."""
        due = self.due
        while due:
            self._tick(*due.popleft())

    def lend(self) -> None:
        """A step is about to yield (``tasks.limits.Host.cooperate``): a new task takes
        the ticks still due, so none waits behind the long step."""
        if self.spawn is not None and self.due:
            self.spawn(self._run_due)

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
        holds memory for under a minute)."""
        now = time.time()
        if now < self.next_sweep:
            return
        self.next_sweep = now + 5.0
        for session in list(self.sessions.values()):
            if session.idle_since is None:
                continue
            unjoined = session.participant_id is None and not session.joined
            if unjoined and now - session.idle_since > self.unjoined_timeout:
                self.remove(session.token)
                session.abandon("nobody joined the preview")
            elif now - session.idle_since > self.idle_timeout:
                self.remove(session.token)
                session.abandon()
