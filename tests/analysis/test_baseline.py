"""The random-agent baseline summary, in the shape of 002 Table E.3."""

from dataclasses import replace

import pytest

from analysis.metrics import random_baseline, random_baseline_table
from tasks.worldtest.challenge import REACHES_GOAL, TRIGGERS_CHANGE, get, register, unregister

EMPTY = {"P(trigger change)": None, "trigger mean steps": None, "trigger samples": None,
         "P(reach goal)": None, "goal mean steps": None, "goal samples": None}


def test_probability_and_mean_steps_of_the_successes():
    samples = [12, None, 30, None, 1000, 1001]  # 1001 is past the 1,000-step timeout
    assert random_baseline(samples) == {
        "samples": 6,
        "probability": 0.5,
        "mean_steps": pytest.approx(1042 / 3),
    }


def test_no_success_has_no_mean_steps():
    assert random_baseline([None, None]) == {"samples": 2, "probability": 0.0, "mean_steps": None}


def test_timeout_is_a_parameter():
    assert random_baseline([5, 50], timeout=10)["probability"] == 0.5


def test_table_has_one_flat_row_per_environment_sorted():
    table = random_baseline_table(
        [("walker", "cd", [1, 3]), ("walker", "planning", [None, None]),
         ("rain", "planning", [10])]
    )
    assert table == [
        {"env": "rain", **EMPTY, "P(reach goal)": 1.0, "goal mean steps": 10.0,
         "goal samples": 1},
        {"env": "walker", "P(trigger change)": 1.0, "trigger mean steps": 2.0,
         "trigger samples": 2, "P(reach goal)": 0.0, "goal mean steps": None,
         "goal samples": 2},
    ]
    assert [list(row) for row in table] == [["env", *EMPTY]] * 2  # the same columns, in order


def test_problems_of_one_environment_and_reading_are_pooled():
    # two planning problems: 1 success in 4 samples, not 1/2 and 0/2 averaged per problem
    table = random_baseline_table(
        [("walker", "planning", [8, None]), ("walker", "planning", [None, None]),
         ("walker", "cd", [2000])], timeout=1000)  # past the timeout: a failure
    assert table == [{"env": "walker", "P(trigger change)": 0.0, "trigger mean steps": None,
                      "trigger samples": 1, "P(reach goal)": 0.25, "goal mean steps": 8.0,
                      "goal samples": 4}]


@pytest.fixture
def new_challenges():
    """Two challenges defined only here, declaring the built-in baseline readings."""
    register(replace(get("planning"), name="tidy", title="tidying", baseline=REACHES_GOAL))
    register(replace(get("cd"), name="spot", title="spotting", baseline=TRIGGERS_CHANGE))
    yield
    unregister("tidy")
    unregister("spot")


def test_columns_follow_the_reading_each_challenge_declares(new_challenges):
    table = random_baseline_table(
        [("walker", "tidy", [4, None]), ("walker", "planning", [6, None]),
         ("rain", "spot", [None, 7, 9])])
    assert table == [
        {"env": "rain", **EMPTY, "P(trigger change)": pytest.approx(2 / 3),
         "trigger mean steps": 8.0, "trigger samples": 3},
        {"env": "walker", **EMPTY, "P(reach goal)": 0.5, "goal mean steps": 5.0,
         "goal samples": 4},
    ]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: random_baseline([]), "at least one sample"),
        (lambda: random_baseline([-1]), "step count >= 0 or None"),
        (lambda: random_baseline([1], timeout=0), "timeout must be"),
        (lambda: random_baseline_table([("w", "mfp", [1])]),
         "w: mfp has no sampled random baseline \\(its reading is 'chance'\\); the table "
         "covers challenges read as 'trigger' or 'goal'"),
        (lambda: random_baseline_table([("w", "explore", [1])]),
         "w: explore has no sampled random baseline \\(its reading is None\\)"),
        (lambda: random_baseline_table([("w", "nope", [1])]), "unknown challenge 'nope'"),
        (lambda: random_baseline_table([("w", "cd", [])]), "at least one sample"),
    ],
)
def test_bad_samples_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_analysis_re_exports_the_one_table_the_command_line_prints():
    import analysis.metrics.baseline as metrics_baseline
    import analysis.metrics.checks as checks
    import tasks.worldtest.baseline as shared

    assert random_baseline is shared.random_baseline
    assert random_baseline_table is shared.random_baseline_table
    assert metrics_baseline.TIMEOUT == shared.TIMEOUT == 1000
    assert (checks.is_whole, checks.require_whole) == (shared.is_whole, shared.require_whole)
