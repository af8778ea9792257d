"""The participant's clock against the server's: ping rounds and the offset they give.

Every input carries the client's timestamp; the server stores it on its own clock, so it
needs the offset between the two. The socket layer runs a *round* of pings when a client
joins and again whenever the estimate is older than the re-sync interval (a clock drifts,
a laptop's clock is adjusted, a long session crosses minutes), and each round's best
sample becomes the offset for the inputs that follow.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from typing import Any

from records.schema import is_number

PING_ROUNDS = 5
"""Pings per round; the one with the shortest round trip sets the offset."""
RECENT = 10
"""Round trips :meth:`ClockOffset.typical_rtt` looks at."""
LATEST_CLIENT_TIME = 1e11
"""Client times from this on (the year 5138) are no clock's reading."""
UNIX_SECONDS = f"Unix seconds (a finite number from 0 to {LATEST_CLIENT_TIME:g})"
"""What a client's time must be, as the refusal of one that is not says."""


_STARTED = (time.time(), time.monotonic())


def steady_time() -> float:
    """Unix seconds as the system's clock read when this process started, counted on
    since by the monotonic clock: a step of the system's clock while the server runs (an
    NTP correction, a virtual machine resumed) moves neither way here. What measures how
    long something has lasted, against a time the server noted itself."""
    wall, steady = _STARTED
    return wall + (time.monotonic() - steady)


def is_unix_time(value: Any) -> bool:
    """Whether ``value``, a time a client sent, can be a clock's reading: a number (not
    true or false) from 0 to :data:`LATEST_CLIENT_TIME`. Python's JSON parser reads
    ``NaN``, ``Infinity`` and ``1e999``, which no browser sends; a pong carrying one made
    the offset infinite, and every later input of its session failed to be stored.

    >>> [is_unix_time(v) for v in (1.7e9, 0, -1.0, float("nan"), float("inf"), 10**30, True)]
    [True, True, False, False, False, False, False]
    """
    return is_number(value) and 0 <= value < LATEST_CLIENT_TIME


class ClockOffset:
    """The participant's clock minus the server's, estimated NTP-style.

    The server sends its time ``sent``; the client answers at its time ``client_time``;
    the answer arrives at ``received``. Assuming the two legs take equally long, the
    offset is ``client_time - (sent + received) / 2``; a round keeps its sample with the
    shortest round trip, since its symmetric-delay error is bounded by half that trip.

    A sample better than the offset in use replaces it at once (the first round improves
    ping by ping); otherwise a round's best replaces it when the round is complete, so a
    drifting clock is followed even if the network got slower. Inputs are corrected with
    the offset of the moment they arrive; earlier rows are never rewritten.

    >>> clock = ClockOffset()
    >>> clock.start_round(at=100.0)
    >>> clock.add(sent=100.0, client_time=105.02, received=100.04)
    >>> round(clock.offset, 3), round(clock.to_server(110.0), 3)
    (5.0, 105.0)
    """

    def __init__(self, per_round: int = PING_ROUNDS) -> None:
        self.per_round = per_round
        self.offset = 0.0
        self.rtt = math.inf
        self.samples = 0
        self.recent: deque[float] = deque(maxlen=RECENT)
        """The last round trips, in seconds (:meth:`typical_rtt`)."""
        self.started: float | None = None
        """Server time the current round began (None before the first)."""
        self._round: tuple[int, float, float] = (0, math.inf, 0.0)
        """The current round: samples taken, its best round trip and that sample's offset."""

    def start_round(self, at: float) -> None:
        """Begin a round of pings at server time ``at``."""
        self.started = at
        self._round = (0, math.inf, 0.0)

    @property
    def round_complete(self) -> bool:
        return self._round[0] >= self.per_round

    def due(self, now: float, every: float) -> bool:
        """True when no round has run within ``every`` seconds before ``now``."""
        return self.started is None or now - self.started >= every

    def add(self, sent: float, client_time: float, received: float) -> None:
        """Take one ping/pong sample into account."""
        rtt = received - sent
        self.samples += 1
        if rtt >= 0:
            self.recent.append(rtt)
        taken, best, offset = self._round
        if 0 <= rtt < best:
            best, offset = rtt, client_time - (sent + received) / 2
        self._round = (taken + 1, best, offset)
        if best < self.rtt or (self.round_complete and best < math.inf):
            self.rtt, self.offset = best, offset

    def typical_rtt(self) -> float | None:
        """The median of the last :data:`RECENT` round trips, once a round of pings is
        complete (a connection is judged on several samples, never one slow ping), in
        seconds; None before."""
        if self.samples < self.per_round or not self.recent:
            return None
        return statistics.median(self.recent)

    def to_server(self, client_time: float | None) -> float | None:
        """A client timestamp on the server's clock (unchanged before any sample)."""
        return None if client_time is None else client_time - self.offset
