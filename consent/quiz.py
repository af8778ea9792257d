"""The comprehension quiz: a few multiple-choice questions on the interface and the task.

Common questions cover the real-time interface every problem shares; each challenge the
participant will meet adds its own (``Challenge.questions``). The quiz is passed only
when every answer is right; the flow allows a fixed number of tries (``quiz_tries``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tasks.worldtest.challenge import Question, get

COMMON = (
    Question(
        "tick",
        "What happens if you do not press anything for a moment?",
        ("The game waits for me", "The world keeps moving on its own", "The problem ends"),
        1,
    ),
    Question(
        "reset",
        "What does the Reset button do?",
        ("Ends the problem", "Puts the world back to how it started", "Skips to the test"),
        1,
    ),
    Question(
        "go-to-test",
        "When does the test start?",
        ("When I press Go to test", "After exactly one minute", "Right away"),
        0,
    ),
)

def questions_for(challenges: Iterable[str]) -> list[Question]:
    """The common questions plus those of each challenge, in a stable order."""
    out = list(COMMON)
    for name in sorted(set(challenges)):
        out.extend(get(name).questions)
    return out


def grade(questions: Iterable[Question], answers: Mapping[str, str | None]) -> list[str]:
    """Ids of the questions answered wrongly (empty: passed). Answers are choice indices
    as strings, the way an HTML form sends them."""
    return [q.id for q in questions if answers.get(q.id) != str(q.answer)]


def right_answers(questions: Iterable[Question]) -> dict[str, str]:
    """The form a participant who understood would send (the simulate mode)."""
    return {q.id: str(q.answer) for q in questions}
