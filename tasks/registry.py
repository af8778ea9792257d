"""The one registry of environments and problems.

Environments are registered by id with an entry point written ``"package.module:Factory"``
so that nothing is imported until an environment is made (Gymnasium's pattern). Problems
are registered as loaders too: deriving or reading a problem happens on first use.

Built-in content registers itself the first time the registry is asked anything:

* every Autumn program in ``tasks/library/`` and its derived problems (``tasks.library``),
* the Python environment families listed in ``_BUILTIN_MODULES``.

Adding an environment to the library therefore touches no other file.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tasks.core import GridEnv
    from tasks.worldtest.problem import Problem

_BUILTIN_MODULES = ("tasks.library", "tasks.dagmap.register", "tasks.imported")
"""Modules whose import registers built-in environments and problems."""


@dataclass(frozen=True)
class EnvSpec:
    """How to make one environment: ``entry_point(**kwargs)``."""

    id: str
    entry_point: str | Callable[..., GridEnv]
    kwargs: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    tags: tuple[str, ...] = ()
    program: str = ""
    """The program's file, for an environment written as a program (checked statically by
    ``gridstudy envs check`` and before its problems are trusted); empty otherwise."""
    step_time_limit: float | None = None
    """Seconds a step of this (Python) environment may run; None: the default
    (``tasks.limits.STEP_TIME_LIMIT``). An Autumn program has its step budget instead."""

    def make(self, **overrides: Any) -> GridEnv:
        """A fresh instance, its steps limited (``tasks.limits.limited``)."""
        from tasks.limits import limited
        factory = load_entry_point(self.entry_point)
        return limited(factory(**{**self.kwargs, **overrides}), self.step_time_limit)


@dataclass(frozen=True)
class ProblemSpec:
    """A problem id and the callable that builds the :class:`Problem` on first use."""

    id: str
    loader: Callable[[], Problem]
    env_id: str
    challenge: str


_envs: dict[str, EnvSpec] = {}
_problems: dict[str, ProblemSpec] = {}
_problem_cache: dict[str, Problem] = {}
_lock = threading.RLock()
_builtins_loaded = False


def load_entry_point(entry_point: str | Callable[..., Any]) -> Callable[..., Any]:
    """Resolve ``"package.module:attribute"`` (or return a callable unchanged)."""
    if callable(entry_point):
        return entry_point
    module_name, _, attribute = entry_point.partition(":")
    if not attribute:
        raise ValueError(f"entry point {entry_point!r} must look like 'package.module:Name'")
    return getattr(importlib.import_module(module_name), attribute)


def register_env(
    env_id: str,
    entry_point: str | Callable[..., GridEnv],
    *,
    description: str = "",
    tags: tuple[str, ...] = (),
    replace: bool = False,
    program: str = "",
    step_time_limit: float | None = None,
    **kwargs: Any,
) -> EnvSpec:
    """Register an environment under ``env_id``; a second registration is an error.
    ``step_time_limit`` raises (or lowers) the seconds a Python environment's step may run."""
    with _lock:
        if env_id in _envs and not replace:
            raise ValueError(f"environment {env_id!r} is already registered")
        spec = EnvSpec(env_id, entry_point, kwargs, description, tags, program, step_time_limit)
        _envs[env_id] = spec
        return spec


def register_problem(
    problem_id: str,
    loader: Callable[[], Problem],
    *,
    env_id: str,
    challenge: str,
    replace: bool = False,
) -> ProblemSpec:
    """Register a problem whose :class:`Problem` ``loader()`` builds on first use."""
    with _lock:
        if problem_id in _problems and not replace:
            raise ValueError(f"problem {problem_id!r} is already registered")
        spec = ProblemSpec(problem_id, loader, env_id, challenge)
        _problems[problem_id] = spec
        _problem_cache.pop(problem_id, None)
        return spec


