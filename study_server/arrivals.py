"""How many new participants one address may bring into the studies: a sliding window
per address, in this process.

Anyone with a study's link can make up a Prolific id, and each made-up id was a new
participant: measured before, one client made 30 a second, every one counted as
arrived on the dashboard, and each that passes the consent and the colour check holds
problems' slots until it is abandoned. People on Prolific arrive from their own
addresses; a lab running a session in one room, or a mobile network, puts a few dozen
behind one. So an address may bring ``limit`` new participants within ``window``
seconds (30 in 10 minutes by default: ``ARRIVALS_PER_ADDRESS`` and ``ARRIVALS_WINDOW``);
the next is asked to come back when the oldest of them leaves the window. A returning
participant (the same id) is never counted or refused.

The server's own machine (a loopback address: the operator, the tests, the benchmarks)
is not limited. Behind a proxy (``BEHIND_PROXY``) the address is the client's, from
``X-Forwarded-For``. Each worker counts its own arrivals: with N workers an address may
bring up to N times the limit. Addresses are kept in memory only, for the window.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import deque
from typing import Any


class TooManyArrivals(Exception):
    """A new participant from an address that brought its limit within the window."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"too many new participants from one address; retry in {retry_after:.0f} s")
        self.retry_after = retry_after


class Arrivals:
    """New participants per address within the last ``window`` seconds."""

    def __init__(self, limit: int, window: float, clock: Any = time.monotonic) -> None:
        self.limit, self.window, self.clock = limit, window, clock
        self.seen: dict[str, deque[float]] = {}
        self.order: deque[tuple[float, str]] = deque()
        """Every counted arrival, oldest first: what leaves the window, in O(1) each."""
        self.lock = threading.Lock()

    def admit(self, address: str | None) -> None:
        """Count a new participant from ``address``, or raise :class:`TooManyArrivals`
        (nothing counted) when it brought ``limit`` within the window."""
        if self.limit <= 0 or _local(address):
            return
        now = self.clock()
        with self.lock:
            while self.order and self.order[0][0] <= now - self.window:
                _, gone = self.order.popleft()
                self.seen[gone].popleft()
                if not self.seen[gone]:
                    del self.seen[gone]
            times = self.seen.setdefault(address, deque())
            if len(times) >= self.limit:
                raise TooManyArrivals(times[0] + self.window - now)
            times.append(now)
            self.order.append((now, address))


def _local(address: str | None) -> bool:
    """The server's own machine, or no address at all (a test client)."""
    if not address:
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False
