"""One participant plays while the server is flooded: their tick lateness, quiet and flooded.

    python -m bench.hostile [--seconds 15] [--login-rate 10] [--preview-rate 100]
                            [--limit-seconds 6]

Starts ``gridstudy serve``'s server (gevent, previews for researchers only, as in
production) in a subprocess on a temporary SQLite file with a researcher account. One
participant (a python-socketio client in this process, opened by the researcher) plays
the 16x16 walker at 8 FPS, pressing random keys. For ``--seconds`` nothing else happens;
then, for as long again, a login flood (wrong passwords at ``--login-rate`` a second,
each to a new username) and a preview flood (anonymous ``POST /play/.../session`` at
``--preview-rate`` a second, and the researcher's own previews as fast as the server
answers) run beside it. It prints the participant's tick lateness p50/p99 in each phase
(from the stored events), what the floods were answered, the server's memory and the
episodes the floods left in the database. Target: p99 at most 25 ms during the floods.

Between the quiet phase and the floods, a phase of ``--limit-seconds`` hits the step
limits: a second session (the researcher's preview) plays an Autumn program whose
``left`` asks for 200 million items (over its step budget), and a third a Python
environment whose ``left`` never returns (over its time limit, 0.5 s). For each it prints how long the step took to fail (timed
in this process on the same environment), how long after the key press the client was
told the game stopped, and the episode's status; and the first participant's lateness
while it happened.

The flooding clients run in this process at a lower CPU priority than the server, as in
``bench.load`` (on a real deployment they are other machines).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import socketio

from bench.load import BENCH_PROBLEM, KEYS, TARGET_P99, percentile, wait_for
from study_server.commands.serve import DEFAULT_ASYNC_MODE

PASSWORD = "correct horse battery"


LIMITED = {"step budget": ("bench/over-budget", "tests.envs:over_budget_env"),
           "step budget, reached slowly": ("bench/heavy", "tests.envs:heavy_env"),
           "time limit": ("bench/stuck", "tests.envs:Stuck")}
"""The environments whose ``left`` goes over a step limit: (environment id, entry point)."""


def limited_problem(env_id: str):
    from tasks.worldtest.problem import Problem
    return Problem(f"{env_id}-planning", env_id, "planning", 0,
                   params={"goal_cells": [[4, 4]], "goal_colours": ["gold"]})


def register_limited() -> None:
    from tasks import registry
    for env_id, entry_point in LIMITED.values():
        registry.register_env(env_id, entry_point, replace=True)
        registry.add_problem(limited_problem(env_id), replace=True)


def serve(port: int, db: str) -> None:
    """The server process: the bench problems and a researcher, then serve."""
    from bench.load import serve as serve_bench
    from records.store import Store
    from study_server import auth

    with Store(db) as store:
        auth.create_admin(store.engine, "researcher", PASSWORD)
    register_limited()
    serve_bench(port, db, DEFAULT_ASYNC_MODE, PREVIEW="researchers")


def start_server(db: str) -> tuple[subprocess.Popen, str, int]:
    """The server, its log (stderr) in ``<db>.log``."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "bench.hostile", "--serve", str(port), db],
                               stdout=subprocess.DEVNULL, stderr=open(f"{db}.log", "w"))
    url = f"http://127.0.0.1:{port}"
    wait_for(url)
    return process, url, process.pid


def logged_in(url: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30)
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/dashboard/login").text)[1]
    answer = client.post("/dashboard/login", data={"username": "researcher", "password": PASSWORD,
                                                   "csrf_token": token})
    if answer.status_code != 302:
        raise RuntimeError(f"the researcher could not log in: {answer.status_code}")
    return client


def cookie_of(client: httpx.Client) -> str:
    return "; ".join(f"{k}={v}" for k, v in client.cookies.items())


