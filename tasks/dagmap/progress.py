"""What an agent has found and done on a map: visited cells, frontier, node states.

The environment and the exploration/exploitation metric both keep one of these, so they
agree on every rule (000 App. B, Eq. 2-5):

* a cell is *observed* once visited; the *frontier* (unobserved cells) holds the
  traversable neighbours of observed cells that are not observed themselves;
* a node is *discovered* once its cell is visited, and *achieved* the first time the
  agent stands on it with its prerequisites met (every parent of at least one set
  achieved; a primitive node needs nothing), which may be on discovery;
* a node is *pending* when discovered, not achieved, and its prerequisites are met.
"""

from __future__ import annotations

from dataclasses import dataclass

from tasks.dagmap.model import Cell, DagMap, adjacent

NEW_CELL, DISCOVERED, ACHIEVED = "new_cell", "discovered", "achieved"


@dataclass(frozen=True)
class Event:
    """Something a move brought about: a new cell entered, a node discovered or achieved.
    ``new_cell`` and ``achieved`` are the progress events of the metric."""

    kind: str
    cell: Cell
    node: str | None = None

    def to_dict(self) -> dict:
        out = {"kind": self.kind, "cell": list(self.cell)}
        if self.node is not None:
            out["node"] = self.node
        return out


class Progress:
    """The state of one attempt at a map, advanced one position at a time."""

    def __init__(self, dagmap: DagMap) -> None:
        self.map = dagmap
        self.position = dagmap.start
        self.visited: dict[Cell, None] = {}
        """Observed cells in the order first visited (a dict keeps the order)."""
        self.frontier: set[Cell] = set()
        self.walls: set[Cell] = set()
        """Non-traversable cells beside a visited one: the walls the agent has seen."""
        self.discovered: dict[str, None] = {}
        self.achieved: dict[str, None] = {}
        self.enter(dagmap.start)

    def prerequisites_met(self, node: str) -> bool:
        options = self.map.prereq[node]
        return not options or any(option <= self.achieved.keys() for option in options)

    def pending(self) -> set[str]:
        """Discovered nodes whose prerequisites are met and that are not achieved yet."""
        return {
            node for node in self.discovered
            if node not in self.achieved and self.prerequisites_met(node)
        }

    def targets(self) -> tuple[int, list[Cell]]:
        """The case of 000 Table 1 and its target cells ``T`` (sorted), for now:
        1 nothing pending, ``T`` = frontier (explore); 2 the goal pending, ``T`` = its
        cell; 3 tasks pending and no frontier, ``T`` = the pending cells (exploit);
        4 otherwise, ``T`` = both (either)."""
        pending = self.pending()
        unobserved = sorted(self.frontier)
        if not pending:
            return 1, unobserved
        if self.map.goal in pending:
            return 2, [self.map.nodes[self.map.goal]]
        pending_cells = sorted(self.map.nodes[node] for node in pending)
        if not unobserved:
            return 3, pending_cells
        return 4, unobserved + pending_cells

    @property
    def success(self) -> bool:
        return self.map.goal in self.achieved

    def enter(self, cell: Cell) -> list[Event]:
        """Move the agent to ``cell`` (its current cell for a rejected move) and return
        what happened there."""
        self.position = cell
        events: list[Event] = []
        if cell not in self.visited:
            self.visited[cell] = None
            self.frontier.discard(cell)
            self.frontier.update(c for c in adjacent(cell, self.map.cells) if c not in self.visited)
            self.walls.update(self.map.walls_beside(cell))
            events.append(Event(NEW_CELL, cell))
        node = self.map.node_at.get(cell)
        if node is None:
            return events
        if node not in self.discovered:
            self.discovered[node] = None
            events.append(Event(DISCOVERED, cell, node))
        if node not in self.achieved and self.prerequisites_met(node):
            self.achieved[node] = None
            events.append(Event(ACHIEVED, cell, node))
        return events


def is_progress(events: list[Event]) -> bool:
    """True if the events hold a progress event (a new cell entered or a task achieved)."""
    return any(event.kind in (NEW_CELL, ACHIEVED) for event in events)
