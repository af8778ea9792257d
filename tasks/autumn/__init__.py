"""The Autumn language interpreter (docs/autumn.md): reader, evaluator, built-ins, renderer.

>>> env = load('(program (= GRID_SIZE 3) (object Dot (Cell 0 0 "red")) '
...            '(= dot (initnext (Dot (Position 0 0)) (moveRight (prev dot)))))')
>>> env.reset(0).frame[0]
['red', 'black', 'black']
>>> env.step("noop").frame[0]
['black', 'red', 'black']
"""

from tasks.autumn.calls import STEP_BUDGET
from tasks.autumn.env import AutumnEnv, load, load_file
from tasks.autumn.errors import (
    AutumnError,
    AutumnRuntimeError,
    AutumnSyntaxError,
    StepBudgetExceeded,
)

__all__ = ["STEP_BUDGET", "AutumnEnv", "AutumnError", "AutumnRuntimeError", "AutumnSyntaxError",
           "StepBudgetExceeded", "load", "load_file"]
