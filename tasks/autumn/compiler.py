"""Evaluator: Autumn expressions compiled once, at load, into Python closures.

``Compiler(runtime).expr(node)`` returns ``fn(scope) -> value``. Special forms are
dispatched on their head word (grammar in each method's docstring); anything else is
a call. Closures look globals up in ``runtime.globals``, a dictionary that keeps its
identity for the environment's whole life (reset and restore refill it in place).
"""

from __future__ import annotations

from tasks.autumn import compat
from tasks.autumn.calls import ARITHMETIC, COMPARISON, OPERATORS, apply, charge
from tasks.autumn.errors import AutumnError
from tasks.autumn.inert import inert
from tasks.autumn.reader import LIST, NUM, STR, SYM, Node, snippet
from tasks.autumn.scope import Scope
from tasks.autumn.values import (
    CALLABLES,
    Cell,
    Instance,
    Lambda,
    Position,
    RenderedElem,
    show,
    wrap32,
)

_MISSING = object()
_PYTHON_FAILURES = (TypeError, ValueError, AttributeError, IndexError, KeyError,
                    ZeroDivisionError, OverflowError)
SPECIAL = {"=", "if", "let", "-->", "fn", "..", "list", "&", "and", "|", "or", "!", "==",
           "!=", ":", "initnext", "on", "object", "then", "else", "true", "false",
           *ARITHMETIC, *COMPARISON}


def symbols_in(node: Node) -> tuple[str, ...]:
    """Every variable-like name in ``node`` (for Cell snapshots), without duplicates."""
    found: dict[str, None] = {}
    stack = [node]
    while stack:
        n = stack.pop()
        if n.kind == SYM and n.value not in SPECIAL:
            found[n.value] = None
        elif n.kind == LIST:
            stack.extend(n.value)
    return tuple(found)


def parse_type(node: Node, rt) -> str:
    """A type expression as a name: ``Number`` (also ``Int``), ``(List T)`` as ``List``."""
    if node.kind == SYM:
        return "Number" if node.value == "Int" else node.value
    if node.kind == LIST and len(node.value) == 2 and node.value[0].is_sym("List"):
        parse_type(node.value[1], rt)
        return "List"
    raise rt.syntax(node, "malformed type: expected a type name or (List T)")


