"""Load benchmark of the real-time server: simulated participants against ``gridstudy serve``.

    python -m bench.load --sessions 100 --seconds 15 [--repeat 3]
                         [--async-mode gevent[,threading]] [--no-search]

Starts the server in a subprocess on a temporary SQLite file, then N participants
(python-socketio clients, in a few worker processes) that open a recorded session, join
it and press random keys at human-like rates (exponential gaps, mean 0.35 s). It prints,
per run, tick lateness p50/p99 (from the stored events), frames delivered per frames
expected, events persisted per events expected, inputs accounted for, the server's CPU
and the load average before and after (the machine is shared). Several async modes are
measured in turn, run after run, so each variant is compared with the baseline under the
same load. Then, unless ``--no-search``, it adds participants in steps until p99 lateness
passes 25 ms and bisects between the last count that kept it and the first that did not,
down to ``--search-resolution`` sessions.

The participants run at a lower CPU priority (``--client-nice``, default 10): in a study
they are browsers on other machines, while here 100 python-socketio clients take about a
core of the server's two, and at equal priority the tail measured mostly how often they
preempted the server (p50 25 to 35 ms instead of 1 to 2 ms, measured).

The default problem is a 16x16 walker at 8 FPS (the highest frame rate in the paper);
``--problem ID`` uses a registered one (the Autumn library's run at 4-6 FPS).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import random
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from study_server.commands.serve import ASYNC_MODES, DEFAULT_ASYNC_MODE

BENCH_PROBLEM = "bench/walker16-planning"
KEYS = ("up", "down", "left", "right", "up", "down", "left", "right", "click 3 4", "noop")
TARGET_P99 = 0.025


# -- the server ---------------------------------------------------------------------------


def serve(port: int, db: str, async_mode: str, **config: Any) -> None:
    """The server process: register the bench problem, then ``gridstudy serve`` (with
    ``config`` on top of the database and async mode)."""
    from study_server.commands.serve import run
    from tasks import registry
    from tasks.worldtest.problem import Problem

    registry.register_env("bench/walker16", "tests.envs:Walker", width=16, height=16)
    registry.add_problem(Problem(BENCH_PROBLEM, "bench/walker16", "planning", 0,
                                 params={"goal_cells": [[15, 15]], "goal_colours": ["red"],
                                         "horizon": 10**9}))
    run({"DATABASE_URL": db, "ASYNC_MODE": async_mode, **config}, "127.0.0.1", port)


def start_server(db: str, async_mode: str) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "bench.load", "--serve", str(port), db, async_mode]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    wait_for(url)
    return process, url


def wait_for(url: str, timeout: float = 30) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/play/", timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"the server at {url} did not start within {timeout} s")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the participants ---------------------------------------------------------------------


def participant(url: str, problem: str, join_at: float, leave_at: float, seed: int) -> dict:
    """One simulated person: join at ``join_at``, press keys until ``leave_at``."""
    import httpx
    import socketio

    rng = random.Random(seed)
    time.sleep(max(0.0, join_at - time.time()))
    session = httpx.post(f"{url}/play/{problem}/session", params={"record": "1"},
                         timeout=30).json()
    states: list[float] = []
    client = socketio.Client(reconnection=False)
    client.on("state", lambda state: states.append(time.time()))
    client.on("ping", lambda m: answer_ping(client, m))
    client.connect(url, transports=["websocket"], wait_timeout=30)
    client.call("join", {"token": session["token"]}, timeout=30)
    joined, sent = time.time(), 0
    last_key = leave_at - 0.5  # the last keys are applied before leaving
    while (gap := min(rng.expovariate(1 / 0.35), last_key - time.time())) > 0:
        time.sleep(gap)
        if time.time() < last_key:
            client.emit("input", {"token": session["token"], "action": rng.choice(KEYS),
                                  "client_time": time.time()})
            sent += 1
    time.sleep(max(0.0, leave_at - time.time()))
    left = time.time()
    client.disconnect()
    return {"episode_id": session["episode_id"], "frame_rate": session["frame_rate"],
            "joined": joined, "left": left, "sent": sent,
            "states": sum(1 for t in states if joined < t <= left)}


def answer_ping(client: Any, message: dict) -> None:
    """Answer a clock ping, unless the participant has left meanwhile."""
    import socketio

    try:
        client.emit("pong", {"sent": message["sent"], "client_time": time.time()})
    except socketio.exceptions.BadNamespaceError:
        pass  # disconnected between the ping and its answer


def worker(args: tuple) -> list[dict]:
    """One client process: its participants in threads."""
    url, problem, plan = args
    results: list[dict] = []
    threads = [threading.Thread(target=lambda p=p: results.append(participant(url, problem, *p)))
               for p in plan]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def run_participants(url: str, problem: str, plan: list[tuple], processes: int,
                     nice: int) -> list[dict]:
    chunks = [plan[i::processes] for i in range(processes)]
    with multiprocessing.get_context("spawn").Pool(processes, os.nice, (nice,)) as pool:
        return [r for chunk in pool.map(worker, [(url, problem, c) for c in chunks if c])
                for r in chunk]


# -- the figures --------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def summarise(db: str, results: list[dict], cpu: float, wall: float) -> dict[str, Any]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT episode_id, seq, latency, source FROM event").fetchall()
        raw = connection.execute("SELECT COUNT(*) FROM rawinput").fetchone()[0]
    by_episode: dict[int, list[int]] = {}
    for episode_id, seq, _, _ in rows:
        by_episode.setdefault(episode_id, []).append(seq)
    expected = sum(math.floor((r["left"] - r["joined"]) * r["frame_rate"]) for r in results)
    lateness = [row[2] for row in rows]
    return {
        "sessions": len(results),
        "lateness_p50_ms": 1000 * percentile(lateness, 0.50),
        "lateness_p99_ms": 1000 * percentile(lateness, 0.99),
        "frames_delivered_per_expected": sum(r["states"] for r in results) / expected,
        "events_persisted_per_ticks_run": len(rows) / sum(max(s) + 1 for s in by_episode.values()),
        "seq_gaps": sum(max(s) + 1 - len(s) for s in by_episode.values()),
        "inputs_accounted": (sum(row[3] == "input" for row in rows) + raw)
        / max(1, sum(r["sent"] for r in results)),
        "server_cpu_percent_of_one_core": 100 * cpu / wall,
    }


def measure(sessions: int, seconds: float, async_mode: str, problem: str,
            processes: int, nice: int = 10) -> dict[str, Any]:
    """One run: N participants joining over 1 s, playing ``seconds``, then the figures."""
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.db")
        server, url = start_server(db, async_mode)
        try:
            start = time.time() + 3.0
            plan = [(start + i / max(1, sessions), start + 1 + seconds, i)
                    for i in range(sessions)]
            cpu0, wall0 = cpu_seconds(server.pid), time.monotonic()
            results = run_participants(url, problem, plan, processes, nice)
            cpu, wall = cpu_seconds(server.pid) - cpu0, time.monotonic() - wall0
        finally:
            server.terminate()
            server.wait(timeout=60)  # the store writes out its queue on the way down
        figures = summarise(db, results, cpu, wall)
    return {"async_mode": async_mode, **figures,
            "load_average": (load_before, os.getloadavg()[0])}


def row(figures: dict[str, Any]) -> str:
    """One run's figures on one line."""
    return ("{async_mode:<9} {sessions:4d} sessions  p50 {lateness_p50_ms:5.1f} ms  "
            "p99 {lateness_p99_ms:6.1f} ms  delivered {frames_delivered_per_expected:.3f}  "
            "persisted {events_persisted_per_ticks_run:.3f}  gaps {seq_gaps}  "
            "inputs {inputs_accounted:.3f}  cpu {server_cpu_percent_of_one_core:3.0f} %  "
            "load {load_average[0]:.1f}->{load_average[1]:.1f}").format(**figures)


