"""The task-DAG map generator (000 App. C.1): every preset over 50 seeds, and each knob."""

from __future__ import annotations

import networkx as nx
import pytest

from tasks.dagmap import PRESETS, DagMapConfig, generate, preset
from tasks.dagmap.layout import grid_dimensions
from tasks.dagmap.model import bfs_distances
from tasks.dagmap.names import ALPHABET

SEEDS = range(50)


def edges(dagmap):
    return [(p, child) for child, sets in dagmap.prereq.items() for o in sets for p in o]


def check_map(dagmap, config):
    """Every structural promise of the generator, as (name, holds) pairs."""
    graph = dagmap.graph
    goal_cell = dagmap.nodes[dagmap.goal]
    reach = bfs_distances(dagmap.start, dagmap.cells)
    depth = {}
    for node in nx.topological_sort(graph):
        depth[node] = max((depth[p] + 1 for p in graph.predecessors(node)), default=0)
    per_layer = [list(depth.values()).count(d) for d in set(depth.values())]
    names = list(dagmap.nodes)
    return {
        "connected": len(reach) == len(dagmap.cells),
        "goal reachable": goal_cell in reach,
        "acyclic": nx.is_directed_acyclic_graph(graph),
        "one sink, the goal": [n for n in graph if graph.out_degree(n) == 0] == [dagmap.goal],
        "every node leads to the goal": nx.ancestors(graph, dagmap.goal) == set(names) - {dagmap.goal},
        "node count": len(names) == config.node_count,
        "distinct names": len(set(names)) == len(names),
        "four-character names": all(len(n) == 4 and set(n) <= set(ALPHABET) for n in names),
        "names hide the order": not all(p < c for p, c in edges(dagmap)) and not all(p > c for p, c in edges(dagmap)),
        "at most three per layer": max(per_layer) <= 3,
        "layer is depth": depth == dagmap.layers,
        "distinct node cells": len(set(dagmap.nodes.values())) == len(names),
        "nodes on traversable cells": set(dagmap.nodes.values()) <= dagmap.cells,
        "start holds no node": dagmap.start not in dagmap.node_at and dagmap.start in dagmap.cells,
        "inside the grid": all(0 <= x < dagmap.width and 0 <= y < dagmap.height for x, y in dagmap.cells),
        "size": dagmap.size == grid_dimensions(config),
        "budget": dagmap.budget == 3 * len(dagmap.cells),
    }


@pytest.mark.parametrize("preset_name", PRESETS)
def test_every_preset_keeps_its_promises_over_50_seeds(preset_name):
    config = preset(preset_name)
    for seed in SEEDS:
        failed = [k for k, ok in check_map(generate(preset_name, seed), config).items() if not ok]
        assert failed == [], f"{preset_name} seed {seed}"


def test_nine_presets_cross_demand_and_size():
    assert sorted(PRESETS) == sorted(f"{d}-n{n}" for d in ("low", "medium", "high") for n in (4, 6, 8))
    assert [(PRESETS[f"{d}-n6"].density, PRESETS[f"{d}-n6"].corridor_widths) for d in ("low", "medium", "high")] == [
        (0.1, (2, 3)), (0.25, (1, 3)), (0.4, (1, 1)),
    ]
    assert [PRESETS[f"medium-n{n}"].option_count_probs for n in (4, 6, 8)] == [
        {1: 1.0}, {1: 0.8, 2: 0.2}, {1: 0.6, 2: 0.4},
    ]
    assert {c.budget_factor for c in PRESETS.values()} == {3.0}
    assert {c.parent_depth_bias for c in PRESETS.values()} == {1.0}


def fingerprint(dagmap):
    return (dagmap.cells, dagmap.start, dagmap.nodes, dagmap.prereq, dagmap.goal, dagmap.budget)


def test_same_seed_same_map_other_seed_other_map():
    assert fingerprint(generate("medium-n8", 11)) == fingerprint(generate("medium-n8", 11))
    assert fingerprint(generate("medium-n8", 11)) != fingerprint(generate("medium-n8", 12))


