"""pass@k, discovery@k, interaction@k: the unbiased estimator (003 Eq. 1-3)."""

import pytest

from analysis.metrics import at_k, metric_at_k, solution_contact


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 1, 2, 1 - 6 / 10),  # C(4,2) / C(5,2)
        (10, 3, 1, 0.3),  # k = 1 is the success share
        (10, 3, 5, 1 - 21 / 252),  # C(7,5) / C(10,5)
        (4, 3, 2, 1.0),  # fewer failures than k: some success is certain
        (6, 0, 3, 0.0),
        (3, 3, 3, 1.0),
    ],
)
def test_at_k_values(n, c, k, expected):
    assert at_k(n, c, k) == pytest.approx(expected)


def test_metric_at_k_is_the_mean_over_problems():
    assert metric_at_k([(5, 1), (10, 3), (4, 0)], k=2) == pytest.approx((0.4 + 1 - 21 / 45 + 0) / 3)


def test_fewer_attempts_than_k_is_refused():
    with pytest.raises(ValueError, match="metric@5 needs at least 5 attempts per problem; this one has 4"):
        at_k(4, 1, 5)
    with pytest.raises(ValueError, match="at least 3 attempts"):
        metric_at_k([(5, 1), (2, 2)], k=3)


@pytest.mark.parametrize(
    ("n", "c", "k", "message"),
    [
        (3, 4, 1, "cannot exceed"),
        (3, -1, 1, "c must be a whole number >= 0"),
        (3, 1, 0, "k must be a whole number >= 1"),
        (0, 0, 1, "n must be a whole number >= 1"),
    ],
)
def test_impossible_counts_are_refused(n, c, k, message):
    with pytest.raises(ValueError, match=message):
        at_k(n, c, k)


def test_no_problem_is_refused():
    with pytest.raises(ValueError, match="at least one problem"):
        metric_at_k([], k=1)


BLUE_AT_1_0 = [["black", "blue"], ["black", "black"]]
DARK = [["black", "black"], ["black", "black"]]


@pytest.mark.parametrize(
    ("frames", "actions", "expected"),
    [
        ([DARK, BLUE_AT_1_0], ["up", "right"], (True, False)),  # seen, ignored
        ([DARK], ["click 1 0"], (False, True)),  # clicked before it ever showed
        ([BLUE_AT_1_0], ["click 1 0", "noop"], (True, True)),
        ([DARK], [], (False, False)),
        ([], ["click 0 1"], (False, False)),  # another cell
    ],
    ids=["seen-ignored", "clicked-unseen", "seen-clicked", "nothing", "other-cell"],
)
def test_solution_contact(frames, actions, expected):
    assert solution_contact(frames, actions, [[1, 0]], ["blue"]) == expected


def test_solution_contact_needs_every_injected_cell_shown():
    assert solution_contact([BLUE_AT_1_0], [], [[1, 0], [0, 1]], ["blue", "blue"]) == (False, False)
    with pytest.raises(ValueError, match="one colour per cell"):
        solution_contact([DARK], [], [[1, 0]], ["blue", "red"])
