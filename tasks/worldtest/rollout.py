"""Rollout checks: a program is played for a whole horizon before anyone meets it.

Static checks cannot see a rule that fails at tick 50 (a counter reaching a value, a list
running empty), and a failed step changes nothing, so every later step would fail the
same way and the game would freeze for a participant. A rollout check steps a program
from several seeds for ``horizon`` ticks, once with no-ops only and once with random
actions (a failure shows with the first input that reaches it), and a problem's programs
also with the problem's own actions from its seed (its trajectory, plan or witness, then
no-ops to the horizon). It reports the first runtime error of each kind of play (once per
distinct error): the program's ``file:line:col``, the tick, the seed and the kind of
play, with the actions that reach it written to a file the debugger replays (``gridstudy
play PROGRAM --debug --seed S --actions FILE``). A step over its budget (docs/autumn.md,
"The step budget") fails the check the same way, and so does a frame holding a cell
that is no CSS colour name (a browser would draw it black; the static check sees only
the colours written as literals), and a ``FRAME_RATE`` the program computes outside 3 to
8 (the static check sees a number written, not a sum).

The checks of a problem (:func:`tasks.worldtest.check.check_problem`, hence ``problems
check`` and ``derive``), ``gridstudy study create`` and ``gridstudy envs check`` run
them. The no-op and random rollouts are kept per program text, so the problems of one
environment share them.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tasks import registry
from tasks.checker import CSS_COLOURS, FRAME_RATES, StepCost, random_actions, step_cost
from tasks.core import GridEnv

ROLLOUT_SEEDS = (1, 2)
"""Seeds every program is rolled out from."""
ROLLOUT_HORIZON = 1000
"""Ticks of a rollout: the test horizon of the library's problems."""
NOOP, RANDOM, RECIPE = "no-op", "random", "recipe"
KINDS = (NOOP, RANDOM)
"""The kinds of play every program gets (a problem's programs also get its ``RECIPE``)."""


@dataclass(frozen=True)
class RolloutFailure:
    """The first runtime error of one rollout: which program, how it was played, the
    actions up to and including the failing one, and the error."""

    program: str
    kind: str
    seed: int
    actions: tuple[str, ...]
    error: str

    @property
    def tick(self) -> int:
        """The tick whose step failed (1 is the first step; 0: the reset)."""
        return len(self.actions)

    def save(self, folder: Path | None = None) -> Path:
        """Write the actions, one per line, for the debugger's ``--actions``."""
        return save_actions(f"{Path(self.program).stem}-seed{self.seed}-{self.kind}-tick{self.tick}",
                            f"{self.program}, seed {self.seed}, {self.kind} play: fails at "
                            f"tick {self.tick}", self.actions, self.error, folder)

    def __str__(self) -> str:
        first, *rest = self.error.splitlines()
        replay = self.save()
        text = (f"rollout check: {first} (at tick {self.tick}, seed {self.seed}, "
                f"{self.kind} play; replay: gridstudy play {self.program} --debug --seed "
                f"{self.seed} --actions {replay})")
        return "\n".join([text, *rest])


def save_actions(name: str, comment: str, actions: Sequence[str], why: str = "",
                 folder: Path | None = None) -> Path:
    """Write ``actions``, one per line under a ``# comment``, to a file the debugger
    replays (``gridstudy play PROGRAM --debug --seed S --actions FILE``): in ``folder``,
    by default the temporary folder's ``gridstudy-rollouts``, named by ``name`` and a
    digest of ``why`` and the actions, so that the same run is the same file."""
    folder = folder or Path(tempfile.gettempdir()) / "gridstudy-rollouts"
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.blake2b("\n".join([why, *actions]).encode(), digest_size=4).hexdigest()
    path = folder / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}-{digest}.actions"
    path.write_text("\n".join([f"# {comment}", *actions]) + "\n", encoding="utf-8")
    return path


def roll_out(env: GridEnv, program: str, seed: int, kind: str, actions: list[str]) \
        -> RolloutFailure | None:
    """Play ``actions`` from ``seed`` (resetting when the episode ends); the first
    failure, or None."""
    done: tuple[str, ...] = ()
    painted: set = set()
    try:
        observation = env.reset(seed)
        rate = getattr(env, "declared_frame_rate", env.frame_rate)
        if not (type(rate) is int and rate in FRAME_RATES):
            return RolloutFailure(program, kind, seed, done, (
                f"{program}: FRAME_RATE is {rate!r} once the program has started; it is the "
                f"frames per second people play at, from {FRAME_RATES[0]} to "
                f"{FRAME_RATES[-1]}"))
        for action in [None, *actions]:
            if action is not None:
                if observation.done:
                    observation = env.reset(seed)
                done += (action,)
                observation = env.step(action)
            before = len(painted)
            painted.update(*observation.frame)
            if len(painted) != before and not painted <= CSS_COLOURS:
                return RolloutFailure(program, kind, seed, done, _not_colours(program, painted))
    except Exception as error:  # any runtime error is the program's fault, reported
        return RolloutFailure(program, kind, seed, done, _text(error))
    return None


def _not_colours(program: str, painted: set) -> str:
    """What a frame holding a cell that is no CSS colour name fails with."""
    names = ", ".join(sorted(repr(n) for n in painted - CSS_COLOURS))
    return (f"{program}: the frame holds {names}, not a CSS colour name: a browser draws such a cell "
            "black, the pygame window magenta")


