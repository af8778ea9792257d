"""Replaying a recorded attempt on its registered problem, to read what the record omits.

The event record keeps each frame, not the environment's hidden state: a task-DAG map's
achieved nodes, an Autumn program's variables. Every environment is deterministic
given its seed and the actions applied, so the analysis rebuilds an attempt the way
every part of gridstudy does (:mod:`records.rebuild`), and checks every frame against
the stored one on the way. A replay that departs from the record (the
environment or the problem changed since the attempt was recorded) raises
``ValueError`` rather than letting a metric read a different trajectory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analysis.dataset import EpisodeRecord, memo
from records.rebuild import replay_steps
from tasks.core import Observation, frame_hash
from tasks.worldtest.episode import TEST, Episode, Step


@dataclass
class Replay:
    """An attempt rebuilt: the live episode after its last action, and its scored phase
    (the test phase; the whole run of an ``explore`` problem)."""

    episode: Episode
    start: Observation | None
    """The observation the scored phase began with (``None`` if it never began)."""
    steps: list[Step]
    """The scored phase's steps, in order."""
    states: list[str]
    """The environment's state after each scored step: its ``state_hash()`` (all hidden
    state, for environments that have one), else the frame's hash."""

    @property
    def env(self) -> Any:
        """The environment the scored phase ran on."""
        return getattr(self.episode.test, "env", self.episode.env)


def known_problem(problem_id: str) -> Any | None:
    """The registered Problem, or ``None`` when this machine does not know it."""
    from tasks import registry

    try:
        return registry.get_problem(problem_id)
    except KeyError:
        return None


def replay(record: EpisodeRecord) -> Replay | None:
    """The attempt rebuilt from its applied actions, or ``None`` when its problem is not
    registered here. Raises ``ValueError`` naming the event where a replayed frame
    differs from the stored one."""
    problem = known_problem(record.problem_id)
    if problem is None:
        return None
    live = Episode(problem)
    start = live.observation if live.phase == TEST else None
    steps: list[Step] = []
    states: list[str] = []
    for event, step in replay_steps(live, record.events):
        shown = frame_hash(step.observation.frame)
        if event.frame_hash is not None and shown != event.frame_hash:
            raise ValueError(
                f"episode {record.episode_id} ({record.problem_id}, seed {record.seed}) does "
                f"not replay to its stored frames at seq {event.seq}: the environment or the "
                "problem differs from the one that recorded it"
            )
        if step.phase == TEST:
            steps.append(step)
            states.append(_state(live, shown))
        elif step.next_phase == TEST:
            start = step.observation
    return Replay(live, start, steps, states)


@dataclass(frozen=True)
class Reading:
    """What the analysis reads of an attempt's replay, kept with its events so that a
    report replays each attempt once, whichever sections read it (a :class:`Replay`
    holds every step's frame and the live environment; this, a few values a step)."""

    states: list[str]
    """:attr:`Replay.states`."""
    actions: list[str]
    """The scored phase's actions, in order."""
    achieved: list[tuple[str, ...]] | None
    """A task-DAG map's nodes achieved at the scored phase's start and after each of its
    steps (``None`` for other environments, and when the scored phase never began)."""
    dagmap: Any | None
    """The task-DAG map the scored phase ran on (``None`` for other environments)."""


READING = "replay reading"
"""The key of an attempt's :class:`Reading` among what its events keep (``Events.memo``)."""


def reading(record: EpisodeRecord) -> Reading | None:
    """The attempt's :class:`Reading`, replayed the first time it is asked for; ``None``
    when its problem is not registered here. Raises ``ValueError`` as :func:`replay`
    does, every time it is asked (the refusal is kept as the reading is)."""
    found = memo(record, READING, lambda: _read(record))
    if isinstance(found, ValueError):
        raise found
    return found


def _read(record: EpisodeRecord) -> Reading | ValueError | None:
    try:
        replayed = replay(record)
    except ValueError as refusal:
        return refusal
    if replayed is None:
        return None
    dagmap = getattr(replayed.env, "map", None)
    observations = (replayed.start, *(step.observation for step in replayed.steps))
    achieved = None
    if replayed.start is not None and "achieved" in replayed.start.info:
        achieved, last = [], None
        for observation in observations:  # a step that achieves nothing shares the tuple
            now = tuple(observation.info["achieved"])
            last = last if now == last else now
            achieved.append(last)
    return Reading(replayed.states, [step.action for step in replayed.steps], achieved,
                   dagmap)


def _state(live: Episode, shown: str) -> str:
    env = getattr(live.test, "env", None)
    state_hash = getattr(env, "state_hash", None)
    return state_hash() if callable(state_hash) else shown
