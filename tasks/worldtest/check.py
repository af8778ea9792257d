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

import itertools
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from tasks import registry
from tasks.checker import StepCost, contract_violations, step_cost
from tasks.core import MOVES, Frame, GridEnv, Observation, rollout
from tasks.limits import StepLimitExceeded
from tasks.worldtest import challenge
from tasks.worldtest.challenge import EnvFactory, env_verbs
from tasks.worldtest.problem import Problem
from tasks.worldtest.search import guided_plan, probe_rollouts, random_action

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

    return [f"static check: {finding}" for spec in _specs(problem) if spec.program
            for finding in errors(check_file(spec.program))]


def _env_ids(problem: Problem) -> list[str]:
    """The environments ``problem`` runs: its own and, for change detection, the changed."""
    return [i for i in dict.fromkeys([problem.env_id, problem.params.get("changed_env_id")]) if i]


def _specs(problem: Problem) -> list[registry.EnvSpec]:
    """How the environments ``problem`` runs are registered (one that is not: said by the
    check that makes it)."""
    specs = []
    for env_id in _env_ids(problem):
        try:
            specs.append(registry.env_spec(env_id))
        except KeyError:
            continue
    return specs


def program_errors(problem: Problem) -> list[str]:
    """Why the environments ``problem`` runs cannot be trusted, each as one reason: their
    programs' static errors, else the first runtime error of each rollout over the
    problem's horizon (:mod:`tasks.worldtest.rollout`); and a Python environment's
    breaches of the contract (:func:`contract_errors`). Empty when there is none."""
    from tasks.worldtest.rollout import rollout_failures

    reasons = static_errors(problem)
    if reasons:
        return reasons
    return [str(failure) for env_id in _env_ids(problem)
            for failure in rollout_failures(env_id, *_rollout_of(problem))] \
        + contract_errors(problem)


def contract_errors(problem: Problem) -> list[str]:
    """The breaches of the environment contract (:func:`tasks.checker.contract_violations`:
    a frame rate outside 3 to 8, a cell no browser can draw, the same seed and actions
    giving other frames, ...) by the Python environments ``problem`` runs, each as one
    reason. (A program's are its static and rollout checks.)"""
    return [f"contract check: {spec.id}: {why}" for spec in _specs(problem) if not spec.program
            for why in _contract(spec)]


_CONTRACTS: dict[str, tuple[registry.EnvSpec, tuple[str, ...]]] = {}
"""What :func:`_contract` found, per environment, with the registration it found it in."""


def _contract(spec: registry.EnvSpec) -> tuple[str, ...]:
    """What :func:`contract_violations` finds in the Python environment ``spec`` makes,
    kept while the environment is registered the same way (its code does not change while
    the process runs)."""
    from tasks.worldtest.rollout import ROLLOUT_SEEDS

    found = _CONTRACTS.get(spec.id)
    if found is None or found[0] is not spec:
        try:
            env = spec.make()
        except Exception as error:  # any failure is the environment's, reported
            violations = (f"it could not be made: {type(error).__name__}: {error}",)
        else:
            try:
                violations = tuple(contract_violations(env, seed=ROLLOUT_SEEDS[0]))
            except Exception as error:
                violations = (f"it failed as random actions were played: "
                              f"{type(error).__name__}: {error}",)
        found = _CONTRACTS[spec.id] = (spec, violations)
    return found[1]


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
        for hook in ("snapshot", "restore", "state_hash"):  # the pair has what both have
            if not all(callable(getattr(env, hook, None)) for env in (original, changed)):
                setattr(self, hook, None)

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


WANDER = 20
"""At most this many random actions a player takes into the test before a check asks
whether the test can still be passed from there (:func:`from_anywhere`)."""
DEAD_END_SEEDS = 50
"""Runs :func:`from_anywhere` makes by default (``gridstudy problems check --seeds``)."""
FOCUS = 64
"""Clicks a search from a wandered state tries (the goal cells still wrong first, then
those the problem's own actions click, then the objects): puzzles such as a board of
lamps need clicks far from the cells they change."""
ROLLOUT = 200
"""The longest run of random play from a wandered state."""
ROLLOUT_STEPS = 8
"""The steps random play may take per state of a search's budget (12,000 at
``gridstudy problems check``'s default of 1,500)."""


