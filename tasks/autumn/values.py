"""The values an Autumn program computes with.

* Number: a Python ``int`` kept in 32-bit signed range (never a ``bool``);
* String: ``str``; Bool: ``bool``; "no value": ``None``;
* List: a Python ``list``, never mutated once built;
* :class:`Position`, :class:`Cell`, :class:`Instance` (objects of user types) and
  :class:`RenderedElem` (a painted cell, as ``renderValue`` returns it);
* :class:`Lambda` and :class:`Builtin` (functions), :class:`ObjectClass` (constructors).

Instances are immutable: ``updateObj`` and every move make a copy with a new identity.
"""

from __future__ import annotations

from typing import Any

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


def wrap32(value: int) -> int:
    """``value`` wrapped into the 32-bit signed range, as the reference's ``int``."""
    if INT_MIN <= value <= INT_MAX:
        return value
    return ((value - INT_MIN) & 0xFFFFFFFF) + INT_MIN


class Position:
    """A grid position ``(Position x y)``; compared by value."""

    __slots__ = ("x", "y")

    def __init__(self, x: int, y: int) -> None:
        self.x = x
        self.y = y

    def __eq__(self, other: object) -> bool:
        return type(other) is Position and self.x == other.x and self.y == other.y

    def __hash__(self) -> int:
        return hash((self.x, self.y))

    def __repr__(self) -> str:
        return f"(Position {self.x} {self.y})"


class Lazy:
    """A Cell argument kept as an expression (see ``compat.make_cell``).

    ``const`` holds the value when the expression is a literal (then it never needs
    evaluating); ``snapshot`` the variables it named when the cell was built; ``name``
    the name when the expression is a bare name (the commonest: a field such as a colour),
    which the renderer looks up without evaluating.
    """

    __slots__ = ("node", "fn", "snapshot", "const", "name", "reads")

    def __init__(self, node, fn, snapshot: dict | None, const: Any = None) -> None:
        self.node = node
        self.fn = fn
        self.snapshot = snapshot
        self.const = const
        self.name = node.value if node is not None and node.is_sym() else None
        self.reads: Any = UNREAD
        """The names the expression reads when its value depends on nothing else, None
        when it may (``render``'s business, found on first use)."""


UNREAD = object()
"""``Lazy.reads`` before the renderer has looked at the expression."""


class Cell:
    """``(Cell dx dy colour)``: each argument a frozen ``int`` or a :class:`Lazy`."""

    __slots__ = ("x", "y", "color")

    def __init__(self, x, y, color) -> None:
        self.x = x
        self.y = y
        self.color = color

    def __repr__(self) -> str:
        def show(a):
            return a if type(a) is int else (a.const if a.const is not None else "<expr>")
        return f"(Cell {show(self.x)} {show(self.y)} {show(self.color)!r})"


class RenderedElem:
    """A cell as painted: an absolute ``position`` and a ``color`` (``renderValue``)."""

    __slots__ = ("position", "color")

    def __init__(self, position: Position, color: str) -> None:
        self.position = position
        self.color = color

    def __eq__(self, other: object) -> bool:
        return (type(other) is RenderedElem and self.color == other.color
                and self.position == other.position)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"(RenderedElem {self.position!r} {self.color!r})"


class ObjectClass:
    """A user object type: field names and declared types, and the compiled CELLS."""

    __slots__ = ("name", "fields", "types", "cells_fn", "node")

    def __init__(self, name: str, fields: tuple[str, ...], types: tuple, cells_fn, node) -> None:
        self.name = name
        self.fields = fields
        self.types = types
        self.cells_fn = cells_fn
        self.node = node

    def __repr__(self) -> str:
        return f"<object type {self.name}>"


class Instance:
    """An object: its type, field values, origin, cells and identity.

    ``painted`` caches the absolute cells when the object settles every cell argument
    itself (literals, its own fields: ``render.instance_cells``), which is the common
    case and makes rendering cheap.
    """

    __slots__ = ("cls", "fields", "origin", "cells", "id", "painted")

    def __init__(self, cls: ObjectClass, fields: dict, origin: Position, cells: list,
                 ident: int) -> None:
        self.cls = cls
        self.fields = fields
        self.origin = origin
        self.cells = cells
        self.id = ident
        self.painted = None

    def replace(self, ident: int, field: str | None = None, value: Any = None) -> Instance:
        """A copy with a new identity and, optionally, one field (or the origin) replaced."""
        fields = self.fields
        origin = self.origin
        if field == "origin":
            origin = value
        elif field is not None:
            fields = dict(fields)
            fields[field] = value
        return Instance(self.cls, fields, origin, self.cells, ident)

    def moved(self, ident: int, dx: int, dy: int) -> Instance:
        """A copy shifted by ``(dx, dy)``, keeping the painted cache when it has one."""
        copy = Instance(self.cls, self.fields, Position(self.origin.x + dx, self.origin.y + dy),
                        self.cells, ident)
        if self.painted is not None:
            copy.painted = [(x + dx, y + dy, c) for x, y, c in self.painted]
        return copy

    def __repr__(self) -> str:
        fields = " ".join(f"{k}={show(v)}" for k, v in self.fields.items())
        return f"({self.cls.name} {fields} @{self.origin.x},{self.origin.y})".replace("  ", " ")


class Lambda:
    """A function written in Autumn; called in the *caller's* scope (dynamic scoping)."""

    __slots__ = ("params", "body", "node")

    def __init__(self, params: tuple[str, ...], body, node) -> None:
        self.params = params
        self.body = body
        self.node = node

    def __repr__(self) -> str:
        return f"<lambda ({' '.join(self.params)})>"


class Builtin:
    """A function written in Python: ``fn(runtime, scope, *args)``."""

    __slots__ = ("name", "fn")

    def __init__(self, name: str, fn) -> None:
        self.name = name
        self.fn = fn

    def __repr__(self) -> str:
        return f"<built-in {self.name}>"


CALLABLES = (Lambda, Builtin)


def type_name(value: Any) -> str:
    """The Autumn type name of a value, as used in declarations and messages."""
    kind = type(value)
    if kind is int:
        return "Number"
    if kind is bool:
        return "Bool"
    if kind is str:
        return "String"
    if kind is list:
        return "List"
    if kind is Instance:
        return value.cls.name
    if kind is Position:
        return "Position"
    if kind is Cell:
        return "Cell"
    if kind is RenderedElem:
        return "RenderedElem"
    if kind in CALLABLES:
        return "Function"
    if kind is ObjectClass:
        return "Type"
    return "None" if value is None else kind.__name__


def show(value: Any) -> str:
    """A short printable form of a value for messages and ``print``."""
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is str:
        return f'"{value}"'
    if type(value) is list:
        inner = "".join(" " + show(v) for v in value[:8])
        return f"(list{inner}{' ...' if len(value) > 8 else ''})"
    return repr(value)
