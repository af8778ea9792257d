"""Attention checks shown between problems: an instruction hidden in ordinary-looking text.

Each check asks for one specific choice among several plausible ones; a participant who
reads picks it, one who clicks through usually does not. Failures do not stop the flow
(that would teach people to game it); they count toward the exclusion rules.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

_WORDS = ("apple", "river", "candle", "window", "pepper", "violin", "garden", "pillow")


@dataclass(frozen=True)
class AttentionCheck:
    prompt: str
    choices: tuple[str, ...]
    answer: str

    def to_dict(self) -> dict:
        return {"prompt": self.prompt, "choices": list(self.choices), "answer": self.answer}


def make_check(seed: int) -> AttentionCheck:
    """One check, the same for the same seed (participant id and position)."""
    rng = random.Random(seed)
    choices = tuple(rng.sample(_WORDS, 4))
    answer = rng.choice(choices)
    prompt = (
        "Before the next problem, a short question about your experience so far. "
        "We want to know that you are reading carefully, so please ignore the question "
        f"below and choose the word \u201c{answer}\u201d."
    )
    return AttentionCheck(prompt, choices, answer)


def passed(check: AttentionCheck, choice: str | None) -> bool:
    return choice == check.answer
