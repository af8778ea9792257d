"""``AutumnEnv``: an Autumn program behind the gridstudy environment contract.

It keeps ``tasks.core.GridEnv`` (``reset``, ``step``, ``frame_rate``, ``size``,
``available_actions``) and adds what replay, planning and the metrics need:
``state_hash`` (a digest of all hidden state), ``snapshot``/``restore`` (cheap copies
of the full state) and ``random_state`` (the generator's state); and, for an author
debugging a program, ``variables`` and ``objects_at`` (what the program holds now).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from tasks.autumn import compat
from tasks.autumn.calls import STEP_BUDGET
from tasks.autumn.errors import AutumnRuntimeError, AutumnSyntaxError
from tasks.autumn.reader import read
from tasks.autumn.runtime import Runtime, Snapshot, handled_events
from tasks.autumn.stdlib import builtins
from tasks.autumn.values import (
    CALLABLES,
    Builtin,
    Cell,
    Instance,
    Lambda,
    Position,
    RenderedElem,
    show,
)
from tasks.core import Action, FrameText, Observation, parse_action

ACTIONS = ("noop", "up", "down", "left", "right", "click")
_PROVIDED = frozenset({*compat.NATIVE_NAMES, *compat.MODULE_NAMES, compat.TRIGGER_NAME,
                       compat.RENDER_CACHE_NAME})
"""Globals the interpreter defines, not the program."""


class ObjectAt(NamedTuple):
    """One object painting a cell: the global (and index) holding it, its type, origin,
    fields (shown) and the colour it paints there."""

    holder: str
    type: str
    origin: tuple[int, int]
    fields: tuple[tuple[str, str], ...]
    colour: str


class AutumnEnv:
    """One loaded Autumn program; ``reset(seed)`` starts it, ``step(action)`` advances it."""

    def __init__(self, source: str, name: str | None = None,
                 step_budget: int | None = None) -> None:
        self.name = name
        budget = STEP_BUDGET if step_budget is None else check_budget(step_budget)
        try:
            program = read(source, name)
            self._rt = Runtime(program, source, name, builtins(), budget)
            self.reacts_to = handled_events(program)
            """The actions the program's handlers react to (what a participant is told)."""
            self._rt.reset(0)
        except RecursionError:
            raise AutumnSyntaxError("the program is nested too deeply", name=name) from None
        self.steps = 0
        self._text = FrameText()
        # what state_hash read last: each global's value and digest, and its objects' texts
        self._names: tuple[str, ...] = ()
        self._values: tuple = ()
        self._digests: list[bytes] = []
        self._objects: list[dict[int, tuple[Instance, str]]] = []

    # -- the GridEnv contract -----------------------------------------------------------

    @property
    def frame_rate(self) -> int:
        rate = self.declared_frame_rate
        return rate if type(rate) is int and rate > 0 else 8

    @property
    def declared_frame_rate(self) -> Any:
        """``FRAME_RATE`` as the program computed it, whatever it is (8 when it sets
        none); :attr:`frame_rate` plays 8 for one that is no positive whole number, and
        the rollout check refuses any outside 3 to 8."""
        return self._rt.globals.get("FRAME_RATE", 8)

    @property
    def size(self) -> tuple[int, int]:
        n = self._rt.picture.size
        return (n, n)

    @property
    def background(self) -> str:
        return self._rt.globals.get("background", "black")

    def available_actions(self) -> tuple[str, ...]:
        return ACTIONS

    @property
    def step_budget(self) -> int:
        """Evaluations one step may do before it fails with :class:`StepBudgetExceeded`."""
        return self._rt.budget

    @property
    def step_cost(self) -> int:
        """Evaluations the last step (or reset) did, a failed one included (one stopped
        by the budget counts what it had asked for when it stopped)."""
        return self._rt.cost

    @property
    def heaviest_step(self) -> int:
        """The most evaluations any step (or reset) did since the program was loaded."""
        return self._rt.peak

    def reset(self, seed: int = 0) -> Observation:
        """Rebuild the program's state from its source with ``seed``."""
        try:
            self._rt.reset(seed)
        except RecursionError:
            raise AutumnRuntimeError("recursion too deep while loading", name=self.name) from None
        self.steps = 0
        return self.observe()

    def step(self, action: Action | str) -> Observation:
        """Apply ``noop``, an arrow or ``click X Y``; a failing step changes nothing."""
        action = parse_action(action)
        if not action.is_env_action:
            raise ValueError(f"{action} is not an environment action: expected one of "
                             "noop, up, down, left, right, click X Y")
        click = (action.x, action.y) if action.verb == "click" else None
        arrow = action.verb if action.verb in ("up", "down", "left", "right") else None
        self._rt.step(click, arrow)
        self.steps += 1
        return self.observe()

    def observe(self) -> Observation:
        frame = self._rt.picture.frame()
        return Observation(frame, lambda: self._text(frame), {"step": self.steps})

    def frame(self) -> list[list[str]]:
        return self._rt.picture.frame()

    def grid(self):
        """The current frame as (uint8 palette-index array, palette)."""
        return self._rt.picture.indices()

    # -- state --------------------------------------------------------------------------

    def snapshot(self) -> tuple[Snapshot, int]:
        """A cheap copy of the full state (values are immutable, so sharing is safe)."""
        return (self._rt.snapshot(), self.steps)

    def restore(self, snap: tuple[Snapshot, int]) -> None:
        self._rt.restore(snap[0])
        self.steps = snap[1]

    def random_state(self) -> int:
        return self._rt.rng

    def state_hash(self) -> str:
        """A digest of every hidden variable and the generator state (not identities).

        Values are immutable, so a global still holding the very value it held at the
        last call (the ninety built-ins and the functions always, most state between
        two steps) keeps the digest it had then, not walked again; nor is an object of a
        list that the list held then (:class:`_Fingerprints`). The state's digest is
        that of the globals' digests, the generator's state and the declared types."""
        rt = self._rt
        names = tuple(rt.order.names)
        same = names == self._names
        before = self._values if same else (_UNSEEN,) * len(names)
        digests = list(self._digests) if same else [b""] * len(names)
        objects = list(self._objects) if same else [{}] * len(names)
        values = tuple([rt.globals[name] for name in names])
        for i, (value, old) in enumerate(zip(values, before)):
            if value is not old:
                fingerprints = _Fingerprints(objects[i])
                text = f"{names[i]}={fingerprints.of(value)}"
                digests[i] = hashlib.blake2b(text.encode(), digest_size=16).digest()
                objects[i] = fingerprints.now
        self._names, self._values, self._digests, self._objects = (names, values, digests,
                                                                   objects)
        rest = repr((rt.rng, sorted(rt.types.items()))).encode()
        return hashlib.blake2b(b"".join(digests) + rest, digest_size=8).hexdigest()

    def value(self, name: str):
        """The current value of global ``name`` (for tests and debugging)."""
        return self._rt.globals[name]

    def variables(self) -> list[tuple[str, str]]:
        """``(name, value shown)`` for the program's own globals at the current frame: its
        state variables in program order, then the rest it defined (functions left out)."""
        rt = self._rt
        own = [n for n in rt.defined_order if n not in _PROVIDED and n not in rt.state]
        shown = []
        for name in [*rt.state_names, *own]:
            if name in rt.globals and type(rt.globals[name]) not in CALLABLES:
                shown.append((name, show(rt.globals[name])))
        return shown

    def objects_at(self, x: int, y: int) -> list[ObjectAt]:
        """The objects painting cell ``(x, y)``, the one on top (drawn last) first."""
        from tasks.autumn.render import instance_cells

        found = []
        for holder, value in self._held_objects():
            colours = [c for cx, cy, c in instance_cells(self._rt, value) if (cx, cy) == (x, y)]
            if colours:
                fields = tuple((k, show(v)) for k, v in value.fields.items())
                found.append(ObjectAt(holder, value.cls.name, (value.origin.x, value.origin.y),
                                      fields, colours[-1]))
        return found[::-1]

    def objects_off_grid(self) -> list[tuple[str, str, tuple[int, int]]]:
        """``(holder, type, origin)`` of each object with cells, none of them on the grid
        now: it is not drawn (``gridstudy envs check`` warns of those at the start). An
        object of no cells is never drawn anywhere, and is not one of them."""
        from tasks.autumn.render import instance_cells

        width, height = self.size
        found = []
        for holder, value in self._held_objects():
            cells = instance_cells(self._rt, value)
            if cells and not any(0 <= x < width and 0 <= y < height for x, y, _ in cells):
                found.append((holder, value.cls.name, (value.origin.x, value.origin.y)))
        return found

    def _held_objects(self) -> Iterator[tuple[str, Instance]]:
        """``(holder, object)`` for every object the program's globals hold, lists
        included (``apples[2]``), in the order they are drawn."""
        rt = self._rt

        def visit(holder: str, value: Any) -> Iterator[tuple[str, Instance]]:
            if type(value) is Instance:
                yield holder, value
            elif type(value) is list:
                for index, item in enumerate(value):
                    yield from visit(f"{holder}[{index}]", item)

        for name in rt.state_names + [n for n in rt.defined_order if n not in rt.state]:
            if name in rt.globals:
                yield from visit(name, rt.globals[name])

    def evaluate(self, source: str):
        """Evaluate one expression in the current global state (changes persist)."""
        from tasks.autumn.reader import read_all
        nodes = read_all(source, self.name)
        if len(nodes) != 1:
            raise AutumnSyntaxError("expected exactly one expression", name=self.name)
        rt = self._rt
        rt.never_painted, rt._painted = frozenset(), None  # it may assign a built-in's name
        program_source, rt.source = rt.source, source  # positions refer to ``source``
        rt.left = rt.budget
        try:
            return rt.compiler.expr(nodes[0])(None)
        except RecursionError:
            raise AutumnRuntimeError("recursion too deep", name=self.name) from None
        finally:
            rt.source = program_source


