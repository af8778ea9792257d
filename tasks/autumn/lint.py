"""Static checks of an Autumn program, before anything runs (``gridstudy envs check``).

:func:`check_source` reads and compiles the program (the syntax checks are the
compiler's own), then walks it once and reports, each at its ``file:line:col`` with the
source quoted:

errors (the program would fail, or cannot mean what it says)
    names that are defined nowhere (functions, variables, object types in declarations),
    fields that no object type has, too few arguments to a built-in, to one of the
    program's functions or to an object constructor, ``(f)`` alone included (too many
    to a native built-in or a constructor), literals or functions of the wrong type for
    a declared variable, a constructor's field, an ``updateObj`` of a field, an
    arithmetic operand or ``!``;
warnings (it runs, but probably not as meant)
    definitions and object types never used, variables declared and never defined,
    extra arguments to an Autumn lambda or the built-in module (evaluated, then
    ignored), names that only a caller's local could supply (Autumn's scoping is
    dynamic, so such a program can work, but rarely means to).

The walk is lexical: a name is known where a lambda parameter, an earlier ``=`` in an
enclosing ``let``, an object's own fields (in its cells), a top-level definition, a
global assigned by a handler, or a built-in supplies it.

>>> print(errors(check_source('(program (= n (lengthz (list 1 2))))', 'demo.sexp'))[0])
demo.sexp:1:15: error: unknown function 'lengthz' (did you mean 'length'?)
    (program (= n (lengthz (list 1 2))))
                  ^
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from tasks.autumn import compat
from tasks.autumn.compiler import SPECIAL
from tasks.autumn.errors import AutumnError, quote
from tasks.autumn.reader import LIST, NUM, STR, SYM, Node, read

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


def errors(findings: Sequence[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == ERROR]


def check_file(path: str | Path) -> tuple[Finding, ...]:
    """:func:`check_source` of a file, its messages naming the path as given."""
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as error:
        return (Finding(ERROR, f"cannot read the file: {error}", str(path)),)
    return check_source(source, str(path))


@cache
def check_source(source: str, name: str = "<program>") -> tuple[Finding, ...]:
    """Every finding in ``source``, in file order (a syntax error alone, when there is one)."""
    from tasks.autumn.runtime import Runtime
    from tasks.autumn.stdlib import builtins
    try:
        program = read(source, name)
        Runtime(program, source, name, builtins())  # compiling is the syntax check
        findings = _Checker(program, source, name).run()
    except AutumnError as error:
        findings = [Finding(ERROR, error.reason, name, error.line, error.column)]
    except RecursionError:
        findings = [Finding(ERROR, "the program is nested too deeply", name)]
    lines = source.splitlines()
    return tuple(replace(f, snippet=lines[f.line - 1].rstrip() if f.line and f.line <= len(lines) else "")
                 for f in sorted(findings, key=lambda f: (f.line or 0, f.column or 0)))


# -- what the interpreter provides ---------------------------------------------------------

@dataclass(frozen=True)
class Arity:
    least: int
    most: int | None  # None: any number
    tolerant: bool  # extra arguments are evaluated, then ignored (an Autumn lambda): no error


def _arity(fn, tolerant: bool) -> Arity:
    params = list(inspect.signature(fn).parameters.values())[2:]  # after (rt, scope)
    varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
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


class _Checker:
    def __init__(self, program: Node, source: str, name: str) -> None:
        self.source, self.name = source, name
        self.statements = program.value[1:]
        self.defs = _collect(self.statements)
        self.findings: list[Finding] = []
        self.used: dict[str, int] = {}
        self.builtins = _builtin_names()
        self.arities = builtin_arities()
        defs = self.defs
        self.globals = (self.builtins | set(defs.state) | set(defs.plain) | defs.assigned
                        | set(defs.objects))
        self.all_fields = {f for o in defs.objects.values() for f in o.fields} | VALUE_FIELDS
        self.start_order = compat.order_of(defs.state)

    # -- reporting ----------------------------------------------------------------------------

    def report(self, severity: str, node: Node, message: str) -> None:
        self.findings.append(Finding(severity, message, self.name, node.line, node.col))

    def suggest(self, name: str, candidates) -> str:
        close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.75)
        return f" (did you mean '{close[0]}'?)" if close else ""

    # -- statements ---------------------------------------------------------------------------

    def run(self) -> list[Finding]:
        for s in self.statements:
            self.statement(s)
        self.unused()
        return self.findings

    def statement(self, node: Node) -> None:
        items = node.value if node.kind == LIST else []
        if _form(node, "object"):
            obj = self.defs.objects[items[1].value]
            for f in items[2:-1]:
                self.type_name(f.value[2])
            self.visit(items[-1], frozenset(obj.fields) | {"origin"})
        elif _form(node, ":"):
            self.type_name(items[2])
            if items[1].value not in self.defs.state and items[1].value not in self.defs.plain \
                    and items[1].value not in self.defs.assigned:
                self.report(WARNING, node, f"'{items[1].value}' is declared but never defined")
        elif _form(node, "=") and _form(items[2], "initnext"):
            for part in items[2].value[1:]:
                self.visit(part, frozenset())
                self.against_declaration(items[1].value, part)
            self.starts_before(items[1].value, items[2].value[1])
        elif _form(node, "on"):
            for part in items[1:]:
                self.visit(part, frozenset())
        else:
            self.visit(node, frozenset())
            if _form(node, "=") and len(items) == 3:
                self.defined_before(node, items[1].value, items[2])

    def starts_before(self, name: str, init: Node) -> None:
        """An INIT may read only the state variables that start before it: the reference
        starts them in its hash order, not in program order."""
        order = self.start_order
        for used in _evaluated_names(init):
            if used.value in self.defs.state and order.index(used.value) >= order.index(name):
                self.report(ERROR, used, f"'{used.value}' has not started yet when '{name}' "
                            f"starts (state variables start in this order: {', '.join(order)})")
            elif used.value == "prev":
                self.report(ERROR, used, "prev is not allowed in a state variable's first value")

    def defined_before(self, node: Node, name: str, value: Node) -> None:
        """A plain definition runs once, in program order, before any state variable starts."""
        later = {n: i for i, n in enumerate(self.defs.plain)}
        for used in _evaluated_names(value):
            if used.value in self.defs.state:
                self.report(ERROR, used, f"'{used.value}' has no value yet when '{name}' is "
                            "defined: plain definitions run before state variables start")
            elif later.get(used.value, -1) > later.get(name, -1):
                self.report(ERROR, used, f"'{used.value}' is defined later in the program than "
                            f"'{name}', which uses it")

    def type_name(self, node: Node) -> None:
        if node.kind == LIST:
            self.type_name(node.value[1])
            return
        if node.value in self.defs.objects:
            self.use(node.value)
        elif node.value not in BASE_TYPES:
            known = BASE_TYPES | set(self.defs.objects)
            self.report(ERROR, node, f"unknown type '{node.value}'" + self.suggest(node.value, known))

    # -- expressions --------------------------------------------------------------------------

    def use(self, name: str) -> None:
        self.used[name] = self.used.get(name, 0) + 1

    def visit(self, node: Node, bound: frozenset[str]) -> None:
        if node.kind == SYM:
            self.name_(node, bound, "name")
            return
        if node.kind != LIST or not node.value:
            return
        head, args = node.value[0], node.value[1:]
        if head.kind == SYM and head.value in _FORMS:
            getattr(self, _FORMS[head.value])(node, args, bound)
            return
        if head.kind == SYM and not args:
            self.name_(head, bound, "name")  # (f) is the variable f: a function needs arguments
            self.call(node, head.value, args, bound)
            return
        if head.kind == SYM:
            self.name_(head, bound, "function", at=node)
            self.call(node, head.value, args, bound)
        else:
            self.visit(head, bound)
        for a in args:
            self.visit(a, bound)

    def name_(self, node: Node, bound: frozenset[str], what: str, at: Node | None = None) -> None:
        name, at = node.value, at or node
        if name in SPECIAL and name not in ("then", "else"):
            return
        self.use(name)
        if name in bound or name in self.globals:
            return
        if name in self.defs.local_anywhere:
            self.report(WARNING, at, f"'{name}' is not defined here; only a caller's local "
                        f"of that name (dynamic scope) could supply it")
            return
        known = self.globals | bound
        self.report(ERROR, at, f"unknown {what} '{name}'" + self.suggest(name, known))

    def assign(self, node: Node, args: list[Node], bound: frozenset[str]) -> None:
        self.visit(args[1], bound)
        if args[0].value not in bound:
            self.against_declaration(args[0].value, args[1], bound)

    def against_declaration(self, name: str, value: Node, bound: frozenset[str] = frozenset()) -> None:
        declared = self.defs.declared.get(name)
        if declared is None:
            return
        kind, element, _ = declared
        self.expect(kind, value, f"'{name}' is declared {kind}", bound)
        if kind == "List" and element and _form(value, "list"):
            for item in value.value[1:]:
                self.expect(element, item, f"'{name}' is declared (List {element})", bound)

    def function_named(self, value: Node, bound: frozenset[str]) -> bool:
        """``value`` is the name of a function: a built-in or one of the program's own,
        not shadowed by a local or a global of the same name."""
        name = value.value
        if value.kind != SYM or name in bound:
            return False
        if name in self.defs.functions:
            return name not in self.defs.assigned
        return name in self.arities and name not in self.defs.plain \
            and name not in self.defs.state and name not in self.defs.assigned

    def expect(self, wanted: str, value: Node, why: str, bound: frozenset[str] = frozenset()) -> None:
        if wanted not in BASE_TYPES and wanted not in self.defs.objects:
            return  # an unknown type: reported where it is declared
        wanted = "Number" if wanted == "Int" else wanted
        got = FUNCTION if self.function_named(value, bound) else _literal_type(value, self.defs.objects)
        if got is not None and got != wanted:
            self.report(ERROR, value, f"{why}, but this is {_article(got)}")

    def let(self, node: Node, args: list[Node], bound: frozenset[str]) -> None:
        for a in args:
            self.visit(a, bound)
            if _form(a, "=") and len(a.value) == 3 and a.value[1].kind == SYM:
                bound = bound | {a.value[1].value}

    def lambda_(self, node: Node, args: list[Node], bound: frozenset[str]) -> None:
        self.visit(args[1], bound | set(_params(node)))

    def if_(self, node: Node, args: list[Node], bound: frozenset[str]) -> None:
        for a in args:
            if not (a.is_sym("then") or a.is_sym("else")):
                self.visit(a, bound)

    def declare(self, node: Node, args: list[Node], bound: frozenset[str]) -> None:
        self.type_name(args[1])

    def field(self, node: Node, args: list[Node], bound: frozenset[str]) -> None:
        self.visit(args[0], bound)
        name = args[1].value
        if name not in self.all_fields:
            self.report(ERROR, args[1], f"no object type has a field '{name}'"
                        + self.suggest(name, self.all_fields))

    def operands(self, node: Node, args: list[Node], bound: frozenset[str]) -> None:
        op = node.value[0].value
        wanted = {"!": "Bool", **{o: "Number" for o in _NUMERIC}}.get(op)
        for a in args:
            self.visit(a, bound)
            if wanted:
                self.expect(wanted, a, f"'{op}' needs {_article(wanted)}")

    def prev(self, node: Node, args: list[Node], bound: frozenset[str]) -> None:
        target = args[0] if args else None
        if target is not None and target.kind == SYM:
            self.use(target.value)
            if target.value not in self.globals:
                self.report(ERROR, target, f"prev reads a global, and '{target.value}' is none"
                            + self.suggest(target.value, self.defs.state))
            return
        for a in args:
            self.visit(a, bound)

    # -- calls --------------------------------------------------------------------------------

    def call(self, node: Node, name: str, args: list[Node], bound: frozenset[str]) -> None:
        if name in bound:
            return  # a local function: its parameters are not known statically
        if name in self.defs.objects:
            self.construct(node, self.defs.objects[name], args)
        elif name == "Position":
            self.count(node, name, args, Arity(2, 2, False), "x y")
            for a in args:
                self.expect("Number", a, "a Position's coordinates are Numbers")
        elif name == "Cell":
            self.count(node, name, args, Arity(3, 3, False), "dx dy colour")
        elif name in self.defs.functions and name not in self.defs.assigned:
            params = self.defs.functions[name]
            self.count(node, name, args, Arity(len(params), len(params), True), " ".join(params))
        elif name in self.arities and name not in self.defs.plain:
            self.count(node, name, args, self.arities[name], "")
            if name == "updateObj" and len(args) == 3 and args[1].kind == STR:
                self.update_field(args[1], args[2])

    def count(self, node: Node, name: str, args: list[Node], arity: Arity, params: str) -> None:
        got = len(args)
        wanted = (f"{arity.least}" if arity.most == arity.least else
                  f"at least {arity.least}" if arity.most is None else
                  f"{arity.least} to {arity.most}")
        named = f" ({params})" if params else ""
        takes = f"{name} takes {wanted} argument{'' if wanted == '1' else 's'}{named}, got {got}"
        if got < arity.least:
            alone = f"; ({name}) alone is the function itself, not a call" if not got else ""
            self.report(ERROR, node, takes + alone)
        elif arity.most is not None and got > arity.most:
            self.report(WARNING if arity.tolerant else ERROR, node, takes + (
                "; the extra ones are evaluated, then ignored" if arity.tolerant else ""))

    def construct(self, node: Node, obj: ObjectType, args: list[Node]) -> None:
        self.count(node, obj.name, args, Arity(len(obj.fields) + 1, len(obj.fields) + 1, False),
                   " ".join([*obj.fields, "origin"]))
        if len(args) < len(obj.fields) + 1:
            return  # which argument is which is anyone's guess
        for value, fname, ftype in zip(args, obj.fields, obj.types, strict=False):
            self.expect(ftype, value, f"{obj.name}'s field '{fname}' is {ftype}")
        self.expect("Position", args[len(obj.fields)], f"{obj.name}'s last argument is its origin")

    def update_field(self, name_node: Node, value: Node) -> None:
        name = name_node.value
        owners = [o for o in self.defs.objects.values() if name in o.fields]
        if not owners and name != "origin":
            fields = {f for o in self.defs.objects.values() for f in o.fields}
            self.report(ERROR, name_node, f"no object type has a field '{name}'"
                        + self.suggest(name, fields))
            return
        types = {o.types[o.fields.index(name)] for o in owners} or {"Position"}
        if len(types) == 1:
            wanted = types.pop()
            self.expect(wanted, value, f"the field '{name}' is {wanted}")

    # -- unused definitions -------------------------------------------------------------------

    def unused(self) -> None:
        for name, node in self.defs.plain.items():
            if name not in SPECIAL_GLOBALS and not self.used.get(name):
                kind = "function" if name in self.defs.functions else "definition"
                self.report(WARNING, node, f"the {kind} '{name}' is never used")
        for name, obj in self.defs.objects.items():
            if not self.used.get(name):
                self.report(WARNING, obj.node, f"the object type '{name}' is never used")


_NUMERIC = ("+", "-", "*", "/", "%", "<", "<=", ">", ">=")
_FORMS = {
    "=": "assign", ":": "declare", "if": "if_", "let": "let", "-->": "lambda_", "fn": "lambda_",
    "..": "field", "prev": "prev", "!": "operands", "list": "operands", "&": "operands",
    "and": "operands", "|": "operands", "or": "operands", "==": "operands", "!=": "operands",
    **{op: "operands" for op in _NUMERIC},
}
