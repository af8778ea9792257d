"""What the static checker knows before it walks a program: the messages it makes
(:class:`Finding`), what the interpreter provides (built-ins and their arities), and the
program's own definitions (objects, declarations, state, functions), with the types a
literal certainly has. :mod:`tasks.autumn.lint` is the checker's entry point."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from functools import cache

from tasks.autumn import compat
from tasks.autumn.compiler import SPECIAL
from tasks.autumn.errors import quote
from tasks.autumn.reader import LIST, NUM, STR, SYM, Node

ERROR, WARNING = "error", "warning"
SPECIAL_GLOBALS = ("GRID_SIZE", "FRAME_RATE", "background")
"""Globals a program defines for the interpreter: never reported as unused."""
BASE_TYPES = {"Number", "Int", "String", "Bool", "Position", "Cell", "List"}
VALUE_FIELDS = {"origin", "x", "y", "position", "color"}
"""Fields every value of some kind has: Position x/y, Cell x/y/color, an object's origin,
a rendered element's position and color."""
FUNCTION = "a function"


@dataclass(frozen=True)
class Finding:
    """One message about a program, at its position in the file."""

    severity: str
    message: str
    file: str
    line: int | None = None
    column: int | None = None
    snippet: str = ""

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}:{self.column}"
        text = f"{where}: {self.severity}: {self.message}"
        return f"{text}\n{quote(self.snippet, self.column or 1)}" if self.snippet else text

# -- what the interpreter provides ---------------------------------------------------------

@dataclass(frozen=True)
class Arity:
    least: int
    most: int | None  # None: any number
    tolerant: bool  # extra arguments are evaluated, then ignored (an Autumn lambda): no error


def _arity(fn, tolerant: bool) -> Arity:
    params = list(inspect.signature(fn).parameters.values())[2:]  # after (rt, scope)
    # a module function's ``*rest`` only takes the extra arguments it ignores (tolerant)
    varargs = not tolerant and any(p.kind is p.VAR_POSITIONAL for p in params)
    fixed = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    least = sum(p.default is p.empty for p in fixed)
    return Arity(least, None if varargs else len(fixed), tolerant)


@cache
def builtin_arities() -> dict[str, Arity]:
    """Every built-in function's arity: the natives strict, the module's tolerant."""
    from tasks.autumn.prelude import MODULE
    from tasks.autumn.stdlib import NATIVES
    table = {name: _arity(fn, False) for name, fn in NATIVES.items()}
    table.update((name, _arity(fn, True)) for name, fn in MODULE.items())
    for alias, target in (("vcat", "concat"), ("displacement", "deltaPos"),
                          ("nextSolid", "moveDownNoCollision")):
        table[alias] = table[target]
    return table


def _builtin_names() -> set[str]:
    return (set(builtin_arities()) | set(compat.NATIVE_NAMES) | set(compat.MODULE_NAMES)
            | {compat.TRIGGER_NAME, compat.RENDER_CACHE_NAME, "click", "true", "false", "Position",
               "Cell"})


# -- the program's own definitions ------------------------------------------------------------

@dataclass
class ObjectType:
    name: str
    fields: list[str]
    types: list[str]
    node: Node


@dataclass
class Definitions:
    objects: dict[str, ObjectType] = field(default_factory=dict)
    declared: dict[str, tuple[str, str | None, Node]] = field(default_factory=dict)
    state: dict[str, Node] = field(default_factory=dict)
    plain: dict[str, Node] = field(default_factory=dict)  # name -> the (= name expr) node
    functions: dict[str, list[str]] = field(default_factory=dict)  # name -> parameters
    assigned: set[str] = field(default_factory=set)  # globals a handler may create
    local_anywhere: set[str] = field(default_factory=set)  # parameters and let-locals


def _form(node: Node, word: str) -> bool:
    return node.kind == LIST and bool(node.value) and node.value[0].is_sym(word)


def _is_lambda(node: Node) -> bool:
    return _form(node, "-->") or _form(node, "fn")


