"""The WorldTest episode state machine, step by step, on the test environments.

Every scoring branch of docs/metrics.md ("Challenge scores") has a case here: MFP right,
wrong, quit and no answer; planning success at the first matching step, horizon
exhausted and quit; change detection at t*-2, t*-1, t*, t*+1 and very late, found-change
before the change, and never submitting.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tasks.worldtest import DONE, INTERACTION, SELECT, TEST, Episode, Problem
from tests.envs import Walker

INTERACTION_VERBS = ("noop", "up", "down", "left", "right", "click", "reset", "go-to-test")
INITIAL = Walker().reset(0).frame

MFP = Problem("test/ep-mfp", "test/walker", "mfp", 0, {
    "actions": ["right", "right", "down", "click 0 4"],
    "mask": [[2, 1], [0, 4]],
    "masked_from": 3,
    "options": [["gold", "blue"], ["black", "blue"], ["gold", "black"],
                ["black", "black"], ["blue", "gold"], ["gold", "gold"]],
    "answer": 0,
})
PLANNING = Problem("test/ep-planning", "test/walker", "planning", 0, {
    "goal_cells": [[2, 2], [4, 4]], "goal_colours": ["gold", "blue"], "horizon": 8,
    "optimal_length": 5, "plan": ["click 4 4", "right", "right", "down", "down"],
})
CD = Problem("test/ep-cd", "test/walker", "cd", 0, {
    "changed_env_id": "test/walker-changed", "horizon": 60,
    "witness": ["right", "right", "right", "click 0 4"], "witness_t_star": 4,
})
T_STAR = 4


def play(episode: Episode, actions: list[str]) -> list:
    return [episode.apply(action) for action in actions]


def assert_refused(episode: Episode, action: str, message: str) -> None:
    """``action`` raises ValueError naming what is allowed, and changes nothing."""
    before = (episode.phase, list(episode.history), episode.observation, episode.view())
    with pytest.raises(ValueError) as error:
        episode.apply(action)
    assert str(error.value) == message
    assert not episode.is_allowed(action)
    assert (episode.phase, episode.history, episode.observation, episode.view()) == before


# -- interaction phase ----------------------------------------------------------------------


def test_an_episode_starts_in_the_interaction_phase(make_env: Callable) -> None:
    episode = Episode(MFP, make_env)
    assert episode.phase == INTERACTION
    assert episode.observation.frame == INITIAL
    assert episode.allowed_verbs() == INTERACTION_VERBS
    assert episode.allowed_actions() == [
        "noop", "up", "down", "left", "right", "click [0-4] [0-4]", "reset", "go-to-test"]
    assert episode.view()["test"] is None and episode.view()["score"] is None


def test_interaction_steps_the_environment_and_reports_each_step(make_env: Callable) -> None:
    episode = Episode(MFP, make_env)
    steps = play(episode, ["right", "click 3 3", "noop"])
    assert [(s.index, s.action, s.phase, s.next_phase, s.done, s.score) for s in steps] == [
        (0, "right", INTERACTION, INTERACTION, False, None),
        (1, "click 3 3", INTERACTION, INTERACTION, False, None),
        (2, "noop", INTERACTION, INTERACTION, False, None),
    ]
    assert steps[-1].observation.frame[0][1] == "gold"
    assert steps[-1].observation.frame[3][3] == "blue"
    assert episode.history == [(INTERACTION, "right"), (INTERACTION, "click 3 3"),
                               (INTERACTION, "noop")]


@pytest.mark.parametrize("env_id", ["test/walker", "test/rain"])
def test_reset_returns_to_the_same_seeds_initial_state(make_env: Callable, env_id: str) -> None:
    problem = Problem("test/ep-reset", env_id, "mfp", 11, MFP.params)
    episode = Episode(problem, make_env)
    initial = episode.observation.frame
    play(episode, ["right", "down", "click 0 0", "noop", "noop"])
    assert episode.observation.frame != initial
    step = episode.apply("reset")
    assert step.observation.frame == initial
    assert episode.resets == 1
    # after the reset the same actions give the same frames again (the generator is reseeded)
    again = Episode(problem, make_env)
    assert [s.observation.frame for s in play(episode, ["right", "noop", "noop"])] == [
        s.observation.frame for s in play(again, ["right", "noop", "noop"])]


def test_a_click_outside_the_grid_is_refused_and_changes_nothing(make_env: Callable) -> None:
    episode = Episode(MFP, make_env)
    episode.apply("right")
    allowed = "noop, up, down, left, right, click [0-4] [0-4], reset, go-to-test"
    assert_refused(episode, "click 5 0", f"click 5 0 is outside the 5x5 grid; allowed: {allowed}")
    assert_refused(episode, "click 0 -1", f"click 0 -1 is outside the 5x5 grid; allowed: {allowed}")


@pytest.mark.parametrize("action", ["step", "rewind", "submit", "found-change", "quit",
                                    "choose_option_0", "choose_frame_0", "submit_option_0",
                                    "submit_frame_0"])
def test_test_verbs_are_refused_in_the_interaction_phase(make_env: Callable, action: str) -> None:
    episode = Episode(CD, make_env)
    allowed = "noop, up, down, left, right, click [0-4] [0-4], reset, go-to-test"
    assert_refused(episode, action,
                   f"{action} is not allowed in the interaction phase; allowed: {allowed}")


def test_malformed_text_is_refused_by_the_parser(make_env: Callable) -> None:
    episode = Episode(MFP, make_env)
    with pytest.raises(ValueError, match="unknown action 'jump'"):
        episode.apply("jump")
    assert episode.history == [] and not episode.is_allowed("jump")


# -- masked frame prediction ----------------------------------------------------------------


def mfp_at_test(make_env: Callable) -> Episode:
    episode = Episode(MFP, make_env)
    play(episode, ["down", "click 1 1"])
    step = episode.apply("go-to-test")
    assert (step.phase, step.next_phase) == (INTERACTION, TEST)
    return episode


def test_mfp_test_starts_at_the_unmasked_first_frame(make_env: Callable) -> None:
    episode = mfp_at_test(make_env)
    assert episode.observation.frame == INITIAL  # the interaction's moves are gone
    assert episode.allowed_verbs() == ("noop", "step", "choose_option", "submit_option", "quit")
    assert episode.allowed_actions() == ["noop", "step", "choose_option_[0-5]", "quit"]
    view = episode.view()["test"]
    assert (view["position"], view["length"], view["masked_from"]) == (0, 4, 3)
    assert "answer" not in view and view["options"] == MFP.params["options"]


def test_mfp_step_and_rewind_walk_the_trajectory_and_mask_its_end(make_env: Callable) -> None:
    episode = mfp_at_test(make_env)
    frames = [s.observation.frame for s in play(episode, ["step", "step", "step", "step"])]
    assert frames[0][0][1] == "gold" and frames[1][0][2] == "gold"  # positions 1 and 2
    assert frames[2][1][2] == "mask" and frames[2][4][0] == "mask"  # masked from frame 3
    assert frames[3][1][2] == "mask" and frames[3][4][0] == "mask"
    assert frames[3][1][1] == "black"
    assert episode.allowed_verbs() == ("noop", "rewind", "choose_option", "submit_option", "quit")
    assert_refused(episode, "step", "step is not allowed in the test phase; allowed: "
                                    "noop, rewind, choose_option_[0-5], quit")
    back = episode.apply("rewind")
    assert back.observation.info == {"position": 3} and back.observation.frame == frames[2]
    assert episode.observation.text.startswith('{"video_location": "3/4"')


def test_mfp_refuses_submit_before_a_choice_and_options_out_of_range(make_env: Callable) -> None:
    episode = mfp_at_test(make_env)
    assert_refused(episode, "submit", "submit is not allowed in the test phase; allowed: "
                                      "noop, step, choose_option_[0-5], quit")
    assert_refused(episode, "choose_option_6", "choose_option_6 is out of range; allowed: "
                                               "noop, step, choose_option_[0-5], quit")
    assert_refused(episode, "reset", "reset is not allowed in the test phase; allowed: "
                                     "noop, step, choose_option_[0-5], quit")


@pytest.mark.parametrize(
    ("actions", "score"),
    [
        (["choose_option_0", "submit"], 1.0),
        (["choose_option_3", "submit"], 0.0),
        (["choose_option_3", "choose_option_0", "submit"], 1.0),
        (["choose_option_0", "choose_option_5", "submit"], 0.0),
        (["choose_option_0", "quit"], 0.0),
        (["quit"], 0.0),
        (["submit_option_0"], 1.0),
        (["submit_option_4"], 0.0),
        (["choose_option_0", "submit_option_4"], 0.0),
    ],
    ids=["right", "wrong", "changed-to-right", "changed-to-wrong", "chose-then-quit", "no-answer",
         "page-right", "page-wrong", "page-answer-overrides"],
)
def test_mfp_scores(make_env: Callable, actions: list[str], score: float) -> None:
    episode = mfp_at_test(make_env)
    steps = play(episode, actions)
    assert [s.done for s in steps] == [False] * (len(actions) - 1) + [True]
    assert steps[-1].score == score and episode.score == score
    assert (steps[-1].next_phase, episode.phase, episode.done) == (DONE, DONE, True)
    assert episode.allowed_verbs() == ()
    assert_refused(episode, "noop", f"noop is not allowed: the episode is over (score {score})")


def test_mfp_without_a_submission_has_no_score_yet(make_env: Callable) -> None:
    episode = mfp_at_test(make_env)
    play(episode, ["choose_option_0", "step", "noop"])
    assert (episode.done, episode.score, episode.view()["score"]) == (False, None, None)


# -- planning -------------------------------------------------------------------------------


def planning_at_test(make_env: Callable, **params) -> Episode:
    problem = Problem(PLANNING.id, PLANNING.env_id, "planning", 0, {**PLANNING.params, **params})
    episode = Episode(problem, make_env)
    play(episode, ["click 4 4", "right", "right", "down"])  # nearly there, then the test
    episode.apply("go-to-test")
    return episode


def test_planning_starts_from_the_initial_state_without_reset(make_env: Callable) -> None:
    episode = planning_at_test(make_env)
    assert episode.observation.frame == INITIAL
    assert episode.allowed_actions() == [
        "noop", "up", "down", "left", "right", "click [0-4] [0-4]", "quit"]
    view = episode.view()["test"]
    assert view.pop("goal_grid") == [  # the first test frame with the goal colours on it
        [("gold" if (x, y) == (2, 2) else "blue" if (x, y) == (4, 4) else cell)
         for x, cell in enumerate(row)] for y, row in enumerate(INITIAL)]
    assert view == {"kind": "planning", "goal_cells": [[2, 2], [4, 4]],
                    "goal_colours": ["gold", "blue"], "steps": 0, "horizon": 8}
    allowed = "noop, up, down, left, right, click [0-4] [0-4], quit"
    assert_refused(episode, "reset", f"reset is not allowed in the test phase; allowed: {allowed}")
    assert_refused(episode, "click 0 5", f"click 0 5 is outside the 5x5 grid; allowed: {allowed}")


def test_planning_succeeds_at_the_first_step_matching_the_goal(make_env: Callable) -> None:
    episode = planning_at_test(make_env)
    steps = play(episode, ["click 4 4", "right", "noop", "right", "down", "down"])
    assert [s.done for s in steps] == [False] * 5 + [True]
    assert [s.score for s in steps] == [None] * 5 + [1.0]
    assert episode.view()["test"]["steps"] == 6
    assert episode.allowed_verbs() == ()


def test_planning_success_on_the_last_step_of_the_horizon_counts(make_env: Callable) -> None:
    episode = planning_at_test(make_env, horizon=5)
    steps = play(episode, ["click 4 4", "right", "right", "down", "down"])
    assert (steps[-1].done, steps[-1].score) == (True, 1.0)


def test_planning_ends_with_0_when_the_horizon_is_exhausted(make_env: Callable) -> None:
    episode = planning_at_test(make_env)
    steps = play(episode, ["right", "right", "down", "down", "up", "noop", "noop", "noop"])
    assert [s.done for s in steps] == [False] * 7 + [True]
    assert (steps[-1].score, episode.score, episode.phase) == (0.0, 0.0, DONE)


def test_planning_quit_scores_0(make_env: Callable) -> None:
    episode = planning_at_test(make_env)
    steps = play(episode, ["click 4 4", "right", "quit"])
    assert (steps[-1].action, steps[-1].done, steps[-1].score) == ("quit", True, 0.0)


# -- change detection -----------------------------------------------------------------------

WITNESS_THEN = ["right", "right", "right", "click 0 4"]  # frame 4 differs: t* = 4


def cd_episode(make_env: Callable, **params) -> Episode:
    problem = Problem(CD.id, CD.env_id, "cd", 0, {**CD.params, **params})
    return Episode(problem, make_env)


def test_cd_interaction_runs_the_original_program(make_env: Callable) -> None:
    episode = cd_episode(make_env)
    assert play(episode, WITNESS_THEN)[-1].observation.frame[4][0] == "blue"


def test_cd_test_runs_the_changed_program(make_env: Callable) -> None:
    episode = cd_episode(make_env)
    episode.apply("go-to-test")
    assert episode.allowed_actions() == [
        "noop", "up", "down", "left", "right", "click [0-4] [0-4]", "found-change", "quit"]
    assert play(episode, WITNESS_THEN)[-1].observation.frame[4][0] == "red"
    assert episode.test.t_star == T_STAR


def cd_selecting(make_env: Callable, steps: int) -> Episode:
    """A CD episode that played the witness, then noops up to ``steps`` test steps, then
    pressed found-change."""
    episode = cd_episode(make_env)
    episode.apply("go-to-test")
    play(episode, (WITNESS_THEN + ["noop"] * steps)[:steps])
    step = episode.apply("found-change")
    assert (step.phase, step.next_phase, episode.phase) == (TEST, SELECT, SELECT)
    return episode


@pytest.mark.parametrize(
    ("frame", "score"),
    [(T_STAR - 2, 0.0), (T_STAR - 1, 1.0), (T_STAR, 1.0), (T_STAR + 1, 0.9672975),
     (T_STAR + 2, 0.8917282), (40, 0.1996254), (0, 0.0)],
    ids=["t*-2", "t*-1", "t*", "t*+1", "t*+2", "very-late", "first-frame"],
)
def test_cd_scores_the_chosen_frame(make_env: Callable, frame: int, score: float) -> None:
    episode = cd_selecting(make_env, 45)
    choice = episode.apply(f"choose_frame_{frame}")
    assert choice.observation.info == {"frame_index": frame}
    assert choice.observation.frame == episode.test.frames[frame]
    final = episode.apply("submit")
    assert (final.done, final.next_phase) == (True, DONE)
    assert final.score == pytest.approx(score, abs=1e-6)
    page = cd_selecting(make_env, 45)  # the page's answer: the choice and submit in one
    answer = page.apply(f"submit_frame_{frame}")
    assert (answer.done, answer.score, page.test.outcome()["chosen"]) == (True, final.score, frame)
    assert answer.observation.frame == episode.test.frames[frame]


def test_cd_found_change_before_the_change_scores_0(make_env: Callable) -> None:
    for frame in (1, 2, 3):
        episode = cd_selecting(make_env, 3)  # the change would show at frame 4
        play(episode, [f"choose_frame_{frame}"])
        assert episode.apply("submit").score == 0.0


def test_cd_selection_allows_only_choices_noop_and_quit(make_env: Callable) -> None:
    episode = cd_selecting(make_env, 6)
    assert episode.allowed_actions() == ["noop", "choose_frame_[0-6]", "quit"]
    allowed = "noop, choose_frame_[0-6], quit"
    assert_refused(episode, "up", f"up is not allowed in the select phase; allowed: {allowed}")
    assert_refused(episode, "submit", f"submit is not allowed in the select phase; allowed: {allowed}")
    assert_refused(episode, "choose_frame_7", f"choose_frame_7 is out of range; allowed: {allowed}")
    assert_refused(episode, "submit_frame_7", f"submit_frame_7 is out of range; allowed: {allowed}")
    assert episode.is_allowed("submit_frame_0")  # accepted, though never listed to a player
    frame = episode.observation
    assert episode.apply("noop").observation is frame
    episode.apply("choose_frame_5")
    assert episode.allowed_actions() == ["noop", "choose_frame_[0-6]", "submit", "quit"]


@pytest.mark.parametrize("at", ["test", "select", "chosen"])
def test_cd_never_submitting_scores_0(make_env: Callable, at: str) -> None:
    if at == "test":
        episode = cd_episode(make_env)
        episode.apply("go-to-test")
        play(episode, WITNESS_THEN)
    else:
        episode = cd_selecting(make_env, 6)
        if at == "chosen":
            episode.apply(f"choose_frame_{T_STAR}")
    step = episode.apply("quit")
    assert (step.done, step.score, episode.score) == (True, 0.0, 0.0)


def test_cd_reaching_the_horizon_opens_the_selection(make_env: Callable) -> None:
    episode = cd_episode(make_env, horizon=6)
    episode.apply("go-to-test")
    steps = play(episode, WITNESS_THEN + ["noop", "noop"])
    assert [s.next_phase for s in steps] == [TEST] * 5 + [SELECT]
    assert episode.allowed_actions() == ["noop", "choose_frame_[0-6]", "quit"]
    play(episode, [f"choose_frame_{T_STAR}"])
    assert episode.apply("submit").score == 1.0


# -- replay ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("problem", "actions"),
    [
        (MFP, ["right", "click 2 2", "reset", "down", "go-to-test", "step", "step", "rewind",
               "choose_option_2", "noop", "choose_option_0", "submit"]),
        (PLANNING, ["down", "reset", "go-to-test", "click 4 4", "right", "right", "down", "up",
                    "noop", "down"]),
        (CD, ["right", "go-to-test", *WITNESS_THEN, "noop", "found-change", "choose_frame_2",
              "noop", "choose_frame_5", "submit"]),
        (Problem("test/ep-rain", "test/rain", "cd", 5, {**CD.params,
                                                         "changed_env_id": "test/rain-changed"}),
         ["noop", "noop", "reset", "noop", "go-to-test", *WITNESS_THEN, "noop", "found-change",
          "choose_frame_4"]),
    ],
    ids=["mfp", "planning", "cd", "cd-rain-unfinished"],
)
def test_replay_equals_live(make_env: Callable, problem: Problem, actions: list[str]) -> None:
    live = Episode(problem, make_env)
    steps = play(live, actions)
    replayed = Episode.replay(problem, [action for _, action in live.history], make_env)
    assert replayed.history == live.history
    assert (replayed.phase, replayed.score, replayed.resets) == (live.phase, live.score, live.resets)
    assert replayed.observation == live.observation == steps[-1].observation
    assert replayed.view() == live.view()


# -- outcome ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("problem", "actions", "outcome"),
    [
        (MFP, ["right", "reset", "down"], {"steps": 3, "resets": 1}),
        (MFP, ["right", "go-to-test", "choose_option_2", "submit"],
         {"steps": 4, "resets": 0, "test_chosen": 2, "test_answer": 0}),
        (PLANNING, ["go-to-test", "click 4 4", "right", "right", "down", "down"],
         {"steps": 6, "resets": 0, "test_steps": 5, "test_reached": True}),
        (PLANNING, ["go-to-test", "click 4 4", "quit"],
         {"steps": 3, "resets": 0, "test_steps": 1, "test_reached": False}),
        (CD, ["go-to-test", *WITNESS_THEN, "noop", "found-change", "choose_frame_4", "submit"],
         {"steps": 9, "resets": 0, "test_steps": 5, "test_t_star": T_STAR,
          "test_triggered": True, "test_chosen": 4}),
        (CD, ["reset", "go-to-test", "right", "click 0 4", "found-change"],
         {"steps": 5, "resets": 1, "test_steps": 2, "test_t_star": None,
          "test_triggered": False, "test_chosen": None}),
    ],
    ids=["interaction-only", "mfp", "planning-reached", "planning-quit", "cd-triggered",
         "cd-not-triggered"],
)
def test_outcome_says_how_the_attempt_went(make_env: Callable, problem: Problem,
                                           actions: list[str], outcome: dict) -> None:
    episode = Episode(problem, make_env)
    play(episode, actions)
    assert episode.outcome() == outcome
