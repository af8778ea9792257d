"""Re-validating WorldTest problems, and the sampling both the checks and the derivations use.

**Realisations.** A problem is shown at one seed, but its guarantees must hold for every
realisation of its dynamics (002 App. C.1, docs/metrics.md). A realisation is approximated by
running the same actions from other seeds: ``samples`` seeds drawn from a
``random.Random(rng_seed)`` (non-zero, since seed 0 freezes the Autumn generator, and
never the problem's own seed), so a check is reproducible.

**Stochasticity.** An environment may declare ``stochastic = True`` or ``False``; that is
trusted. Otherwise it counts as stochastic when the same actions give different frames
from different sampled seeds. Sampling can only prove stochasticity, never its absence,
but for the properties checked here (a region identical across realisations, a plan
found by search on one seed) the sampled frames are exactly the evidence that matters.

**Unverified problems.** An imported problem comes with no plan or witness of its own;
when the import's bounded search found none, its params record ``search_states`` (the
budget spent) and no ``plan``/``witness``. Nothing shows it is broken, nothing shows it
is solvable: the check says *unverified* and why, and the problem is not counted valid.
A reason starting with ``warning:`` does not make a problem invalid.

**Randomness in change detection.** When both programs have ``random_state()`` (any
comparable value, e.g. the generator's state), the states after every frame before
``t*`` must be equal: otherwise the frames at ``t*`` may differ by chance, not by the
change.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from tasks import registry
from tasks.checker import StepCost, step_cost
from tasks.core import Frame, GridEnv, Observation, rollout
from tasks.limits import StepLimitExceeded
from tasks.worldtest import challenge
from tasks.worldtest.challenge import EnvFactory
from tasks.worldtest.problem import Problem

CHECK_SAMPLES = 16
"""Seeds sampled by default when a problem is checked (derivation samples more)."""


UNVERIFIED = "unverified: "
"""How a reason starts when the problem may be sound but nothing proves it solvable."""
WARNING = "warning: "
"""How a reason starts when it is worth saying but the problem stays valid."""


def static_errors(problem: Problem) -> list[str]:
    """The static checker's errors in the program files of the environments ``problem``
    runs (its own and, for change detection, the changed one), each as one reason."""
    from tasks.autumn.lint import check_file, errors

    reasons = []
    for env_id in _env_ids(problem):
        try:
            program = registry.env_spec(env_id).program
        except KeyError:
            continue  # said by the check that makes the environment
        if program:
            reasons += [f"static check: {finding}" for finding in errors(check_file(program))]
    return reasons


def _env_ids(problem: Problem) -> list[str]:
    """The environments ``problem`` runs: its own and, for change detection, the changed."""
    return [i for i in dict.fromkeys([problem.env_id, problem.params.get("changed_env_id")]) if i]


def program_errors(problem: Problem) -> list[str]:
    """Why the programs ``problem`` runs cannot be trusted, each as one reason: their
    static errors, else the first runtime error of each rollout over the problem's
    horizon (:mod:`tasks.worldtest.rollout`). Empty when there is none."""
    from tasks.worldtest.rollout import rollout_failures

    reasons = static_errors(problem)
    if reasons:
        return reasons
    return [str(failure) for env_id in _env_ids(problem)
            for failure in rollout_failures(env_id, *_rollout_of(problem))]


def _rollout_of(problem: Problem) -> tuple:
    """The rollout arguments of ``problem``: its horizon, the seeds, its own play."""
    from tasks.worldtest.rollout import ROLLOUT_SEEDS, problem_horizon, problem_recipe

    return (problem_horizon(problem.params), ROLLOUT_SEEDS,
            problem_recipe(problem.seed, problem.params))


def heaviest_step(problem: Problem, metered: Metered) -> StepCost | None:
    """The heaviest step a check of ``problem`` saw: in the environments ``metered``
    made, and in the rollouts of its programs."""
    from tasks.worldtest.rollout import rollout_cost

    costs = [metered.cost, *(rollout_cost(env_id, *_rollout_of(problem))
                             for env_id in _env_ids(problem))]
    costs = [cost for cost in costs if cost is not None]
    return max(costs, key=lambda cost: cost.heaviest) if costs else None


class Metered:
    """A ``make_env`` that keeps every environment it made, so that whoever ran a check
    can say what its heaviest step cost (:attr:`cost`)."""

    def __init__(self, make_env: EnvFactory = registry.make) -> None:
        self.make_env = make_env
        self.made: list[GridEnv] = []

    def __call__(self, env_id: str, **overrides) -> GridEnv:
        env = self.make_env(env_id, **overrides)
        self.made.append(env)
        return env

    @property
    def cost(self) -> StepCost | None:
        return step_cost(self.made)


class CheckReport(NamedTuple):
    """Whether a problem is valid, and every reason it is not or warning about it
    (unpacks as a pair)."""

    valid: bool
    reasons: list[str]

    @property
    def status(self) -> str:
        """``"valid"``, ``"unverified"`` (every reason is one) or ``"invalid"``."""
        if self.valid:
            return "valid"
        unverified = all(reason.startswith((UNVERIFIED, WARNING)) for reason in self.reasons)
        return "unverified" if unverified else "invalid"


@dataclass(frozen=True)
class Lockstep:
    """The original and the changed program run side by side on the same actions.

    ``t_star`` is the first frame index where their frames differ (None: never);
    ``random_split`` the first frame index after which their ``random_state()`` differ
    (None: never before ``t_star``, or the programs do not expose it).
    """

    t_star: int | None
    random_split: int | None

    @property
    def randomness_agrees(self) -> bool:
        return self.random_split is None or (self.t_star is not None and self.random_split >= self.t_star)


def sample_seeds(count: int, rng_seed: int, exclude: int) -> list[int]:
    """``count`` distinct non-zero seeds drawn from ``random.Random(rng_seed)``."""
    rng = random.Random(rng_seed)
    seeds: list[int] = []
    while len(seeds) < count:
        seed = rng.randrange(1, 2**31)
        if seed != exclude and seed not in seeds:
            seeds.append(seed)
    return seeds


def final_frames(env: GridEnv, actions: Sequence[str], seeds: Sequence[int]) -> list[Frame]:
    """The last frame after ``actions`` from each seed."""
    return [rollout(env, seed, actions)[-1].frame for seed in seeds]


def is_stochastic(env: GridEnv, frames: Sequence[Frame]) -> bool:
    """The environment's declaration, else whether the sampled ``frames`` differ."""
    declared = getattr(env, "stochastic", None)
    if isinstance(declared, bool):
        return declared
    return any(frame != frames[0] for frame in frames[1:])


