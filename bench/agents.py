"""Model turns per second through the LLM bridge, random-agent throughput in-process,
per environment, and the wall time of the full random baseline (002 Table E.3: 50
samples x 1000 steps for every cd and planning problem).

Reading a model's reply is measured on the longest reply a record keeps, for replies
naming no action that a model caught in a loop writes (every candidate tag or JSON
object is tried).

The bridge is measured end to end as ``gridstudy agent run`` plays: prompts, requests
over HTTP to the chat-completions stand-in (``bench.standin``, in its own process and
answering at once, so the time is the bridge's), reply parsing, the environment and
the store, at concurrency 1, 8 and 32; with the CPU this process spent per turn.

Run: ``python -m bench.agents [--bridge-turns N] [--seconds S] [--samples N] [--steps N]
[--skip-baseline]``. Figures depend on
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


PROBLEM = "ant_trail/planning"


def bridge_turns_per_second(base_url: str, concurrency: int, turns: int,
                            db: str) -> tuple[float, float, int]:
    """Play attempts of ``turns`` noop turns each, ``concurrency`` at a time (two
    attempts per thread), through the real batch and bridge; (turns per second, CPU
    milliseconds of this process per turn, turns played)."""
    import resource

    from game_client.batch import Batch, LocalRecords, pending_jobs
    from game_client.evaluate import Limits, ModelSpec, llm_run
    from records.store import Store

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    with Store(db) as store:
        run = llm_run(ModelSpec(f"bench-{concurrency}", base_url=base_url, retries=0),
                      Limits(max_turns=turns), sleep=lambda seconds: False)
        records = LocalRecords(store)
        run.agent_run_id = records.create_run(run.kind, run.model, run.config)
        jobs = pending_jobs(run, [PROBLEM], 2 * concurrency, [])
        started_cpu, started = cpu(), time.perf_counter()
        outcome = Batch(records.open_attempt, concurrency=concurrency, progress=False).run(jobs)
        wall, used = time.perf_counter() - started, cpu() - started_cpu
    played = sum(r.turns for r in outcome.results)
    return played / wall, 1000 * used / played, played


def bench_bridge(turns: int) -> None:
    import subprocess
    import sys
    import tempfile

    standin = subprocess.Popen([sys.executable, "-m", "bench.standin"], stdout=subprocess.PIPE,
                               text=True)
    try:
        base_url = standin.stdout.readline().strip()
        print(f"LLM bridge against the stand-in ({PROBLEM}, {turns} turns per attempt, "
              "recorded to SQLite)")
        print(f"{'concurrency':>11} {'turns/s':>9} {'CPU ms/turn':>12} {'turns':>7}")
        with tempfile.TemporaryDirectory() as folder:
            for concurrency in (1, 8, 32):
                rate, cpu_ms, played = bridge_turns_per_second(
                    base_url, concurrency, turns, f"{folder}/bridge-{concurrency}.db")
                print(f"{concurrency:>11} {rate:>9.1f} {cpu_ms:>12.2f} {played:>7}")
    finally:
        standin.terminate()
        standin.wait()


LOOPING_REPLIES = {
    "<action> repeated": ("<action>", "tag"),
    "<scratchpad_add> repeated": ("<scratchpad_add>", "tag"),
    '{"a":1, repeated': ('{"a":1,', "json"),
    '{"a": nested': ('{"a": ', "json"),
    '{"action": "up" repeated': ('{"action": "up"', "json"),
    '{"action": nested': ('{"action": ', "json"),
}
"""Replies naming no action that a model caught in a loop writes, each repeated to the
longest reply a record keeps."""


def bench_reply_reading() -> None:
    """How long reading the longest reply a record keeps takes, for replies naming no
    action (the worst case: every candidate is tried)."""
    from game_client.bridge.parse import ReplyError, extract_action, scratchpad_edits
    from records.schema import TURN_TEXT_LIMITS

    longest = TURN_TEXT_LIMITS["raw_reply"]
    print(f"reading a looping reply of {longest:,} characters (the longest a record keeps)")
    print(f"{'reply':<28} {'ms':>9}")
    for name, (piece, style) in LOOPING_REPLIES.items():
        reply = (piece * (longest // len(piece) + 1))[:longest]
        started = time.perf_counter()
        try:
            extract_action(reply, style)
        except ReplyError:
            pass
        scratchpad_edits(reply)
        print(f"{name:<28} {1000 * (time.perf_counter() - started):>9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bridge-turns", type=int, default=40, help="Turns per bridge attempt.")
    parser.add_argument("--seconds", type=float, default=1.0, help="Seconds per environment.")
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--skip-baseline", action="store_true",
                        help="Only the bridge and the per-environment rates.")
    args = parser.parse_args()
    bench_reply_reading()
    bench_bridge(args.bridge_turns)
    print(f"{'environment':<34} {'steps/s':>10} {'steps':>8}")
    for env_id in environments():
        rate, steps = steps_per_second(env_id, args.seconds)
        print(f"{env_id:<34} {rate:>10.0f} {steps:>8}")
    if args.skip_baseline:
        return
    problems = [registry.get_problem(s.id) for s in registry.list_problems()
                if s.challenge in ("cd", "planning")]
    started = time.perf_counter()
    run_baseline(problems, args.samples, args.steps)
    wall = time.perf_counter() - started
    print(f"random baseline: {len(problems)} cd/planning problems x {args.samples} samples x "
          f"<= {args.steps} steps: {wall:.1f} s wall")


if __name__ == "__main__":
    main()
