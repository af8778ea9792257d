"""Batch evaluation: many problems x many runs, bounded concurrency, resumable.

An agent configuration (kind, model, and its config dict) is one ``AgentRun`` row; a
rerun with the same configuration finds that row and plays only the attempts still
missing (an attempt is finished when its episode row is ``done`` or ``abandoned``; one
that ended in a provider ``error`` or was interrupted is played again).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from sqlmodel import select

from game_client.agents import Agent
from game_client.runner import EpisodeResult, run_episode
from records.models import AgentRun, EpisodeRow
from tasks import registry

FINISHED = ("done", "abandoned")


@dataclass(frozen=True)
class Job:
    problem_id: str
    run_index: int


def find_or_create_run(store: Any, kind: str, model: str | None, config: dict[str, Any]) -> int:
    """The id of the AgentRun with exactly this configuration (created when new)."""
    with store.session() as session:
        rows = session.exec(select(AgentRun).where(AgentRun.agent_kind == kind,
                                                   AgentRun.model == model)).all()
        for row in rows:
            if row.config == config:
                return row.id
        row = AgentRun(agent_kind=kind, model=model, config=config)
        session.add(row)
        session.flush()
        return row.id


def finished_counts(store: Any, agent_run_id: int) -> Counter:
    """Finished attempts of this run, by problem id."""
    with store.session() as session:
        rows = session.exec(select(EpisodeRow.problem_id).where(
            EpisodeRow.agent_run_id == agent_run_id, EpisodeRow.status.in_(FINISHED))).all()
    return Counter(rows)


def pending_jobs(problem_ids: Iterable[str], runs: int, done: Counter) -> list[Job]:
    """Attempts still to play: run indices from the number already finished up to ``runs``."""
    return [Job(pid, index) for pid in problem_ids for index in range(done[pid], runs)]


def run_batch(
    problem_ids: list[str],
    make_agent: Callable[[Job], Agent],
    *,
    store: Any,
    agent_run_id: int,
    runs: int = 1,
    concurrency: int = 1,
    max_turns: int = 1000,
    max_invalid: int = 5,
    progress: bool = True,
) -> list[EpisodeResult]:
    """Play every missing attempt, ``concurrency`` at a time, with a tqdm progress bar."""
    from tqdm import tqdm

    jobs = pending_jobs(problem_ids, runs, finished_counts(store, agent_run_id))

    def play(job: Job) -> EpisodeResult:
        return run_episode(make_agent(job), registry.get_problem(job.problem_id), store=store,
                           agent_run_id=agent_run_id, max_turns=max_turns, max_invalid=max_invalid)

    results = []
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool, \
            tqdm(total=len(jobs), disable=not progress, unit="episode") as bar:
        futures = [pool.submit(play, job) for job in jobs]
        for future in as_completed(futures):
            results.append(future.result())
            bar.update(1)
    store.flush()
    return results


def select_problems(patterns: Iterable[str]) -> list[str]:
    """Registered problem ids matching the patterns (``fnmatch``; comma-separated allowed)."""
    from fnmatch import fnmatch

    known = [spec.id for spec in registry.list_problems()]
    wanted = [p for text in patterns for p in text.split(",") if p]
    chosen = [pid for pid in known if any(fnmatch(pid, p) for p in wanted)]
    missing = [p for p in wanted if not any(fnmatch(pid, p) for pid in known)]
    if missing:
        raise ValueError(f"no registered problem matches {', '.join(missing)}; see `gridstudy problems list`")
    return chosen
