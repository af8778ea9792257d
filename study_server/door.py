"""The door of the Socket.IO server: what a connection may send, judged before any work.

One process ticks every session of a study, so whatever one visitor makes it do, every
participant waits for. Measured before this door: one anonymous connection sending
``input`` with a made-up token as fast as it could (22,796 events in 2 s) left a player
without a frame for 18 s and wrote a log line per event, because every event was decoded,
given a greenlet of its own, handled and refused.

:class:`Door` sits in front of python-socketio: it takes every Engine.IO message first
(``eio.on("message")``, which runs in the connection's own reader, before any decoding or
spawning) and lets through only

* packets of the kinds this protocol uses (connect, disconnect, event, ack: never binary),
* events of the default namespace whose name the connection may send now: ``join`` and
  ``pong`` until it has joined a game (``join-browser`` for one played in the browser),
  then ``input`` (or ``log``, a browser's play log) too (the dashboard's ``/monitor``
  namespace takes no event at all),
* within the connection's budget: a token bucket of ``rate`` events a second with bursts
  of ``burst`` (a few times what the fastest player sends: a held key repeats about 30
  times a second, and the tick rule takes at most one input a tick anyway).

Everything else is dropped unread and counted, and that connection's reading pauses
briefly (the door runs in the connection's reader, so a flood waits in its sender's
buffers, not in our loop). A connection that keeps being refused
(``strikes`` refusals within ten seconds) is disconnected. Refusals are logged in one line
a minute at most, whatever the flood and however many connections send it, with their
counts by reason; the text of a refused message is never logged (it may hold a token). The size of a message is capped by Engine.IO itself
(``max_http_buffer_size``, set by the app factory).
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

RATE = 60.0
"""Events a second a connection may send, sustained (``SOCKET_RATE``)."""
BURST = 120
"""Events a connection may send at once (``SOCKET_BURST``)."""
STRIKES = 50
"""Refusals within :data:`STRIKE_WINDOW` seconds after which a connection is closed (a
person's client is refused a handful at most: a key sent in the instant before its join
was answered)."""
STRIKE_WINDOW = 10.0
REFUSED_PAUSE = 0.02
"""Seconds a connection's reading stops after each refused message (a flood is read at
50 messages a second at most until the connection is closed)."""
LOG_EVERY = 60.0
"""Seconds between two log lines about refused messages."""
MAX_MESSAGE = 64 * 1024
"""Bytes of the largest message Engine.IO accepts (``max_http_buffer_size``)."""

BEFORE_JOIN = frozenset({"join", "join-browser", "pong"})
AFTER_JOIN = BEFORE_JOIN | {"input", "unsent", "log"}
EVENT = re.compile(r'2(\d*)\["([A-Za-z_-]{1,16})"')
"""A Socket.IO event of the default namespace: packet type 2, an optional ack id, then
the event's name as the first element of its array."""
CONTROL = frozenset("013")
"""Connect, disconnect and ack packets (of any namespace): always let through."""


@dataclass
class Visitor:
    """One Engine.IO connection as the door sees it."""

    tokens: float
    checked: float
    joined: bool = False
    strikes: list[float] = field(default_factory=list)
    """When its recent refusals happened (within :data:`STRIKE_WINDOW`)."""