def play(url: str, researcher: httpx.Client, until: float, rng: random.Random,
         frames: list[float] | None = None) -> int:
    """The participant: open a recorded session, join, press keys until ``until``; the
    arrival time of every state goes into ``frames``."""
    answer = researcher.post(f"/play/{BENCH_PROBLEM}/session", params={"record": "1"})
    deadline = time.monotonic() + 60
    while answer.status_code == 503 and time.monotonic() < deadline:  # previews all taken
        time.sleep(2)  # (by the preview flood: unjoined ones go after UNJOINED_TIMEOUT)
        answer = researcher.post(f"/play/{BENCH_PROBLEM}/session", params={"record": "1"})
    if answer.status_code != 200:
        raise RuntimeError(f"the participant's session could not open: {answer.status_code} "
                           f"{answer.text[:300]}")
    opened = answer.json()
    client = socketio.Client(reconnection=False)
    client.on("ping", lambda m: client.emit("pong", {"sent": m["sent"], "client_time": time.time()}))
    if frames is not None:
        client.on("state", lambda state: frames.append(time.monotonic()))
    client.connect(url, transports=["websocket"], wait_timeout=30,
                   headers={"Cookie": cookie_of(researcher)})  # the preview is its opener's
    client.call("join", {"token": opened["token"]}, timeout=30)
    while time.time() < until:
        time.sleep(rng.expovariate(1 / 0.35))
        client.emit("input", {"token": opened["token"], "action": rng.choice(KEYS),
                              "client_time": time.time()})
    client.disconnect()
    return opened["episode_id"]


def step_time(env_id: str) -> tuple[float, str]:
    """Seconds the over-limit step takes to fail here, and the error's first line."""
    from tasks import registry
    register_limited()
    env = registry.make(env_id)
    env.reset(0)
    started = time.perf_counter()
    try:
        env.step("left")
    except Exception as error:  # the limit's error is the point
        return time.perf_counter() - started, f"{type(error).__name__}: {str(error).splitlines()[0]}"
    return time.perf_counter() - started, "no error"


def hit_limit(url: str, researcher: httpx.Client, env_id: str) -> tuple[float | None, int]:
    """Open a recorded preview of ``env_id``'s problem, press ``left``; seconds until the
    client is told the game stopped (None: never, within 10 s) and the episode id."""
    answer = researcher.post(f"/play/{env_id}-planning/session", params={"record": "1"})
    if answer.status_code != 200:
        raise RuntimeError(f"no preview of {env_id}: {answer.status_code} {answer.text[:200]}")
    opened = answer.json()
    client = socketio.Client(reconnection=False)
    stopped = threading.Event()
    client.on("ping", lambda m: client.emit("pong", {"sent": m["sent"], "client_time": time.time()}))
    client.on("state", lambda state: stopped.set() if state.get("stopped") else None)
    client.connect(url, transports=["websocket"], wait_timeout=30,
                   headers={"Cookie": cookie_of(researcher)})
    client.call("join", {"token": opened["token"]}, timeout=30)
    pressed = time.monotonic()
    client.emit("input", {"token": opened["token"], "action": "left", "client_time": time.time()})
    told = time.monotonic() - pressed if stopped.wait(10) else None
    client.disconnect()
    return told, opened["episode_id"]


def flood(stop: threading.Event, rate: float, request, answers: Counter) -> None:
    """Send ``request()`` ``rate`` times a second (as fast as answered when 0) until
    ``stop``; count the answers' status codes."""
    while not stop.is_set():
        started = time.monotonic()
        try:
            answers[request()] += 1
        except httpx.HTTPError as error:
            answers[type(error).__name__] += 1
        if rate:
            time.sleep(max(0.0, 1 / rate - (time.monotonic() - started)))


def login_attempt(url: str) -> int:
    client = httpx.Client(base_url=url, timeout=30)
    page = client.get("/dashboard/login").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)[1]
    return client.post("/dashboard/login", data={"username": f"guess{random.random()}",
                                                 "password": "wrong", "csrf_token": token}).status_code


FLOODS = {
    "input": lambda token: ("input", {"token": token, "action": "up", "client_time": 1.0}),
    "unknown": lambda token: ("no-such-event", {"a": 1}),
    "join": lambda token: ("join", {"token": token}),
}
"""What a flooding connection sends over and over (with a made-up token)."""


def socket_flood(url: str, kind: str, connections: int, seconds: float) -> int:
    """``connections`` anonymous Socket.IO connections, each in a process of its own at a
    lower CPU priority (a real flood comes from other machines; threads here would also
    starve this process's own clients of the GIL), each sending ``kind`` messages as fast
    as python-socketio can for ``seconds``; how many were sent in all."""
    context = multiprocessing.get_context("spawn")
    ready, go, sent = context.Barrier(connections + 1), context.Event(), context.Value("i", 0)
    floods = [context.Process(target=_flood_one, args=(url, kind, seconds, ready, go, sent))
              for _ in range(connections)]
    for flood_process in floods:
        flood_process.start()
    ready.wait(60)
    go.set()
    for flood_process in floods:
        flood_process.join(seconds + 60)
    return sent.value


