"""Loop ratio by 004 Eq. 2-4 (the default), and Algorithm 1 as printed (the named variant)."""

import pytest

from analysis.metrics import cycles, loop_ratio, loop_steps, pooled_loop_ratio
from analysis.metrics.loops import EQUATIONS, PRINTED_ALGORITHM
from tasks.core import frame_hash


def test_a_one_step_loop_repeated_three_times():
    # three actions that change nothing: the first is a cycle, the next two repeat it
    assert cycles(["A", "A", "A", "A"]) == [(0, 1, False), (1, 2, True), (2, 3, True)]
    assert loop_ratio(["A", "A", "A", "A"]) == pytest.approx(2 / 3)


def test_a_loop_after_exploration_counts_only_its_repeats():
    states = ["S", "T", "U", "U", "U", "U", "V"]  # 6 actions, 2 loop steps
    assert loop_steps(states) == (2, 6)


def test_pacing_a_b_a_b_a_is_half_loops_by_the_equations_and_none_as_printed():
    states = list("ABABA")  # 4 actions
    # Eq. 2-4: A B A, then the rotation B A B starts inside it (skipped), then A B A
    # again, starting where the first ended: a loop of 2 steps.
    assert cycles(states) == [(0, 2, False), (2, 4, True)]
    assert loop_ratio(states) == loop_ratio(states, overlapping=EQUATIONS) == 0.5
    # As printed, the rotation replaces A B A as the previous cycle: no loop.
    assert cycles(states, overlapping=PRINTED_ALGORITHM) == [
        (0, 2, False), (1, 3, False), (2, 4, False)]
    assert loop_ratio(states, overlapping=PRINTED_ALGORITHM) == 0.0


def test_a_three_step_cycle_repeated_three_times():
    states = list("ABCABCABCA")  # 9 actions
    # As printed, each rotated cycle (B C A B, C A B C) becomes the previous cycle,
    # so no cycle starts where an equal one ended.
    assert loop_ratio(states, overlapping=PRINTED_ALGORITHM) == 0.0
    # By the equations: A B C A recorded, then repeated twice.
    assert cycles(states) == [(0, 3, False), (3, 6, True), (6, 9, True)]
    assert loop_ratio(states) == pytest.approx(6 / 9)


def test_a_cycle_with_a_nested_sub_cycle_is_not_a_cycle():
    # A .. A holds B C B: only the inner cycle is recorded
    assert cycles(list("ABCBA")) == [(1, 3, False)]
    # A B B A B B A: each A..A return holds the self-loop B B, so is never a cycle,
    # and no loop is counted although A B B is walked twice
    assert [c[:2] for c in cycles(list("ABBABBA"), overlapping=PRINTED_ALGORITHM)] == [
        (1, 2), (2, 4), (4, 5)]
    assert loop_ratio(list("ABBABBA"), overlapping=PRINTED_ALGORITHM) == 0.0
    assert loop_ratio(list("ABBABBA")) == 0.0


def test_a_nested_case_under_both_readings():
    # A B C B C B A: the outer A..A holds nested cycles, so it is never a cycle; inside,
    # B C B then C B C (a rotation starting inside it) then B C B again.
    states = list("ABCBCBA")  # 6 actions
    assert cycles(states) == [(1, 3, False), (3, 5, True)]
    assert loop_ratio(states) == pytest.approx(2 / 6)
    assert cycles(states, overlapping=PRINTED_ALGORITHM) == [(1, 3, False), (2, 4, False),
                                                              (3, 5, False)]
    assert loop_ratio(states, overlapping=PRINTED_ALGORITHM) == 0.0


def test_no_cycles_is_zero():
    assert cycles(list("ABCDE")) == []
    assert loop_ratio(list("ABCDE")) == 0.0


def test_no_step_has_no_ratio():
    assert loop_ratio(["A"]) is None
    assert loop_ratio([]) is None


def test_actions_make_cycles_differ():
    states = ["A", "A", "A"]
    assert loop_ratio(states, actions=["noop", "noop"]) == 0.5
    assert loop_ratio(states, actions=["noop", "left"]) == 0.0  # different cycles
    with pytest.raises(ValueError, match="3 states need 2 actions, got 1"):
        loop_ratio(states, actions=["noop"])


def test_frames_go_through_frame_hash():
    still = [["black", "gold"]]
    states = [frame_hash(f) for f in (still, still, still)]
    assert loop_ratio(states) == 0.5
    with pytest.raises(ValueError, match="state 0 is not hashable.*frame_hash"):
        loop_ratio([still, still])


def test_pooled_ratio_sums_both_counters_over_trajectories():
    # (2 loop steps of 3) and (0 of 4) pool to 2/7, not the mean of 2/3 and 0
    assert pooled_loop_ratio([list("AAAA"), list("ABCDE")]) == pytest.approx(2 / 7)
    assert pooled_loop_ratio([["A"]]) is None
