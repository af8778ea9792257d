"""The study definition: one YAML file a researcher writes, validated field by field.

Every mistake is reported with the field's dotted path and what was expected, so that
``gridstudy study create study.yaml`` tells the researcher exactly what to fix::

    study.yaml: problems_per_participant: expected a positive integer, got 'two'

A minimal file::

    id: pilot-1
    title: Grid worlds
    problems: [autumn/ants-mfp-0, autumn/ants-planning-0]
    problems_per_participant: 2
    completion_code: C1A2B3
    screenout_code: S9Z8Y7
    consent: {version: "2026-01", text: "You are invited to ..."}

Everything else has a default (see :class:`StudyDefinition`), among them what a
completed but excluded participant is paid (``study_server.payments``)::

    on_exclusion: approve_without_bonus   # or: reject (with Prolific's rejection category)
    attention_failure: continue           # or: end (the visit ends at the failed check)
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from tasks.words import suggest

_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_CODE = re.compile(r"^[A-Za-z0-9_-]{4,32}$")


ENDINGS = {"complete": "completed", "declined": "no_consent", "screened-out": "screened_out",
           "failed-quiz": "failed_quiz", "timed-out": "timed_out", "full": "study_full",
           "paused": "study_closed", "closed": "study_closed", "wrong-device": "wrong_device",
           "failed-attention": "failed_attention", "slow-connection": "slow_connection"}
"""Participant status (or a study's status, for a turned-away arrival) -> the name of its
ending in the study file's ``codes:``."""

STAGE_ORDER = ("consent", "screening", "instructions", "tutorials", "quiz", "tasks", "debrief")
"""The parts of the participant flow, in their default order. ``tutorials`` is one
practice problem per task type, ``tasks`` the assigned problems with the attention checks
between them."""
REQUIRED_STAGES = ("consent", "screening", "tasks")
AFTER_SCREENING = ("instructions", "tutorials", "quiz", "tasks")
"""Parts that show the assigned problems, which screening reserves."""


ON_EXCLUSION = ("approve_without_bonus", "reject")
"""The study file's ``on_exclusion`` choices, the default first."""
ATTENTION_FAILURE = ("continue", "end")
"""The study file's ``attention_failure`` choices, the default first."""
PLAY = ("server", "browser")
"""The study file's ``play`` choices, the default first."""


class DefinitionError(ValueError):
    """A study definition that cannot be used; the message names the field."""


@dataclass(frozen=True)
class ExclusionRules:
    """When an attempt or a participant is left out of aggregation.

    ``max_failed_attention_checks``: a participant failing more is excluded (all their
    attempts). ``min_input_actions``: an attempt with fewer key presses or clicks is
    excluded as not engaged, unless it solved the problem (efficiency is not
    disengagement). ``max_idle_seconds``: an attempt idle longer than this
    (no input at all) is excluded.

    From the browser's data-quality signals (:mod:`consent.quality`), each off unless the
    study file sets it: ``max_hidden_seconds``, an attempt whose tab was hidden longer in
    all; ``max_focus_losses``, an attempt whose window lost focus more often;
    ``max_mashing``, an attempt with more bursts of key-mashing. None of these judges how
    few actions a solver needed.
    """

    max_failed_attention_checks: int = 0
    min_input_actions: int = 1
    max_idle_seconds: float = 120.0
    max_hidden_seconds: float | None = None
    max_focus_losses: int | None = None
    max_mashing: int | None = None
    exclude_unverified: bool = True
    """An attempt played in the browser whose frames the server's replay did not
    reproduce (``info.verified`` false) is excluded; the study file may say ``false`` to
    keep such attempts (they stay flagged)."""


@dataclass(frozen=True)
class BonusRule:
    """A bonus of ``per_solved`` for each assigned problem the participant solved (score
    1; tutorials do not count), at most ``max`` in all (None: no cap), in the currency
    of ``payment``. ``gridstudy payments`` writes it in Prolific's bulk-bonus format."""

    per_solved: float = 0.0
    max: float | None = None

    def amount(self, solved: int) -> float:
        value = self.per_solved * solved
        return round(value if self.max is None else min(value, self.max), 2)


@dataclass(frozen=True)
class StudyDefinition:
    """A validated study; ``to_dict()`` is what the ``study`` table stores."""

    id: str
    title: str
    problems: tuple[str, ...]
    problems_per_participant: int
    completion_code: str
    screenout_code: str
    consent_version: str
    consent_text: str
    attempts_per_problem: int = 20
    time_limit_minutes: float = 60.0
    abandon_timeout_minutes: float = 10.0
    payment: str = ""
    expected_minutes: float = 30.0
    description: str = ""
    tutorials: dict[str, str] = field(default_factory=dict)
    """Challenge -> tutorial problem id (a practice problem that is not in the study);
    ``gridstudy study create`` requires one for every task type among the problems."""
    screening_items: int = 6
    screening_min_correct: int = 5
    quiz_tries: int = 2
    attention_checks: bool = True
    exclusion: ExclusionRules = field(default_factory=ExclusionRules)
    stages: tuple[str, ...] = STAGE_ORDER
    """The order of the flow's parts (:data:`STAGE_ORDER` names them): consent first,
    screening before every part that shows the assigned problems; instructions,
    tutorials, quiz and debrief may be left out."""
    bonus: BonusRule = field(default_factory=BonusRule)
    on_exclusion: str = "approve_without_bonus"
    """The payment decision for a participant who completed but is excluded (by a rule,
    the attention checks among them, or by hand): ``approve_without_bonus`` (approved,
    no bonus) or ``reject`` (with the reason and Prolific's rejection category;
    ``study_server.payments``)."""
    attention_failure: str = "continue"
    """When a participant fails more attention checks than ``exclusion`` allows:
    ``continue`` (they play on, excluded, to the completion code) or ``end`` (the visit
    ends there with its own ending, ``failed_attention`` in ``codes``); either way the
    payment is ``on_exclusion``'s."""
    play: str = "server"
    """Where the games tick: ``server`` (the server ticks them and streams each frame) or
    ``browser`` (the participant's page ticks the same engine under Pyodide and sends its
    play log; the server replays it, keeps the record and checks every frame:
    ``study_server/browser_play.py``). A browser that cannot load the engine plays that
    game from the server, and the attempt's ``info.fallback`` says why."""
    max_round_trip_ms: float | None = None
    """The slowest connection the study accepts: a participant whose round trip to the
    server stays above this many milliseconds (the median of the last ten clock pings,
    judged once a round of pings is complete) is told so and leaves with the
    ``slow_connection`` ending, asked to return the submission (Interactive Gym's
    per-scene ping limit); None: any connection."""
    codes: dict[str, str] = field(default_factory=dict)
    """Ending (:data:`ENDINGS`) -> the Prolific code for it, where the study file sets
    one; an ending without one gets ``completion_code`` (completed) or
    ``screenout_code`` (every other)."""

    def code_for(self, status: str) -> str:
        """The Prolific code a participant whose visit ended with ``status`` (a
        participant status, or ``paused``/``closed`` for a turned-away arrival) is given."""
        ending = ENDINGS.get(status, "screened_out")
        default = self.completion_code if ending == "completed" else self.screenout_code
        return self.codes.get(ending, default)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["problems"] = list(self.problems)
        return data

    @property
    def payment_cents(self) -> int | None:
        """What ``payment`` promises, in the currency's smallest unit (``"GBP 4.50"``:
        450), or None when it names no amount ("£9 an hour, pro rata")."""
        found = _named_amount(self.payment)
        return None if found is None else int(Decimal(found["amount"]) * 100)

    @property
    def currency(self) -> str:
        """The currency ``payment`` names with its amount (``GBP``, ``£``), which bonuses
        are paid in; empty when it names none."""
        found = _named_amount(self.payment)
        return (found["before"] or found["after"] or "") if found else ""

    @property
    def stated_minutes(self) -> int:
        """``expected_minutes`` as the consent page states it: whole, halves rounded up."""
        return math.floor(self.expected_minutes + 0.5)

    @property
    def time_limit_seconds(self) -> float:
        return self.time_limit_minutes * 60.0

    @property
    def abandon_timeout_seconds(self) -> float:
        return self.abandon_timeout_minutes * 60.0


def load_definition(path: str | Path, known_problems: set[str] | None = None) -> StudyDefinition:
    """Read and validate a study file; errors start with the file's name."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DefinitionError(f"{path}: no such file") from None
    except UnicodeDecodeError as error:
        raise DefinitionError(f"{path}: not UTF-8 text (byte {error.start}); save it as UTF-8") from None
    except yaml.YAMLError as error:
        raise DefinitionError(f"{path}: not valid YAML ({error})") from None
    try:
        return parse_definition(data, known_problems)
    except DefinitionError as error:
        raise DefinitionError(f"{path}: {error}") from None


def parse_definition(data: Any, known_problems: set[str] | None = None, *,
                     stored: bool = False) -> StudyDefinition:
    """Validate a mapping (from YAML or from the database) into a definition.

    ``known_problems``, when given, is the set of registered problem ids every listed
    problem (and tutorial) must belong to. ``stored``: the mapping is a study row, which
    an earlier version validated; a rule added since (the payment's amount) does not
    make a running study unreadable.
    """
    if not isinstance(data, dict):
        raise DefinitionError(f"expected a mapping of fields, got {_kind(data)}")
    fields = StudyDefinition.__dataclass_fields__
    unknown = sorted(set(data) - set(fields) - {"consent"})
    if unknown:
        raise DefinitionError(f"unknown field {unknown[0]!r}{suggest(unknown[0], fields)}; "
                              f"known fields: {', '.join(_public_fields())}")
    consent = _consent(data)
    values = {
        "id": _slug(data, "id"),
        "title": _text(data, "title", required=False, default=""),
        "problems": _problems(data, known_problems),
        "problems_per_participant": _positive_int(data, "problems_per_participant"),
        "completion_code": _code(data, "completion_code"),
        "screenout_code": _code(data, "screenout_code"),
        "consent_version": consent["version"],
        "consent_text": consent["text"],
        "attempts_per_problem": _positive_int(data, "attempts_per_problem", 20),
        "time_limit_minutes": _positive_number(data, "time_limit_minutes", 60.0),
        "abandon_timeout_minutes": _positive_number(data, "abandon_timeout_minutes", 10.0),
        "payment": _payment(data, checked=not stored),
        "expected_minutes": _positive_number(data, "expected_minutes", 30.0),
        "description": _text(data, "description", required=False, default=""),
        "tutorials": _tutorials(data, known_problems),
        "screening_items": _positive_int(data, "screening_items", 6),
        "screening_min_correct": _positive_int(data, "screening_min_correct", 5),
        "quiz_tries": _positive_int(data, "quiz_tries", 2),
        "attention_checks": _bool(data, "attention_checks", True),
        "exclusion": _exclusion(data.get("exclusion")),
        "stages": _stages(data.get("stages", STAGE_ORDER)),
        "bonus": _bonus(data.get("bonus")),
        "codes": _codes(data.get("codes")),
        "on_exclusion": _one_of(data, "on_exclusion", ON_EXCLUSION),
        "attention_failure": _one_of(data, "attention_failure", ATTENTION_FAILURE),
        "max_round_trip_ms": _optional(_positive_number, data, "max_round_trip_ms"),
        "play": _one_of(data, "play", PLAY),
    }
    return _checked(StudyDefinition(**values))


def _checked(definition: StudyDefinition) -> StudyDefinition:
    if definition.problems_per_participant > len(definition.problems):
        raise DefinitionError(
            f"problems_per_participant: expected at most the number of problems "
            f"({len(definition.problems)}), got {definition.problems_per_participant}"
        )
    if definition.screening_min_correct > definition.screening_items:
        raise DefinitionError(
            f"screening_min_correct: expected at most screening_items "
            f"({definition.screening_items}), got {definition.screening_min_correct}"
        )
    if definition.completion_code == definition.screenout_code:
        raise DefinitionError("screenout_code: expected a code different from completion_code")
    return definition


def _public_fields() -> list[str]:
    hidden = {"consent_version", "consent_text"}
    return sorted({*StudyDefinition.__dataclass_fields__, "consent"} - hidden)


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {value!r}" if value is not None else "nothing"


def _missing(name: str, expected: str) -> DefinitionError:
    return DefinitionError(f"{name}: missing; expected {expected}")


def _slug(data: dict, name: str) -> str:
    value = data.get(name)
    if value is None:
        raise _missing(name, "a short slug such as 'pilot-1'")
    if not isinstance(value, str) or not _SLUG.match(value):
        raise DefinitionError(
            f"{name}: expected a slug of lower-case letters, digits, '-' or '_' (at most 63), "
            f"got {value!r}"
        )
    return value


def _code(data: dict, name: str) -> str:
    value = data.get(name)
    if value is None:
        raise _missing(name, "the Prolific code (4-32 letters or digits)")
    if not isinstance(value, str | int) or not _CODE.match(str(value)):
        raise DefinitionError(f"{name}: expected 4-32 letters or digits, got {value!r}")
    return str(value)


def _text(data: dict, name: str, *, required: bool = True, default: str = "") -> str:
    value = data.get(name)
    if value is None:
        if required:
            raise _missing(name, "a text")
        return default
    if not isinstance(value, str | int | float):
        raise DefinitionError(f"{name}: expected a text, got {_kind(value)}")
    return str(value)


_AMOUNT = re.compile(r"(?:(?P<before>[A-Z]{3}|[£$€]) ?)?(?P<amount>-?\d+(?:\.\d+)?)"
                     r"(?: ?(?P<after>[A-Z]{3}))?")
"""A payment that names an amount: ``GBP 4.50``, ``£4.50``, ``4.50 GBP``, ``4.50``."""


def _named_amount(text: str) -> re.Match[str] | None:
    """The payment's currency and amount (:data:`_AMOUNT`), or None when it names none."""
    return _AMOUNT.fullmatch(text.strip())


def _payment(data: dict, checked: bool = True) -> str:
    """The payment the consent page states; an amount in it is what ``gridstudy prolific
    publish`` pays, so it must be one a participant can be paid."""
    text = _text(data, "payment", required=False, default="")
    found = _named_amount(text)
    amount = None if found is None else Decimal(found["amount"])
    if checked and amount is not None and (
            amount < 0 or amount != amount.quantize(Decimal("0.01"))):
        raise DefinitionError(f"payment: {text!r} is not an amount a participant can be paid: "
                              "give the currency and an amount of 0 or more, to the cent "
                              '(e.g. "GBP 4.50")')
    return text


def _positive_int(data: dict, name: str, default: int | None = None) -> int:
    value = data.get(name, default)
    if value is None:
        raise _missing(name, "a positive integer")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DefinitionError(f"{name}: expected a positive integer, got {value!r}")
    return value


def _non_negative_int(data: dict, name: str, default: int) -> int:
    value = data.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DefinitionError(f"{name}: expected an integer >= 0, got {value!r}")
    return value


def is_number(value: Any) -> bool:
    """Whether ``value`` is a number a study can use: finite, not true or false (YAML reads
    ``.inf`` and ``.nan``; Python's JSON parser ``Infinity`` and ``NaN``). The record's own
    rule is ``records.schema.is_number``, which this room may not import.

    >>> [is_number(v) for v in (0.5, 3, float("inf"), float("nan"), True)]
    [True, True, False, False, False]
    """
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


def _positive_number(data: dict, name: str, default: float) -> float:
    """A finite number above 0 (YAML reads ``.inf`` and ``.nan``: stored, such a time limit
    never passed)."""
    value = data.get(name, default)
    if not is_number(value) or value <= 0:
        raise DefinitionError(f"{name}: expected a positive number, got {value!r}")
    return float(value)


def _optional(check: Any, data: dict, name: str) -> Any:
    """``check``'s value of ``name``, or None when the file leaves it out (or null)."""
    return None if data.get(name) is None else check(data, name, 0)


def _one_of(data: dict, name: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (the first when the field is absent)."""
    value = data.get(name, choices[0])
    if value not in choices:
        raise DefinitionError(f"{name}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def _bool(data: dict, name: str, default: bool) -> bool:
    value = data.get(name, default)
    if not isinstance(value, bool):
        raise DefinitionError(f"{name}: expected true or false, got {value!r}")
    return value


def _problem_id(value: Any, name: str, known: set[str] | None) -> str:
    if not isinstance(value, str) or not value:
        raise DefinitionError(f"{name}: expected a problem id, got {_kind(value)}")
    if known is not None and value not in known:
        raise DefinitionError(
            f"{name}: unknown problem {value!r}{suggest(value, known)}; list them with "
            "'gridstudy problems list'"
        )
    return value


def _problems(data: dict, known: set[str] | None) -> tuple[str, ...]:
    value = data.get("problems")
    if value is None:
        raise _missing("problems", "a list of problem ids")
    if not isinstance(value, list) or not value:
        raise DefinitionError(f"problems: expected a non-empty list of problem ids, got {_kind(value)}")
    ids = tuple(_problem_id(item, f"problems[{i}]", known) for i, item in enumerate(value))
    repeated = sorted({p for p in ids if ids.count(p) > 1})
    if repeated:
        raise DefinitionError(f"problems: expected each problem once, got {repeated[0]!r} twice")
    return ids


def _tutorials(data: dict, known: set[str] | None) -> dict[str, str]:
    value = data.get("tutorials", {})
    if not isinstance(value, dict):
        raise DefinitionError(f"tutorials: expected a mapping challenge -> problem id, got {_kind(value)}")
    return {str(k): _problem_id(v, f"tutorials.{k}", known) for k, v in value.items()}


def _stages(value: Any) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise DefinitionError(f"stages: expected a list of stage names, got {_kind(value)}")
    unknown = [v for v in value if v not in STAGE_ORDER]
    if unknown:
        raise DefinitionError(f"stages: unknown stage {unknown[0]!r}; expected some of {', '.join(STAGE_ORDER)}")
    repeated = sorted({v for v in value if value.count(v) > 1})
    missing = [v for v in REQUIRED_STAGES if v not in value]
    if repeated or missing:
        raise DefinitionError(f"stages: {repeated[0]!r} appears twice" if repeated else
                              f"stages: {missing[0]!r} is required")
    if value[0] != "consent":
        raise DefinitionError(f"stages: consent must come first, not {value[0]!r}")
    early = [v for v in value[: value.index("screening")] if v in AFTER_SCREENING]
    if early:
        raise DefinitionError(f"stages: {early[0]!r} shows the assigned problems, which "
                              "screening reserves: put it after screening")
    return tuple(value)


def _consent(data: dict) -> dict[str, str]:
    value = data.get("consent")
    if value is None:
        raise _missing("consent", "a mapping with 'version' and 'text'")
    if not isinstance(value, dict):
        raise DefinitionError(f"consent: expected a mapping with 'version' and 'text', got {_kind(value)}")
    unknown = sorted(set(value) - {"version", "text"})
    if unknown:
        raise DefinitionError(f"consent.{unknown[0]}: unknown field; expected 'version' and 'text'")
    version = _text(value, "version", required=False)
    text = _text(value, "text", required=False)
    if not version:
        raise _missing("consent.version", "a version label such as '2026-01'")
    if not text.strip():
        raise _missing("consent.text", "the consent text shown to participants")
    return {"version": version, "text": text}


def _exclusion(value: Any) -> ExclusionRules:
    if value is None:
        return ExclusionRules()
    if not isinstance(value, dict):
        raise DefinitionError(f"exclusion: expected a mapping of rules, got {_kind(value)}")
    known = ExclusionRules.__dataclass_fields__
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise DefinitionError(f"exclusion.{unknown[0]}: unknown rule; known: {', '.join(sorted(known))}")
    try:
        return ExclusionRules(
            max_failed_attention_checks=_non_negative_int(value, "max_failed_attention_checks", 0),
            min_input_actions=_non_negative_int(value, "min_input_actions", 1),
            max_idle_seconds=_positive_number(value, "max_idle_seconds", 120.0),
            max_hidden_seconds=_optional(_positive_number, value, "max_hidden_seconds"),
            max_focus_losses=_optional(_non_negative_int, value, "max_focus_losses"),
            max_mashing=_optional(_non_negative_int, value, "max_mashing"),
            exclude_unverified=_bool(value, "exclude_unverified", True),
        )
    except DefinitionError as error:
        raise DefinitionError(f"exclusion.{error}") from None


def _codes(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    names = sorted(set(ENDINGS.values()))
    if not isinstance(value, dict):
        raise DefinitionError(f"codes: expected a mapping of ending -> code, endings: {', '.join(names)}")
    unknown = sorted(set(value) - set(names))
    if unknown:
        raise DefinitionError(f"codes.{unknown[0]}: unknown ending; known: {', '.join(names)}")
    try:
        return {name: _code(value, name) for name in sorted(value)}
    except DefinitionError as error:
        raise DefinitionError(f"codes.{error}") from None


def _bonus(value: Any) -> BonusRule:
    if value is None:
        return BonusRule()
    if not isinstance(value, dict):
        raise DefinitionError(f"bonus: expected a mapping like {{per_solved: 0.10, max: 1.00}}, "
                              f"got {_kind(value)}")
    unknown = sorted(set(value) - set(BonusRule.__dataclass_fields__))
    if unknown:
        raise DefinitionError(f"bonus.{unknown[0]}: unknown; known: per_solved, max")
    amounts = {}
    for name in ("per_solved", "max"):
        amount = value.get(name)
        if amount is None:
            continue
        if not is_number(amount) or amount < 0:
            raise DefinitionError(f"bonus.{name}: expected an amount >= 0, got {amount!r}")
        amounts[name] = float(amount)
    return BonusRule(**amounts)


def from_stored(data: dict[str, Any]) -> StudyDefinition:
    """Rebuild a definition from ``StudyDefinition.to_dict()`` (the ``study`` row)."""
    data = dict(data)
    data["consent"] = {"version": data.pop("consent_version"), "text": data.pop("consent_text")}
    return parse_definition(data, stored=True)
