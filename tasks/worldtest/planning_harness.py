"""How an AutumnBench harness folder's planning files become a problem
(``prompts/<env>_planning.json``: ``goal`` and ``mask``; ``answers/<env>_planning.json``:
``optimal_actions_count``), with a plan our guided search finds; :mod:`tasks.importer`
asks the challenge for this reader."""

from __future__ import annotations

from pathlib import Path

from tasks.core import rollout
from tasks.import_files import FolderError, json_field, read_json
from tasks.importer import IMPORT_SEED, SEARCH_SECONDS, ImportedEnv, colour_of, read_grid
from tasks.worldtest.check import final_frames, is_stochastic, sample_seeds
from tasks.worldtest.derive import default_horizon
from tasks.worldtest.problem import Problem
from tasks.worldtest.search import focus_clicks, goal_distance, guided_plan, shorten


def from_harness(folder: Path, env: ImportedEnv, colours: dict[int, str], make_env) -> Problem:
    path = folder / "prompts" / f"{env.name}_planning.json"
    prompt = read_json(path)
    goal = read_grid(prompt.get("goal"), path, "goal")
    mask = read_grid(prompt.get("mask"), path, "mask")
    if [len(r) for r in goal] != [len(r) for r in mask]:
        raise FolderError(f"{path}: 'goal' and 'mask' must have the same shape")
    cells = [(x, y) for y, row in enumerate(mask) for x, v in enumerate(row) if v == 1]
    if not cells:
        raise FolderError(f"{path}: the mask checks no cell (expected some cells equal to 1)")
    target = tuple(colour_of(goal[y][x], colours, path) for x, y in cells)
    answer_path = folder / "answers" / f"{env.name}_planning.json"
    count = json_field(read_json(answer_path), "optimal_actions_count", int, answer_path)
    plan = _plan(env, make_env, cells, target, count)
    env_ = make_env(env.env_id)
    stochastic = bool(plan) and is_stochastic(
        env_, final_frames(env_, plan, [IMPORT_SEED, *sample_seeds(4, 0, IMPORT_SEED)]))
    params = {"goal_cells": [list(c) for c in cells], "goal_colours": list(target),
              "goal_grid": [[colour_of(v, colours, path) for v in row] for row in goal],
              "horizon": default_horizon(max(count, len(plan))), "optimal_length": None,
              "declared_optimal_length": count, "plan": plan, "stochastic": stochastic}
    if not plan:
        params["search_states"] = env.search_states
    return Problem(f"{env.env_id}/planning", env.env_id, "planning", IMPORT_SEED, params,
                   description=f"imported from AutumnBench ({env.name}_planning)")


def _plan(env: ImportedEnv, make_env, cells, target, count: int) -> list[str]:
    """A plan found by the guided search, [] when none was (said in ``env.notes``)."""
    distance = goal_distance(cells, target)
    result = guided_plan(lambda: make_env(env.env_id), IMPORT_SEED, distance,
                         focus_clicks(make_env(env.env_id), cells, target),
                         max_states=env.search_states, max_seconds=SEARCH_SECONDS)
    if not result.found:
        budget = f"{SEARCH_SECONDS:g} seconds" if result.timed_out else f"{result.states} states"
        env.notes.append(f"planning: no plan found within {budget}; the answer file declares "
                         f"{count} actions; 'problems check' will call it unverified")
        return []
    plan = shorten(result.plan, lambda p: distance(rollout(make_env(env.env_id), IMPORT_SEED,
                                                            p)[-1]) == 0)
    if len(plan) < count:
        env.notes.append(f"planning: our plan takes {len(plan)} actions, fewer than the "
                         f"{count} the answer file declares optimal")
    return plan
