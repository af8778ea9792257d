"""The built-in module (docs/autumn.md section 10), written natively for speed.

The reference defines these in Autumn source that every program includes; here each
is a Python function with the same behaviour (``fn(runtime, scope, *args)``), including
its tie-breaking (``closest`` prefers the later element) and its use of the occupancy
of the last rendered picture.
"""

from __future__ import annotations

from tasks.autumn import compat
from tasks.autumn.calls import apply, charge
from tasks.autumn.errors import AutumnRuntimeError
from tasks.autumn.render import cells_of, instance_cells, rendered_elems
from tasks.autumn.stdlib import need_number, need_object, need_position, walks
from tasks.autumn.values import Instance, Position, RenderedElem, show


def _shifted(rt, obj, dx: int, dy: int) -> Instance:
    return need_object(obj, "move").moved(rt.new_id(), dx, dy)


def move(rt, scope, obj, direction):
    d = need_position(direction, "move")
    return _shifted(rt, obj, d.x, d.y)


def _mover(dx: int, dy: int):
    def moved(rt, scope, obj, *_ignored):  # takes extra arguments itself: no wrapper
        return need_object(obj, "move").moved(rt.new_id(), dx, dy)
    return moved


def _grid(rt) -> int:
    return rt.globals.get("GRID_SIZE")


def _within(rt, value) -> bool:
    n = _grid(rt)
    return all(0 <= x < n and 0 <= y < n for x, y, _ in cells_of(rt, value))


def is_free_except(rt, scope, obj, other):
    """obj's cells that are not also (position and colour) cells of other are all free."""
    before = set(cells_of(rt, other))
    free = rt.is_free
    return all(free(x, y) for x, y, c in cells_of(rt, obj) if (x, y, c) not in before)


def move_no_collision(rt, scope, obj, dx, dy):
    moved = _shifted(rt, obj, dx, dy)
    return moved if is_free_except(rt, scope, moved, obj) else obj


def move_can_collision(rt, scope, obj, dx, dy, other):
    moved = _shifted(rt, obj, dx, dy)
    return moved if is_free_except(rt, scope, moved, [obj, other]) else obj


def rotate_no_collision(rt, scope, obj):
    rotate = rt.globals.get("rotate") or rt.natives["rotate"]
    turned = apply(rt, rotate, [obj], scope)
    if _within(rt, turned) and is_free_except(rt, scope, turned, obj):
        return turned
    return obj


def _step_no_collision(dx: int, dy: int):
    def step(rt, scope, obj):
        obj = need_object(obj, "move")
        cells = instance_cells(rt, obj)
        if obj.painted is None:  # cells that are evaluated each time: render the moved copy
            moved = _shifted(rt, obj, dx, dy)
            if _within(rt, moved) and is_free_except(rt, scope, moved, obj):
                return moved
            return obj
        # Kept cells (the object's own) move as they are: the same test (in bounds, and free unless the
        # object itself paints that cell in that colour) on the shifted cells.
        n, free, before = _grid(rt), rt.is_free, set(cells)
        for x, y, c in cells:
            x, y = x + dx, y + dy
            if not (0 <= x < n and 0 <= y < n) or ((x, y, c) not in before and not free(x, y)):
                return obj
        return _shifted(rt, obj, dx, dy)
    return step


def move_pos(rt, scope, p, d):
    p, d = need_position(p, "movePos"), need_position(d, "movePos")
    return Position(p.x + d.x, p.y + d.y)


def _pos_mover(dx: int, dy: int):
    def moved(rt, scope, p):
        p = need_position(p, "movePos")
        return Position(p.x + dx, p.y + dy)
    return moved


def abs_(rt, scope, x):
    return abs(need_number(x, "abs"))


def sign(rt, scope, x):
    x = need_number(x, "sign")
    return (x > 0) - (x < 0)


def max_(rt, scope, a, b):
    return b if need_number(a, "max") < need_number(b, "max") else a


def min_(rt, scope, a, b):
    return a if need_number(a, "min") < need_number(b, "min") else b


def delta_pos(rt, scope, p1, p2):
    p1, p2 = need_position(p1, "deltaPos"), need_position(p2, "deltaPos")
    return Position(p2.x - p1.x, p2.y - p1.y)


def _elem_pos(e) -> Position:
    if type(e) is not RenderedElem:
        raise AutumnRuntimeError(f"expected a rendered cell, got {show(e)}")
    return e.position


def delta_elem(rt, scope, e1, e2):
    return delta_pos(rt, scope, _elem_pos(e1), _elem_pos(e2))


def delta_obj(rt, scope, o1, o2):
    return delta_pos(rt, scope, need_object(o1, "deltaObj").origin, need_object(o2, "deltaObj").origin)


def rect(rt, scope, p1, p2):
    p1, p2 = need_position(p1, "rect"), need_position(p2, "rect")
    charge(rt, max(p2.x - p1.x, 0) * max(p2.y - p1.y, 0))
    return [Position(x, y) for y in range(p1.y, p2.y) for x in range(p1.x, p2.x)]