def _flood_one(url: str, kind: str, seconds: float, ready: Any, go: Any, sent: Any) -> None:
    """One flooding connection (a process of :func:`socket_flood`)."""
    os.nice(10)
    client = socketio.Client(reconnection=False)
    try:
        client.connect(url, transports=["websocket"], wait_timeout=30)
    except socketio.exceptions.ConnectionError:
        ready.wait(60)
        return
    event, payload = FLOODS[kind](f"made-up-{os.getpid()}-{random.random()}"[:22])
    ready.wait(60)
    go.wait(60)
    count, deadline = 0, time.monotonic() + seconds
    try:
        while time.monotonic() < deadline and client.connected:
            client.emit(event, payload)
            count += 1
    except (socketio.exceptions.BadNamespaceError, OSError):
        pass  # the server closed the connection: it sent too much
    finally:
        with sent.get_lock():
            sent.value += count
        client.disconnect()


def page_seconds(url: str, stop: threading.Event, times: list[float]) -> None:
    """Load the login page over and over until ``stop``, noting how long each took."""
    client = httpx.Client(base_url=url, timeout=60)
    while not stop.is_set():
        started = time.monotonic()
        client.get("/dashboard/login")
        times.append(time.monotonic() - started)
        time.sleep(0.1)


def largest_gap(frames: list[float], since: float, until: float) -> float:
    """The longest time within [since, until] that passed without a frame: from the last
    frame before ``since`` (or ``since``) through the frames in between to ``until``. A
    freeze that began with the window counts in full, and so does one that lasted to its
    end (measured only between the frames inside, a freeze at the start was invisible)."""
    before = [t for t in frames if t < since]
    points = [before[-1] if before else since,
              *(t for t in frames if since <= t <= until), until]
    return max(b - a for a, b in zip(points, points[1:]))


def memory_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def lateness(db: str, episode_id: int, since: float, until: float) -> tuple[float, float, int]:
    with sqlite3.connect(db) as connection:
        values = [row[0] for row in connection.execute(
            "SELECT latency FROM event WHERE episode_id = ? AND server_time BETWEEN ? AND ?",
            (episode_id, since, until))]
    return 1000 * percentile(values, 0.5), 1000 * percentile(values, 0.99), len(values)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve"]:
        serve(int(argv[1]), argv[2])
        return
    parser = argparse.ArgumentParser(prog="python -m bench.hostile", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each phase")
    parser.add_argument("--login-rate", type=float, default=10.0)
    parser.add_argument("--preview-rate", type=float, default=100.0)
    parser.add_argument("--flood-seconds", type=float, default=2.0,
                        help="length of each socket flood")
    parser.add_argument("--settle", type=float, default=60.0,
                        help="seconds after the socket floods before memory is read again")
    parser.add_argument("--limit-seconds", type=float, default=6.0,
                        help="length of the phase that hits the step limits")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "hostile.db")
        server, url, pid = start_server(db)
        try:
            researcher = logged_in(url)
            start = time.time() + 1
            limits_from = start + args.seconds
            flood_from = limits_from + args.limit_seconds
            end = flood_from + args.seconds
            played: list[int] = []
            player = threading.Thread(target=lambda: played.append(
                play(url, researcher, end, random.Random(0))))
            player.start()
            time.sleep(max(0.0, limits_from - time.time()))
            limit_hits = {}
            for limit, (env_id, _) in LIMITED.items():
                time.sleep(1.0)
                limit_hits[limit] = hit_limit(url, researcher, env_id)
            time.sleep(max(0.0, flood_from - time.time()))
            memory_quiet = memory_mb(pid)
            stop, logins, previews, own = threading.Event(), Counter(), Counter(), Counter()
            anonymous = httpx.Client(base_url=url, timeout=30)
            flooder = logged_in(url)
            threads = [
                threading.Thread(target=flood, args=(stop, args.login_rate, lambda: login_attempt(url), logins)),
                threading.Thread(target=flood, args=(stop, args.preview_rate, lambda: anonymous.post(
                    f"/play/{BENCH_PROBLEM}/session", params={"record": "1"}).status_code, previews)),
                threading.Thread(target=flood, args=(stop, 0, lambda: flooder.post(
                    f"/play/{BENCH_PROBLEM}/session", params={"record": "1"}).status_code, own)),
            ]
            for thread in threads:
                thread.start()
            player.join()
            stop.set()
            for thread in threads:
                thread.join()
            memory_flooded = memory_mb(pid)
            socket_rows = socket_floods(url, flooder, pid, f"{db}.log", args.flood_seconds,
                                        args.settle)
        finally:
            server.terminate()
            server.wait(timeout=60)
        quiet = lateness(db, played[0], start, limits_from)
        limited = lateness(db, played[0], limits_from, flood_from)
        flooded = lateness(db, played[0], flood_from, end)
        with sqlite3.connect(db) as connection:
            episodes = connection.execute("SELECT COUNT(*) FROM episode").fetchone()[0]
            raw_rows = connection.execute("SELECT COUNT(*) FROM rawinput").fetchone()[0]
            statuses = {limit: connection.execute("SELECT status FROM episode WHERE id = ?",
                                                  (episode_id,)).fetchone()[0]
                        for limit, (_, episode_id) in limit_hits.items()}
    print(f"quiet    p50 {quiet[0]:5.1f} ms  p99 {quiet[1]:6.1f} ms  ({quiet[2]} ticks)")
    print(f"flooded  p50 {flooded[0]:5.1f} ms  p99 {flooded[1]:6.1f} ms  ({flooded[2]} ticks)  "
          f"target p99 <= {1000 * TARGET_P99:.0f} ms: "
          f"{'met' if flooded[1] <= 1000 * TARGET_P99 else 'NOT met'}")
    print(f"login flood answered: {dict(logins)}")
    print(f"anonymous preview flood answered: {dict(previews)}")
    print(f"researcher preview flood answered: {dict(own)}")
    print(f"server memory: {memory_quiet:.0f} MB quiet, {memory_flooded:.0f} MB after the floods; "
          f"episodes in the database: {episodes}; raw input rows: {raw_rows}")
    for limit, (env_id, _) in LIMITED.items():
        took, error = step_time(env_id)
        told = limit_hits[limit][0]
        print(f"{limit}: the step failed after {1000 * took:.1f} ms here ({error}); "
              f"the client was told it stopped {'never' if told is None else f'{1000 * told:.0f} ms'}"
              f" after the key; episode status {statuses[limit]}")
    print(f"limits   p50 {limited[0]:5.1f} ms  p99 {limited[1]:6.1f} ms  ({limited[2]} ticks)  "
          "(the first participant, while the limits were hit)")
    print("socket floods (a participant plays meanwhile; targets: largest frame gap <= 0.5 s, "
          "page <= 1 s, a few log lines):")
    for line in socket_rows:
        print("  " + line)


