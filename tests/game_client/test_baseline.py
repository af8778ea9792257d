"""The random baseline of Table E.3 on the test problems."""

from __future__ import annotations

import csv
import re
from dataclasses import replace

import pytest
from click.testing import CliRunner

from game_client.baseline import (
    baseline_row,
    format_env_table,
    format_table,
    run_baseline,
    success_steps,
    write_csv,
    write_env_csv,
)
from study_server.cli import main
from tasks import registry
from tests.game_client.conftest import CD, MFP, PLANNING

ENV_HEADER = ["env", "P(trigger change)", "trigger mean steps", "trigger samples",
              "P(reach goal)", "goal mean steps", "goal samples"]


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


def test_success_steps_are_the_same_samples_as_the_row():
    steps = success_steps(PLANNING, samples=20, steps=200, seed=1)
    # the row above: 19 of 20 succeed, mean 57.8 with the failure counted as 200 steps
    assert len(steps) == 20 and steps.count(None) == 1
    assert sum(s for s in steps if s is not None) + 200 == pytest.approx(57.8 * 20)


def test_env_table_text_and_csv(tmp_path):
    rows = [{"env": "autumn/a", "P(trigger change)": 0.25, "trigger samples": 4,
             "P(reach goal)": None}]
    assert format_env_table(rows).splitlines() == [
        "env       P(trigger change)  trigger samples  P(reach goal)",
        "autumn/a  0.250              4                -"]
    write_env_csv(rows, tmp_path / "env.csv")
    assert (tmp_path / "env.csv").read_text().splitlines() == [
        "env,P(trigger change),trigger samples,P(reach goal)", "autumn/a,0.25,4,"]


def run_command(tmp_path, *args):
    """``gridstudy baseline random`` with 4 samples of 60 steps: (table rows, CSV rows)."""
    out = tmp_path / "baseline.csv"
    result = CliRunner().invoke(main, ["baseline", "random", "--samples", "4", "--steps", "60",
                                       "--csv", str(out), *args])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[-1] == f"wrote {out}"
    with out.open(newline="") as handle:
        return [re.split(r"\s{2,}", line) for line in lines[:-1]], list(csv.DictReader(handle))


PROBLEMS = ["--problems", "ant_trail/*", "--problems", "tilt_box/cd,tilt_box/planning"]


def test_the_command_prints_one_row_per_environment(tmp_path):
    table, written = run_command(tmp_path, *PROBLEMS)
    assert table[0] == ENV_HEADER
    assert [row[0] for row in table[1:]] == ["autumn/ant_trail", "autumn/tilt_box"]
    assert [list(row) for row in written] == [ENV_HEADER] * 2  # no mfp column
    per_problem, _ = run_command(tmp_path, *PROBLEMS, "--per-problem")
    chance = {row[0]: row[1:] for row in per_problem[1:]}
    assert chance["ant_trail/mfp"] == ["mfp", "0.167", "-", "0"]
    # the same seeded runs in both views: one problem per reading, so the same probability
    for row in written:
        name = row["env"].removeprefix("autumn/")
        assert row["P(trigger change)"] == str(float(chance[f"{name}/cd"][1]))
        assert row["P(reach goal)"] == str(float(chance[f"{name}/planning"][1]))
        assert row["trigger samples"] == row["goal samples"] == "4"


@pytest.fixture
def two_plannings():
    """The test Walker's change and two planning problems, one goal a step apart."""
    problems = (CD, PLANNING, replace(PLANNING, id="test/walker-planning-2",
                                      params={**PLANNING.params, "goal_cells": [[1, 1]]}))
    for problem in problems:
        registry.add_problem(problem, replace=True)
    yield
    for problem in problems:
        registry.unregister(problem_id=problem.id)


def test_the_command_pools_problems_of_one_environment(tmp_path, two_plannings):
    _, per_problem = run_command(tmp_path, "--problems", "test/walker-*", "--per-problem")
    _, [walker] = run_command(tmp_path, "--problems", "test/walker-*")
    goal = [float(r["probability"]) for r in per_problem if r["challenge"] == "planning"]
    assert len(goal) == 2
    assert (walker["env"], walker["goal samples"], walker["trigger samples"]) == (
        "test/walker", "8", "4")
    assert float(walker["P(reach goal)"]) == pytest.approx(sum(goal) / 2)


def test_the_command_says_when_nothing_is_sampled(tmp_path):
    result = CliRunner().invoke(main, ["baseline", "random", "--problems", "ant_trail/mfp",
                                       "--csv", str(tmp_path / "x.csv")])
    assert result.exit_code == 2
    assert "none of the selected problems has a random baseline that is sampled" in result.output
