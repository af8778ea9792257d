"""Generating a task-DAG map from a configuration and a seed (000 Sec. 5, App. C.1).

First the DAG: nodes are stacked in layers of at most ``max_per_layer`` (the goal alone
on the deepest one); every non-primitive node draws its number of alternative
prerequisite sets and, per set, its number of parents, each parent drawn from shallower
layers with the parent-depth bias. The first set of a node always holds a parent from
the layer just above, so a node's layer is its longest distance from the primitives.
Nodes left without a child are added to every prerequisite set of the goal, so every
node leads to the goal. Then the grid (see :mod:`tasks.dagmap.layout`) and the names.

Everything random comes from a ``random.Random`` seeded by the seed. The names come
last, from a generator seeded by that one's next draw, so the semantic variant of a
seed is the same map with other names.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from tasks.dagmap.config import DagMapConfig, Probs, preset
from tasks.dagmap.layout import carve, grid_dimensions, place_points
from tasks.dagmap.model import DagMap
from tasks.dagmap.names import semantic_names, symbolic_names

Options = list[list[int]]
MAX_REDRAWS = 100
"""Draws allowed for an alternative prerequisite set that differs from the node's others
(fewer distinct sets than drawn can exist, e.g. one parent to choose from)."""


def generate(config: DagMapConfig | str, seed: int) -> DagMap:
    """The map that ``config`` (or a preset name) and ``seed`` determine.

    >>> a, b = generate("medium-n6", 3), generate("medium-n6", 3)
    >>> (a.nodes, a.cells, a.prereq) == (b.nodes, b.cells, b.prereq)
    True
    """
    if isinstance(config, str):
        config = preset(config)
    rng = random.Random(seed)
    layers = sample_layers(config.node_count, config.max_per_layer, rng)
    options = [sample_options(i, layers, config, rng) for i in range(len(layers))]
    repair_goal(options)
    width, height = grid_dimensions(config)
    points = place_points(width, height, config.node_count + 1, rng)
    cells = carve(points, width, height, config.corridor_widths, rng)
    names = name_nodes(config, layers, options, random.Random(rng.getrandbits(64)))
    order = sorted(range(len(names)), key=names.__getitem__)
    return DagMap(
        cells=cells,
        start=points[0],
        nodes={names[i]: points[i + 1] for i in order},
        prereq={names[i]: [frozenset(names[p] for p in o) for o in options[i]] for i in order},
        goal=names[-1],
        budget=int(config.budget_factor * len(cells)),
        width=width,
        height=height,
        layers={names[i]: layers[i] for i in order},
        seed=seed,
    )


def sample_layers(count: int, max_per_layer: int, rng: random.Random) -> list[int]:
    """The layer of each node, in layer order; the goal is the last node, alone."""
    sizes: list[int] = []
    remaining = count - 1
    while remaining:
        size = rng.randint(1, min(max_per_layer, remaining))
        sizes.append(size)
        remaining -= size
    return [layer for layer, size in enumerate(sizes) for _ in range(size)] + [len(sizes)]


def draw_count(probs: Probs, rng: random.Random) -> int:
    """One count drawn from a categorical distribution ``{count: probability}``."""
    counts = sorted(probs)
    return rng.choices(counts, weights=[probs[c] for c in counts])[0]


def sample_options(node: int, layers: Sequence[int], config: DagMapConfig, rng: random.Random) -> Options:
    """Node ``node``'s distinct prerequisite sets (node indices); ``[]`` for primitives.
    The first set always holds a parent from the layer just above."""
    depth = layers[node]
    if depth == 0:
        return []
    goal = node == len(layers) - 1
    arity = config.goal_dependency_count_probs if goal else config.dependency_count_probs
    candidates = [i for i, layer in enumerate(layers) if layer < depth]
    weights = [math.exp(-config.parent_depth_bias * ((depth - 1) - layers[i])) for i in candidates]
    options: Options = []
    for k in range(draw_count(config.option_count_probs, rng)):
        wanted = min(draw_count(arity, rng), len(candidates))
        for _ in range(MAX_REDRAWS):
            forced = [rng.choice([i for i in candidates if layers[i] == depth - 1])] if k == 0 else []
            option = sorted(forced + weighted_sample(candidates, weights, wanted - len(forced), rng, forced))
            if option not in options:
                options.append(option)
                break
    return options


def weighted_sample(
    items: Sequence[int], weights: Sequence[float], count: int, rng: random.Random,
    exclude: Sequence[int] = (),
) -> list[int]:
    """``count`` distinct items drawn one by one with the given weights."""
    pool = [(item, weight) for item, weight in zip(items, weights) if item not in exclude]
    chosen: list[int] = []
    for _ in range(count):
        pick = rng.choices(range(len(pool)), weights=[w for _, w in pool])[0]
        chosen.append(pool.pop(pick)[0])
    return chosen


def repair_goal(options: list[Options]) -> None:
    """Add every node that no other node needs to all of the goal's prerequisite sets,
    so that every node is connected to the goal (000 App. C.1)."""
    goal = len(options) - 1
    needed = {parent for sets in options for option in sets for parent in option}
    for node in range(goal):
        if node not in needed:
            for option in options[goal]:
                option.append(node)
                option.sort()


def name_nodes(config: DagMapConfig, layers: Sequence[int], options: list[Options], rng: random.Random) -> list[str]:
    """Names for the nodes (indices in layer order, goal last)."""
    if config.names == "semantic":
        first_parent = [sets[0][0] if sets else None for sets in options]
        return semantic_names(layers, first_parent, rng)
    edges = [(parent, child) for child, sets in enumerate(options) for o in sets for parent in o]
    return symbolic_names(len(layers), edges, rng)