SOCKET_FLOODS = (("input", 1), ("unknown", 1), ("join", 1), ("input", 20))
"""(what each connection sends, how many connections) of each socket flood."""


def socket_floods(url: str, researcher: httpx.Client, pid: int, log: str, seconds: float,
                  settle: float) -> list[str]:
    """Each of :data:`SOCKET_FLOODS` for ``seconds`` while a participant plays: per flood,
    the messages sent, the participant's largest wait for a frame, the slowest page, the
    log lines written and the memory; then the memory ``settle`` seconds later.
    ``researcher`` is signed in (its latest login: a login ends the earlier ones)."""
    frames: list[float] = []
    until = time.time() + len(SOCKET_FLOODS) * (seconds + 3) + 64
    player = threading.Thread(target=play, args=(url, researcher, until, random.Random(1), frames))
    player.start()
    while not frames and player.is_alive():  # its session may wait for a free preview
        time.sleep(0.2)
    time.sleep(2)
    rows, before = [], memory_mb(pid)
    for kind, connections in SOCKET_FLOODS:
        lines = len(Path(log).read_text().splitlines())
        stop, pages = threading.Event(), []
        pager = threading.Thread(target=page_seconds, args=(url, stop, pages))
        pager.start()
        started = time.monotonic()
        sent = socket_flood(url, kind, connections, seconds)
        ended = time.monotonic()
        time.sleep(1)
        stop.set()
        pager.join()
        written = len(Path(log).read_text().splitlines()) - lines
        rows.append(f"{kind:<8} x{connections:<3} sent {sent:6d}  largest frame gap "
                    f"{largest_gap(frames, started, ended + 1):5.2f} s  slowest page "
                    f"{max(pages, default=float('nan')):5.2f} s  log lines {written:3d}  "
                    f"memory {memory_mb(pid):5.0f} MB")
        time.sleep(2)
    player.join()
    time.sleep(settle)
    after = memory_mb(pid)
    rows.append(f"memory: {before:.0f} MB before the socket floods, {after:.0f} MB {settle:.0f} s "
                f"after ({100 * (after - before) / before:+.1f} %)")
    return rows


if __name__ == "__main__":
    main()
