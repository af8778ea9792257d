"""How much one environment step may cost, so that no step holds a whole server.

Every live session of a study is ticked by one process; a step that runs for seconds
holds every participant on it. Two limits stop such a step, each with an error that
names the limit:

* an Autumn program counts its work in evaluations and stops at its budget
  (:class:`tasks.autumn.StepBudgetExceeded`; deterministic, so a replay stops at the
  same place);
* any other (Python) environment gets a time limit per ``step`` and ``reset``:
  :class:`TimeLimited` wraps it (``registry.make`` does so for every environment that
  has no budget of its own) and raises :class:`StepTimeLimitExceeded` when the call
  has computed for longer than the limit.

The time limit counts the processor time of the thread running the call, less the
interpreter's garbage collections in that thread: a busy machine (other processes, a
loaded CI runner) or a long collection makes a call take longer by the clock without
making the environment's step any more costly, and must not end a participant's
attempt. Waiting (a ``sleep``, a read) costs no processor time and is not stopped.

Both are :class:`StepLimitExceeded`, the one type the real-time tick and the agent turn
catch to end the attempt as an environment error.

The time limit interrupts the step from a watchdog thread by raising the exception in
the stepping thread (CPython's ``PyThreadState_SetAsyncExc``): Python code stops at its
next bytecode, but a long call into C (a ``time.sleep``, one huge numpy operation) is
only stopped when it returns.
"""

from __future__ import annotations

import ctypes
import gc
import itertools
import sys
import time
from typing import Any

IN_BROWSER = sys.platform == "emscripten"
"""True in a participant's browser (Pyodide), which has no threads to watch a step from:
there a step holds only the page of the person playing it, so no time limit applies
(the server's replay of the attempt has its own)."""

STEP_TIME_LIMIT = 0.5
"""Seconds one step (or reset) of a Python environment may run, unless its registration
says otherwise (``register_env(..., step_time_limit=...)``)."""


class Host:
    """How the process stepping environments shares its time (set by a server once at
    start, :func:`share_time`; nothing by default, for the command line and the tests).

    ``cooperate`` is called every :data:`COOPERATE_EVERY` evaluations of a long Autumn
    step: the server's gevent loop then ticks the other sessions in between, so a step
    near its budget (about a quarter of a second) delays nobody else. A Python
    environment's step cannot yield: its time limit bounds how long it holds the loop."""

    cooperate: Any = None


COOPERATE_EVERY = 64
"""Evaluations between two ``Host.cooperate`` calls; the server's ``cooperate`` yields
only when a few milliseconds have passed since the last time (an evaluation's cost
varies: a lambda whose body compares two long lists is one evaluation)."""


def share_time(cooperate: Any = None) -> None:
    """Set how this process shares its time while a step runs (see :class:`Host`)."""
    Host.cooperate = cooperate


class StepLimitExceeded(Exception):
    """A step did more work than its environment allows (a budget or a time limit)."""

    limit_name = "step limit"

    @property
    def plain(self) -> str:
        """What happened, in words for a researcher or a participant."""
        return (f"the environment's step went over its {self.limit_name}, so this attempt "
                f"was stopped (the environment needs fixing, not the player)")


class StepTimeLimitExceeded(StepLimitExceeded, TimeoutError):
    """A Python environment's step (or reset) ran longer than its time limit."""

    limit_name = "time limit"


class _Interrupt(BaseException):
    """Raised into the stepping thread by the watchdog; turned into the error above."""


def _originals() -> tuple[Any, Any, Any, Any]:
    """The real thread primitives (the unpatched ones when gevent has patched them: the
    watchdog must be an operating-system thread to interrupt a greenlet's busy step)."""
    import _thread
    if "gevent.monkey" in sys.modules:
        from gevent.monkey import get_original
        return (get_original("_thread", "start_new_thread"),
                get_original("_thread", "allocate_lock"),
                get_original("_thread", "get_ident"), get_original("time", "sleep"))
    return _thread.start_new_thread, _thread.allocate_lock, _thread.get_ident, time.sleep


def _raise_in(ident: int, exception: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(ident), ctypes.py_object(exception) if exception else None)


class _Collections:
    """Processor seconds each thread has spent in full garbage collections (the oldest
    generation's: the only ones that last), and the threads collecting now (kept by a
    ``gc.callbacks`` hook, which runs in the thread that collects)."""

    def __init__(self, get_ident: Any) -> None:
        self.get_ident = get_ident
        self.spent: dict[int, float] = {}
        self.started: dict[int, float] = {}
        gc.callbacks.append(self.hook)

    def hook(self, phase: str, info: dict) -> None:
        if info["generation"] < 2:
            return  # a young generation's collection takes microseconds, and comes often
        ident = self.get_ident()
        if phase == "start":
            self.started[ident] = time.thread_time()
        elif (began := self.started.pop(ident, None)) is not None:
            self.spent[ident] = self.spent.get(ident, 0.0) + time.thread_time() - began


class _Watch:
    """One watched call: its thread, that thread's processor clock, and where the clock
    and the thread's collections stood when the call began."""

    __slots__ = ("ident", "clock", "began", "collected", "seconds")

    def __init__(self, ident: int, collections: _Collections, seconds: float) -> None:
        self.ident, self.seconds = ident, seconds
        self.clock = time.pthread_getcpuclockid(ident)
        self.began = time.clock_gettime(self.clock)
        self.collected = collections.spent.get(ident, 0.0)

    def left(self, collections: _Collections) -> float:
        """Processor seconds the call may still use (never over while the thread is
        collecting: the collection is not the call's)."""
        if self.ident in collections.started:
            return self.seconds
        used = (time.clock_gettime(self.clock) - self.began
                - (collections.spent.get(self.ident, 0.0) - self.collected))
        return self.seconds - used


