"""The knobs of the task-DAG map generator and the paper's nine presets (000 App. C.1).

A preset is named ``<demand>-n<nodes>``: ``demand`` is the map's *exploitation* demand
(``low``, ``medium``, ``high``) and ``nodes`` the task-DAG size (4, 6, 8). Exploitation
demand sets the map: node density (nodes per grid cell) 0.1 / 0.25 / 0.4 and corridor
widths 2-3 / 1-3 / 1 (a sparse map with wide corridors asks for exploration, a dense one
with narrow corridors for exploitation). The DAG size sets the logic: the paper's
"easy / medium / hard" distributions of prerequisite options and dependencies are tied to
the small / medium / large DAG here (the paper does not say which axis they follow; this
is the project's choice, and every preset spells its values out).

This module is plain data, so registering the presets costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

Probs = dict[int, float]


@dataclass(frozen=True)
class DagMapConfig:
    """Everything :func:`tasks.dagmap.generate` needs besides the seed.

    * ``node_count``: nodes in the task DAG, the goal included.
    * ``max_per_layer``: at most this many nodes share a depth (the goal sits alone on
      the deepest layer).
    * ``option_count_probs``: for each non-primitive node, how many alternative
      prerequisite sets it has (OR across sets).
    * ``dependency_count_probs`` / ``goal_dependency_count_probs``: how many parents one
      prerequisite set holds (AND within a set), for other nodes / for the goal.
    * ``parent_depth_bias``: beta; a parent at depth d of a child at depth D is drawn
      with weight ``exp(-beta * ((D - 1) - d))``.
    * ``density``: nodes per grid cell; sets the grid area unless ``grid_size`` is given.
    * ``corridor_widths``: (narrowest, widest) corridor, drawn uniformly per corridor.
    * ``aspect_ratio``: wanted width / height of the grid.
    * ``budget_factor``: alpha; the step budget is alpha x the traversable cells.
    * ``names``: ``"symbolic"`` (random four-character codes) or ``"semantic"``
      (cooking steps, for the semantic ablation; the map is otherwise identical).
    * ``grid_size``: (width, height) fixed a priori, or None to derive it from density.
    """

    node_count: int = 6
    max_per_layer: int = 3
    option_count_probs: Probs = field(default_factory=lambda: {1: 0.8, 2: 0.2})
    dependency_count_probs: Probs = field(default_factory=lambda: {1: 0.5, 2: 0.5})
    goal_dependency_count_probs: Probs = field(default_factory=lambda: {1: 0.5, 2: 0.5})
    parent_depth_bias: float = 1.0
    density: float = 0.25
    corridor_widths: tuple[int, int] = (1, 3)
    aspect_ratio: float = 1.0
    budget_factor: float = 3.0
    names: str = "symbolic"
    grid_size: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        problems = list(self._problems())
        if problems:
            raise ValueError("invalid DagMapConfig: " + "; ".join(problems))

    def _problems(self):
        if self.node_count < 3:
            yield f"node_count must be at least 3, got {self.node_count}"
        if self.max_per_layer < 1:
            yield f"max_per_layer must be at least 1, got {self.max_per_layer}"
        for name in ("option_count_probs", "dependency_count_probs", "goal_dependency_count_probs"):
            yield from _check_probs(name, getattr(self, name))
        if not 0 < self.density <= 1:
            yield f"density must be in (0, 1], got {self.density}"
        low, high = self.corridor_widths
        if not 1 <= low <= high:
            yield f"corridor_widths must be (low, high) with 1 <= low <= high, got {low, high}"
        if self.aspect_ratio <= 0 or self.budget_factor <= 0:
            yield "aspect_ratio and budget_factor must be positive"
        if self.names not in ("symbolic", "semantic"):
            yield f"names must be 'symbolic' or 'semantic', got {self.names!r}"
        if self.grid_size is not None and min(self.grid_size) < 2:
            yield f"grid_size must be at least 2x2, got {self.grid_size}"

    def with_(self, **changes: Any) -> DagMapConfig:
        """A copy with some knobs changed (``PRESETS["low-n4"].with_(budget_factor=2)``)."""
        return replace(self, **changes)


def _check_probs(name: str, probs: Probs):
    if not probs or any(k < 1 or p < 0 for k, p in probs.items()):
        yield f"{name} must map counts >= 1 to probabilities >= 0, got {probs}"
    elif abs(sum(probs.values()) - 1) > 1e-9:
        yield f"{name} must sum to 1, got {sum(probs.values())}"


DEMANDS = {
    # exploitation demand: (density, corridor widths)
    "low": (0.1, (2, 3)),
    "medium": (0.25, (1, 3)),
    "high": (0.4, (1, 1)),
}
SIZES = {
    # DAG size: (options per node, dependencies per set, goal dependencies)
    4: ({1: 1.0}, {1: 0.5, 2: 0.5}, {1: 0.5, 2: 0.5}),
    6: ({1: 0.8, 2: 0.2}, {1: 0.5, 2: 0.5}, {1: 0.5, 2: 0.5}),
    8: ({1: 0.6, 2: 0.4}, {1: 1 / 3, 2: 1 / 3, 3: 1 / 3}, {1: 1 / 3, 2: 1 / 3, 3: 1 / 3}),
}


def _preset(demand: str, nodes: int) -> DagMapConfig:
    density, widths = DEMANDS[demand]
    options, dependencies, goal_dependencies = SIZES[nodes]
    return DagMapConfig(
        node_count=nodes,
        option_count_probs=options,
        dependency_count_probs=dependencies,
        goal_dependency_count_probs=goal_dependencies,
        density=density,
        corridor_widths=widths,
    )


PRESETS: dict[str, DagMapConfig] = {
    f"{demand}-n{nodes}": _preset(demand, nodes) for demand in DEMANDS for nodes in SIZES
}
"""The paper's nine configurations: three exploitation demands x three DAG sizes."""


def preset(name: str) -> DagMapConfig:
    """The preset called ``name``; the error lists the known names."""
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown dagmap preset {name!r}; known: {', '.join(PRESETS)}") from None
