"""The libraries of Autumn environments, and their WorldTest problems: gridstudy's own
(this package) and the user's (the folder ``$GRIDSTUDY_LIBRARY``, default
``./gridstudy-library``), where ``gridstudy envs new`` and ``gridstudy problems import``
write and every command looks.

Each environment is a folder, here as ``<name>/`` and in the user's library as
``autumn/<name>/``::

    program.sexp     the environment
    changed.sexp     the same program with one rule changed (for change detection)
    env.json         documentation for researchers (never shown to participants),
                     the recipes the three problems are derived from, and
                     optionally ``step_budget`` (evaluations per step, docs/autumn.md)
    problems/*.json  the derived problems, written by ``derive_library``

Importing this module registers ``autumn/<name>`` and ``autumn/<name>-changed`` for every
folder of both, and every problem file found (imported AutumnBench folders, the user's
``autumnbench/<name>/``, are :mod:`tasks.imported`'s). Adding an environment is adding
a folder. A folder that cannot be read is reported (:data:`skipped`, and a warning on the
log) and left out; the rest loads.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tasks import registry
from tasks.worldtest.challenge import challenges
from tasks.worldtest.problem import Problem

LIBRARY = Path(__file__).parent
CATEGORIES = frozenset({
    "physical simulation", "emergent system", "multi-agent dynamics", "abstract logic",
    "game-inspired", "tool use",
})
"""The six kinds of environment the library covers (AutumnBench's)."""
LIBRARY_VARIABLE = "GRIDSTUDY_LIBRARY"
DEFAULT_LIBRARY = "gridstudy-library"
OWN = "autumn"
"""The user's library keeps the environments written there (``envs new``) in this folder."""
skipped: list[str] = []
"""Library folders and files that could not be read, each with why (left out; the rest loads)."""
log = logging.getLogger(__name__)


def library_root(environ: Mapping[str, str] = os.environ) -> Path:
    """The user's library folder: ``$GRIDSTUDY_LIBRARY``, else ``./gridstudy-library``."""
    return Path(environ.get(LIBRARY_VARIABLE) or DEFAULT_LIBRARY)


def skip(path: Path, why: str) -> None:
    """Leave ``path`` out of the library, and say so (once)."""
    if f"{path}: {why}" not in skipped:
        skipped.append(f"{path}: {why}")
        log.warning("skipped %s: %s", path, why)


@dataclass(frozen=True)
class LibraryEnv:
    """One folder of the library."""

    name: str
    folder: Path
    meta: dict[str, Any]

    @property
    def env_id(self) -> str:
        return f"autumn/{self.name}"

    @property
    def changed_env_id(self) -> str:
        return f"autumn/{self.name}-changed"

    @property
    def challenges(self) -> tuple[str, ...]:
        """The challenges this environment's recipes derive, in registry order."""
        recipes = self.meta["recipes"]
        return tuple(name for name, c in challenges().items() if c.from_recipe and name in recipes)

    def problem_path(self, challenge: str) -> Path:
        return self.folder / "problems" / f"{challenge}.json"

    def documentation(self) -> str:
        """The environment's researcher-facing description, in the library's sections."""
        meta = self.meta
        lines = [
            f"{meta['title']} ({meta['category']}, "
            f"{'stochastic' if meta['stochastic'] else 'deterministic'})",
            "",
            "Description: " + meta["description"],
            "What a good explorer discovers: " + "; ".join(meta["discoveries"]) + ".",
            "Changed program (change detection): " + meta["changed"],
            "Actions: noop, up, down, left, right, click X Y.",
            "Observation: the rendered grid (colour names, frame[y][x]).",
            "Termination: none; the WorldTest episode decides when the test ends.",
            f"Registered ids: {self.env_id}, {self.changed_env_id}; problems "
            + ", ".join(f"{self.name}/{c}" for c in self.challenges) + ".",
        ]
        return "\n".join(lines)


def library_envs(root: Path | None = None) -> tuple[LibraryEnv, ...]:
    """Every environment folder of gridstudy's library, then of the user's library at
    ``root`` (default :func:`library_root`), each by name. A folder still being written,
    without its ``env.json``, is not one yet; one whose ``env.json`` is not valid, or
    whose name gridstudy's library has already, is reported and left out."""
    own = _package_envs()
    taken = {env.name for env in own}
    users = []
    for env in _envs_in((root or library_root()) / OWN):
        if env.name in taken:
            skip(env.folder, f"gridstudy's library has an environment '{env.name}' already; "
                 "rename the folder")
            continue
        users.append(env)
    return own + tuple(users)


@cache
def _package_envs() -> tuple[LibraryEnv, ...]:
    return _envs_in(LIBRARY)


def _envs_in(folder: Path) -> tuple[LibraryEnv, ...]:
    if not folder.is_dir():
        return ()
    found = []
    for env_folder in sorted(p for p in folder.iterdir() if (p / "program.sexp").is_file()):
        path = env_folder / "env.json"
        if not path.is_file():
            continue
        try:
            meta = json.loads(path.read_text())
        except (ValueError, OSError) as error:
            skip(path, f"not valid JSON ({error})")
            continue
        missing = [key for key in ("title", "category", "stochastic", "description",
                                   "discoveries", "changed", "recipes")
                   if not isinstance(meta, dict) or key not in meta]
        if missing:
            skip(path, "missing " + ", ".join(missing))
            continue
        found.append(LibraryEnv(env_folder.name, env_folder, meta))
    return tuple(found)


def library_env(name: str) -> LibraryEnv:
    """The environment ``name`` of either library; ``KeyError`` names the known ones."""
    envs = library_envs()
    for env in envs:
        if env.name == name:
            return env
    raise KeyError(f"unknown environment '{name}' (the libraries have: "
                   + ", ".join(e.name for e in envs) + f"; the user's library is "
                   f"${LIBRARY_VARIABLE}, now {library_root()})")


def step_budget_of(folder: Path) -> int | None:
    """The ``step_budget`` the ``env.json`` in ``folder`` sets, if it has one (None: the
    interpreter's default)."""
    path = folder / "env.json"
    if not path.is_file():
        return None
    try:
        meta = json.loads(path.read_text())
    except ValueError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    return meta.get("step_budget") if isinstance(meta, dict) else None


def load_env(name: str, variant: str = "program", folder: str | None = None):
    """Make the environment ``name`` (``variant`` is ``program`` or ``changed``), from
    ``folder`` (default: gridstudy's library)."""
    from tasks.autumn import load

    path = Path(folder or LIBRARY / name) / f"{variant}.sexp"
    # errors name the file, as an editor opens it
    return load(registry.program_text(path), name=str(path),
                step_budget=step_budget_of(path.parent))


def _register_all() -> None:
    for env in library_envs():
        tags = ("autumn", env.meta["category"],
                "stochastic" if env.meta["stochastic"] else "deterministic")
        doc = env.documentation()
        registry.register_env(env.env_id, load_env, description=doc, tags=tags,
                              replace=True, program=str(env.folder / "program.sexp"),
                              name=env.name, folder=str(env.folder))
        registry.register_env(env.changed_env_id, load_env, description=doc,
                              tags=(*tags, "changed"), replace=True,
                              program=str(env.folder / "changed.sexp"), name=env.name,
                              variant="changed", folder=str(env.folder))
        for challenge in env.challenges:
            path = env.problem_path(challenge)
            if path.is_file():
                registry.register_problem(
                    f"{env.name}/{challenge}", _loader(path), env_id=env.env_id,
                    challenge=challenge, replace=True,
                )


def _loader(path: Path):
    return lambda: Problem.load(path)


_register_all()
