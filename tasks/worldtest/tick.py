"""The real-time rule: a clock ticks the episode at its frame rate, one input per tick.

People play WorldTest problems in real time (002 Sec. 4.1): the world moves on by itself,
so every tick applies at most one input and an automatic ``noop`` when there is none.
:class:`TickEngine` is that rule, once, for every driver that plays in real time: the
study server's sessions (``study_server.session``) and the local pygame loop
(``game_client.loop``). It knows nothing about sockets, windows or the database; the
driver owns the clock and passes the time in, and the engine reports what happened to
a :class:`Sink` (``records.recorder.EpisodeRecorder`` writes it to the store).

Admitting an input, in order (the first rule that applies decides):

* ``rate-limited`` when the sender already sent ``rate_limit`` inputs in the last second
  (a flood is not stored input by input: each second's rate-limited inputs become one
  row, with their count, when the second is over or play ends);
* ``rejected`` when the episode is over;
* ``malformed`` when the text is no action (:func:`tasks.core.parse_action` says why);
* ``rejected`` when it clicks outside the grid;
* ``dropped`` when ``queue_size`` inputs already wait, as a key held down would be;
* otherwise ``queued``, reported to the sink at once (``acknowledged``, with the input's
  number in the attempt), so that an input is written when it is acknowledged, not when
  its tick comes.

Whether an action is allowed in the phase is decided when its tick comes, since an input
queued before it (``go-to-test``) may change the phase. A tick applies the first queued
input allowed then (those before it are refused as ``rejected``, with the episode's own
refusal text), else ``noop``. Inputs still queued behind the step that ends the episode (a
second press of ``submit``) are stored there as ``dropped``, with why. A step that raises
(an environment's runtime error) is reported as a failed step and not applied; the
episode goes on. A step stopped by its limit (an Autumn program's step budget, a Python
environment's time limit: :class:`tasks.limits.StepLimitExceeded`) would stop every later
step too, and has already held the process once: it is reported as a failed step, and the
attempt ends ``error`` with the reason in plain words (``info["reason"]``, and ``stopped``
in the view a client draws); later ticks do nothing.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from tasks.core import parse_action
from tasks.limits import StepLimitExceeded
from tasks.worldtest.episode import Episode, Step

log = logging.getLogger(__name__)

QUEUE_SIZE = 4
"""Inputs waiting for a tick; more are dropped (and reported)."""
RATE_LIMIT = 30
"""Inputs per second one sender may send; more are refused (and reported)."""
ERROR = "error"
"""The status of an attempt the environment could not continue."""
QUEUED, DROPPED, REJECTED, MALFORMED, RATE_LIMITED = (
    "queued", "dropped", "rejected", "malformed", "rate-limited")
INPUT, AUTO = "input", "auto"
"""Where an applied action came from: a person, or the clock's automatic noop."""
ENDED_BEFORE_TICK = "the attempt ended before this input's tick"
"""Why an input queued behind the step that ended the episode was not applied."""
UNSENT = "pressed while the page had lost its connection to the server; never sent"
"""Why a key the page kept while it was not connected was not applied."""
STOOD_STILL = "pressed while the game stood still (the server was saving); not applied"
"""Why an input sent while the game stands still (:attr:`TickEngine.held`) was not taken:
queued, it would have acted seconds after it was pressed."""
UNSENT_KEPT = 100
"""Keys a page keeps one by one while it is not connected; it counts the others."""
UNSENT_GRACE = 60.0
"""Seconds of keys at the rate limit an attempt may be told of beyond its own age here
(an outage before the server that rebuilt it started): :meth:`TickEngine.keep_unsent`."""


def next_deadline(deadline: float, period: float, now: float) -> float:
    """The tick after the one due at ``deadline``, on the session's fixed schedule.

    After a stall longer than a period the missed ticks are skipped (never run in a
    burst) but the phase is kept: restarting every late session at ``now`` lined them all
    up on the same instant, and the next ticks then queued behind one another. Every
    real-time clock keeps this schedule: the server's scheduler and a model's.

    >>> next_deadline(10.0, 0.125, now=10.01), next_deadline(10.0, 0.125, now=10.6)
    (10.125, 10.5)
    """
    following = deadline + period
    if following > now - period:
        return following
    return following + period * math.floor((now - following) / period)


