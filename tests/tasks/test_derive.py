"""Deriving problems and checking them again (``tasks.worldtest.derive`` and ``.check``),
on a deterministic environment (Walker) and a stochastic one (Rain)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from click.testing import CliRunner

from study_server.commands.catalog import problems as problems_command
from tasks import registry
from tasks.core import region, rollout
from tasks.worldtest import Episode, Problem
from tasks.worldtest.cd import derive_cd
from tasks.worldtest.check import check_problem, final_frames, is_stochastic, lockstep, sample_seeds
from tasks.worldtest.derive import MIN_HORIZON
from tasks.worldtest.mfp import derive_mfp
from tasks.worldtest.planning import derive_planning
from tests.envs import Rain, Walker

WALK = ["right", "right", "down", "click 1 1", "down", "right"]
PAINT = ["click 1 1", "click 2 1", "click 1 2", "click 2 2", "right", "right", "down"]


# -- sampling -------------------------------------------------------------------------------


def test_sample_seeds_are_reproducible_distinct_non_zero_and_skip_the_problem_seed() -> None:
    seeds = sample_seeds(50, rng_seed=3, exclude=17)
    assert seeds == sample_seeds(50, rng_seed=3, exclude=17)
    assert len(set(seeds)) == 50 and 0 not in seeds and 17 not in seeds
    assert sample_seeds(50, rng_seed=4, exclude=17) != seeds


def test_stochasticity_is_detected_by_sampling_or_declared() -> None:
    seeds = sample_seeds(4, 0, 1)
    assert not is_stochastic(Walker(), final_frames(Walker(), ["noop"] * 3, seeds))
    assert is_stochastic(Rain(), final_frames(Rain(), ["noop"] * 3, seeds))
    declared = Walker()
    declared.stochastic = True
    assert is_stochastic(declared, final_frames(declared, ["noop"], seeds))


# -- masked frame prediction ----------------------------------------------------------------


def test_mfp_on_walker_masks_a_changed_window_not_seen_in_visible_frames(make_env: Callable) -> None:
    problem = derive_mfp("test/walker", 1, WALK, make_env=make_env)
    params = problem.params
    assert (problem.id, problem.challenge, problem.seed) == ("test/walker/mfp-1", "mfp", 1)
    assert params["mask"] == [[1, 0], [2, 0], [1, 1], [2, 1]]
    assert params["masked_from"] == 5 and params["stochastic"] is False
    frames = [o.frame for o in rollout(Walker(), 1, WALK)]
    answer = region(frames[-1], [tuple(c) for c in params["mask"]])
    assert answer == ("black", "black", "blue", "black")
    assert tuple(params["options"][params["answer"]]) == answer
    visible = {region(f, [tuple(c) for c in params["mask"]]) for f in frames[:5]}
    assert answer not in visible
    assert len({tuple(o) for o in params["options"]}) == 6
    assert check_problem(problem, make_env=make_env) == (True, [])


def test_mfp_is_reproducible_and_shuffles_by_rng_seed(make_env: Callable) -> None:
    first = derive_mfp("test/walker", 1, WALK, make_env=make_env, rng_seed=0)
    assert derive_mfp("test/walker", 1, WALK, make_env=make_env, rng_seed=0) == first
    orders = {tuple(map(tuple, derive_mfp("test/walker", 1, WALK, make_env=make_env,
                                          rng_seed=r).params["options"])) for r in range(6)}
    assert len(orders) > 1


def test_a_derived_mfp_problem_scores_through_the_episode(make_env: Callable) -> None:
    problem = derive_mfp("test/walker", 1, WALK, make_env=make_env, problem_id="test/mfp-x")
    for option in range(6):
        episode = Episode(problem, make_env)
        for action in ("go-to-test", f"choose_option_{option}", "submit"):
            episode.apply(action)
        assert episode.score == float(option == problem.params["answer"])


def test_mfp_on_rain_masks_only_cells_the_drop_never_reaches(make_env: Callable) -> None:
    problem = derive_mfp("test/rain", 1, PAINT, make_env=make_env)
    assert problem.params["stochastic"] is True
    mask = [tuple(c) for c in problem.params["mask"]]
    finals = final_frames(Rain(), PAINT, sample_seeds(64, 9, 1))
    assert len({region(f, mask) for f in finals}) == 1
    assert check_problem(problem, samples=32, make_env=make_env).valid


def test_mfp_with_a_given_mask_and_masked_from(make_env: Callable) -> None:
    problem = derive_mfp("test/walker", 1, WALK, mask=[[2, 2], [4, 4]], masked_from=2,
                         make_env=make_env)
    assert problem.params["mask"] == [[2, 2], [4, 4]] and problem.params["masked_from"] == 2
    options = problem.params["options"]
    assert options[problem.params["answer"]] == ["black", "black"]
    assert check_problem(problem, make_env=make_env).valid


def test_mfp_refuses_a_mask_that_differs_between_realisations(make_env: Callable) -> None:
    with pytest.raises(ValueError, match=r"the region \[\(0, 2\)\] is not deterministic"):
        derive_mfp("test/rain", 1, ["noop", "noop"], mask=[[0, 2]], make_env=make_env)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"actions": []}, "expected a non-empty list of environment actions"),
        ({"actions": ["up", "reset"]}, r"not ones: \['reset'\]"),
        ({"actions": ["noop"] * 4, "masked_from": 5}, r"masked_from 5 must lie in 0\.\.4"),
        ({"actions": ["noop"] * 4, "mask": [[5, 0]]}, "outside: \\[\\(5, 0\\)\\]"),
        ({"actions": ["noop"] * 4}, "no 2x2 to 4x4 window of the final frame is both deterministic"),
    ],
)
def test_mfp_derivation_errors_say_why(make_env: Callable, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        derive_mfp("test/walker", 1, make_env=make_env, **kwargs)


def rain_mfp(options: list[list[str]], answer: int) -> Problem:
    """One masked cell on the drop's path: black from seed 1, grey from some others."""
    return Problem("test/rain-mfp-bad", "test/rain", "mfp", 1, {
        "actions": ["noop", "noop"], "mask": [[0, 2]], "masked_from": 2,
        "options": options, "answer": answer})


