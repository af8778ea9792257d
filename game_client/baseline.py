"""The random-agent baseline of 002 App. C and Table E.3, for our problems.

For change detection: the probability that a random agent triggers the change (the
changed program's frames depart from the original's) within ``steps`` test steps, and
the mean number of steps taken; for planning: the probability of reaching the goal
within ``steps`` and the mean steps; for masked frame prediction: the chance of picking
the right option, ``1 / len(options)``. Mean steps count a sample that never succeeded
as ``steps`` (the timeout), so that an environment that never triggers reads 1000.
The agent is :func:`game_client.agents.random_env_action`: uniform over click, up, down,
left, right and noop, a click at a uniform cell.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from game_client.agents import random_env_action
from tasks.worldtest.challenge import PICKS_OPTION, REACHES_GOAL, TRIGGERS_CHANGE, get
from tasks.worldtest.episode import Episode
from tasks.worldtest.problem import Problem

COLUMNS = ("env_id", "problem_id", "challenge", "samples", "steps", "probability", "mean_steps")


@dataclass(frozen=True)
class BaselineRow:
    env_id: str
    problem_id: str
    challenge: str
    samples: int
    steps: int
    probability: float
    mean_steps: float | None

    def as_tuple(self) -> tuple:
        return tuple(getattr(self, name) for name in COLUMNS)


def sampled_by_agent(problem: Problem) -> bool:
    """Whether the baseline of ``problem`` is measured by running the random agent (not
    computed, as the chance of picking the right option is)."""
    return get(problem.challenge).baseline in (REACHES_GOAL, TRIGGERS_CHANGE)


def sample(problem: Problem, steps: int, rng: random.Random) -> tuple[bool, int]:
    """One random test phase: (succeeded, steps taken). Success is reaching the goal, or,
    for a challenge read by whether the change was triggered, the defect time ``t*``."""
    episode = Episode(replace(problem, params={**problem.params, "horizon": steps}))
    if episode.phase == "interaction":
        episode.apply("go-to-test")
    triggers = episode.challenge.baseline == TRIGGERS_CHANGE
    test = episode.test
    for taken in range(1, steps + 1):
        if triggers and test.t_star is not None:
            return True, test.t_star
        episode.apply(random_env_action(rng, episode.allowed_verbs(), episode.size))
        if episode.done:
            return episode.score == 1.0, taken
    if triggers and test.t_star is not None:
        return True, test.t_star
    return False, steps


def baseline_row(problem: Problem, samples: int, steps: int, seed: int = 0,
                 on_sample: Callable[[], None] | None = None) -> BaselineRow:
    """The baseline of one problem."""
    reading = get(problem.challenge).baseline
    if reading == PICKS_OPTION:
        return BaselineRow(problem.env_id, problem.id, problem.challenge, 0, 0,
                           1 / len(problem.params["options"]), None)
    if not sampled_by_agent(problem):
        raise ValueError(f"no random baseline for {problem.challenge} problems ({problem.id})")
    outcomes = []
    for index in range(samples):
        outcomes.append(sample(problem, steps, random.Random(f"{seed}/{problem.id}/{index}")))
        if on_sample:
            on_sample()
    successes = sum(ok for ok, _ in outcomes)
    return BaselineRow(problem.env_id, problem.id, problem.challenge, samples, steps,
                       successes / samples, sum(n for _, n in outcomes) / samples)


def run_baseline(problems: Iterable[Problem], samples: int, steps: int, seed: int = 0,
                 on_sample: Callable[[], None] | None = None) -> list[BaselineRow]:
    return [baseline_row(p, samples, steps, seed, on_sample) for p in problems]


def format_table(rows: list[BaselineRow]) -> str:
    """A plain-text table, one row per problem."""
    header = ("problem", "challenge", "P(success)", "mean steps", "samples")
    lines = [header] + [
        (r.problem_id, r.challenge, f"{r.probability:.3f}",
         "-" if r.mean_steps is None else f"{r.mean_steps:.1f}", str(r.samples))
        for r in rows
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)) for line in lines)


def write_csv(rows: list[BaselineRow], path: str | Path) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(row.as_tuple() for row in rows)
