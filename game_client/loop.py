"""The local game loop: real-time play with no server and no pygame.

A :class:`GameLoop` is ticked at the environment's frame rate by whatever owns the clock
(the pygame front end, or a test calling :meth:`GameLoop.tick` directly). The rules of
real-time play are :class:`tasks.worldtest.tick.TickEngine`'s, the same the study server
keeps, so the same inputs give the same events, refusals and messages locally and in a
study; with a recorder (``gridstudy play --record``) they are written the same way too.

Pause and single-frame stepping exist for developers debugging an environment: while
paused, ticks do nothing and queued inputs wait for the next frame step.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tasks.worldtest.episode import Step
from tasks.worldtest.tick import AUTO, QUEUE_SIZE, RATE_LIMIT, Sink, TickEngine

MIN_FPS, MAX_FPS = 1, 60


class Pausable:
    """Pause and frame rate, as a developer changes them (``paused`` and ``fps`` are set by
    the class using it)."""

    paused: bool
    fps: int

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        return self.paused

    def change_fps(self, delta: int) -> int:
        self.fps = clamp_fps(self.fps + delta)
        return self.fps


class GameLoop(Pausable):
    """Ticks one episode (or sandbox); knows nothing about windows, keys or sockets."""

    def __init__(
        self,
        driver: Any,
        *,
        fps: int | None = None,
        recorder: Sink | None = None,
        clock: Callable[[], float] = time.time,
        queue_size: int = QUEUE_SIZE,
        rate_limit: int = RATE_LIMIT,
    ) -> None:
        self.driver = driver
        self.engine = TickEngine(driver, recorder, queue_size=queue_size,
                                 rate_limit=rate_limit, clock=clock)
        self.fps = clamp_fps(fps or driver.frame_rate)
        self.paused = False
        self.last_action: str | None = None
        self.last_source: str | None = None
        self.steps: list[Step] = []

    def enqueue(self, text: str, client_time: float | None = None) -> str:
        """Queue ``text`` for a coming tick: ``queued``, or why it was refused (and
        reported), as the server answers (:class:`~tasks.worldtest.tick.TickEngine`)."""
        client_time = self.engine.clock() if client_time is None else client_time
        return self.engine.admit(text, client_time)

    # -- time -----------------------------------------------------------------------------

    def tick(self) -> Step | None:
        """One frame: apply the kept input or ``noop``; nothing while paused or done."""
        if self.paused:
            return None
        return self._advance()

    def step_frame(self) -> Step | None:
        """One frame even while paused (the developer's single-step)."""
        return self._advance()

    @property
    def done(self) -> bool:
        return self.driver.done

    def status_line(self) -> str:
        """``phase | tick | last action | fps`` for the window's status bar."""
        view = self.driver.view()
        last = self.last_action or "-"
        if self.last_source == AUTO:
            last += " (auto)"
        parts = [view["phase"], f"tick {view['tick']}", f"last {last}", f"{self.fps} fps"]
        if self.paused:
            parts.append("PAUSED")
        if view["score"] is not None:
            parts.append(f"score {view['score']:.3f}")
        return " | ".join(parts)

    def _advance(self) -> Step | None:
        if self.done:
            return None
        tick = self.engine.tick()
        self.last_action, self.last_source = tick.action, tick.source
        if tick.step is not None:
            self.steps.append(tick.step)
        return tick.step

    def close(self, reason: str = "the window was closed") -> None:
        """End the recording of an unfinished run, saying why."""
        self.engine.abandon(reason)


def clamp_fps(fps: int) -> int:
    """``fps`` within the frame rates a window can keep."""
    return max(MIN_FPS, min(MAX_FPS, int(fps)))
