"""What every table reads off an episode: who played it, whether it counts, its score,
its scored phase, and how episodes group.

Agents are named by :func:`agent_of`: every participant's attempt belongs to the one
``human`` agent, a model run to ``kind:model``. Only attempts that count
(:attr:`EpisodeRecord.is_included`) enter a table.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from analysis.dataset import Dataset, EpisodeRecord, event_values
from analysis.metrics.records import derived
from tasks.worldtest.challenge import challenges

HUMAN = "human"
Row = dict[str, Any]
"""One row of a table: column name -> value."""


def agent_of(episode: EpisodeRecord) -> str:
    """``human`` for any participant; ``kind:model`` (or ``kind``) for an agent run, with
    the settings that change what the model faced appended (:func:`settings`:
    ``llm:m [history none]``, ``llm:m [realtime clock, image]``), so that an ablation is
    never averaged with the runs it is compared against, and the same model at both
    clocks is two rows side by side."""
    if episode.is_human:
        return HUMAN
    base = base_agent(episode)
    tags = settings(episode)
    return f"{base} [{', '.join(tags)}]" if tags else base


def settings(episode: EpisodeRecord) -> list[str]:
    """The agent run's settings that differ from the default: the protocol profile, the
    history window, the real-time clock, pictures in place of (or beside) the text
    grid."""
    config = episode.agent_config
    tags = []
    if config.get("protocol") not in (None, "gridstudy"):
        tags.append(f"{config['protocol']} protocol")
    if history_setting(episode) != FULL_HISTORY:
        tags.append(f"history {history_setting(episode)}")
    if config.get("clock") == "realtime":
        tags.append("realtime clock")
    observation = config.get("observation") or "text"
    if observation != "text":
        tags.append("image" if observation == "image" else "text+image")
    return tags


def base_agent(episode: EpisodeRecord) -> str:
    """``kind:model`` (or ``kind``) whatever the history setting."""
    return f"{episode.agent_kind}:{episode.model}" if episode.model else episode.agent_kind


FULL_HISTORY, NO_HISTORY = "full", "none"


def history_setting(episode: EpisodeRecord) -> str:
    """What an agent saw of earlier turns: ``full`` (also for agents without a history
    option), ``none`` (the current observation only) or ``last K``."""
    config = episode.agent_config
    mode = config.get("history") or FULL_HISTORY
    return f"last {config.get('k')}" if mode == "last" else str(mode)


def counted(dataset: Dataset) -> list[EpisodeRecord]:
    """The episodes that enter aggregation (done, included, participant not excluded)."""
    return dataset.included()


def score_of(episode: EpisodeRecord) -> float:
    """The episode's score; a finished attempt without an answer scores 0 (docs/metrics.md)."""
    return 0.0 if episode.score is None else float(episode.score)


def solved(episode: EpisodeRecord) -> bool:
    return score_of(episode) >= 1.0


def group(episodes: Iterable[EpisodeRecord], *keys: Callable[[EpisodeRecord], Any]) -> dict:
    """Episodes grouped by the tuple of ``keys`` applied to each, in sorted key order."""
    out: dict[tuple, list[EpisodeRecord]] = defaultdict(list)
    for episode in episodes:
        out[tuple(key(episode) for key in keys)].append(episode)
    return dict(sorted(out.items(), key=lambda item: tuple(map(str, item[0]))))


def mean_of(values: Iterable[float | None]) -> float | None:
    """Mean of the values that exist; ``None`` when none does (no value, not 0)."""
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None


def env_of(episode: EpisodeRecord) -> str:
    return episode.env_id


def problem_of(episode: EpisodeRecord) -> str:
    return episode.problem_id


def challenge_of(episode: EpisodeRecord) -> str:
    return episode.challenge


def scored_indices(episode: EpisodeRecord) -> list[int]:
    """Where the applied events of the scored phase are: the test phase, the whole run
    for a challenge without an interaction phase (``explore``), which starts there."""
    def compute() -> list[int]:
        columns = zip(*(event_values(episode, n) for n in ("applied", "action", "phase")))
        return [i for i, (applied, action, phase) in enumerate(columns)
                if applied and action is not None and phase == "test"]
    return derived(episode.events, "scored", compute)


def solve_step(episode: EpisodeRecord) -> int | None:
    """Scored-phase steps taken when the episode was solved, or ``None`` if it was not."""
    if not solved(episode):
        return None
    return len(scored_indices(episode)) or None


def scored_by_steps(episode: EpisodeRecord) -> bool:
    """Whether success comes at a test step (``Challenge.scored_by_steps``)."""
    return bool(declared(episode.challenge, "scored_by_steps"))


def declared(challenge: str, reading: str) -> Any:
    """What the registered challenge declares for ``reading`` (None for a challenge this
    machine does not know, as in an export read elsewhere)."""
    found = challenges().get(challenge)
    return getattr(found, reading) if found is not None else None
