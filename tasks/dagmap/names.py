"""Node names: random codes that carry no order, or cooking steps for the semantic ablation.

Symbolic names are four characters from ``A-Z0-9`` (000 App. C.1). Names like A, B, C
or 1, 2, 3 would leak the precedence, and so would random codes that happen to sort in
dependency order; such draws are rejected, in both directions.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence

ALPHABET = string.ascii_uppercase + string.digits
INGREDIENTS = (
    "Pasta", "Tomato", "Cheese", "Basil", "Garlic", "Onion", "Olive Oil", "Mushroom",
    "Spinach", "Butter", "Cream", "Pepper", "Egg", "Rice", "Flour", "Lemon",
)
STEPS = (
    "Boiled", "Chopped", "Mixed", "Seasoned", "Simmered", "Fried", "Baked", "Grated",
    "Roasted", "Stirred", "Whisked", "Drained",
)
MAX_ATTEMPTS = 1000


def leaks_order(names: dict[int, str], edges: Sequence[tuple[int, int]]) -> bool:
    """True if sorting the names ascending or descending puts every parent before its
    child: the names alone would then tell the dependency order."""
    ascending = all(names[parent] < names[child] for parent, child in edges)
    descending = all(names[parent] > names[child] for parent, child in edges)
    return ascending or descending


def symbolic_names(count: int, edges: Sequence[tuple[int, int]], rng: random.Random) -> list[str]:
    """``count`` distinct random codes whose sort order does not follow ``edges``
    (pairs of node indices, parent first)."""
    for _ in range(MAX_ATTEMPTS):
        names: list[str] = []
        while len(names) < count:
            code = "".join(rng.choice(ALPHABET) for _ in range(4))
            if code not in names:
                names.append(code)
        if not leaks_order(dict(enumerate(names)), edges):
            return names
    raise ValueError(
        f"could not draw {count} names that hide the order of edges {list(edges)}: "
        "a DAG needs at least three nodes and two edges for that"
    )


def semantic_names(
    layers: Sequence[int], first_parent: Sequence[int | None], rng: random.Random
) -> list[str]:
    """Cooking names with the same structure: primitives are ingredients, every other
    node is a step applied to what its first parent is made of, the goal a dish.

    ``layers[i]`` is node i's depth; ``first_parent[i]`` the first parent of its first
    prerequisite set (None for primitives). Nodes are in layer order, the goal last.
    """
    primitives = [i for i, layer in enumerate(layers) if layer == 0]
    ingredients = rng.sample(INGREDIENTS, len(primitives))
    steps = iter(rng.sample(STEPS, len(layers) - len(primitives)))
    base: dict[int, str] = dict(zip(primitives, ingredients))
    names: dict[int, str] = {i: base[i] for i in primitives}
    goal = len(layers) - 1
    for i in range(len(layers)):
        if i in names:
            continue
        base[i] = base[first_parent[i]]
        names[i] = f"Finished {base[i]} Dish" if i == goal else f"{next(steps)} {base[i]}"
    return [names[i] for i in range(len(layers))]