class Sink(Protocol):
    """What a driver's engine reports to (``records.recorder.EpisodeRecorder``)."""

    def acknowledged(self, text: str, *, input_seq: int, received_at: float,
                     client_time: float | None = None) -> None:
        """An input was queued for a coming tick (number ``input_seq`` of the attempt)."""

    def applied(self, step: Step, *, source: str, server_time: float | None = None,
                client_time: float | None = None, input_seq: int | None = None,
                **fields: Any) -> None:
        """An action was applied (acknowledged input ``input_seq``, None for the clock's
        noop); ``fields`` are other event fields (``latency`` ...)."""

    def failed(self, action: str, *, phase: str, source: str, error: str,
               server_time: float | None = None, client_time: float | None = None,
               input_seq: int | None = None, **fields: Any) -> None:
        """Applying ``action`` raised; the episode was left as it was."""

    def refused(self, text: str, *, status: str, reason: str, received_at: float,
                client_time: float | None = None, input_seq: int | None = None) -> None:
        """An input was not applied: refused on arrival, or (``input_seq``) acknowledged
        and then refused at its tick or dropped."""

    def invalid(self, *, phase: str, raw_reply: str, error: str, **fields: Any) -> None:
        """A model turn named no action available then (the agent turn's report)."""

    def finished(self, episode: Episode, *, status: str, info: dict[str, Any]) -> None:
        """The attempt ended: ``done``, ``abandoned``, ``error`` or ``interrupted``."""

    def reopened(self) -> None:
        """An ended attempt continues (a model attempt resumed)."""


@dataclass
class Input:
    """One queued input: canonical action text and when it was made and received; who
    sent it (``source``) and other event fields it carries onto its event (a model's
    reply, tokens and latency, when a model plays on the clock)."""

    action: str
    client_time: float | None
    received_at: float
    source: str = INPUT
    fields: dict[str, Any] = field(default_factory=dict)
    number: int | None = None
    """Its number among the attempt's acknowledged inputs (``input_seq``)."""


@dataclass
class Tick:
    """What one tick did: the step (None if applying it raised), the action tried, where
    it came from, and the error of a failed step."""

    step: Step | None
    action: str
    source: str
    error: str | None = None
    stopped: bool = False
    """The environment could not go on: the attempt ended ``error`` (no more ticks)."""

    @property
    def done(self) -> bool:
        """Play is over after this tick (the episode ended, or the attempt was stopped)."""
        return self.stopped or (self.step is not None and self.step.done)


