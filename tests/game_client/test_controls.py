"""What each key and click means in each phase."""

from __future__ import annotations

import pytest

from game_client.controls import command_for_click, command_for_key
from game_client.layout import Layout
from tasks.worldtest import challenge

INTERACTION = {"phase": "interaction", "allowed": ["noop", "up", "click", "reset", "go-to-test"], "test": None}
MFP = {"phase": "test", "allowed": ["noop", "step", "choose_option"],
       "test": {"kind": "mfp", "options": [[]] * 6, "chosen": None}}
CD_TEST = {"phase": "test", "allowed": ["noop", "up", "click", "found-change"], "test": {"kind": "cd"},
           **challenge.get("cd").controls(("noop", "up", "click", "found-change"))}
CD_SELECT = {"phase": "select", "allowed": ["noop", "choose_frame"],
             "test": {"kind": "cd", "frame_count": 6, "chosen": None}}
CD_CHOSEN = {**CD_SELECT, "test": {"kind": "cd", "frame_count": 6, "chosen": 0}}


@pytest.mark.parametrize("key, view, command", [
    ("left", INTERACTION, "left"), ("r", INTERACTION, "reset"), ("t", INTERACTION, "go-to-test"),
    ("space", INTERACTION, "pause"), (".", MFP, "frame"), ("=", MFP, "faster"), ("-", MFP, "slower"),
    ("escape", CD_SELECT, "close"), ("x", INTERACTION, None),
    ("right", MFP, "step"), ("left", MFP, "rewind"), ("3", MFP, "choose_option_2"),
    ("7", MFP, None), ("return", MFP, "submit"), ("r", MFP, None),
    ("up", CD_TEST, "up"), ("f", CD_TEST, "found-change"), ("t", CD_TEST, None),
    ("left", CD_SELECT, "choose_frame_5"), ("right", CD_SELECT, "choose_frame_5"),
    ("left", CD_CHOSEN, "choose_frame_0"), ("right", CD_CHOSEN, "choose_frame_1"),
    ("return", CD_CHOSEN, "submit"), ("up", {"phase": "done", "allowed": [], "test": None}, None),
])
def test_keys(key, view, command):
    assert command_for_key(key, view) == command


def test_clicks_hit_cells_and_options():
    layout = Layout.for_view({"size": [5, 4], "test": {"kind": "mfp", "mask": [[1, 1], [2, 1]],
                                                       "options": [[]] * 6}}, scale=10)
    assert layout.hit(*layout.cell_centre(4, 3)) == ((4, 3), None)
    left, top, width, height = layout.options[5]
    assert layout.hit(left + 1, top + 1) == (None, 5)
    assert layout.hit(0, 0) == (None, None)
    assert command_for_click((4, 3), None, INTERACTION) == "click 4 3"
    assert command_for_click(None, 5, MFP) == "choose_option_5"
    assert command_for_click((1, 1), None, MFP) is None