def test_a_distractor_observed_in_a_sampled_realisation_is_rejected(make_env: Callable) -> None:
    problem = rain_mfp([["blue"], ["grey"], ["black"], ["gold"], ["red"], ["white"]], 2)
    report = check_problem(problem, make_env=make_env)
    assert not report.valid
    assert report.reasons == [
        "the masked region is not deterministic: seed 1222356006 ends with ['grey'], "
        "seed 1 with ['black']",
        "distractor 1 ['grey'] is observed with seed 1222356006",
    ]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"answer": 0}, "the answer (option 0) is not the final frame's masked region ['black']"),
        ({"answer": 6}, "answer 6 is not an option index 0..5"),
        ({"options": [["blue"], ["black"], ["black"], ["gold"], ["red"], ["white"]], "answer": 1},
         "options are not unique"),
        ({"options": [["blue"], ["black"], ["gold"], ["red"], ["white"]], "answer": 1},
         "5 options, expected 6"),
        ({"options": [["blue", "red"], ["black"], ["gold"], ["red"], ["white"], ["tan"]],
          "answer": 1}, "every option must have one colour per mask cell (1)"),
        ({"mask": [[9, 9]]}, "mask cells [[9, 9]] are outside the 5x5 grid"),
        ({"actions": []}, "actions must be a non-empty list of environment actions"),
    ],
)
def test_mfp_check_reasons(make_env: Callable, change: dict, reason: str) -> None:
    params = {"actions": ["noop", "noop"], "mask": [[3, 4]], "masked_from": 2, "answer": 1,
              "options": [["blue"], ["black"], ["grey"], ["gold"], ["red"], ["white"]]}
    problem = Problem("test/walker-mfp-bad", "test/walker", "mfp", 1, {**params, **change})
    report = check_problem(problem, make_env=make_env)
    assert (report.valid, reason in report.reasons) == (False, True), report.reasons


def test_the_unchanged_mfp_check_problem_is_valid(make_env: Callable) -> None:
    problem = Problem("test/walker-mfp-ok", "test/walker", "mfp", 1, {
        "actions": ["noop", "noop"], "mask": [[3, 4]], "masked_from": 2, "answer": 1,
        "options": [["blue"], ["black"], ["grey"], ["gold"], ["red"], ["white"]]})
    assert check_problem(problem, make_env=make_env) == (True, [])


# -- planning -------------------------------------------------------------------------------


