"""Which expressions may go unevaluated: those whose evaluation changes nothing.

A handler's ``(clicked X)`` is false on every step without a click, whatever ``X`` is.
Evaluating ``X`` anyway is what a program's time goes to when it is a search over a
list (``gravity_4`` filters its buttons by colour in eight handlers: a third of its
step). Skipping it is safe only when the evaluation has no effect: no random draw (the
generator's state would differ), no object made (identities are numbered), no global
assigned, nothing printed. :func:`inert` answers that from the source alone, and
conservatively: an expression it cannot vouch for is evaluated as before.

The one difference a skipped expression can make is an error it would have raised (a
field that does not exist, say): that error now waits for a click, when the argument is
evaluated. The frames of a program that runs are the same.
"""

from __future__ import annotations

from tasks.autumn.calls import ARITHMETIC, COMPARISON
from tasks.autumn.reader import LIST, NUM, STR, SYM, Node

READING = frozenset({
    "filter", "map", "any", "foldl", "length", "head", "at", "tail", "concat", "isList",
    "arrayEqual", "sqrt", "prev", "defined", "adjPositions", "isFreePos", "range",
    "allPositions", "abs", "sign", "max", "min", "sum", "in", "isFree", "deltaPos",
    "sqdist", "adjacentObjs", "adjacentObjsDiag", "intersects",
})
"""Built-ins that only read: a call to one is inert when its arguments are (a function
argument is a lambda whose body is checked, or a name that holds no function)."""
FORMS = frozenset({"if", "then", "else", "..", "list", "&", "and", "|", "or", "!", "==", "!=",
                   *ARITHMETIC, *COMPARISON})
"""Special forms that only compute from their operands."""


def inert(node: Node, values: frozenset[str], bound: frozenset[str] = frozenset()) -> bool:
    """True when evaluating ``node`` can change nothing: every call is to a reading
    built-in (:data:`READING`) or a form of :data:`FORMS`, every lambda's body is inert,
    and every other name is a lambda's parameter or one of ``values`` (the program's
    state variables and constants: names that hold no function).

    >>> from tasks.autumn.reader import read_all
    >>> test = lambda text: inert(read_all(text)[0], frozenset({"buttons"}))
    >>> test('(filter (--> b (== (.. b color) "red")) (prev buttons))')
    True
    >>> test('(filter (--> b (== (uniformChoice (list 1 2)) 1)) buttons)')
    False
    >>> test('(map (--> b (move b (Position 1 0))) buttons)')
    False
    >>> test('(filter shuffle buttons)')
    False
    """
    if node.kind in (NUM, STR):
        return True
    if node.kind == SYM:
        return node.value in bound or node.value in values or node.value in ("true", "false")
    if node.kind != LIST or not node.value:
        return False
    head, args = node.value[0], node.value[1:]
    if head.kind != SYM:
        return False
    word = head.value
    if word in ("-->", "fn"):
        return len(args) == 2 and _lambda_inert(args[0], args[1], values, bound)
    if word == "..":
        return len(args) == 2 and args[1].kind == SYM and inert(args[0], values, bound)
    if word in ("Position", "Cell") or word in FORMS or word in READING:
        return all(inert(a, values, bound) for a in args if not a.is_sym("then") and not a.is_sym("else"))
    return False


def _lambda_inert(params: Node, body: Node, values: frozenset[str], bound: frozenset[str]) -> bool:
    if params.kind == SYM:
        names = {params.value}
    elif params.kind == LIST and all(p.kind == SYM for p in params.value):
        names = {p.value for p in params.value}
    else:
        return False
    return inert(body, values, bound | names)


def value_names(statements: list[Node]) -> frozenset[str]:
    """The program's names that hold no function: its state variables (``initnext``)
    and its constants (a top-level ``(= NAME number-or-string)``)."""
    found = set()
    for statement in statements:
        items = statement.value if statement.kind == LIST else []
        if len(items) == 3 and items[0].is_sym("=") and items[1].kind == SYM:
            value = items[2]
            if value.kind in (NUM, STR) or (value.kind == LIST and value.value
                                            and value.value[0].is_sym("initnext")):
                found.add(items[1].value)
    return frozenset(found)


def assigned_names(program: Node) -> frozenset[str]:
    """Every name the program assigns anywhere, ``(= NAME ...)`` at the top or inside a
    function (scoping is dynamic: an assignment in a function may reach a global)."""
    found = set()
    stack = [program]
    while stack:
        node = stack.pop()
        if node.kind == LIST:
            items = node.value
            if len(items) >= 2 and items[0].is_sym("=") and items[1].kind == SYM:
                found.add(items[1].value)
            stack.extend(items)
    return frozenset(found)
