"""Batch evaluation: agents x problems x runs, a bounded number at once, resumable, and
stoppable.

Each agent configuration of a batch (:class:`RunSpec`: one model with its provider,
prompt and limits) is one ``AgentRun`` row; a rerun with the same configuration finds
that row. :func:`pending_jobs` then lists what is left: first the attempts to continue
(interrupted, or ended by their provider: :func:`tasks.worldtest.turn.resumable`), then
the new attempts up to ``runs`` per problem. An attempt that is ``done`` or
``abandoned`` is over for good. One still ``active`` is played by a live process and left
alone, or was left by a process that died (``kill -9``): it is ended as ``interrupted``
first (:func:`reap_orphans`) and so continued like the others. One that cannot be
continued (its environment was edited since it began, ``records.rebuild.stored_attempt``,
or its replay does not arrive where its record stands, ``game_client.runner.catch_up``) is
ended, an ``error`` that cannot be resumed, with why, and its run is played again from the
start in its place (:attr:`Outcome.restarted`).

:class:`Batch` plays the jobs on ``concurrency`` threads. Ctrl-C (or SIGTERM, or the
terminal closing: SIGHUP) stops it:
the first starts no new attempt and ends the running ones at their next turn boundary as
``interrupted`` (an attempt still waiting for its model after a few seconds is ended
without waiting); a second ends them at once. A refused key or an unknown model stops it
the same way, at the first occurrence, as does the batch's budget. Nothing is left
``active``: every attempt a batch started is done, abandoned, error or interrupted when
it returns.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from sqlmodel import select

from game_client import owner, stopping
from game_client.agents import Agent, CannotPlay
from game_client.runner import (
    Attempt,
    Budget,
    EpisodeResult,
    Guard,
    LocalAttempt,
    Spending,
    play,
)
from records.models import AgentRun, EpisodeRow
from records.rebuild import CannotResume
from records.recorder import last_seen, run_spending
from records.store import RunIndexTaken
from tasks import registry
from tasks.words import suggest
from tasks.worldtest import protocol as protocols
from tasks.worldtest.problem import Problem
from tasks.worldtest.turn import (
    ACTIVE,
    ERROR,
    FINISHED,
    INTERRUPTED,
    MAX_INVALID,
    MAX_TURNS,
    holds_its_place,
    resumable,
)

GRACE = 5.0
"""Seconds after the first Ctrl-C that running attempts have to reach a turn boundary."""
LOG_INTERVAL = 30.0
"""Seconds between progress lines when the progress goes to a file, not a terminal (a
long run under ``nohup`` or a cluster's scheduler): at a terminal's ten a second, a
day's run wrote about 80 MB of progress bars into its log."""


@dataclass(eq=False)
class RunSpec:
    """One agent configuration of a batch."""

    label: str
    """How the summary names it: :func:`records.schema.agent_name` of its configuration,
    as the report does."""
    kind: str
    model: str | None
    config: dict[str, Any]
    """What the ``AgentRun`` row keeps (provider, parameters, prompt, limits; no key)."""
    make_agent: Callable[[int], Agent]
    """A fresh agent for the attempt with this run index."""
    max_turns: Callable[[Problem], int] = lambda problem: MAX_TURNS
    max_invalid: int = MAX_INVALID
    budget: Budget = field(default_factory=Budget)
    """What one attempt may spend."""
    agent_run_id: int | None = None
    clock: str = "turns"
    """``turns`` (the model is never hurried) or ``realtime`` (the participants' clock:
    :mod:`game_client.realtime`)."""
    protocol: str = "gridstudy"
    """The protocol profile its attempts are played by (:mod:`tasks.worldtest.protocol`)."""
    from_config: Callable[[dict[str, Any]], RunSpec] | None = None
    """The same agent with a stored run's configuration in place of this one's
    (``--continue-run``), or None when it cannot be rebuilt."""
    cannot_play: Callable[[Problem], str | None] = lambda problem: None
    """Why the agent cannot play a problem at all (the batch leaves it out), or None."""


@dataclass(frozen=True)
class Job:
    run: RunSpec
    problem_id: str
    run_index: int
    episode_id: int | None = None
    """A stored attempt to continue; None: a new attempt."""


@dataclass(frozen=True)
class StoredEpisode:
    """What :func:`pending_jobs` reads of an attempt already stored."""

    episode_id: int
    problem_id: str
    status: str
    info: dict[str, Any]


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


def runs_like(store: Any, kind: str, model: str | None) -> list[tuple[int, dict[str, Any]]]:
    """The id and configuration of every agent run of this kind and model, newest first."""
    with store.session() as session:
        rows = session.exec(select(AgentRun).where(AgentRun.agent_kind == kind,
                                                   AgentRun.model == model)
                            .order_by(AgentRun.id.desc())).all()
    return [(row.id, row.config or {}) for row in rows]


def stored_episodes(store: Any, agent_run_id: int) -> list[StoredEpisode]:
    """Every attempt of this run in the store."""
    store.wait()
    with store.session() as session:
        rows = session.exec(select(EpisodeRow).where(EpisodeRow.agent_run_id == agent_run_id)).all()
    return [StoredEpisode(r.id, r.problem_id, r.status, r.info or {}) for r in rows]


def reap_orphans(store: Any, agent_run_id: int) -> list[int]:
    """End as ``interrupted`` every ``active`` attempt of the run whose process died
    without closing it (:mod:`game_client.owner`), as Ctrl-C would have ended it: resumable,
    unless it was played on the real-time clock (which cannot be replayed). Returns their
    ids."""
    with store.session() as session:
        rows = session.exec(select(EpisodeRow).where(EpisodeRow.agent_run_id == agent_run_id,
                                                     EpisodeRow.status == ACTIVE)).all()
    seen = last_seen(store, rows)
    reaped = []
    for row in rows:
        info = row.info or {}
        if owner.alive(info.get("owner"), seen[row.id]):
            continue
        store.finish_episode(row.id, status=INTERRUPTED, phase=row.phase, score=0.0, info={
            "reason": owner.orphaned(info.get("owner")),
            "resumable": info.get("clock") != "realtime"})
        reaped.append(row.id)
    return reaped


def pending_jobs(run: RunSpec, problem_ids: Iterable[str], runs: int,
                 stored: Iterable[StoredEpisode]) -> list[Job]:
    """The attempts to continue, then the new ones: per problem, ``runs`` attempts in all
    count those finished, those to continue and those a live process is playing now
    (still ``active`` after :func:`reap_orphans`); a new attempt takes the lowest run
    index not in use."""
    wanted = list(problem_ids)
    resume: list[Job] = []
    taken: dict[str, list[int | None]] = {pid: [] for pid in wanted}
    for episode in sorted(stored, key=lambda e: e.episode_id):
        if episode.problem_id not in taken:
            continue
        index = episode.info.get("run_index")
        if not holds_its_place(episode.status, episode.info):
            continue
        if resumable(episode.status, episode.info):
            resume.append(Job(run, episode.problem_id, index or 0, episode.episode_id))
        taken[episode.problem_id].append(index)  # active: another process plays it
    new = []
    for pid in wanted:
        used = {i for i in taken[pid] if i is not None}
        free = (i for i in range(runs + len(taken[pid])) if i not in used)
        new += [Job(run, pid, next(free)) for _ in range(max(0, runs - len(taken[pid])))]
    return resume + new


class LocalRecords:
    """Where a batch played in this process keeps its runs and attempts: a store. (A
    batch played through a server's agent API keeps them there:
    ``game_client.api_client.AgentAPIClient`` has the same three methods.)"""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.reaped: list[int] = []
        """Attempts left ``active`` by a process that died, ended here to be resumed."""

    def create_run(self, kind: str, model: str | None, config: dict[str, Any]) -> int:
        return find_or_create_run(self.store, kind, model, config)

    def runs_like(self, kind: str, model: str | None) -> list[tuple[int, dict[str, Any]]]:
        return runs_like(self.store, kind, model)

    def episodes(self, agent_run_id: int) -> list[StoredEpisode]:
        self.store.wait()
        self.reaped += reap_orphans(self.store, agent_run_id)
        return stored_episodes(self.store, agent_run_id)

    def spent(self, agent_run_id: int) -> Spending:
        """What the run's recorded turns cost, over every invocation."""
        return Spending(*run_spending(self.store, agent_run_id))

    def open_attempt(self, job: Job) -> Attempt:
        if job.episode_id is not None:
            return LocalAttempt.resume(self.store, job.episode_id)
        problem = registry.get_problem(job.problem_id)
        options = {"store": self.store, "agent_run_id": job.run.agent_run_id,
                   "max_invalid": job.run.max_invalid, "max_turns": job.run.max_turns(problem),
                   "run_index": job.run_index, "claim_run": True}
        if job.run.clock == "realtime":
            from game_client.realtime import RealtimeAttempt

            return RealtimeAttempt(problem, **options)
        return LocalAttempt(problem, protocol=protocols.get(job.run.protocol), **options)


@dataclass
class Outcome:
    """How a batch went: a result per attempt it touched, why it stopped early (None if
    it did not), and the spending its :class:`Guard` counted."""

    results: list[EpisodeResult]
    guard: Guard
    stragglers: bool = False
    """Threads still waiting on a model when the batch returned (the process should exit)."""
    unplayed: list[Job] = field(default_factory=list)
    """Jobs never started (the batch stopped first)."""
    restarted: list[str] = field(default_factory=list)
    """Why each stored attempt that could not be continued was not (each was ended, an
    ``error`` that cannot be resumed): their runs were played again from the start, in
    ``results``."""
    elsewhere: list[Job] = field(default_factory=list)
    """Jobs another invocation of the same batch started first: left to it, not played
    here (their run index was taken, ``records.store.RunIndexTaken``)."""

    @property
    def stopped(self) -> str | None:
        return self.guard.reason

    @property
    def failed(self) -> list[EpisodeResult]:
        return [r for r in self.results if r.status not in FINISHED]


class Batch:
    """Plays jobs ``concurrency`` at a time under one :class:`Guard`."""

    def __init__(self, open_attempt: Callable[[Job], Attempt], *, concurrency: int = 1,
                 guard: Guard | None = None, progress: bool = True, grace: float = GRACE) -> None:
        self.open_attempt = open_attempt
        self.concurrency = max(1, concurrency)
        self.guard = guard or Guard()
        self.progress = progress
        self.grace = grace
        self.live: dict[Job, Attempt] = {}
        self.results: dict[Job, EpisodeResult] = {}
        self.restarted: list[str] = []
        """Stored attempts that could not be continued, their runs played from the start."""
        self.elsewhere: list[Job] = []
        """Jobs another invocation of the batch started first (``RunIndexTaken``)."""
        self.lock = threading.Lock()
        self.signals = 0

    def run(self, jobs: list[Job]) -> Outcome:
        from tqdm import tqdm

        todo: queue.SimpleQueue[Job] = queue.SimpleQueue()
        for job in jobs:
            todo.put(job)
        workers = [threading.Thread(target=self._work, args=(todo,), daemon=True,
                                    name=f"attempt-{i}") for i in range(min(self.concurrency, len(jobs)))]
        with stopping.caught(self._on_signal), tqdm(
                total=len(jobs), disable=not self.progress, unit="attempt", dynamic_ncols=True,
                mininterval=0.1 if sys.stderr.isatty() else LOG_INTERVAL) as bar:
            for worker in workers:
                worker.start()
            deadline = None
            while any(w.is_alive() for w in workers):
                time.sleep(0.1)
                self._show(bar)
                if self.guard.stopping and deadline is None:
                    deadline = time.monotonic() + self.grace
                if self.signals > 1 or (deadline is not None and time.monotonic() > deadline):
                    self._interrupt_live()
                    break
            self._show(bar)
        stragglers = any(w.is_alive() for w in workers)
        return Outcome([self.results[j] for j in jobs if j in self.results], self.guard,
                       stragglers, [j for j in jobs if j not in self.results
                                    and j not in self.elsewhere], self.restarted,
                       self.elsewhere)

    def _work(self, todo: queue.SimpleQueue) -> None:
        while not self.guard.stopping:
            try:
                job = todo.get_nowait()
            except queue.Empty:
                return
            try:
                result, stale = self._play(job, job)
                if stale is not None and not self.guard.stopping:
                    # ended, with why (its environment or its agent changed): the run's
                    # attempt is played again from the start, under the same run index
                    with self.lock:
                        self.restarted.append(f"{stale} ({job.problem_id}, run {job.run_index})")
                    result, _ = self._play(replace(job, episode_id=None), job)
            except RunIndexTaken:  # another invocation of the batch plays it: left to it
                with self.lock:
                    self.elsewhere.append(job)
                continue
            with self.lock:
                self.live.pop(job, None)
                self.results.setdefault(job, result)

    def _play(self, job: Job, key: Job) -> tuple[EpisodeResult, CannotResume | None]:
        """Play ``job`` (live under ``key`` meanwhile): its result, and why its stored
        attempt could not be continued, if that is how it ended."""
        attempt = None
        try:
            attempt = self.open_attempt(job)
            with self.lock:
                self.live[key] = attempt
            agent = job.run.make_agent(job.run_index)
            try:
                return play(agent, attempt, guard=self.guard, budget=job.run.budget,
                            agent_label=job.run.label), None
            finally:
                getattr(agent, "close", lambda: None)()
        except RunIndexTaken:
            raise
        except Exception as error:  # one attempt's failure never ends the batch
            stale = error if isinstance(error, CannotResume) else None
            again = stale is None and not isinstance(error, CannotPlay)  # else the same again
            return self._failed(job, attempt, f"{type(error).__name__}: {error}",
                                resumable=again), stale

    def _failed(self, job: Job, attempt: Attempt | None, message: str,
                resumable: bool = True) -> EpisodeResult:
        """The result of a job whose attempt could not be opened or played (resumable
        unless its record cannot be replayed)."""
        if attempt is not None:
            try:
                attempt.end(ERROR, f"the driver failed: {message}", resumable=resumable)
            except Exception:  # the attempt's own store or server is what failed
                pass
        return EpisodeResult(job.problem_id, ERROR, None, 0, 0,
                             getattr(attempt, "episode_id", job.episode_id), message,
                             agent=job.run.label, resumable=resumable and attempt is not None)

    def _interrupt_live(self) -> None:
        """End every running attempt now (its thread is still waiting on the model)."""
        reason = self.guard.stopping or "interrupted by the operator"
        with self.lock:
            live = dict(self.live)
        for job, attempt in live.items():
            try:
                attempt.end(INTERRUPTED, reason, resumable=True)
                summary = attempt.summary()
            except Exception as error:
                self.results.setdefault(job, self._failed(job, None, str(error)))
                continue
            with self.lock:
                self.results.setdefault(job, EpisodeResult(
                    job.problem_id, summary["status"], summary["score"], summary["turns"],
                    summary["invalid"], attempt.episode_id, summary["reason"], None, 0,
                    job.run.label, bool(attempt.recorded), True))

    def _show(self, bar: Any) -> None:
        guard = self.guard
        now = guard.cost - (guard.before.cost or 0.0)
        unpriced = guard.unpriced and not guard.cost
        cost = "unpriced" if unpriced else f"${now:.4f}"
        if guard.before.tokens and not unpriced:
            cost += f" (${guard.cost:.4f} with earlier runs)"
        bar.set_postfix_str(f"turns {guard.turns}, tokens {guard.tokens - guard.before.tokens:,}, "
                            f"cost {cost}"
                            + (f", {guard.uncounted} turns uncounted" if guard.uncounted else "")
                            + (f", stopping: {guard.reason}" if guard.stopping else ""),
                            refresh=False)
        bar.update(len(self.results) - bar.n)  # drawn at most every mininterval

    # -- Ctrl-C -----------------------------------------------------------------------

    def _on_signal(self, number: int, _frame: Any) -> None:
        from tqdm import tqdm

        self.signals += 1
        if self.signals == 1:
            self.guard.stop(f"interrupted by the operator ({stopping.named(number)})")
            try:  # after SIGHUP the terminal may be gone (the bar stops by itself)
                tqdm.write(f"Stopping: no new attempts; running ones end within "
                           f"{self.grace:g} s and can be resumed by running the same command "
                           "again. Press Ctrl-C again to stop at once.", file=sys.stderr)
            except OSError:
                pass


def select_problems(patterns: Iterable[str]) -> list[str]:
    """Registered problem ids matching the patterns (``fnmatch``; comma-separated allowed)."""
    from fnmatch import fnmatch

    known = [spec.id for spec in registry.list_problems()]
    wanted = [p for text in patterns for p in text.split(",") if p]
    chosen = [pid for pid in known if any(fnmatch(pid, p) for p in wanted)]
    missing = [p for p in wanted if not any(fnmatch(pid, p) for pid in known)]
    if missing:
        raise ValueError(f"no registered problem matches {', '.join(missing)}"
                         f"{suggest(missing[0], known)}; see `gridstudy problems list`")
    return chosen
