"""Where a server process spends its CPU: a sampling profile by stage of the tick.

``python -m bench.load ... --profile FILE`` runs the server under :func:`sampling`: every
millisecond of the process's CPU time (``ITIMER_PROF``) the main thread's stack is
noted, and when the server stops ``FILE`` gets the collapsed stacks (one line each, the
format flame-graph tools read) and ``FILE.txt`` the share of each stage of a frame's
way (:data:`STAGES`) with the CPU of each of the process's threads.

The signal is handled in the main thread, which under gevent runs every greenlet: the
tick loop, the sender, the handlers. The store's transactions run in gevent's native
threads; their CPU is in the per-thread figures, and the samples taken while the main
thread waited for them fall in ``idle``.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

INTERVAL = 0.004
"""Seconds of process CPU time between two samples (the kernel counts it in its own
ticks, 4 ms on this machine: a shorter interval gives no more samples)."""

STAGES = (
    ("startup", ("study_server/app.py:create_app", "study_server/app.py:shutdown",
                 "<frozen importlib._bootstrap>:")),
    ("step", ("worldtest/episode.py:apply",)),
    ("view", ("session.py:get_state", "tick.py:view")),
    ("diff", ("worldtest/changes.py:",)),
    ("store", ("records/store.py:", "records/recorder.py:", "records/writer.py:",
               "records/rows.py:")),
    ("encode", ("socketio/packet.py:encode", "engineio/packet.py:encode",
                "json/encoder.py:", "socketio/msgpack_packet.py:")),
    ("emit", ("socketio/base_manager.py:", "socketio/server.py:_send",
              "engineio/socket.py:", "engineio/server.py:", "geventwebsocket/",
              "engineio/async_drivers/gevent.py:")),
    ("receive", ("socketio/server.py:_handle", "study_server/sockets.py:on_",
                 "study_server/door.py:")),
    ("scheduler", ("study_server/scheduler.py:",)),
    ("http", ("flask/", "werkzeug/", "gevent/pywsgi.py:")),
    ("idle", ("gevent/hub.py:", "gevent/_hub", "gevent/libev/")),
)
"""A sample's stage: the first whose marks name a frame of its stack, innermost first
(``file-suffix:function``, or a folder). Order matters: a step inside a tick counts as
``step``, not ``scheduler``."""


def _where(frame: FrameType) -> str:
    code = frame.f_code
    return f"{'/'.join(Path(code.co_filename).parts[-2:])}:{code.co_name}"


def _stack(frame: FrameType | None) -> tuple[str, ...]:
    names = []
    while frame is not None:
        names.append(_where(frame))
        frame = frame.f_back
    return tuple(reversed(names))


def stage(stack: tuple[str, ...]) -> str:
    """The stage a sampled stack (outermost first) belongs to; ``other`` when none.

    >>> stage(("gevent/hub.py:run", "study_server/scheduler.py:_tick",
    ...        "tasks/worldtest/episode.py:apply", "tests/envs.py:step"))
    'step'
    """
    for name, marks in STAGES:
        if any(mark in where for where in stack for mark in marks):
            return name
    return "other"


def thread_cpu() -> dict[str, float]:
    """CPU seconds of each thread of this process so far, by name (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    found: dict[str, float] = collections.Counter()
    for task in Path("/proc/self/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[f"{name} ({'main' if task.name == str(os.getpid()) else 'thread'})"] += (
            int(fields[11]) + int(fields[12])) / tick
    return dict(found)


def report(samples: collections.Counter, threads: dict[str, float]) -> str:
    """The samples by stage, as shares of the main thread's samples, and the threads."""
    total = sum(samples.values()) or 1
    by_stage: collections.Counter = collections.Counter()
    for stack, count in samples.items():
        by_stage[stage(stack)] += count
    lines = [f"{total} samples of {INTERVAL * 1000:g} ms of process CPU"]
    lines += [f"  {name:<10} {100 * count / total:5.1f} %"
              for name, count in by_stage.most_common()]
    lines.append("CPU seconds by thread:")
    lines += [f"  {name:<30} {seconds:7.2f}" for name, seconds in sorted(threads.items())]
    return "\n".join(lines)


@contextlib.contextmanager
def sampling(path: str | Path) -> Iterator[collections.Counter]:
    """Sample the main thread's stack while the block runs; write the collapsed stacks
    to ``path`` and the summary by stage to ``path.txt`` at the end."""
    samples: collections.Counter = collections.Counter()

    def note(signum: int, frame: FrameType | None) -> None:
        samples[_stack(frame)] += 1

    previous = signal.signal(signal.SIGPROF, note)
    signal.setitimer(signal.ITIMER_PROF, INTERVAL, INTERVAL)
    try:
        yield samples
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.signal(signal.SIGPROF, previous)
        path = Path(path)
        path.write_text("".join(f"{';'.join(stack)} {count}\n"
                                for stack, count in samples.most_common()))
        path.with_name(path.name + ".txt").write_text(report(samples, thread_cpu()) + "\n")
