"""Importing AutumnBench task folders into the user's library.

The public AutumnBench harness keeps one benchmark in a folder laid out as::

    programs/<env>.sexp                                   the environment
    programs/<env>_change_detection_wrong_program.sexp    its changed program (or the
                                                          name ``prompts/<env>_cd.json``
                                                          gives as ``wrong_program``)
    prompts/<env>_mfp.json       ``observations`` (``masked_grid`` and the ``action`` that
                                 led to it; masked cells hold 0) and six ``choices`` (the
                                 masked rectangle's colours, one grid per option)
    prompts/<env>_planning.json  ``goal`` (a whole grid) and ``mask`` (1: checked cell)
    prompts/<env>_cd.json        names the changed program
    answers/<env>_mfp.json       ``correct_idx``
    answers/<env>_planning.json  ``optimal_actions_count``
    color_dict.yaml              ``<integer>: <colour name>``, the integers used in grids

:func:`read_folder` turns each environment into its programs and up to three
:class:`Problem` objects; :func:`library_files` gives them in :mod:`tasks.imported`'s
layout, which ``gridstudy problems import`` writes into the library folder and registers
(``tasks`` only reads files). The harness's recordings come from its own interpreter, so
whatever gridstudy needs and the folder does not hold is found on our interpreter from
:data:`IMPORT_SEED`: a plan for the planning problem (a best-first search guided by the
goal cells still wrong, :func:`~tasks.worldtest.search.guided_plan`: a plan, not a
shortest one; the answer file's count is kept as ``declared_optimal_length``) and a
change-detection witness (the MFP trajectory, else seeded random rollouts of both programs
run in lockstep, each checked by :func:`~tasks.worldtest.derive.derive_cd`). What could
not be found within the budget is said in the environment's ``notes`` and recorded as
``search_states`` in the problem; ``gridstudy problems check`` then calls the problem
*unverified* rather than the import failing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from tasks.autumn import load
from tasks.core import GridEnv, parse_action, rollout
from tasks.import_files import (
    FolderError,
    changed_program,
    json_field,
    parse_colour_dict,
    program_source,
    prompt_files,
    read_json,
    read_text,
)
from tasks.worldtest.cd import derive_cd
from tasks.worldtest.check import Lockstepped, final_frames, is_stochastic, lockstep, sample_seeds
from tasks.worldtest.derive import default_horizon
from tasks.worldtest.problem import Problem
from tasks.worldtest.search import (
    focus_clicks,
    goal_distance,
    guided_plan,
    probe_rollouts,
    shorten,
)

IMPORT_SEED = 1
"""The seed imported problems use (seed 0 would freeze the Autumn generator)."""
MASKED = 0
"""The grid value of a masked cell in the harness's recordings."""
SEARCH_STATES = 1_000
"""States each search may visit: those the plan search expands, the steps the witness
rollouts take. The real ``ice`` example needs about 900 for its plan (a few seconds)."""
SEARCH_SECONDS = 60.0
"""The plan search's time budget, whatever its state budget."""
PREFIX = "autumnbench"


@dataclass
class ImportedEnv:
    """One environment read from a folder: its programs, its problems and what to know."""

    name: str
    program: str
    changed: str | None
    search_states: int = SEARCH_STATES
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def env_id(self) -> str:
        return f"{PREFIX}/{self.name}"

    @property
    def changed_env_id(self) -> str:
        return f"{PREFIX}/{self.name}-changed"