def _params(node: Node) -> list[str]:
    params = node.value[1]
    return [params.value] if params.kind == SYM else [p.value for p in params.value]


def _type_of_declaration(node: Node) -> tuple[str, str | None]:
    """``Number`` -> ("Number", None); ``(List Spark)`` -> ("List", "Spark")."""
    if node.kind == SYM:
        return ("Number" if node.value == "Int" else node.value), None
    inner, _ = _type_of_declaration(node.value[1])
    return "List", inner


def _collect(statements: list[Node]) -> Definitions:
    found = Definitions()
    for s in statements:
        items = s.value if s.kind == LIST else []
        if _form(s, "object"):
            fields = [f.value[1].value for f in items[2:-1]]
            types = [_type_of_declaration(f.value[2])[0] for f in items[2:-1]]
            found.objects[items[1].value] = ObjectType(items[1].value, fields, types, s)
        elif _form(s, ":") and items[1].kind == SYM:
            found.declared[items[1].value] = (*_type_of_declaration(items[2]), s)
        elif _form(s, "=") and items[1].kind == SYM:
            if _form(items[2], "initnext"):
                found.state[items[1].value] = s
            else:
                found.plain[items[1].value] = s
                if _is_lambda(items[2]):
                    found.functions[items[1].value] = _params(items[2])
        top_level_definition = _form(s, "=") and len(items) == 3
        _locals_and_globals(items[2] if top_level_definition else s, False, found)
    return found


def _locals_and_globals(node: Node, nested: bool, found: Definitions) -> None:
    """Names bound locally anywhere, and names a top-level ``=`` in a handler creates."""
    if node.kind != LIST or not node.value:
        return
    head = node.value[0]
    if _is_lambda(node):
        found.local_anywhere.update(_params(node))
        nested = True
    elif head.is_sym("let"):
        nested = True
    elif head.is_sym("=") and len(node.value) == 3 and node.value[1].kind == SYM:
        (found.local_anywhere if nested else found.assigned).add(node.value[1].value)
    for child in node.value:
        _locals_and_globals(child, nested, found)


# -- the walk ---------------------------------------------------------------------------------

def _literal_type(node: Node, objects: dict[str, ObjectType]) -> str | None:
    """The type a literal node certainly has, or None when only running it would tell."""
    if node.kind == NUM:
        return "Number"
    if node.kind == STR:
        return "String"
    if node.is_sym("true") or node.is_sym("false"):
        return "Bool"
    if node.kind == LIST and node.value and node.value[0].kind == SYM and len(node.value) > 1:
        head = node.value[0].value
        if head == "list":
            return "List"
        if head in ("Position", "Cell") or head in objects:
            return head
        if head in ("-->", "fn"):
            return FUNCTION
        if head in ("+", "*", "/", "%"):
            return "Number"
        if head in ("<", "<=", ">", ">=", "==", "!=", "!", "&", "|", "and", "or"):
            return "Bool"
    return None


def _evaluated_names(node: Node) -> list[Node]:
    """The name nodes ``node`` reads when it is evaluated, not counting lambda bodies (run
    later), names a ``let`` binds first, or a constructor's or ``Cell``'s lazy parts."""
    found: list[Node] = []

    def walk(n: Node, bound: frozenset[str]) -> None:
        if n.kind == SYM:
            if n.value not in bound and n.value not in SPECIAL:
                found.append(n)
            return
        if n.kind != LIST or not n.value or _is_lambda(n):
            return
        head = n.value[0]
        if head.is_sym("let"):
            for child in n.value[1:]:
                walk(child, bound)
                if _form(child, "=") and child.value[1].kind == SYM:
                    bound = bound | {child.value[1].value}
            return
        if head.is_sym("="):
            walk(n.value[2], bound)
            return
        if head.is_sym(".."):
            walk(n.value[1], bound)
            return
        for child in n.value:
            walk(child, bound)

    walk(node, frozenset())
    return found

def _article(type_name: str) -> str:
    return type_name if type_name == FUNCTION else f"a {type_name}"
