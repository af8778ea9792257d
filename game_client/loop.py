"""The local game loop: the real-time scheduler's semantics with no server and no pygame.

A :class:`GameLoop` is ticked at the environment's frame rate by whatever owns the clock
(the pygame front end, or a test calling :meth:`GameLoop.tick` directly). It keeps the
real-time server's rules (``study_server.realtime.GameSession``) so that the same inputs
give the same events locally and in a study: inputs wait in a short queue (more than
``queue_size`` are dropped and recorded as dropped); a tick applies at most one input,
the first queued one allowed in the current phase (the ones before it are recorded as
rejected), or ``noop`` when there is none, so idle time passes exactly as it does for a
participant.

Pause and single-frame stepping exist for developers debugging an environment: while
paused, ticks do nothing and queued inputs wait for the next frame step.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from tasks.core import parse_action
from tasks.worldtest.episode import Step

MIN_FPS, MAX_FPS = 1, 60
QUEUE_SIZE = 4
"""Inputs waiting for a tick, as on the server; more are dropped."""


class Recorder(Protocol):
    """Where a loop reports what happened (see :mod:`game_client.record`)."""

    def on_step(self, step: Step, *, source: str, client_time: float | None) -> None: ...

    def on_raw(self, text: str, *, status: str, reason: str, client_time: float | None) -> None: ...

    def on_finish(self, driver: Any) -> None: ...


@dataclass
class Pending:
    text: str
    client_time: float | None


class GameLoop:
    """Ticks one episode (or sandbox); knows nothing about windows, keys or sockets."""

    def __init__(
        self,
        driver: Any,
        *,
        fps: int | None = None,
        recorder: Recorder | None = None,
        clock: Callable[[], float] = time.time,
        queue_size: int = QUEUE_SIZE,
    ) -> None:
        self.driver = driver
        self.fps = _clamp_fps(fps or driver.frame_rate)
        self.recorder = recorder
        self.clock = clock
        self.paused = False
        self.last_action: str | None = None
        self.last_source: str | None = None
        self.steps: list[Step] = []
        self.queue_size = queue_size
        self._queue: deque[Pending] = deque()
        self._lock = threading.Lock()
        self._finished = False

    # -- input ----------------------------------------------------------------------------

    def enqueue(self, text: str, client_time: float | None = None) -> bool:
        """Queue ``text`` for a coming tick. False, and recorded, when it does not parse
        (or clicks outside the grid) or the queue is full; False when the episode is over."""
        client_time = self.clock() if client_time is None else client_time
        with self._lock:
            if self.done:
                return False
            try:
                text = str(parse_action(text, self.driver.size))
            except ValueError as error:
                self._report_raw(text, "malformed", str(error), client_time)
                return False
            if len(self._queue) >= self.queue_size:
                reason = f"{self.queue_size} inputs already wait for the next tick"
                self._report_raw(text, "dropped", reason, client_time)
                return False
            self._queue.append(Pending(text, client_time))
            return True

    # -- time -----------------------------------------------------------------------------

    def tick(self) -> Step | None:
        """One frame: apply the kept input or ``noop``; nothing while paused or done."""
        if self.paused:
            return None
        return self._advance()

    def step_frame(self) -> Step | None:
        """One frame even while paused (the developer's single-step)."""
        return self._advance()

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        return self.paused

    def change_fps(self, delta: int) -> int:
        self.fps = _clamp_fps(self.fps + delta)
        return self.fps

    @property
    def done(self) -> bool:
        return self.driver.done

    def status_line(self) -> str:
        """``phase | tick | last action | fps`` for the window's status bar."""
        view = self.driver.view()
        last = self.last_action or "-"
        if self.last_source == "auto":
            last += " (auto)"
        parts = [view["phase"], f"tick {view['tick']}", f"last {last}", f"{self.fps} fps"]
        if self.paused:
            parts.append("PAUSED")
        if view["score"] is not None:
            parts.append(f"score {view['score']:.3f}")
        return " | ".join(parts)

    # -- internals ------------------------------------------------------------------------

    def _advance(self) -> Step | None:
        with self._lock:
            if self.done:
                return None
            pending = self._next_input()
        text, source, client_time = "noop", "auto", None
        if pending is not None:
            text, source, client_time = pending.text, "input", pending.client_time
        step = self.driver.apply(text)
        self.steps.append(step)
        self.last_action, self.last_source = step.action, source
        if self.recorder is not None:
            self.recorder.on_step(step, source=source, client_time=client_time)
        if step.done:
            self._finish()
        return step

    def _next_input(self) -> Pending | None:
        """The first queued input allowed now; those before it are recorded as rejected."""
        while self._queue:
            pending = self._queue.popleft()
            if self.driver.is_allowed(pending.text):
                return pending
            self._report_raw(pending.text, "rejected", self._why_not(pending.text),
                             pending.client_time)
        return None

    def _why_not(self, text: str) -> str:
        allowed = ", ".join(self.driver.allowed_verbs())
        return f"{text!r} is not allowed in the {self.driver.phase} phase (allowed: {allowed})"

    def _report_raw(self, text: str, status: str, reason: str, client_time: float | None) -> None:
        if self.recorder is not None:
            self.recorder.on_raw(text, status=status, reason=reason, client_time=client_time)

    def _finish(self) -> None:
        if not self._finished:
            self._finished = True
            if self.recorder is not None:
                self.recorder.on_finish(self.driver)

    def close(self) -> None:
        """End the recording of an unfinished run (the window was closed)."""
        self._finish()


def _clamp_fps(fps: int) -> int:
    return max(MIN_FPS, min(MAX_FPS, int(fps)))
