"""Rollout checks (``tasks.worldtest.rollout``): a program played over a horizon with
no-ops, random actions and a problem's own actions; the first failure of each, with the
actions that reach it written for the debugger."""

from __future__ import annotations

from pathlib import Path

from game_client.debugger import read_actions
from tasks.autumn import load
from tasks.worldtest.rollout import RECIPE, problem_recipe, program_failures

TRAP = """(program
  (= GRID_SIZE 8)
  (object Dot (Cell 0 0 "gold"))
  (= dot (initnext (Dot (Position 0 0)) (prev dot)))
  (= hits (initnext 0 (prev hits)))
  (on (clicked dot) (= hits (+ hits 1)))
  (on (== hits 3) (= hits (head (list))))
)"""
"""Fails on the third click on the dot (at 0,0), in that same step: random play over a short
horizon does not get there, the problem's own actions do."""


def test_a_problems_own_actions_reach_a_failure_random_play_misses(tmp_path: Path) -> None:
    env = load(TRAP, "trap.sexp")
    recipe = problem_recipe(4, {"actions": ["right", "click 0 0", "click 0 0", "click 0 0"]})
    assert recipe == (4, ("right", "click 0 0", "click 0 0", "click 0 0"))
    failures = program_failures(env, "trap.sexp", horizon=20, seeds=(1, 2), recipe=recipe)
    assert [(f.kind, f.seed, f.tick) for f in failures] == [(RECIPE, 4, 4)]
    failure = failures[0]
    assert failure.error.startswith("trap.sexp:7:27: runtime error: head of an empty list")
    path = failure.save(tmp_path)
    assert read_actions(path) == list(recipe[1])
    assert str(failure).startswith("rollout check: trap.sexp:7:27: runtime error: head of an "
                                   "empty list (at tick 4, seed 4, recipe play; replay: "
                                   "gridstudy play trap.sexp --debug --seed 4 --actions ")


def test_a_clean_program_has_no_failures_and_a_problem_without_actions_no_recipe() -> None:
    env = load(TRAP.replace("(= hits (head (list)))", "(= hits 0)"), "trap.sexp")
    assert program_failures(env, "trap.sexp", horizon=50, recipe=(1, ("click 0 0",) * 9)) == []
    assert problem_recipe(1, {"goal_cells": [[1, 1]]}) is None
    assert problem_recipe(1, {"plan": []}) is None
