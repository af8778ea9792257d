"""What changed in a client's view between two states: what a real-time state carries.

A participant's client is sent the whole view (:meth:`Episode.view`, plus what the
session adds) when it joins, when it asks again (a resync) and every
:data:`KEYFRAME_EVERY` states; every other state carries only what changed since the
one before it. Most ticks repaint a few cells of a frame that stays the same size, and
the other fields stay as they were, so a 16x16 frame's 2 kB become a few dozen bytes.

A state is numbered by ``version``. A whole one has no ``since``; a change has
``since``, the version it applies to, and:

* ``cells``: ``[x, y, colour]`` for each cell of the frame that changed (or ``frame``,
  the whole new frame, when that is shorter);
* every other field whose value changed: an object (``test``, ``keys``) by its changed
  keys, merged into the client's object; anything else replaced whole.

A change never removes anything: when a field (``paused``) or an object's key goes, the
state is sent whole instead, as it is when the frame changes size. Frames are never
changed in place (an environment's step returns new rows, ``tasks.core``), so the last
state sent can be kept as it is.

:class:`ViewStream` is the sender's side (one per session, one message per tick for
every connection that watches it, but for the idle ticks between two of every
:data:`IDLE_SECONDS`); :class:`ViewReplica` is a client's, which rebuilds
the whole view from the messages and says when it lost step (then it joins again and
is sent the whole view).
"""

from __future__ import annotations

import threading
from typing import Any

KEYFRAME_EVERY = 64
"""States between two whole ones: a client that went wrong in any way is right again by
then."""
IDLE_SECONDS = 0.25
"""Longest a session standing idle (no input applied, nothing in the view changed but
the tick) goes without a state: its picture is the one the client holds, so the tick
counter moving on four times a second is all the client needs, and the idle ticks in
between send nothing (at 8 FPS, one idle tick in two). A client still hears from its
game well within half a second (``docs/guarantees.md`` 2.1)."""


def idle_every(frame_rate: int) -> int:
    """Ticks between two states of an idle session at ``frame_rate`` (at least one).

    >>> idle_every(8), idle_every(4), idle_every(3)
    (2, 1, 1)
    """
    return max(1, int(IDLE_SECONDS * frame_rate))


WIRE_FIELDS = ("version", "since", "cells")
"""The fields a state message adds to the view."""


def cell_changes(old: list[list[str]], new: list[list[str]]) -> list[list] | None:
    """``[x, y, colour]`` for each cell of ``new`` that differs from ``old``; None when
    the frames differ in size (the frame must then be sent whole).

    >>> cell_changes([["black", "gold"], ["black", "black"]],
    ...              [["black", "black"], ["gold", "black"]])
    [[1, 0, 'black'], [0, 1, 'gold']]
    """
    if len(old) != len(new):
        return None
    cells = []
    for y, (before, after) in enumerate(zip(old, new, strict=True)):
        if after is before or after == before:
            continue
        if len(after) != len(before):
            return None
        cells.extend([x, y, colour] for x, (was, colour) in enumerate(zip(before, after))
                     if was != colour)
    return cells


def changes(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any] | None:
    """What turns ``old`` into ``new`` under :func:`patched`; None when that cannot be
    said without removing something (a field or an object's key gone).

    >>> changes({"tick": 1, "test": {"steps": 0, "horizon": 9}, "frame": [["black"] * 4]},
    ...         {"tick": 2, "test": {"steps": 1, "horizon": 9}, "frame": [["gold"] + ["black"] * 3]})
    {'tick': 2, 'test': {'steps': 1}, 'cells': [[0, 0, 'gold']]}
    >>> changes({"paused": "Saving..."}, {}) is None
    True
    """
    if old.keys() - new.keys():
        return None
    patch: dict[str, Any] = {}
    for key, value in new.items():
        if key not in old:
            patch[key] = value
            continue
        before = old[key]
        if value is before or value == before:
            continue
        if key == "frame":
            cells = cell_changes(before, value)
            if cells is not None and len(cells) * 3 < sum(map(len, value)):
                patch["cells"] = cells  # each cell changed costs about three kept
            else:
                patch["frame"] = value
        elif type(value) is dict and type(before) is dict:
            inner = changes(before, value)
            if inner is None:
                return None
            patch[key] = inner
        else:
            patch[key] = value
    return patch


