"""Load benchmark of the real-time server: simulated participants against ``gridstudy serve``.

    python -m bench.load --sessions 100 --seconds 15 [--repeat 3]
                         [--async-mode gevent[,threading]] [--no-search]
                         [--workers N] [--db URL] [--busy N] [--mix]
                         [--agents N [--agent-problem ID]]

Starts the server in a subprocess (one process on a temporary SQLite file by default;
``--db URL`` puts it on that database, and ``--workers N`` runs N workers behind nginx
with a temporary Redis and, unless ``--db`` says otherwise, a temporary PostgreSQL, as
``gridstudy serve --workers`` does). Then N participants open a recorded session each,
join it and press random keys at human-like rates (exponential gaps, mean 0.35 s).

The participants are one asyncio process speaking Engine.IO 4 / Socket.IO 5 over one
WebSocket each (:class:`Participant`): a state is counted by its first bytes, never
decoded, so the generator costs a small part of what the server it measures does (its
CPU is printed beside the server's). Each participant carries its own route cookie, so
that nginx spreads them over the workers as it spreads browsers.

Participants join evenly over ``--arrivals`` seconds (1 by default), then all play on
for ``--seconds``. A launch on Prolific brings people over minutes; joining costs the
server several times what a second of play does, so the arrival second is what a
one-second burst of 200 strains.

It prints, per run: tick lateness p50/p99 (from the stored events; the p99 again over
the ticks from a second after the last join, when the arrivals' cost is over), frames delivered per
frames expected (the ticks from the first state a participant received to its last, so
that idle ticks, which send a state only now and then, count as shown), events persisted per ticks run, gaps in ``seq``, inputs accounted for,
the CPU of the workers, of nginx/PostgreSQL/Redis and of the generator, and the workers'
CPU-seconds per session-second (so 1 / that is the sessions one core carries) and what
the server sent each participant a second (``wire``: the characters of its messages,
Engine.IO framing included; they are ASCII, so bytes). Several
async modes are measured in turn, run after run. Then, unless ``--no-search``, it adds
participants in steps until p99 lateness passes 25 ms and bisects between the last count
that kept it and the first that did not, down to ``--search-resolution`` sessions.

The generator runs at a lower CPU priority (``--client-nice``, default 10): in a study
the participants are browsers on other machines. ``--busy N`` runs N CPU-bound processes
beside the server for the whole run, at the server's priority: a shared lab machine.

The default problem is a 16x16 walker at 8 FPS (the highest frame rate in the paper);
``--problem ID`` uses a registered one (the Autumn library's run at 4-6 FPS).
``--mix`` measures the study's real mix beside the walker: each run is followed by one
of as many participants spread in turn over every registered problem (every library
environment, every challenge), printed on its own line, then the mix's lateness by
challenge (the server's CPU is the run's as a whole: sessions share the process).
``--agents N`` evaluates a model through the same server while the participants play:
``gridstudy agent run --server`` with a random agent (it answers at once, so the server
gets turns as fast as N attempts at once can send them) on ``--agent-problem``, begun
before the participants join; the line adds the turns the server stored a second.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import multiprocessing
import os
import random
import resource
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from study_server.commands.serve import ASYNC_MODES, DEFAULT_ASYNC_MODE

BENCH_PROBLEM = "bench/walker16-planning"
KEYS = ("up", "down", "left", "right", "up", "down", "left", "right", "click 3 4", "noop")
TARGET_P99 = 0.025


# -- the server ---------------------------------------------------------------------------


def register_walker() -> None:
    """The load test's 16x16 walker at 8 FPS (``BENCH_PROBLEM``), in this process."""
    from tasks import registry
    from tasks.worldtest.problem import Problem

    if BENCH_PROBLEM in {spec.id for spec in registry.list_problems()}:
        return
    registry.register_env("bench/walker16", "tests.envs:Walker", width=16, height=16)
    registry.add_problem(Problem(BENCH_PROBLEM, "bench/walker16", "planning", 0,
                                 params={"goal_cells": [[15, 15]], "goal_colours": ["red"],
                                         "horizon": 10**9}))


