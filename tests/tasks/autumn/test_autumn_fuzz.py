"""Random text and random s-expressions: only AutumnSyntaxError or AutumnRuntimeError escape."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.autumn import AutumnError, load

WORDS = ["program", "=", "initnext", "on", "object", ":", "if", "then", "else", "let", "-->",
         "fn", "..", "list", "&", "|", "!", "+", "-", "*", "/", "%", "<", "==", "!=", "prev",
         "Cell", "Position", "map", "filter", "foldl", "head", "tail", "at", "range",
         "uniformChoice", "updateObj", "removeObj", "addObj", "clicked", "left", "up",
         "moveRight", "nextLiquid", "isFreePos", "allObjs", "x", "y", "obj", "origin",
         "GRID_SIZE", "background", "true", "false", "Number", "List", "Dot", "0", "1", "-3",
         "2.5", '"red"', '""', "sqrt", "concat", "closest", "rotate", "defined"]
TOKENS = st.sampled_from(WORDS + ["(", ")", "(", ")", " "])

atoms = st.sampled_from(WORDS)
sexprs = st.recursive(atoms, lambda inner: st.lists(inner, min_size=0, max_size=5).map(
    lambda items: "(" + " ".join(items) + ")"), max_leaves=25)
BASE = '(object Dot (: c String) (Cell 0 0 c)) (= d (initnext (Dot "red" (Position 1 1)) (prev d)))'
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run(source: str) -> None:
    try:
        env = load(source)
        env.reset(1)
        for action in ("noop", "click 1 1", "left", "up"):
            env.step(action)
    except AutumnError:
        pass


@FAST
@given(st.lists(TOKENS, max_size=40))
def test_random_token_sequences(tokens):
    run(" ".join(tokens))


@FAST
@given(st.lists(sexprs, max_size=4))
def test_random_statements_in_a_program(statements):
    run("(program " + BASE + " " + " ".join(statements) + ")")


@FAST
@given(sexprs, sexprs)
def test_random_handlers(condition, body):
    run(f"(program {BASE} (on {condition} {body}) (= z (initnext 0 {body})))")
