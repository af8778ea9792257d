"""Curiosity (003 Sec. 2): pass@k, discovery@k and interaction@k per agent.

Discovery and interaction are read for problems whose ``params`` carry an
``injected_solution``: whether an attempt was shown the injected solution, and whether
it clicked it.
"""

from __future__ import annotations

from analysis.dataset import Dataset, EpisodeRecord, event_values
from analysis.metrics import at_k, solution_contact
from analysis.readings import Row, agent_of, counted, group, mean_of, problem_of, solved
from analysis.replay import known_problem

AT_K_METRICS = ("pass", "discovery", "interaction")
"""What counts for each metric@k, in the order of :func:`attempt_flags`. Discovery and
interaction exist only for problems with an injected solution (see
:func:`injection_flags`); other problems are left out of them."""


def attempt_flags(episode: EpisodeRecord) -> tuple[bool | None, ...]:
    """``(solved, discovered, interacted)`` for one attempt, read once."""
    return (solved(episode), *injection_flags(episode))


def injection_flags(episode: EpisodeRecord) -> tuple[bool | None, bool | None]:
    """``(discovered, interacted)`` for an attempt at a problem whose ``params`` carry an
    ``injected_solution`` (``cells`` and ``colours``), from the frames the attempt
    received and its clicks (:func:`solution_contact`); values the episode's ``info``
    records itself (``discovered``, ``interacted``) take precedence. ``(None, None)``
    for a problem without one."""
    if "discovered" in episode.info or "interacted" in episode.info:
        return episode.info.get("discovered"), episode.info.get("interacted")
    problem = known_problem(episode.problem_id)
    spec = problem.params.get("injected_solution") if problem is not None else None
    if not spec:
        return None, None
    shown = {key for applied, key in zip(event_values(episode, "applied"),
                                          event_values(episode, "frame_hash")) if applied and key}
    return solution_contact((episode.frame(h) for h in shown), episode.actions,
                            spec["cells"], spec["colours"])


def at_k_rows(dataset: Dataset, k: int = 1) -> list[Row]:
    """Per agent, pass@k (and discovery@k, interaction@k where recorded) over problems.

    Raises ``ValueError`` naming the problem when an agent has fewer than ``k`` attempts
    at one, since the estimator is undefined there (003 Eq. 1)."""
    rows = []
    for (agent,), episodes in group(counted(dataset), agent_of).items():
        problems = group(episodes, problem_of)
        short = {p[0]: len(es) for p, es in problems.items() if len(es) < k}
        if short:
            problem, n = next(iter(short.items()))
            raise ValueError(f"{agent} has {n} attempt(s) at {problem}; @{k} needs n >= {k}")
        flags = [[attempt_flags(e) for e in es] for es in problems.values()]
        row: Row = {"agent": agent, "problems": len(problems), "k": k}
        for index, name in enumerate(AT_K_METRICS):
            row[f"{name}@{k}"] = _at_k_mean(flags, index, k)
        rows.append(row)
    return rows


def _at_k_mean(problems: list[list[tuple]], index: int, k: int) -> float | None:
    """Mean @k of flag ``index`` over the problems where it is defined for every
    attempt; ``None`` when it is defined for none."""
    values = []
    for attempts in problems:
        flags = [attempt[index] for attempt in attempts]
        if any(f is None for f in flags):
            continue
        values.append(at_k(len(flags), sum(map(bool, flags)), k))
    return mean_of(values)
