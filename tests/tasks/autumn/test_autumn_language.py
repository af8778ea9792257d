"""The language, section by section of docs/autumn.md: source -> expected value tables."""

from __future__ import annotations

import re

import pytest

from tasks.autumn import AutumnRuntimeError, AutumnSyntaxError, load


def evaluate(expr: str, program: str = "", seed: int = 0):
    """The value of ``expr`` evaluated after loading ``(program <program>)``."""
    env = load(f"(program {program})")
    env.reset(seed)
    return env.evaluate(expr)


@pytest.mark.parametrize("expr, expected", [
    # section 2: 32-bit integers, truncating division, remainder with the dividend's sign
    ("(+ 2 3)", 5), ("(- 2 3)", -1), ("(* 4 -3)", -12), ("(/ -7 2)", -3), ("(/ 7 2)", 3),
    ("(% -7 3)", -1), ("(% 7 -3)", 1), ("1.7", 1), ("-1", -1), ("(- 5)", -5), ("(+ 5)", 5),
    ("(+ 2147483647 1)", -2147483648), ("(* 65536 65536)", 0),
    ("(< 1 2)", True), ("(<= 2 2)", True), ("(> 1 2)", False), ("(>= 1 2)", False),
    # equality, with the Number-on-the-left quirk
    ("(== 1 true)", True), ("(== true 1)", False), ("(== 0 false)", True),
    ("(== \"a\" \"a\")", True), ("(!= \"a\" \"b\")", True), ("(== (list 1 2) (list 1 2))", True),
    ("(== (list 1 2) (list 2 1))", False), ("(== (Position 1 2) (Position 1 2))", True),
    ("(== 1 \"1\")", False), ("(== (list) false)", False),
    # truthiness: false, the empty list and no value are false; 0 and "" are true
    ("(if 0 then 1 else 2)", 1), ("(if \"\" then 1 else 2)", 1), ("(if (list) then 1 else 2)", 2),
    ("(if false then 1 else 2)", 2), ("(if f then 1 else 2)", 1), ("(if true 1 2)", 1),
    # logic: two operands, short-circuit, function operands called
    ("(& true false)", False), ("(and true true)", True), ("(| false true)", True),
    ("(or false (list))", False), ("(& false (/ 1 0))", False), ("(| true (/ 1 0))", True),
    ("(& t true)", True), ("(! true)", False),
    # let, lambdas, (f) is f, ((f)) calls it
    ("(let (= a 2) (= b 3) (* a b))", 6), ("((--> x (* x x)) 7)", 49),
    ("((fn (a b) (- a b)) 9 4)", 5), ("((--> x x) 1 2 3)", 1), ("((f))", 7), ("(.. (f) x)", None),
])
def test_expressions(expr, expected):
    program = "(= f (--> () 7)) (= t (--> () true))"
    if expected is None:
        with pytest.raises(AutumnRuntimeError, match="no field 'x'"):
            evaluate(expr, program)
    else:
        assert evaluate(expr, program) == expected
        assert type(evaluate(expr, program)) is type(expected)


def test_dynamic_scoping_resolves_free_names_along_the_call_chain():
    program = "(= show (--> () secret)) (= caller (--> secret ((show))))"
    assert evaluate("(caller 42)", program) == 42


def test_assignment_in_a_lambda_overwrites_the_nearest_binding_or_the_global():
    env = load("(program (= n 1) (= bump (--> k (= n (+ n k)))) (= local (--> k (let (= m k) m))))")
    env.evaluate("(bump 5)")
    assert env.value("n") == 6
    assert env.evaluate("(local 3)") == 3
    with pytest.raises(KeyError):
        env.value("m")


@pytest.mark.parametrize("source, message", [
    ("(program (= x (+ 1 2 3)))", "'+' takes exactly 2 operands, got 3"),
    ("(program (= x (& true)))", "'&' takes exactly 2 operands, got 1"),
    ("(program (= x (if true 1)))", "malformed if"),
    ("(program (= x (--> (1) 2)))", "lambda parameters must be a name"),
    ("(program (object A))", "malformed object"),
    ("(program (= x (Cell 0 0)))", "Cell takes 3 arguments"),
    ("(program (= x 1)", "unbalanced '('"),
    ("(program (= x 1)))", "unbalanced ')'"),
    ("(program (= x \"open))", "unterminated string"),
    ("(program (= x (initnext 1)))", "malformed initnext"),
])
def test_syntax_errors_name_the_problem_and_its_position(source, message):
    with pytest.raises(AutumnSyntaxError, match=re.escape(message)) as caught:
        load(source, "bad.sexp")
    assert caught.value.line == 1
    assert str(caught.value).startswith("bad.sexp:1:")


@pytest.mark.parametrize("expr, message", [
    ("nothing", "unknown name 'nothing'"), ("(/ 1 0)", "division by zero"),
    ("(% 1 0)", "division by zero"), ("(+ 1 \"a\")", "needs two Numbers"),
    ("(! 1)", "needs a Bool"), ("(head (list))", "head of an empty list"),
    ("(at (list 1) 1)", "out of range"), ("(sqrt -4)", "negative"),
    ("((--> (a b) a) 1)", "needs 2 argument"), ("(Dot)", None),
    ("(Dot (Position 0 0))", "needs 1 field value"), ("(Dot 1 (Position 0 0))", "declared String"),
    ("(prev x)", "prev is not allowed"),
])
def test_runtime_errors(expr, message):
    env = load('(program (object Dot (: c String) (Cell 0 0 c)))')
    if message is None:
        assert repr(env.evaluate(expr)) == "<object type Dot>"
        return
    with pytest.raises(AutumnRuntimeError, match=message):
        env.evaluate(expr)


def test_runtime_error_carries_line_column_and_snippet():
    source = "(program\n  (= x 1)\n  (on clicked (= x (+ x \"one\"))))"
    env = load(source, "sum.sexp")
    with pytest.raises(AutumnRuntimeError) as caught:
        env.step("click 0 0")
    error = caught.value
    assert (error.line, error.column) == (3, 20)
    assert error.snippet == '(+ x "one")'
    assert str(error).splitlines() == [  # the line as written, the caret under column 20
        'sum.sexp:3:20: runtime error: \'+\' needs two Numbers, got 1 and "one"',
        '      (on clicked (= x (+ x "one"))))',
        "    " + " " * 19 + "^"]


def test_reassigning_a_different_type_is_an_error_but_lists_are_exempt():
    env = load("(program (= x 1) (= l (list 1)))")
    with pytest.raises(AutumnRuntimeError, match="holds a Number"):
        env.evaluate('(= x "one")')
    env.evaluate("(= l (list \"a\"))")
    assert env.value("l") == ["a"]


def test_declared_types_are_checked_on_assignment():
    env = load("(program (: x Number) (= x 1))")
    with pytest.raises(AutumnRuntimeError, match="declared Number"):
        env.evaluate("(= x true)")


def test_deep_recursion_is_a_runtime_error():
    env = load("(program (= down (--> n (if (== n 0) then 0 else (+ 1 (down (- n 1)))))))")
    assert env.evaluate("(down 50)") == 50
    with pytest.raises(AutumnRuntimeError, match="recursion"):
        env.evaluate("(down 100000)")


def test_deeply_nested_source_is_a_syntax_error_not_a_crash():
    source = "(program (= x " + "(list " * 3000 + "1" + ")" * 3000 + "))"
    with pytest.raises(AutumnSyntaxError, match="nested too deeply"):
        load(source)
