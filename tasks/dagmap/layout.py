"""Laying a task DAG out on a grid: the grid's size, node cells and carved corridors.

The grid area is the node count over the node density (000 App. C.1), shaped to the
wanted aspect ratio. The start and the nodes get distinct random cells; corridors of a
random width then join each point to one already joined, in random order, starting
from the start cell. Whatever no corridor touches is an obstacle, so the traversable
region is connected by construction and a narrow corridor leaves few admissible moves.
"""

from __future__ import annotations

import math
import random

from tasks.dagmap.config import DagMapConfig
from tasks.dagmap.model import Cell


def grid_dimensions(config: DagMapConfig) -> tuple[int, int]:
    """(width, height): ``config.grid_size``, or the smallest grid of about
    ``node_count / density`` cells whose height follows the aspect ratio.

    >>> grid_dimensions(DagMapConfig(node_count=8, density=0.1))
    (9, 9)
    """
    if config.grid_size is not None:
        return config.grid_size
    area = math.ceil(config.node_count / config.density)
    height = max(2, round(math.sqrt(area / config.aspect_ratio)))
    width = max(2, math.ceil(area / height))
    return width, height


def place_points(width: int, height: int, count: int, rng: random.Random) -> list[Cell]:
    """``count`` distinct random cells; the first is the start, the others the nodes'."""
    if count > width * height:
        raise ValueError(
            f"a {width}x{height} grid cannot hold the start and {count - 1} nodes: "
            "lower the density or enlarge grid_size"
        )
    return [(i % width, i // width) for i in rng.sample(range(width * height), count)]


def carve(
    points: list[Cell], width: int, height: int, widths: tuple[int, int], rng: random.Random
) -> frozenset[Cell]:
    """The traversable cells: corridors joining every point to an earlier one."""
    cells: set[Cell] = {points[0]}
    for i, point in enumerate(points[1:], start=1):
        other = points[rng.randrange(i)]
        corridor = min(rng.randint(*widths), width, height)
        for x, y in l_path(other, point, rng.random() < 0.5):
            cells.update(square(x, y, corridor, width, height))
    return frozenset(cells)


def l_path(a: Cell, b: Cell, horizontal_first: bool) -> list[Cell]:
    """The cells of an L-shaped path from ``a`` to ``b`` (both ends included)."""
    (ax, ay), (bx, by) = a, b
    corner = (bx, ay) if horizontal_first else (ax, by)
    return _segment(a, corner) + _segment(corner, b)[1:]


def _segment(a: Cell, b: Cell) -> list[Cell]:
    (ax, ay), (bx, by) = a, b
    if ay == by:
        step = 1 if bx >= ax else -1
        return [(x, ay) for x in range(ax, bx + step, step)]
    step = 1 if by >= ay else -1
    return [(ax, y) for y in range(ay, by + step, step)]


def square(x: int, y: int, size: int, width: int, height: int) -> list[Cell]:
    """A ``size`` x ``size`` block holding ``(x, y)``, shifted to stay inside the grid."""
    left, top = min(x, width - size), min(y, height - size)
    return [(left + dx, top + dy) for dx in range(size) for dy in range(size)]
