"""Gymnasium speed: steps per second of one environment and of a vector of 8, beside the
interpreter's own step rate.

``python -m bench.gym [PROBLEM ...] [--steps N]`` plays each problem (default: an Autumn
planning problem and a task-DAG map) with random allowed actions (``info["action_mask"]``,
fixed seed) for N steps:

* ``interpreter``: the bare environment (``tasks.registry.make``), noop, arrows and
  clicks drawn as the mask draws them in the interaction phase, no episode around it;
* ``gym x1``: ``gymnasium.make``, the whole WorldTest episode through ``AgentTurns``, the
  observation encoded, the action mask and info built each step; reset when it ends;
* ``gym sync x8``: ``gymnasium.make_vec(..., num_envs=8, vectorization_mode="sync")``,
  counted in environment steps (8 per call).
"""

from __future__ import annotations

import argparse
import random
import time

import gymnasium
import numpy as np

import game_client.gym  # noqa: F401  (registers the problems)
from game_client.gym.spaces import PLAIN, ActionTable
from tasks import registry
from tasks.worldtest.problem import gym_id

PROBLEMS = ("ant_trail/planning", "dagmap/low-n8")
STEPS = 2000
VECTOR = 8


def interpreter_rate(problem_id: str, steps: int, seed: int = 7) -> float:
    """Steps per second of the problem's bare environment, its actions drawn as the
    Gymnasium environment's are: uniformly over noop, the arrows and a click per cell."""
    problem = registry.get_problem(problem_id)
    env = registry.make(problem.env_id)
    env.reset(problem.seed)
    table = ActionTable.for_problem(problem, env.size)
    plain = [table.text(i) for i in range(len(PLAIN) + table.clicks)]
    actions = [a for a in plain if a.split()[0] in env.available_actions()]
    rng = random.Random(seed)
    start = time.perf_counter()
    for _ in range(steps):
        if env.step(rng.choice(actions)).done:
            env.reset(problem.seed)
    return steps / (time.perf_counter() - start)


def gym_rate(problem_id: str, steps: int, seed: int = 7) -> float:
    """Steps per second of one Gymnasium environment."""
    env = gymnasium.make(gym_id(problem_id))
    env.action_space.seed(seed)
    _, info = env.reset(seed=seed)
    start = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, info = env.step(
            env.action_space.sample(mask=info["action_mask"]))
        if terminated or truncated:
            _, info = env.reset()
    elapsed = time.perf_counter() - start
    env.close()
    return steps / elapsed


def vector_rate(problem_id: str, steps: int, seed: int = 7, num_envs: int = VECTOR) -> float:
    """Environment steps per second of a synchronous vector of ``num_envs``."""
    envs = gymnasium.make_vec(gym_id(problem_id), num_envs=num_envs, vectorization_mode="sync")
    single = envs.single_action_space
    single.seed(seed)
    _, info = envs.reset(seed=seed)
    calls = max(1, steps // num_envs)
    start = time.perf_counter()
    for _ in range(calls):
        masks = info["action_mask"]
        actions = np.array([single.sample(mask=mask.astype(np.int8)) for mask in masks])
        _, _, _, _, info = envs.step(actions)
    elapsed = time.perf_counter() - start
    envs.close()
    return calls * num_envs / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description="Gymnasium steps per second")
    parser.add_argument("problems", nargs="*", default=list(PROBLEMS))
    parser.add_argument("--steps", type=int, default=STEPS)
    args = parser.parse_args()
    print(f"{'problem':<22} {'interpreter':>12} {'gym x1':>10} {'gym sync x8':>12}  (steps/s)")
    for problem_id in args.problems:
        rates = (interpreter_rate(problem_id, args.steps), gym_rate(problem_id, args.steps),
                 vector_rate(problem_id, args.steps))
        print(f"{problem_id:<22} " + " ".join(f"{r:>{w}.0f}" for r, w in zip(rates, (12, 10, 12))))


if __name__ == "__main__":
    main()
