"""What a task-DAG map shows: the observation sentence for models, the frame for people.

The sentence follows 000 App. C.3 / D / E: position, what was found (a node's
prerequisites, its state and the nodes it leads to), the admissible directions and the
steps spent. The budget stays hidden. Coordinates are the frame's: ``[x, y]`` with ``y``
growing downwards, so ``up`` is ``y - 1``.

The frame has fog of war: cells never seen are black; visited cells are white, known
but unvisited traversable cells (the frontier) grey, obstacles seen beside a visited
cell brown; discovered nodes are coloured by state, the agent blue.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tasks.core import Frame
from tasks.dagmap.model import Cell, DagMap
from tasks.dagmap.progress import ACHIEVED, DISCOVERED, Event, Progress
from tasks.words import count, join_and

HIDDEN, FLOOR, FRONTIER, WALL, AGENT = "black", "white", "dimgray", "saddlebrown", "blue"
NODE_COLOURS = {
    # (is goal, state) -> colour
    (False, "blocked"): "orange",
    (False, "pending"): "yellow",
    (False, "achieved"): "limegreen",
    (True, "blocked"): "red",
    (True, "pending"): "magenta",
    (True, "achieved"): "cyan",
}


def join_or(words: Sequence[str]) -> str:
    """``a``, ``a or b``, ``a, b, or c``.

    >>> join_or(["up", "down", "left"])
    'up, down, or left'
    """
    if len(words) <= 2:
        return " or ".join(words)
    return ", ".join(words[:-1]) + ", or " + words[-1]


def node_state(dagmap: DagMap, progress: Progress, node: str) -> str:
    """``achieved``, ``pending`` (prerequisites met) or ``blocked``."""
    if node in progress.achieved:
        return "achieved"
    return "pending" if progress.prerequisites_met(node) else "blocked"


def node_facts(dagmap: DagMap, progress: Progress, node: str, events: Sequence[Event]) -> dict[str, Any]:
    """What the agent learns standing on ``node``: the structured form of the sentence."""
    kinds = {(e.kind, e.node) for e in events}
    return {
        "name": node,
        "new": (DISCOVERED, node) in kinds,
        "goal": node == dagmap.goal,
        "prerequisites": [sorted(option) for option in dagmap.prereq[node]],
        "leads_to": dagmap.children[node],
        "activated": node in progress.achieved,
        "activated_now": (ACHIEVED, node) in kinds,
    }


def describe_prerequisites(options: Sequence[Sequence[str]]) -> str:
    if not options:
        return "It has no prerequisites."
    sets = [join_and(list(option)) for option in options]
    return f"To activate it, you need {', or '.join(sets)}."


def describe_node(facts: dict[str, Any]) -> str:
    """The sentences about the node under the agent."""
    name = facts["name"]
    parts = [f"You discovered state {name}." if facts["new"] else f"You found state {name} again."]
    if facts["goal"]:
        parts.append("It is the goal state.")
    parts.append(describe_prerequisites(facts["prerequisites"]))
    if facts["activated_now"]:
        parts.append("It is now activated!")
    elif facts["activated"]:
        parts.append("It is already activated.")
    else:
        parts.append("It is not activated yet: its prerequisites are not met.")
    if facts["leads_to"]:
        parts.append(f"Once it is activated, you can next pursue {join_and(facts['leads_to'])}.")
    return " ".join(parts)


def observation_text(
    position: Cell,
    directions: Sequence[str],
    steps: int,
    facts: dict[str, Any] | None,
    blocked: str | None = None,
    ending: str | None = None,
) -> str:
    """The observation sentence (``blocked`` names a direction just refused by a wall)."""
    parts = ["OBSERVATION:"]
    if blocked is not None:
        parts.append(f"You cannot move {blocked}: something blocks the way.")
    parts.append(f"You are at [{position[0]}, {position[1]}].")
    parts.append(describe_node(facts) if facts else "You found nothing here.")
    if ending:
        parts.append(ending)
    parts.append(f"Your available action is {join_or(list(directions))}.")
    parts.append(f"You spent {count(steps, 'step')}.")
    return " ".join(parts)


def labels(dagmap: DagMap, progress: Progress) -> list[dict[str, Any]]:
    """Discovered nodes for clients that draw names: name, cell, state, goal flag."""
    return [
        {
            "name": node,
            "cell": list(dagmap.nodes[node]),
            "state": node_state(dagmap, progress, node),
            "goal": node == dagmap.goal,
        }
        for node in sorted(progress.discovered)
    ]


def render_frame(dagmap: DagMap, progress: Progress) -> Frame:
    """The fog-of-war frame, ``frame[y][x]``."""
    frame = [[HIDDEN] * dagmap.width for _ in range(dagmap.height)]
    layers = (
        (progress.frontier, FRONTIER),
        (progress.visited, FLOOR),
        (progress.walls, WALL),
    )
    for cells, colour in layers:
        for x, y in cells:
            frame[y][x] = colour
    for node in progress.discovered:
        x, y = dagmap.nodes[node]
        frame[y][x] = NODE_COLOURS[(node == dagmap.goal, node_state(dagmap, progress, node))]
    x, y = progress.position
    frame[y][x] = AGENT
    return frame
