"""The planning oracle solves every preset within budget without a single error."""

from __future__ import annotations

import pytest

from analysis.metrics.explore_exploit import explore_exploit
from tasks.dagmap import PRESETS, generate
from tasks.dagmap.oracle import plan, solve


@pytest.mark.parametrize("preset_name", PRESETS)
def test_oracle_solves_every_preset_within_budget_with_no_error(preset_name):
    for seed in range(50):
        dagmap = generate(preset_name, seed)
        moves = solve(dagmap)
        result = explore_exploit(dagmap, dagmap.follow(moves))
        assert len(moves) <= dagmap.budget, seed
        assert (result.exploration_errors, result.exploitation_errors) == (0, 0), seed
        assert result.exploration_error == 0.0
        assert result.exploitation_error in (0.0, None)


def test_plan_respects_prerequisites_and_ends_at_the_goal():
    for seed in range(20):
        dagmap = generate("high-n8", seed)
        order = plan(dagmap)
        assert order[-1] == dagmap.goal
        for i, node in enumerate(order):
            options = dagmap.prereq[node]
            assert not options or any(o <= set(order[:i]) for o in options)