def _manhattan(p: Position, q: Position) -> int:
    return abs(q.x - p.x) + abs(q.y - p.y)


def _near_diag(p: Position, q: Position) -> bool:
    return abs(q.x - p.x) <= 1 and abs(q.y - p.y) <= 1


def adjacent_elem(rt, scope, e1, e2):
    return _manhattan(_elem_pos(e1), _elem_pos(e2)) == 1


def adjacent_poss(rt, scope, p1, p2, unit):
    return _manhattan(need_position(p1, "adjacentPoss"), need_position(p2, "adjacentPoss")) <= need_number(unit, "adjacentPoss")


def adjacent_two_objs(rt, scope, o1, o2, unit):
    return _manhattan(need_object(o1, "adjacentTwoObjs").origin,
                      need_object(o2, "adjacentTwoObjs").origin) <= need_number(unit, "adjacentTwoObjs")


def adjacent_poss_diag(rt, scope, p1, p2):
    return _near_diag(need_position(p1, "adjacentPossDiag"), need_position(p2, "adjacentPossDiag"))


def adjacent_two_objs_diag(rt, scope, o1, o2):
    return _near_diag(need_object(o1, "adjacentTwoObjsDiag").origin, need_object(o2, "adjacentTwoObjsDiag").origin)


def _all_objs(rt, scope) -> list:
    return apply(rt, rt.natives["allObjs"], [], scope)


def adjacent_objs(rt, scope, obj, unit):
    walks(rt, obj)
    sources = obj if type(obj) is list else [obj]
    origins = [need_object(o, "adjacentObjs").origin for o in sources]
    return [o for o in _all_objs(rt, scope)
            if any(_manhattan(p, o.origin) <= unit for p in origins)]


def adjacent_objs_diag(rt, scope, obj):
    walks(rt, obj)
    sources = obj if type(obj) is list else [obj]
    origins = [need_object(o, "adjacentObjsDiag").origin for o in sources]
    return [o for o in _all_objs(rt, scope) if any(_near_diag(p, o.origin) for p in origins)]


def adj(rt, scope, obj, objs, unit):
    origin = need_object(obj, "adj").origin
    walks(rt, objs)
    return any(_manhattan(origin, need_object(o, "adj").origin) <= unit for o in objs)


def obj_clicked(rt, scope, objs):
    clicked = rt.natives["clicked"]
    walks(rt, objs)
    return [o for o in objs if compat.truthy(apply(rt, clicked, [o], scope))]


def _sqdist(p: Position, q: Position) -> int:
    return (q.x - p.x) ** 2 + (q.y - p.y) ** 2


def sqdist(rt, scope, p1, p2):
    return _sqdist(need_position(p1, "sqdist"), need_position(p2, "sqdist"))


def _unit(dx: int, dy: int, diagonal_fix: bool = True) -> Position:
    sx, sy = (dx > 0) - (dx < 0), (dy > 0) - (dy < 0)
    if diagonal_fix and sx != 0 and sy != 0:
        return Position(sx, 0)
    return Position(sx, sy)


def unit_vector(rt, scope, obj, target):
    a, b = need_object(obj, "unitVector").origin, need_object(target, "unitVector").origin
    return _unit(b.x - a.x, b.y - a.y)


def unit_vector_obj_pos(rt, scope, obj, p):
    a, p = need_object(obj, "unitVectorObjPos").origin, need_position(p, "unitVectorObjPos")
    return _unit(p.x - a.x, p.y - a.y)


def unit_vector_single_pos(rt, scope, p):
    p = need_position(p, "unitVectorSinglePos")
    return _unit(p.x, p.y, diagonal_fix=False)


def closest(rt, scope, obj, objs):
    """The element of ``objs`` nearest ``obj`` by squared origin distance; ties to the later."""
    if not objs:
        return obj
    walks(rt, objs)
    origin = need_object(obj, "closest").origin
    best = objs[0]
    for other in objs:
        if not _sqdist(best.origin, origin) < _sqdist(other.origin, origin):
            best = other
    return best


def closest_pos(rt, scope, obj, positions):
    origin = need_object(obj, "closestPos").origin
    if not positions:
        return origin
    walks(rt, positions)
    best = positions[0]
    for p in positions:
        if not _sqdist(best, origin) < _sqdist(p, origin):
            best = p
    return best


def render_value(rt, scope, value):
    return rendered_elems(rt, value)


def sum_(rt, scope, values):
    walks(rt, values)
    total = 0
    for v in values:
        total = total + need_number(v, "sum")
    return total


def intersects_elems(rt, scope, e1, e2):
    walks(rt, e1), walks(rt, e2)
    positions = {_elem_pos(e) for e in e2}
    return any(_elem_pos(e) in positions for e in e1)


def intersects_pos_elems(rt, scope, p, elems):
    walks(rt, elems)
    return any(_elem_pos(e) == p for e in elems)


