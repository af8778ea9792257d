"""Autumn interpreter speed: microseconds per step (rendering and observation included).

``python -m bench.autumn [--steps N] [--only-files] [--reference TIMES.json] [FILE.sexp ...]``
runs every registered environment tagged "autumn" (or, when none is registered, the test
programs shipped with the tests), plus any files given, for 2,000 steps of a fixed mix
of clicks on object cells, arrows and no-ops (fixed seed), and prints the median and
99th percentile per program. A step that fails (an Autumn runtime error) is timed like
any other and counted in the ``failed`` column: the program goes on, as it does for a
participant.

``--reference`` names a JSON object of another interpreter's median microseconds per
step by program file name (``{"gravity_4.sexp": 1017, ...}``, measured outside the
project, for example with the public C++ reference interpreter); each program found in
it is printed with the ratio of our median to its, and the median of the ratios last.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

from tasks import registry
from tasks.autumn import AutumnEnv, load_file
from tasks.autumn.errors import AutumnError

STEPS = 2000
TEST_PROGRAMS = Path(__file__).resolve().parent.parent / "tests" / "tasks" / "autumn" / "programs"


def programs(extra: list[str], only_files: bool = False) -> list[tuple[str, AutumnEnv]]:
    """(label, environment) for the registered Autumn programs, or the test programs,
    then the files given (only these with ``only_files``)."""
    if only_files:
        return [(Path(p).name, load_file(p)) for p in extra]
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


def measure(env: AutumnEnv, steps: int = STEPS, seed: int = 7) -> tuple[list[float], int]:
    """Seconds per step over ``steps`` steps (the choice of action is not timed), and how
    many of them failed."""
    rng = random.Random(seed)
    frame = env.reset(seed).frame
    background = str(env.background).lower()
    times, failed = [], 0
    for _ in range(steps):
        action = next_action(rng, frame, background)
        start = time.perf_counter()
        try:
            frame = env.step(action).frame
        except AutumnError:
            failed += 1
        times.append(time.perf_counter() - start)
    return times, failed


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.autumn", description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", metavar="FILE.sexp", help="more programs to time")
    parser.add_argument("--steps", type=int, default=STEPS, help="steps per program (default %(default)s)")
    parser.add_argument("--only-files", action="store_true",
                        help="time only the files given, not the registered programs")
    parser.add_argument("--reference", metavar="TIMES.json",
                        help="another interpreter's median microseconds per step, by file name")
    args = parser.parse_args(argv)
    if args.only_files and not args.files:
        parser.error("--only-files needs at least one FILE.sexp")
    reference = json.loads(Path(args.reference).read_text()) if args.reference else {}
    print(f"{'program':28s} {'median us':>10s} {'p99 us':>10s} {'failed':>7s}"
          + (f" {'reference us':>13s} {'ratio':>6s}" if reference else ""))
    ratios = []
    for label, env in programs(args.files, args.only_files):
        times, failed = measure(env, args.steps)
        times.sort()
        median = statistics.median(times) * 1e6
        p99 = times[int(0.99 * (len(times) - 1))] * 1e6
        line = f"{label:28s} {median:10.0f} {p99:10.0f} {failed:7d}"
        if label in reference:
            ratios.append(median / reference[label])
            line += f" {reference[label]:13.0f} {ratios[-1]:6.2f}"
        print(line, flush=True)
    if ratios:
        print(f"median ratio {statistics.median(ratios):.2f} over {len(ratios)} programs, "
              f"largest {max(ratios):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
