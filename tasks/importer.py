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

:func:`read_folder` turns each environment into its programs and a :class:`Problem` for
each challenge it has files for, read by that challenge's own reader (its
``Challenge.harness``: ``tasks/worldtest/mfp_harness.py``, ``planning_harness.py``,
``cd_harness.py``); :func:`library_files` gives them in :mod:`tasks.imported`'s
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.autumn import load
from tasks.core import GridEnv
from tasks.import_files import (
    FolderError,
    parse_colour_dict,
    program_source,
    prompt_files,
    read_text,
)
from tasks.worldtest.problem import Problem

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


def _read_env(folder: Path, name: str, found: list[str],
              colours: dict[int, str], search_states: int) -> ImportedEnv:
    """The environment ``name`` with a problem of each challenge it has files for, each
    read by the challenge's own reader (``Challenge.harness``), in registry order."""
    from tasks.registry import load_entry_point
    from tasks.worldtest.challenge import challenges

    program = program_source(folder / "programs" / f"{name}.sexp")
    imported = ImportedEnv(name, program, None, search_states)
    make_env = _factory(imported)
    for challenge in challenges().values():
        if challenge.harness and challenge.name in found:
            read = load_entry_point(challenge.harness)
            imported.problems.append(read(folder, imported, colours, make_env))
    return imported


# -- what every challenge's reader uses ----------------------------------------------------

def read_grid(value: Any, path: Path, what: str) -> list[list[int]]:
    ok = (isinstance(value, list) and value and all(isinstance(r, list) and r for r in value)
          and all(isinstance(v, int) for r in value for v in r))
    if not ok:
        raise FolderError(f"{path}: {what}: expected a grid (a list of lists of integers)")
    return value


def colour_of(value: int, colours: dict[int, str], path: Path) -> str:
    try:
        return colours[value]
    except KeyError:
        raise FolderError(f"{path}: colour {value} is not in color_dict.yaml") from None



def _factory(env: ImportedEnv) -> Callable[[str], GridEnv]:
    def make_env(env_id: str) -> GridEnv:
        sources = {env.env_id: env.program, env.changed_env_id: env.changed}
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
