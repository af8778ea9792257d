"""Throughput of the task-DAG maps: maps generated per second (per preset and overall),
metric steps per second (random walks and oracle runs through the exploration /
exploitation error metric), environment steps per second, and the errors a random
walk makes.

Run: ``python -m bench.dagmap``. Figures depend on the machine and its load.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from analysis.metrics.explore_exploit import explore_exploit
from tasks.dagmap import PRESETS, DagMapEnv, generate
from tasks.dagmap.oracle import solve
from tasks.dagmap.progress import Progress

SEEDS = range(40)
MOVES = ("up", "down", "left", "right")


def timed(work: Callable[[], int]) -> tuple[int, float]:
    """(units of work done, seconds taken)."""
    start = time.perf_counter()
    units = work()
    return units, time.perf_counter() - start


def random_walk(dagmap, seed: int) -> tuple[list[str], bool]:
    """Uniform moves until the goal is achieved or the budget is spent; and success."""
    rng, progress, moves = random.Random(seed), Progress(dagmap), []
    while not progress.success and len(moves) < dagmap.budget:
        moves.append(rng.choice(MOVES))
        progress.enter(dagmap.move(progress.position, moves[-1]))
    return moves, progress.success


def sample_maps(count: int) -> list:
    return [generate(name, seed) for name in PRESETS for seed in SEEDS[:count]]


def bench_generation() -> None:
    total, seconds = 0, 0.0
    for name in PRESETS:
        count, took = timed(lambda name=name: sum(1 for s in SEEDS if generate(name, s)))
        total, seconds = total + count, seconds + took
        print(f"  generate {name:<10} {count / took:8.0f} maps/s")
    print(f"generate, all presets: {total / seconds:.0f} maps/s")


def bench_metric() -> None:
    maps = sample_maps(10)
    for dagmap in maps:  # distance tables are built once per map: timed apart below
        dagmap.distances  # noqa: B018
    walks = [(m, m.follow(random_walk(m, seed)[0])) for seed, m in enumerate(maps)]
    oracles = [(m, m.follow(solve(m))) for m in maps]
    for label, runs in (("random walks", walks), ("oracle runs", oracles)):
        steps, took = timed(lambda runs=runs: sum(len(explore_exploit(m, p).steps) for m, p in runs))
        print(f"metric on {label}: {steps / took:.0f} steps/s ({steps} steps)")
    fresh = sample_maps(10)
    count, took = timed(lambda: sum(1 for m in fresh if m.distances is not None))
    print(f"distance tables (all-pairs BFS, once per map): {count / took:.0f} maps/s")


def bench_env() -> None:
    env, rng, steps = DagMapEnv("medium-n8"), random.Random(0), 0
    start = time.perf_counter()
    for seed in SEEDS:
        obs = env.reset(seed)
        while not obs.done:
            obs = env.step(rng.choice(MOVES))
            steps += 1
    print(f"environment steps (frame and text rendered): {steps / (time.perf_counter() - start):.0f} steps/s")


def report_random_walk_errors() -> None:
    print("random-walk errors over seeds 0-9 (mean exploration, mean exploitation, successes):")
    for name in PRESETS:
        explore, exploit, successes = [], [], 0
        for seed in range(10):
            dagmap = generate(name, seed)
            moves, success = random_walk(dagmap, seed)
            result = explore_exploit(dagmap, dagmap.follow(moves))
            explore += [result.exploration_error] if result.exploration_error is not None else []
            exploit += [result.exploitation_error] if result.exploitation_error is not None else []
            successes += success
        print(f"  {name:<10} {mean(explore):.3f}  {mean(exploit):.3f}  {successes}/10")


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def main() -> None:
    bench_generation()
    bench_metric()
    bench_env()
    report_random_walk_errors()


if __name__ == "__main__":
    main()
