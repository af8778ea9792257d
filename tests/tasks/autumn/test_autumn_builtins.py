"""Every built-in and built-in-module function (docs/autumn.md section 10), as value tables."""

from __future__ import annotations

import pytest

from tasks.autumn import AutumnRuntimeError, load

PROGRAM = """
(= GRID_SIZE 6)
(object Dot (: c String) (Cell 0 0 c))
(object Bar (list (Cell 0 0 "red") (Cell 1 0 "red")))
(= a (initnext (Dot "red" (Position 1 1)) (prev a)))
(= b (initnext (Dot "blue" (Position 3 1)) (prev b)))
(= wall (initnext (Bar (Position 0 4)) (prev wall)))
(= xs (list 3 1 2))
(= inc (--> x (+ x 1)))
"""


@pytest.fixture
def env():
    env = load(f"(program {PROGRAM})")
    env.reset(0)
    return env


def pos(value):
    """Positions (or lists of them) as plain tuples, for readable expectations."""
    if isinstance(value, list):
        return [pos(v) for v in value]
    return (value.x, value.y)


@pytest.mark.parametrize("expr, expected", [
    ("(map inc xs)", [4, 2, 3]), ("(filter (--> x (> x 1)) xs)", [3, 2]),
    ("(foldl (--> (acc x) (- acc x)) 10 xs)", 4), ("(concat (list (list 1) (list) (list 2 3)))", [1, 2, 3]),
    ("(vcat (list (list 1) (list 2)))", [1, 2]), ("(length xs)", 3), ("(head xs)", 3),
    ("(tail xs)", 2), ("(at xs 1)", 1), ("(range 2 5)", [2, 3, 4]), ("(range 5 2)", []),
    ("(any (--> x (== x 2)) xs)", True), ("(any (list false (list)))", False), ("(any (list 0))", True),
    ("(isList xs)", True), ("(isList 1)", False), ("(defined \"xs\")", True),
    ("(defined \"nope\")", False), ("(arrayEqual (list 1 2) (list 1 3))", [True, False]),
    ("(sqrt 17)", 4), ("(sqrt 0)", 0), ("(print 5)", 5), ("(abs -3)", 3), ("(sign -9)", -1),
    ("(sign 0)", 0), ("(max 2 7)", 7), ("(min 2 7)", 2), ("(sum xs)", 6),
    ("(in 2 xs)", True), ("(in 9 xs)", False), ("(isFreePos (Position 1 1))", False),
    ("(isFreePos (Position 2 1))", True), ("(isFreePos (Position -1 1))", True),
    ("(isWithinBounds a)", True), ("(isWithinBounds (move a (Position 5 0)))", False),
    ("(isFree (moveRight a))", True), ("(isFree (moveRight (moveRight a)))", False),
    ("(clicked a)", False), ("(intersects a (list a b))", True), ("(intersects a b)", False),
    ("(adjacentTwoObjs a b 2)", True), ("(adjacentTwoObjs a b 1)", False),
    ("(adjacentTwoObjsDiag a (moveDown (moveRight a)))", True), ("(adj a (list b) 2)", True),
    ("(sqdist (Position 0 0) (Position 3 4))", 25), ("(length ((allObjs)))", 3),
    ("(length (adjacentObjs a 2))", 2), ("(length (adjacentObjsDiag a))", 1),
    ("(length (objClicked (list a b)))", 0), ("(isFreeExcept (moveRight a) a)", True),
    ("(isFreeExcept (moveRight (moveRight a)) a)", False),
    ("(isFreePosExceptObj (Position 1 1) a)", True), ("(isFreePosExceptObj (Position 3 1) a)", False),
    ("(isFreeRangeExceptObj 0 6 a)", True), ("(intersectsPosPoss (Position 1 1) (list (Position 1 1)))", True),
    ("(adjacentPoss (Position 0 0) (Position 1 1) 2)", True),
    ("(adjacentPossDiag (Position 0 0) (Position 1 1))", True),
    ("(length (renderValue wall))", 2), ("(.. (head (renderValue wall)) color)", "red"),
    ("(adjacentElem (head (renderValue wall)) (tail (renderValue wall)))", True),
    ("(intersectsElems (renderValue wall) (renderValue a))", False),
    ("(intersectsPosElems (Position 1 4) (renderValue wall))", True),
    ("(.. (closest a (list b wall)) c)", "blue"), ("(length (uniformChoice xs 4))", 4),
    ("(uniformChoice xs)", 3), ("(isList ((renderAll)))", True), ("(isList (addObj (list) a))", True),
    ("(length (addObj (list a) (list a b)))", 3), ("(length (removeObj (list a b) a))", 1),
    ("(length (removeObj (list a b) (list a b)))", 0),
    ("(length (removeObj (list a b) (--> o (== (.. o c) \"red\"))))", 1),
    ("(.. (updateObj a \"c\" \"green\") c)", "green"), ("(.. (updateObj a inc2) c)", "x"),
    ("(map (--> o (.. o c)) (updateObj (list a b) (--> o (updateObj o \"c\" \"w\")) (--> o (== (.. o c) \"red\"))))", ["w", "blue"]),
])
def test_value_builtins(env, expr, expected):
    env.evaluate('(= inc2 (--> o (updateObj o "c" "x")))')
    assert env.evaluate(expr) == expected