class _Watchdog:
    """One thread for every watched call: when a call has used up its processor time,
    it raises :class:`_Interrupt` in the thread running it (once).

    While calls are being made it looks at them every :data:`WATCH_EVERY` seconds (or
    sooner, when one is due), and it sleeps on ``wake`` only after a quiet
    :data:`WATCH_QUIET`: a server steps a few thousand times a second, each step much
    shorter than the period, and waking this thread for each of them made the stepping
    thread give up the interpreter's lock to it as often (a tenth of a walker server's
    CPU at 200 players)."""

    def __init__(self) -> None:
        self.start_thread, allocate, self.get_ident, self.sleep = _originals()
        self.lock, self.wake = allocate(), allocate()
        self.wake.acquire()
        self.collections = _Collections(self.get_ident)
        self.watched: dict[int, _Watch] = {}
        self.tickets = itertools.count()
        self.running = self.sleeping = False
        self.last_call = 0.0

    def watch(self, seconds: float) -> int:
        with self.lock:
            ticket = next(self.tickets)
            self.watched[ticket] = _Watch(self.get_ident(), self.collections, seconds)
            self.last_call = time.monotonic()
            if not self.running:
                self.running = True
                self.start_thread(self._run, ())
            elif self.sleeping:
                self.sleeping = False
                self.wake.release()
            return ticket

    def release(self, ticket: int) -> None:
        """The call is over: forget it, and cancel an interrupt not yet delivered."""
        with self.lock:
            if self.watched.pop(ticket, None) is None:
                _raise_in(self.get_ident(), None)

    def _run(self) -> None:
        while True:
            with self.lock:
                wait = WATCH_EVERY
                for ticket, watch in list(self.watched.items()):
                    left = watch.left(self.collections)
                    if left <= 0:
                        del self.watched[ticket]
                        _raise_in(watch.ident, _Interrupt)
                    else:
                        wait = min(wait, left)
                self.sleeping = (not self.watched
                                 and time.monotonic() - self.last_call > WATCH_QUIET)
            if self.sleeping:
                self.wake.acquire()
            else:
                self.sleep(max(wait, 0.001))


WATCH_EVERY = 0.05
"""Seconds between two looks of the watchdog at the calls under way: how far past its
limit a call may run before it is stopped."""
WATCH_QUIET = 1.0
"""Seconds without a watched call after which the watchdog sleeps until the next."""


_watchdog: _Watchdog | None = None


def run_limited(seconds: float, what: str, fn, *args: Any) -> Any:
    """``fn(*args)``, stopped with :class:`StepTimeLimitExceeded` (which names it
    ``what``) once it has computed for ``seconds`` (processor time of its thread, less
    garbage collection)."""
    global _watchdog
    if _watchdog is None:
        _watchdog = _Watchdog()
    watchdog = _watchdog
    try:
        ticket = watchdog.watch(seconds)
        try:
            return fn(*args)
        finally:
            watchdog.release(ticket)
    except _Interrupt:
        raise StepTimeLimitExceeded(
            f"step time limit exceeded: {what} ran longer than the limit of {seconds:g} s "
            "(an endless or far too costly computation; if the environment really needs "
            "more, register it with a larger step_time_limit)") from None


class TimeLimited:
    """An environment whose ``step`` and ``reset`` are stopped after ``limit`` seconds;
    everything else is the wrapped environment's (``inner``), ``isinstance`` included."""

    def __init__(self, inner: Any, limit: float = STEP_TIME_LIMIT) -> None:
        if not limit > 0:
            raise ValueError(f"step_time_limit must be a positive number of seconds, got {limit!r}")
        self.inner = inner
        self.step_time_limit = limit

    def step(self, action: Any) -> Any:
        return run_limited(self.step_time_limit, f"{type(self.inner).__name__}.step",
                           self.inner.step, action)

    def reset(self, seed: int = 0) -> Any:
        return run_limited(self.step_time_limit, f"{type(self.inner).__name__}.reset",
                           self.inner.reset, seed)

    # The protocol's attributes, read every tick, pass straight through: through
    # __getattr__ each read first failed a lookup (3 % of a server at 200 players).
    @property
    def frame_rate(self) -> int:
        return self.inner.frame_rate

    @property
    def size(self) -> tuple[int, int]:
        return self.inner.size

    def __getattr__(self, name: str) -> Any:
        if "inner" not in self.__dict__:  # while being copied
            raise AttributeError(name)
        inner = self.__dict__["inner"]
        value = getattr(inner, name)
        if getattr(value, "__self__", None) is inner and getattr(value, "__func__", None):
            self.__dict__[name] = value  # a method of the environment: the next call finds it
        return value

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        """The wrapped environment's class, so that ``isinstance`` sees through the
        wrapper (``type()`` still names it)."""
        return type(self.__dict__["inner"])

    def __repr__(self) -> str:
        return f"TimeLimited({self.inner!r}, {self.step_time_limit:g} s)"


def limited(env: Any, limit: float | None = None) -> Any:
    """``env`` protected by a limit per step: as it is when it has its own budget (an
    Autumn program's ``step_budget``) or runs in a browser (:data:`IN_BROWSER`), else
    :class:`TimeLimited`."""
    if hasattr(env, "step_budget") or type(env) is TimeLimited or IN_BROWSER:
        return env
    return TimeLimited(env, STEP_TIME_LIMIT if limit is None else limit)
