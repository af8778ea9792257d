"""AutumnEnv: the GridEnv contract, step order, clicks, errors, atomicity, determinism."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tasks.autumn import AutumnRuntimeError, AutumnSyntaxError, load, load_file
from tasks.core import GridEnv

PROGRAMS = Path(__file__).parent / "programs"
COUNTER = """(program (= GRID_SIZE 3) (= FRAME_RATE 5) (= background "white")
  (object Dot (: c String) (Cell 0 0 c))
  (= n (initnext 0 (+ (prev n) 1)))
  (= dot (initnext (Dot "red" (Position 0 0)) (prev dot)))
  (on right (= dot (moveRight dot)))
  (on down (= dot (moveDown dot)))
  (on (clicked dot) (= dot (updateObj dot "c" "blue")))
  (on (== n 100) (= n (/ 1 0))))"""


def test_contract_and_first_frame():
    env = load(COUNTER, "counter")
    assert isinstance(env, GridEnv)
    obs = env.reset(0)
    assert (env.size, env.frame_rate, env.background) == ((3, 3), 5, "white")
    assert env.available_actions() == ("noop", "up", "down", "left", "right", "click")
    assert obs.frame == [["red", "white", "white"], ["white"] * 3, ["white"] * 3]
    assert obs.text == json.dumps(obs.frame)
    indices, palette = env.grid()
    assert indices.dtype.name == "uint8" and [palette[i] for i in indices[0]] == obs.frame[0]


@pytest.mark.parametrize("actions, row, col, colour", [
    (["right"], 0, 1, "red"), (["right", "down"], 1, 1, "red"),
    (["click 0 0"], 0, 0, "blue"), (["click 2 2"], 0, 0, "red"), ("noop", 0, 0, "red"),
    # a cell coloured by a field keeps its painted cells: changed, then moved twice
    (["right", "click 1 0", "down", "right"], 1, 2, "blue"),
    (["right", "click 1 0", "down", "right"], 0, 1, "white"),
])
def test_actions_change_the_frame(actions, row, col, colour):
    env = load(COUNTER)
    env.reset(0)
    for action in [actions] if isinstance(actions, str) else actions:
        frame = env.step(action).frame
    assert frame[row][col] == colour


LAMP = """(program (= GRID_SIZE 3) (= FRAME_RATE 5) (= background "white")
  (object Lamp (: lit Bool) (Cell 0 0 (if lit then "gold" else "gray")))
  (= lamp (initnext (Lamp false (Position 0 0)) (prev lamp)))
  (on right (= lamp (moveRight lamp)))
  (on (clicked lamp) (= lamp (updateObj lamp "lit" (! (.. lamp lit))))))"""


def test_a_colour_that_is_an_if_on_a_field_follows_the_field_as_the_object_moves():
    """The cells of an object whose colour reads only its own fields are kept on the
    object (``render``): a new object with the field changed shows the new colour, and
    moved copies keep it."""
    env = load(LAMP)
    assert env.reset(0).frame[0] == ["gray", "white", "white"]
    assert env.step("click 0 0").frame[0] == ["gold", "white", "white"]
    assert env.step("right").frame[0] == ["white", "gold", "white"]
    assert env.step("click 1 0").frame[0] == ["white", "gray", "white"]
    assert env.step("right").frame[0] == ["white", "white", "gray"]


def test_handlers_see_earlier_handlers_and_next_sees_updates():
    env = load("(program (= a (initnext 0 (+ (prev a) 10))) (= b (initnext 0 (+ a 1)))"
               " (on clicked (= a 5)) (on (== a 5) (= a 6)))")
    env.reset(0)
    env.step("click 0 0")
    assert (env.value("a"), env.value("b")) == (6, 7)
    env.step("noop")
    # compat: b's NEXT runs before a's (hash order), so it sees a's previous value.
    assert (env.value("a"), env.value("b")) == (16, 7)


def test_click_outside_the_grid_is_still_a_click_and_defines_click():
    env = load("(program (= GRID_SIZE 4) (= hits (initnext 0 (prev hits)))"
               " (on clicked (= hits (+ hits (.. click x)))))")
    env.reset(0)
    env.step("click 9 1")
    assert env.value("hits") == 9 and env.value("click").y == 1


def test_occupancy_is_the_last_rendered_picture():
    env = load('(program (= GRID_SIZE 4) (object D (Cell 0 0 "red"))'
               ' (= p (initnext (D (Position 0 0)) (moveRightNoCollision (prev p))))'
               ' (= q (initnext (D (Position 2 0)) (moveLeftNoCollision (prev q)))))')
    env.reset(0)
    frame = env.step("noop").frame
    assert frame[0] == ["black", "red", "black", "black"]


def test_failed_step_leaves_the_environment_unchanged():
    env = load(COUNTER, "counter")
    env.reset(0)
    for _ in range(100):
        env.step("right")
    before = (env.state_hash(), env.frame(), env.value("n"), env.random_state(), env.steps)
    with pytest.raises(AutumnRuntimeError, match="division by zero") as caught:
        env.step("down")
    assert caught.value.line == 8
    assert (env.state_hash(), env.frame(), env.value("n"), env.random_state(), env.steps) == before


def test_handler_condition_must_be_a_bool():
    env = load("(program (= x 1) (on x (= x 2)))", "cond")
    env.reset(0)
    with pytest.raises(AutumnRuntimeError, match="condition must be a Bool, got 1"):
        env.step("noop")


def test_init_needing_an_uninitialised_state_variable_is_an_error():
    with pytest.raises(AutumnRuntimeError, match="unknown name"):
        load("(program (= a (initnext (+ b 1) a)) (= b (initnext (+ a 1) b)))")


def test_bad_action_text_is_a_value_error():
    env = load(COUNTER)
    with pytest.raises(ValueError, match="not an environment action"):
        env.step("reset")
    with pytest.raises(ValueError, match="unknown action"):
        env.step("jump")


def test_snapshot_and_restore_replay_the_same_future():
    env = load_file(PROGRAMS / "particles.sexp")
    env.reset(5)
    for action in ("noop", "click 1 1", "up"):
        env.step(action)
    snap = env.snapshot()
    first = [env.step(a).frame for a in ("noop", "down", "click 2 2", "noop")]
    hash_after = env.state_hash()
    env.restore(snap)
    again = [env.step(a).frame for a in ("noop", "down", "click 2 2", "noop")]
    assert again == first and env.state_hash() == hash_after


def test_state_hash_sees_hidden_state():
    env = load("(program (= hidden (initnext 0 (% (+ (prev hidden) 1) 3))))")
    env.reset(0)
    hashes = [env.state_hash()] + [env.step("noop") and env.state_hash() for _ in range(3)]
    assert hashes[0] == hashes[3] and len(set(hashes[:3])) == 3


@pytest.mark.parametrize("program", ["bee_hive", "sand_pile", "ant_trail", "lamp_grid"])
def test_state_hash_is_the_same_from_a_fresh_environment(program: str) -> None:
    """``state_hash`` writes a global again only when it holds a new value, and an
    object of a list only when it is a new object (lamp_grid: a list of 25 lamps, a
    click changes a few); the digest must be the one a fresh environment computes of
    the same state, at every step of a play that changes some values and keeps others
    (and after going back)."""
    path = Path(__file__).parents[3] / "tasks" / "library" / program / "program.sexp"
    env = load_file(path)
    env.reset(3)
    start = env.snapshot()
    hashes = []
    for action in _random_actions(5, 16, 40):
        env.step(action)
        fresh = load_file(path)
        fresh.restore(env.snapshot())
        hashes.append(env.state_hash())
        assert hashes[-1] == fresh.state_hash(), action
    assert len(set(hashes)) > 5  # the play changed the state
    env.restore(start)
    fresh = load_file(path)
    fresh.restore(start)
    assert env.state_hash() == fresh.state_hash() != hashes[-1]


def _random_actions(seed: int, size: int, count: int) -> list[str]:
    rng = random.Random(seed)
    verbs = ["noop", "up", "down", "left", "right"]
    return [rng.choice(verbs) if rng.random() < 0.6 else
            f"click {rng.randrange(size)} {rng.randrange(size)}" for _ in range(count)]


@pytest.mark.parametrize("program", ["particles.sexp", "paint_brush.sexp", "falling_sand.sexp"])
@pytest.mark.parametrize("seed", [1, 7, 42])
def test_same_seed_and_actions_give_the_same_frames(program, seed):
    runs = []
    for _ in range(2):
        env = load_file(PROGRAMS / program)
        frames = [env.reset(seed).frame]
        frames += [env.step(a).frame for a in _random_actions(seed, env.size[0], 500)]
        runs.append((frames, env.random_state()))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("program", ["falling_sand.sexp", "paint_brush.sexp"])
def test_text_is_the_frame_as_json_after_every_step_restore_and_reset(program):
    """The text reuses the rows a step left alone; it must stay exactly the frame's JSON."""
    env = load_file(PROGRAMS / program)
    texts = [env.reset(3).text]
    snap = env.snapshot()
    for action in _random_actions(3, env.size[0], 60):
        obs = env.step(action)
        assert obs.text == json.dumps(obs.frame)
        texts.append(obs.text)
    env.restore(snap)
    assert env.observe().text == texts[0] != texts[-1]
    assert env.reset(3).text == texts[0]


def test_reset_restarts_from_scratch():
    env = load_file(PROGRAMS / "particles.sexp")
    first = env.reset(3).frame
    for action in _random_actions(0, 12, 20):
        env.step(action)
    assert env.reset(3).frame == first


@pytest.mark.parametrize("program", sorted(p.name for p in PROGRAMS.glob("*.sexp")))
def test_shipped_programs_load_and_run(program):
    env = load_file(PROGRAMS / program)
    env.reset(11)
    for action in _random_actions(11, env.size[0], 50):
        env.step(action)
    assert len(env.frame()) == env.size[1]


def test_load_file_names_the_file_in_errors(tmp_path):
    path = tmp_path / "broken.sexp"
    path.write_text("(program\n  (= x (* 1)))")
    with pytest.raises(AutumnSyntaxError) as failure:
        load_file(path)
    assert str(failure.value).startswith(f"{path}:2:8: syntax error")  # the path, as given
