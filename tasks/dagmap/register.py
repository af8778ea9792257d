"""Registers the task-DAG maps: environments ``dagmap/<preset>-s<seed>`` and
``dagmap/<preset>-semantic-s<seed>`` for the nine presets and seeds 0-2 (the paper's
main experiment, 000 App. C.2), and one ``explore`` problem per preset and naming:
``dagmap/<preset>`` and ``dagmap/<preset>-semantic``, on seed 0, labelled with the
preset's exploitation demand as difficulty.

The registry imports this module on first use, so it only writes specs: no map is
generated and nothing heavier than the preset table is imported until an environment
is made or a problem loaded.
"""

from __future__ import annotations

from functools import partial

from tasks import registry
from tasks.dagmap.config import PRESETS

SEEDS = (0, 1, 2)
PROBLEM_SEED = 0
NAMINGS = {"symbolic": "", "semantic": "-semantic"}
ENTRY_POINT = "tasks.dagmap.env:DagMapEnv"


def env_id(preset_name: str, seed: int, names: str = "symbolic") -> str:
    """``dagmap/high-n8-s1``, ``dagmap/high-n8-semantic-s1``."""
    return f"dagmap/{preset_name}{NAMINGS[names]}-s{seed}"


def problem_id(preset_name: str, names: str = "symbolic") -> str:
    return f"dagmap/{preset_name}{NAMINGS[names]}"


def load_problem(preset_name: str, names: str):
    """The ``explore`` problem of one preset (built on first use)."""
    from tasks.worldtest.problem import Problem

    return Problem(
        id=problem_id(preset_name, names),
        env_id=env_id(preset_name, PROBLEM_SEED, names),
        challenge="explore",
        seed=PROBLEM_SEED,
        difficulty=preset_name.split("-")[0],
        description=f"Task-DAG map {preset_name} ({names} names): reach the goal within the budget.",
    )


def register_all() -> None:
    """Register every dagmap environment and problem."""
    for preset_name in PRESETS:
        for names in NAMINGS:
            for seed in SEEDS:
                registry.register_env(
                    env_id(preset_name, seed, names), ENTRY_POINT,
                    description=f"task-DAG map, preset {preset_name}, {names} names, map seed {seed}",
                    tags=("dagmap", preset_name, names),
                    preset_name=preset_name, map_seed=seed, names=names,
                )
            registry.register_problem(
                problem_id(preset_name, names), partial(load_problem, preset_name, names),
                env_id=env_id(preset_name, PROBLEM_SEED, names), challenge="explore",
            )


register_all()
