"""Importing an AutumnBench folder: the fixture folder (our own 6x6 'dabs' program, where
clicks paint cells gold, and its changed version, where the third dab on is red) becomes
registered environments and three valid problems that an Episode plays to a score; a
malformed folder is refused with the file and what was expected."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from study_server.cli import main
from tasks import registry
from tasks.import_files import FolderError, parse_colour_dict
from tasks.imported import library_root, register_library
from tasks.importer import library_files, read_folder
from tasks.worldtest.check import check_problem
from tasks.worldtest.episode import Episode

FIXTURE = Path(__file__).parent / "fixtures" / "autumnbench"
ENV_IDS = ("autumnbench/dabs", "autumnbench/dabs-changed")
PROBLEM_IDS = ("autumnbench/dabs/cd", "autumnbench/dabs/mfp", "autumnbench/dabs/planning")

# challenge -> actions played after go-to-test, and the score they earn
PLAYS = {
    "mfp": (["step"] * 5 + ["choose_option_2", "submit"], 1.0),
    "planning": (["click 0 0", "click 5 5"], 1.0),
    "cd": (["click 1 1", "click 2 1", "click 3 3", "found-change", "choose_frame_3",
            "submit"], 1.0),
}


def unregister_imported() -> None:
    """Leave the registry as it was before the fixture folder was imported."""
    for env_id in ENV_IDS:
        registry.unregister(env_id=env_id)
    for problem_id in PROBLEM_IDS:
        registry.unregister(problem_id=problem_id)


@pytest.fixture
def forget_imported():
    yield
    unregister_imported()


@pytest.fixture
def bench(tmp_path) -> Path:
    """A writable copy of the fixture folder, to break in each test."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "bench"))


def test_the_cli_imports_the_folder_into_the_library(tmp_path, forget_imported):
    library = tmp_path / "library"
    result = CliRunner().invoke(main, ["problems", "import", str(FIXTURE), "--library",
                                       str(library)])
    assert result.exit_code == 0, result.output
    assert "imported autumnbench/dabs: autumnbench/dabs/mfp, autumnbench/dabs/planning, " \
           "autumnbench/dabs/cd" in result.output
    assert "note:" not in result.output
    assert sorted(p.relative_to(library).as_posix() for p in library.rglob("*.*")) == [
        "autumnbench/dabs/changed.sexp", "autumnbench/dabs/problems/cd.json",
        "autumnbench/dabs/problems/mfp.json", "autumnbench/dabs/problems/planning.json",
        "autumnbench/dabs/program.sexp",
    ]
    assert [s.id for s in registry.list_envs() if s.id.startswith("autumnbench/")] == list(ENV_IDS)
    assert [s.id for s in registry.list_problems() if s.id.startswith("autumnbench/")] == list(
        PROBLEM_IDS)


def test_imported_problems_hold_the_folder_s_data():
    [env] = read_folder(FIXTURE)
    mfp, planning, cd = env.problems
    assert mfp.params == {
        "actions": ["click 1 1", "noop", "click 2 1", "click 2 2", "noop"],
        "mask": [[1, 1], [2, 1], [1, 2], [2, 2]], "masked_from": 4,
        "options": [["black"] * 4, ["gold", "black", "black", "gold"],
                    ["gold", "gold", "black", "gold"], ["gold"] * 4,
                    ["red", "gold", "black", "gold"], ["gold", "gold", "black", "red"]],
        "answer": 2,
    }
    assert planning.params == {
        "goal_cells": [[0, 0], [5, 5]], "goal_colours": ["gold", "gold"], "horizon": 1000,
        "optimal_length": None, "declared_optimal_length": 2,
        "plan": ["click 0 0", "click 5 5"], "stochastic": False,
        "goal_grid": [["gold", *["black"] * 5], *[["black"] * 6] * 4, [*["black"] * 5, "gold"]],
    }
    assert cd.params == {
        "changed_env_id": "autumnbench/dabs-changed", "horizon": 1000,
        "witness": ["click 1 1", "click 2 1", "click 2 2"], "witness_t_star": 3,
    }
    assert (mfp.seed, planning.seed, cd.seed) == (1, 1, 1)


def test_a_library_written_once_is_registered_from_gridstudy_library(tmp_path, forget_imported):
    library = tmp_path / "lib"
    for relative, text in library_files(read_folder(FIXTURE)[0]).items():
        (library / relative).parent.mkdir(parents=True, exist_ok=True)
        (library / relative).write_text(text)
    assert library_root({"GRIDSTUDY_LIBRARY": str(library)}) == library
    assert library_root({}) == Path("gridstudy-library")
    assert register_library(library) == sorted(PROBLEM_IDS)
    assert registry.make("autumnbench/dabs").size == (6, 6)


