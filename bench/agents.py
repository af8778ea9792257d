"""Random-agent throughput in-process, per environment, and the wall time of the full
random baseline (002 Table E.3: 50 samples x 1000 steps for every cd and planning
problem).

Run: ``python -m bench.agents [--seconds S] [--samples N] [--steps N]``. Figures depend on
the machine and its load; the environments are every registered non-test environment
(one task-DAG map per preset, since the seeds only change the map).
"""

from __future__ import annotations

import argparse
import random
import time

from game_client.agents import random_env_action
from game_client.baseline import run_baseline
from tasks import registry


def environments() -> list[str]:
    """Registered environments, one task-DAG map per preset and naming."""
    ids = []
    for spec in registry.list_envs():
        if "test" in spec.tags or (spec.id.startswith("dagmap/") and not spec.id.endswith("-s0")):
            continue
        ids.append(spec.id)
    return ids


def steps_per_second(env_id: str, seconds: float, seed: int = 0) -> tuple[float, int]:
    """Random steps applied per second on ``env_id`` for about ``seconds``; (rate, steps)."""
    env = registry.make(env_id)
    rng = random.Random(seed)
    observation = env.reset(seed)
    steps, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        if observation.done:
            observation = env.reset(seed)
        observation = env.step(random_env_action(rng, env.available_actions(), env.size))
        steps += 1
    return steps / (time.perf_counter() - started), steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="Seconds per environment.")
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    print(f"{'environment':<34} {'steps/s':>10} {'steps':>8}")
    for env_id in environments():
        rate, steps = steps_per_second(env_id, args.seconds)
        print(f"{env_id:<34} {rate:>10.0f} {steps:>8}")
    problems = [registry.get_problem(s.id) for s in registry.list_problems()
                if s.challenge in ("cd", "planning")]
    started = time.perf_counter()
    run_baseline(problems, args.samples, args.steps)
    wall = time.perf_counter() - started
    print(f"random baseline: {len(problems)} cd/planning problems x {args.samples} samples x "
          f"<= {args.steps} steps: {wall:.1f} s wall")


if __name__ == "__main__":
    main()
