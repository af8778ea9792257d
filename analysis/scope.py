"""Which studies and agent runs one report covers, and the sentences that say so.

A database often holds several studies (a demo, a pilot, the real one) and model runs
recorded outside any study. Pooling them silently mixes populations, so a report covers
one study unless it is told otherwise: :func:`choose` turns the command line's choice
into :func:`analysis.load.load`'s arguments and into the lines the report's first screen
prints, or refuses with a message that names what the source holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from analysis.load import PLAYS
from tasks.words import count, suggest


@dataclass(frozen=True)
class Scope:
    """What to load (``load`` keyword arguments) and how the first screen says it."""

    options: dict[str, Any]
    lines: tuple[str, ...] = field(default=())


def choose(counts: dict[str | None, int], study: Iterable[str] = (), all_studies: bool = False,
           agent_runs: Iterable[int] = (), outside: bool = False) -> Scope:
    """The scope of a report over a source with ``counts`` episodes per study (``None``:
    model runs outside any study; ``analysis.load.PLAYS``: plays recorded outside any
    study and run; see :func:`analysis.load.study_counts`).

    One study in the source is reported alone; several need ``study`` or
    ``all_studies``; runs outside studies join only through ``agent_runs`` or
    ``outside`` (or when the source holds no study at all).

    >>> choose({"a": 3, "b": 2}).options
    Traceback (most recent call last):
    ...
    ValueError: the source holds 2 studies (a: 3 episodes, b: 2 episodes): report one with --study ID, or pool them with --all-studies
    >>> choose({"a": 3, None: 4}).lines
    ('Study: a.', 'Left out: 4 episodes of model runs outside any study (add them with --agent-run ID or --runs-outside-studies).')
    """
    study, runs = sorted(set(study)), sorted(set(agent_runs))
    named = sorted(s for s in counts if s not in (None, PLAYS))
    studies = [s for s in named if counts[s]]  # a study nobody has finished is not pooled
    held = ", ".join(f"{s}: {count(counts[s], 'episode')}" for s in named) or "none"
    if study and all_studies:
        raise ValueError("--study and --all-studies contradict each other: give one of them")
    unknown = [s for s in study if s not in counts]
    if unknown:
        meant = suggest(unknown[0], named) if len(unknown) == 1 else ""
        raise ValueError(f"no study {', '.join(unknown)} in the source{meant}; it holds: {held}")
    waiting = [s for s in study if not counts[s]]
    if waiting:
        raise ValueError(f"study {', '.join(waiting)} holds no episode yet: one is recorded "
                         "each time a participant or a model ends a problem (gridstudy study "
                         "list shows how a study fills)")
    if not study and not all_studies and len(studies) > 1:
        raise ValueError(f"the source holds {len(studies)} studies ({held}): report one with "
                         "--study ID, or pool them with --all-studies")
    chosen = study or studies
    outside = outside or not studies
    lines = [f"Pooled studies (--all-studies): {held}." if len(chosen) > 1
             else f"Study: {chosen[0]}." if chosen
             else f"No study's episode in the source (no episode yet: {held})." if named
             else "No study in the source."]
    unstudied, plays = counts.get(None, 0), counts.get(PLAYS, 0)
    if unstudied and outside:
        lines.append(f"Included: {count(unstudied, 'episode')} of model runs outside any study.")
    elif unstudied:
        lines.append(f"Left out: {count(unstudied, 'episode')} of model runs outside any study (add them "
                     "with --agent-run ID or --runs-outside-studies).")
    played = (f"{count(plays, 'episode')} played outside any study and any model run: previews "
              "recorded with ?record=1, local play with --record")
    if plays and outside:
        lines.append(f"Included: {played}; their agent is unknown.")
    elif plays:
        lines.append(f"Left out: {played} (add them with --runs-outside-studies).")
    if runs:
        lines.append(f"Included: agent run(s) {', '.join(map(str, runs))} (--agent-run).")
    options = {"study": chosen or None, "outside": outside, "agent_runs": runs or None}
    return Scope(options, tuple(lines))