def serve(port: int, db: str, async_mode: str, profile: str | None = None,
          **config: Any) -> None:
    """The server process: register the bench problem, then ``gridstudy serve`` (with
    ``config`` on top of the database and async mode), sampled into ``profile`` if given
    (:mod:`bench.profile`)."""
    from bench.profile import sampling
    from study_server.commands.serve import run

    register_walker()
    # the simulated participants open previews (no study), as many as the run asks for:
    # the cap that keeps a flood of them from holding memory would refuse the run itself
    config = {"MAX_PREVIEWS": 1_000_000, **config}
    with sampling(profile) if profile else contextlib.nullcontext():
        run({"DATABASE_URL": db, "ASYNC_MODE": async_mode, **config}, "127.0.0.1", port,
            announce=lambda app, url: None)


class Server:
    """What runs for one measurement: one server process, or N workers behind nginx with
    Redis (and PostgreSQL unless a database was given); stopped by :meth:`stop`."""

    def __init__(self, db: str | None, async_mode: str, workers: int, folder: Path,
                 profile: str | None = None) -> None:
        from study_server import services

        self.services: list[Any] = []
        self.supervisor: Any = None
        self.process: subprocess.Popen | None = None
        self.stopped = False
        if workers > 1 and db is None:
            folder.chmod(0o711)  # PostgreSQL runs as its own user under root
            self.services.append(services.start_postgres(folder / "postgres", durable=False))
            db = self.services[-1].url
        self.db = db or str(folder / "bench.db")
        if workers > 1:
            from study_server.workers import Supervisor

            self.services.append(services.start_redis(folder / "redis"))
            port = services.free_port()
            self.supervisor = Supervisor(
                workers, "127.0.0.1", port, folder / "run", [],
                env={"DATABASE_URL": self.db, "SOCKETIO_MESSAGE_QUEUE": self.services[-1].url},
                command=[sys.executable, "-m", "bench.load", "--serve-worker", async_mode])
            (folder / "run").mkdir()
            self.supervisor.start()
            self.url = f"http://127.0.0.1:{port}"
        else:
            port = services.free_port()
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bench.load", "--serve", str(port), self.db, async_mode,
                 *([profile] if profile else [])],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.url = f"http://127.0.0.1:{port}"
        wait_for(self.url)

    def worker_pids(self) -> list[int]:
        if self.supervisor is not None:
            return [p.pid for p in self.supervisor.processes.values()]
        return [self.process.pid]

    def helper_pids(self) -> list[int]:
        """nginx, PostgreSQL and Redis (each with its children)."""
        pids = [s.process.pid for s in self.services]
        if self.supervisor is not None:
            pids.append(self.supervisor.nginx.process.pid)
        return pids

    def stop(self) -> None:
        """SIGTERM: the workers write out their queues on the way down."""
        if self.stopped:
            return
        self.stopped = True
        if self.supervisor is not None:
            self.supervisor.stop()
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=60)

    def close(self) -> None:
        for service in reversed(self.services):
            service.stop()


def wait_for(url: str, timeout: float = 60) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/play/", timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"the server at {url} did not start within {timeout} s")


def tree_cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds so far of these processes and all their descendants
    (Linux /proc: PostgreSQL and nginx work in children)."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    wanted, total = set(pids), 0.0
    for pid in times:
        ancestor = pid
        while ancestor and ancestor not in wanted:
            ancestor = parents.get(ancestor, 0)
        if ancestor:
            total += times[pid]
    return total


# -- the participants ---------------------------------------------------------------------