@dataclass
class Solvability:
    """How often a test stays passable whatever a player did first: ``solved`` of
    ``tried`` runs, and the runs where no search passed it (seed, the random actions
    taken first). ``what`` names what was sought ("goal reachable", "change shown")."""

    solved: int
    tried: int
    stuck: list[tuple[int, list[str]]]
    what: str = "goal reachable"

    @property
    def fraction(self) -> float:
        return self.solved / self.tried if self.tried else 1.0

    def words(self) -> str:
        text = (f"{self.what} in {self.solved} of {self.tried} runs "
                f"({100 * self.fraction:.0f} %)")
        if self.stuck:
            seed, prefix = self.stuck[0]
            text += (f"; e.g. seed {seed} after {len(prefix)} random action(s)"
                     f"{': ' + ', '.join(prefix[-4:]) if prefix else ''}")
        return text


def from_anywhere(problem: Problem, make: Callable[[], GridEnv], seeds: int,
                  passes: Callable[[int, list[str], int], bool], *, what: str,
                  until: Callable[[Observation], bool] | None = None,
                  on_run: Callable[[], None] | None = None) -> Solvability:
    """Whether ``problem``'s test can still be passed whatever a player does first (it
    has no reset): for ``seeds`` seeds (the problem's own first), a player takes up to
    :data:`WANDER` random actions into the test (on ``make()``, the test's environment),
    stopping where ``until`` holds (passed on the way), then ``passes(seed, prefix,
    run)`` says whether a search passed it from there. A run where none did is a state a
    participant can reach and never pass from, or one the bounded searches missed: it is
    kept, to replay. ``on_run`` is called after each run (a progress bar)."""
    stuck: list[tuple[int, list[str]]] = []
    for run, seed in enumerate([problem.seed, *sample_seeds(seeds - 1, 0, problem.seed)]):
        rng = random.Random(f"{problem.id}/{run}")
        env = make()
        observation, prefix = env.reset(seed), []
        verbs = list(env_verbs(env))
        for _ in range(rng.randint(0, WANDER)):
            if until is not None and until(observation):
                break
            action = str(random_action(env, observation.frame, verbs, rng))
            observation = env.step(action)
            prefix.append(action)
        shown = until is not None and until(observation)
        if not shown and not passes(seed, prefix, run):
            stuck.append((seed, prefix))
        if on_run is not None:
            on_run()
    return Solvability(seeds - len(stuck), seeds, stuck, what)


DETOUR = 2
"""The longest detour :func:`after_detour` tries (``noop`` and the arrows)."""


def after_detour(make: Callable[[], GridEnv], seed: int, prefix: Sequence[str],
                 actions: Sequence[str], passed: Callable[[Observation], bool]) -> bool:
    """Whether ``actions`` (the problem's own plan or witness) pass the test played from
    where ``prefix`` leads after ``reset(seed)``, at once or after a detour of up to
    :data:`DETOUR` moves: a player a step or two off their path is walked back onto it."""
    moves = [verb for verb in ("noop", *MOVES) if verb in make().available_actions()]
    for length in range(DETOUR + 1):
        for detour in itertools.product(moves, repeat=length):
            played = rollout(make(), seed, [*prefix, *detour, *actions])[len(prefix) + 1:]
            if any(map(passed, played)):
                return True
    return False


def searched(kind: str, make: Callable[[], GridEnv], seed: int, prefix: Sequence[str],
             distance: Callable[[Observation], int], clicks: Callable[[Frame], list], *,
             max_states: int, max_seconds: float, horizon: int, rng_seed: int) -> bool:
    """Whether a search of ``kind`` passes the test from where ``prefix`` leads after
    ``reset(seed)`` (``distance`` 0): ``"best first"`` by ``distance``
    (:func:`tasks.worldtest.search.guided_plan`), ``"settled"`` breadth first over
    actions each followed by waiting, or ``"random"`` play (runs of at most
    :data:`ROLLOUT` steps, :data:`ROLLOUT_STEPS` per state of ``max_states``).
    ``max_seconds`` counts this process's CPU time, not the clock's: the verdict does
    not change with what else the machine runs."""
    if kind == "random":
        runs = probe_rollouts(make, seed, lambda observation: distance(observation) == 0,
                              length=min(ROLLOUT, horizon - len(prefix)),
                              max_states=ROLLOUT_STEPS * max_states, rng_seed=rng_seed,
                              prefix=prefix)
        return next(runs, None) is not None
    settled = kind == "settled"
    # seconds of this process's own work: a machine busy with something else (a second
    # check beside it, a CI runner's neighbours) slows the search, not its verdict
    return guided_plan(make, seed, distance, clicks, max_states=max_states,
                       max_seconds=max_seconds, prefix=prefix, settled=settled,
                       weight=0.0 if settled else 1.0, clock=time.process_time).found


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
