"""The rule-based memory summary of 000 App. D, for the text bridge to inject.

It holds nothing the agent was not told: every line is derived from the observations
received so far (their ``info``, which states in structured form what the sentence
says). The summary only organises it: the coordinate system learnt from moves, the goal
once discovered, visited cells, the frontier (cells seen as passable but not visited),
obstacles (directions refused at a visited cell), each discovered state with its
position, prerequisites and successors, the activated states and the states ready to
activate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tasks.core import Observation
from tasks.dagmap.model import DIRECTIONS, Cell, neighbour
from tasks.words import join_and

AXES = {"up": "y-1", "down": "y+1", "left": "x-1", "right": "x+1"}


class Memory:
    """What the observation history says, accumulated."""

    def __init__(self) -> None:
        self.visited: dict[Cell, None] = {}
        self.passable: set[Cell] = set()
        self.blocked: set[Cell] = set()
        self.learnt: dict[str, Cell] = {}
        self.states: dict[str, dict[str, Any]] = {}
        """Name -> latest facts, with ``cell``; in order of discovery."""
        self.activated: dict[str, None] = {}
        self.last: Cell | None = None

    def add(self, info: Mapping[str, Any]) -> None:
        position = tuple(info["position"])
        if info.get("moved") and self.last is not None:
            self.learnt[info["action"]] = (position[0] - self.last[0], position[1] - self.last[1])
        self.last = position
        self.visited[position] = None
        directions = set(info["directions"])
        for direction in DIRECTIONS:
            other = neighbour(position, direction)
            (self.passable if direction in directions else self.blocked).add(other)
        facts = info.get("node")
        if facts:
            self.states[facts["name"]] = {**facts, "cell": position}
            if facts["activated"]:
                self.activated[facts["name"]] = None

    def ready(self) -> list[str]:
        """Discovered, not activated, with every state of some prerequisite set activated."""
        return [
            name for name, facts in self.states.items()
            if name not in self.activated
            and any(set(option) <= self.activated.keys() for option in facts["prerequisites"])
        ]


def memory_summary(history: Iterable[Observation | Mapping[str, Any]]) -> str:
    """The summary after the observations ``history`` (Observations or their info)."""
    memory = Memory()
    for item in history:
        memory.add(item.info if isinstance(item, Observation) else item)
    return " ".join(part for part in summary_parts(memory) if part)


def summary_parts(memory: Memory) -> list[str]:
    goal = next((name for name, facts in memory.states.items() if facts["goal"]), None)
    frontier = sorted(memory.passable - memory.visited.keys())
    return [
        coordinate_sentence(memory.learnt),
        f"The goal state is {goal}." if goal else "You have not discovered the goal state yet.",
        f"You have visited {cells_text(memory.visited)}.",
        _listing("You have not visited these cells yet, but you know you can pass through them: ", frontier),
        _listing("You know you cannot pass through these cells: ", sorted(memory.blocked)),
        *(state_sentence(name, facts, memory) for name, facts in memory.states.items()),
        f"Activated states: {', '.join(memory.activated) or 'none'}.",
        "The discovered states whose prerequisites are already satisfied: "
        f"{', '.join(memory.ready()) or 'none'}.",
    ]


def coordinate_sentence(learnt: Mapping[str, Cell]) -> str:
    """``From your movements so far, coordinate system: [x, y] where up=y-1, ...``."""
    if not learnt:
        return ""
    rules = [f"{d}={_axis(learnt[d])}" for d in DIRECTIONS if d in learnt]
    return f"From your movements so far, coordinate system: [x, y] where {', '.join(rules)}."


def _axis(delta: Cell) -> str:
    dx, dy = delta
    return f"x{dx:+d}" if dx else f"y{dy:+d}"


def cells_text(cells: Iterable[Cell]) -> str:
    return ", ".join(f"[{x}, {y}]" for x, y in cells)


def _listing(prefix: str, cells: list[Cell]) -> str:
    return prefix + cells_text(cells) + "." if cells else ""


def state_sentence(name: str, facts: Mapping[str, Any], memory: Memory) -> str:
    """One discovered state: where, whether activated, what it needs and leads to."""
    x, y = facts["cell"]
    parts = [f"You discovered {name} at [{x}, {y}]."]
    if name in memory.activated:
        parts.append("It is already activated.")
    else:
        needs = ", or ".join(join_and(option) for option in facts["prerequisites"])
        parts.append(f"It is not activated yet. To activate it, you should activate {needs} first.")
    if facts["leads_to"]:
        parts.append(f"Once it is activated, you can next pursue {join_and(facts['leads_to'])}.")
    return " ".join(parts)
