"""Benchmark: every metric of :mod:`analysis.metrics` over one million synthetic events.

A study the size of the papers' (2,000 episodes of 500 actions: clicks, arrows, no-ops,
resets, then a test phase) must not make the report slow. This builds the events as
columns, one ``analysis.dataset.Events`` per episode as the loaders hold them, times
each metric over all episodes, then the whole report over a fresh copy.
Run with ``python -m bench.analysis [--events N | --episodes N] [--actions N]``; it prints
each figure and the peak memory.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from analysis import metrics
from analysis.columns import Coded, Numbers, Same
from analysis.dataset import EVENT_FIELDS, Events

SIZE = 16
MOVES = ("up", "down", "left", "right")
STEP = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}
VOCABULARY = (*[f"click {x} {y}" for y in range(SIZE) for x in range(SIZE)], *MOVES, "noop",
              "reset")
KIND_WEIGHTS = {"click": 0.3, "move": 0.4, "noop": 0.25, "reset": 0.05}
ATTEMPTS = 20
"""Episodes per synthetic problem (the papers' 20 human attempts per problem)."""


def _action_codes(rng: np.random.Generator, count: int) -> np.ndarray:
    """Indices into VOCABULARY: a click at a uniform cell, an arrow, a noop or a reset."""
    kinds = rng.choice(4, size=count, p=list(KIND_WEIGHTS.values()))
    clicks = rng.integers(0, SIZE * SIZE, size=count)
    moves = SIZE * SIZE + rng.integers(0, 4, size=count)
    return np.choose(kinds, [clicks, moves, np.full(count, len(VOCABULARY) - 2),
                             np.full(count, len(VOCABULARY) - 1)])


def build_events(episodes: int, actions: int, seed: int = 0) -> list[Events]:
    """``episodes * actions`` events as columns, one :class:`Events` per episode held as
    the loaders hold them (numbers as arrays, texts and flags as codes into their
    values, a value shared by the whole episode once): each explores, then goes to test.
    Even episodes are a person's; odd ones one of two model runs' (with its full history,
    or none), whose turns carry tokens and cost and sometimes do not parse."""
    rng = np.random.default_rng(seed)
    codes = _action_codes(rng, episodes * actions).reshape(episodes, actions).astype(np.uint16)
    switch = rng.integers(actions * 6 // 10, actions * 9 // 10, size=episodes)
    valid = rng.random((episodes, actions)) > 0.05
    texts = [*VOCABULARY, "go-to-test", None]  # action codes index this one list
    go, refused = len(VOCABULARY), len(VOCABULARY) + 1
    seq = np.arange(actions)
    hashes = [*(f"f{i}" for i in range(7)), None]  # frame hashes as codes, as loaded
    hash_codes = (seq % 7).astype(np.uint8)
    times = seq.astype(float)
    found = []
    for episode in range(episodes):
        ok = valid[episode]
        action = codes[episode].copy()
        action[switch[episode]] = go
        action[~ok] = refused
        human = episode % 2 == 0
        model = (lambda value: Same(None, actions)) if human else (lambda value: Same(value, actions))
        flags = Coded(ok.astype(np.uint8), [False, True])
        columns = {**{name: Same(None, actions) for name in BLANK},
                   "episode_id": Same(episode, actions), "seq": Numbers(seq.copy()),
                   "study_id": Same("bench", actions), "problem_id": Same("bench", actions),
                   "participant_id": Same(episode if human else None, actions),
                   "agent_run_id": Same(None if human else 1 + episode % 4 // 2, actions),
                   "phase": Coded((seq > switch[episode]).astype(np.uint8),
                                  ["interaction", "test"]),
                   "tick": Numbers(seq.copy()), "action": Coded(action, texts),
                   "source": Same("input" if human else "agent", actions),
                   "applied": flags, "server_time": Numbers(times.copy()),
                   "frame_hash": Coded(np.where(ok, hash_codes, 7).astype(np.uint8), hashes),
                   "parse_valid": Same(None, actions) if human else flags,
                   "prompt_tokens": model(900), "completion_tokens": model(40),
                   "cost": model(0.001)}
        found.append(Events(columns))
    return found


def walker_states(records: Events) -> list[int]:
    """States of a walker the interaction-phase arrows move (walls stop it, reset
    returns it to the start): hashable states with plenty of cycles to find."""
    x = y = 0
    states = [0]
    for action in metrics.interaction_actions(records):
        if action in STEP:
            dx, dy = STEP[action]
            x, y = min(max(x + dx, 0), SIZE - 1), min(max(y + dy, 0), SIZE - 1)
        elif action == "reset":
            x = y = 0
        states.append(y * SIZE + x)
    return states


def planning_frames(records: Events) -> list[list[list[str]]]:
    """One 16x16 frame per test-phase step, from a few shared frames (goal cells lit
    one by one), so that the match form has real frames to compare."""
    lit = [[["black"] * SIZE for _ in range(SIZE)] for _ in range(4)]
    for count, frame in enumerate(lit):
        for x in range(count):
            frame[0][x] = "red"
    tests = sum(1 for phase in records.column("phase") if phase == "test")
    return [lit[min(3, i * 4 // max(tests, 1))] for i in range(tests + 1)]


def _timed(label: str, run: Callable[[], Any], rows: list[tuple[str, float]]) -> Any:
    start = time.perf_counter()
    result = run()
    rows.append((label, time.perf_counter() - start))
    return result


def _behaviour(episodes: list[Events], rows: list[tuple[str, float]]) -> None:
    from analysis.metrics.perplexity import perplexity_curves

    _timed("perplexity_curves (all episodes together)", lambda: perplexity_curves(episodes), rows)
    for metric in (metrics.normalized_perplexity_curve, metrics.perplexity_auc,
                   metrics.final_perplexity, metrics.action_type_distribution,
                   metrics.unique_action_counts, metrics.reset_frequency,
                   metrics.grounding_accuracy):
        _timed(metric.__name__, lambda m=metric: [m(e) for e in episodes], rows)


def _trajectories(episodes: list[Events], rows: list[tuple[str, float]]) -> None:
    states = [walker_states(e) for e in episodes]
    _timed("loop_ratio", lambda: [metrics.loop_ratio(s) for s in states], rows)
    _timed("pooled_loop_ratio", lambda: metrics.pooled_loop_ratio(states), rows)
    goal = {"goal_cells": [[0, 0], [1, 0], [2, 0]], "goal_colours": ["red"] * 3}
    frames = [planning_frames(e) for e in episodes]
    _timed("progress_curve (match)",
           lambda: [metrics.progress_curve("planning", f, goal) for f in frames], rows)
    nodes = list(range(8))
    reached = [set(range(n)) for n in range(9)]  # the few distinct sets, shared by reference
    achieved = [[reached[min(8, i // 40)] for i in range(len(s))] for s in states]
    _timed("progress_curve (subgoal)",
           lambda: [metrics.progress_curve("explore", a, nodes) for a in achieved], rows)


def _aggregates(count: int, rows: list[tuple[str, float]], seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.random(count).round(1).reshape(-1, ATTEMPTS)
    _timed("percentile_score", lambda: [metrics.percentile_score(s) for s in scores], rows)
    _timed("percentile_interval", lambda: [metrics.percentile_interval(s) for s in scores], rows)
    t = rng.integers(0, 60, size=count).tolist()
    _timed("cd_score", lambda: [metrics.cd_score(a, 30) for a in t], rows)
    solve = [int(s) if s <= 100 else None for s in rng.integers(1, 150, size=count)]
    by_window = {0: solve[: count // 2], "full": solve[count // 2:]}
    auvs = _timed("auv_by_window", lambda: metrics.auv_by_window(by_window, t_max=50), rows)
    _timed("memory_index", lambda: metrics.memory_index(auvs["full"], auvs[0]), rows)
    per_problem = [(ATTEMPTS, int(c)) for c in rng.integers(0, ATTEMPTS + 1, count // ATTEMPTS)]
    _timed("metric_at_k", lambda: [metrics.metric_at_k(per_problem, k) for k in (1, 5, 10)], rows)
    samples = [(f"env{i}", challenge, solve[i + shift::43][:50])
               for i in range(43) for shift, challenge in enumerate(("cd", "planning"))
               if solve[i + shift::43]]
    _timed("random_baseline_table", lambda: metrics.random_baseline_table(samples), rows)


BLANK = [f.name for f in EVENT_FIELDS]


def synthetic_dataset(events: list[Events], seed: int = 0) -> Any:
    """The synthetic events as a loaded Dataset: planning problems of ATTEMPTS episodes,
    alternately a person's and one model's, run with its full history or with none
    (token counts and costs included), so that every section of the report has work
    to do."""
    from datetime import UTC, datetime

    from analysis.dataset import Dataset, EpisodeRecord, FrameSource
    from records.schema import agent_name

    rng = np.random.default_rng(seed)
    grid_frames = FrameSource(lambda key: [["black"]])
    episodes = []
    for episode_id, columns in enumerate(events):
        human = episode_id % 2 == 0
        run = None if human else 1 + episode_id % 4 // 2
        kind, model = ("human", None) if human else ("llm", "m")
        config = {} if human else {"history": ("full", "none")[run - 1]}
        episodes.append(EpisodeRecord(
            episode_id=episode_id, study_id="bench",
            participant_id=episode_id if human else None, agent_run_id=run,
            agent_kind=kind, model=model, agent_config=config,
            agent=agent_name(kind, model, config),
            problem_id=f"bench/p{episode_id // ATTEMPTS}", challenge="planning",
            env_id=f"bench/env{episode_id // ATTEMPTS % 10}", seed=0, status="done", phase="done",
            score=float(rng.random() < 0.4), included=True, exclusion_reason=None,
            participant_status=None, participant_exclusion_reason=None,
            started_at=datetime(2026, 1, 1, tzinfo=UTC), ended_at=None, info={}, events=columns,
            grid_frames=grid_frames))
    return Dataset("synthetic", episodes, grid_frames)


def _report(episodes: int, actions: int, rows: list[tuple[str, float]]) -> None:
    """The whole ``gridstudy report`` (tables, figures, page) over the synthetic study,
    built afresh so that nothing the metrics above derived is reused."""
    import tempfile
    from pathlib import Path

    from analysis.report import write_report

    dataset = _timed("report: build Dataset",
                     lambda: synthetic_dataset(build_events(episodes, actions)), rows)
    with tempfile.TemporaryDirectory() as out:
        _timed("report: write_report (all sections)",
               lambda: write_report(dataset, Path(out), progress=False), rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--actions", type=int, default=500)
    parser.add_argument("--events", type=int, default=None,
                        help="total events (sets --episodes to EVENTS / --actions)")
    parser.add_argument("--no-report", action="store_true", help="time the metrics only")
    options = parser.parse_args(argv)
    if options.events is not None:
        options.episodes = max(1, options.events // options.actions)
    rows: list[tuple[str, float]] = []
    episodes = _timed("build events", lambda: build_events(options.episodes, options.actions),
                      rows)
    total_events = sum(len(e) for e in episodes)
    print(f"{total_events:,} events in {len(episodes):,} episodes")
    build = sum(seconds for _, seconds in rows)
    _behaviour(episodes, rows)
    _trajectories(episodes, rows)
    _aggregates(len(episodes), rows)
    width = max(len(label) for label, _ in rows)
    for label, seconds in rows:
        print(f"  {label:<{width}}  {seconds:8.3f} s")
    total = sum(seconds for _, seconds in rows) - build
    print(f"every metric over all episodes: {total:.2f} s (plus {build:.2f} s to build the data)")
    if not options.no_report:
        del episodes  # the report builds its own, as a fresh load would
        timed: list[tuple[str, float]] = []
        _report(options.episodes, options.actions, timed)
        for label, seconds in timed:
            print(f"  {label:<{width}}  {seconds:8.3f} s")
        print(f"full report over {total_events:,} events: {timed[-1][1]:.2f} s")
        print(f"every metric and the report: {total + timed[-1][1]:.2f} s")
    print(f"peak memory: {peak_megabytes():,.0f} MB")


def peak_megabytes() -> float:
    """This process's peak resident memory (Linux reports kilobytes)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    main()
