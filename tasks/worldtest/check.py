"""Re-validating WorldTest problems, and the sampling both the checks and the derivations use.

**Realisations.** A problem is shown at one seed, but its guarantees must hold for every
realisation of its dynamics (002 App. C.1, METRICS.md). A realisation is approximated by
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from tasks import registry
from tasks.core import Frame, GridEnv, Observation, parse_action, region, rollout
from tasks.worldtest.challenges import ChangeDetection, MaskedFramePrediction, Planning
from tasks.worldtest.problem import Problem

EnvFactory = Callable[[str], GridEnv]
CHECK_SAMPLES = 16
"""Seeds sampled by default when a problem is checked (derivation samples more)."""


UNVERIFIED = "unverified: "
"""How a reason starts when the problem may be sound but nothing proves it solvable."""
WARNING = "warning: "
"""How a reason starts when it is worth saying but the problem stays valid."""


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
    """Re-validate ``problem`` from scratch; every failed condition becomes a reason."""
    try:
        env = make_env(problem.env_id)
    except KeyError as error:
        return CheckReport(False, [f"environment not registered: {error.args[0]}"])
    checks = {"mfp": _check_mfp, "planning": _check_planning, "cd": _check_cd}
    check = checks.get(problem.challenge)
    if check is None:
        return CheckReport(True, [])
    try:
        reasons = check(problem, env, samples, rng_seed, make_env)
    except (KeyError, ValueError, TypeError, IndexError) as error:
        reasons = [f"could not run the problem: {type(error).__name__}: {error}"]
    return CheckReport(all(reason.startswith(WARNING) for reason in reasons), reasons)


def _check_mfp(problem, env, samples, rng_seed, make_env) -> list[str]:
    params = problem.params
    mask = [tuple(cell) for cell in params["mask"]]
    options = [tuple(option) for option in params["options"]]
    answer = params["answer"]
    reasons = _mfp_shape_reasons(env, mask, options, answer, params)
    if reasons:
        return reasons
    phase = MaskedFramePrediction(problem, make_env)
    phase.start()
    truth = region(phase.frames[-1], mask)
    if truth != options[answer]:
        reasons.append(f"the answer (option {answer}) is not the final frame's masked region {list(truth)}")
    seeds = sample_seeds(samples, rng_seed, problem.seed)
    observed = {}
    for seed, frame in zip(seeds, final_frames(env, phase.actions, seeds), strict=True):
        observed.setdefault(region(frame, mask), seed)
    other = next(((v, s) for v, s in observed.items() if v != truth), None)
    if other is not None:
        reasons.append(f"the masked region is not deterministic: seed {other[1]} ends with "
                       f"{list(other[0])}, seed {problem.seed} with {list(truth)}")
    for index, option in enumerate(options):
        if index != answer and option in observed:
            reasons.append(f"distractor {index} {list(option)} is observed with seed {observed[option]}")
    return reasons


def _mfp_shape_reasons(env, mask, options, answer, params) -> list[str]:
    reasons = []
    width, height = env.size
    if not mask:
        reasons.append("the mask is empty")
    outside = [list(c) for c in mask if not (0 <= c[0] < width and 0 <= c[1] < height)]
    if outside:
        reasons.append(f"mask cells {outside} are outside the {width}x{height} grid")
    if len(options) != 6:
        reasons.append(f"{len(options)} options, expected 6")
    if len(set(options)) != len(options):
        reasons.append("options are not unique")
    if any(len(option) != len(mask) for option in options):
        reasons.append(f"every option must have one colour per mask cell ({len(mask)})")
    if not isinstance(answer, int) or not 0 <= answer < len(options):
        reasons.append(f"answer {answer!r} is not an option index 0..{len(options) - 1}")
    actions = [parse_action(a) for a in params["actions"]]
    if not actions or not all(a.is_env_action for a in actions):
        reasons.append("actions must be a non-empty list of environment actions")
    if not 0 <= int(params.get("masked_from", len(actions))) <= len(actions):
        reasons.append(f"masked_from must lie in 0..{len(actions)}")
    return reasons


def _check_planning(problem, env, samples, rng_seed, make_env) -> list[str]:
    params = problem.params
    cells, colours = params["goal_cells"], params["goal_colours"]
    width, height = env.size
    if not cells or len(cells) != len(colours):
        return [f"{len(cells)} goal cells but {len(colours)} goal colours"]
    if any(not (0 <= x < width and 0 <= y < height) for x, y in cells):
        return [f"goal cells outside the {width}x{height} grid"]
    phase = Planning(problem, make_env)
    if phase.reached(phase.start().frame):
        return ["the goal already holds at the start"]
    plan = list(params.get("plan") or [])
    if not plan and "search_states" in params:
        return [_unverified_planning(params)]
    result = None
    for action in plan:
        result = phase.apply(parse_action(action))
        if result.next_phase is not None:
            break
    if result is None or result.score != 1.0:
        return [f"the recorded plan ({len(plan)} actions) does not reach the goal within "
                f"the horizon {phase.horizon}"]
    optimal = params.get("optimal_length")
    if optimal is not None and optimal > phase.steps:
        return [f"optimal_length {optimal} exceeds the plan's {phase.steps} steps"]
    declared = params.get("declared_optimal_length")
    if declared is not None and declared > phase.steps:
        return [f"{WARNING}the plan takes {phase.steps} actions, fewer than the optimum of "
                f"{declared} the answer file declares: the answer file is wrong or our "
                "interpreter diverges from the one that recorded it"]
    return []


def _unverified_planning(params) -> str:
    reason = f"{UNVERIFIED}no plan found within {params['search_states']} states"
    declared = params.get("declared_optimal_length")
    if declared is not None:
        reason += f"; the answer file declares an optimum of {declared} actions"
    return reason


def _check_cd(problem, env, samples, rng_seed, make_env) -> list[str]:
    params = problem.params
    try:
        changed = make_env(params["changed_env_id"])
    except KeyError as error:
        return [f"changed environment not registered: {error.args[0]}"]
    witness = list(params.get("witness") or [])
    if not witness and "search_states" in params:
        return [f"{UNVERIFIED}no action sequence within {params['search_states']} states "
                "shows the change"]
    run = lockstep(env, changed, problem.seed, witness)
    if run.t_star is None:
        return [f"the witness ({len(witness)} actions) triggers no difference"]
    reasons = []
    if run.t_star < 1:
        reasons.append("the programs differ already at the initial frame (t* = 0)")
    if not run.randomness_agrees:
        reasons.append(f"randomness consumed differently from frame {run.random_split}, "
                       f"before t* = {run.t_star}")
    recorded = params.get("witness_t_star")
    if recorded is not None and recorded != run.t_star:
        reasons.append(f"witness_t_star {recorded} but the witness gives t* = {run.t_star}")
    horizon = ChangeDetection(problem, make_env).horizon
    if run.t_star > horizon:
        reasons.append(f"t* = {run.t_star} lies beyond the horizon {horizon}")
    return reasons