class TickEngine:
    """One episode played in real time: inputs are admitted into a short queue, the
    driver's clock calls :meth:`tick`. Thread-safe: every call holds :attr:`lock`."""

    def __init__(
        self,
        episode: Episode,
        sink: Sink | None = None,
        *,
        queue_size: int = QUEUE_SIZE,
        rate_limit: int = RATE_LIMIT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.episode = episode
        self.sink = sink
        self.queue_size = queue_size
        self.rate_limit = rate_limit
        self.clock = clock
        self.queue: deque[Input] = deque()
        self.recent: deque[float] = deque()
        self.limited: list[tuple[str, float, float | None]] = []
        """This second's rate-limited inputs (text, received, client time), not yet stored."""
        self.lock = threading.RLock()
        self.finished = False
        self.closed: str | None = None
        """Why no input is admitted any more (the server is stopping), or None."""
        self.held: str | None = None
        """Why inputs are dropped for now (the game stands still: :data:`STOOD_STILL`),
        or None."""
        self.acknowledged = 0
        """Inputs queued so far: the next one's number."""
        self.began = clock()
        self.unsent_rows = 0
        """Rows stored for keys pressed while the page was cut off (:meth:`keep_unsent`)."""
        self.stopped: str | None = None
        """Why the environment could not go on (a step over its limit), in plain words."""
        self.tick_refusals: list[str] = []
        """The queued inputs the last tick refused (not allowed in the phase then), which
        :meth:`view` shows once so that a client can say so."""

    # -- input ----------------------------------------------------------------------------

    def admit(self, text: Any, client_time: float | None = None,
              now: float | None = None, *, source: str = INPUT,
              fields: dict[str, Any] | None = None) -> str:
        """Queue one input for a coming tick; ``queued`` or why it was refused. ``source``
        and ``fields`` go onto its event when it is applied."""
        now = self.clock() if now is None else now
        with self.lock:
            self._store_limited(now)
            status, reason, action = self._judge(text, now)
            if self.closed is not None:
                status, reason = REJECTED, self.closed
            elif status == QUEUED and self.held is not None:
                status, reason = DROPPED, self.held
            if status == QUEUED:
                self._acknowledge(Input(action, client_time, now, source, dict(fields or {}),
                                        self.acknowledged))
            elif status == RATE_LIMITED:
                self.limited.append((str(text), now, client_time))
            else:
                self._refuse(str(text), status, reason, now, client_time)
            return status

    def keep_unsent(self, inputs: list[tuple[str, float | None]], more: int = 0,
                    now: float | None = None) -> bool:
        """Keep the keys a page held back while it had lost its connection (``(text,
        client_time)``, at most :data:`UNSENT_KEPT`, and how many ``more`` it only
        counted): each ``dropped`` with why (:data:`UNSENT`), the others in one row.
        Never applied: the participant saw none of them act. False, keeping none, past
        the rows a person could have pressed at the rate limit since this engine began,
        and for :data:`UNSENT_GRACE` seconds before (a page reconnecting again and again
        cannot write more than one sending inputs)."""
        now = self.clock() if now is None else now
        rows = len(inputs[:UNSENT_KEPT]) + (more > 0)
        with self.lock:
            if self.unsent_rows + rows > self.rate_limit * (now - self.began + UNSENT_GRACE):
                return False
            self.unsent_rows += rows
            for text, client_time in inputs[:UNSENT_KEPT]:
                self._refuse(text, DROPPED, UNSENT, now, client_time)
            if more > 0:
                self._refuse(inputs[-1][0] if inputs else "", DROPPED,
                             f"{more} more key(s) {UNSENT}, counted, not kept one by one",
                             now, None)
        return True

    def _acknowledge(self, item: Input) -> None:
        self.acknowledged += 1
        self.queue.append(item)
        if self.sink is not None:
            self.sink.acknowledged(item.action, input_seq=item.number,
                                   received_at=item.received_at, client_time=item.client_time)

    def _store_limited(self, now: float | None = None) -> None:
        """One row for the rate-limited inputs of a second that is over (every second,
        with ``now`` None)."""
        if not self.limited or (now is not None and now - self.limited[0][1] < 1.0):
            return
        text, first, client_time = self.limited[0]
        count, self.limited = len(self.limited), []
        self._refuse(text, RATE_LIMITED, f"more than {self.rate_limit} inputs per second: "
                     f"{count} input(s) refused in the second from this one on", first, client_time)

    def _judge(self, text: Any, now: float) -> tuple[str, str, str]:
        while self.recent and self.recent[0] <= now - 1.0:
            self.recent.popleft()
        if len(self.recent) >= self.rate_limit:
            return RATE_LIMITED, f"more than {self.rate_limit} inputs per second", ""
        self.recent.append(now)
        if self.episode.done:
            return REJECTED, "the episode is over", ""
        try:
            action = parse_action(text)
        except ValueError as error:
            return MALFORMED, str(error), ""
        try:
            parse_action(action, size=self.episode.size)
        except ValueError as error:
            return REJECTED, str(error), ""
        if len(self.queue) >= self.queue_size:
            return DROPPED, f"{self.queue_size} inputs already wait for the next tick", ""
        return QUEUED, "", str(action)

    def _refuse(self, text: str, status: str, reason: str, now: float,
                client_time: float | None, input_seq: int | None = None) -> None:
        log.info("input %r %s (%s)", text[:100], status, reason)
        if self.sink is not None:
            self.sink.refused(text[:200], status=status, reason=reason, received_at=now,
                              client_time=client_time, input_seq=input_seq)

    def _refuse_queued(self, item: Input, status: str, reason: str, now: float) -> None:
        self._refuse(item.action, status, reason, now, item.client_time, item.number)

    # -- the clock ------------------------------------------------------------------------

    def tick(self, now: float | None = None, **fields: Any) -> Tick:
        """Apply the first queued input allowed now, or an automatic ``noop``; report it.
        ``fields`` go on the event (the server's tick ``latency``)."""
        now = self.clock() if now is None else now
        with self.lock:
            if self.stopped is not None:
                return Tick(None, "noop", AUTO, self.stopped, stopped=True)
            self._store_limited(now)
            self.tick_refusals = []
            item = self._next_input(now)
            action, source = (item.action, item.source) if item else ("noop", AUTO)
            client_time = item.client_time if item else None
            fields = {**fields, **item.fields} if item else fields
            if item is not None and item.number is not None:
                fields["input_seq"] = item.number
            try:
                step = self.episode.apply(action)
            except StepLimitExceeded as error:
                return self._stop(action, source, error, now, client_time, fields)
            except Exception as error:  # an environment's runtime error must not end play
                return self._failed(action, source, error, now, client_time, fields)
            if self.sink is not None:
                self.sink.applied(step, source=source, server_time=now,
                                  client_time=client_time, **fields)
            if step.done:  # no tick will come for the inputs still queued
                self._drop_queued(ENDED_BEFORE_TICK, now)
                self._finish("done", {"ticks": step.index + 1})
            return Tick(step, action, source)

    def _next_input(self, now: float) -> Input | None:
        """The first queued input allowed in the current phase; those before it are
        refused with the episode's reason."""
        while self.queue:
            item = self.queue.popleft()
            refusal = self.episode.refusal(parse_action(item.action))
            if refusal is None:
                return item
            self.tick_refusals.append(item.action)
            self._refuse_queued(item, REJECTED, refusal, now)
        return None

    def _failed(self, action: str, source: str, error: Exception, now: float,
                client_time: float | None, fields: dict[str, Any]) -> Tick:
        message = f"{type(error).__name__}: {error}"
        log.warning("%s raised %s", action, message)
        if self.sink is not None:
            self.sink.failed(action, phase=self.episode.phase, source=source, error=message,
                             server_time=now, client_time=client_time, **fields)
        return Tick(None, action, source, message)

    def _stop(self, action: str, source: str, error: StepLimitExceeded, now: float,
              client_time: float | None, fields: dict[str, Any]) -> Tick:
        """A step over its limit: reported as failed, then the attempt ends ``error``."""
        failed = self._failed(action, source, error, now, client_time, fields)
        self.stopped = error.plain
        self.end(ERROR, {"reason": error.plain, "error": failed.error,
                         "ticks": len(self.episode.history)}, now)
        return Tick(None, action, source, failed.error, stopped=True)

    # -- the end --------------------------------------------------------------------------

    def abandon(self, reason: str, now: float | None = None) -> None:
        """Nobody will play on: queued inputs are refused as ``dropped`` and an unfinished
        episode ends ``abandoned`` (it scores 0)."""
        self.end("abandoned", {"reason": reason}, now)

    def end(self, status: str, info: dict[str, Any], now: float | None = None) -> None:
        """Play stops here: queued inputs are refused as ``dropped`` and an unfinished
        episode ends with ``status`` (``abandoned``, ``interrupted`` ...) and ``info``."""
        with self.lock:
            self.drain(info.get("reason", status), now)
            if not self.episode.done:
                self._finish(status, info)

    def drain(self, reason: str, now: float | None = None) -> None:
        """Store every input not yet applied (queued ones as ``dropped`` with ``reason``,
        this second's rate-limited count) and refuse any later input: the server is
        stopping, the episode stays open for a resume."""
        now = self.clock() if now is None else now
        with self.lock:
            self._drop_queued(reason, now)
            self._store_limited()
            self.closed = reason

    def _drop_queued(self, reason: str, now: float) -> None:
        """Refuse every queued input as ``dropped`` for ``reason`` (under the lock)."""
        while self.queue:
            self._refuse_queued(self.queue.popleft(), DROPPED, reason, now)

    def _finish(self, status: str, info: dict[str, Any]) -> None:
        if self.finished:
            return
        self._store_limited()
        self.finished = True
        if self.sink is not None:
            self.sink.finished(self.episode, status=status, info=info)

    def view(self) -> dict[str, Any]:
        """The episode's view, read under the lock, with ``refused``: the inputs the last
        tick refused (empty on most ticks); and ``stopped``, why the environment could not
        go on, once it could not."""
        with self.lock:
            view = self.episode.view()  # a new dict on every call: extend it in place
            view["refused"] = list(self.tick_refusals)
            if self.stopped is not None:
                view["stopped"] = self.stopped
            return view
