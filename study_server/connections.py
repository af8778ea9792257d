"""How many connections one address may hold open to a server process, how long a
connection may stay silent, and how many open files the process may have at all.

Every connection a server process holds is an open file. Measured before: a process at
the usual open-file limit of a login shell or a systemd service (1,024), and one client
that opened TCP connections to it and sent nothing: after 1,137 of them the process
could accept no one else. A new participant's page waited 60 s and failed, and so did
the dashboard, for as long as that client held its connections, and the log took a
traceback a second. The games already playing went on.

So, under gevent (``gridstudy serve``'s default), :class:`ConnectionGuard` is the
server's way of starting each accepted connection:

* an address may hold at most ``per_address`` connections at once
  (``CONNECTIONS_PER_ADDRESS``, 200; an IPv6 address counts with its /64, as for
  arrivals). One more is closed as it is accepted, before anything is read from it. A
  participant's page holds one websocket and, while it loads, a few more; a lab room of
  thirty behind one address holds well under the limit. The server's own machine (a
  loopback address: nginx in front of the workers, the operator, the tests) is not
  limited; behind nginx the limit is nginx's (``limit_conn``, the same number);
* a connection that sends nothing for ``quiet`` seconds (``CONNECTION_QUIET``, 60) is
  closed. A game's connection is never that quiet: Engine.IO pings every 25 s and the
  page answers.

Refusals are logged in one line a minute at most, with their count and how many
addresses sent them, as the socket door does (``door.py``).

:func:`raise_open_file_limit` lifts the process's soft limit on open files to its hard
limit at start (the soft limit is what a shell or systemd gives unasked; the hard one is
what an unprivileged process may take, often 524,288), and says so when even that leaves
room for few connections.
"""

from __future__ import annotations

import logging
import resource
import time
from collections import Counter
from typing import Any

from study_server.arrivals import network

log = logging.getLogger(__name__)

CONNECTIONS_PER_ADDRESS = 200
"""Connections one address may hold open to a server process (or to nginx in front of
the workers) at once, by default."""

CONNECTION_QUIET = 60.0
"""Seconds a connection may send nothing before it is closed, by default."""

LOG_EVERY = 60.0
"""Seconds between two log lines about refused connections, at most."""

FEW_FILES = 4096
"""An open-file limit below this is said at start: it leaves room for fewer connections
than a large study may bring."""


class ConnectionGuard:
    """gevent's ``spawn`` for the server (``WSGIServer(spawn=...)``): called on the loop
    with each accepted connection, it starts the connection's handling, or closes it at
    once when its address holds ``per_address`` connections already."""

    def __init__(self, per_address: int, quiet: float, clock: Any = time.monotonic) -> None:
        self.per_address, self.quiet, self.clock = per_address, quiet, clock
        self.open: Counter[str] = Counter()
        """Connections open now, per address (none for the server's own machine)."""
        self._refused: Counter[str] = Counter()
        self._logged = -LOG_EVERY  # the first refusal is said at once

    def __call__(self, run: Any, handle: Any, close: Any, args: tuple[Any, ...]) -> Any:
        import gevent

        connection, address = args[0], args[1]
        key = network(address[0] if isinstance(address, tuple) else None)
        if key is not None and self.open[key] >= self.per_address:
            close(*args)
            self._refuse(key)
            return None
        connection.settimeout(self.quiet)
        if key is not None:
            self.open[key] += 1
        return gevent.spawn(self._run, key, run, handle, close, args)

    def _run(self, key: str | None, run: Any, *rest: Any) -> None:
        try:
            run(*rest)
        finally:
            if key is not None:
                self.open[key] -= 1
                if not self.open[key]:
                    del self.open[key]

    def _refuse(self, key: str) -> None:
        self._refused[key] += 1
        now = self.clock()
        if now - self._logged >= LOG_EVERY:
            log.warning("closed %d connection(s) as they came, from %d address(es) holding "
                        "%d connections each already (one such line a minute at most)",
                        sum(self._refused.values()), len(self._refused), self.per_address)
            self._refused.clear()
            self._logged = now


def raise_open_file_limit() -> int:
    """Lift this process's soft limit on open files to its hard limit (children started
    later, nginx among them, inherit it); the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    except (ValueError, OSError):  # above the system's own ceiling (fs.nr_open)
        return soft
    return wanted


def few_files_warning(limit: int) -> str | None:
    """What to tell the operator when ``limit`` open files leave room for few
    connections, or None."""
    if limit == resource.RLIM_INFINITY or limit >= FEW_FILES:
        return None
    return (f"this process may hold at most {limit} open files, about one per participant "
            "connected: raise its limit (ulimit -n in the shell that starts it, or "
            "LimitNOFILE= in its systemd unit) before a large study")
