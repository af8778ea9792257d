"""What every table reads off an episode: who played it, whether it counts, its score,
its scored phase, and how episodes group.

Agents are named by :func:`agent_of`: every participant's attempt belongs to the one
``human`` agent, a model run to its configuration's name (its label, else ``kind:model``
and its settings). Only attempts that count
(:attr:`EpisodeRecord.is_included`) enter a table.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from analysis.dataset import Dataset, EpisodeRecord, event_values
from analysis.metrics.records import derived
from records.schema import FULL_HISTORY as FULL_HISTORY  # re-exported for the tables
from records.schema import agent_name
from records.schema import history_setting as schema_history
from tasks.worldtest.challenge import challenges

HUMAN = "human"
Row = dict[str, Any]
"""One row of a table: column name -> value."""


def agent_of(episode: EpisodeRecord) -> str:
    """``human`` for any participant; for an agent run, its configuration's name
    (:func:`records.schema.agent_name`: its label, else ``kind:model`` with the settings
    that change what the model did or faced, ``llm:m [history none]``,
    ``llm:m [realtime clock, image]``, ``llm:m [temperature=1]``), so that an ablation or
    another configuration of one model is never averaged with the runs it is compared
    against. The summary of ``gridstudy agent run`` and the export use the same name."""
    return agent_name(episode.agent_kind, episode.model, episode.agent_config)


def base_agent(episode: EpisodeRecord) -> str:
    """``kind:model`` (or ``kind``) whatever the settings."""
    return f"{episode.agent_kind}:{episode.model}" if episode.model else episode.agent_kind


NO_HISTORY = "none"


def history_setting(episode: EpisodeRecord) -> str:
    """What an agent saw of earlier turns (:func:`records.schema.history_setting`)."""
    return schema_history(episode.agent_config)


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
