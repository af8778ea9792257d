"""Events persisted per second through the store's batching writer, on SQLite and, with
``--db URL``, on that database (PostgreSQL) beside it.

Two workloads of realistic event rows with 16x16 frames, written by several producer
threads (one per simulated session) and timed until ``flush()`` returns, so the figure
is rows on disk, not rows enqueued. Events per CPU-second (this process's CPU time) is
printed beside the wall-clock rate because the wall clock suffers on a shared machine:

* ``idle``: a new frame every 10th tick on average, the rest repeat the last one, as a
  real-time session's idle ticks do;
* ``distinct``: every event brings a frame never seen before (the worst case).

Run: ``python -m bench.store [--events N] [--threads T] [--db URL]``. On PostgreSQL each
workload writes into a scratch database made on the same server and dropped after (the
user needs the CREATEDB right), so the figures start from empty tables, as on SQLite.
"""

from __future__ import annotations

import argparse
import random
import secrets
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from records.database import database_url
from records.store import Store

COLOURS = ("black", "gold", "blue", "red", "grey", "lightblue", "green", "white")
SIZE = 16


def make_frames(count: int, rng: random.Random) -> list[list[list[str]]]:
    """``count`` distinct 16x16 frames (a random walk of painted cells)."""
    frame = [["black"] * SIZE for _ in range(SIZE)]
    frames = []
    for _ in range(count):
        frame = [list(row) for row in frame]
        frame[rng.randrange(SIZE)][rng.randrange(SIZE)] = rng.choice(COLOURS)
        frames.append(frame)
    return frames


def session_events(session: int, count: int, frames: list, repeat: float,
                   rng: random.Random) -> list[dict]:
    """Event records of one session; a new frame with probability ``1 - repeat``."""
    records, current, t0 = [], 0, 1_700_000_000.0
    for seq in range(count):
        if seq == 0 or rng.random() >= repeat:
            current = (current + 1) % len(frames)
        pressed = rng.random() < 0.2
        records.append({
            "episode_id": session, "seq": seq, "study_id": "bench", "participant_id": session,
            "problem_id": "bench/problem", "phase": "interaction", "tick": seq,
            "action": rng.choice(("up", "down", "left", "right", "click 3 4")) if pressed
            else "noop",
            "source": "input" if pressed else "auto", "server_time": t0 + seq / 8,
            "client_time": t0 + seq / 8 - 0.03 if pressed else None, "latency": 0.001,
            "frame": frames[current],
        })
    return records


@contextmanager
def scratch_database(url: str | None) -> Iterator[str]:
    """An empty database for one run: a temporary SQLite file (``url`` None), or a new
    database beside the one ``url`` names, dropped afterwards."""
    if url is None:
        with tempfile.TemporaryDirectory() as directory:
            yield f"sqlite:///{Path(directory) / 'bench.db'}"
        return
    base = make_url(database_url(url))
    name = f"gridstudy_bench_{secrets.token_hex(4)}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def run(name: str, events: int, threads: int, repeat: float, seed: int = 0,
        db: str | None = None) -> float:
    """Write ``events`` split over ``threads`` producers; print and return events/s."""
    rng = random.Random(seed)
    per_thread = events // threads
    distinct = per_thread if repeat == 0 else max(1, int(per_thread * (1 - repeat)) + 1)
    batches = [session_events(n, per_thread, make_frames(distinct, rng), repeat, rng)
               for n in range(threads)]
    with scratch_database(db) as url:
        store = Store(url)
        producers = [threading.Thread(target=_produce, args=(store, b)) for b in batches]
        start, cpu = time.perf_counter(), time.process_time()
        for producer in producers:
            producer.start()
        for producer in producers:
            producer.join()
        enqueued = time.perf_counter() - start
        store.flush()
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu
        with store.engine.connect() as connection:
            stored = connection.exec_driver_sql("select count(*) from event").scalar()
            frames = connection.exec_driver_sql("select count(*) from frame").scalar()
        store.close()
    rate = stored / elapsed
    print(f"{name:<9} {stored:>7} events  {frames:>7} frames  {threads} threads  "
          f"enqueued in {enqueued:5.2f} s  on disk in {elapsed:5.2f} s  "
          f"{rate:>7,.0f} events/s  ({stored / cpu:,.0f} per CPU-second)")
    return rate


def _produce(store: Store, records: list[dict]) -> None:
    for record in records:
        store.write_event(record)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--db", default=None,
                        help="a database URL (PostgreSQL) to measure beside SQLite")
    args = parser.parse_args()
    print("16x16 frames; timed until flush() returns")
    targets = [("SQLite (WAL, synchronous=NORMAL)", None)]
    if args.db:
        targets.append((f"{make_url(database_url(args.db)).get_backend_name()} "
                        f"({make_url(database_url(args.db)).render_as_string()})", args.db))
    for title, db in targets:
        print(title)
        run("idle", args.events, args.threads, repeat=0.9, db=db)
        run("distinct", args.events // 2, args.threads, repeat=0.0, db=db)


if __name__ == "__main__":
    main()
