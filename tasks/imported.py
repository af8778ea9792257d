"""Environments and problems imported into the user's library (``gridstudy problems import``).

The library is the user's library of :mod:`tasks.library`, the folder named by the
environment variable ``GRIDSTUDY_LIBRARY`` (default ``./gridstudy-library``); imports
go to its ``autumnbench`` folder, laid out like ``tasks/library``::

    autumnbench/<name>/program.sexp       registered as ``autumnbench/<name>``
    autumnbench/<name>/changed.sexp       registered as ``autumnbench/<name>-changed``
    autumnbench/<name>/problems/*.json    registered as ``autumnbench/<name>/<challenge>``

Importing this module (the registry does, on first use) registers whatever the library
holds, so an import done once stays available to every later command and server.
"""

from __future__ import annotations

from pathlib import Path

from tasks import registry
from tasks.autumn import AutumnEnv, load
from tasks.library import DEFAULT_LIBRARY, LIBRARY_VARIABLE, library_root, skip, skipped
from tasks.worldtest.problem import Problem

__all__ = ["DEFAULT_LIBRARY", "LIBRARY_VARIABLE", "library_root", "load_program",
           "register_library", "skipped"]
SOURCES = ("autumnbench",)
"""The sub-folders scanned, one per source of imported environments."""


def load_program(path: str) -> AutumnEnv:
    """Make the environment of one imported program file."""
    from tasks.library import step_budget_of

    file = Path(path)  # errors name the file, as an editor opens it
    return load(registry.program_text(file), name=str(file),
                step_budget=step_budget_of(file.parent))


def register_library(root: Path) -> list[str]:
    """Register every environment and problem found under ``root``; return the problem ids."""
    registered = []
    for source in SOURCES:
        folder = root / source
        if not folder.is_dir():
            continue
        for env_folder in sorted(p for p in folder.iterdir() if (p / "program.sexp").is_file()):
            registered += _register_env(f"{source}/{env_folder.name}", env_folder)
    return registered


def _register_env(env_id: str, folder: Path) -> list[str]:
    tags = ("autumn", "imported")
    description = f"Imported program {env_id} (from the user's library)."
    registry.register_env(env_id, load_program, description=description, tags=tags,
                          replace=True, program=str(folder / "program.sexp"),
                          path=str(folder / "program.sexp"))
    if (folder / "changed.sexp").is_file():
        registry.register_env(f"{env_id}-changed", load_program, description=description,
                              tags=(*tags, "changed"), replace=True,
                              program=str(folder / "changed.sexp"),
                              path=str(folder / "changed.sexp"))
    ids = []
    for path in sorted((folder / "problems").glob("*.json")):
        try:
            problem = Problem.load(path)
        except (ValueError, TypeError, OSError) as error:
            skip(path, str(error))
            continue
        registry.register_problem(problem.id, _loader(problem), env_id=problem.env_id,
                                  challenge=problem.challenge, replace=True)
        ids.append(problem.id)
    return ids


def _loader(problem: Problem):
    return lambda: problem


register_library(library_root())
