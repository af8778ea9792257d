"""Native built-ins (docs/autumn.md section 10): a plain mapping of names to functions.

Every function is ``fn(runtime, scope, *args)``; ``scope`` is the caller's, passed on
to the Autumn functions a built-in calls (scoping is dynamic). Wrong argument types
raise :class:`AutumnRuntimeError`; the call site adds the source position.
"""

from __future__ import annotations

import math

from tasks.autumn import compat
from tasks.autumn.calls import apply, charge
from tasks.autumn.errors import AutumnRuntimeError
from tasks.autumn.render import cells_of, rendered_elems
from tasks.autumn.values import Builtin, Instance, Position, show

# -- argument checks, shared with the prelude: the value, or an error naming the caller --


def need_object(value, who: str) -> Instance:
    if type(value) is not Instance:
        raise AutumnRuntimeError(f"{who} needs an object, got {show(value)}")
    return value


def need_list(value, who: str, rt=None) -> list:
    """``value`` when it is a list; with ``rt``, its length is charged to the step's
    budget first (a built-in about to walk or copy it)."""
    if type(value) is not list:
        raise AutumnRuntimeError(f"{who} needs a list, got {show(value)}")
    if rt is not None:
        charge(rt, len(value))
    return value


def walks(rt, value) -> None:
    """Charge the length of ``value`` when it is a list a built-in is about to walk."""
    if type(value) is list:
        charge(rt, len(value))


def need_number(value, who: str) -> int:
    if type(value) is not int:
        raise AutumnRuntimeError(f"{who} needs a Number, got {show(value)}")
    return value


def need_position(value, who: str) -> Position:
    if type(value) is not Position:
        raise AutumnRuntimeError(f"{who} needs a Position, got {show(value)}")
    return value


def map_(rt, scope, f, values):
    return [apply(rt, f, [v], scope) for v in need_list(values, "map", rt)]


def filter_(rt, scope, f, values):
    truthy = compat.truthy
    return [v for v in need_list(values, "filter", rt) if truthy(apply(rt, f, [v], scope))]


def foldl(rt, scope, f, acc, values):
    for v in need_list(values, "foldl", rt):
        acc = apply(rt, f, [acc, v], scope)
    return acc


def concat(rt, scope, lists):
    lists = need_list(lists, "concat")
    charge(rt, sum(len(need_list(item, "concat (each element)")) for item in lists))
    out = []
    for item in lists:
        out.extend(item)
    return out


def length(rt, scope, values):
    return len(need_list(values, "length"))


def head(rt, scope, values):
    if not need_list(values, "head"):
        raise AutumnRuntimeError("head of an empty list")
    return values[0]


def tail(rt, scope, values):
    if not need_list(values, "tail"):
        raise AutumnRuntimeError("tail of an empty list")
    return compat.last_element(values)


def at(rt, scope, values, index):
    need_list(values, "at")
    if not 0 <= need_number(index, "at") < len(values):
        raise AutumnRuntimeError(f"at: index {index} out of range for a list of {len(values)}")
    return values[index]


def range_(rt, scope, start, stop):
    start, stop = need_number(start, "range"), need_number(stop, "range")
    charge(rt, stop - start)
    return list(range(start, stop))


def any_(rt, scope, *args):
    if len(args) == 1:
        return any(compat.truthy(v) for v in need_list(args[0], "any", rt))
    f, values = args[:2]
    truthy = compat.truthy
    return any(truthy(apply(rt, f, [v], scope)) for v in need_list(values, "any", rt))


def is_list(rt, scope, value):
    return type(value) is list


def defined(rt, scope, name):
    if type(name) is not str:
        raise AutumnRuntimeError(f"defined needs a String name, got {show(name)}")
    return name in rt.globals


def array_equal(rt, scope, a, b):
    need_list(a, "arrayEqual", rt), need_list(b, "arrayEqual", rt)
    if len(a) != len(b):
        raise AutumnRuntimeError(f"arrayEqual: lists of different lengths {len(a)} and {len(b)}")
    return [compat.equal(x, y) for x, y in zip(a, b)]


def sqrt(rt, scope, n):
    if need_number(n, "sqrt") < 0:
        raise AutumnRuntimeError(f"sqrt of a negative number {n}")
    return math.isqrt(n)


def prev(rt, scope, value):
    return rt.prev_of(value)


def uniform_choice(rt, scope, values, *count):
    values = need_list(values, "uniformChoice", rt)
    if not values:
        raise AutumnRuntimeError("uniformChoice of an empty list")
    if not count:
        return values[rt.draw(len(values))]
    n = need_number(count[0], "uniformChoice")
    if n < 1:
        raise AutumnRuntimeError(f"uniformChoice: count must be at least 1, got {n}")
    charge(rt, n)
    return [values[rt.draw(len(values))] for _ in range(n)]


def random_positions(rt, scope, size, n):
    size, n = need_number(size, "randomPositions"), need_number(n, "randomPositions")
    if size < 0:
        raise AutumnRuntimeError(f"randomPositions: negative size {size}")
    charge(rt, n)
    out = []
    for _ in range(n):
        x = rt.draw(size)
        out.append(Position(x, rt.draw(size)))
    return out


def adj_positions(rt, scope, p):
    p = need_position(p, "adjPositions")
    n = rt.globals.get("GRID_SIZE")
    candidates = ((p.x - 1, p.y), (p.x + 1, p.y), (p.x, p.y - 1), (p.x, p.y + 1))
    return [Position(x, y) for x, y in candidates if 0 <= x < n and 0 <= y < n]


