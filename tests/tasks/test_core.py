"""The action grammar, the environment helpers and the frame helpers of ``tasks.core``."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.core import (
    NOOP,
    Action,
    describe_verbs,
    frame_hash,
    frame_size,
    frame_to_indices,
    indices_to_frame,
    is_available,
    masked,
    parse_action,
    region,
    rollout,
)
from tests.envs import Rain, Walker

# -- parse_action ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("noop", Action("noop")),
        ("up", Action("up")),
        ("down", Action("down")),
        ("left", Action("left")),
        ("right", Action("right")),
        ("reset", Action("reset")),
        ("go-to-test", Action("go-to-test")),
        ("step", Action("step")),
        ("rewind", Action("rewind")),
        ("found-change", Action("found-change")),
        ("submit", Action("submit")),
        ("quit", Action("quit")),
        ("click 3 4", Action("click", x=3, y=4)),
        ("click 0 0", Action("click", x=0, y=0)),
        ("click -1 2", Action("click", x=-1, y=2)),
        ("choose_option_2", Action("choose_option", index=2)),
        ("choose_frame_17", Action("choose_frame", index=17)),
        ("  UP\n", Action("up")),
        ("Click  3\t4", Action("click", x=3, y=4)),
        ("CHOOSE_OPTION_0", Action("choose_option", index=0)),
    ],
)
def test_parse_action_accepts_every_form(text: str, expected: Action) -> None:
    assert parse_action(text) == expected


@pytest.mark.parametrize(
    "canonical",
    ["noop", "up", "down", "left", "right", "reset", "go-to-test", "step", "rewind",
     "found-change", "submit", "quit", "click 3 4", "choose_option_5", "choose_frame_0"],
)
def test_str_of_a_parsed_action_is_its_canonical_text(canonical: str) -> None:
    assert str(parse_action(canonical)) == canonical


def test_parse_action_returns_an_action_unchanged() -> None:
    action = Action("click", x=1, y=2)
    assert parse_action(action) is action


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("jump", "unknown action 'jump': expected one of noop, up, down, left, right, click X Y"),
        ("", "unknown action '': expected one of"),
        ("go to test", "unknown action 'go to test'"),
        ("up up", "unknown action 'up up'"),
        ("click", "malformed click 'click': expected 'click X Y' with integer X and Y"),
        ("click 3", "malformed click 'click 3'"),
        ("click 3 4 5", "malformed click 'click 3 4 5'"),
        ("click a b", "malformed click 'click a b'"),
        ("click 1.5 2", "malformed click 'click 1.5 2'"),
        ("click3 4", "malformed click 'click3 4'"),
        ("choose_option", "malformed choice 'choose_option': expected choose_option_I or choose_frame_I"),
        ("choose_option_", "malformed choice 'choose_option_'"),
        ("choose_option_-1", "malformed choice 'choose_option_-1'"),
        ("choose_frame_x", "malformed choice 'choose_frame_x'"),
        ("choose_grid_1", "unknown action 'choose_grid_1'"),
        ("click \u0663 4", "malformed click 'click \u0663 4'"),
        ("choose_frame_\u0661", "malformed choice 'choose_frame_\u0661'"),
    ],
)
def test_parse_action_rejects_malformed_text(text: str, message: str) -> None:
    with pytest.raises(ValueError) as error:
        parse_action(text)
    assert str(error.value).startswith(message)


@pytest.mark.parametrize("value", [None, 3, ["up"], b"up"])
def test_parse_action_rejects_what_is_not_text(value: object) -> None:
    with pytest.raises(ValueError, match=f"an action must be text, not {type(value).__name__}"):
        parse_action(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "size"),
    [("click 16 0", (16, 16)), ("click 0 16", (16, 16)), ("click -1 3", (16, 16)),
     ("click 3 -1", (16, 16)), ("click 4 2", (4, 8)), ("click 0 3", (5, 3))],
)
def test_clicks_outside_the_grid_are_rejected_with_a_size(text: str, size: tuple[int, int]) -> None:
    x, y = text.split()[1:]
    width, height = size
    with pytest.raises(ValueError) as error:
        parse_action(text, size=size)
    assert str(error.value) == (f"click {x} {y} is outside the grid: expected 0 <= x < {width} "
                                f"and 0 <= y < {height}")


@pytest.mark.parametrize("text", ["click 15 15", "click 0 0", "up", "choose_option_99"])
def test_actions_inside_the_grid_pass_with_a_size(text: str) -> None:
    assert str(parse_action(text, size=(16, 16))) == text


def test_an_action_object_is_also_checked_against_the_size() -> None:
    with pytest.raises(ValueError, match="click 5 0 is outside the grid"):
        parse_action(Action("click", x=5, y=0), size=(5, 5))


def test_is_env_action_separates_environment_actions_from_controls() -> None:
    env_actions = [a for a in ("noop", "up", "click 1 1", "reset", "go-to-test", "step",
                               "choose_frame_1") if parse_action(a).is_env_action]
    assert env_actions == ["noop", "up", "click 1 1"]
    assert NOOP == Action("noop")


def test_describe_verbs_writes_the_indexed_forms() -> None:
    assert describe_verbs(("up", "click", "choose_option", "choose_frame")) == (
        "up, click X Y, choose_option_I, choose_frame_I")


# -- environment helpers --------------------------------------------------------------------


def test_is_available_checks_the_verb_and_the_cell() -> None:
    env = Walker(width=4, height=3)
    assert is_available(Action("up"), env)
    assert is_available(Action("click", x=3, y=2), env)
    assert not is_available(Action("click", x=4, y=0), env)
    assert not is_available(Action("click", x=0, y=3), env)
    assert not is_available(Action("reset"), env)


def test_rollout_returns_the_initial_observation_then_one_per_action() -> None:
    observations = rollout(Walker(), 0, ["right", "down", "click 0 0"])
    assert len(observations) == 4
    assert [o.info["position"] for o in observations] == [[0, 0], [1, 0], [1, 1], [1, 1]]
    assert observations[-1].frame[0][0] == "blue"


def test_rollout_resets_with_the_seed() -> None:
    env = Rain()
    first = [o.frame for o in rollout(env, 7, ["noop"] * 6)]
    assert [o.frame for o in rollout(env, 7, ["noop"] * 6)] == first


# -- frames ---------------------------------------------------------------------------------

FRAME = [["black", "red", "red"], ["gold", "black", "blue"]]


def test_frame_hash_is_stable_and_tells_frames_apart() -> None:
    assert frame_hash(FRAME) == frame_hash(tuple(tuple(row) for row in FRAME))
    assert len(frame_hash(FRAME)) == 16
    assert frame_hash(FRAME) != frame_hash([["black", "red", "red"], ["gold", "black", "red"]])
    # rows are delimited, so moving a cell across a row boundary changes the hash
    assert frame_hash([["a", "b"], ["c"]]) != frame_hash([["a"], ["b", "c"]])


def test_frame_to_indices_and_back() -> None:
    indices, palette = frame_to_indices(FRAME)
    assert palette == ("black", "red", "gold", "blue")
    assert indices.dtype == np.uint8
    assert indices.tolist() == [[0, 1, 1], [2, 0, 3]]
    assert indices_to_frame(indices, palette) == FRAME


def test_frame_to_indices_extends_a_given_palette() -> None:
    indices, palette = frame_to_indices(FRAME, palette=("blue", "white"))
    assert palette == ("blue", "white", "black", "red", "gold")
    assert indices.tolist() == [[2, 3, 3], [4, 2, 0]]


def test_frame_to_indices_rejects_ragged_rows() -> None:
    with pytest.raises(ValueError, match="frame row 1 has 2 cells, expected 3"):
        frame_to_indices([["a", "b", "c"], ["a", "b"]])


def test_frame_to_indices_refuses_more_than_256_colours() -> None:
    frame = [[f"c{i}" for i in range(257)]]
    with pytest.raises(ValueError, match="at most 256 distinct colours"):
        frame_to_indices(frame)


def test_frame_size_masked_and_region() -> None:
    assert frame_size(FRAME) == (3, 2)
    assert frame_size([]) == (0, 0)
    assert masked(FRAME, [(0, 0), (2, 1)]) == [["mask", "red", "red"], ["gold", "black", "mask"]]
    assert FRAME[0][0] == "black"  # masked copies
    assert masked(FRAME, [(1, 1)], mark="grey")[1][1] == "grey"
    assert region(FRAME, [(2, 1), (0, 1), (1, 0)]) == ("blue", "gold", "red")


def test_css_colour_names_and_hex_read_as_the_browser_paints_them():
    from tasks.colours import CSS_COLOURS, rgb

    assert len(CSS_COLOURS) == 148
    assert rgb("gray") == (128, 128, 128) and rgb("green") == (0, 128, 0)  # CSS, not X11
    assert rgb("rebeccapurple") == (102, 51, 153) and rgb("LimeGreen") == (50, 205, 50)
    assert rgb("#abc") == (170, 187, 204) and rgb("#a0b0c0") == (160, 176, 192)
    assert rgb("mask") is None and rgb("#abcd") is None and rgb("") is None


def test_a_dichromat_sees_red_and_green_closer_than_blue_and_yellow():
    from tasks.colours import DICHROMATS, difference, weakest_difference

    red, green, blue, yellow = (255, 0, 0), (0, 128, 0), (0, 0, 255), (255, 255, 0)
    assert difference(red, red) == 0
    assert difference(red, green) > 100
    assert difference(red, green, "deuteranopia") < 0.3 * difference(red, green)
    assert weakest_difference(red, green) < weakest_difference(blue, yellow)
    assert set(DICHROMATS) == {"protanopia", "deuteranopia", "tritanopia"}