def intersects_pos_poss(rt, scope, p, positions):
    walks(rt, positions)
    return any(compat.equal(p, q) for q in positions)


def intersects(rt, scope, a, b):
    mine = {(x, y) for x, y, _ in cells_of(rt, a)}
    return any((x, y) in mine for x, y, _ in cells_of(rt, b))


def is_free(rt, scope, obj):
    free = rt.is_free
    return all(free(x, y) for x, y, _ in cells_of(rt, obj))


def in_(rt, scope, e, values):
    walks(rt, values)
    if type(e) is Position and type(values) is list:  # the common case, as a C loop:
        # Position's == gives equal's answer, and any other kind of item is unequal to it
        return e in values
    equal = compat.equal
    return any(equal(x, e) for x in values)


def is_free_pos_except_obj(rt, scope, p, obj):
    p = need_position(p, "isFreePosExceptObj")
    return rt.is_free(p.x, p.y) or any(x == p.x and y == p.y for x, y, _ in cells_of(rt, obj))


def is_free_range_except_obj(rt, scope, start, end, obj):
    mine = {(x, y) for x, y, _ in cells_of(rt, obj)}
    charge(rt, need_number(end, "isFreeRangeExceptObj") - need_number(start, "isFreeRangeExceptObj"))
    return all(rt.is_free(x, 0) for x in range(start, end) if (x, 0) not in mine)


def next_liquid(rt, scope, obj):
    """Fall one cell if possible, else step toward the closest hole in the row below."""
    obj = need_object(obj, "nextLiquid")
    n = _grid(rt)
    y = obj.origin.y
    below = _shifted(rt, obj, 0, 1)
    if y != n - 1 and is_free(rt, scope, below):
        return below
    free = rt.is_free
    holes = [Position(x, y + 1) for x in range(n)
             if y + 1 != n and free(x, y + 1) and free(x, y)]
    return next_liquid_closest_hole(rt, scope, obj, holes)


def next_liquid_closest_hole(rt, scope, obj, holes):
    if not holes:
        return obj
    return next_liquid_move_closest_hole(rt, scope, obj, closest_pos(rt, scope, obj, holes))


def next_liquid_move_closest_hole(rt, scope, obj, hole):
    above = Position(hole.x, hole.y - 1)
    d = unit_vector_obj_pos(rt, scope, obj, above)
    moved = _shifted(rt, obj, d.x, d.y)
    if rt.is_free(above.x, above.y) and rt.is_free(moved.origin.x, moved.origin.y) \
            and _within(rt, moved):
        return moved
    return obj


MODULE = {
    "move": move, "moveRight": _mover(1, 0), "moveLeft": _mover(-1, 0),
    "moveUp": _mover(0, -1), "moveDown": _mover(0, 1),
    "moveNoCollision": move_no_collision, "moveCanCollision": move_can_collision,
    "rotateNoCollision": rotate_no_collision, "movePos": move_pos,
    "moveRightPos": _pos_mover(1, 0), "moveLeftPos": _pos_mover(-1, 0),
    "moveUpPos": _pos_mover(0, -1), "moveDownPos": _pos_mover(0, 1),
    "abs": abs_, "sign": sign, "deltaPos": delta_pos, "rect": rect, "deltaElem": delta_elem,
    "deltaObj": delta_obj, "adjacentElem": adjacent_elem, "adjacentPoss": adjacent_poss,
    "adjacentTwoObjs": adjacent_two_objs, "adjacentPossDiag": adjacent_poss_diag,
    "adjacentTwoObjsDiag": adjacent_two_objs_diag, "adjacentObjs": adjacent_objs,
    "adjacentObjsDiag": adjacent_objs_diag, "adj": adj, "objClicked": obj_clicked,
    "sqdist": sqdist, "unitVector": unit_vector, "unitVectorObjPos": unit_vector_obj_pos,
    "unitVectorSinglePos": unit_vector_single_pos, "max": max_, "min": min_,
    "closest": closest, "closestPos": closest_pos, "renderValue": render_value, "sum": sum_,
    "intersectsElems": intersects_elems, "intersectsPosElems": intersects_pos_elems,
    "intersectsPosPoss": intersects_pos_poss, "intersects": intersects, "isFree": is_free,
    "in": in_, "isFreeExcept": is_free_except, "isFreePosExceptObj": is_free_pos_except_obj,
    "isFreeRangeExceptObj": is_free_range_except_obj,
    "moveLeftNoCollision": _step_no_collision(-1, 0),
    "moveRightNoCollision": _step_no_collision(1, 0),
    "moveUpNoCollision": _step_no_collision(0, -1),
    "moveDownNoCollision": _step_no_collision(0, 1),
    "nextLiquidClosestHole": next_liquid_closest_hole, "nextLiquid": next_liquid,
    "nextLiquidMoveClosestHole": next_liquid_move_closest_hole,
}
"""Name -> Python function for the built-in module's functions."""