def _text(error: Exception) -> str:
    """An Autumn error as it is (it names the file, line and column), any other with its
    type."""
    from tasks.autumn import AutumnError
    return str(error) if isinstance(error, AutumnError) else f"{type(error).__name__}: {error}"


def program_failures(env: GridEnv, program: str, horizon: int = ROLLOUT_HORIZON,
                     seeds: tuple[int, ...] = ROLLOUT_SEEDS,
                     recipe: tuple[int, tuple[str, ...]] | None = None,
                     kinds: tuple[str, ...] = KINDS) -> list[RolloutFailure]:
    """The first failure of each kind of play (no-ops, random actions) of ``env``, the
    program ``program``, over ``horizon`` ticks from ``seeds``; and, with ``recipe``
    (a seed and actions: a problem's own), those actions from that seed, then no-ops to
    the horizon."""
    failures = []
    if recipe is not None:
        seed, actions = recipe
        played = [*actions, *["noop"] * max(0, horizon - len(actions))]
        failure = roll_out(env, program, seed, RECIPE, played)
        if failure is not None:
            failures.append(failure)
    for kind in kinds:
        for seed in seeds:
            if kind == NOOP:
                actions = ["noop"] * horizon
            else:
                actions = [str(a) for a in random_actions(env, horizon, seed)]
            failure = roll_out(env, program, seed, kind, actions)
            if failure is not None:
                failures.append(failure)
                break
    return _distinct(failures)


def _distinct(failures) -> list[RolloutFailure]:
    """The first failure of each distinct error (one fault reached by two kinds of play
    is one fault)."""
    seen: dict[str, RolloutFailure] = {}
    for failure in failures:
        seen.setdefault(failure.error, failure)
    return list(seen.values())


Recipe = tuple[int, tuple[str, ...]] | None
"""A seed and the actions a problem plays from it (None: no such play)."""


def rollout_failures(env_id: str, horizon: int = ROLLOUT_HORIZON,
                     seeds: tuple[int, ...] = ROLLOUT_SEEDS,
                     recipe: Recipe = None) -> list[RolloutFailure]:
    """:func:`program_failures` of the registered environment ``env_id`` when it is
    written as a program (none otherwise), kept per program text."""
    return list(_rolled_out(env_id, horizon, seeds, recipe)[0])


def rollout_cost(env_id: str, horizon: int = ROLLOUT_HORIZON,
                 seeds: tuple[int, ...] = ROLLOUT_SEEDS, recipe: Recipe = None) -> StepCost | None:
    """The heaviest step of the rollouts of ``env_id`` (None when it is no program)."""
    return _rolled_out(env_id, horizon, seeds, recipe)[1]


def _rolled_out(env_id: str, horizon: int, seeds: tuple[int, ...], recipe: Recipe) \
        -> tuple[tuple[RolloutFailure, ...], StepCost | None]:
    try:
        spec = registry.env_spec(env_id)
    except KeyError:
        return (), None
    if not spec.program:
        return (), None
    try:
        text = Path(spec.program).read_text(encoding="utf-8")
    except OSError:
        return (), None  # the static check says so
    shared = _cached(env_id, spec.program, text, horizon, seeds, None)  # one per program
    if recipe is None:
        return shared
    own = _cached(env_id, spec.program, text, horizon, (), recipe)
    costs = [cost for cost in (own[1], shared[1]) if cost is not None]
    return (tuple(_distinct(own[0] + shared[0])),
            max(costs, key=lambda c: c.heaviest) if costs else None)


@lru_cache(maxsize=512)
def _cached(env_id: str, program: str, text: str, horizon: int, seeds: tuple[int, ...],
            recipe: Recipe) -> tuple[tuple[RolloutFailure, ...], StepCost | None]:
    """The rollouts of one program text: from ``seeds`` (no recipe), or of ``recipe``
    alone (no seeds)."""
    try:
        env = registry.make(env_id)
    except Exception as error:  # a program that does not load: the load's own check says so
        return (RolloutFailure(program, NOOP, 0, (), _text(error)),), None
    kinds = KINDS if seeds else ()
    return tuple(program_failures(env, program, horizon, seeds, recipe, kinds)), step_cost([env])


def problem_horizon(params: dict) -> int:
    """The ticks a problem's programs are rolled out for."""
    horizon = params.get("horizon")
    return int(horizon) if isinstance(horizon, int) and horizon > 0 else ROLLOUT_HORIZON


RECIPE_PARAMS = ("actions", "plan", "witness")
"""The problem parameters that hold the actions it plays (masked frame prediction's
trajectory, a planning problem's plan, a change-detection witness)."""


def problem_recipe(seed: int, params: dict) -> Recipe:
    """The seed and actions of a problem's own play, or None when it has none."""
    for name in RECIPE_PARAMS:
        actions = params.get(name)
        if isinstance(actions, list) and actions and all(isinstance(a, str) for a in actions):
            return seed, tuple(actions)
    return None


__all__ = ["ROLLOUT_HORIZON", "ROLLOUT_SEEDS", "RolloutFailure", "program_failures",
           "problem_horizon", "problem_recipe", "roll_out", "rollout_cost", "rollout_failures"]
