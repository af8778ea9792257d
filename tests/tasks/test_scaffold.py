"""``gridstudy envs new``: a new environment folder that is complete and valid as it stands,
so an author starts from something that works."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from study_server.commands.catalog import envs as envs_command
from tasks import registry
from tasks.autumn import load_file
from tasks.autumn.lint import check_file
from tasks.library import LibraryEnv
from tasks.library.build import derive_library
from tasks.worldtest.check import check_problem
from tasks.worldtest.problem import Problem


@pytest.mark.parametrize("stochastic", [False, True])
def test_a_new_environment_checks_clean_and_derives_three_valid_problems(tmp_path: Path,
                                                                         stochastic: bool) -> None:
    args = ["new", "glass_house", "--category", "tool use", "--library", str(tmp_path)]
    result = CliRunner().invoke(envs_command, args + (["--stochastic"] if stochastic else []))
    assert result.exit_code == 0, result.output
    folder = tmp_path / "autumn" / "glass_house"  # the user's library keeps its own in autumn/
    assert "gridstudy play autumn/glass_house --debug" in result.output
    assert sorted(p.name for p in folder.iterdir()) == ["changed.sexp", "env.json", "problems",
                                                        "program.sexp"]
    for variant in ("program", "changed"):
        assert check_file(folder / f"{variant}.sexp") == ()
    meta = json.loads((folder / "env.json").read_text())
    assert (meta["category"], meta["stochastic"], meta["title"]) == ("tool use", stochastic,
                                                                     "Glass house")
    env = LibraryEnv("glass_house", folder, meta)
    for env_id, variant in ((env.env_id, "program"), (env.changed_env_id, "changed")):
        path = str(folder / f"{variant}.sexp")
        registry.register_env(env_id, load_file, program=path, path=path, replace=True)
    try:
        assert derive_library(envs=[env], samples=8) == []
        for challenge in ("mfp", "planning", "cd"):
            problem = Problem.load(env.problem_path(challenge))
            assert check_problem(problem, samples=4).valid
        program = load_file(folder / "program.sexp")
        starts = {str(program.reset(seed).frame) for seed in (1, 2, 3)}
        assert len(starts) == 1  # every seed starts from the same picture
        played = set()
        for seed in (1, 2, 3):
            program.reset(seed)
            played.add(str([program.step("noop").frame for _ in range(6)]))
        assert (len(played) > 1) == stochastic  # only the spark differs between seeds
    finally:
        registry.unregister(env_id=env.env_id)
        registry.unregister(env_id=env.changed_env_id)


def test_envs_new_refuses_a_bad_name_an_unknown_category_and_an_existing_folder(tmp_path: Path) -> None:
    def new(*args: str):
        return CliRunner().invoke(envs_command, ["new", *args, "--library", str(tmp_path)])

    bad = new("Glass-House", "--category", "tool use")
    assert bad.exit_code == 1 and "a name is 2-40 lower-case letters" in bad.output
    unknown = new("glass", "--category", "puzzles")
    assert unknown.exit_code == 2 and "'puzzles' is not one of" in unknown.output
    assert new("glass", "--category", "abstract logic").exit_code == 0
    again = new("glass", "--category", "abstract logic")
    assert again.exit_code == 1 and "exists already" in again.output
    taken = new("lamp_grid", "--category", "abstract logic")
    assert taken.exit_code == 1 and "gridstudy's library has an environment 'lamp_grid'" in taken.output
