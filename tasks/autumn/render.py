"""Renderer: the globals painted onto a grid, and the occupancy the next step tests.

A :class:`Picture` is a flat list of colour names (row-major) with the set of covered
positions; ``indices()`` gives the numpy ``uint8`` palette-index grid when wanted.

numpy is imported only there: the interpreter itself runs without it (in the
participant's browser, numpy is not loaded).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.autumn.calls import ARITHMETIC, COMPARISON, charge
from tasks.autumn.errors import AutumnError, AutumnRuntimeError
from tasks.autumn.reader import LIST, NUM, STR, SYM
from tasks.autumn.scope import Scope
from tasks.autumn.values import UNREAD, Instance, Lazy, RenderedElem, show

if TYPE_CHECKING:
    import numpy as np


class Picture:
    """One rendered frame: ``pixels[y * size + x]`` and the covered in-grid positions."""

    __slots__ = ("size", "pixels", "occupied")

    def __init__(self, size: int, pixels: list[str], occupied: set) -> None:
        self.size = size
        self.pixels = pixels
        self.occupied = occupied

    def frame(self) -> list[list[str]]:
        """The frame as ``frame[y][x]`` colour names."""
        n, p = self.size, self.pixels
        return [p[i:i + n] for i in range(0, n * n, n)]

    def indices(self) -> tuple[np.ndarray, tuple[str, ...]]:
        """The frame as a ``uint8`` grid of palette indices, and the palette."""
        import numpy as np
        palette = tuple(dict.fromkeys(self.pixels))
        lookup = {c: i for i, c in enumerate(palette)}
        flat = np.fromiter((lookup[c] for c in self.pixels), dtype=np.uint8, count=len(self.pixels))
        return flat.reshape(self.size, self.size), palette

    def is_free(self, x: int, y: int) -> bool:
        """True unless ``(x, y)`` is inside the grid and covered (outside is always free)."""
        n = self.size
        return not (0 <= x < n and 0 <= y < n) or (x, y) not in self.occupied


_EVALUATED = object()
"""What :func:`_own_value` says of an argument that has to be evaluated."""


def _own_value(rt, arg, inst: Instance):
    """The value of a Cell argument that the object itself settles: a number, a literal,
    a name the cell was built with (its snapshot) or one of the object's own fields.
    Objects never change (a change makes a new one), so such a value is the same every
    time the object is painted. :data:`_EVALUATED` for any other argument."""
    if type(arg) is int:
        return arg
    if arg.const is not None:
        return arg.const
    name = arg.name
    if name is not None and name not in rt.classes:  # a bare name: looked up as ``fn`` would
        if arg.snapshot and name in arg.snapshot:
            return arg.snapshot[name]
        if inst is not None:
            if name == "origin":
                return inst.origin
            if name in inst.fields:
                return inst.fields[name]
    return _EVALUATED


_PURE_FORMS = frozenset({"if", "==", "!=", "&", "and", "|", "or", "!", *ARITHMETIC, *COMPARISON})
"""Forms whose value is a function of their operands' alone (the compiler's own, which
no program can redefine)."""
_WORDS = frozenset({"then", "else", "true", "false"})


def _reads(node) -> frozenset[str] | None:
    """The names ``node`` reads, when it only combines them and literals with
    :data:`_PURE_FORMS`; None when it does anything else (calls a function, builds a
    list, assigns, reads a field of another value).

    >>> from tasks.autumn.reader import read
    >>> sorted(_reads(read('(if living then "pink" else "black")')))
    ['living']
    >>> _reads(read('(uniformChoice (list "red" "blue"))')) is None
    True
    """
    names: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n.kind == SYM:
            if n.value not in _WORDS:
                names.add(n.value)
        elif n.kind == LIST:
            items = n.value
            if not items or items[0].kind != SYM or items[0].value not in _PURE_FORMS:
                return None
            stack.extend(items[1:])
        elif n.kind not in (NUM, STR):
            return None
    return frozenset(names)


def _settled_by(arg, inst: Instance, rt) -> bool:
    """True when an evaluated argument's value is the object's own: it reads only the
    names its cell was built with and the object's fields (never ``origin``)."""
    reads = arg.reads
    if reads is UNREAD:
        reads = arg.reads = _reads(arg.node) if arg.node is not None else None
    if reads is None:
        return False
    snapshot, fields = arg.snapshot or {}, inst.fields
    return all(name != "origin" and name not in rt.classes
               and (name in snapshot or name in fields) for name in reads)


