"""The environment contract every gridstudy environment keeps.

An environment is anything with ``reset(seed)``, ``step(action)``, ``frame_rate``,
``size`` and ``available_actions()``: the Autumn interpreter, the task-DAG maps and the
small environments the tests define all look the same from here on.

Frames are row-major, ``frame[y][x]``, and hold colour names at every boundary. Actions
have one canonical text form (see :func:`parse_action`), used in logs, exports, the text
bridge and the pygame client alike.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np


Frame = list[list[str]]
"""A rendered grid: ``frame[y][x]`` is the colour name of the cell in column x, row y."""

MOVES = ("up", "down", "left", "right")
ENV_VERBS = ("noop", *MOVES, "click")
"""Verbs that step an environment; ``click`` takes ``X Y``."""
CONTROL_VERBS = ("reset", "go-to-test")
"""Interaction-phase controls."""
TEST_VERBS = ("step", "rewind", "found-change", "submit", "quit")
ANSWER_VERBS = ("submit_option", "submit_frame")
"""The study page's answers: the choice the page holds and its submit as one input
(``submit_frame_I`` = ``choose_frame_I`` then ``submit`` at one tick), so the stored choice
is the one shown at Submit. Accepted, never offered in the listed actions."""
INDEXED_VERBS = ("choose_option", "choose_frame", *ANSWER_VERBS)
"""Test-phase verbs written ``choose_option_I`` / ``choose_frame_I`` (and the answers)."""
LONGEST_ACTION = 200
"""Characters an action's text may have (the longest real one, ``click X Y`` or a
protocol's named action, is a few dozen): a longer text names no action, and the agent
API refuses it."""

# ASCII digits only: \d would also take other scripts' digits ("click ٣ 4").
_CLICK = re.compile(r"click\s+(-?\d+)\s+(-?\d+)", re.ASCII)
_INDEXED = re.compile(r"(choose_option|choose_frame|submit_option|submit_frame)_(\d+)", re.ASCII)
_PLAIN = frozenset(("noop", *MOVES, *CONTROL_VERBS, *TEST_VERBS))


@dataclass(frozen=True, slots=True)
class Action:
    """One action in its parsed form. ``str(action)`` is the canonical text.

    >>> str(Action("click", x=3, y=4))
    'click 3 4'
    >>> parse_action("choose_option_2").index
    2
    """

    verb: str
    x: int | None = None
    y: int | None = None
    index: int | None = None

    def __str__(self) -> str:
        if self.verb == "click":
            return f"click {self.x} {self.y}"
        if self.verb in INDEXED_VERBS:
            return f"{self.verb}_{self.index}"
        return self.verb

    @property
    def is_env_action(self) -> bool:
        """True for the actions that step an environment (noop, arrows, clicks)."""
        return self.verb in ENV_VERBS


NOOP = Action("noop")
_PLAIN_ACTIONS = {verb: Action(verb) for verb in _PLAIN}


def parse_action(text: str | Action, size: tuple[int, int] | None = None) -> Action:
    """Parse an action's text form; raise ``ValueError`` saying what was expected.

    Leading/trailing blanks and letter case are forgiven, nothing else. With ``size``
    (width, height) a click outside the grid is an error too.

    >>> parse_action(" Click 3  4 ", size=(16, 16))
    Action(verb='click', x=3, y=4, index=None)
    >>> parse_action("jump")
    Traceback (most recent call last):
    ...
    ValueError: unknown action 'jump': expected one of noop, up, down, left, right, click X Y, reset, go-to-test, step, rewind, found-change, submit, quit, choose_option_I, choose_frame_I
    """
    if isinstance(text, Action):
        action = text
    else:
        if not isinstance(text, str):
            raise ValueError(f"an action must be text, not {type(text).__name__}")
        action = _parse_text(text.strip().lower())
    if size is not None and action.verb == "click":
        width, height = size
        if not (0 <= action.x < width and 0 <= action.y < height):
            raise ValueError(
                f"click {action.x} {action.y} is outside the grid: expected 0 <= x < {width} "
                f"and 0 <= y < {height}"
            )
    return action


def _parse_text(text: str) -> Action:
    plain = _PLAIN_ACTIONS.get(text)
    if plain is not None:  # an Action is immutable: one of each serves (a tick parses one)
        return plain
    if text.startswith("click"):
        match = _CLICK.fullmatch(text)
        if match is None:
            raise ValueError(f"malformed click {text!r:.80}: expected 'click X Y' with integer X and Y")
        return Action("click", x=int(match[1]), y=int(match[2]))
    match = _INDEXED.fullmatch(text)
    if match is not None:
        return Action(match[1], index=int(match[2]))
    if text.startswith(INDEXED_VERBS):
        raise ValueError(f"malformed choice {text!r:.80}: expected choose_option_I or choose_frame_I "
                         "(or submit_option_I, submit_frame_I)")
    raise ValueError(f"unknown action {text!r:.80}: expected one of {describe_verbs()}")


def describe_verbs(verbs: Iterable[str] | None = None) -> str:
    """The verbs as a reader would list them (``click X Y``, ``choose_option_I``)."""
    offered = [verb for verb in INDEXED_VERBS if verb not in ANSWER_VERBS]
    verbs = (*ENV_VERBS, *CONTROL_VERBS, *TEST_VERBS, *offered) if verbs is None else verbs
    forms = {"click": "click X Y", **{verb: f"{verb}_I" for verb in INDEXED_VERBS}}
    return ", ".join(forms.get(v, v) for v in verbs)


class Observation:
    """What an environment shows after ``reset`` or ``step``.

    ``frame`` is the grid of colour names (for people and for frame comparisons), ``text``
    what a language model is shown, ``info`` anything else (progress events, discoveries,
    errors). ``done`` is true when the environment itself has ended (a task-DAG map's goal
    reached or budget spent); Autumn programs never end by themselves.

    An environment may give ``text`` as a function of no arguments: it is called when the
    text is first read. Only a language model reads it, and for a large grid it costs more
    than the step (a 100x100 frame's text is about a third of a step of ``gravity_4``), so
    a person's game, a replay and a search never pay for it.

    >>> calls = []
    >>> seen = Observation([["red"]], lambda: calls.append(1) or '[["red"]]')
    >>> len(calls)
    0
    >>> seen.text, seen.text
    ('[["red"]]', '[["red"]]')
    >>> len(calls)
    1
    """

    __slots__ = ("frame", "_text", "info", "done")

    def __init__(self, frame: Frame, text: str | Callable[[], str],
                 info: dict[str, Any] | None = None, done: bool = False) -> None:
        self.frame = frame
        self._text = text
        self.info = {} if info is None else info
        self.done = done

    @property
    def text(self) -> str:
        if not isinstance(self._text, str):
            self._text = self._text()
        return self._text

    def _fields(self) -> tuple[Frame, str, dict[str, Any], bool]:
        return self.frame, self.text, self.info, self.done

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it was

    def __repr__(self) -> str:
        return (f"Observation(frame={self.frame!r}, text={self.text!r}, info={self.info!r}, "
                f"done={self.done!r})")

    def __reduce__(self) -> tuple[type, tuple]:
        return type(self), self._fields()  # copied and pickled with its text made


@runtime_checkable
class GridEnv(Protocol):
    """The protocol every environment keeps (structural: no base class needed)."""

    frame_rate: int
    size: tuple[int, int]

    def reset(self, seed: int) -> Observation:
        """Start over from the initial state that ``seed`` determines."""

    def step(self, action: Action | str) -> Observation:
        """Apply one environment action (noop, an arrow or a click)."""

    def available_actions(self) -> tuple[str, ...]:
        """The environment verbs it accepts now (``click`` stands for every cell)."""


def is_available(action: Action, env: GridEnv) -> bool:
    """True if ``action`` is an environment action ``env`` accepts now, inside its grid."""
    if action.verb not in env.available_actions():
        return False
    if action.verb == "click":
        width, height = env.size
        return 0 <= action.x < width and 0 <= action.y < height
    return True


def rollout(env: GridEnv, seed: int, actions: Iterable[Action | str]) -> list[Observation]:
    """Reset ``env`` with ``seed``, apply ``actions`` in order, return every observation
    (the initial one first): the one way derivation, checks and replays run a trajectory."""
    observations = [env.reset(seed)]
    observations += [env.step(action) for action in actions]
    return observations


# -- frames -------------------------------------------------------------------------------


class FrameText:
    """An environment's frames as the text a language model is shown: exactly
    ``json.dumps(frame)``, made row by row, reusing the text of each row equal to the
    last frame's (a step repaints few cells, and encoding a large grid whole costs more
    than many steps: a 100x100 grid about 0.45 ms). One per environment.

    >>> text = FrameText()
    >>> text([["black", "red"], ["black", "black"]]) == json.dumps([["black", "red"], ["black", "black"]])
    True
    >>> text([["black", "red"], ["gold", "black"]])
    '[["black", "red"], ["gold", "black"]]'
    """

    def __init__(self) -> None:
        self.rows: Sequence[Sequence[str]] = []
        self.texts: list[str] = []

    def __call__(self, frame: Sequence[Sequence[str]]) -> str:
        same = len(self.rows) == len(frame)
        self.texts = [self.texts[y] if same and row == self.rows[y] else json.dumps(row)
                      for y, row in enumerate(frame)]
        self.rows = frame
        return "[" + ", ".join(self.texts) + "]"


def frame_hash(frame: Sequence[Sequence[str]]) -> str:
    """A stable 16-hex-digit digest of a frame (same colours in the same cells, same hash).

    >>> frame_hash([["black", "red"]]) == frame_hash((("black", "red"),))
    True
    """
    text = "\n".join(map(",".join, frame))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def frame_to_indices(
    frame: Sequence[Sequence[str]], palette: Sequence[str] | None = None
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Colour names to a ``uint8`` array of palette indices, and the palette used.

    Colours missing from ``palette`` are appended to it, in order of first appearance.
    """
    import numpy as np  # here, not at the top: the engine runs without numpy in browsers
    colours = list(palette or ())
    lookup = {c: i for i, c in enumerate(colours)}
    height = len(frame)
    width = len(frame[0]) if height else 0
    out = np.zeros((height, width), dtype=np.uint8)
    for y, row in enumerate(frame):
        if len(row) != width:
            raise ValueError(f"frame row {y} has {len(row)} cells, expected {width}")
        for x, colour in enumerate(row):
            index = lookup.get(colour)
            if index is None:
                if len(colours) == 256:
                    raise ValueError("a frame may use at most 256 distinct colours")
                index = lookup[colour] = len(colours)
                colours.append(colour)
            out[y, x] = index
    return out, tuple(colours)


def indices_to_frame(indices: np.ndarray, palette: Sequence[str]) -> Frame:
    """The inverse of :func:`frame_to_indices`."""
    import numpy as np
    names = np.asarray(palette, dtype=object)
    return names[indices].tolist()


def frame_size(frame: Sequence[Sequence[str]]) -> tuple[int, int]:
    """(width, height) of a frame."""
    return (len(frame[0]) if frame else 0, len(frame))


def masked(frame: Frame, cells: Iterable[tuple[int, int]], mark: str = "mask") -> Frame:
    """A copy of ``frame`` with the cells ``(x, y)`` replaced by ``mark``."""
    out = [list(row) for row in frame]
    for x, y in cells:
        out[y][x] = mark
    return out


def region(frame: Sequence[Sequence[str]], cells: Iterable[tuple[int, int]]) -> tuple[str, ...]:
    """The colours of ``cells`` in the given order."""
    return tuple(frame[y][x] for x, y in cells)
