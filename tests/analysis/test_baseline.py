"""The random-agent baseline summary, in the shape of 002 Table E.3."""

import pytest

from analysis.metrics import random_baseline, random_baseline_table


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


def test_table_has_one_row_per_environment_sorted():
    table = random_baseline_table(
        {"walker": {"cd": [1, 3], "planning": [None, None]}, "rain": {"planning": [10]}}
    )
    assert table == [
        {"env": "rain", "cd": None,
         "planning": {"samples": 1, "probability": 1.0, "mean_steps": 10.0}},
        {"env": "walker", "cd": {"samples": 2, "probability": 1.0, "mean_steps": 2.0},
         "planning": {"samples": 2, "probability": 0.0, "mean_steps": None}},
    ]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: random_baseline([]), "at least one sample"),
        (lambda: random_baseline([-1]), "step count >= 0 or None"),
        (lambda: random_baseline([1], timeout=0), "timeout must be"),
        (lambda: random_baseline_table({"w": {"mfp": [1]}}), "cd and planning, not \\['mfp'\\]"),
    ],
)
def test_bad_samples_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()
