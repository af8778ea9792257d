"""The state messages of real-time play: what changed between two views, and a client's
copy rebuilt from them (tasks/worldtest/changes.py)."""

from __future__ import annotations

import pytest

from tasks.worldtest.changes import ViewReplica, ViewStream, cell_changes, changes, patched
from tasks.worldtest.episode import Episode

B, G, R = "black", "gold", "red"


def grid(*rows: str) -> list[list[str]]:
    """A frame from rows of letters: b black, g gold, r red."""
    return [[{"b": B, "g": G, "r": R}[c] for c in row] for row in rows]


@pytest.mark.parametrize(("old", "new", "expected"), [
    ({"tick": 1, "frame": grid("bbbb")}, {"tick": 1, "frame": grid("bbbb")}, {}),
    ({"tick": 1, "frame": grid("gbbbbbbb")}, {"tick": 2, "frame": grid("bgbbbbbb")},
     {"tick": 2, "cells": [[0, 0, B], [1, 0, G]]}),
    # half the cells changed: the whole frame is shorter
    ({"frame": grid("bb", "bb")}, {"frame": grid("gg", "bb")}, {"frame": grid("gg", "bb")}),
    # another size: the whole frame
    ({"frame": grid("bbbb")}, {"frame": grid("bbbb", "bbbb")}, {"frame": grid("bbbb", "bbbb")}),
    ({"test": None}, {"test": {"kind": "cd", "steps": 0}}, {"test": {"kind": "cd", "steps": 0}}),
    ({"test": {"kind": "cd", "steps": 0, "chosen": None}},
     {"test": {"kind": "cd", "steps": 1, "chosen": None}}, {"test": {"steps": 1}}),
    ({"keys": {}}, {"keys": {"f": "found-change"}}, {"keys": {"f": "found-change"}}),
    ({"allowed": ["noop", "up"]}, {"allowed": ["noop"]}, {"allowed": ["noop"]}),
    ({"tick": 3}, {"tick": 3, "paused": "Saving"}, {"paused": "Saving"}),
    ({"score": None}, {"score": 1.0}, {"score": 1.0}),
    # nothing is ever removed by a change: the whole state goes instead
    ({"tick": 3, "paused": "Saving"}, {"tick": 4}, None),
    ({"keys": {"f": "found-change"}}, {"keys": {}}, None),
])
def test_changes_say_what_turns_one_view_into_the_next(old, new, expected):
    assert changes(old, new) == expected
    if expected is not None:
        assert patched(old, expected) == new


def test_patching_leaves_the_old_state_and_its_rows_as_they_were():
    old = {"frame": grid("bbbb", "bbbb"), "test": {"steps": 0, "horizon": 9}}
    kept = {"frame": [list(row) for row in old["frame"]], "test": dict(old["test"])}
    new = patched(old, {"cells": [[2, 1, R]], "test": {"steps": 1}})
    assert new == {"frame": grid("bbbb", "bbrb"), "test": {"steps": 1, "horizon": 9}}
    assert old == kept and new["frame"][0] is old["frame"][0]


def test_cells_are_none_when_the_frames_differ_in_size():
    assert cell_changes(grid("bb"), grid("bbb")) is None
    assert cell_changes(grid("bb"), grid("bb", "bb")) is None


def views(problem, actions):
    """The view after each action of an episode of ``problem``, as a session sends it."""
    episode = Episode(problem)
    yield episode.view()
    for action in actions:
        episode.apply(action)
        yield episode.view()


def test_a_replica_fed_every_message_holds_every_view(test_problems):
    actions = ["right", "down", "click 2 2", "noop", "reset", "right", "noop", "noop",
               "go-to-test", "right", "right", "found-change", "choose_frame_1", "noop",
               "submit"]
    stream, replica = ViewStream(keyframe_every=4), ViewReplica()
    sizes = []
    for view in views(test_problems["cd"], actions):
        message = stream.next(view)
        sizes.append("since" in message)
        assert replica.receive(message) is False
        assert replica.state == {**view, "version": stream.version}
    assert sizes.count(False) >= len(sizes) // 4  # the first and every fourth are whole


def test_a_lost_message_makes_the_replica_ask_once_for_the_whole_view(test_problems):
    stream, replica = ViewStream(), ViewReplica()
    made = [stream.next(view) for view in views(test_problems["planning"],
                                                ["right", "down", "right", "down"])]
    assert replica.receive(made[0]) is False
    assert replica.receive(made[2]) is True  # made[1] was lost
    assert replica.receive(made[3]) is False and replica.version == 1  # asked already
    whole = stream.whole(stream.last)
    assert whole["version"] == 5 and "since" not in whole
    assert replica.receive(whole) is False and replica.state == whole


def test_a_whole_state_sent_on_joining_may_overtake_older_changes(test_problems):
    stream, replica = ViewStream(), ViewReplica()
    made = [stream.next(view) for view in views(test_problems["mfp"], ["right", "down"])]
    joined = stream.whole(stream.last)  # the join is answered before the room's changes
    assert replica.receive(joined) is False
    assert [replica.receive(m) for m in made[1:]] == [False, False]
    assert replica.state == joined


def test_a_whole_state_of_a_view_changed_since_the_last_message_is_the_next_version(
        test_problems):
    stream = ViewStream()
    view = next(views(test_problems["mfp"], []))
    assert stream.next(view)["version"] == 1
    assert stream.whole(dict(view))["version"] == 1  # the same view: the same version
    paused = {**view, "paused": "Saving your progress, one moment..."}
    assert stream.whole(paused) == {**paused, "version": 2}


def test_idle_ticks_send_a_state_every_fourth_tick_and_a_replica_stays_in_step(test_problems):
    """An idle tick (no input) that changed only the tick sends nothing, but every
    ``idle_every``-th; a tick with an input, or one whose picture changed, always sends."""
    stream, replica = ViewStream(keyframe_every=10**6, idle_every=4), ViewReplica()
    actions = ["noop"] * 9 + ["right"] + ["noop"] * 3 + ["right"]
    sent = []
    for k, view in enumerate(views(test_problems["planning"], actions)):
        idle = k > 0 and actions[k - 1] == "noop"
        message = stream.next(view, idle=idle)
        if message is not None:
            assert replica.receive(message) is False
            sent.append(view["tick"])
            assert replica.state == {**view, "version": stream.version}
    assert sent == [0, 4, 8, 10, 14]  # the whole first; idle every 4th; after each "right"
    assert stream.version == len(sent)  # versions count what was sent: no gap for a client
    frame = [list(row) for row in stream.last["frame"]]
    frame[4][4] = "red"
    moved = {**stream.last, "tick": 15, "frame": frame}  # an idle tick that repaints a cell
    assert stream.next(moved, idle=True)["cells"] == [[4, 4, "red"]]
