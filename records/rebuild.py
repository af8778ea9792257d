"""Rebuilding an attempt from its stored events: one rule for resume, the agent API and
the analysis.

Every environment is deterministic given its seed and the actions applied, and every
applied action is an event, so an attempt is rebuilt by applying its events' actions,
in ``seq`` order, to a fresh :class:`~tasks.worldtest.Episode`. An event replays when it
was applied (:func:`replays`); refused model turns and failed steps did not change the
environment and are skipped.

* a participant's live session lost in a restart is rebuilt this way
  (``study_server.flow``), its rows continuing at :attr:`Rebuilt.next_seq`;
* so is an agent's attempt through the API (``study_server.agent_api``), with its turn
  counts;
* the analysis replays a recorded attempt to read what the record omits (a task-DAG map's
  achieved nodes, an Autumn program's hidden state), checking each frame on the way
  (``analysis.replay``, through :func:`replay_steps`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from records.schema import VERSION_KEY
from tasks import registry
from tasks.core import GridEnv
from tasks.worldtest.episode import Episode, Step
from tasks.worldtest.problem import Problem


def replays(event: Any) -> bool:
    """True for an event whose action the environment applied (so a replay applies it)."""
    return bool(event.applied) and event.action is not None


def replay_steps(episode: Episode, events: Iterable[Any]) -> Iterator[tuple[Any, Step]]:
    """Apply the replaying ``events`` to ``episode`` in order: each event with its step."""
    for event in events:
        if replays(event):
            yield event, episode.apply(event.action)


@dataclass
class Rebuilt:
    """An attempt rebuilt from its events: the live episode and where its record stands."""

    episode: Episode
    next_seq: int
    """The ``seq`` of the attempt's next row."""
    turns: int
    """Model turns taken (rows with a ``parse_valid`` value)."""
    invalid: int
    """Model turns whose reply named no action available then."""
    streak: int
    """Such turns since the last valid one."""


def rebuild(problem: Problem, events: Sequence[Any],
            make_env: Callable[[str], GridEnv] = registry.make) -> Rebuilt:
    """The attempt at ``problem`` whose stored events are ``events`` (any order)."""
    events = sorted(events, key=lambda e: e.seq)
    episode = Episode(problem, make_env)
    for _ in replay_steps(episode, events):
        pass
    turns = [e.parse_valid for e in events if e.parse_valid is not None]
    streak = 0
    for valid in turns:
        streak = 0 if valid else streak + 1
    return Rebuilt(episode, max((e.seq for e in events), default=-1) + 1, len(turns),
                   turns.count(False), streak)


class CannotResume(RuntimeError):
    """A stored attempt that cannot be continued: its replay does not arrive where its
    record stands, or its environment changed since it began (:func:`changed`)."""


def changed(row: Any, problem: Problem) -> str | None:
    """Why the attempt of episode ``row`` cannot be rebuilt here: the version of the
    environment it was played on (``info.environment_version``) is not the one this
    process runs (its program or problem was edited, and this process started after);
    None when it can (or when it recorded no version). Replayed on another program, its
    stored actions would make a world its player never saw."""
    played = (row.info or {}).get(VERSION_KEY)
    now = registry.problem_version(problem)
    if played is None or played == now:
        return None
    return (f"its environment changed since it began (version {played}, now {now}), "
            f"so it was not resumed")


@dataclass
class StoredAttempt:
    """A model's attempt read back from the store, ready to continue: its episode row,
    its events in ``seq`` order, and its turn rules with the stored limits and counts,
    recording into the same episode."""

    row: Any
    events: list[Any]
    turns: Any
    """:class:`tasks.worldtest.turn.AgentTurns`, in the stored status."""


def stored_attempt(store: Any, episode_id: int,
                   make_env: Callable[[str], GridEnv] = registry.make) -> StoredAttempt | None:
    """The agent attempt ``episode_id`` as stored (None when there is no such episode or
    it is not an agent's): how the agent API rebuilds an episode lost in a restart, and
    how a rerun continues an interrupted attempt, in process or through the API.

    An attempt not yet over whose environment changed since it began (:func:`changed`)
    is never continued on the new one: it is ended here, an ``error`` that cannot be
    resumed, excluded with why (a rerun then plays a new attempt in its place), and
    :class:`CannotResume` says so."""
    from sqlmodel import select

    from records.models import EpisodeRow, Event
    from records.recorder import EpisodeRecorder
    from tasks.worldtest import protocol as protocols
    from tasks.worldtest.turn import ACTIVE, ERROR, MAX_INVALID, MAX_TURNS, AgentTurns, resumable

    store.wait()
    with store.session() as session:
        row = session.get(EpisodeRow, episode_id)
        if row is None or row.agent_run_id is None:
            return None
        events = list(session.exec(select(Event).where(Event.episode_id == episode_id)
                                   .order_by(Event.seq)).all())
    problem = registry.get_problem(row.problem_id)
    why = changed(row, problem)
    if why is not None and (row.status == ACTIVE or resumable(row.status, row.info)):
        store.finish_episode(episode_id, status=ERROR, phase=row.phase, score=row.score,
                             info={"reason": why, "resumable": False}, excluded=why)
        raise CannotResume(f"episode {episode_id}: {why}")
    rebuilt = rebuild(problem, events, make_env)
    recorder = EpisodeRecorder(store, problem, episode_id=episode_id, next_seq=rebuilt.next_seq,
                               agent_run_id=row.agent_run_id, study_id=row.study_id)
    info = row.info or {}
    limits = {name: info.get(name, default) for name, default in
              (("max_invalid", MAX_INVALID), ("max_turns", MAX_TURNS))}
    turns = AgentTurns(rebuilt.episode, recorder, **limits, turns=rebuilt.turns,
                       invalid=rebuilt.invalid, streak=rebuilt.streak, status=row.status,
                       reason=info.get("reason"), resumable=bool(info.get("resumable")),
                       protocol=protocols.get(info.get("protocol", "gridstudy")),
                       interaction_turns=sum(e.source == "agent" and e.phase == "interaction"
                                             for e in events))
    return StoredAttempt(row, events, turns)