def all_positions(rt, scope, w, *h):
    w = need_number(w, "allPositions")
    h = need_number(h[0], "allPositions") if h else w
    charge(rt, max(w, 0) * max(h, 0))
    return [Position(x, y) for x in range(w) for y in range(h)]


def is_free_pos(rt, scope, p):
    p = need_position(p, "isFreePos")
    return rt.is_free(p.x, p.y)


def is_within_bounds(rt, scope, value):
    n = rt.globals.get("GRID_SIZE")
    return all(0 <= x < n and 0 <= y < n for x, y, _ in cells_of(rt, value))


def add_obj(rt, scope, values, item):
    values = need_list(values, "addObj", rt)
    walks(rt, item)
    if type(item) is list:
        return values + item
    if type(item) is not Instance:
        raise AutumnRuntimeError(f"addObj adds an object or a list, got {show(item)}")
    return values + [item]


def remove_obj(rt, scope, first, *rest):
    if not rest:
        rt.remove_global_holding(first)
        return first
    values, what = need_list(first, "removeObj", rt), rest[0]
    walks(rt, what)
    if type(what) is Instance:
        return [v for v in values if not (type(v) is Instance and v.id == what.id)]
    if type(what) is list:
        ids = {v.id for v in what if type(v) is Instance}
        return [v for v in values if not (type(v) is Instance and v.id in ids)]
    truthy = compat.truthy
    return [v for v in values if not truthy(apply(rt, what, [v], scope))]


def update_obj(rt, scope, target, f, *rest):
    walks(rt, target)
    if type(target) is list:
        if not rest:
            return [apply(rt, f, [v], scope) for v in target]
        keep, truthy = rest[0], compat.truthy
        return [apply(rt, f, [v], scope) if truthy(apply(rt, keep, [v], scope)) else v
                for v in target]
    if type(target) is not Instance:
        raise AutumnRuntimeError(f"updateObj needs an object or a list, got {show(target)}")
    if not rest:
        return apply(rt, f, [target], scope)
    if type(f) is not str:
        raise AutumnRuntimeError(f"updateObj: the field name must be a String, got {show(f)}")
    if f != "origin" and f not in target.fields:
        raise AutumnRuntimeError(f"updateObj: {target.cls.name} has no field '{f}'")
    return target.replace(rt.new_id(), f, rest[0])


def all_objs(rt, scope):
    out = []
    glob, skip = rt.globals, rt.never_painted  # those hold functions, never objects
    for name in rt.order.names:
        if name not in skip:
            _collect_objects(glob.get(name), out)
    return out


def _collect_objects(value, out: list) -> None:
    if type(value) is Instance:
        out.append(value)
    elif type(value) is list:
        for item in value:
            _collect_objects(item, out)


def rotate(rt, scope, obj):
    from tasks.autumn.values import Cell
    if type(obj) is not Instance:
        raise AutumnRuntimeError(f"rotate needs an object, got {show(obj)}")

    def negated(arg):
        if type(arg) is int:
            return -arg
        value = rt.cell_arg(arg) if arg.const is None else arg.const
        return -need_number(value, "rotate")

    cells = [Cell(negated(c.y), c.x, c.color) for c in obj.cells]
    return type(obj)(obj.cls, obj.fields, obj.origin, cells, rt.new_id())


def render_all(rt, scope):
    return rendered_elems(rt, [rt.globals.get(n) for n in rt.state_names])


def clicked(rt, scope, *what):
    if rt.click is None:
        return False
    x, y = rt.click
    rt.define("click", Position(x, y))
    if not what:
        return True
    return any(cx == x and cy == y for cx, cy, _ in cells_of(rt, what[0]))


def _arrow(direction: str):
    def pressed(rt, scope):
        return rt.arrow == direction
    pressed.__name__ = direction
    return pressed


def print_(rt, scope, value):
    rt.printed.append(show(value))
    return value


NATIVES = {
    "map": map_, "concat": concat, "filter": filter_, "foldl": foldl, "length": length,
    "head": head, "at": at, "tail": tail, "renderAll": render_all, "defined": defined,
    "arrayEqual": array_equal, "sqrt": sqrt, "prev": prev, "any": any_, "isList": is_list,
    "uniformChoice": uniform_choice, "adjPositions": adj_positions, "addObj": add_obj,
    "isFreePos": is_free_pos, "range": range_, "print": print_, "removeObj": remove_obj,
    "updateObj": update_obj, "randomPositions": random_positions,
    "allPositions": all_positions, "clicked": clicked, "left": _arrow("left"),
    "right": _arrow("right"), "up": _arrow("up"), "down": _arrow("down"),
    "isWithinBounds": is_within_bounds, "allObjs": all_objs, "rotate": rotate,
}
"""Name -> Python function for every native built-in."""


def _tolerant(fn):
    """The module's functions are Autumn lambdas in the reference: extra arguments are ignored."""
    code = fn.__code__
    if code.co_flags & 0x04:  # already takes *args
        return fn
    limit = code.co_argcount - 2

    def tolerant(rt, scope, *args):
        return fn(rt, scope, *args[:limit]) if len(args) > limit else fn(rt, scope, *args)
    tolerant.__name__ = fn.__name__
    return tolerant


def builtins() -> dict[str, Builtin]:
    """The native built-ins and the built-in module's functions as Autumn values."""
    from tasks.autumn.prelude import MODULE
    table = {name: Builtin(name, fn) for name, fn in NATIVES.items()}
    table.update((name, Builtin(name, _tolerant(fn))) for name, fn in MODULE.items())
    for alias, target in (("vcat", "concat"), ("displacement", "deltaPos"),
                          ("nextSolid", "moveDownNoCollision")):
        table[alias] = table[target]
    return table
