"""Normalized perplexity, its AUC and final value (002 App. D.1; docs/metrics.md)."""

import numpy as np
import pytest

from analysis.metrics import final_perplexity, normalized_perplexity_curve, perplexity_auc
from analysis.metrics.perplexity import window_values

TWO_TO_ONE = 3 / 2 ** (2 / 3) - 1
"""Counts (2, 1): P = (2/3)^(-2/3) (1/3)^(-1/3) = 3 / 2^(2/3), K = 2."""


def test_a_window_of_one_symbol_is_zero():
    assert normalized_perplexity_curve(["up"] * 10) == [(0.0, 0.0)]


def test_a_window_of_all_distinct_symbols_is_one():
    actions = [f"click {x} 0" for x in range(10)]
    assert normalized_perplexity_curve(actions) == [(0.0, pytest.approx(1.0))]


def test_a_sequence_shorter_than_the_window_is_one_window():
    assert normalized_perplexity_curve(["up", "up", "down"]) == [(0.0, pytest.approx(TWO_TO_ONE))]


def test_window_values_hand_computed():
    # Counts (2, 1, 1): H = 1.5 bits, P = 2^1.5, K = 3.
    assert window_values(np.array([4, 4, 5, 6]), window=4) == pytest.approx([(2**1.5 - 1) / 2])


@pytest.mark.parametrize("actions", [[], ["noop", "reset", "go-to-test"]])
def test_no_symbol_means_no_value(actions):
    assert normalized_perplexity_curve(actions) is None
    assert perplexity_auc(actions) is None
    assert final_perplexity(actions) is None


def test_windows_slide_by_one_and_sit_at_normalized_positions():
    actions = ["up", "up", "down", "down"]
    assert normalized_perplexity_curve(actions, window=2) == [
        (0.0, 0.0),
        (0.5, 1.0),
        (1.0, 0.0),
    ]
    assert perplexity_auc(actions, window=2) == pytest.approx(0.5)  # two triangles
    assert final_perplexity(actions, window=2) == 0.0


def test_twelve_symbols_make_three_windows_of_ten():
    actions = ["up"] * 10 + ["down", "down"]
    curve = normalized_perplexity_curve(actions)
    # windows: ten ups; nine ups and a down; eight ups and two downs
    nine_one = (0.9**-0.9 * 0.1**-0.1) - 1
    eight_two = (0.8**-0.8 * 0.2**-0.2) - 1
    assert [x for x, _ in curve] == [0.0, 0.5, 1.0]
    assert [v for _, v in curve] == pytest.approx([0.0, nine_one, eight_two])
    assert perplexity_auc(actions) == pytest.approx(0.25 * (nine_one * 2 + eight_two))
    assert final_perplexity(actions) == pytest.approx(eight_two)


def test_auc_of_a_single_window_is_its_value():
    assert perplexity_auc(["left", "left", "right"]) == pytest.approx(TWO_TO_ONE)


def test_each_click_position_is_its_own_symbol_and_text_is_canonicalised():
    assert final_perplexity(["click 1 1", "click 2 2"]) == pytest.approx(1.0)
    assert final_perplexity(["click 1 1", " Click 1  1"]) == 0.0


def test_noop_and_reset_are_left_out_unless_included():
    actions = ["up", "noop", "up", "reset"]
    assert final_perplexity(actions) == 0.0
    assert final_perplexity(actions, include=("noop",)) == pytest.approx(TWO_TO_ONE)
    assert final_perplexity(actions, include="noop") == pytest.approx(TWO_TO_ONE)
    # counts (2, 1, 1): P = 2^1.5, K = 3
    assert final_perplexity(actions, include=("noop", "reset")) == pytest.approx((2**1.5 - 1) / 2)


def test_records_count_only_applied_interaction_phase_actions():
    events = [
        {"phase": "interaction", "action": "up"},
        {"phase": "interaction", "action": None},  # a reply that did not parse
        {"phase": "interaction", "action": "left", "applied": False},
        {"phase": "interaction", "action": "up"},
        {"phase": "interaction", "action": "go-to-test"},
        {"phase": "test", "action": "down"},
        {"phase": "test", "action": "right"},
    ]
    assert final_perplexity(events) == 0.0


@pytest.mark.parametrize(
    ("actions", "kwargs", "message"),
    [
        (["up"], {"window": 0}, "window must be a whole number"),
        (["up"], {"include": ("go-to-test",)}, "include may name noop and reset only"),
        (["jump"], {}, "unknown action 'jump'"),
        (["step"], {}, "not an interaction-phase action"),
    ],
)
def test_bad_input_is_refused(actions, kwargs, message):
    with pytest.raises(ValueError, match=message):
        normalized_perplexity_curve(actions, **kwargs)


@pytest.mark.parametrize("window", [10, 3, 1])
def test_many_episodes_computed_together_give_each_episode_its_own_curve(window, monkeypatch):
    """Random episodes of every length (none, shorter than the window, long), as texts and
    as columns, their windows compared in chunks of 7; the columns then keep the curve,
    and the AUC reads it."""
    from analysis.dataset import Events
    from analysis.metrics import perplexity

    monkeypatch.setattr(perplexity, "BATCH_WINDOWS", 7)
    perplexity_curves = perplexity.perplexity_curves

    rng = np.random.default_rng(window)
    verbs = ["up", "down", "left", "right", "noop", "reset"] + [f"click {i} {i}" for i in range(9)]
    episodes = [[str(v) for v in rng.choice(verbs, size=rng.integers(0, 60))] for _ in range(80)]
    episodes.append(["noop"] * 30)  # no symbol at all
    expected = [normalized_perplexity_curve(e, window) for e in episodes]
    assert perplexity_curves(episodes, window) == expected
    columns = [Events({f: [None] * len(e) for f in ("episode_id", "seq", "study_id",
                       "participant_id", "agent_run_id", "problem_id", "tick", "source",
                       "server_time", "client_time", "frame_hash", "next_phase", "score",
                       "prompt_tokens", "completion_tokens", "cost", "raw_reply", "prompt",
                       "system_prompt", "reasoning", "finish_reason", "retries", "trimmed",
                       "parse_valid", "latency", "error")}
                      | {"phase": ["interaction"] * len(e), "action": e, "applied": [True] * len(e)})
               for e in episodes]
    assert perplexity_curves(columns, window) == expected
    assert [perplexity_auc(c, window) for c in columns] == [perplexity_auc(e, window) for e in episodes]
