"""The pure pieces of the flow: palette, screening, quiz, attention checks, exclusion, steps."""

from __future__ import annotations

import pytest

from consent import attention, exclusion, quiz, screening
from consent.definition import ExclusionRules
from consent.stages import Consent, FlowState, Quiz, Stage, build_steps
from tests.consent.helpers import make_definition, register_walker_problems, walker_problem


def test_problem_palette_comes_from_frames_and_goal_colours():
    register_walker_problems(["test/p0"])
    # Walker frames: black ground, gold walker, blue clicked cells; the goal adds gold.
    assert screening.problem_palette(walker_problem("test/p0")) == {"black", "gold", "blue"}


def test_screening_items_are_seeded_and_scored():
    items = screening.make_items(["black", "gold", "blue"], 6, seed=3)
    assert items == screening.make_items(["black", "gold", "blue"], 6, seed=3)
    assert items != screening.make_items(["black", "gold", "blue"], 6, seed=4)
    for item in items:
        assert item.colours.count(item.odd) == 1 and item.colours[item.answer] == item.odd
        assert item.colours.count(item.base) == screening.CELLS - 1
    assert screening.score(items, [str(item.answer) for item in items]) == 6
    assert screening.score(items, [str((item.answer + 1) % 9) for item in items]) == 0
    assert screening.score(items, [None] * 6) == 0


def test_screening_tests_first_the_pairs_colour_blind_people_confuse():
    # red and green look alike to a dichromat; blue and yellow do not (to most)
    pairs = screening.pairs_to_test(["red", "green", "blue", "yellow", "mask"])
    assert pairs[0] == ("green", "red")
    items = screening.make_items(["red", "green", "blue", "yellow"], 2, seed=0)
    assert {frozenset((item.base, item.odd)) for item in items} == {
        frozenset(pairs[0]), frozenset(pairs[1])}


def test_colours_nobody_could_tell_apart_are_not_an_item():
    pairs = screening.pairs_to_test(["black", "#010101", "gold"])
    assert sorted(pairs) == [("#010101", "gold"), ("black", "gold")]
    with pytest.raises(ValueError, match="plainly different"):
        screening.make_items(["black", "#020202"], 2, seed=0)
    with pytest.raises(ValueError, match="plainly different"):
        screening.make_items(["black"], 2, seed=0)


def test_quiz_questions_grade_and_right_answers():
    questions = quiz.questions_for(["planning", "planning"])
    assert [q.id for q in questions] == ["tick", "reset", "go-to-test", "planning-goal"]
    assert quiz.grade(questions, quiz.right_answers(questions)) == []
    assert quiz.grade(questions, {"tick": "1"}) == ["reset", "go-to-test", "planning-goal"]


def test_attention_check_is_stable_per_seed():
    check = attention.make_check(11)
    assert check == attention.make_check(11)
    assert check.answer in check.choices and f"\u201c{check.answer}\u201d" in check.prompt
    assert attention.passed(check, check.answer) and not attention.passed(check, None)


@pytest.mark.parametrize(
    ("inputs", "end", "reason"),
    [
        ([], 10.0, "0 inputs (at least 1 required)"),
        ([1.0, 2.0], 10.0, None),
        ([1.0], 200.0, "idle for 199 s (at most 120 s allowed)"),
    ],
)
def test_episode_exclusion(inputs, end, reason):
    assert exclusion.episode_reason(ExclusionRules(), inputs, 0.0, end) == reason


def test_a_solver_is_never_excluded_for_acting_efficiently():
    rules = ExclusionRules(min_input_actions=5)
    assert exclusion.episode_reason(rules, [1.0, 2.0], 0.0, 10.0) == \
        "2 inputs (at least 5 required)"
    assert exclusion.episode_reason(rules, [1.0, 2.0], 0.0, 10.0, solved=True) is None
    # an idle stretch still counts: solving is no excuse for leaving the game alone
    assert exclusion.episode_reason(rules, [1.0], 0.0, 500.0, solved=True).startswith("idle")


def test_participant_exclusion_counts_failed_checks():
    rules = ExclusionRules(max_failed_attention_checks=1)
    assert exclusion.participant_reason(rules, [True, False]) is None
    assert exclusion.participant_reason(rules, [False, False]) == "failed 2 attention checks (at most 1 allowed)"


def test_steps_put_attention_checks_between_problems():
    definition = make_definition(problems_per_participant=3)
    challenges = {"a": "planning", "b": "mfp", "c": "planning"}
    steps = [(stage.name, arg) for stage, arg in build_steps(definition, ["a", "b", "c"], challenges)]
    assert steps == [("consent", None), ("screening", None), ("instructions", None), ("tutorial", "mfp"),
                     ("tutorial", "planning"), ("quiz", None), ("task", 0), ("attention", 0), ("task", 1),
                     ("attention", 1), ("task", 2), ("debrief", None)]


def test_stage_parameters_are_declared_and_typed():
    assert Quiz().values == {"tries": 2}
    with pytest.raises(TypeError, match="parameter 'tries' expects int, got '2'"):
        Quiz(tries="2")
    with pytest.raises(TypeError, match="stage 'consent' has no parameter 'colour'"):
        Consent(colour="red")
    assert isinstance(Quiz(), Stage) and Quiz().template == "consent/quiz.html"


def test_quiz_gives_two_tries_then_screens_out():
    state = FlowState(make_definition(), 1, ["p"], {"p": "planning"})
    stage = Quiz(tries=2)
    wrong = stage.simulate(state, "fail")
    assert stage.evaluate(state, wrong).status == "retry"
    state.tries = 1
    outcome = stage.evaluate(state, wrong)
    assert (outcome.status, outcome.record["passed"], outcome.record["tries"]) == ("failed-quiz", False, 2)
    assert stage.evaluate(state, stage.simulate(state)).record == {"stage": "quiz", "passed": True, "tries": 2}


def test_the_quiz_names_wrong_answers_and_charges_no_try_for_unanswered_ones():
    state = FlowState(make_definition(), 1, ["p"], {"p": "planning"})
    stage = Quiz(tries=2)
    empty = stage.evaluate(state, {})
    assert (empty.status, empty.costs_try) == ("retry", False)
    assert "not answered yet" in empty.error and "did not use a try" in empty.error
    partly = stage.evaluate(state, {"tick": "1"})
    assert (partly.status, partly.costs_try) == ("retry", False)
    answers = stage.simulate(state)
    answers["reset"] = "0"  # one wrong answer
    wrong = stage.evaluate(state, answers)
    assert (wrong.status, wrong.costs_try) == ("retry", True)
    assert "What does the Reset button do?" in wrong.error
    assert "When does the test start?" not in wrong.error