class Participant:
    """One simulated person on one WebSocket, speaking Engine.IO 4 / Socket.IO 5 as the
    browser client does: ``40`` opens the default namespace, ``42[...]`` is an event, the
    server's Engine.IO ping ``2`` is answered ``3``, and a clock ``ping`` event with a
    ``pong``."""

    def __init__(self, url: str, problem: str, join_at: float, leave_at: float,
                 seed: int) -> None:
        self.url, self.problem = url, problem
        self.join_at, self.leave_at = join_at, leave_at
        self.rng = random.Random(seed)
        self.cookie = f"gridstudy_route={secrets.token_urlsafe(9)}"
        self.states: list[float] = []
        """When each frame was shown (browser play: the page's own ticks)."""
        self.shown: list[tuple[float, int]] = []
        """(when, tick) of each state received: the ticks the participant's view covered."""
        self.received = 0
        """Characters of every message the server sent (Engine.IO's framing included)."""
        self.sent = 0
        self.acks: asyncio.Queue = asyncio.Queue()
        """Answers to the events sent with an acknowledgement id, in order."""

    async def _open(self, http: Any, params: dict[str, str]) -> dict[str, Any]:
        """A new recorded session of the problem (what the page's script asks for); a
        refusal stops the run naming the server's answer."""
        answer = await http.post(f"{self.url}/play/{self.problem}/session", params=params,
                                 headers={"Cookie": self.cookie})
        if answer.status_code != 200:
            raise RuntimeError(f"opening a session of {self.problem}: HTTP {answer.status_code} "
                               f"{answer.text[:300]!r}")
        return answer.json()

    async def run(self, http: Any) -> dict[str, Any]:
        import websockets

        await asyncio.sleep(max(0.0, self.join_at - time.time()))
        opened = await self._open(http, {"record": "1"})
        token = opened["token"]
        address = self.url.replace("http", "ws", 1) + "/socket.io/?EIO=4&transport=websocket"
        async with websockets.connect(address, additional_headers={"Cookie": self.cookie},
                                      compression=None, max_size=None,
                                      open_timeout=30) as socket:
            await socket.recv()  # Engine.IO open
            await socket.send("40")
            while not (await socket.recv()).startswith("40"):
                pass
            await socket.send("42" + json.dumps(["join", {"token": token}]))
            joined = time.time()
            self.ready = asyncio.Event()
            reader = asyncio.create_task(self._read(socket))
            # keys only once the game is shown, as a page sends them: an input sent before
            # the join is handled is refused unread (the door), and never stored
            await asyncio.wait_for(self.ready.wait(), 60)
            await self._press(socket, token)
            left = time.time()
            reader.cancel()
        return {"problem": self.problem, "episode_id": opened["episode_id"],
                "frame_rate": opened["frame_rate"],
                "joined": joined, "left": left, "sent": self.sent, "received": self.received,
                "states": _ticks_shown([(t, k) for t, k in self.shown if joined < t <= left])}

    async def _read(self, socket: Any) -> None:
        async for message in socket:
            self.received += len(message)
            if message.startswith('42["state"'):
                tick = json.loads(message[2:])[1].get("tick")
                if tick is not None:  # else a notice that the game stands still, or goes on
                    self.shown.append((time.time(), tick))
                    self.ready.set()
            elif message.startswith("43"):  # an acknowledgement: 43<id>[answer]
                self.acks.put_nowait(json.loads(message[message.index("["):])[0])
            elif message == "2":
                await socket.send("3")
            elif message.startswith('42["ping"'):
                sent = json.loads(message[2:])[1]["sent"]
                await socket.send("42" + json.dumps(["pong", {"sent": sent,
                                                              "client_time": time.time()}]))

    async def _press(self, socket: Any, token: str) -> None:
        last_key = self.leave_at - 0.5  # the last keys are applied before leaving
        while (gap := min(self.rng.expovariate(1 / 0.35), last_key - time.time())) > 0:
            await asyncio.sleep(gap)
            if time.time() < last_key:
                await socket.send("42" + json.dumps(["input", {
                    "token": token, "action": self.rng.choice(KEYS), "client_time": time.time()}]))
                self.sent += 1
        await asyncio.sleep(max(0.0, self.leave_at - time.time()))


ANSWER_WAIT = 60.0
"""Seconds a simulated page waits for the answer to a batch of its log before the run
stops, naming it (a page that waited for good would hang the benchmark)."""