_UNSEEN = object()
"""A value no global holds (what ``state_hash`` compares a global with the first time)."""


class _Fingerprints:
    """The text of one global's value for ``state_hash``: an object (an
    :class:`Instance`, immutable) that the global held last time, the very same object,
    is written as it was then (a step moves a few objects of a list and makes the list
    anew); ``now`` keeps the value's objects with their texts, each with the object
    itself, so that its ``id`` is not another's meanwhile."""

    def __init__(self, before: dict[int, tuple[Instance, str]]) -> None:
        self.before = before
        self.now: dict[int, tuple[Instance, str]] = {}

    def of(self, value) -> str:
        kind = type(value)
        if kind is list:
            return f"[{','.join([self.of(v) for v in value])}]"
        if kind is not Instance:
            return repr(_fingerprint(value))
        key = id(value)
        known = self.before.get(key) or self.now.get(key)
        if known is None or known[0] is not value:
            known = (value, repr(_fingerprint(value)))
        self.now[key] = known
        return known[1]


def _fingerprint(value):
    kind = type(value)
    if kind is list:
        return tuple(_fingerprint(v) for v in value)
    if kind is Instance:
        fields = tuple((k, _fingerprint(v)) for k, v in value.fields.items())
        return (value.cls.name, fields, value.origin.x, value.origin.y,
                tuple(_fingerprint(c) for c in value.cells))
    if kind is Position:
        return ("P", value.x, value.y)
    if kind is Cell:
        return tuple(a if type(a) is int else ("lazy", a.node.start, _fingerprint(a.const))
                     for a in (value.x, value.y, value.color))
    if kind is RenderedElem:
        return ("E", value.position.x, value.position.y, value.color)
    if kind is Lambda:
        return ("fn", value.node.start)
    if kind is Builtin:
        return ("builtin", value.name)
    return value


def check_budget(value) -> int:
    """A step budget as given (``step_budget`` in ``env.json``), or why it is none."""
    if type(value) is not int or value < 1:
        raise ValueError(f"step_budget must be a whole number of evaluations of at least 1, "
                         f"got {value!r} (the default is {STEP_BUDGET:,})")
    return value


def load(source: str, name: str | None = None, step_budget: int | None = None) -> AutumnEnv:
    """Parse, compile and initialise an Autumn program (raises :class:`AutumnError`);
    ``step_budget`` replaces the default budget of evaluations per step."""
    return AutumnEnv(source, name, step_budget)


def load_file(path: str | Path, step_budget: int | None = None) -> AutumnEnv:
    """:func:`load` the program in ``path``; errors name the file as given (an editor opens it)."""
    path = Path(path)
    return AutumnEnv(path.read_text(encoding="utf-8"), str(path), step_budget)
