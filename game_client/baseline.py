"""The random-agent baseline of 002 App. C and Table E.3, for our problems.

For change detection: the probability that a random agent triggers the change (the
changed program's frames depart from the original's) within ``steps`` test steps, and
the mean number of steps taken; for planning: the probability of reaching the goal
within ``steps`` and the mean steps; for masked frame prediction: the chance of picking
the right option, ``1 / len(options)``. :func:`success_steps` gives one problem's
samples as the per-environment table of ``gridstudy baseline random`` reads them (the
step of each success, or None; its mean steps average the successes): that table is
:func:`tasks.worldtest.baseline.random_baseline_table`, the report's too. The per-problem
rows of :func:`run_baseline` keep their own mean, which counts a sample that never
succeeded as ``steps`` (the timeout), so that a problem that never triggers reads 1000.
The agent is :func:`game_client.agents.random_env_action`: uniform over click, up, down,
left, right and noop, a click at a uniform cell.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from game_client.agents import random_env_action
from tasks.worldtest.baseline import COLUMNS as SAMPLED_READINGS
from tasks.worldtest.challenge import PICKS_OPTION, TRIGGERS_CHANGE, get
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
    computed, as the chance of picking the right option is): its challenge's reading is
    one the per-environment table has columns for."""
    return get(problem.challenge).baseline in SAMPLED_READINGS


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


def outcomes(problem: Problem, samples: int, steps: int, seed: int = 0,
             on_sample: Callable[[], None] | None = None) -> list[tuple[bool, int]]:
    """``samples`` random test phases of ``problem``, each from its own generator seeded
    by ``seed``, the problem and its index: both views of a run draw the same samples."""
    if not sampled_by_agent(problem):
        raise ValueError(f"no random baseline for {problem.challenge} problems ({problem.id})")
    found = []
    for index in range(samples):
        found.append(sample(problem, steps, random.Random(f"{seed}/{problem.id}/{index}")))
        if on_sample:
            on_sample()
    return found


def success_steps(problem: Problem, samples: int, steps: int, seed: int = 0,
                  on_sample: Callable[[], None] | None = None) -> list[int | None]:
    """The samples of :func:`outcomes` as the step each succeeded at, None for a failure."""
    found = outcomes(problem, samples, steps, seed, on_sample)
    return [taken if ok else None for ok, taken in found]


def baseline_row(problem: Problem, samples: int, steps: int, seed: int = 0,
                 on_sample: Callable[[], None] | None = None) -> BaselineRow:
    """The baseline of one problem."""
    reading = get(problem.challenge).baseline
    if reading == PICKS_OPTION:
        return BaselineRow(problem.env_id, problem.id, problem.challenge, 0, 0,
                           1 / len(problem.params["options"]), None)
    found = outcomes(problem, samples, steps, seed, on_sample)
    successes = sum(ok for ok, _ in found)
    return BaselineRow(problem.env_id, problem.id, problem.challenge, samples, steps,
                       successes / samples, sum(n for _, n in found) / samples)


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
    return aligned(lines)


def format_env_table(rows: Sequence[Mapping[str, object]]) -> str:
    """A plain-text table of flat rows (the per-environment table): the rows' keys as
    header, numbers to three decimals as the report prints them, "-" where none."""
    header = tuple(rows[0])
    return aligned([header] + [tuple(cell_text(row[name]) for name in header) for row in rows])


def cell_text(value: object) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def aligned(lines: list[tuple[str, ...]]) -> str:
    """Lines of cells as left-aligned columns two spaces apart."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip()
                     for line in lines)


def write_csv(rows: list[BaselineRow], path: str | Path) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(row.as_tuple() for row in rows)


def write_env_csv(rows: Sequence[Mapping[str, object]], path: str | Path) -> None:
    """Flat rows as CSV, the first row's keys as header, None as an empty cell."""
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
