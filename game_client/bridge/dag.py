"""Turns for task-DAG maps (000 App. C.3): the observation sentence, JSON replies, and
with the harness of App. D the structured memory summary after it.

The prompt wording and the summary belong to the maps (:mod:`tasks.dagmap.prompts`,
:mod:`tasks.dagmap.summary`); this module only puts them into turns.
"""

from __future__ import annotations

from typing import Any

from tasks.dagmap.prompts import VARIANTS, system_prompt
from tasks.dagmap.summary import memory_summary


class DagPrompter:
    """The system prompt and the user message of each turn on one map."""

    def __init__(self, variant: str = "base", summary: bool = False) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"unknown prompt variant {variant!r}; expected one of {', '.join(VARIANTS)}")
        self.variant = variant
        self.summary = summary
        self.infos: list[dict[str, Any]] = []
        self.rendered: int | None = None

    def system_prompt(self) -> str:
        return system_prompt(self.variant, harness=self.summary)

    def turn(self, turn: Any) -> str:
        """The observation sentence (after the reason a reply was refused, if one was),
        then the memory summary when the harness is on."""
        if turn.error is None and turn.state.get("info") and turn.index != self.rendered:
            self.infos.append(turn.state["info"])
        self.rendered = turn.index  # a turn rendered again (to fit the context) adds nothing
        parts = []
        if turn.error:
            parts.append(f"Your previous reply was not applied, and you did not move: {turn.error}")
        parts.append(turn.state["text"])
        if self.summary and self.infos:
            parts.append(memory_summary(self.infos))
        return "\n".join(parts)
