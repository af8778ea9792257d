"""The signals that stop a command run from a terminal, caught while it has work to end.

Ctrl-C (SIGINT), ``kill`` (SIGTERM) and the terminal closing (SIGHUP: an SSH connection
dropped) each end the process at once when left to their defaults, or, in a pygame
window, arrive as the window's own close (SDL turns SIGINT and SIGTERM into a quit
event). A command that records play catches them instead, to end what is under way
and say why.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that stop a command as Ctrl-C does."""

Handler = Callable[[int, Any], None]


@contextlib.contextmanager
def caught(handler: Handler) -> Iterator[None]:
    """``handler(number, frame)`` receives each of :data:`STOPPING` while the block runs,
    and the handlers before it are back after. Python lets only the main thread set them:
    elsewhere (a test's thread) nothing is caught."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, handler) for number in STOPPING}
    try:
        yield
    finally:
        for number, before in previous.items():
            signal.signal(number, before)


def named(number: int) -> str:
    """A signal's name as an operator knows it: ``SIGTERM``."""
    return signal.Signals(number).name