class BrowserParticipant(Participant):
    """One simulated person whose page ticks the game itself (browser play): the same
    engine (``tasks.worldtest.verify.LocalPlay``, here in CPython) at the frame rate,
    keys admitted between ticks, and the play log sent every ``log_every`` seconds (once
    a second, as ``game.js`` does) as ``log`` events, each acknowledged before the next
    is sent."""

    def __init__(self, *args: Any, log_every: float = 1.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.log_every = log_every

    async def run(self, http: Any) -> dict[str, Any]:
        import websockets

        from tasks.worldtest.verify import LocalPlay

        await asyncio.sleep(max(0.0, self.join_at - time.time()))
        opened = await self._open(http, {"play": "browser"})
        token, period = opened["token"], 1.0 / opened["frame_rate"]
        address = self.url.replace("http", "ws", 1) + "/socket.io/?EIO=4&transport=websocket"
        async with websockets.connect(address, additional_headers={"Cookie": self.cookie},
                                      compression=None, max_size=None, open_timeout=30) as socket:
            await socket.recv()
            await socket.send("40")
            while not (await socket.recv()).startswith("40"):
                pass
            await socket.send("420" + json.dumps(["join-browser", {"token": token}]))
            reader = asyncio.create_task(self._read(socket))
            record = await self.acks.get()
            local = LocalPlay(self.problem, json.dumps(record["record"]))
            joined = time.time()
            ticks = asyncio.create_task(self._tick(local, period))
            acked, number = record["record"]["next"], 1
            last_key = self.leave_at - 0.5
            while time.time() < self.leave_at and not _over(local):
                await asyncio.sleep(min(self.rng.expovariate(1 / 0.35), 0.25))
                if time.time() < last_key and self.rng.random() < 0.7 and not _over(local):
                    local.admit(self.rng.choice(KEYS), time.time())
                    self.sent += 1
                if time.time() - getattr(self, "flushed", 0.0) >= self.log_every:
                    acked, number = await self._flush(socket, token, local, acked, number)
            while local.engine.queue and not _over(local) and not ticks.done():
                await asyncio.sleep(period)  # a key pressed last is ticked before leaving
            ticks.cancel()
            left = time.time()
            while acked < local.logged():  # everything played is stored before leaving
                acked, number = await self._flush(socket, token, local, acked, number)
            reader.cancel()
        return {"problem": self.problem, "episode_id": opened["episode_id"],
                "frame_rate": opened["frame_rate"], "joined": joined, "left": left,
                "sent": self.sent, "received": self.received, "states": len(self.states),
                "verified": self.verified, "batches": number - 1}

    async def _tick(self, local: Any, period: float) -> None:
        """Tick at the frame rate until the attempt is over (``game.js`` stops there)."""
        due = time.time()
        while True:
            due += period
            await asyncio.sleep(max(0.0, due - time.time()))
            local.tick()
            self.states.append(time.time())
            if _over(local):
                return

    async def _flush(self, socket: Any, token: str, local: Any, acked: int,
                     number: int) -> tuple[int, int]:
        self.flushed = time.time()
        batch = json.loads(local.since(acked, 256))
        if not batch:
            return acked, number
        await socket.send(f"42{number}" + json.dumps(["log", {"token": token, "batch": batch}]))
        try:
            answer = await asyncio.wait_for(self.acks.get(), ANSWER_WAIT)
        except TimeoutError:
            raise RuntimeError(f"{self.problem}: the server did not answer a batch of the play "
                               f"log within {ANSWER_WAIT:g} s (entries {batch[0]['n']} to "
                               f"{batch[-1]['n']})") from None
        self.verified = answer.get("verified", False)
        return (answer["next"] if answer.get("ok") else acked), number + 1


def _over(local: Any) -> bool:
    """Whether a page's attempt is over: its keys are ignored and its ticks stop there,
    as ``game.js`` does (an episode at its end, or an environment that cannot go on)."""
    return local.episode.phase == "done" or local.engine.stopped is not None


def _ticks_shown(shown: list[tuple[float, int]]) -> int:
    """The ticks a participant's view kept up with: from the first state's tick to the
    last one's (an idle tick sends a state only now and then, ``changes.idle_every``: its
    picture is the one before; a lost state leaves the view behind until a later one)."""
    ticks = [tick for _, tick in shown]
    return max(ticks) - min(ticks) + 1 if ticks else 0


async def _crowd(url: str, plan: list[tuple], browser: bool = False,
                 log_every: float = 1.0) -> list[dict]:
    import httpx

    limits = httpx.Limits(max_connections=50)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        people = [BrowserParticipant(url, *p, log_every=log_every) if browser
                  else Participant(url, *p) for p in plan]
        return list(await asyncio.gather(*(person.run(http) for person in people)))


def crowd(args: tuple) -> tuple[list[dict], float]:
    """The generator process: every participant, and the CPU seconds it took."""
    url, plan, browser, log_every = args
    if browser:  # the pages tick the walker themselves
        register_walker()
    results = asyncio.run(_crowd(url, plan, browser, log_every))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return results, usage.ru_utime + usage.ru_stime


def run_participants(url: str, plan: list[tuple], nice: int, browser: bool = False,
                     log_every: float = 1.0) -> tuple[list[dict], float]:
    """``plan``: (problem, join at, leave at, seed) per participant; ``browser``: each
    page ticks its game itself (browser play)."""
    with multiprocessing.get_context("spawn").Pool(1, os.nice, (nice,)) as pool:
        return pool.apply(crowd, ((url, plan, browser, log_every),))


# -- the figures --------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def summarise(db: str, results: list[dict], cpu: dict[str, float], wall: float) -> dict[str, Any]:
    """The run's figures, and under ``"by_challenge"`` the same (CPU left out) for the
    participants of each challenge. Only this run's episodes are read: a database given
    with ``--db`` may hold earlier runs (``--repeat``, ``--mix``, or another day's)."""
    from sqlalchemy import text

    from records.database import make_engine

    challenge_of = {r["episode_id"]: r["challenge"] for r in results}
    engine = make_engine(db)
    try:
        with engine.connect() as connection:
            rows = [row for row in connection.execute(
                text("SELECT episode_id, seq, latency, source, server_time FROM event"))
                if row[0] in challenge_of]
            raw = [row for row in connection.execute(text("SELECT episode_id FROM rawinput"))
                   if row[0] in challenge_of]
    finally:
        engine.dispose()
    by_challenge = {}
    for name in sorted(set(challenge_of.values())):
        by_challenge[name] = delivery([r for r in results if r["challenge"] == name],
                                      [e for e in rows if challenge_of.get(e[0]) == name],
                                      sum(challenge_of.get(r[0]) == name for r in raw))
    session_seconds = sum(r["left"] - r["joined"] for r in results)
    return {
        **delivery(results, rows, len(raw)),
        "server_cpu_percent_of_one_core": 100 * cpu["workers"] / wall,
        "helpers_cpu_percent_of_one_core": 100 * cpu["helpers"] / wall,
        "generator_cpu_percent_of_one_core": 100 * cpu["generator"] / wall,
        "server_cpu_per_session_second": cpu["workers"] / session_seconds,
        "received_per_session_second": sum(r["received"] for r in results) / session_seconds,
        "by_challenge": by_challenge,
    }


def delivery(results: list[dict], rows: list, raw: int) -> dict[str, Any]:
    """Lateness, delivery and the record's completeness for some participants: their
    results, their event rows (episode, seq, latency, source, server time) and rawinput
    row count. Lateness is given over every tick and, apart, over the ticks from a second
    after the last participant joined to the first one's leaving: the arrivals cost the
    server more than the play, and a burst of them (every participant within one second,
    the default) makes most of the whole run's tail."""
    by_episode: dict[int, list[int]] = {}
    for episode_id, seq, *_ in rows:
        by_episode.setdefault(episode_id, []).append(seq)
    expected = sum(math.floor((r["left"] - r["joined"]) * r["frame_rate"]) for r in results)
    lateness = [row[2] for row in rows if row[2] is not None]  # none in browser play
    settled = max(r["joined"] for r in results) + 1.0
    ending = min(r["left"] for r in results)
    playing = [row[2] for row in rows if row[2] is not None and settled <= row[4] <= ending]
    return {
        "sessions": len(results),
        "lateness_p50_ms": 1000 * percentile(lateness, 0.50),
        "lateness_p99_ms": 1000 * percentile(lateness, 0.99),
        "lateness_p99_joined_ms": 1000 * percentile(playing, 0.99),
        "frames_delivered_per_expected": sum(r["states"] for r in results) / expected,
        "events_persisted_per_ticks_run": len(rows) / sum(max(s) + 1 for s in by_episode.values()),
        "seq_gaps": sum(max(s) + 1 - len(s) for s in by_episode.values()),
        "inputs_accounted": (sum(row[3] == "input" for row in rows) + raw)
        / max(1, sum(r["sent"] for r in results)),
    }


def spin(until: float) -> None:
    """Burn a CPU until ``until`` (a ``--busy`` process)."""
    count = 0
    while time.time() < until:
        for _ in range(100_000):
            count += 1


@contextlib.contextmanager
def busy(processes: int, seconds: float) -> Iterator[None]:
    """``processes`` CPU-bound processes for as long as the block runs (at most
    ``seconds``, in case the block never ends)."""
    context = multiprocessing.get_context("spawn")
    spinners = [context.Process(target=spin, args=(time.time() + seconds,), daemon=True)
                for _ in range(processes)]
    for spinner in spinners:
        spinner.start()
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.terminate()
            spinner.join()


AGENT_PROBLEM = "bee_hive/planning"
"""What ``--agents`` evaluates: a heavy library program (a step of about 0.2 ms)."""


def agent_turns(db: str) -> int:
    """The agents' events the database holds (every turn of every agent attempt)."""
    from sqlalchemy import text

    from records.database import make_engine

    engine = make_engine(db)
    try:
        with engine.connect() as connection:
            return connection.execute(text(
                "SELECT count(*) FROM event JOIN episode ON episode.id = event.episode_id "
                "WHERE episode.agent_run_id IS NOT NULL")).scalar_one()
    finally:
        engine.dispose()


@contextlib.contextmanager
def evaluation(url: str, db: str, agents: int, problem: str,
               nice: int) -> Iterator[dict[str, Any]]:
    """``agents`` attempts at once of a random agent on ``problem`` through the agent API
    of the server at ``url`` on ``db`` (``gridstudy agent run --server``, at CPU niceness
    ``nice``), playing
    from before the block until after it; the dict yielded gets, after the block, the
    turns the server stored a second meanwhile. Nothing with ``agents`` 0."""
    figures: dict[str, Any] = {}
    if not agents:
        yield figures
        return
    from records.database import make_engine
    from study_server import tokens

    engine = make_engine(db)
    try:
        secret = tokens.create(engine, f"bench-{secrets.token_hex(4)}")
    finally:
        engine.dispose()
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "gridstudy"), "agent", "run", "--server",
         url, "--agent", "random", "--problems", problem, "--runs", "1000000",
         "--concurrency", str(agents), "--interaction-steps", "50", "--quiet"],
        env={**os.environ, "GRIDSTUDY_TOKEN": secret}, preexec_fn=lambda: os.nice(nice),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while agent_turns(db) < 100:  # playing at full speed before the block
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the evaluation through the server did not start "
                                   f"(exit status {process.returncode})")
            time.sleep(0.5)
        turns, started = agent_turns(db), time.monotonic()
        yield figures
        figures["agent_turns_per_second"] = ((agent_turns(db) - turns)
                                             / (time.monotonic() - started))
    finally:
        process.send_signal(signal.SIGINT)  # as its user stops it: attempts end resumable
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def measure(sessions: int, seconds: float, async_mode: str, problem: str | list[str],
            nice: int = 10, workers: int = 1, db: str | None = None,
            busy_processes: int = 0, browser: bool = False,
            profile: str | None = None, arrivals: float = 1.0,
            log_every: float = 1.0, agents: int = 0,
            agent_problem: str = AGENT_PROBLEM) -> dict[str, Any]:
    """One run: N participants joining evenly over ``arrivals`` seconds, all playing on
    ``seconds`` after the last has joined, then the figures. Given a list of problems,
    participant i plays problem i modulo its length. ``log_every``: seconds between two
    batches of a page's play log (browser play; ``game.js`` sends one a second);
    ``agents``: attempts at once of a model evaluated through the server meanwhile."""
    problems = [problem] if isinstance(problem, str) else problem
    with busy(busy_processes, arrivals + seconds + 120):
        return _measure(sessions, seconds, async_mode, problems, nice, workers, db, browser,
                        profile, arrivals, log_every, agents, agent_problem)


