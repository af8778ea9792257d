"""Autumn interpreter speed: microseconds per step (rendering and observation included).

``python -m bench.autumn [extra.sexp ...]`` runs every registered environment tagged
"autumn" (or, when none is registered, the test programs shipped with the tests), plus
any files given, for 2,000 steps of a fixed mix of clicks on object cells, arrows and
no-ops (fixed seed), and prints the median and 99th percentile per program.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

from tasks import registry
from tasks.autumn import AutumnEnv, load_file

STEPS = 2000
TEST_PROGRAMS = Path(__file__).resolve().parent.parent / "tests" / "tasks" / "autumn" / "programs"


def programs(extra: list[str]) -> list[tuple[str, AutumnEnv]]:
    """(label, environment) for the registered Autumn programs, or the test programs."""
    found = [(spec.id, spec.make()) for spec in registry.list_envs() if "autumn" in spec.tags]
    if not found:
        found = [(p.name, load_file(p)) for p in sorted(TEST_PROGRAMS.glob("*.sexp"))]
    return found + [(Path(p).name, load_file(p)) for p in extra]


def next_action(rng: random.Random, frame: list[list[str]], background: str) -> str:
    """40% clicks (on a cell an object covers when there is one), 40% arrows, 20% no-ops."""
    draw = rng.random()
    if draw < 0.4:
        covered = [(x, y) for y, row in enumerate(frame) for x, c in enumerate(row) if c != background]
        if covered and rng.random() < 0.75:
            x, y = rng.choice(covered)
        else:
            x, y = rng.randrange(len(frame[0])), rng.randrange(len(frame))
        return f"click {x} {y}"
    if draw < 0.8:
        return rng.choice(("up", "down", "left", "right"))
    return "noop"


def measure(env: AutumnEnv, steps: int = STEPS, seed: int = 7) -> list[float]:
    """Seconds per step over ``steps`` steps (the choice of action is not timed)."""
    rng = random.Random(seed)
    frame = env.reset(seed).frame
    background = str(env.background).lower()
    times = []
    for _ in range(steps):
        action = next_action(rng, frame, background)
        start = time.perf_counter()
        frame = env.step(action).frame
        times.append(time.perf_counter() - start)
    return times


def main(argv: list[str]) -> None:
    print(f"{'program':28s} {'median us':>10s} {'p99 us':>10s}")
    for label, env in programs(argv):
        times = sorted(measure(env))
        median = statistics.median(times) * 1e6
        p99 = times[int(0.99 * (len(times) - 1))] * 1e6
        print(f"{label:28s} {median:10.0f} {p99:10.0f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