def test_semantic_variant_is_the_same_map_with_cooking_names():
    config = preset("medium-n6")
    for seed in range(10):
        symbolic = generate(config, seed)
        semantic = generate(config.with_(names="semantic"), seed)
        by_cell = {cell: name for name, cell in semantic.nodes.items()}
        rename = {name: by_cell[cell] for name, cell in symbolic.nodes.items()}
        assert (semantic.cells, semantic.start, semantic.budget) == (symbolic.cells, symbolic.start, symbolic.budget)
        assert semantic.goal == rename[symbolic.goal]
        assert semantic.prereq == {
            rename[n]: [frozenset(rename[p] for p in o) for o in sets] for n, sets in symbolic.prereq.items()
        }
        assert semantic.goal.startswith("Finished ") and semantic.goal.endswith(" Dish")


def test_option_and_dependency_counts_follow_their_distributions():
    config = DagMapConfig(node_count=8, option_count_probs={2: 1.0}, dependency_count_probs={1: 1.0},
                          goal_dependency_count_probs={1: 1.0})
    for seed in range(20):
        dagmap = generate(config, seed)
        for node, sets in dagmap.prereq.items():
            if dagmap.layers[node] == 0:
                assert sets == []
            elif node != dagmap.goal:
                # two distinct sets of one parent, unless only one parent can be chosen
                shallower = [n for n, d in dagmap.layers.items() if d < dagmap.layers[node]]
                assert len(sets) == min(2, len(shallower)) and all(len(o) == 1 for o in sets)


def test_a_strong_depth_bias_draws_parents_from_the_layer_above():
    config = DagMapConfig(node_count=8, option_count_probs={1: 1.0}, dependency_count_probs={2: 1.0},
                          parent_depth_bias=40.0)
    for seed in range(20):
        dagmap = generate(config, seed)
        for node, sets in dagmap.prereq.items():
            depth = dagmap.layers[node]
            above = [n for n, d in dagmap.layers.items() if d == depth - 1]
            if sets and node != dagmap.goal and len(above) >= 2:
                assert {dagmap.layers[p] for p in sets[0]} == {depth - 1}


@pytest.mark.parametrize("width", [2, 3])
def test_corridors_have_the_drawn_width(width):
    config = DagMapConfig(node_count=6, density=0.1, corridor_widths=(width, width))
    for seed in range(10):
        cells = generate(config, seed).cells
        for x, y in cells:
            blocks = [
                {(left + dx, top + dy) for dx in range(width) for dy in range(width)}
                for left in range(x - width + 1, x + 1) for top in range(y - width + 1, y + 1)
            ]
            assert any(block <= cells for block in blocks), (seed, (x, y))


@pytest.mark.parametrize(
    "changes, size",
    [
        ({"node_count": 8, "density": 0.1}, (9, 9)),
        ({"node_count": 4, "density": 0.4}, (4, 3)),
        ({"node_count": 8, "density": 0.1, "aspect_ratio": 4.0}, (20, 4)),
        ({"grid_size": (8, 8)}, (8, 8)),
    ],
)
def test_grid_size_from_density_and_aspect_ratio(changes, size):
    config = DagMapConfig().with_(**changes)
    assert grid_dimensions(config) == size
    assert generate(config, 0).size == size


def test_budget_factor_scales_the_budget():
    dagmap = generate(preset("low-n6").with_(budget_factor=2.0), 4)
    assert dagmap.budget == 2 * len(dagmap.cells)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"node_count": 2}, "node_count must be at least 3"),
        ({"option_count_probs": {1: 0.5}}, "option_count_probs must sum to 1"),
        ({"dependency_count_probs": {0: 1.0}}, "dependency_count_probs must map counts >= 1"),
        ({"density": 0}, "density must be in"),
        ({"corridor_widths": (3, 1)}, "corridor_widths must be"),
        ({"names": "greek"}, "names must be 'symbolic' or 'semantic'"),
    ],
)
def test_invalid_configs_say_what_is_wrong(changes, message):
    with pytest.raises(ValueError, match=message):
        DagMapConfig(**changes)


def test_a_grid_too_small_for_its_nodes_is_refused():
    with pytest.raises(ValueError, match="cannot hold the start and 8 nodes"):
        generate(DagMapConfig(node_count=8, grid_size=(3, 2)), 0)


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(KeyError, match="unknown dagmap preset 'huge'; known: low-n4"):
        generate("huge", 0)