class Compiler:
    """Turns nodes into closures bound to one runtime."""

    def __init__(self, rt, class_names: set[str], values: frozenset[str] = frozenset()) -> None:
        self.rt = rt
        self.class_names = class_names
        self.values = values
        """The program's names that hold no function (:func:`tasks.autumn.inert.value_names`)."""

    def expr(self, node: Node):
        if node.kind == NUM:
            value = wrap32(node.value)
            return lambda scope: value
        if node.kind == STR:
            text = node.value
            return lambda scope: text
        if node.kind == SYM:
            return self.symbol(node)
        items = node.value
        if not items:
            raise self.rt.syntax(node, "empty list '()' is not an expression; write (list)")
        head = items[0]
        if head.kind == SYM:
            form = getattr(self, _FORMS.get(head.value, ""), None)
            if form is not None:
                return form(node, items[1:])
        return self.call(node, head, items[1:])

    # -- names --------------------------------------------------------------------------

    def symbol(self, node: Node):
        name = node.value
        if name == "true":
            return lambda scope: True
        if name == "false":
            return lambda scope: False
        rt = self.rt
        if name in self.class_names:
            def get_class(scope):
                try:
                    return rt.classes[name]
                except KeyError:
                    raise rt.runtime(node, f"object type {name} is not declared yet") from None
            return get_class
        G = rt.globals

        def get(scope):
            while scope is not None:
                if name in scope.vars:
                    return scope.vars[name]
                scope = scope.parent
            try:
                return G[name]
            except KeyError:
                raise rt.unknown(node, name) from None
        return get

    def assign(self, node: Node, args: list[Node]):
        """(= name expr)"""
        if len(args) != 2 or args[0].kind != SYM:
            raise self.rt.syntax(node, "malformed assignment: expected (= name expr)")
        name = args[0].value
        if args[1].kind == LIST and args[1].value and args[1].value[0].is_sym("initnext"):
            raise self.rt.syntax(node, "initnext is only allowed in a top-level (= name ...)")
        value_fn = self.expr(args[1])
        rt = self.rt
        G = rt.globals

        def assign(scope):
            value = value_fn(scope)
            s = scope
            while s is not None:
                if name in s.vars:
                    s.vars[name] = value
                    return value
                s = s.parent
            if scope is None or name in G:
                rt.set_global(name, value, node)
            else:
                scope.vars[name] = value
            return value
        return assign

    def declare(self, node: Node, args: list[Node]):
        """(: name Type)"""
        if len(args) != 2 or args[0].kind != SYM:
            raise self.rt.syntax(node, "malformed declaration: expected (: name Type)")
        name, declared = args[0].value, parse_type(args[1], self.rt)
        types = self.rt.types

        def declare(scope):
            types[name] = declared
        return declare

    # -- control ------------------------------------------------------------------------

    def if_(self, node: Node, args: list[Node]):
        """(if c then a else b), also (if c a b)"""
        if len(args) == 5 and args[1].is_sym("then") and args[3].is_sym("else"):
            parts = (args[0], args[2], args[4])
        elif len(args) == 3 and not any(a.is_sym("then") or a.is_sym("else") for a in args):
            parts = tuple(args)
        else:
            raise self.rt.syntax(node, "malformed if: expected (if cond then a else b)")
        cond, then, other = (self.expr(p) for p in parts)
        truthy = compat.truthy

        def if_(scope):
            return then(scope) if truthy(cond(scope)) else other(scope)
        return if_

    def let(self, node: Node, args: list[Node]):
        """(let e1 ... en): a new scope; the value of the last expression."""
        body = [self.expr(a) for a in args]

        def let(scope):
            inner = Scope({}, scope)
            value = None
            for fn in body:
                value = fn(inner)
            return value
        return let

    def lambda_(self, node: Node, args: list[Node]):
        """(--> x body), (--> (x y) body), (--> () body); fn is a synonym"""
        if len(args) != 2:
            raise self.rt.syntax(node, "malformed lambda: expected (--> params body)")
        params = args[0]
        if params.kind == SYM:
            names = (params.value,)
        elif params.kind == LIST and all(p.kind == SYM for p in params.value):
            names = tuple(p.value for p in params.value)
        else:
            raise self.rt.syntax(params, "lambda parameters must be a name or a list of names")
        # Scoping is dynamic, so a lambda captures nothing: one value serves every time.
        value = Lambda(names, self.expr(args[1]), node)
        return lambda scope: value

    def field(self, node: Node, args: list[Node]):
        """(.. obj field)"""
        if len(args) != 2 or args[1].kind != SYM:
            raise self.rt.syntax(node, "malformed field access: expected (.. obj field)")
        obj_fn, name, rt = self.expr(args[0]), args[1].value, self.rt

        def field(scope):
            obj = obj_fn(scope)
            kind = type(obj)
            if kind is Instance:
                if name == "origin":
                    return obj.origin
                value = obj.fields.get(name, _MISSING)
                if value is not _MISSING:
                    return value
            elif kind is Position and name in ("x", "y"):
                return obj.x if name == "x" else obj.y
            elif kind is RenderedElem and name in ("position", "color"):
                return obj.position if name == "position" else obj.color
            elif kind is Cell and name in ("x", "y", "color"):
                return rt.cell_arg(getattr(obj, name))
            raise rt.runtime(node, f"{show(obj)} has no field '{name}'")
        return field

    def list_(self, node: Node, args: list[Node]):
        """(list a b ...)"""
        fns = [self.expr(a) for a in args]
        return lambda scope: [fn(scope) for fn in fns]

    def logical(self, node: Node, args: list[Node]):
        """(& a b), (and a b), (| a b), (or a b): short-circuit; function operands are called"""
        op = node.value[0].value
        if len(args) != 2:
            raise self.rt.syntax(node, f"'{op}' takes exactly 2 operands, got {len(args)}")
        left, right = (self.expr(a) for a in args)
        want = op in ("|", "or")
        rt, truthy = self.rt, compat.truthy

        def logical(scope):
            value = left(scope)
            if type(value) in CALLABLES:
                value = self.located(node, apply, rt, value, [], scope)
            if truthy(value) is want:
                return want
            value = right(scope)
            if type(value) in CALLABLES:
                value = self.located(node, apply, rt, value, [], scope)
            return truthy(value)
        return logical

    def not_(self, node: Node, args: list[Node]):
        """(! b)"""
        if len(args) != 1:
            raise self.rt.syntax(node, f"'!' takes exactly 1 operand, got {len(args)}")
        fn, rt = self.expr(args[0]), self.rt

        def not_(scope):
            value = fn(scope)
            if type(value) is not bool:
                raise rt.runtime(node, f"'!' needs a Bool, got {show(value)}")
            return not value
        return not_

    def equality(self, node: Node, args: list[Node]):
        """(== a b), (!= a b)"""
        op = node.value[0].value
        if len(args) != 2:
            raise self.rt.syntax(node, f"'{op}' takes exactly 2 operands, got {len(args)}")
        left, right = (self.expr(a) for a in args)
        equal, rt = compat.equal, self.rt

        def equality(scope) -> bool:
            a, b = left(scope), right(scope)
            if type(a) is list and type(b) is list:  # walking two lists is work
                charge(rt, min(len(a), len(b)))
            return equal(a, b)

        if op == "==":
            return equality
        return lambda scope: not equality(scope)

    def arithmetic(self, node: Node, args: list[Node]):
        """(+ a b) (- a b) (* a b) (/ a b) (% a b) (< a b) ...; unary (- x) and (+ x)"""
        op = node.value[0].value
        rt = self.rt
        if len(args) == 1 and op in ("-", "+"):
            fn = self.expr(args[0])

            def unary(scope):
                value = fn(scope)
                if type(value) is not int:
                    raise rt.runtime(node, f"unary '{op}' needs a Number, got {show(value)}")
                return wrap32(-value) if op == "-" else value
            return unary
        if len(args) != 2:
            raise rt.syntax(node, f"'{op}' takes exactly 2 operands, got {len(args)}")
        left, right = (self.expr(a) for a in args)
        compute = OPERATORS[op]

        def binary(scope):
            a = left(scope)
            b = right(scope)
            if type(a) is not int or type(b) is not int:
                raise rt.runtime(node, f"'{op}' needs two Numbers, got {show(a)} and {show(b)}")
            try:
                return compute(a, b)
            except ZeroDivisionError:
                raise rt.runtime(node, "division by zero") from None
        return binary

    def misplaced(self, node: Node, args: list[Node]):
        word = node.value[0].value
        raise self.rt.syntax(node, f"'{word}' is only allowed as a top-level statement")

    # -- calls --------------------------------------------------------------------------

    def call(self, node: Node, head: Node, args: list[Node]):
        """(f a b ...); (f) alone is just f (compat: a call without arguments is ((f)))"""
        if not args and head.kind != LIST:
            return self.expr(head)  # compat: (f) is the variable f; ((f)) calls it
        if head.is_sym("Cell"):
            return self.cell(node, args)
        if head.is_sym("Position"):
            return self.position(node, args)
        fn = self.expr(head)
        fns = [self.expr(a) for a in args]
        rt = self.rt
        located = self.located
        if head.is_sym("prev") and len(args) == 1 and args[0].kind == SYM:
            name = args[0].value

            def prev(scope):
                f = fn(scope)
                if f is rt.prev_builtin:
                    return located(node, rt.prev_value, name)
                return located(node, apply, rt, f, [fns[0](scope)], scope)
            return prev

        failure = self.failure
        if len(fns) == 1:  # most calls (a mover on an object, a lambda on a value)
            only = fns[0]

            def call(scope):
                f = fn(scope)
                values = [only(scope)]
                try:
                    return apply(rt, f, values, scope)
                except Exception as error:
                    raise failure(node, error) from None
        else:
            def call(scope):
                f = fn(scope)
                values = [a(scope) for a in fns]
                try:
                    return apply(rt, f, values, scope)
                except Exception as error:
                    raise failure(node, error) from None
        if head.is_sym("clicked") and all(inert(a, self.values) for a in args):
            return self.unless_unclicked(call, fn)
        return call

    def unless_unclicked(self, call, fn):
        """``call`` of ``clicked``, answered false without evaluating its inert argument
        on a step without a click (:mod:`tasks.autumn.inert`)."""
        rt, clicked = self.rt, self.rt.natives["clicked"]

        def clicked_call(scope):
            if rt.click is None and fn(scope) is clicked:
                return False
            return call(scope)
        return clicked_call

    def located(self, node: Node, fn, *args):
        """Run ``fn(*args)``, turning any failure into an error located at ``node``."""
        try:
            return fn(*args)
        except Exception as error:
            raise self.failure(node, error) from None

    def failure(self, node: Node, error: Exception) -> Exception:
        """The located Autumn error to raise for ``error`` raised while evaluating ``node``."""
        rt = self.rt
        if isinstance(error, AutumnError):
            return error.locate(node.line, node.col, snippet(rt.source, node), rt.name, rt.source)
        if isinstance(error, RecursionError):
            return rt.runtime(node, "recursion too deep")
        if isinstance(error, _PYTHON_FAILURES):
            head = node.value[0] if node.kind == LIST and node.value else node
            return rt.runtime(node, f"bad arguments to {head!r}: {error}")
        return error

    def cell(self, node: Node, args: list[Node]):
        """(Cell dx dy colour), arguments lazy (see compat.make_cell_arg)"""
        if len(args) != 3:
            raise self.rt.syntax(node, f"Cell takes 3 arguments (dx dy colour), got {len(args)}")
        names = tuple(dict.fromkeys(n for a in args for n in symbols_in(a)))
        specs = []
        for a in args:
            const = wrap32(a.value) if a.kind == NUM else a.value if a.kind == STR else None
            if a.is_sym("true") or a.is_sym("false"):
                const = a.value == "true"
            specs.append((a, self.expr(a), names, const))
        rt, make = self.rt, compat.make_cell_arg

        def cell(scope):
            return Cell(*(make(n, f, ns, c, scope, rt, Scope) for n, f, ns, c in specs))
        return cell

    def position(self, node: Node, args: list[Node]):
        """(Position x y)"""
        if len(args) != 2:
            raise self.rt.syntax(node, f"Position takes 2 arguments (x y), got {len(args)}")
        fx, fy = (self.expr(a) for a in args)
        rt = self.rt

        def position(scope):
            x, y = fx(scope), fy(scope)
            if type(x) is not int or type(y) is not int:
                raise rt.runtime(node, f"Position needs two Numbers, got {show(x)} and {show(y)}")
            return Position(x, y)
        return position


_FORMS = {
    "=": "assign", ":": "declare", "if": "if_", "let": "let", "-->": "lambda_", "fn": "lambda_",
    "..": "field", "list": "list_", "&": "logical", "and": "logical", "|": "logical",
    "or": "logical", "!": "not_", "==": "equality", "!=": "equality",
    **{op: "arithmetic" for op in (*ARITHMETIC, *COMPARISON)},
    "initnext": "misplaced", "on": "misplaced", "object": "misplaced",
}