@pytest.mark.parametrize("problem_id", PROBLEM_IDS)
def test_imported_problems_pass_the_check(problem_id, tmp_path, forget_imported):
    CliRunner().invoke(main, ["problems", "import", str(FIXTURE), "--library", str(tmp_path)])
    result = CliRunner().invoke(main, ["problems", "check", problem_id, "--samples", "4"])
    assert result.exit_code == 0, result.output
    assert result.output.endswith("1 valid, 0 unverified, 0 invalid\n")
    assert check_problem(registry.get_problem(problem_id), samples=4).valid


@pytest.mark.parametrize("challenge", sorted(PLAYS))
def test_an_episode_plays_each_imported_problem_to_a_score(challenge, tmp_path, forget_imported):
    CliRunner().invoke(main, ["problems", "import", str(FIXTURE), "--library", str(tmp_path)])
    episode = Episode(registry.get_problem(f"autumnbench/dabs/{challenge}"))
    actions, score = PLAYS[challenge]
    for action in ["click 4 4", "go-to-test", *actions]:
        step = episode.apply(action)
    assert (step.done, episode.score) == (True, score)


def _write(bench: Path, relative: str, data) -> None:
    path = bench / relative
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def _edit(bench: Path, relative: str, change) -> None:
    data = json.loads((bench / relative).read_text())
    change(data)
    _write(bench, relative, data)


BROKEN = {
    "no colour table": (lambda b: (b / "color_dict.yaml").unlink(),
                        "color_dict.yaml: missing"),
    "bad colour line": (lambda b: _write(b, "color_dict.yaml", "0: transparent\nblack\n"),
                        "color_dict.yaml line 2: expected '<integer>: <colour name>', got 'black'"),
    "superscript colour number": (lambda b: _write(b, "color_dict.yaml", "0: transparent\n²: red\n"),
                                  "color_dict.yaml line 2: expected '<integer>: <colour name>', got '²: red'"),
    "no prompts": (lambda b: shutil.rmtree(b / "prompts"), "prompts: missing; expected"),
    "no program": (lambda b: (b / "programs" / "dabs.sexp").unlink(),
                   "programs/dabs.sexp: missing"),
    "program does not parse": (lambda b: _write(b, "programs/dabs.sexp", "(program (= GRID"),
                               "programs/dabs.sexp: not a program our interpreter runs"),
    "no changed program": (
        lambda b: (b / "programs" / "dabs_change_detection_wrong_program.sexp").unlink(),
        "prompts/dabs_cd.json: the changed program is missing; expected one of"),
    "bad json": (lambda b: _write(b, "prompts/dabs_planning.json", "{"),
                 "prompts/dabs_planning.json: not valid JSON"),
    "no answer": (lambda b: (b / "answers" / "dabs_mfp.json").unlink(),
                  "answers/dabs_mfp.json: missing"),
    "answer without index": (lambda b: _write(b, "answers/dabs_mfp.json", {"idx": 1}),
                             "answers/dabs_mfp.json: expected 'correct_idx' to be an integer"),
    "answer out of range": (lambda b: _write(b, "answers/dabs_mfp.json", {"correct_idx": 6}),
                            "answers/dabs_mfp.json: correct_idx 6 is not a choice 0..5"),
    "bad action": (lambda b: _edit(b, "prompts/dabs_mfp.json",
                                   lambda d: d["observations"][2].update(action={"type": "jump"})),
                   "prompts/dabs_mfp.json: observation 2:"),
    "nothing masked": (lambda b: _edit(b, "prompts/dabs_mfp.json",
                                       lambda d: d.update(observations=d["observations"][:4])),
                       "prompts/dabs_mfp.json: no observation has masked cells (value 0)"),
    "choice of the wrong shape": (
        lambda b: _edit(b, "prompts/dabs_mfp.json", lambda d: d["choices"][1].append([1, 1])),
        "prompts/dabs_mfp.json: choice 1: expected 2 rows of 2 (the masked rectangle)"),
    "unknown colour": (lambda b: _edit(b, "prompts/dabs_planning.json",
                                       lambda d: d["goal"][0].__setitem__(0, 9)),
                       "prompts/dabs_planning.json: colour 9 is not in color_dict.yaml"),
    "empty goal mask": (lambda b: _edit(b, "prompts/dabs_planning.json",
                                        lambda d: d.update(mask=[[0] * 6] * 6)),
                        "prompts/dabs_planning.json: the mask checks no cell"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_malformed_folder_names_the_file_and_what_was_expected(case, bench, tmp_path):
    breaks, message = BROKEN[case]
    breaks(bench)
    with pytest.raises(FolderError) as caught:
        read_folder(bench)
    assert message in str(caught.value).replace(str(bench) + "/", "")
    result = CliRunner().invoke(main, ["problems", "import", str(bench), "--library",
                                       str(tmp_path / "lib")])
    assert result.exit_code == 1
    assert message in result.output.replace(str(bench) + "/", "")
    assert not (tmp_path / "lib").exists()


def test_the_colour_table_reader_takes_comments_and_quotes():
    assert parse_colour_dict("# colours\n1: 'black'\n36: cyan \n\n") == {1: "black", 36: "cyan"}