def cell_value(rt, arg, inst: Instance):
    """The value of one Cell argument for ``inst`` (lazy ones evaluated now)."""
    value = _own_value(rt, arg, inst)
    return _evaluated(arg, inst) if value is _EVALUATED else value


def _evaluated(arg, inst: Instance):
    # a fresh dictionary for every argument: an assignment inside one must not reach the next
    fields = {**inst.fields, "origin": inst.origin} if inst is not None else {}
    try:
        return arg.fn(Scope(arg.snapshot or {}, Scope(fields, None)))
    except AutumnError:
        raise
    except Exception as error:  # noqa: BLE001 - reported as the program's fault
        raise AutumnRuntimeError(f"cannot evaluate a Cell argument: {error}") from None


def instance_cells(rt, inst: Instance) -> list[tuple[int, int, str]]:
    """The absolute cells ``(x, y, colour)`` of an object, in order; kept on the object
    when the object settles every argument itself (:func:`_own_value`,
    :func:`_settled_by`), as a cell whose colour is a field, or an ``if`` on one, does.
    Such cells never depend on the origin (a bare ``origin`` is a position, which no
    cell argument may be), so a moved copy shifts them."""
    painted = inst.painted
    if painted is not None:
        return painted
    ox, oy = inst.origin.x, inst.origin.y
    out = []
    own = True
    for cell in inst.cells:
        values = []
        for arg in (cell.x, cell.y, cell.color):
            value = _own_value(rt, arg, inst)
            if value is _EVALUATED:
                own = own and _settled_by(arg, inst, rt)
                value = _evaluated(arg, inst)
            values.append(value)
        x, y, colour = values
        if type(x) is not int or type(y) is not int or type(colour) is not str:
            raise AutumnRuntimeError(
                f"a cell of {inst.cls.name} must be (Cell Number Number String), got "
                f"{show(x)} {show(y)} {show(colour)}")
        out.append((ox + x, oy + y, colour))
    if own:
        inst.painted = out
    return out


def cells_of(rt, value) -> list[tuple[int, int, str]]:
    """Every cell an object or (nested) list of objects paints, in order (the step's
    budget is charged one evaluation per cell)."""
    out = _cells(rt, value, [])
    charge(rt, len(out))
    return out


def _cells(rt, value, out: list) -> list[tuple[int, int, str]]:
    kind = type(value)
    if kind is Instance:
        out.extend(instance_cells(rt, value))
    elif kind is list:
        for item in value:
            if type(item) is Instance:
                out.extend(instance_cells(rt, item))
            elif type(item) is list:
                _cells(rt, item, out)
    return out


def rendered_elems(rt, value) -> list[RenderedElem]:
    """``renderValue``: the cells as RenderedElem values."""
    from tasks.autumn.values import Position
    return [RenderedElem(Position(x, y), c) for x, y, c in cells_of(rt, value)]


def paint(rt, names, size: int, background: str) -> Picture:
    """Paint the values of ``names`` (in order) over ``background``."""
    pixels = [background] * (size * size)
    occupied = set()
    glob = rt.globals
    for name in names:
        value = glob.get(name)
        kind = type(value)
        if kind is not Instance and kind is not list:
            continue
        for x, y, colour in _cells(rt, value, []):  # what is painted was charged when made
            if 0 <= x < size and 0 <= y < size:
                pixels[y * size + x] = colour.lower()
                occupied.add((x, y))
    return Picture(size, pixels, occupied)


__all__ = ["Picture", "Lazy", "cells_of", "instance_cells", "paint", "rendered_elems"]
