"""A generated task-DAG map and the geometry every user of one needs.

Cells are ``(x, y)`` with ``x`` the column from the left and ``y`` the row from the top
(the frame contract of ``tasks.core``), so ``up`` is ``y - 1``. Distances are shortest
path lengths over the traversable cells with 4-neighbour moves.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import networkx as nx
    import numpy as np

Cell = tuple[int, int]
DIRECTIONS: dict[str, Cell] = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}
"""Direction name -> (dx, dy); the order is the order directions are listed in text."""

UNREACHABLE = 2**31 - 1
"""The distance between cells with no path (the largest ``int32``)."""


def neighbour(cell: Cell, direction: str) -> Cell:
    """The cell one step from ``cell`` towards ``direction`` (traversable or not)."""
    dx, dy = DIRECTIONS[direction]
    return (cell[0] + dx, cell[1] + dy)


def adjacent(cell: Cell, cells: set[Cell] | frozenset[Cell]) -> Iterable[Cell]:
    """The traversable 4-neighbours of ``cell``, in direction order."""
    for direction in DIRECTIONS:
        other = neighbour(cell, direction)
        if other in cells:
            yield other


def bfs_distances(source: Cell, cells: set[Cell] | frozenset[Cell]) -> dict[Cell, int]:
    """Shortest-path length from ``source`` to every cell it can reach."""
    distances = {source: 0}
    queue = deque([source])
    while queue:
        cell = queue.popleft()
        for other in adjacent(cell, cells):
            if other not in distances:
                distances[other] = distances[cell] + 1
                queue.append(other)
    return distances


@dataclass(frozen=True, eq=False)
class DagMap:
    """One map: traversable cells, start, node cells and the prerequisite structure.

    ``prereq[name]`` lists the node's alternative prerequisite sets (OR across sets, AND
    within one); ``[]`` marks a primitive node, achieved as soon as it is visited.
    ``layers[name]`` is the node's depth in the generator (0 for primitives).
    """

    cells: frozenset[Cell]
    start: Cell
    nodes: dict[str, Cell]
    prereq: dict[str, list[frozenset[str]]]
    goal: str
    budget: int
    width: int
    height: int
    layers: dict[str, int] = field(default_factory=dict)
    seed: int | None = None

    @property
    def size(self) -> tuple[int, int]:
        return (self.width, self.height)

    def walls_beside(self, cell: Cell) -> Iterable[Cell]:
        """The grid's cells beside ``cell`` that are not traversable (the walls seen from it)."""
        for direction in DIRECTIONS:
            x, y = neighbour(cell, direction)
            if 0 <= x < self.width and 0 <= y < self.height and (x, y) not in self.cells:
                yield (x, y)

    @cached_property
    def node_at(self) -> dict[Cell, str]:
        """Cell -> name of the node it holds."""
        return {cell: name for name, cell in self.nodes.items()}

    @cached_property
    def children(self) -> dict[str, list[str]]:
        """Node -> the nodes that list it in some prerequisite set, in name order."""
        out: dict[str, set[str]] = {name: set() for name in self.nodes}
        for child, options in self.prereq.items():
            for option in options:
                for parent in option:
                    out[parent].add(child)
        return {name: sorted(kids) for name, kids in out.items()}

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The task DAG as a networkx graph, edges parent -> child; nodes carry ``cell``,
        ``layer`` and ``options`` (the prerequisite sets)."""
        import networkx as nx

        graph = nx.DiGraph()
        for name, cell in self.nodes.items():
            graph.add_node(name, cell=cell, layer=self.layers.get(name), options=self.prereq[name])
        for child, options in self.prereq.items():
            for option in options:
                graph.add_edges_from((parent, child) for parent in option)
        return graph

    @cached_property
    def cell_index(self) -> dict[Cell, int]:
        """Cell -> row of :attr:`distances` (cells in sorted order)."""
        return {cell: i for i, cell in enumerate(sorted(self.cells))}

    @cached_property
    def distances(self) -> np.ndarray:
        """All-pairs shortest-path lengths, ``distances[i, j]`` for cells of
        :attr:`cell_index`; unreachable pairs hold ``UNREACHABLE``."""
        import numpy as np  # here: a map is played without numpy (in a participant's browser)
        index = self.cell_index
        out = np.full((len(index), len(index)), UNREACHABLE, dtype=np.int32)
        for cell, row in index.items():
            for other, length in bfs_distances(cell, self.cells).items():
                out[row, index[other]] = length
        return out

    def distance(self, a: Cell, b: Cell) -> int:
        """Shortest-path length between two traversable cells."""
        return int(self.distances[self.cell_index[a], self.cell_index[b]])

    def move(self, cell: Cell, direction: str) -> Cell:
        """Where a move from ``cell`` ends: the neighbour, or ``cell`` itself at a wall."""
        other = neighbour(cell, direction)
        return other if other in self.cells else cell

    def directions(self, cell: Cell) -> list[str]:
        """The admissible move directions from ``cell``, in direction order."""
        return [d for d in DIRECTIONS if neighbour(cell, d) in self.cells]

    def follow(self, actions: Iterable[str]) -> list[Cell]:
        """The positions an action sequence visits, starting at :attr:`start`: one
        position per move (a move into a wall repeats the position); ``noop`` is not a
        move and adds nothing. This is the trajectory the exploration metric reads."""
        positions = [self.start]
        for action in actions:
            text = str(action).strip().lower()
            if text == "noop":
                continue
            if text not in DIRECTIONS:
                raise ValueError(f"{text!r} is not a move: expected noop, up, down, left or right")
            positions.append(self.move(positions[-1], text))
        return positions
