"""The Gymnasium spaces of a problem: which number means which action, which colour.

**Actions** are one ``Discrete(n)`` per problem, laid out in blocks (:class:`ActionTable`):

====================  =============================================================
index                 action (its canonical text, ``tasks.core``)
====================  =============================================================
0                     ``noop``
1 - 4                 ``up``, ``down``, ``left``, ``right``
5 ... 5 + W*H - 1     ``click X Y`` for the cell at column X, row Y: ``5 + Y*W + X``
then 7                ``reset``, ``go-to-test``, ``step``, ``rewind``, ``found-change``,
                      ``submit``, ``quit``
then K                ``choose_option_0`` ... ``choose_option_{K-1}`` (K: the problem's
                      options, masked frame prediction)
then F                ``choose_frame_0`` ... ``choose_frame_{F-1}`` (F: its test horizon
                      + 1, change detection)
====================  =============================================================

Every problem has every block (K and F may be 0), so an index means the same thing in
every phase; what the phase does not allow is a no-op (:mod:`game_client.gym.env`).

**Observations** are the grid as colour indices, ``frame[y][x]`` as in ``tasks.core``:
index 0 is a colour no browser would paint, 1 a masked cell, then the CSS colours of
``tasks.colours.CSS_COLOURS`` in their order (:data:`PALETTE`). A colour written in hex
takes the index of the named colour with the same RGB value, else 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tasks import colours
from tasks.core import CONTROL_VERBS, MOVES, TEST_VERBS
from tasks.worldtest.problem import Problem

UNKNOWN_COLOUR, MASK = "unknown", "mask"
PALETTE: tuple[str, ...] = (UNKNOWN_COLOUR, MASK, *colours.CSS_COLOURS)
"""Colour index -> colour name."""
_INDEX = {name: index for index, name in enumerate(PALETTE)}
_BY_RGB = {colours.rgb(name): index for index, name in reversed(list(enumerate(PALETTE)))
           if colours.rgb(name) is not None}

PLAIN = ("noop", *MOVES)
CONTROLS = (*CONTROL_VERBS, *TEST_VERBS)


@lru_cache(maxsize=4096)
def colour_index(name: str) -> int:
    """The observation's number for a frame's colour name (see the module).

    >>> colour_index("mask"), PALETTE[colour_index("Gold")] == "gold", colour_index("#zz")
    (1, True, 0)
    """
    lower = name.lower() if isinstance(name, str) else ""
    if lower in _INDEX:
        return _INDEX[lower]
    return _BY_RGB.get(colours.rgb(lower), 0)


def encode(frame: list[list[str]], size: tuple[int, int]) -> np.ndarray:
    """``frame`` as a ``(height, width)`` array of colour indices."""
    width, height = size
    out = np.zeros((height, width), dtype=np.uint8)
    for y, row in enumerate(frame[:height]):
        out[y, :len(row[:width])] = [colour_index(name) for name in row[:width]]
    return out


@dataclass(frozen=True)
class ActionTable:
    """The action texts of one problem, numbered as the module says."""

    width: int
    height: int
    options: int
    frames: int

    @classmethod
    def for_problem(cls, problem: Problem, size: tuple[int, int]) -> ActionTable:
        """The table of ``problem`` on a grid of ``size`` (width, height): as many
        ``choose_option`` as it has options, ``choose_frame`` as its horizon allows."""
        params = problem.params
        frames = int(params["horizon"]) + 1 if problem.challenge == "cd" else 0
        return cls(size[0], size[1], len(params.get("options") or ()), frames)

    @property
    def clicks(self) -> int:
        return self.width * self.height

    def __len__(self) -> int:
        return len(PLAIN) + self.clicks + len(CONTROLS) + self.options + self.frames

    def text(self, index: int) -> str:
        """The canonical text of action number ``index``; ``ValueError`` out of range."""
        if not 0 <= index < len(self):
            raise ValueError(f"action {index} is outside this problem's 0..{len(self) - 1}")
        for block, size in self._blocks():
            if index < size:
                return block(index)
            index -= size
        raise AssertionError("unreachable: the blocks cover the range")

    def _blocks(self):
        return (
            (lambda i: PLAIN[i], len(PLAIN)),
            (lambda i: f"click {i % self.width} {i // self.width}", self.clicks),
            (lambda i: CONTROLS[i], len(CONTROLS)),
            (lambda i: f"choose_option_{i}", self.options),
            (lambda i: f"choose_frame_{i}", self.frames),
        )

    def mask(self, verbs: tuple[str, ...], counts: dict[str, int]) -> np.ndarray:
        """1 for every action whose verb is in ``verbs`` (and, for an indexed verb, whose
        index is below ``counts[verb]``), else 0: Gymnasium's ``action_mask``."""
        allowed = set(verbs)
        parts = [[verb in allowed for verb in PLAIN], [("click" in allowed)] * self.clicks,
                 [verb in allowed for verb in CONTROLS]]
        for verb, size in (("choose_option", self.options), ("choose_frame", self.frames)):
            count = counts.get(verb, 0) if verb in allowed else 0
            parts.append([i < count for i in range(size)])
        return np.fromiter((v for part in parts for v in part), dtype=np.int8, count=len(self))
