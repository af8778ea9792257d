"""The step budget: every step counts its evaluations and stops, at the program's line,
when it needs more than its budget; built-ins charge a list's size before they make it."""

from __future__ import annotations

import tracemalloc

import pytest

from tasks.autumn import (
    STEP_BUDGET,
    AutumnRuntimeError,
    StepBudgetExceeded,
    load,
)
from tasks.checker import random_actions
from tasks.library import library_envs, load_env
from tasks.limits import StepLimitExceeded

PROGRAM = """(program
  (= GRID_SIZE 6)
  (object Dot (Cell 0 0 "gold"))
  (= dot (initnext (Dot (Position 0 0)) (prev dot)))
  (= count (initnext 0 (prev count)))
  (= fib (--> n (if (< n 2) then n else (+ (fib (- n 1)) (fib (- n 2))))))
  (on right (= dot (moveRight (prev dot))))
  (on left {costly})
)"""
"""``left`` does the costly thing (line 8); ``right`` moves the dot."""

COSTLY = [
    # (case, the handler's body, where the error points: the innermost call running then)
    ("range", "(= count (length (range 0 200000000)))", 8, 29),
    ("all-positions", "(= count (length (allPositions 100000)))", 8, 29),
    ("rect", "(= count (length (rect (Position 0 0) (Position 30000 30000))))", 8, 29),
    ("random-positions", "(= count (length (randomPositions 6 5000000)))", 8, 29),
    ("uniform-choice", "(= count (length (uniformChoice (list 1 2) 5000000)))", 8, 29),
    ("recursion", "(= count (fib 40))", 6, 44),
    ("map-over-a-range", "(= count (length (map (--> x (+ x 1)) (range 0 60000))))", 8, 29),
    ("concat", "(= count (length (concat (list (range 0 60000) (range 0 60000)))))", 8, 59),
    ("nested-maps", "(= count (length (map (--> x (map (--> y (+ x y)) (range 0 1000))) "
                    "(range 0 1000))))", 8, 41),
]


def _program(body: str) -> str:
    return PROGRAM.format(costly=body)


@pytest.mark.parametrize(("body", "line", "column"), [c[1:] for c in COSTLY],
                         ids=[c[0] for c in COSTLY])
def test_a_costly_step_stops_at_its_line_and_changes_nothing(body: str, line: int,
                                                             column: int) -> None:
    env = load(_program(body), "costly.sexp")
    env.reset(1)
    before = (env.step("right").frame, env.state_hash())
    with pytest.raises(StepBudgetExceeded) as failure:
        env.step("left")
    error = failure.value
    assert isinstance(error, AutumnRuntimeError) and isinstance(error, StepLimitExceeded)
    assert (error.line, error.column, error.budget) == (line, column, STEP_BUDGET)
    assert str(error).startswith(f"costly.sexp:{line}:{column}: runtime error: step budget exceeded: "
                                 f"the step needed more than {STEP_BUDGET:,} evaluations")
    assert (env.frame(), env.state_hash()) == before  # the failed step changed nothing
    assert env.step("right").frame != before[0]  # and play can go on


def test_a_replay_stops_at_the_same_place_after_the_same_work() -> None:
    costs = []
    for _ in range(2):
        env = load(_program("(= count (fib 40))"), "costly.sexp")
        env.reset(3)
        env.step("right")
        with pytest.raises(StepBudgetExceeded) as failure:
            env.step("left")
        costs.append((env.step_cost, failure.value.line, failure.value.column))
    assert costs[0] == costs[1] and costs[0][0] > STEP_BUDGET


def test_a_list_is_charged_before_it_is_made() -> None:
    env = load(_program("(= count (length (range 0 200000000)))"), "costly.sexp")
    env.reset(1)
    tracemalloc.start()
    try:
        with pytest.raises(StepBudgetExceeded):
            env.step("left")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000, peak  # 200 million items would be gigabytes


def test_a_budget_raised_for_the_environment_lets_the_step_run() -> None:
    body = "(= count (length (map (--> x (+ x 1)) (range 0 150000))))"
    env = load(_program(body), "costly.sexp", step_budget=500_000)
    env.reset(1)
    env.step("left")
    assert env.value("count") == 150000
    assert 450_000 <= env.step_cost <= 500_000 and env.step_budget == 500_000


def test_the_start_of_a_program_has_the_budget_too() -> None:
    source = _program("(= count 1)").replace("(initnext 0 ", "(initnext (fib 40) ")
    with pytest.raises(StepBudgetExceeded) as failure:
        load(source, "costly.sexp")
    assert failure.value.line == 6  # in fib, which line 5's INIT calls


@pytest.mark.parametrize("budget", [0, -5, 2.5, "lots", True])
def test_a_budget_that_is_no_whole_number_is_refused(budget) -> None:
    with pytest.raises(ValueError, match="step_budget must be a whole number of evaluations"):
        load(_program("(= count 1)"), step_budget=budget)


def test_every_library_program_runs_far_below_the_budget() -> None:
    """A margin of at least 20: docs/autumn.md, "The step budget", states the measured one."""
    heaviest = {}
    for env in library_envs():
        for variant in ("program", "changed"):
            program = load_env(env.name, variant)
            worst = program.step_cost
            program.reset(1)
            for action in random_actions(program, 150, 1):
                program.step(action)
                worst = max(worst, program.step_cost)
            heaviest[f"{env.name}/{variant}"] = worst
    assert len(heaviest) == 2 * len(library_envs())
    assert max(heaviest.values()) * 20 < STEP_BUDGET, max(heaviest.items(), key=lambda i: i[1])
    assert min(heaviest.values()) > 0