def test_planning_goal_is_the_changed_window_and_search_finds_the_optimum(make_env: Callable) -> None:
    plan = ["down", "right", "up", "right", "down", "down", "noop"]
    problem = derive_planning("test/walker", 2, plan, make_env=make_env)
    params = problem.params
    assert params["goal_cells"] == [[x, y] for y in range(3) for x in range(3)]
    assert params["goal_colours"] == ["black"] * 8 + ["gold"]
    assert params["optimal_length"] == 4 and len(params["plan"]) == 4
    assert params["horizon"] == MIN_HORIZON and params["stochastic"] is False
    assert check_problem(problem, make_env=make_env) == (True, [])


def test_planning_cuts_the_plan_at_its_first_success_without_search(make_env: Callable) -> None:
    plan = ["click 4 4", "right", "left", "right", "left"]
    problem = derive_planning("test/walker", 2, plan, goal_cells=[[4, 4]], search=False,
                              horizon=7, make_env=make_env)
    assert problem.params["plan"] == ["click 4 4"]
    assert problem.params["goal_colours"] == ["blue"]
    assert problem.params["optimal_length"] is None and problem.params["horizon"] == 7


def test_planning_search_over_some_clicks_records_no_optimum(make_env: Callable) -> None:
    problem = derive_planning("test/walker", 2, ["noop", "click 4 4"], goal_cells=[[4, 4]],
                              clicks=[(4, 4)], make_env=make_env)
    assert problem.params["plan"] == ["click 4 4"] and problem.params["optimal_length"] is None


def test_planning_on_rain_records_no_optimum_and_avoids_the_drop(make_env: Callable) -> None:
    problem = derive_planning("test/rain", 1, ["right", "right", "down", "down", "click 4 4"],
                              make_env=make_env)
    params = problem.params
    assert params["stochastic"] is True and params["optimal_length"] is None
    assert params["plan"] == ["right", "right", "down", "down", "click 4 4"]
    assert all(y >= 2 for _, y in params["goal_cells"])  # the drop is in row 0 at the end
    assert check_problem(problem, make_env=make_env).valid


def test_planning_refuses_a_goal_that_holds_at_the_start(make_env: Callable) -> None:
    with pytest.raises(ValueError, match=r"the goal on \[\(3, 3\)\] already holds"):
        derive_planning("test/walker", 1, ["right"], goal_cells=[[3, 3]], make_env=make_env)
    with pytest.raises(ValueError, match="the plan changes no cell"):
        derive_planning("test/walker", 1, ["noop"], make_env=make_env)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"plan": ["right", "down"]},
         "the recorded plan (2 actions) does not reach the goal within the horizon 20"),
        ({"horizon": 3}, "the recorded plan (4 actions) does not reach the goal within the horizon 3"),
        ({"goal_colours": ["black", "black"]}, "the goal already holds at the start"),
        ({"goal_colours": ["gold"]}, "2 goal cells but 1 goal colours"),
        ({"goal_cells": [[2, 2], [5, 4]]}, "goal cells outside the 5x5 grid"),
        ({"optimal_length": 5}, "optimal_length 5 exceeds the plan's 4 steps"),
        ({"plan": []}, "the recorded plan (0 actions) does not reach the goal within the horizon 20"),
        ({"plan": [], "search_states": 7}, "unverified: no plan found within 7 states"),
        ({"plan": [], "search_states": 7, "declared_optimal_length": 3},
         "unverified: no plan found within 7 states; the answer file declares an optimum of 3 "
         "actions"),
    ],
)
def test_planning_check_reasons(make_env: Callable, change: dict, reason: str) -> None:
    params = {"goal_cells": [[2, 2], [4, 4]], "goal_colours": ["gold", "black"], "horizon": 20,
              "optimal_length": 4, "plan": ["right", "right", "down", "down"]}
    problem = Problem("test/walker-plan", "test/walker", "planning", 0, {**params, **change})
    assert check_problem(problem, make_env=make_env) == (False, [reason])


# -- change detection -----------------------------------------------------------------------


def test_cd_on_walker_finds_t_star_and_cuts_the_witness(make_env: Callable) -> None:
    witness = ["right", "right", "right", "click 0 4", "down", "click 1 1"]
    problem = derive_cd("test/walker", "test/walker-changed", 1, witness, make_env=make_env)
    assert problem.params == {"changed_env_id": "test/walker-changed", "horizon": MIN_HORIZON,
                              "witness": witness[:4], "witness_t_star": 4}
    assert check_problem(problem, make_env=make_env) == (True, [])


