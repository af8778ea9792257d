"""Which process plays a model's attempt, and whether it still lives.

A batch writes its process's identity into each attempt it opens or resumes (the
episode's ``info.owner``: host, pid and the process's start time, so that a reused pid is
not taken for the same process). An attempt that is still ``active`` when a rerun reads
it is either being played by a live process (left alone) or was left by a process that
died without closing it (``kill -9``, a power cut, an out-of-memory kill): a rerun ends
such an attempt as ``interrupted`` and continues it like any other interrupted attempt
(:func:`game_client.batch.reap_orphans`).

On the same host the answer is certain: the process is gone, or its pid now belongs to
a process started at another time. An attempt owned by a process on another host (two
machines sharing one database) is taken as dead when nothing was recorded for it for
:data:`LEASE` seconds.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

LEASE = 30 * 60.0
"""Seconds without a recorded turn after which an attempt owned on another host (or
owned by no recorded process) is taken as abandoned by its process."""


def _stat(pid: int) -> tuple[str, int] | None:
    """The state letter of process ``pid`` and its start time in clock ticks since boot
    (Linux's ``/proc/PID/stat``), or None when they cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after its end
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[19])


def _started(pid: int) -> int | None:
    stat = _stat(pid)
    return None if stat is None else stat[1]


def me() -> dict[str, Any]:
    """This process, as an attempt's ``info.owner`` names it."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "started": _started(os.getpid()),
            "since": time.time()}


def describe(owner: dict[str, Any] | None) -> str:
    if not owner:
        return "an unrecorded process"
    return f"process {owner.get('pid')} on {owner.get('host')}"


def orphaned(owner: dict[str, Any] | None) -> str:
    """The reason recorded on an attempt its process left active."""
    return f"{describe(owner)} ended without closing it"


def alive(owner: dict[str, Any] | None, last_seen: float, now: float | None = None,
          lease: float = LEASE) -> bool:
    """Whether the process that ``owner`` names may still be playing its attempt, whose
    last record was written at ``last_seen`` (Unix seconds)."""
    now = time.time() if now is None else now
    if not owner or owner.get("host") != socket.gethostname():
        return now - max(last_seen, float((owner or {}).get("since") or 0)) < lease
    pid = int(owner["pid"])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process with that pid: it exists
    stat = _stat(pid)
    if stat is None:
        return True  # no /proc: the pid exists, which is all that can be known
    state, started = stat
    return state != "Z" and (owner.get("started") is None or started == owner["started"])
