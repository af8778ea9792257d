"""The stages of the participant flow, declared jsPsych-style.

Each stage declares its parameters (name, type, default), turns a submitted form into an
:class:`Outcome` that carries exactly one data record when the stage finishes, and has a
``simulate`` mode that writes the form a participant would send (``pass`` or ``fail``),
so that bots walk the whole flow in tests without knowing any answers themselves.

Stages are pure: everything they need from the database arrives in a :class:`FlowState`
(for example whether the episode of the current problem is over), and the blueprint in
:mod:`consent.views` stores what they return. What finishing a stage does beyond its
record, each stage declares (:attr:`Stage.effects`: screening reserves problems, a task
judges its episode, an attention check judges the participant), as it declares whether a
failed submission counts as a try (the quiz) and which game its page plays; the flow
(:mod:`study_server.flow`) carries the effects out. The study file sets the order of
the flow's parts (``stages``, :data:`consent.definition.STAGE_ORDER`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from consent import attention, quiz, screening
from consent.definition import StudyDefinition

CONTINUE, RETRY, DECLINED, SCREENED_OUT = "continue", "retry", "declined", "screened-out"
FAILED_QUIZ = "failed-quiz"
RESERVES_PROBLEMS, JUDGES_EPISODE, JUDGES_PARTICIPANT = (
    "reserves-problems", "judges-episode", "judges-participant")
"""Effects a stage may declare: reserve the participant's problems, decide whether the
episode just played counts (exclusion rules), decide whether the participant counts."""
PLAYS_TASK, PLAYS_TUTORIAL = "task", "tutorial"
"""The game a stage's page plays: the assigned problem at the step's position, or the
practice problem of the step's challenge."""


@dataclass(frozen=True)
class Param:
    name: str
    type: type
    default: Any
    doc: str = ""


@dataclass
class FlowState:
    """What a stage may know about the participant and the study."""

    definition: StudyDefinition
    participant_id: int
    assignment: list[str]
    challenges: dict[str, str]
    """Problem id -> challenge, for the assigned problems and the tutorials."""
    palette: list[str] = field(default_factory=list)
    argument: Any = None
    """The step's argument: the tutorial's challenge, the task's or check's position."""
    episode_done: bool = False
    tries: int = 0
    """Earlier failed tries of this stage (the quiz)."""


@dataclass
class Outcome:
    status: str
    record: dict | None = None
    """The stage's one record; ``None`` while it is not finished (a retry)."""
    error: str | None = None
    costs_try: bool = True
    """For a retry of a stage that counts tries: whether this one used a try (a form
    sent with questions left unanswered does not)."""


class Stage:
    """Base class: override ``params``, ``context``, ``evaluate`` and ``simulate``."""

    name: ClassVar[str] = ""
    params: ClassVar[tuple[Param, ...]] = ()
    effects: ClassVar[tuple[str, ...]] = ()
    """What finishing this stage does beyond storing its record."""
    counts_tries: ClassVar[bool] = False
    """A submission sent back for another try counts as a failed try."""
    plays: ClassVar[str | None] = None
    """The game played on this stage's page (``PLAYS_TASK``, ``PLAYS_TUTORIAL``)."""

    def __init__(self, **values: Any) -> None:
        known = {p.name: p for p in self.params}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise TypeError(f"stage {self.name!r} has no parameter {unknown[0]!r}; it has {sorted(known)}")
        for name, value in values.items():
            if not isinstance(value, known[name].type):
                raise TypeError(
                    f"stage {self.name!r}: parameter {name!r} expects {known[name].type.__name__}, "
                    f"got {value!r}"
                )
        self.values = {p.name: values.get(p.name, p.default) for p in self.params}

    @property
    def template(self) -> str:
        return f"consent/{self.name}.html"

    def context(self, state: FlowState) -> dict[str, Any]:
        return {}

    def evaluate(self, state: FlowState, form: Mapping[str, str]) -> Outcome:
        return Outcome(CONTINUE, self.record())

    def simulate(self, state: FlowState, behaviour: str = "pass") -> dict[str, str]:
        return {}

    def record(self, **data: Any) -> dict[str, Any]:
        return {"stage": self.name, **data}


