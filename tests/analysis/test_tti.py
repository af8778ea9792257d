"""Area under variation and memory index (004 Eq. 1 and 5)."""

import pytest

from analysis.metrics import auv, auv_by_window, memory_index, success_curve


def test_auv_small_hand_example():
    # 4 episodes solved at steps 1, 2, never, 4; t_max = 4
    # P = 0, 1/4, 2/4, 2/4, 3/4; trapezoids 1/8, 3/8, 1/2, 5/8; sum 13/8; / 4
    assert success_curve([1, 2, None, 4], t_max=4).tolist() == [0, 0.25, 0.5, 0.5, 0.75]
    assert auv([1, 2, None, 4], t_max=4) == pytest.approx(13 / 32)


@pytest.mark.parametrize(
    ("solve_steps", "t_max", "expected"),
    [
        ([1, 1], 2, 0.75),  # P = 0, 1, 1
        ([1], 1, 0.5),  # the first trapezoid always starts at P_0 = 0
        ([None, None], 5, 0.0),
        ([7, None], 5, 0.0),  # solved after the window: not within t_max
        ([5], 5, 0.1),  # P_5 = 1 only: half of the last unit step
    ],
)
def test_auv_values(solve_steps, t_max, expected):
    assert auv(solve_steps, t_max) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("solve_steps", "t_max", "message"),
    [
        ([], 5, "at least one episode"),
        ([0], 5, "solve step must be a whole number >= 1"),
        ([1.5], 5, "solve step"),
        ([1], 0, "t_max must be a whole number >= 1"),
    ],
)
def test_auv_refuses_bad_input(solve_steps, t_max, message):
    with pytest.raises(ValueError, match=message):
        auv(solve_steps, t_max)


def test_auv_by_window_and_memory_index():
    by_window = auv_by_window({0: [None, 2], 3: [2, 2], "full": [1, 1]}, t_max=2)
    assert by_window == {0: 0.125, 3: 0.25, "full": 0.75}
    assert memory_index(by_window["full"], by_window[0]) == 0.625
    assert memory_index(0.2, 0.5) == pytest.approx(-0.3)


def test_memory_index_refuses_values_that_are_not_auvs():
    with pytest.raises(ValueError, match="auv_current must be an AUV between 0 and 1"):
        memory_index(0.5, 1.5)