class Door:
    """Judges every message of ``server`` (a ``socketio.Server``) before it is decoded."""

    def __init__(self, server: Any, *, rate: float = RATE, burst: int = BURST,
                 strikes: int = STRIKES, clock: Any = time.monotonic,
                 sleep: Any = None) -> None:
        self.server, self.rate, self.burst, self.strike_limit = server, rate, burst, strikes
        self.clock = clock
        self.sleep = sleep or server.sleep
        self.visitors: dict[str, Visitor] = {}
        self.totals: Counter = Counter()
        """Every refusal since the start, by reason (a small fixed set of phrases)."""
        self.closed: dict[str, float] = {}
        """Connections gone (closed by the door or by their client) and when: what their
        reader still holds is dropped without a word."""
        self._pending: Counter = Counter()
        self._senders: set[str] = set()
        self._logged = clock() - LOG_EVERY
        self._dispatch = server._handle_eio_message
        self._forget = server._handle_eio_disconnect
        server.eio.on("message", self.message)
        server.eio.on("disconnect", self.disconnected)

    # -- the door -------------------------------------------------------------------------

    def message(self, eio_sid: str, data: Any) -> None:
        """An Engine.IO message: passed on to Socket.IO, or dropped unread."""
        if eio_sid in self.closed:
            return
        visitor = self._visitor(eio_sid)
        reason = self._judge(visitor, data)
        if reason is None:
            self._dispatch(eio_sid, data)
        else:
            self._refuse(eio_sid, visitor, reason)
            # This runs in the connection's own reader: pausing it stops reading that
            # socket, so a flood backs up in its sender's buffers instead of our loop.
            self.sleep(REFUSED_PAUSE)

    def _judge(self, visitor: Visitor, data: Any) -> str | None:
        """None to let ``data`` through, else why not (a short phrase for the log)."""
        now = self.clock()
        visitor.tokens = min(self.burst, visitor.tokens + (now - visitor.checked) * self.rate)
        visitor.checked = now
        if visitor.tokens < 1:
            return "over the event budget"
        visitor.tokens -= 1
        if not isinstance(data, str) or not data:
            return "binary or empty"
        if data[0] in CONTROL:
            return None
        event = EVENT.match(data)
        if event is None:
            return "not an event of this protocol"
        if event.group(2) not in (AFTER_JOIN if visitor.joined else BEFORE_JOIN):
            return "an event not allowed now"
        return None

    def _refuse(self, eio_sid: str, visitor: Visitor, reason: str) -> None:
        now = self.clock()
        self.totals[reason] += 1
        self._pending[reason] += 1
        if len(self._senders) < 10_000:
            self._senders.add(eio_sid)
        visitor.strikes.append(now)
        while visitor.strikes and visitor.strikes[0] < now - STRIKE_WINDOW:
            visitor.strikes.pop(0)
        if len(visitor.strikes) >= self.strike_limit:
            visitor.strikes.clear()
            self.totals["connection closed for sending too much"] += 1
            self._pending["connection closed for sending too much"] += 1
            self.closed[eio_sid] = now
            self.server.eio.disconnect(eio_sid)
        if now - self._logged >= LOG_EVERY:
            self.log(now)

    def log(self, now: float | None = None) -> None:
        """One line: the refusals since the last line, by reason, and from how many
        connections (at most one a minute, whatever the flood)."""
        now = self.clock() if now is None else now
        if self._pending:
            counts = ", ".join(f"{n} {reason}" for reason, n in self._pending.most_common())
            log.warning("socket door: refused %s, from %d connection(s), in the last %.0f s",
                        counts, len(self._senders), min(now - self._logged, 3600))
        self._pending.clear()
        self._senders.clear()
        self._logged = now

    # -- bookkeeping ----------------------------------------------------------------------

    def _visitor(self, eio_sid: str) -> Visitor:
        visitor = self.visitors.get(eio_sid)
        if visitor is None:
            visitor = self.visitors[eio_sid] = Visitor(tokens=float(self.burst),
                                                       checked=self.clock())
        return visitor

    def note(self, sid: str, reason: str) -> None:
        """A handler refused a message of Socket.IO connection ``sid``: counted with the
        door's own refusals (same log line, same strikes)."""
        eio_sid = self.server.manager.eio_sid_from_sid(sid, "/")
        if eio_sid is not None:
            self._refuse(eio_sid, self._visitor(eio_sid), reason)

    def joined(self, sid: str) -> None:
        """The Socket.IO connection ``sid`` joined a game: it may send ``input`` now."""
        eio_sid = self.server.manager.eio_sid_from_sid(sid, "/")
        if eio_sid is not None:
            self._visitor(eio_sid).joined = True

    def disconnected(self, eio_sid: str, reason: Any = None) -> None:
        now = self.clock()
        self.visitors.pop(eio_sid, None)
        self.closed[eio_sid] = now
        if len(self.closed) > 1000:  # forget the ones gone for a minute
            self.closed = {sid: at for sid, at in self.closed.items() if at > now - 60}
        self._forget(eio_sid, reason)