class Consent(Stage):
    name = "consent"
    params = (Param("version", str, "", "consent text version stored with the answer"), Param("text", str, ""))

    def context(self, state: FlowState) -> dict[str, Any]:
        d = state.definition
        return {"version": self.values["version"], "text": self.values["text"],
                "payment": d.payment, "minutes": d.stated_minutes}

    def evaluate(self, state: FlowState, form: Mapping[str, str]) -> Outcome:
        choice = form.get("choice")
        if choice not in ("agree", "decline"):
            return Outcome(RETRY, error="Please choose whether you agree to take part.")
        record = self.record(version=self.values["version"], agreed=choice == "agree")
        return Outcome(CONTINUE if choice == "agree" else DECLINED, record)

    def simulate(self, state: FlowState, behaviour: str = "pass") -> dict[str, str]:
        return {"choice": "agree" if behaviour == "pass" else "decline"}


class Screening(Stage):
    name = "screening"
    effects = (RESERVES_PROBLEMS,)
    params = (Param("items", int, 6), Param("min_correct", int, 5))

    def items(self, state: FlowState) -> list[screening.ScreeningItem]:
        return screening.make_items(state.palette, self.values["items"], seed=state.participant_id)

    def context(self, state: FlowState) -> dict[str, Any]:
        return {"items": self.items(state)}

    def evaluate(self, state: FlowState, form: Mapping[str, str]) -> Outcome:
        items = self.items(state)
        answers = [form.get(f"item-{i}") for i in range(len(items))]
        if any(answer is None for answer in answers):
            return Outcome(RETRY, error="Please answer every question.")
        correct = screening.score(items, answers)
        record = self.record(correct=correct, of=len(items), answers=answers,
                             items=[item.to_dict() for item in items])
        return Outcome(CONTINUE if correct >= self.values["min_correct"] else SCREENED_OUT, record)

    def simulate(self, state: FlowState, behaviour: str = "pass") -> dict[str, str]:
        items = self.items(state)
        pick = (lambda it: it.answer) if behaviour == "pass" else (
            lambda it: (it.answer + 1) % screening.CELLS)
        return {f"item-{i}": str(pick(item)) for i, item in enumerate(items)}


class Instructions(Stage):
    name = "instructions"

    def context(self, state: FlowState) -> dict[str, Any]:
        kinds = sorted({state.challenges[p] for p in state.assignment})
        return {"challenges": kinds, "count": len(state.assignment)}


class Tutorial(Stage):
    """A practice problem of one task type, played in the real-time client."""

    name = "tutorial"
    plays = PLAYS_TUTORIAL

    def evaluate(self, state: FlowState, form: Mapping[str, str]) -> Outcome:
        if not state.episode_done:
            return Outcome(RETRY, error="Please finish the practice problem first (go to the test and complete it).")
        return Outcome(CONTINUE, self.record(challenge=state.argument))


class Quiz(Stage):
    name = "quiz"
    params = (Param("tries", int, 2),)
    counts_tries = True

    def questions(self, state: FlowState) -> list[quiz.Question]:
        return quiz.questions_for(state.challenges[p] for p in state.assignment)

    def context(self, state: FlowState) -> dict[str, Any]:
        kinds = sorted({state.challenges[p] for p in state.assignment})
        return {"questions": self.questions(state), "tries_left": self.values["tries"] - state.tries,
                "challenges": kinds, "count": len(state.assignment)}

    def evaluate(self, state: FlowState, form: Mapping[str, str]) -> Outcome:
        questions = self.questions(state)
        unanswered = [q for q in questions if not form.get(q.id)]
        if unanswered:
            return Outcome(RETRY, costs_try=False, error=(
                f"Please answer every question ({len(unanswered)} not answered yet); "
                "this did not use a try."))
        wrong = quiz.grade(questions, form)
        tries = state.tries + 1
        if not wrong:
            return Outcome(CONTINUE, self.record(passed=True, tries=tries))
        if tries >= self.values["tries"]:
            return Outcome(FAILED_QUIZ, self.record(passed=False, tries=tries, wrong=wrong))
        texts = {q.id: q.text for q in questions}
        return Outcome(RETRY, error="Not right yet: " + "; ".join(
            f"“{texts[w]}”" for w in wrong) + ". The instructions on this page explain it; "
            "please read them again and answer once more.")

    def simulate(self, state: FlowState, behaviour: str = "pass") -> dict[str, str]:
        answers = quiz.right_answers(self.questions(state))
        if behaviour != "pass":
            answers = {k: str((int(v) + 1) % 3) for k, v in answers.items()}
        return answers


