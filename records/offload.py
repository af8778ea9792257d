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

    return _applied(get_hub().threadpool, function, args, kwargs)


PAGE_THREADS = 2
"""Native threads for the work of pages nobody plays in: the researcher's pages that
only read, the export, sign-in's slow hash (:func:`off_loop_for_pages`). They are kept
apart from gevent's own pool (10 threads), which the real-time path uses (a join's
rebuild, a browser log's replay, the writes of ticks, the heartbeat), so that however
many of those pages are asked for at once, a participant's game is not held up: with
both in one pool, a researcher's twenty tabs on a study of 16,000 participants made a
new game take 6 to 7.4 s to open (measured), and a burst of sign-in attempts from many
addresses could hold it the same way. Two, not more: a page's Python competes with the
loop for the interpreter's lock, which goes to any thread waiting for it, so the more
pages at once, the longer the loop may wait; with the twenty tabs, a game's longest
wait for a frame was 0.26 to 0.28 s with one or two (an idle game's own interval),
0.33 to 1.0 s with four."""

_page_pools: dict[Any, Any] = {}
"""Each gevent hub's pool for pages (one hub per process in practice)."""


def off_loop_for_pages(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """:func:`off_loop`, in the pool kept for pages (:data:`PAGE_THREADS`): such work
    waits for one of its own threads, never for the real-time path's."""
    if not on_loop_thread():
        return function(*args, **kwargs)
    from gevent import get_hub
    from gevent.threadpool import ThreadPool

    hub = get_hub()
    pool = _page_pools.get(hub)
    if pool is None:
        pool = _page_pools[hub] = ThreadPool(PAGE_THREADS, hub=hub)
    return _applied(pool, function, args, kwargs)


def _applied(pool: Any, function: Callable[..., T], args: tuple, kwargs: dict) -> T:
    ok, value = pool.apply(_outcome, (function, args, kwargs))
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


def psycopg_waits_natively_off_loop() -> None:
    """Make psycopg wait for PostgreSQL in C, releasing the GIL, in every thread but the
    loop's (call once gevent has patched the standard library).

    Seeing ``select`` patched, psycopg waits for every reply with gevent's ``poll``, the
    right thing on the loop, where a greenlet waiting must let the others run. But the
    store's work runs in native threads (:func:`off_loop`), and there gevent's ``poll``
    builds a hub and watchers for each wait: the writer's thread then spent 3.3 CPU
    seconds in 17 s where SQLite's needed 0.3, and a server on PostgreSQL cost 40 % more
    per participant than one on SQLite (measured with 200 players). A wait on the loop
    (any call not sent off it) still cooperates.
    """
    try:
        from psycopg import waiting
    except ImportError:  # the postgres extra is not installed: nothing waits on it
        return
    if getattr(waiting.wait, "by_thread", False) or not hasattr(waiting, "wait_c"):
        return
    cooperative = waiting.wait

    def wait(gen: Any, fileno: int, interval: float = 0.0, timeout: float | None = None) -> Any:
        chosen = cooperative if on_loop_thread() else waiting.wait_c
        return chosen(gen, fileno, interval=interval, timeout=timeout)

    wait.by_thread = True  # type: ignore[attr-defined]
    waiting.wait = wait