def patched(state: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """A new state: ``state`` with ``patch`` (from :func:`changes`) applied; ``state`` is
    left as it was.

    >>> patched({"tick": 1, "test": {"steps": 0, "horizon": 9}, "frame": [["black"]]},
    ...         {"tick": 2, "test": {"steps": 1}, "cells": [[0, 0, "gold"]]})
    {'tick': 2, 'test': {'steps': 1, 'horizon': 9}, 'frame': [['gold']]}
    """
    result = dict(state)
    for key, value in patch.items():
        if key == "cells":
            frame = result["frame"] = list(result["frame"])
            copied: set[int] = set()
            for x, y, colour in value:
                if y not in copied:
                    frame[y] = list(frame[y])
                    copied.add(y)
                frame[y][x] = colour
        elif type(value) is dict and type(result.get(key)) is dict:
            result[key] = patched(result[key], value)
        else:
            result[key] = value
    return result


class ViewStream:
    """The states one session sends: :meth:`next` for each new view (to every
    connection watching), :meth:`whole` for a client that joins or asks again.
    Thread-safe (a join is handled while the session ticks)."""

    def __init__(self, keyframe_every: int = KEYFRAME_EVERY, idle_every: int = 1) -> None:
        self.keyframe_every, self.idle_every = keyframe_every, idle_every
        self.version = 0
        self.last: dict[str, Any] | None = None
        """The view the last state stood for (what a client holds once it is read)."""
        self.lock = threading.Lock()

    def next(self, view: dict[str, Any], idle: bool = False) -> dict[str, Any] | None:
        """The state message for ``view``: what changed since the last, or the whole view
        (the first, every :attr:`keyframe_every`, or when a change cannot say it). None,
        nothing to send, for an ``idle`` tick (no input applied) that changed only the
        tick, unless :attr:`idle_every` ticks have passed since the last state (with
        the default, 1, every tick sends)."""
        with self.lock:
            previous = self.last
            patch = None
            if previous is not None and (self.version + 1) % self.keyframe_every:
                patch = changes(previous, view)
                if (idle and patch is not None and patch.keys() == {"tick"}
                        and 0 <= view["tick"] - previous["tick"] < self.idle_every):
                    return None
            self.last = view
            self.version += 1
            if patch is None:
                return {**view, "version": self.version}
            patch["since"], patch["version"] = self.version - 1, self.version
            return patch

    def whole(self, view: dict[str, Any]) -> dict[str, Any]:
        """The whole state of ``view`` (a client joins or asks again): the last version
        sent when ``view`` is what it stood for, else the next version (another watcher
        then finds itself out of step and asks again)."""
        with self.lock:
            if view != self.last:
                self.last = view
                self.version += 1
            return {**view, "version": self.version}


class ViewReplica:
    """A client's copy of the view, rebuilt from state messages in the order they come.

    A change older than the version held is ignored (a whole state sent on joining can
    overtake the changes queued before it). A change that does not follow the version
    held means a state was lost: :meth:`receive` then says to ask for the whole view
    (join again), once, and ignores changes until it comes.
    """

    def __init__(self) -> None:
        self.state: dict[str, Any] | None = None
        self.lost = False

    @property
    def version(self) -> int | None:
        return None if self.state is None else self.state.get("version")

    def receive(self, message: dict[str, Any]) -> bool:
        """Apply one state message; True when the client should ask for the whole view."""
        if "since" not in message:
            self.state, self.lost = dict(message), False
            return False
        if self.lost:
            return False
        if self.state is not None and message["since"] == self.version:
            self.state = patched(self.state, {k: v for k, v in message.items() if k != "since"})
            return False
        if self.state is not None and message["version"] <= self.version:
            return False
        self.lost = True
        return True