def lockstep(original: GridEnv, changed: GridEnv, seed: int, actions: Sequence[str]) -> Lockstep:
    """Run both programs from ``seed`` on ``actions`` until their frames first differ."""
    tracked = all(callable(getattr(env, "random_state", None)) for env in (original, changed))
    a, b = original.reset(seed), changed.reset(seed)
    split = None
    for t, action in enumerate([None, *actions]):
        if t:
            a, b = original.step(action), changed.step(action)
        if a.frame != b.frame:
            return Lockstep(t, split)
        if tracked and split is None and original.random_state() != changed.random_state():
            split = t
    return Lockstep(None, split)


class Lockstepped:
    """The original and the changed program as one environment (the changed one is
    shown), whose observation says whether their frames differ: searching it for that
    finds a change-detection witness, which :func:`lockstep` then checks."""

    def __init__(self, original: GridEnv, changed: GridEnv) -> None:
        self.original, self.changed = original, changed
        self.size, self.frame_rate = changed.size, changed.frame_rate
        self.background = getattr(changed, "background", None)

    def available_actions(self):
        return self.changed.available_actions()

    def reset(self, seed: int = 0) -> Observation:
        return self._pair(self.original.reset(seed), self.changed.reset(seed))

    def step(self, action) -> Observation:
        return self._pair(self.original.step(action), self.changed.step(action))

    def snapshot(self):
        return self.original.snapshot(), self.changed.snapshot()

    def restore(self, snap) -> None:
        self.original.restore(snap[0])
        self.changed.restore(snap[1])

    def state_hash(self) -> str:
        return self.original.state_hash() + self.changed.state_hash()

    @staticmethod
    def _pair(a: Observation, b: Observation) -> Observation:
        return Observation(b.frame, b.text, {"differs": a.frame != b.frame})


def check_problem(
    problem: Problem,
    samples: int = CHECK_SAMPLES,
    *,
    rng_seed: int = 1,
    make_env: EnvFactory = registry.make,
) -> CheckReport:
    """Re-validate ``problem`` from scratch; every failed condition becomes a reason.

    The programs it runs are checked first (:func:`program_errors`: statically, then
    rolled out over the problem's horizon): a program with errors makes the problem
    invalid before the challenge's own checks run."""
    broken = program_errors(problem)
    if broken:
        return CheckReport(False, broken)
    try:
        env = make_env(problem.env_id)
    except KeyError as error:
        return CheckReport(False, [f"environment not registered: {error.args[0]}"])
    check = challenge.get(problem.challenge).check
    if check is None:
        return CheckReport(True, [])
    try:
        reasons = check(problem, env, samples, rng_seed, make_env)
    except (KeyError, ValueError, TypeError, IndexError, StepLimitExceeded) as error:
        reasons = [f"could not run the problem: {type(error).__name__}: {error}"]
    return CheckReport(all(reason.startswith(WARNING) for reason in reasons), reasons)
