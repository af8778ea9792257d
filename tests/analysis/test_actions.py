"""Action-type distribution, unique actions and reset frequency (002 Sec. 4.2.2, App. E)."""

import pytest

from analysis.metrics import action_type_distribution, reset_frequency, unique_action_counts
from records.models import Event

EPISODE = [
    "click 2 3",
    "click 5 7",
    "click 2 3",
    "up",
    "up",
    "left",
    "noop",
    "noop",
    "reset",
    "click 5 7",
    "go-to-test",
]
"""Unique: two clicks, two arrows, one noop, one reset (go-to-test is not an action)."""


def test_distribution_is_over_unique_actions():
    assert action_type_distribution(EPISODE) == {
        "click": pytest.approx(2 / 6),
        "directional": pytest.approx(2 / 6),
        "reset": pytest.approx(1 / 6),
        "noop": pytest.approx(1 / 6),
    }


def test_distribution_of_an_episode_without_actions_is_none():
    assert action_type_distribution([]) is None
    assert action_type_distribution(["go-to-test"]) is None


def test_unique_counts_count_click_positions_and_keys():
    assert unique_action_counts(EPISODE) == {"clicks": 2, "directional": 2}
    assert unique_action_counts([]) == {"clicks": 0, "directional": 0}


def test_reset_frequency_per_phase_and_per_hundred_actions():
    # ten counted actions (go-to-test excluded), one of them a reset
    assert reset_frequency(EPISODE) == {"resets": 1, "rate": pytest.approx(10.0)}
    assert reset_frequency(EPISODE, per=10) == {"resets": 1, "rate": pytest.approx(1.0)}
    assert reset_frequency(["reset", "reset", "up", "down"]) == {"resets": 2, "rate": 50.0}


def test_reset_frequency_without_actions_has_no_rate():
    assert reset_frequency(["go-to-test"]) == {"resets": 0, "rate": None}


def test_store_rows_are_read_by_phase():
    rows = [
        Event(episode_id=1, seq=i, problem_id="p", phase=phase, tick=i, action=action,
              source="input", server_time=float(i))
        for i, (phase, action) in enumerate(
            [("interaction", "reset"), ("interaction", "click 0 0"), ("interaction", "reset"),
             ("interaction", "go-to-test"), ("test", "up"), ("test", "reset")]
        )
    ]
    assert reset_frequency(rows) == {"resets": 2, "rate": pytest.approx(200 / 3)}
    assert unique_action_counts(rows) == {"clicks": 1, "directional": 0}
    assert action_type_distribution(rows) == {
        "click": 0.5, "directional": 0.0, "reset": 0.5, "noop": 0.0,
    }


def test_per_must_be_positive():
    with pytest.raises(ValueError, match="per must be a whole number >= 1"):
        reset_frequency(EPISODE, per=0)
