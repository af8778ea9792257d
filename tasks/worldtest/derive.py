"""Deriving WorldTest problems from an environment, a seed and a trajectory (002 App. C).

Each ``derive_*`` runs the real environment, checks the challenge's guarantee and raises
``ValueError`` saying why when it cannot hold; :func:`check_problem` (from
:mod:`tasks.worldtest.check`, re-exported here) re-validates any problem later. How
realisations are sampled and how stochasticity is detected is documented there.

Horizons default to ``max(MIN_HORIZON, 10 x the plan's or witness's length)``: a
real-time session applies a ``noop`` on every tick without input and each counts as a
test step, so at 8 frames per second a horizon of 50 would last six seconds; 1,000 is
the paper's random-agent timeout (002 App. C).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from itertools import chain, zip_longest

from tasks import registry
from tasks.core import Action, Frame, frame_size, parse_action, region, rollout
from tasks.worldtest.check import (
    CheckReport,
    EnvFactory,
    check_problem,
    final_frames,
    is_stochastic,
    lockstep,
    sample_seeds,
)
from tasks.worldtest.problem import Problem
from tasks.worldtest.search import Clicks, shortest_plan

__all__ = ["CheckReport", "check_problem", "derive_cd", "derive_mfp", "derive_planning"]

DERIVE_SAMPLES = 64
MIN_HORIZON = 1000
OPTION_COUNT = 6
MFP_SHAPES = tuple((w, h) for w in (2, 3, 4) for h in (2, 3, 4))
GOAL_SHAPES = tuple((w, h) for w in (1, 2, 3, 4) for h in (1, 2, 3, 4))
SHIFTS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, -1), (1, -1), (-1, 1))
Cells = list[tuple[int, int]]
Colours = tuple[str, ...]


def default_horizon(length: int) -> int:
    """A generous test horizon for a plan or witness of ``length`` actions."""
    return max(MIN_HORIZON, 10 * length)


# -- masked frame prediction ---------------------------------------------------------------


def derive_mfp(
    env_id: str,
    seed: int,
    actions: Sequence[str | Action],
    *,
    mask: Iterable[Sequence[int]] | None = None,
    masked_from: int | None = None,
    samples: int = DERIVE_SAMPLES,
    rng_seed: int = 0,
    problem_id: str | None = None,
    make_env: EnvFactory = registry.make,
) -> Problem:
    """A masked-frame-prediction problem on the trajectory ``actions`` from ``seed``.

    The masked region of the final frame must be the same from ``seed`` and from every
    one of ``samples`` sampled seeds, so exactly one option is right in every
    realisation. Without ``mask`` a 2x2 to 4x4 window is chosen that is deterministic,
    changed since the first frame and, preferably, differs from every visible frame.
    Frames from ``masked_from`` on (default: the last quarter) are shown masked.
    """
    actions = _env_actions(actions)
    env = make_env(env_id)
    frames = [o.frame for o in rollout(env, seed, actions)]
    finals = [frames[-1], *final_frames(env, actions, sample_seeds(samples, rng_seed, seed))]
    masked_from = len(actions) - len(actions) // 4 if masked_from is None else masked_from
    if not 0 <= masked_from <= len(actions):
        raise ValueError(f"masked_from {masked_from} must lie in 0..{len(actions)}")
    rng = random.Random(rng_seed)
    if mask is None:
        cells, distractors = _choose_mfp_window(frames, finals, masked_from, rng)
    else:
        cells = _cells_in_grid(mask, frames[0])
        _require_deterministic(cells, finals)
        distractors = _distractors(frames, cells, rng)
        if distractors is None:
            raise ValueError(f"cannot build {OPTION_COUNT - 1} distinct distractors for mask {cells}")
    options, answer = _shuffled(region(frames[-1], cells), distractors, rng)
    params = {
        "actions": actions, "mask": [list(c) for c in cells], "masked_from": masked_from,
        "options": [list(o) for o in options], "answer": answer, "samples": samples,
        "stochastic": is_stochastic(env, finals),
    }
    return Problem(problem_id or f"{env_id}/mfp-{seed}", env_id, "mfp", seed, params)


def _choose_mfp_window(frames, finals, masked_from, rng) -> tuple[Cells, list[Colours]]:
    """The best-ranked deterministic changed window for which distractors exist."""
    stable = _deterministic_cells(finals)
    ranked = []
    for order, cells in enumerate(_windows(frames[0], MFP_SHAPES)):
        if all(cell in stable for cell in cells):
            rank = _mfp_rank(frames, masked_from, cells)
            if rank is not None:
                ranked.append((rank, -order, cells))
    for _rank, _order, cells in sorted(ranked, reverse=True):
        distractors = _distractors(frames, cells, rng)
        if distractors is not None:
            return cells, distractors
    raise ValueError(
        "no 2x2 to 4x4 window of the final frame is both deterministic across the sampled "
        "seeds and changed since the first frame: try a longer or different trajectory"
    )


def _mfp_rank(frames: list[Frame], masked_from: int, cells: Cells) -> tuple | None:
    """How good a window is to mask (higher is better), None if it never changed.

    A window whose final content appears in no visible frame cannot be guessed by
    copying; then one that differs from the last visible frame; then several colours;
    then one that differs from more visible frames; then a smaller one.
    """
    final = region(frames[-1], cells)
    if final == region(frames[0], cells):
        return None
    visible = [region(frame, cells) for frame in frames[: max(1, masked_from)]]
    return (final not in visible, final != visible[-1], len(set(final)) > 1,
            sum(v != final for v in visible), -len(cells))


def _distractors(frames: list[Frame], cells: Cells, rng: random.Random) -> list[Colours] | None:
    """Five plausible wrong options, or None when there are not enough distinct ones.

    Drawn in turn from the window in earlier frames (latest first), the window shifted
    by a cell in the final frame, and the answer with one (then two) cells recoloured
    with a colour used in the trajectory. Callers have made sure the region is the same
    in every sampled realisation, so a distractor different from the answer is never
    observed as the final value.
    """
    answer = region(frames[-1], cells)
    earlier = [region(frame, cells) for frame in reversed(frames[:-1])]
    shifted = [region(frames[-1], moved) for moved in _shifted(cells, frames[0])]
    palette = sorted({colour for frame in frames for row in frame for colour in row})
    once, twice = _recoloured(answer, palette, rng)
    chosen: list[Colours] = []
    for option in chain(_round_robin(earlier, shifted, once), twice):
        if option != answer and option not in chosen:
            chosen.append(option)
            if len(chosen) == OPTION_COUNT - 1:
                return chosen
    return None


def _recoloured(answer: Colours, palette: list[str], rng: random.Random):
    """The answer with one cell recoloured, and with two, each list shuffled by ``rng``."""
    once = [_with(answer, {i: c}) for i in range(len(answer)) for c in palette if c != answer[i]]
    pairs = [(i, j) for i in range(len(answer)) for j in range(i + 1, len(answer))]
    twice = [_with(answer, {i: c, j: d}) for i, j in pairs for c in palette for d in palette
             if c != answer[i] and d != answer[j]][:500]
    rng.shuffle(once)
    rng.shuffle(twice)
    return once, twice


def _with(colours: Colours, changes: dict[int, str]) -> Colours:
    return tuple(changes.get(i, c) for i, c in enumerate(colours))


def _round_robin(*pools: list[Colours]) -> Iterator[Colours]:
    for row in zip_longest(*pools):
        yield from (option for option in row if option is not None)


def _shuffled(answer: Colours, distractors: list[Colours], rng: random.Random):
    options = [answer, *distractors]
    rng.shuffle(options)
    return options, options.index(answer)


def _shifted(cells: Cells, frame: Frame) -> Iterator[Cells]:
    width, height = frame_size(frame)
    for dx, dy in SHIFTS:
        moved = [(x + dx, y + dy) for x, y in cells]
        if all(0 <= x < width and 0 <= y < height for x, y in moved):
            yield moved


# -- planning -------------------------------------------------------------------------------


def derive_planning(
    env_id: str,
    seed: int,
    plan: Sequence[str | Action],
    *,
    goal_cells: Iterable[Sequence[int]] | None = None,
    horizon: int | None = None,
    search: bool = True,
    clicks: Clicks = "all",
    max_states: int = 50_000,
    samples: int = 8,
    rng_seed: int = 0,
    problem_id: str | None = None,
    make_env: EnvFactory = registry.make,
) -> Problem:
    """A planning problem whose goal is the final frame's region after ``plan``.

    Without ``goal_cells`` the goal is the window (up to 4x4) holding the most cells
    that the plan changed and whose final colours are the same from sampled seeds. The
    plan is cut at its first step reaching the goal. When the environment is
    deterministic and ``search`` is on, a breadth-first search over ``clicks`` looks for
    a shorter plan; with every click allowed and the search within ``max_states`` its
    length is recorded as ``optimal_length`` (else null: the plan's length is then only
    an upper bound).
    """
    plan = _env_actions(plan)
    env = make_env(env_id)
    frames = [o.frame for o in rollout(env, seed, plan)]
    finals = [frames[-1], *final_frames(env, plan, sample_seeds(samples, rng_seed, seed))]
    cells = _goal_window(frames, finals) if goal_cells is None else _cells_in_grid(goal_cells, frames[0])
    goal = region(frames[-1], cells)
    if region(frames[0], cells) == goal:
        raise ValueError(f"the goal on {cells} already holds in the initial frame")
    plan = plan[: next(t for t, f in enumerate(frames) if t and region(f, cells) == goal)]
    stochastic = is_stochastic(env, finals)
    optimal = None
    if search and not stochastic:
        result = shortest_plan(
            partial(make_env, env_id), seed, lambda o: region(o.frame, cells) == goal,
            clicks=clicks, max_depth=len(plan) - 1, max_states=max_states,
        )
        plan = result.plan if result.found else plan
        optimal = len(plan) if clicks == "all" and (result.found or result.exhausted) else None
    params = {
        "goal_cells": [list(c) for c in cells], "goal_colours": list(goal),
        "horizon": horizon or default_horizon(len(plan)), "optimal_length": optimal,
        "plan": plan, "stochastic": stochastic,
    }
    return Problem(problem_id or f"{env_id}/planning-{seed}", env_id, "planning", seed, params)


def _goal_window(frames: list[Frame], finals: list[Frame]) -> Cells:
    stable = _deterministic_cells(finals)
    changed = {(x, y) for x, y in stable if frames[-1][y][x] != frames[0][y][x]}
    if not changed:
        raise ValueError("the plan changes no cell that is the same across sampled seeds")
    best = max(
        (cells for cells in _windows(frames[0], GOAL_SHAPES) if stable.issuperset(cells)),
        key=lambda cells: (len(changed.intersection(cells)), -len(cells)),
    )
    return best


# -- change detection -----------------------------------------------------------------------


def derive_cd(
    env_id: str,
    changed_env_id: str,
    seed: int,
    witness_actions: Sequence[str | Action],
    *,
    horizon: int | None = None,
    problem_id: str | None = None,
    make_env: EnvFactory = registry.make,
) -> Problem:
    """A change-detection problem: ``changed_env_id`` in the test, ``witness_actions``
    a trajectory that triggers the change; the witness is cut at the defect time ``t*``.

    Raises ``ValueError`` when the witness triggers no difference, the programs differ
    from the first frame, or their randomness parts before ``t*``.
    """
    witness = _env_actions(witness_actions)
    run = lockstep(make_env(env_id), make_env(changed_env_id), seed, witness)
    if run.t_star is None:
        raise ValueError(f"the witness ({len(witness)} actions) never makes the programs differ")
    if run.t_star < 1:
        raise ValueError("the programs differ already in the initial frame: t* must be >= 1")
    if not run.randomness_agrees:
        raise ValueError(f"the programs consume randomness differently from frame "
                         f"{run.random_split}, before t* = {run.t_star}")
    params = {
        "changed_env_id": changed_env_id, "horizon": horizon or default_horizon(run.t_star),
        "witness": witness[: run.t_star], "witness_t_star": run.t_star,
    }
    return Problem(problem_id or f"{env_id}/cd-{seed}", env_id, "cd", seed, params)


# -- shared ---------------------------------------------------------------------------------


def _env_actions(actions: Sequence[str | Action]) -> list[str]:
    parsed = [parse_action(a) for a in actions]
    wrong = [str(a) for a in parsed if not a.is_env_action]
    if not parsed or wrong:
        raise ValueError(f"expected a non-empty list of environment actions; not ones: {wrong}")
    return [str(a) for a in parsed]


def _cells_in_grid(cells: Iterable[Sequence[int]], frame: Frame) -> Cells:
    width, height = frame_size(frame)
    out = [(int(c[0]), int(c[1])) for c in cells]
    outside = [c for c in out if not (0 <= c[0] < width and 0 <= c[1] < height)]
    if not out or outside:
        raise ValueError(f"cells must be a non-empty list inside the {width}x{height} grid; "
                         f"outside: {outside}")
    return out


def _deterministic_cells(finals: list[Frame]) -> set[tuple[int, int]]:
    width, height = frame_size(finals[0])
    return {(x, y) for y in range(height) for x in range(width)
            if all(f[y][x] == finals[0][y][x] for f in finals[1:])}


def _require_deterministic(cells: Cells, finals: list[Frame]) -> None:
    truth = region(finals[0], cells)
    for index, frame in enumerate(finals[1:], 1):
        if region(frame, cells) != truth:
            raise ValueError(f"the region {cells} is not deterministic: sampled realisation "
                             f"{index} ends with {list(region(frame, cells))}, not {list(truth)}")


def _windows(frame: Frame, shapes: Iterable[tuple[int, int]]) -> Iterator[Cells]:
    """Every rectangle of the given (width, height) shapes inside the grid, cells in
    reading order."""
    width, height = frame_size(frame)
    for w, h in shapes:
        for top in range(height - h + 1):
            for left in range(width - w + 1):
                yield [(left + i, top + j) for j in range(h) for i in range(w)]