def add_problem(problem: Problem, *, replace: bool = False) -> ProblemSpec:
    """Register an already built problem."""
    return register_problem(
        problem.id, lambda: problem, env_id=problem.env_id, challenge=problem.challenge,
        replace=replace,
    )


def unregister(env_id: str | None = None, problem_id: str | None = None) -> None:
    """Forget an environment or a problem (tests use it to keep the registry clean)."""
    with _lock:
        if env_id is not None:
            _envs.pop(env_id, None)
        if problem_id is not None:
            _problems.pop(problem_id, None)
            _problem_cache.pop(problem_id, None)


def _ensure_builtins() -> None:
    global _builtins_loaded
    with _lock:
        if _builtins_loaded:
            return
        _builtins_loaded = True
        for module in _BUILTIN_MODULES:
            # A family not written yet is simply absent; an error inside one that exists
            # propagates.
            try:
                found = importlib.util.find_spec(module)
            except ModuleNotFoundError:
                found = None
            if found is not None:
                importlib.import_module(module)


def env_spec(env_id: str) -> EnvSpec:
    """The spec of ``env_id``; ``KeyError`` lists the known ids when it is missing."""
    _ensure_builtins()
    try:
        return _envs[env_id]
    except KeyError:
        raise KeyError(_unknown("environment", env_id, _envs)) from None


def make(env_id: str, **overrides: Any) -> GridEnv:
    """Make a fresh environment instance."""
    return env_spec(env_id).make(**overrides)


def list_envs() -> list[EnvSpec]:
    _ensure_builtins()
    return [_envs[k] for k in sorted(_envs)]


def get_problem(problem_id: str) -> Problem:
    """The problem registered as ``problem_id`` (built once, then cached)."""
    _ensure_builtins()
    with _lock:
        cached = _problem_cache.get(problem_id)
        if cached is not None:
            return cached
        try:
            spec = _problems[problem_id]
        except KeyError:
            raise KeyError(_unknown("problem", problem_id, _problems)) from None
        problem = _problem_cache[problem_id] = spec.loader()
        return problem


def program_text(path: str | Path) -> str:
    """The text of the program file at ``path`` as this process runs it: read at its
    first use and kept, so that every environment this process makes from it, and the
    version its attempts record (:func:`problem_version`), is the same program. An edit
    takes effect at the process's next start."""
    return _read(str(path))


@cache
def _read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def problem_version(problem: Problem) -> str:
    """A 16-hex-digit digest of what decides how ``problem`` plays here: its definition
    (seed, parameters, goal, options) and the text of each program it runs (the changed
    one too, for change detection), as this process runs them (:func:`program_text`).
    Two attempts with the same version played the same environment; an environment
    written in Python (a task-DAG map) is versioned by its problem's definition only."""
    _ensure_builtins()
    parts = [json.dumps(problem.to_dict(), sort_keys=True, default=str)]
    for env_id in (problem.env_id, problem.params.get("changed_env_id")):
        spec = _envs.get(env_id) if isinstance(env_id, str) else None
        if spec is not None and spec.program:
            parts.append(program_text(spec.program))
    return hashlib.blake2b("\0".join(parts).encode(), digest_size=8).hexdigest()


def problem_spec(problem_id: str) -> ProblemSpec:
    _ensure_builtins()
    try:
        return _problems[problem_id]
    except KeyError:
        raise KeyError(_unknown("problem", problem_id, _problems)) from None


def list_problems(challenge: str | None = None, env_id: str | None = None) -> list[ProblemSpec]:
    _ensure_builtins()
    specs = (_problems[k] for k in sorted(_problems))
    return [
        s for s in specs
        if (challenge is None or s.challenge == challenge) and (env_id is None or s.env_id == env_id)
    ]


def _unknown(kind: str, key: str, known: dict[str, Any]) -> str:
    names = ", ".join(sorted(known)[:20]) or "none registered"
    more = " ..." if len(known) > 20 else ""
    return f"unknown {kind} {key!r}; known: {names}{more}"
