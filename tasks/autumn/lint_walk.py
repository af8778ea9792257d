"""The static checker's walk: each statement and expression once, with the names a
lexical scope binds; names, fields, the start order of state variables, and unused
definitions (calls and types: :mod:`tasks.autumn.lint_calls`)."""

from __future__ import annotations

from tasks.autumn import compat
from tasks.autumn.compiler import SPECIAL
from tasks.autumn.lint_calls import Calls
from tasks.autumn.lint_defs import (
    BASE_TYPES,
    ERROR,
    SPECIAL_GLOBALS,
    VALUE_FIELDS,
    WARNING,
    Finding,
    _article,
    _builtin_names,
    _collect,
    _evaluated_names,
    _form,
    _params,
    builtin_arities,
)
from tasks.autumn.reader import LIST, SYM, Node
from tasks.words import suggest


class Checker(Calls):
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
        return suggest(name, candidates, cutoff=0.75)

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
                self.special(items[1].value, items[2])

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
