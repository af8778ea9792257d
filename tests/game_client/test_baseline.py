"""The random baseline of Table E.3 on the test problems."""

from __future__ import annotations

import csv

from game_client.baseline import baseline_row, format_table, run_baseline, write_csv
from tests.game_client.conftest import CD, MFP, PLANNING


def test_mfp_is_chance_over_the_options():
    row = baseline_row(MFP, samples=50, steps=1000)
    assert (row.probability, row.mean_steps, row.samples) == (1 / 6, None, 0)


def test_planning_and_cd_probabilities_and_steps(tmp_path):
    rows = run_baseline([PLANNING, CD], samples=20, steps=200, seed=1)
    planning, cd = rows
    # seeded: the same figures every time; a change needs 3 rights then a click (t* >= 4)
    assert (planning.probability, planning.mean_steps) == (0.95, 57.8)
    assert cd.probability == 1.0 and 4 <= cd.mean_steps < 200
    assert run_baseline([PLANNING], samples=20, steps=200, seed=1) == [planning]
    short = baseline_row(PLANNING, samples=20, steps=2)
    assert (short.probability, short.mean_steps) == (0.0, 2.0)  # 3 moves needed
    write_csv(rows, tmp_path / "baseline.csv")
    with open(tmp_path / "baseline.csv") as handle:
        table = list(csv.reader(handle))
    assert table[0] == ["env_id", "problem_id", "challenge", "samples", "steps", "probability", "mean_steps"]
    assert table[1][:6] == ["test/walker", "test/walker-planning", "planning", "20", "200", "0.95"]
    assert format_table(rows).splitlines()[0].split() == ["problem", "challenge", "P(success)", "mean", "steps", "samples"]
