"""What a model remembers between turns: the scratchpad and the conversation window.

The scratchpad (002 App. D.2.2) is kept across every turn whatever the history mode: the
model adds lines in ``<scratchpad_add>`` and removes them in ``<scratchpad_del>``.
The conversation history is ``full`` (every earlier turn, as in the paper), ``last``
(the last ``k`` turns, for the memory-window ablation of 004) or ``none`` (the current
observation only, the other end of the memory index).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from game_client.bridge.parse import scratchpad_edits

HISTORY_MODES = ("full", "last", "none")


@dataclass
class Scratchpad:
    """An ordered set of notes."""

    lines: list[str] = field(default_factory=list)

    def apply(self, reply: str) -> None:
        """Apply a reply's deletions, then its additions (a line is kept once)."""
        adds, dels = scratchpad_edits(reply)
        self.lines = [line for line in self.lines if line not in set(dels)]
        for line in adds:
            if line not in self.lines:
                self.lines.append(line)

    def render(self) -> str:
        if not self.lines:
            return "Your scratchpad is empty."
        return "Your scratchpad:\n" + "\n".join(f"- {line}" for line in self.lines)


@dataclass
class History:
    """Earlier turns as ``(content, reply)`` pairs, and which of them the model sees. A
    turn's content is its user message: text, or a list of parts when the model was also
    shown the frame's picture (kept, so that later requests show it again)."""

    mode: str = "full"
    k: int = 0
    turns: list[tuple[Any, str]] = field(default_factory=list)
    dropped: int = 0
    """Oldest turns left out of every request from now on, to fit the context window."""

    def __post_init__(self) -> None:
        if self.mode not in HISTORY_MODES:
            raise ValueError(f"unknown history mode {self.mode!r}: expected one of {', '.join(HISTORY_MODES)}")
        if self.mode == "last" and self.k < 1:
            raise ValueError("history mode 'last' needs k >= 1 turns")

    def add(self, content: Any, reply: str) -> None:
        self.turns.append((content, reply))

    def trim(self, count: int) -> None:
        """Leave ``count`` more of the oldest shown turns out from now on."""
        shown = len(self.window())
        self.dropped = len(self.turns) - shown + min(count, shown)

    def window(self) -> list[tuple[Any, str]]:
        """The earlier turns shown to the model now, oldest first."""
        if self.mode == "none":
            return []
        first = self.dropped if self.mode == "full" else max(self.dropped, len(self.turns) - self.k)
        return self.turns[first:]

    @property
    def shows_first_turn(self) -> bool:
        """False once the first turn (which holds the task description) scrolled away."""
        window = self.window()
        return bool(window) and window[0] is self.turns[0]

    def messages(self) -> list[dict[str, Any]]:
        out = []
        for content, reply in self.window():
            out += [{"role": "user", "content": content}, {"role": "assistant", "content": reply}]
        return out

    def describe(self) -> str:
        return f"last {self.k}" if self.mode == "last" else self.mode