def mix_problems() -> list[str]:
    """Every registered problem: every library environment with every challenge."""
    from tasks import registry
    return [spec.id for spec in registry.list_problems()]


def arrival_plan(problems: list[str], sessions: int, seconds: float, arrivals: float,
                 start: float) -> list[tuple[str, float, float, int]]:
    """(problem, join at, leave at, seed) of each participant: problem i modulo the list,
    joins evenly spread over ``arrivals`` seconds from ``start``, and everyone leaving
    together ``seconds`` after the arrivals end.

    >>> [(p, round(j, 2), leave) for p, j, leave, _ in arrival_plan(["a", "b"], 3, 10, 1.5, 0)]
    [('a', 0.0, 11.5), ('b', 0.5, 11.5), ('a', 1.0, 11.5)]
    """
    return [(problems[i % len(problems)], start + arrivals * i / max(1, sessions),
             start + arrivals + seconds, i) for i in range(sessions)]


def _measure(sessions: int, seconds: float, async_mode: str, problems: list[str], nice: int,
             workers: int, db: str | None, browser: bool = False,
             profile: str | None = None, arrivals: float = 1.0,
             log_every: float = 1.0, agents: int = 0,
             agent_problem: str = AGENT_PROBLEM) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(db, async_mode, workers, Path(tmp), profile)
        try:
            with evaluation(server.url, server.db, agents, agent_problem,
                            nice) as evaluated:
                start = time.time() + 3.0
                plan = arrival_plan(problems, sessions, seconds, arrivals, start)
                pids, helpers = server.worker_pids(), server.helper_pids()
                cpu0 = tree_cpu_seconds(pids), tree_cpu_seconds(helpers)
                wall0 = time.monotonic()
                results, generator = run_participants(server.url, plan, nice, browser,
                                                      log_every)
                wall = time.monotonic() - wall0
                cpu = {"workers": tree_cpu_seconds(pids) - cpu0[0],
                       "helpers": tree_cpu_seconds(helpers) - cpu0[1], "generator": generator}
            server.stop()
            for result in results:
                result["challenge"] = challenge(result["problem"])
            figures = summarise(server.db, results, cpu, wall)
        finally:
            server.stop()
            server.close()
    return {"async_mode": async_mode, "workers": workers, **figures, **evaluated,
            "load_average": (load_before, os.getloadavg()[0])}


