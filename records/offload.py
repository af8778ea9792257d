"""Blocking database work kept off the event loop.

Under gevent (``gridstudy serve``'s default) every participant's ticks, sockets and pages
share one OS thread. A database call is not cooperative: SQLite's commit, a checkpoint's
fsync, a lock's busy wait or a PostgreSQL connection attempt against a stopped server
holds that thread, and with it every session's frames, for as long as it takes
(measured: all 100 sessions late together in bursts of 0.3 s on a busy machine).

:func:`off_loop` runs such a call in gevent's pool of native threads and blocks only the
greenlet that asked; SQLite and psycopg release the GIL while they wait, so the loop goes
on ticking. Without gevent (threads, or a command-line tool) it calls the function where
it is: the caller is a thread of its own already.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def on_loop_thread() -> bool:
    """True in the thread that runs gevent's loop, once gevent has patched threads."""
    monkey = sys.modules.get("gevent.monkey")
    if monkey is None or not monkey.is_module_patched("threading"):
        return False
    import threading

    return threading.get_native_id() == threading.main_thread().native_id


def off_loop(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``function(*args, **kwargs)``, run in a native thread when called on gevent's loop
    (the calling greenlet waits; the others go on); its result or its exception."""
    if not on_loop_thread():
        return function(*args, **kwargs)
    from gevent import get_hub

    ok, value = get_hub().threadpool.apply(_outcome, (function, args, kwargs))
    if not ok:
        raise value
    return value


def _outcome(function: Callable[..., T], args: tuple, kwargs: dict) -> tuple[bool, Any]:
    """``(True, result)`` or ``(False, exception)``: an exception is carried back to the
    caller as a value, so that gevent's pool does not print it as a crash (the caller
    raises it, and decides whether it is one)."""
    try:
        return True, function(*args, **kwargs)
    except BaseException as error:  # handed to the caller, which raises it
        return False, error


def blocking(function: Callable[..., T]) -> Callable[..., T]:
    """Decorate a function that talks to the database: it then always runs off the loop."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        return off_loop(function, *args, **kwargs)

    return wrapper
