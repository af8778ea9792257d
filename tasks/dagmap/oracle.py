"""An oracle that knows the map and makes no exploration or exploitation error.

It plans first: the shortest order in which to achieve nodes, each once its
prerequisites are met, ending at the goal (dynamic programming over the sets of achieved
nodes, with breadth-first shortest-path lengths between node cells). Then it walks,
and every move follows a shortest path to the cell ``z`` of the current target set of
000 Table 1 (:meth:`Progress.targets`) that lies best on the way to the next planned
node ``X``, i.e. minimises ``d(here, z) + d(z, X)``. While ``X`` is unvisited the first
unvisited cell of a shortest path to it is such a target, so the walk is as short as
the plan.

Why no error: each move brings the agent one step closer to a target (a gain), and
between progress events the targets and ``X`` do not change, so ``min_z d(here, z) +
d(z, X)`` falls by one per move: no cell repeats within a no-progress segment and the
stale score never rises.
"""

from __future__ import annotations

from tasks.dagmap.model import DIRECTIONS, Cell, DagMap, neighbour
from tasks.dagmap.progress import Progress


def solve(dagmap: DagMap) -> list[str]:
    """The oracle's moves from the start until the goal is achieved."""
    order = plan(dagmap)
    progress = Progress(dagmap)
    moves: list[str] = []
    while not progress.success:
        direction = step_towards(dagmap, progress.position, choose_target(dagmap, progress, order))
        moves.append(direction)
        progress.enter(neighbour(progress.position, direction))
    return moves


def plan(dagmap: DagMap) -> list[str]:
    """The shortest order of node visits, each achievable when reached, ending at the
    goal (a node passed over on the way counts only when the plan reaches it)."""
    names = sorted(dagmap.nodes)
    bit = {name: 1 << i for i, name in enumerate(names)}
    options = [[sum(bit[p] for p in option) for option in dagmap.prereq[n]] for n in names]
    goal = bit[dagmap.goal]

    def achievable(i: int, mask: int) -> bool:
        return not options[i] or any(option & mask == option for option in options[i])

    cells = [dagmap.nodes[name] for name in names]
    best: dict[tuple[int, int], tuple[int, list[int]]] = {}
    for i in range(len(names)):
        if achievable(i, 0):
            best[(1 << i, i)] = (dagmap.distance(dagmap.start, cells[i]), [i])
    finished: list[tuple[int, list[int]]] = []
    for mask in range(1, 1 << len(names)):
        for last in range(len(names)):
            state = best.get((mask, last))
            if state is None:
                continue
            if mask & goal:
                finished.append(state)
                continue
            for i in range(len(names)):
                if not mask & (1 << i) and achievable(i, mask):
                    cost = state[0] + dagmap.distance(cells[last], cells[i])
                    key = (mask | (1 << i), i)
                    if key not in best or cost < best[key][0]:
                        best[key] = (cost, state[1] + [i])
    return [names[i] for i in min(finished)[1]]


def choose_target(dagmap: DagMap, progress: Progress, order: list[str]) -> Cell:
    """The target cell that lies best on the way to the next planned node."""
    case, targets = progress.targets()
    if case == 2:
        return targets[0]
    goal_next = next(node for node in order if node not in progress.achieved)
    here, there = progress.position, dagmap.nodes[goal_next]
    return min(targets, key=lambda z: (dagmap.distance(here, z) + dagmap.distance(z, there), z))


def step_towards(dagmap: DagMap, here: Cell, target: Cell) -> str:
    """The first direction whose neighbour is one step closer to ``target``."""
    remaining = dagmap.distance(here, target)
    for direction in DIRECTIONS:
        other = neighbour(here, direction)
        if other in dagmap.cells and dagmap.distance(other, target) == remaining - 1:
            return direction
    raise ValueError(f"{target} cannot be reached from {here}")
