"""The load benchmark's search for the largest session count within 25 ms p99."""

from __future__ import annotations

import pytest

from bench.load import search


@pytest.mark.parametrize(("capacity", "expected", "counts"), [
    (137, 137, [50, 100, 150, 125, 137, 143, 140]),  # up in steps, then bisection
    (30, 28, [50, 25, 37, 31, 28]),
    (500, 400, [50, 100, 150, 200, 250, 300, 350, 400]),  # never fails below the limit
])
def test_steps_up_then_bisects_to_the_resolution(capacity, expected, counts):
    measured = []

    def measure_count(sessions):
        measured.append(sessions)
        return {"lateness_p99_ms": 20.0 if sessions <= capacity else 30.0}

    assert search(measure_count, step=50, limit=400, resolution=5) == expected
    assert measured == counts