def search(measure_count: Any, step: int, limit: int, resolution: int) -> int:
    """The largest session count whose p99 lateness stays within 25 ms.

    ``measure_count(n)`` runs n sessions and returns their figures. Counts go up in
    ``step`` until one fails (or ``limit``), then bisect between the last passing and the
    first failing count until they are ``resolution`` apart.
    """
    passed, failed = 0, None
    for sessions in range(step, limit + 1, step):
        if measure_count(sessions)["lateness_p99_ms"] > 1000 * TARGET_P99:
            failed = sessions
            break
        passed = sessions
    while failed is not None and failed - passed > resolution:
        middle = (passed + failed) // 2
        if measure_count(middle)["lateness_p99_ms"] > 1000 * TARGET_P99:
            failed = middle
        else:
            passed = middle
    return passed


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve"]:
        serve(int(argv[1]), argv[2], argv[3])
        return
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each async mode")
    parser.add_argument("--async-mode", default=DEFAULT_ASYNC_MODE,
                        help="comma-separated modes, measured in turn (the first is searched)")
    parser.add_argument("--problem", default=BENCH_PROBLEM)
    parser.add_argument("--processes", type=int, default=2, help="client worker processes")
    parser.add_argument("--client-nice", type=int, default=10,
                        help="CPU niceness of the simulated participants (0: as the server)")
    parser.add_argument("--no-search", action="store_true")
    parser.add_argument("--search-step", type=int, default=50)
    parser.add_argument("--search-resolution", type=int, default=10)
    parser.add_argument("--search-seconds", type=float, default=8.0)
    parser.add_argument("--search-limit", type=int, default=400)
    args = parser.parse_args(argv)
    modes = args.async_mode.split(",")
    for mode in modes:
        if mode not in ASYNC_MODES:
            parser.error(f"unknown async mode {mode!r}; expected one of {', '.join(ASYNC_MODES)}")
    print(f"{args.sessions} participants x {args.seconds:.0f} s on {args.problem}, "
          f"participants at nice {args.client_nice}, on a shared machine "
          "(load average: 1-minute, before->after each run)", flush=True)
    for _ in range(args.repeat):
        for mode in modes:
            print(row(measure(args.sessions, args.seconds, mode, args.problem,
                              args.processes, args.client_nice)), flush=True)
    if not args.no_search:
        def measure_count(sessions: int) -> dict[str, Any]:
            figures = measure(sessions, args.search_seconds, modes[0], args.problem,
                              args.processes, args.client_nice)
            print("  search: " + row(figures), flush=True)
            return figures

        best = search(measure_count, args.search_step, args.search_limit,
                      args.search_resolution)
        print(f"largest session count with p99 lateness <= 25 ms: {best} ({modes[0]}; "
              f"steps of {args.search_step}, then bisection to {args.search_resolution}, "
              f"{args.search_seconds:.0f} s each)")


if __name__ == "__main__":
    main()
