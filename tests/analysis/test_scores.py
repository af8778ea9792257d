"""Challenge scores and the human percentile aggregate (docs/metrics.md, 002 Sec. 4.1.1)."""

import math

import pytest

from analysis.metrics import TooFew, cd_score, percentile_interval, percentile_score
from tasks.worldtest import scoring


def test_cd_score_is_the_episode_scorer_itself():
    assert cd_score is scoring.cd_score


@pytest.mark.parametrize(
    ("t", "t_star", "expected"),
    [
        (8, 10, 0.0),  # t* - 2: too early
        (9, 10, 1.0),  # t* - 1
        (10, 10, 1.0),  # t*
        (11, 10, 1.377 / (1 - 1.1 * math.exp(-1.1)) - 1.178),  # t* + 1: 0.99447
        (20, 10, 1.377 / (1 - 2 * math.exp(-2)) - 1.178),  # 2 t*: 0.71004
        (10**7, 10, 0.199),  # very late: the floor 1.377 - 1.178
        (None, 10, 0.0),  # never submitted
        (5, None, 0.0),  # the change never happened
        (0, 0, 1.0),  # frames that differ from the first, and the first chosen
        (3, 0, 0.199),  # ... a later one: every t is infinitely late (it divided by 0)
    ],
)
def test_cd_score_values(t, t_star, expected):
    assert cd_score(t, t_star) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    ("scores", "q", "expected"),
    [
        ([0, 0, 1, 1, 1], 80, 1.0),  # position 3.2 falls between two tied 1s
        ([1, 0, 0, 0], 80, 0.4),  # sorted 0 0 0 1, position 2.4
        ([0.2, 0.5, 0.5, 0.5, 1.0], 80, 0.6),  # 0.5 + 0.2 * (1.0 - 0.5)
        ([0.2, 0.5, 0.5, 0.5, 1.0], 50, 0.5),
        ([0.3], 80, 0.3),
        ([0, 1], 100, 1.0),
    ],
)
def test_percentile_score_interpolates_linearly(scores, q, expected):
    assert percentile_score(scores, q) == pytest.approx(expected)


def test_percentile_score_defaults_to_the_80th():
    assert percentile_score([0.0, 0.25, 0.5, 0.75, 1.0]) == pytest.approx(0.8)


@pytest.mark.parametrize("function", [percentile_score, percentile_interval])
def test_no_scores_is_an_error(function):
    with pytest.raises(ValueError, match="no scores to aggregate"):
        function([])


def test_missing_score_is_an_error():
    with pytest.raises(ValueError, match="missing"):
        percentile_score([1.0, float("nan")])


def test_q_out_of_range_is_an_error():
    with pytest.raises(ValueError, match="between 0 and 100"):
        percentile_score([1.0], q=101)


def test_interval_of_identical_scores_is_a_point():
    assert percentile_interval([0.5] * 20) == (0.5, 0.5)


def test_interval_of_two_scores_spans_every_resample_outcome():
    # Resamples of (0, 1) have 80th percentiles 0, 0.8 and 1, each far above 2.5 %.
    assert percentile_interval([0.0, 1.0], min_n=2) == (0.0, 1.0)


@pytest.mark.parametrize("scores", [[0.5], [0.0, 1.0], [0.0, 1.0, 1.0, 0.0]])
def test_too_few_attempts_give_no_interval(scores):
    # one value would resample to an interval of zero width that looks exact
    with pytest.raises(TooFew, match=rf"n too small: {len(scores)} attempt\(s\); a bootstrap "
                                     "interval needs at least 5"):
        percentile_interval(scores)


def test_five_attempts_give_an_interval():
    # A resample's p80 is 0 with no success (0.4^5 = 1 % < 2.5 %), 0.2 with one (8.7 %
    # up to there), else 1: the central 95 % runs from 0.2 to 1.
    assert percentile_interval([0.0, 1.0, 1.0, 0.0, 1.0]) == pytest.approx((0.2, 1.0))


def test_interval_is_reproducible_and_depends_on_the_seed():
    scores = [0, 0, 0.2, 0.4, 1, 1, 1, 0.6, 0.8, 0.1]
    first = percentile_interval(scores, seed=3)
    assert percentile_interval(scores, seed=3) == first
    assert first[0] <= percentile_score(scores) <= first[1]
    wide = percentile_interval(scores, level=0.99, resamples=2000)
    narrow = percentile_interval(scores, level=0.5, resamples=2000)
    assert wide[0] <= narrow[0] and narrow[1] <= wide[1]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"level": 1.0}, "level"), ({"resamples": 0}, "resamples"), ({"q": -1}, "q must")],
)
def test_interval_refuses_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        percentile_interval([1.0, 0.0], **kwargs)