def read_folder(folder: str | Path, colours: dict[int, str] | None = None,
                search_states: int = SEARCH_STATES) -> list[ImportedEnv]:
    """Every environment of an AutumnBench folder with its problems (nothing written).

    ``colours`` defaults to the folder's ``color_dict.yaml`` read by
    :func:`parse_colour_dict`; ``search_states`` bounds each plan or witness search.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FolderError(f"{folder}: not a folder; expected an AutumnBench folder with "
                          "programs/, prompts/, answers/ and color_dict.yaml")
    if colours is None:
        colours = parse_colour_dict(read_text(folder / "color_dict.yaml"), "color_dict.yaml")
    prompts = prompt_files(folder)
    return [_read_env(folder, name, sorted(challenges), colours, search_states)
            for name, challenges in sorted(prompts.items())]


def _read_env(folder: Path, name: str, challenges: list[str],
              colours: dict[int, str], search_states: int) -> ImportedEnv:
    program = program_source(folder / "programs" / f"{name}.sexp")
    changed = changed_program(folder, name) if "cd" in challenges else None
    imported = ImportedEnv(name, program, changed, search_states)
    make_env = _factory(imported)
    order = [c for c in ("mfp", "planning", "cd") if c in challenges]
    for challenge in order:
        build = {"mfp": _mfp, "planning": _planning, "cd": _cd}[challenge]
        imported.problems.append(build(folder, imported, colours, make_env))
    return imported


# -- the three challenges --------------------------------------------------------------------


def _mfp(folder: Path, env: ImportedEnv, colours: dict[int, str], make_env) -> Problem:
    path = folder / "prompts" / f"{env.name}_mfp.json"
    prompt = read_json(path)
    observations = json_field(prompt, "observations", list, path)
    if len(observations) < 2 or not all(isinstance(o, dict) for o in observations):
        raise FolderError(f"{path}: expected 'observations' to be at least two objects")
    grids = [_grid(o.get("masked_grid"), path, f"observation {i} masked_grid")
             for i, o in enumerate(observations)]
    actions = [_action(o.get("action"), path, i) for i, o in enumerate(observations[1:], 1)]
    masked_at = [i for i, g in enumerate(grids) if any(MASKED in row for row in g)]
    if not masked_at:
        raise FolderError(f"{path}: no observation has masked cells (value {MASKED})")
    mask = [(x, y) for y, row in enumerate(grids[-1]) for x, v in enumerate(row) if v == MASKED]
    choices = json_field(prompt, "choices", list, path)
    options = [_option(choice, mask, colours, path, i) for i, choice in enumerate(choices)]
    answer_path = folder / "answers" / f"{env.name}_mfp.json"
    answer = json_field(read_json(answer_path), "correct_idx", int, answer_path)
    if not 0 <= answer < len(options):
        raise FolderError(f"{answer_path}: correct_idx {answer} is not a choice 0..{len(options) - 1}")
    _note_recording(env, make_env, actions, grids, colours)
    params = {"actions": actions, "mask": [list(c) for c in mask], "masked_from": masked_at[0],
              "options": options, "answer": answer}
    return Problem(f"{env.env_id}/mfp", env.env_id, "mfp", IMPORT_SEED, params,
                   description=f"imported from AutumnBench ({env.name}_mfp)")


def _grid(value: Any, path: Path, what: str) -> list[list[int]]:
    ok = (isinstance(value, list) and value and all(isinstance(r, list) and r for r in value)
          and all(isinstance(v, int) for r in value for v in r))
    if not ok:
        raise FolderError(f"{path}: {what}: expected a grid (a list of lists of integers)")
    return value


def _action(value: Any, path: Path, index: int) -> str:
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise FolderError(f"{path}: observation {index}: expected an 'action' like "
                          '{"type": "left"} or {"type": "click", "x": 1, "y": 2}')
    text = value["type"]
    if text == "click":
        text = f"click {value.get('x')} {value.get('y')}"
    try:
        action = parse_action(text)
    except ValueError as error:
        raise FolderError(f"{path}: observation {index}: {error}") from None
    if not action.is_env_action:
        raise FolderError(f"{path}: observation {index}: {text!r} is not an environment action")
    return str(action)


def _option(choice: Any, mask: list[tuple[int, int]], colours: dict[int, str], path: Path,
            index: int) -> list[str]:
    """The colours of one choice grid (the mask's bounding box) in the mask's order."""
    grid = _grid(choice, path, f"choice {index}")
    left, top = min(x for x, _ in mask), min(y for _, y in mask)
    width = max(x for x, _ in mask) - left + 1
    height = max(y for _, y in mask) - top + 1
    if len(grid) != height or any(len(row) != width for row in grid):
        raise FolderError(f"{path}: choice {index}: expected {height} rows of {width} "
                          "(the masked rectangle)")
    return [_colour(grid[y - top][x - left], colours, path) for x, y in mask]


def _colour(value: int, colours: dict[int, str], path: Path) -> str:
    try:
        return colours[value]
    except KeyError:
        raise FolderError(f"{path}: colour {value} is not in color_dict.yaml") from None


def _note_recording(env: ImportedEnv, make_env, actions, grids, colours) -> None:
    """Say when our interpreter does not reproduce the recording's visible frames."""
    frames = [o.frame for o in rollout(make_env(env.env_id), IMPORT_SEED, actions)]
    for t, (frame, grid) in enumerate(zip(frames, grids, strict=True)):
        shown = [[colours.get(v) for v in row] for row in grid]
        if any(v != MASKED and shown[y][x] != frame[y][x]
               for y, row in enumerate(grid) for x, v in enumerate(row)):
            env.notes.append(f"mfp: frame {t} differs from the recording (a stochastic "
                             "program, or an interpreter difference)")
            return


def _planning(folder: Path, env: ImportedEnv, colours: dict[int, str], make_env) -> Problem:
    path = folder / "prompts" / f"{env.name}_planning.json"
    prompt = read_json(path)
    goal = _grid(prompt.get("goal"), path, "goal")
    mask = _grid(prompt.get("mask"), path, "mask")
    if [len(r) for r in goal] != [len(r) for r in mask]:
        raise FolderError(f"{path}: 'goal' and 'mask' must have the same shape")
    cells = [(x, y) for y, row in enumerate(mask) for x, v in enumerate(row) if v == 1]
    if not cells:
        raise FolderError(f"{path}: the mask checks no cell (expected some cells equal to 1)")
    target = tuple(_colour(goal[y][x], colours, path) for x, y in cells)
    answer_path = folder / "answers" / f"{env.name}_planning.json"
    count = json_field(read_json(answer_path), "optimal_actions_count", int, answer_path)
    plan = _plan(env, make_env, cells, target, count)
    env_ = make_env(env.env_id)
    stochastic = bool(plan) and is_stochastic(
        env_, final_frames(env_, plan, [IMPORT_SEED, *sample_seeds(4, 0, IMPORT_SEED)]))
    params = {"goal_cells": [list(c) for c in cells], "goal_colours": list(target),
              "goal_grid": [[_colour(v, colours, path) for v in row] for row in goal],
              "horizon": default_horizon(max(count, len(plan))), "optimal_length": None,
              "declared_optimal_length": count, "plan": plan, "stochastic": stochastic}
    if not plan:
        params["search_states"] = env.search_states
    return Problem(f"{env.env_id}/planning", env.env_id, "planning", IMPORT_SEED, params,
                   description=f"imported from AutumnBench ({env.name}_planning)")


def _plan(env: ImportedEnv, make_env, cells, target, count: int) -> list[str]:
    """A plan found by the guided search, [] when none was (said in ``env.notes``)."""
    distance = goal_distance(cells, target)
    result = guided_plan(lambda: make_env(env.env_id), IMPORT_SEED, distance,
                         focus_clicks(make_env(env.env_id), cells, target),
                         max_states=env.search_states, max_seconds=SEARCH_SECONDS)
    if not result.found:
        budget = f"{SEARCH_SECONDS:g} seconds" if result.timed_out else f"{result.states} states"
        env.notes.append(f"planning: no plan found within {budget}; the answer file declares "
                         f"{count} actions; 'problems check' will call it unverified")
        return []
    plan = shorten(result.plan, lambda p: distance(rollout(make_env(env.env_id), IMPORT_SEED,
                                                            p)[-1]) == 0)
    if len(plan) < count:
        env.notes.append(f"planning: our plan takes {len(plan)} actions, fewer than the "
                         f"{count} the answer file declares optimal")
    return plan


def _cd(folder: Path, env: ImportedEnv, colours: dict[int, str], make_env) -> Problem:
    description = f"imported from AutumnBench ({env.name}_cd)"
    rejected = []
    for witness in _witnesses(env, make_env):
        try:
            problem = derive_cd(env.env_id, env.changed_env_id, IMPORT_SEED,
                                shorten(witness, partial(_shows_change, env, make_env)),
                                problem_id=f"{env.env_id}/cd", make_env=make_env)
        except ValueError as error:
            rejected.append(str(error))
            continue
        return Problem(**{**problem.to_dict(), "description": description})
    env.notes.append(f"cd: no action sequence within {env.search_states} states shows the "
                     "change" + (f" ({len(rejected)} rejected, the last: {rejected[-1]})"
                                 if rejected else ""))
    params = {"changed_env_id": env.changed_env_id, "horizon": default_horizon(0),
              "search_states": env.search_states}
    return Problem(f"{env.env_id}/cd", env.env_id, "cd", IMPORT_SEED, params,
                   description=description)


def _shows_change(env: ImportedEnv, make_env, actions: list[str]) -> bool:
    """Whether ``actions`` make the programs' frames differ, their randomness agreeing."""
    run = lockstep(make_env(env.env_id), make_env(env.changed_env_id), IMPORT_SEED, actions)
    return run.t_star is not None and run.randomness_agrees


def _witnesses(env: ImportedEnv, make_env) -> Iterator[list[str]]:
    """Action sequences after which the two programs' frames differ, to be checked by
    :func:`derive_cd`: the MFP trajectory when it shows the change, then seeded random
    rollouts of the two programs in lockstep."""
    def pair() -> Lockstepped:
        return Lockstepped(make_env(env.env_id), make_env(env.changed_env_id))

    mfp = next((p for p in env.problems if p.challenge == "mfp"), None)
    if mfp is not None:
        if any(o.info["differs"] for o in rollout(pair(), IMPORT_SEED, mfp.params["actions"])):
            yield list(mfp.params["actions"])
    yield from probe_rollouts(pair, IMPORT_SEED, lambda o: o.info["differs"],
                              max_states=env.search_states)


def _factory(env: ImportedEnv) -> Callable[[str], GridEnv]:
    sources = {env.env_id: env.program, env.changed_env_id: env.changed}

    def make_env(env_id: str) -> GridEnv:
        if sources.get(env_id) is None:
            raise KeyError(f"unknown environment {env_id!r}")
        return load(sources[env_id], name=env_id)

    return make_env


# -- what the library holds -----------------------------------------------------------------


def library_files(env: ImportedEnv) -> dict[str, str]:
    """The files of ``env`` in :mod:`tasks.imported`'s layout, by path relative to the
    library folder. Writing them is the caller's business (``tasks`` only reads files)."""
    base = f"{PREFIX}/{env.name}"
    files = {f"{base}/program.sexp": env.program}
    if env.changed is not None:
        files[f"{base}/changed.sexp"] = env.changed
    for problem in env.problems:
        files[f"{base}/problems/{problem.challenge}.json"] = (
            json.dumps(problem.to_dict(), indent=1) + "\n")
    return files
