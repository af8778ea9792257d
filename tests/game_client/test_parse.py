"""Reading a model's reply (``game_client/bridge/parse.py``): the action it names, and
what a model caught in a loop or a garbled provider writes, each an invalid turn with its
reason, read in one pass over the reply."""

from __future__ import annotations

import random
import re

import pytest

from bench.standin import FakeOpenAI
from game_client.bridge import parse
from game_client.bridge.agent import LLMAgent
from game_client.bridge.parse import HARNESS, JSON, TAG, ReplyError, extract_action
from game_client.runner import run_episode
from tasks import registry
from tests.game_client.test_bridge import events_and_row, provider


@pytest.mark.parametrize(("reply", "style", "action"), [
    ("I will go up. <action>up</action>", TAG, "up"),
    ("<action>up</action> no, <ACTION> `Left` </Action>", TAG, "left"),  # the last one
    ("<action>up</action> and <action>down", TAG, "up"),  # an unclosed tag is none
    ("<action>left\nthen up</action>", HARNESS, "left"),
    ('```json\n{"action": "left"}\n```', JSON, "left"),
    ('{"action": "up"} or {"why": {"action": "down"}}', JSON, "down"),  # the last object
    ('{"action": "up"} {"action": ""} {"action": "left"', JSON, "up"),  # empty, unclosed
    ('{"a": ' * 3000 + '{"action": "right"}', JSON, "right"),
])
def test_the_action_a_reply_names(reply: str, style: str, action: str) -> None:
    assert extract_action(reply, style) == action


LOOPS = [
    ('{"a": ' * 3000, JSON), ('{"a": [' * 3000, JSON), ('{"a":1,' * 30_000, JSON),
    ("<action>" * 25_000, TAG), ("<action>" * 25_000, HARNESS),
    ('{"action": "up"' * 10_000, JSON),
]
"""Replies with no action that a model caught in a loop writes, some nested deeper than
the JSON decoder goes."""


@pytest.mark.parametrize(("reply", "style"), LOOPS, ids=lambda x: x[:12] if len(x) > 9 else x)
def test_a_looping_or_garbled_reply_is_a_reply_error(reply: str, style: str) -> None:
    """Before, a reply nested deeper than the decoder goes raised RecursionError, which
    ended the attempt as an error, again at every rerun; and the tags were paired by a
    regular expression that tried every ``<action>`` again to the end of the reply (200,000
    characters of them: 71 s; bench.agents prints what it takes now)."""
    with pytest.raises(ReplyError):
        extract_action(reply, style)


def test_tags_are_paired_as_the_regular_expression_paired_them() -> None:
    """The one-pass pairing finds what ``re.findall(OPEN(.*?)CLOSE)`` found, on random
    mixes of tags, their variants and text."""
    pieces = ["<action>", "</action>", "<ACTION >", "< / Action>", "</action >", "up", "x",
              "\n", " ", "<", ">", "<scratchpad_add>", "</SCRATCHPAD_ADD>", "</scratchpad_add>"]
    old = {"tag": re.compile(r"<\s*action\s*>(.*?)<\s*/\s*action\s*>", re.I | re.S),
           "harness": re.compile(r"<action>(.*?)</action>", re.S),
           "add": re.compile(r"<scratchpad_add>(.*?)</scratchpad_add>", re.I | re.S)}
    new = {"tag": parse._ACTION_TAG, "harness": parse._HARNESS_TAG, "add": parse._ADD_TAG}
    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        for name, pattern in old.items():
            assert parse._between(text, new[name]) == pattern.findall(text), (name, text)


def test_a_reply_nested_deeper_than_the_decoder_goes_costs_a_turn_not_the_attempt(store) -> None:
    """Through the real bridge and store, on a task-DAG map (whose replies are JSON)."""
    problem = registry.get_problem("dagmap/high-n4")
    replies = ['{"a": ' * 3000, '{"action": "up"}', '{"action": "left"}'] * 2
    with FakeOpenAI(replies) as fake:
        result = run_episode(LLMAgent(provider(fake)), problem, store=store, max_turns=6)
    events, row = events_and_row(store, result.episode_id)
    assert row.status != "error", row.info
    assert [e.parse_valid for e in events] == [False, True, True] * 2
    assert events[0].error.startswith('the reply has no JSON object with an "action"')
    assert [e.action for e in events if e.parse_valid] == ["up", "left"] * 2


def test_an_action_in_the_middle_of_a_reply_too_long_for_the_record_is_said_unread(store) -> None:
    """The record keeps a long reply's start and end, and the action is read from what it
    keeps: one written in the middle is an invalid turn that says why."""
    from records.schema import TURN_TEXT_LIMITS, kept
    from tests.game_client.conftest import PLANNING

    middle = " and on" * 24_000 + "<action>up</action>" + " and on" * 10_000
    replies = [middle, "<action>go-to-test</action>", "<action>right</action>",
               "<action>right</action>", "<action>down</action>"]
    with FakeOpenAI(replies) as fake:
        result = run_episode(LLMAgent(provider(fake)), PLANNING, store=store)
    events, _ = events_and_row(store, result.episode_id)
    assert (events[0].parse_valid, events[0].action) == (False, None)
    assert events[0].error.endswith("(the reply was 238,019 characters long: its start and its "
                                    "end are kept and read, its middle is not)")
    assert events[0].raw_reply == kept(middle, TURN_TEXT_LIMITS["raw_reply"])
    assert (result.status, result.score) == ("done", 1.0)
