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
``X-Forwarded-For``. An IPv6 address counts with its /64 (a home network's prefix: a
client may take any address in it). Each worker counts its own arrivals: with N workers
an address may bring up to N times the limit. Addresses are kept in memory only, for the
window.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import deque
from typing import Any


class TooManyArrivals(LookupError):
    """A new participant from an address that brought its limit within the window. The
    flow's pages (``consent/views.py``, which import nothing of the server's) know it by
    its ``retry_after``."""

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
        key = network(address)
        if self.limit <= 0 or key is None:
            return
        now = self.clock()
        with self.lock:
            while self.order and self.order[0][0] <= now - self.window:
                _, gone = self.order.popleft()
                self.seen[gone].popleft()
                if not self.seen[gone]:
                    del self.seen[gone]
            times = self.seen.setdefault(key, deque())
            if len(times) >= self.limit:
                raise TooManyArrivals(times[0] + self.window - now)
            times.append(now)
            self.order.append((now, key))


def network(address: str | None) -> str | None:
    """What ``address`` counts as: itself, an IPv6 address its /64; None for the
    server's own machine (or no address at all), which is not limited.

    >>> network("203.0.113.7"), network("2001:db8:1:2:a::9"), network("::1")
    ('203.0.113.7', '2001:db8:1:2::/64', None)
    """
    if not address:
        return None
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 6 and ip.ipv4_mapped is not None:  # ::ffff:203.0.113.7
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return None
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)
