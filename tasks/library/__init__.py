"""gridstudy's own library of Autumn environments, and their WorldTest problems.

Each environment is a folder here::

    <name>/program.sexp     the environment
    <name>/changed.sexp     the same program with one rule changed (for change detection)
    <name>/env.json         documentation for researchers (never shown to participants),
                            the recipes the three problems are derived from, and
                            optionally ``step_budget`` (evaluations per step, docs/autumn.md)
    <name>/problems/*.json  the derived problems, written by ``derive_library``

Importing this module registers ``autumn/<name>`` and ``autumn/<name>-changed`` for every
folder, and every problem file found. Adding an environment is adding a folder.
"""

from __future__ import annotations

import json
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


@cache
def library_envs() -> tuple[LibraryEnv, ...]:
    """Every environment folder of the library, by name (a folder still being written,
    without its ``env.json``, is not one yet)."""
    found = []
    for folder in sorted(p for p in LIBRARY.iterdir() if (p / "program.sexp").is_file()):
        if not (folder / "env.json").is_file():
            continue
        try:
            meta = json.loads((folder / "env.json").read_text())
        except ValueError as error:
            raise ValueError(f"{folder / 'env.json'}: not valid JSON ({error})") from None
        found.append(LibraryEnv(folder.name, folder, meta))
    return tuple(found)


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


def load_env(name: str, variant: str = "program"):
    """Make the environment ``name`` (``variant`` is ``program`` or ``changed``)."""
    from tasks.autumn import load

    budget = next((e.meta.get("step_budget") for e in library_envs() if e.name == name), None)
    path = LIBRARY / name / f"{variant}.sexp"  # errors name the file, as an editor opens it
    return load(_source(name, variant), name=str(path), step_budget=budget)


@cache
def _source(name: str, variant: str) -> str:
    return (LIBRARY / name / f"{variant}.sexp").read_text()


def _register_all() -> None:
    for env in library_envs():
        tags = ("autumn", env.meta["category"],
                "stochastic" if env.meta["stochastic"] else "deterministic")
        doc = env.documentation()
        registry.register_env(env.env_id, load_env, description=doc, tags=tags,
                              replace=True, program=str(env.folder / "program.sexp"),
                              name=env.name)
        registry.register_env(env.changed_env_id, load_env, description=doc,
                              tags=(*tags, "changed"), replace=True,
                              program=str(env.folder / "changed.sexp"), name=env.name,
                              variant="changed")
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
