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
