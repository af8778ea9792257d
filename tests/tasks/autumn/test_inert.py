"""What the interpreter skips because the source shows it changes nothing
(tasks/autumn/inert.py). A ``(clicked X)`` without a click skips an inert ``X``, and
only that: the frames are the same, the step does less work, and an argument that draws
from the generator is still evaluated."""

from __future__ import annotations

import pytest

from tasks.autumn import load

BUTTONS = """(program (= GRID_SIZE 6)
  (object Button (: color String) (Cell 0 0 color))
  (= buttons (initnext (list (Button "red" (Position 0 0)) (Button "blue" (Position 5 0)))
                       (prev buttons)))
  (= n (initnext 0 (prev n)))
  (on (clicked ARG) (= n (+ (prev n) 1)))
  (= dot (initnext (Button "gold" (Position 0 3)) (Button "gold" (Position (prev n) 3)))))"""
INERT = '(filter (--> b (== (.. b color) "red")) (prev buttons))'
DRAWS = '(filter (--> b (== (uniformChoice (list 1 2)) 1)) (prev buttons))'
ACTIONS = ["noop", "click 0 0", "noop", "click 5 0", "click 3 3", "left", "click 0 0"]


def play(arg: str, actions: list[str]):
    env = load(BUTTONS.replace("ARG", arg), "buttons")
    env.reset(4)
    return env, [(env.step(a).frame, env.step_cost) for a in actions]


def test_an_inert_argument_is_skipped_without_a_click_and_frames_are_the_same():
    env, played = play(INERT, ACTIONS)
    # the same argument made non-inert by wrapping it in a call the analysis cannot vouch for
    _, full = play(f"(let {INERT})", ACTIONS)
    assert [frame for frame, _ in played] == [frame for frame, _ in full]
    assert env.value("n") == 2  # the two clicks on the red button
    costs = dict(zip(ACTIONS, ((a, b) for (_, a), (_, b) in zip(played, full))))
    skipped, evaluated = costs["noop"]
    assert skipped < evaluated  # no filter over the buttons on a step without a click
    clicked_skipped, clicked_evaluated = costs["click 5 0"]
    assert clicked_skipped == clicked_evaluated  # with a click, the argument is evaluated


def test_an_argument_that_draws_is_evaluated_on_every_step():
    env = load(BUTTONS.replace("ARG", DRAWS), "buttons")
    env.reset(4)
    states = [env.random_state()]
    for _ in range(3):
        env.step("noop")
        states.append(env.random_state())
    assert len(set(states)) == 4  # each step drew, as the reference interpreter does


@pytest.mark.parametrize("arg", [
    "(map (--> b (move b (Position 1 0))) (prev buttons))",  # makes objects (identities)
    "(filter (--> b (print true)) (prev buttons))",  # prints
    "(let (= n 5) (prev buttons))",  # assigns
    "(filter pick (prev buttons))",  # a name that may hold any function
])
def test_arguments_with_effects_are_not_inert(arg):
    from tasks.autumn.inert import inert, value_names
    from tasks.autumn.reader import read, read_all

    program = read(BUTTONS.replace("ARG", arg), "buttons")
    assert not inert(read_all(arg)[0], value_names(program.value[1:]))


def test_a_program_s_own_clicked_is_called_as_written():
    program = BUTTONS.replace("ARG", INERT).replace(
        "(= n (initnext", '(= clicked (--> x (== (length x) 1)))\n  (= n (initnext')
    env = load(program, "own-clicked")
    env.reset(0)
    env.step("noop")
    assert env.value("n") == 1  # its clicked is true of the one red button, click or not


def test_a_built_in_name_given_a_list_of_objects_is_painted():
    # render skips the built-ins a program never assigns (runtime.never_painted); a global
    # holding a function may still be given a list, by the program or a debugging session
    program = """(program (= GRID_SIZE 4)
      (object Dot (Cell 0 0 "red"))
      (on (== 1 1) (= head (list (Dot (Position 1 1))))))"""
    env = load(program, "shadow")
    env.reset(0)
    assert env.step("noop").frame[1][1] == "red"
    env.evaluate("(= tail (list (Dot (Position 2 2))))")
    assert env.step("noop").frame[2][2] == "red"
