"""The comprehension quiz: a few multiple-choice questions on the interface and the task.

Common questions cover the real-time interface every problem shares; one or two more
cover the test of each task type the participant will meet. The quiz is passed only when
every answer is right; the flow allows a fixed number of tries (``quiz_tries``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    choices: tuple[str, ...]
    answer: int
    """Index of the right choice."""


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

BY_CHALLENGE = {
    "mfp": (
        Question(
            "mfp-goal",
            "In the test you watch a recording whose last frames are partly hidden. What do you do?",
            ("Pick the option that fills the hidden cells correctly", "Repaint the grid", "Nothing"),
            0,
        ),
    ),
    "planning": (
        Question(
            "planning-goal",
            "In the test some cells are marked with target colours. What do you do?",
            ("Wait until time runs out", "Act so that the marked cells show their target colours", "Press Reset"),
            1,
        ),
    ),
    "cd": (
        Question(
            "cd-goal",
            "In the test the world's rules may change at some moment. What do you do?",
            (
                "Press Found change as soon as you notice it, then pick the frame where it began",
                "Press Reset when it changes",
                "Keep playing until the end whatever happens",
            ),
            0,
        ),
    ),
    "explore": (
        Question(
            "explore-goal",
            "What is the goal of an exploration map?",
            ("Reach the goal within the step budget", "Paint every cell", "Find a hidden change"),
            0,
        ),
    ),
}


def questions_for(challenges: Iterable[str]) -> list[Question]:
    """The common questions plus those of each challenge, in a stable order."""
    out = list(COMMON)
    for challenge in sorted(set(challenges)):
        out.extend(BY_CHALLENGE.get(challenge, ()))
    return out


def grade(questions: Iterable[Question], answers: Mapping[str, str | None]) -> list[str]:
    """Ids of the questions answered wrongly (empty: passed). Answers are choice indices
    as strings, the way an HTML form sends them."""
    return [q.id for q in questions if answers.get(q.id) != str(q.answer)]


def right_answers(questions: Iterable[Question]) -> dict[str, str]:
    """The form a participant who understood would send (the simulate mode)."""
    return {q.id: str(q.answer) for q in questions}
