"""Derive the library's problems from the recipes in each ``env.json``.

The problems are derived once, checked, and written to ``<name>/problems/*.json`` so that
a study loads them instantly and every participant sees exactly the same problem; this
module is for the people who maintain the library (``gridstudy problems derive``).

A recipe names a seed and a trajectory (and optionally a ``mask`` or ``goal_cells``) (``actions`` for masked frame prediction,
``plan`` for planning, ``witness`` for change detection). For a stochastic environment a
seed may not realise what the recipe needs (a flower that has not ripened in time); the
next seeds are tried, up to ``SEED_TRIES``, and the seed used is the one recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tasks.checker import StepCost
from tasks.library import LibraryEnv, library_envs
from tasks.worldtest.challenge import get
from tasks.worldtest.check import Metered, check_problem, heaviest_step
from tasks.worldtest.problem import Problem

SEED_TRIES = 10


def derive_env(env: LibraryEnv, challenge: str, *, samples: int = 64,
               costs: list[StepCost] | None = None) -> Problem:
    """Derive one problem of ``env``; ``ValueError`` says why when no seed works. The
    heaviest step the check of the derived problem saw goes to ``costs``."""
    recipe = env.meta["recipes"][challenge]
    problem_id = f"{env.name}/{challenge}"
    build = _builder(env, challenge, recipe, problem_id, samples)
    tries = SEED_TRIES if env.meta["stochastic"] else 1
    reasons = []
    for seed in range(recipe["seed"], recipe["seed"] + tries):
        try:
            problem = build(seed)
        except ValueError as error:
            reasons.append(f"seed {seed}: {error}")
            continue
        metered = Metered()
        report = check_problem(problem, make_env=metered)
        if report.valid:
            cost = heaviest_step(problem, metered)
            if costs is not None and cost is not None:
                costs.append(cost)
            return _documented(problem, env)
        reasons.append(f"seed {seed}: " + "; ".join(report.reasons))
    raise ValueError(f"{problem_id}: no valid problem from the recipe:\n  " + "\n  ".join(reasons))


def _builder(env: LibraryEnv, challenge: str, recipe: dict, problem_id: str,
             samples: int) -> Callable[[int], Problem]:
    from_recipe = get(challenge).from_recipe
    if from_recipe is None:
        raise ValueError(f"{problem_id}: {challenge} problems are not derived from recipes")
    return lambda seed: from_recipe(env.env_id, env.changed_env_id, seed, recipe,
                                    problem_id=problem_id, samples=samples)


def _documented(problem: Problem, env: LibraryEnv) -> Problem:
    data = problem.to_dict()
    data["description"] = f"{env.meta['title']}: {env.meta['description']}"
    return Problem.from_dict(data)


def derive_library(names: Iterable[str] | None = None, *, samples: int = 64,
                   progress: Callable[[str], None] = lambda _: None,
                   envs: Iterable[LibraryEnv] | None = None) -> list[str]:
    """Derive and write every problem of the named environments (all by default).

    Each environment's programs are checked statically first; one with errors derives
    nothing. ``envs`` defaults to the library's folders. ``progress`` hears each problem
    before it is derived (``deriving NAME/CHALLENGE``), and the heaviest step its check
    saw after. Returns the
    failures' messages; problems that derive are written even when others fail.
    """
    from tasks.autumn.lint import check_file, errors

    wanted = set(names) if names else None
    failures = []
    for env in library_envs() if envs is None else envs:
        if wanted is not None and env.name not in wanted:
            continue
        broken = [str(f) for variant in ("program", "changed")
                  for f in errors(check_file(env.folder / f"{variant}.sexp"))]
        if broken:
            failures.append(f"{env.name}: the programs have errors, nothing derived:\n"
                            + "\n".join(broken))
            continue
        (env.folder / "problems").mkdir(exist_ok=True)
        for challenge in env.challenges:
            progress(f"deriving {env.name}/{challenge}")
            costs: list[StepCost] = []
            try:
                derive_env(env, challenge, samples=samples, costs=costs).save(
                    env.problem_path(challenge))
            except ValueError as error:
                failures.append(str(error))
            for cost in costs:
                progress(f"  {env.name}/{challenge}: {cost}")
    return failures