def challenge(problem: str) -> str:
    """The challenge a registered problem poses (the walker's: planning)."""
    if problem == BENCH_PROBLEM:
        return "planning"
    from tasks import registry
    return registry.problem_spec(problem).challenge


DELIVERY = ("{sessions:4d} sessions  p50 {lateness_p50_ms:5.1f} ms  "
            "p99 {lateness_p99_ms:6.1f} ms (all joined: {lateness_p99_joined_ms:5.1f})  delivered {frames_delivered_per_expected:.3f}  "
            "persisted {events_persisted_per_ticks_run:.3f}  gaps {seq_gaps}  "
            "inputs {inputs_accounted:.3f}")


def row(figures: dict[str, Any]) -> str:
    """One run's figures on one line."""
    return ("{async_mode:<9} {workers} worker(s) " + DELIVERY + "  "
            "cpu: server {server_cpu_percent_of_one_core:3.0f} %, "
            "nginx+db+queue {helpers_cpu_percent_of_one_core:3.0f} %, "
            "generator {generator_cpu_percent_of_one_core:3.0f} %  "
            "server {server_cpu_per_session_second:.4f} cpu-s per session-s  "
            "wire {received_per_session_second:.0f} B/s per participant  "
            "load {load_average[0]:.1f}->{load_average[1]:.1f}").format(**figures) + (
        "  agents {agent_turns_per_second:.0f} turns/s".format(**figures)
        if "agent_turns_per_second" in figures else "")


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
        serve(int(argv[1]), argv[2], argv[3], *argv[4:5])
        return
    if argv[:1] == ["--serve-worker"]:  # one of the workers, as `serve --worker` runs it
        port = int(argv[argv.index("--port") + 1])
        serve(port, os.environ["DATABASE_URL"], argv[1], BEHIND_PROXY=True,
              ADDRESS=f"127.0.0.1:{port}")
        return
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each async mode")
    parser.add_argument("--async-mode", default=DEFAULT_ASYNC_MODE,
                        help="comma-separated modes, measured in turn (the first is searched)")
    parser.add_argument("--problem", default=BENCH_PROBLEM)
    parser.add_argument("--workers", type=int, default=1,
                        help="server processes (more than one: behind nginx, with Redis)")
    parser.add_argument("--db", default=None, help="database URL (default: a temporary SQLite "
                        "file, or a temporary PostgreSQL with --workers)")
    parser.add_argument("--client-nice", type=int, default=10,
                        help="CPU niceness of the simulated participants (0: as the server)")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="CPU-bound processes running beside the server (a shared machine)")
    parser.add_argument("--mix", action="store_true",
                        help="after each run, one as large spread over every registered problem")
    parser.add_argument("--profile", metavar="FILE", help="sample the server of each walker "
                        "run (one process) into FILE and FILE.txt (bench/profile.py)")
    parser.add_argument("--no-search", action="store_true")
    parser.add_argument("--search-step", type=int, default=50)
    parser.add_argument("--search-resolution", type=int, default=10)
    parser.add_argument("--search-seconds", type=float, default=8.0)
    parser.add_argument("--search-limit", type=int, default=600)
    parser.add_argument("--arrivals", type=float, default=1.0, metavar="SECONDS",
                        help="the participants join evenly over this many seconds (a "
                             "launch's arrivals), then play --seconds together")
    parser.add_argument("--mode", choices=("server", "browser"), default="server",
                        help="where the games tick: the server (the default), or each "
                             "participant's page, the server only storing and replaying "
                             "their play logs (browser play; lateness is then the page's, "
                             "not measured here)")
    parser.add_argument("--log-every", type=float, default=1.0, metavar="SECONDS",
                        help="browser play: seconds between two batches of a page's play "
                             "log (game.js sends one a second; a longer interval shows "
                             "what the server would save by batching less often)")
    parser.add_argument("--agents", type=int, default=0, metavar="N",
                        help="a model evaluated through the same server meanwhile: N "
                             "attempts at once of a random agent (as fast as they go)")
    parser.add_argument("--agent-problem", default=AGENT_PROBLEM,
                        help=f"what --agents evaluates [{AGENT_PROBLEM}]")
    args = parser.parse_args(argv)
    modes = args.async_mode.split(",")
    for mode in modes:
        if mode not in ASYNC_MODES:
            parser.error(f"unknown async mode {mode!r}; expected one of {', '.join(ASYNC_MODES)}")
    if args.workers > 1 and modes != ["gevent"]:
        parser.error("several workers run gevent only (Flask-SocketIO's deployment)")
    if args.workers > 1 and args.profile:
        parser.error("--profile samples one server process: leave out --workers")
    if args.arrivals <= 0:
        parser.error("--arrivals: a number of seconds above 0")
    if args.log_every <= 0 or (args.log_every != 1.0 and args.mode != "browser"):
        parser.error("--log-every: a number of seconds above 0, with --mode browser")
    if args.agents < 0:
        parser.error("--agents: a number of attempts, 0 or more")
    print(f"{args.sessions} participants joining over {args.arrivals:g} s, then "
          f"{args.seconds:.0f} s together on {args.problem}, "
          f"{args.workers} worker(s), "
          + (f"play logs every {args.log_every:g} s, " if args.mode == "browser" else "")
          + f"generator at nice {args.client_nice}, "
          f"{args.busy} busy process(es) beside the server"
          + (f", a model evaluated through it ({args.agents} attempts at once of a random "
             f"agent on {args.agent_problem})" if args.agents else "")
          + " (load average: 1-minute, before->after each run)", flush=True)
    options = {"workers": args.workers, "db": args.db, "busy_processes": args.busy,
               "browser": args.mode == "browser", "arrivals": args.arrivals,
               "log_every": args.log_every, "agents": args.agents,
               "agent_problem": args.agent_problem}
    mix = mix_problems() if args.mix else []
    if mix:
        print(f"the mix: {len(mix)} problems ({', '.join(sorted({challenge(p) for p in mix}))})",
              flush=True)
    for _ in range(args.repeat):
        for mode in modes:
            print(row(measure(args.sessions, args.seconds, mode, args.problem,
                              args.client_nice, **options, profile=args.profile)), flush=True)
            if mix:
                figures = measure(args.sessions, args.seconds, mode, mix, args.client_nice,
                                  **options)
                print("mix " + row(figures), flush=True)
                for name, part in figures["by_challenge"].items():
                    print(f"    {name:<9} " + DELIVERY.format(**part), flush=True)
    if not args.no_search:
        def measure_count(sessions: int) -> dict[str, Any]:
            figures = measure(sessions, args.search_seconds, modes[0], args.problem,
                              args.client_nice, **options)
            print("  search: " + row(figures), flush=True)
            return figures

        best = search(measure_count, args.search_step, args.search_limit,
                      args.search_resolution)
        print(f"largest session count with p99 lateness <= 25 ms: {best} ({modes[0]}, "
              f"{args.workers} worker(s); steps of {args.search_step}, then bisection to "
              f"{args.search_resolution}, {args.search_seconds:.0f} s each)")


if __name__ == "__main__":
    main()
