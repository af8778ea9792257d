"""Importing a folder with the real harness's property: 'crane' (fixtures/autumnbench/crane,
our own 16x16 program: a crane rides the top row, down drops a block that falls to the floor,
a click switches warm and cold; its changed version's rail ends at column 12) gives neither
a plan nor a witness, and breadth-first search cannot find them within the import budget.
The guided search and the lockstep rollouts do; when nothing is found the problem is
checked as unverified, with the reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from study_server.cli import main
from tasks import registry
from tasks.autumn import load
from tasks.importer import SEARCH_STATES, ImportedEnv, read_folder
from tasks.worldtest.check import check_problem
from tasks.worldtest.search import goal_distance, shortest_plan

CRANE = Path(__file__).parent / "fixtures" / "autumnbench" / "crane"
PLAN = ["left", "left", "left", "click 3 0", "down"] + ["noop"] * 14
UNVERIFIED_PLAN = ("unverified: no plan found within 30 states; the answer file declares an "
                   "optimum of 5 actions")


def factory(env: ImportedEnv):
    """What ``registry.make`` would give once ``env`` is imported."""
    sources = {env.env_id: env.program, env.changed_env_id: env.changed}
    return lambda env_id: load(sources[env_id], name=env_id)


def checks(env: ImportedEnv) -> dict[str, tuple]:
    make_env = factory(env)
    reports = {p.challenge: check_problem(p, samples=4, make_env=make_env) for p in env.problems}
    return {challenge: (*report, report.status) for challenge, report in reports.items()}


@pytest.fixture
def crane(tmp_path) -> Path:
    """A writable copy of the crane folder."""
    return Path(shutil.copytree(CRANE, tmp_path / "crane"))


def _edit(folder: Path, relative: str, change) -> None:
    data = json.loads((folder / relative).read_text())
    change(data)
    (folder / relative).write_text(json.dumps(data))


def test_breadth_first_search_finds_no_plan_within_the_import_budget():
    [env] = read_folder(CRANE, search_states=1)
    planning = next(p for p in env.problems if p.challenge == "planning")
    cells = [tuple(c) for c in planning.params["goal_cells"]]
    reached = goal_distance(cells, planning.params["goal_colours"])
    result = shortest_plan(lambda: factory(env)(env.env_id), 1, lambda o: reached(o) == 0,
                           max_states=SEARCH_STATES)
    assert (result.found, result.states) == (False, SEARCH_STATES)


def test_the_guided_searches_make_all_three_problems_valid():
    [env] = read_folder(CRANE)
    mfp, planning, cd = env.problems
    assert env.notes == []
    assert planning.params["plan"] == PLAN
    assert (planning.params["optimal_length"], planning.params["declared_optimal_length"]) == (None, 5)
    assert "search_states" not in planning.params
    assert (cd.params["witness"], cd.params["witness_t_star"]) == (["right"] * 6, 6)
    assert checks(env) == {"mfp": (True, [], "valid"), "planning": (True, [], "valid"),
                           "cd": (True, [], "valid")}


def test_an_unreachable_goal_is_unverified_with_the_budget_and_the_declared_optimum(crane):
    # green is a colour the crane program never draws
    _edit(crane, "prompts/crane_planning.json", lambda d: d["goal"][15].__setitem__(0, 6))
    [env] = read_folder(crane, search_states=30)
    planning = env.problems[1]
    assert (planning.params["plan"], planning.params["search_states"]) == ([], 30)
    assert env.notes == ["planning: no plan found within 30 states; the answer file declares 5 "
                         "actions; 'problems check' will call it unverified",
                         "cd: no action sequence within 30 states shows the change"]
    assert checks(env)["planning"] == (False, [UNVERIFIED_PLAN], "unverified")


def test_a_change_no_rollout_shows_is_unverified(crane):
    shutil.copy(crane / "programs" / "crane.sexp",
                crane / "programs" / "crane_change_detection_wrong_program.sexp")
    [env] = read_folder(crane, search_states=30)
    cd = env.problems[2]
    assert cd.params == {"changed_env_id": "autumnbench/crane-changed", "horizon": 1000,
                         "search_states": 30}
    assert env.notes[-1] == "cd: no action sequence within 30 states shows the change"
    reason = "unverified: no action sequence within 30 states shows the change"
    assert checks(env)["cd"] == (False, [reason], "unverified")


def test_a_plan_shorter_than_the_declared_optimum_is_a_warning(crane):
    (crane / "answers" / "crane_planning.json").write_text('{"optimal_actions_count": 25}')
    [env] = read_folder(crane)
    assert env.notes == [f"planning: our plan takes {len(PLAN)} actions, fewer than the 25 the "
                         "answer file declares optimal"]
    warning = (f"warning: the plan takes {len(PLAN)} actions, fewer than the optimum of 25 the "
               "answer file declares: the answer file is wrong or our interpreter diverges "
               "from the one that recorded it")
    assert checks(env)["planning"] == (True, [warning], "valid")


def test_problems_check_explains_an_unverified_problem(crane, tmp_path):
    _edit(crane, "prompts/crane_planning.json", lambda d: d["goal"][15].__setitem__(0, 6))
    runner = CliRunner()
    try:
        runner.invoke(main, ["problems", "import", str(crane), "--library", str(tmp_path / "lib"),
                             "--search-states", "30"])
        result = runner.invoke(main, ["problems", "check", "autumnbench/crane/planning"])
        strict = runner.invoke(main, ["problems", "check", "--strict", "autumnbench/crane/planning"])
    finally:
        for env_id in ("autumnbench/crane", "autumnbench/crane-changed"):
            registry.unregister(env_id=env_id)
        for challenge in ("mfp", "planning", "cd"):
            registry.unregister(problem_id=f"autumnbench/crane/{challenge}")
    assert (result.exit_code, strict.exit_code) == (0, 1)  # unverified fails only --strict
    assert f"UNVERIFIED autumnbench/crane/planning\n           {UNVERIFIED_PLAN}\n" in result.output
    assert result.output.endswith("0 valid, 1 unverified, 0 invalid\n")