@pytest.mark.parametrize("expr, expected", [
    ("(adjPositions (Position 0 0))", [(1, 0), (0, 1)]),
    ("(adjPositions (Position 2 2))", [(1, 2), (3, 2), (2, 1), (2, 3)]),
    ("(allPositions 2)", [(0, 0), (0, 1), (1, 0), (1, 1)]),
    ("(allPositions 2 1)", [(0, 0), (1, 0)]),
    ("(rect (Position 0 0) (Position 2 2))", [(0, 0), (1, 0), (0, 1), (1, 1)]),
    ("(randomPositions 6 2)", [(0, 0), (0, 0)]),
    ("(movePos (Position 1 1) (Position 2 3))", (3, 4)), ("(moveLeftPos (Position 1 1))", (0, 1)),
    ("(moveRightPos (Position 1 1))", (2, 1)), ("(moveUpPos (Position 1 1))", (1, 0)),
    ("(moveDownPos (Position 1 1))", (1, 2)), ("(deltaPos (Position 1 1) (Position 4 0))", (3, -1)),
    ("(displacement (Position 1 1) (Position 0 0))", (-1, -1)), ("(deltaObj a b)", (2, 0)),
    ("(deltaElem (head (renderValue a)) (head (renderValue b)))", (2, 0)),
    ("(unitVector a (moveDown b))", (1, 0)), ("(unitVector a (moveDown a))", (0, 1)),
    ("(unitVectorObjPos a (Position 0 5))", (-1, 0)), ("(unitVectorSinglePos (Position -4 3))", (-1, 1)),
    ("(closestPos a (list (Position 0 1) (Position 2 1)))", (2, 1)), ("(closestPos a (list))", (1, 1)),
    ("(.. (move a (Position 1 2)) origin)", (2, 3)), ("(.. (moveLeft a) origin)", (0, 1)),
    ("(.. (moveUp a) origin)", (1, 0)), ("(.. (moveDown a) origin)", (1, 2)),
    ("(.. (moveNoCollision a 1 0) origin)", (2, 1)), ("(.. (moveNoCollision a 2 0) origin)", (1, 1)),
    ("(.. (moveCanCollision a 2 0 b) origin)", (1, 1)), ("(.. (moveLeftNoCollision a) origin)", (0, 1)),
    ("(.. (moveRightNoCollision (moveRight a)) origin)", (2, 1)),
    ("(.. (moveUpNoCollision (moveUp a)) origin)", (1, 0)), ("(.. (moveDownNoCollision a) origin)", (1, 2)),
    ("(.. (nextSolid (move a (Position 0 2))) origin)", (1, 3)),
    ("(.. (nextLiquid a) origin)", (1, 2)), ("(.. (nextLiquid (move a (Position 0 2))) origin)", (2, 3)),
    ("(.. (nextLiquid (move a (Position -1 2))) origin)", (1, 3)),
    ("(.. (rotateNoCollision wall) origin)", (0, 4)),
])
def test_position_builtins(env, expr, expected):
    assert pos(env.evaluate(expr)) == expected


def test_next_liquid_flows_toward_the_closest_hole_on_a_floor():
    env = load('(program (= GRID_SIZE 5) (object W (Cell 0 0 "blue")) (object F (Cell 0 0 "gray"))'
               ' (= floor (initnext (map (--> x (F (Position x 4))) (list 0 1 2 4)) (prev floor)))'
               ' (= w (initnext (W (Position 1 3)) (nextLiquid (prev w)))))')
    env.reset(0)
    assert [pos(env.value("w").origin) for _ in range(3) if env.step("noop")] == [(2, 3), (3, 3), (3, 4)]


def test_rotate_turns_cells_a_quarter():
    env = load('(program (object L (list (Cell 0 0 "red") (Cell 1 0 "red") (Cell 1 1 "red")))'
               ' (= l (initnext (L (Position 5 5)) (prev l))))')
    turned = env.evaluate("(renderValue (rotate l))")
    assert [pos(e.position) for e in turned] == [(5, 5), (5, 6), (4, 6)]


def test_remove_obj_of_a_global_deletes_it_and_it_stops_rendering():
    env = load('(program (= GRID_SIZE 3) (object D (Cell 0 0 "red")) (= d (initnext (D (Position 0 0)) (prev d)))'
               ' (on clicked (let (= gone (removeObj d)) true)))')
    assert env.reset(0).frame[0][0] == "red"
    frame = env.step("click 2 2").frame
    assert frame[0][0] == "black"
    assert env.evaluate('(defined "d")') is False
    assert env.step("noop").frame[0][0] == "black"


def test_remove_obj_then_assign_in_a_handler_recreates_the_variable():
    env = load('(program (= GRID_SIZE 3) (object D (Cell 0 0 "red")) (= d (initnext (D (Position 0 0)) (prev d)))'
               ' (on clicked (= d (removeObj d))))')
    env.reset(0)
    assert env.step("click 1 1").frame[0][0] == "red"
    assert env.evaluate('(defined "d")') is True


def test_remove_obj_applied_to_a_list_element_removes_nothing(env):
    env.evaluate("(= pair (list a b))")
    env.evaluate("(removeObj (head pair))")
    assert len(env.value("pair")) == 2


@pytest.mark.parametrize("expr, message", [
    ("(map inc 3)", "map needs a list"), ("(tail (list))", "tail of an empty list"),
    ("(uniformChoice (list))", "empty list"), ("(updateObj a \"zz\" 1)", "no field 'zz'"),
    ("(move a 3)", "needs a Position"), ("(arrayEqual (list 1) (list))", "different lengths"),
    ("(concat (list 1))", "needs a list"), ("(defined 3)", "String name"),
])
def test_builtin_errors(env, expr, message):
    with pytest.raises(AutumnRuntimeError, match=message):
        env.evaluate(expr)