def test_cd_on_rain_is_valid_when_randomness_agrees(make_env: Callable) -> None:
    witness = ["click 0 0", "right", "right", "right", "noop", "click 0 4"]
    problem = derive_cd("test/rain", "test/rain-changed", 3, witness, make_env=make_env)
    assert problem.params["witness_t_star"] == 6
    run = lockstep(Rain(), Rain(changed=True), 3, witness)
    assert (run.t_star, run.random_split, run.randomness_agrees) == (6, None, True)
    assert check_problem(problem, make_env=make_env).valid


def test_cd_refuses_programs_whose_randomness_parts_before_the_change(make_env: Callable) -> None:
    witness = ["click 0 4", "noop", "noop", "noop", "noop", "noop", "noop", "noop"]
    run = lockstep(Rain(), Rain(skewed=True), 1, witness)
    assert run.random_split == 1 and run.t_star > 1 and not run.randomness_agrees
    with pytest.raises(ValueError, match=f"randomness differently from frame 1, before t\\* = {run.t_star}"):
        derive_cd("test/rain", "test/rain-skewed", 1, witness, make_env=make_env)
    problem = Problem("test/rain-cd-skewed", "test/rain", "cd", 1, {
        "changed_env_id": "test/rain-skewed", "witness": witness})
    assert check_problem(problem, make_env=make_env).reasons == [
        f"randomness consumed differently from frame 1, before t* = {run.t_star}"]


@pytest.mark.parametrize(
    ("changed", "witness", "message"),
    [
        ("test/walker-changed", ["right", "right", "click 0 4"], "never makes the programs differ"),
        ("test/rain", ["noop"], "differ already in the initial frame"),
    ],
)
def test_cd_derivation_errors_say_why(make_env: Callable, changed: str, witness: list[str],
                                      message: str) -> None:
    with pytest.raises(ValueError, match=message):
        derive_cd("test/walker", changed, 1, witness, make_env=make_env)


@pytest.mark.parametrize(
    ("change", "reasons"),
    [
        ({"witness": ["right", "click 0 4"]}, ["the witness (2 actions) triggers no difference"]),
        ({"witness_t_star": 3}, ["witness_t_star 3 but the witness gives t* = 4"]),
        ({"horizon": 3}, ["t* = 4 lies beyond the horizon 3"]),
        ({"changed_env_id": "test/rain"}, ["the programs differ already at the initial frame (t* = 0)",
                                           "witness_t_star 4 but the witness gives t* = 0"]),
        ({"changed_env_id": "no/such"},
         ["changed environment not registered: unknown environment 'no/such'; known: "
          "test/walker, test/walker-changed, test/rain, test/rain-changed, test/rain-skewed"]),
    ],
)
def test_cd_check_reasons(make_env: Callable, change: dict, reasons: list[str]) -> None:
    params = {"changed_env_id": "test/walker-changed", "horizon": 50,
              "witness": ["right", "right", "right", "click 0 4"], "witness_t_star": 4}
    problem = Problem("test/walker-cd", "test/walker", "cd", 0, {**params, **change})
    assert check_problem(problem, make_env=make_env) == (False, reasons)


def test_check_reports_an_unregistered_environment() -> None:
    problem = Problem("test/nowhere", "no/such-env", "planning", 0, {})
    report = check_problem(problem)
    assert not report.valid
    assert report.reasons[0].startswith("environment not registered: unknown environment 'no/such-env'")


# -- the command line -----------------------------------------------------------------------


def test_problems_check_command_prints_reasons(scratch_ids: Callable[[str], str]) -> None:
    walker, changed = scratch_ids("walker"), scratch_ids("walker-changed")
    registry.register_env(walker, Walker)
    registry.register_env(changed, Walker, changed=True)
    good = derive_cd(walker, changed, 1, ["right"] * 3 + ["click 2 2"],
                     problem_id=scratch_ids("good"))
    bad = Problem(scratch_ids("bad"), walker, "cd", 1, {**good.params, "witness": ["noop"]})
    registry.add_problem(good)
    registry.add_problem(bad)
    result = CliRunner().invoke(problems_command, ["check", good.id, bad.id])
    assert result.exit_code == 1
    assert result.output.splitlines()[-5:] == [
        f"ok         {good.id}",
        "           change shown in 50 of 50 runs (100 %)",  # whatever a player does first
        f"INVALID    {bad.id}",
        "           the witness (1 actions) triggers no difference",
        "1 valid, 0 unverified, 1 invalid",
    ]
    assert CliRunner().invoke(problems_command, ["check", good.id, "--samples", "2"]).exit_code == 0
