"""Calling an Autumn function value, and the operators on Autumn's 32-bit Numbers.

Both are shared by the compiled expressions (:mod:`tasks.autumn.compiler`) and the
native built-ins (:mod:`tasks.autumn.stdlib`, :mod:`tasks.autumn.prelude`).
"""

from __future__ import annotations

from tasks.autumn.errors import AutumnRuntimeError, StepBudgetExceeded
from tasks.autumn.scope import Scope
from tasks.autumn.values import (
    INT_MAX,
    INT_MIN,
    Builtin,
    Lambda,
    ObjectClass,
    show,
    type_name,
    wrap32,
)
from tasks.limits import COOPERATE_EVERY, Host

MAX_DEPTH = 150
"""Deepest chain of nested Autumn function calls before a step is refused."""
STEP_BUDGET = 100_000
"""Evaluations one step may do unless its environment says otherwise (``step_budget``
in ``env.json``; docs/autumn.md, "The step budget"). The library's heaviest step under
random play does 4,235 (``life_board``); a step stopped by the budget in a recursive
function has run for about a quarter of a second."""
ARITHMETIC = {"+", "-", "*", "/", "%"}
COMPARISON = {"<", "<=", ">", ">="}


def apply(rt, f, args: list, scope):
    """Call an Autumn function value ``f`` with ``args`` from ``scope``.

    A lambda's or a constructor's call is one evaluation of the step's budget. A
    built-in's is not counted here: one that makes or walks a list charges its size
    itself, and any other does a bounded amount of work per call site per evaluation."""
    kind = type(f)
    if kind is Builtin:
        return f.fn(rt, scope, *args)
    rt.left = left = rt.left - 1
    if left < 0:
        raise StepBudgetExceeded(rt.budget)
    if not left % COOPERATE_EVERY and Host.cooperate is not None:
        Host.cooperate()  # a long step lets the server tick the other sessions
    if kind is Lambda:
        params = f.params
        if len(params) == 1 and args:  # most lambdas: (--> x ...) given its one value
            bound = {params[0]: args[0]}
        elif len(args) < len(params):
            raise AutumnRuntimeError(
                f"function ({' '.join(params)}) needs {len(params)} argument(s), got {len(args)}")
        else:
            bound = dict(zip(params, args))
        if rt.depth >= MAX_DEPTH:
            raise AutumnRuntimeError(f"recursion deeper than {MAX_DEPTH} calls")
        rt.depth += 1
        try:
            return f.body(Scope(bound, scope))
        finally:
            rt.depth -= 1
    if kind is ObjectClass:
        return rt.construct(f, args, scope)
    raise AutumnRuntimeError(f"{show(f)} is not a function (a {type_name(f)})")


def charge(rt, count: int) -> None:
    """Spend ``count`` evaluations of the step's budget: a built-in calls this with the
    size of a list *before* it makes or walks it, so a huge one fails at once."""
    rt.left -= count
    if rt.left < 0:
        raise StepBudgetExceeded(rt.budget)


# -- Numbers: 32-bit, wrapping; division truncates, the remainder has the dividend's sign --


def _div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return wrap32(q if (a < 0) == (b < 0) else -q)


def _mod(a: int, b: int) -> int:
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _checked(op):
    def compute(a, b):
        r = op(a, b)
        return r if INT_MIN <= r <= INT_MAX else wrap32(r)
    return compute


OPERATORS = {
    "+": _checked(lambda a, b: a + b), "-": _checked(lambda a, b: a - b),
    "*": _checked(lambda a, b: a * b), "/": _div, "%": _mod,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}