class Task(Stage):
    """One assigned problem, played in the real-time client."""

    name = "task"
    effects = (JUDGES_EPISODE,)
    plays = PLAYS_TASK

    def evaluate(self, state: FlowState, form: Mapping[str, str]) -> Outcome:
        if not state.episode_done:
            return Outcome(RETRY, error="This problem is not finished yet.")
        return Outcome(CONTINUE, self.record(position=state.argument, problem_id=state.assignment[state.argument]))


class Attention(Stage):
    name = "attention"
    effects = (JUDGES_PARTICIPANT,)

    def check(self, state: FlowState) -> attention.AttentionCheck:
        return attention.make_check(state.participant_id * 1000 + int(state.argument))

    def context(self, state: FlowState) -> dict[str, Any]:
        return {"check": self.check(state)}

    def evaluate(self, state: FlowState, form: Mapping[str, str]) -> Outcome:
        choice = form.get("choice")
        if choice is None:
            return Outcome(RETRY, error="Please choose one answer.")
        ok = attention.passed(self.check(state), choice)
        return Outcome(CONTINUE, self.record(position=state.argument, choice=choice, passed=ok))

    def simulate(self, state: FlowState, behaviour: str = "pass") -> dict[str, str]:
        check = self.check(state)
        return {"choice": check.answer if behaviour == "pass" else next(c for c in check.choices if c != check.answer)}


class Debrief(Stage):
    name = "debrief"
    params = (Param("feedback_chars", int, 2000, "longest feedback kept"),)

    def evaluate(self, state: FlowState, form: Mapping[str, str]) -> Outcome:
        feedback = (form.get("feedback") or "").strip()[: self.values["feedback_chars"]]
        return Outcome(CONTINUE, self.record(feedback=feedback))

    def simulate(self, state: FlowState, behaviour: str = "pass") -> dict[str, str]:
        return {"feedback": "Fun <b>grids</b> & puzzles"}


Steps = list[tuple[Stage, Any]]


def build_steps(definition: StudyDefinition, assignment: list[str], challenges: Mapping[str, str]) -> Steps:
    """The participant's whole flow as (stage, argument) pairs, in the study's order."""
    steps: Steps = []
    for part in definition.stages:
        steps += PARTS[part](definition, assignment, challenges)
    return steps


def _tasks(definition: StudyDefinition, assignment: list[str], challenges: Mapping[str, str]) -> Steps:
    """Each assigned problem, with an attention check between two problems."""
    steps: Steps = []
    for position in range(len(assignment)):
        if position and definition.attention_checks:
            steps.append((Attention(), position - 1))
        steps.append((Task(), position))
    return steps


PARTS = {
    "consent": lambda d, a, c: [(Consent(version=d.consent_version, text=d.consent_text), None)],
    "screening": lambda d, a, c: [(Screening(items=d.screening_items, min_correct=d.screening_min_correct), None)],
    "instructions": lambda d, a, c: [(Instructions(), None)],
    "tutorials": lambda d, a, c: [(Tutorial(), kind) for kind in sorted({c[p] for p in a})],
    "quiz": lambda d, a, c: [(Quiz(tries=d.quiz_tries), None)],
    "tasks": _tasks,
    "debrief": lambda d, a, c: [(Debrief(), None)],
}
"""How each part of :data:`consent.definition.STAGE_ORDER` unfolds into steps."""
