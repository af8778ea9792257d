"""Study definitions: defaults, round trip through the database, and errors that name the field."""

from __future__ import annotations

import re

import pytest
import yaml

from consent.definition import DefinitionError, from_stored, load_definition, parse_definition
from tests.consent.helpers import definition_data, make_definition


def test_defaults_and_round_trip():
    definition = parse_definition(definition_data(attempts_per_problem=None) | {"attempts_per_problem": 20})
    assert (definition.attempts_per_problem, definition.quiz_tries, definition.time_limit_minutes) == (20, 2, 60.0)
    assert definition.exclusion.max_failed_attention_checks == 0
    assert from_stored(definition.to_dict()) == definition


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"problems_per_participant": "two"}, "problems_per_participant: expected a positive integer, got 'two'"),
        ({"problems_per_participant": 4}, "problems_per_participant: expected at most the number of problems (3), got 4"),
        ({"id": "Pilot 1"}, "id: expected a slug"),
        ({"problems": []}, "problems: expected a non-empty list of problem ids"),
        ({"problems": ["test/p0", "test/p0"]}, "problems: expected each problem once, got 'test/p0' twice"),
        ({"completion_code": "x"}, "completion_code: expected 4-32 letters or digits, got 'x'"),
        ({"screenout_code": "DONE1234"}, "screenout_code: expected a code different from completion_code"),
        ({"consent": {"version": "v1"}}, "consent.text: missing; expected the consent text shown to participants"),
        ({"consent": {"version": "v1", "text": "t", "extra": 1}}, "consent.extra: unknown field"),
        ({"exclusion": {"min_input_actions": -1}}, "exclusion.min_input_actions: expected an integer >= 0, got -1"),
        ({"exclusion": {"max_idle": 3}}, "exclusion.max_idle: unknown rule"),
        ({"time_limit_minutes": 0}, "time_limit_minutes: expected a positive number, got 0"),
        ({"max_round_trip_ms": "fast"}, "max_round_trip_ms: expected a positive number, got 'fast'"),
        ({"max_round_trip_ms": -5}, "max_round_trip_ms: expected a positive number, got -5"),
        ({"time_limit_minutes": float("inf")}, "time_limit_minutes: expected a positive number, got inf"),
        ({"expected_minutes": float("nan")}, "expected_minutes: expected a positive number, got nan"),
        ({"bonus": {"per_solved": float("inf")}}, "bonus.per_solved: expected an amount >= 0, got inf"),
        ({"bonus": {"per_solved": 0.1, "max": float("nan")}}, "bonus.max: expected an amount >= 0, got nan"),
        ({"payment": "GBP -4.50"}, "payment: 'GBP -4.50' is not an amount a participant can be paid"),
        ({"payment": "£4.505"}, "payment: '£4.505' is not an amount a participant can be paid"),
        ({"attention_checks": "yes"}, "attention_checks: expected true or false, got 'yes'"),
        ({"colour": "red"}, "unknown field 'colour'; known fields"),
        ({"problem": ["test/p0"]}, "unknown field 'problem' (did you mean 'problems'?); known"),
        ({"stages": "consent"}, "stages: expected a list of stage names, got str 'consent'"),
        ({"stages": ["consent", "screening", "practice", "tasks"]}, "stages: unknown stage 'practice'"),
        ({"stages": ["screening", "consent", "tasks"]}, "stages: consent must come first, not 'screening'"),
        ({"stages": ["consent", "quiz", "screening", "tasks"]},
         "stages: 'quiz' shows the assigned problems, which screening reserves: put it after screening"),
        ({"stages": ["consent", "screening", "debrief"]}, "stages: 'tasks' is required"),
        ({"stages": ["consent", "screening", "tasks", "tasks"]}, "stages: 'tasks' appears twice"),
    ],
)
def test_errors_name_the_field(change, message):
    with pytest.raises(DefinitionError) as caught:
        parse_definition(definition_data(**change))
    assert message in str(caught.value)


def test_missing_required_field():
    data = definition_data()
    del data["completion_code"]
    with pytest.raises(DefinitionError, match="^completion_code: missing; expected the Prolific code"):
        parse_definition(data)


def test_a_yaml_infinity_or_nan_is_refused_naming_its_field(tmp_path):
    """YAML reads ``.inf`` and ``.nan`` as numbers: stored, such a time limit never
    passed and such a bonus reached the payment files as ``inf``."""
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(definition_data()) + "bonus: {per_solved: .inf}\n")
    with pytest.raises(DefinitionError, match=f"^{path}: bonus.per_solved: expected an amount"):
        load_definition(path)
    path.write_text(yaml.safe_dump(definition_data(time_limit_minutes=1)).replace(
        "time_limit_minutes: 1", "time_limit_minutes: .nan"))
    with pytest.raises(DefinitionError, match="time_limit_minutes: expected a positive number, got nan"):
        load_definition(path)


def test_unknown_problem_is_reported_with_its_index():
    with pytest.raises(DefinitionError, match=r"problems\[2\]: unknown problem 'test/p2' \(did "
                                              r"you mean 'test/p1'\?\); list them with 'gridstudy "
                                              r"problems list'"):
        parse_definition(definition_data(), known_problems={"test/p0", "test/p1", "test/tutorial"})


def test_file_errors_start_with_the_file_name(tmp_path):
    path = tmp_path / "study.yaml"
    path.write_text("id: [unclosed\n")
    with pytest.raises(DefinitionError, match=f"^{path}: not valid YAML"):
        load_definition(path)
    path.write_text("id: pilot\n")
    with pytest.raises(DefinitionError, match=f"^{path}: consent: missing"):
        load_definition(path)


@pytest.mark.parametrize("codes, message", [
    ({"finished": "ABCD1234"}, "codes.finished: unknown ending; known: completed, failed_attention, failed_quiz"),
    ({"completed": "no"}, "codes.completed: expected 4-32 letters or digits, got 'no'"),
    (["ABCD1234"], "codes: expected a mapping of ending -> code"),
])
def test_bad_codes_per_ending_are_refused(codes, message):
    with pytest.raises(DefinitionError, match=re.escape(message)):
        make_definition(codes=codes)


@pytest.mark.parametrize(("payment", "cents", "currency"), [
    ("GBP 4.50", 450, "GBP"), ("£4.5", 450, "£"), ("4.50 GBP", 450, "GBP"), ("USD 12", 1200, "USD"),
    ("4.50", 450, ""), ("£9 an hour, pro rata", None, ""), ("", None, ""),
])
def test_the_payment_is_read_as_the_amount_and_currency_it_names(payment, cents, currency):
    """What Prolific is paid (``payment_cents``) and the currency bonuses are shown in.
    The dashboard and ``gridstudy payments`` took the payment's first word as the currency:
    "4.50 GBP" gave bonuses of "4.50 0.30"."""
    definition = parse_definition(definition_data(payment=payment))
    assert (definition.payment_cents, definition.currency) == (cents, currency)


def test_a_stored_study_checked_by_earlier_rules_still_loads():
    """A study stored before the payment's amount was checked keeps running: its row is
    read, not refused (every page of the study would have failed)."""
    from consent.definition import from_stored

    stored = parse_definition(definition_data()).to_dict()
    stored["payment"] = "GBP -4.50"
    assert from_stored(stored).payment == "GBP -4.50"
