"""A reusable check that an environment keeps the ``GridEnv`` contract (like Gymnasium's
``env_checker``).

:func:`check_env` resets the environment, drives it with a fixed random action sequence
and collects every violation it sees, then raises :class:`ContractError` listing them:

* ``size`` is two positive ints; ``frame_rate`` an int in 3..8 (humans play in real time);
* ``available_actions()`` is a non-empty subset of the environment verbs;
* ``reset`` and ``step`` return :class:`~tasks.core.Observation` objects whose frames are
  lists of ``height`` lists of ``width`` CSS colour names, ``text`` a string, ``info`` a
  dict and ``done`` a bool;
* the same seed and the same actions give the same frames (run twice), and ``reset``
  returns to the seed's initial frame;
* the optional hooks, when present: ``restore(snapshot())`` returns to the same state
  (the next steps give the same frames), ``state_hash()`` is equal on equal states.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from tasks import colours
from tasks.core import ENV_VERBS, Action, GridEnv, Observation, frame_hash, rollout

CSS_COLOURS = frozenset(colours.CSS_COLOURS)
"""The CSS named colours: what every client can draw."""

FRAME_RATES = range(3, 9)


class ContractError(ValueError):
    """An environment broke the contract; the message lists every violation found."""


def random_actions(env: GridEnv, count: int, rng_seed: int = 0) -> list[Action]:
    """``count`` actions drawn uniformly over the verbs ``env`` declares, a click at a
    uniform cell (the paper's random agent, 002 App. C), from ``random.Random(rng_seed)``."""
    rng = random.Random(rng_seed)
    verbs = [v for v in env.available_actions() if v in ENV_VERBS] or ["noop"]
    width, height = env.size
    out = []
    for _ in range(count):
        verb = rng.choice(verbs)
        if verb == "click":
            out.append(Action("click", x=rng.randrange(width), y=rng.randrange(height)))
        else:
            out.append(Action(verb))
    return out


def check_env(env: GridEnv, seed: int = 0, steps: int = 200, rng_seed: int = 0) -> None:
    """Raise :class:`ContractError` unless ``env`` keeps the contract over ``steps`` random
    actions from ``seed``."""
    problems = contract_violations(env, seed, steps, rng_seed)
    if problems:
        name = type(getattr(env, "inner", env)).__name__
        raise ContractError(f"{name} breaks the environment contract:\n- " + "\n- ".join(problems))


def contract_violations(env: GridEnv, seed: int = 0, steps: int = 200, rng_seed: int = 0) -> list[str]:
    """Every contract violation seen (empty when none): what :func:`check_env` reports."""
    problems = _attribute_violations(env)
    if problems:
        return problems  # without a size and verbs nothing else can be driven
    actions = random_actions(env, steps, rng_seed)
    first = _run(env, seed, actions, problems)
    if problems:
        return problems
    again = _run(env, seed, actions, problems)
    if again != first:
        at = next(i for i, (a, b) in enumerate(zip(first, again, strict=True)) if a != b)
        problems.append(f"not deterministic: with seed {seed} the frame after action {at} "
                        f"({'reset' if at == 0 else actions[at - 1]}) differs between two runs")
    problems += _hook_violations(env, seed, actions)
    return problems


def _attribute_violations(env: GridEnv) -> list[str]:
    problems = []
    size = getattr(env, "size", None)
    if not (isinstance(size, tuple) and len(size) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in size)):
        problems.append(f"size must be a tuple (width, height) of positive ints, not {size!r}")
    rate = getattr(env, "frame_rate", None)
    if not (isinstance(rate, int) and not isinstance(rate, bool) and rate in FRAME_RATES):
        problems.append(f"frame_rate must be an int in 3..8 frames per second, not {rate!r}")
    verbs = env.available_actions()
    unknown = [v for v in verbs if v not in ENV_VERBS]
    if not verbs or unknown:
        problems.append(f"available_actions() must be a non-empty subset of {', '.join(ENV_VERBS)}; "
                        f"got {list(verbs)!r}")
    return problems


def _run(env: GridEnv, seed: int, actions: Sequence[Action], problems: list[str]) -> list[str]:
    """Frame hashes of one run, restarting from ``seed`` whenever the environment ends;
    observation violations go to ``problems`` (the first of each kind only)."""
    start = env.reset(seed)
    hashes = [_observe(start, env.size, "reset", problems)]
    if not isinstance(start, Observation):
        return hashes
    observation = start
    for action in actions:
        if observation.done:
            observation = env.reset(seed)
            if observation.frame != start.frame:
                problems.append("reset after the end does not return to the seed's initial frame")
        observation = env.step(action)
        hashes.append(_observe(observation, env.size, f"step({action})", problems))
        if not isinstance(observation, Observation):
            break
    return hashes


def _observe(observation: Observation, size: tuple[int, int], where: str,
             problems: list[str]) -> str:
    for problem in observation_violations(observation, size):
        message = f"{where}: {problem}"
        if not any(p.split(": ", 1)[-1] == problem for p in problems):
            problems.append(message)
    return frame_hash(observation.frame) if _is_grid(observation) else "?"


def observation_violations(observation: object, size: tuple[int, int]) -> list[str]:
    """What is wrong with one observation for a grid of ``size`` (empty when nothing)."""
    if not isinstance(observation, Observation):
        return [f"returned {type(observation).__name__}, expected an Observation"]
    out = []
    width, height = size
    frame = observation.frame
    if not _is_grid(observation) or len(frame) != height or any(len(r) != width for r in frame):
        out.append(f"the frame must be a list of {height} lists of {width} cells")
    else:
        bad = sorted({c if isinstance(c, str) else repr(c) for row in frame for c in row
                      if not (isinstance(c, str) and c in CSS_COLOURS)})
        if bad:
            out.append(f"cells must hold CSS colour names; found {', '.join(bad[:5])}")
    if not isinstance(observation.text, str):
        out.append("text must be a string")
    if not isinstance(observation.info, dict):
        out.append("info must be a dict")
    if not isinstance(observation.done, bool):
        out.append("done must be a bool")
    return out


def _is_grid(observation: Observation) -> bool:
    frame = getattr(observation, "frame", None)
    return isinstance(frame, list) and all(isinstance(row, list) for row in frame)


def _hook_violations(env: GridEnv, seed: int, actions: Sequence[Action]) -> list[str]:
    """Check ``snapshot``/``restore`` and ``state_hash`` when the environment has them."""
    problems = []
    half, rest = list(actions[: len(actions) // 2]), list(actions[len(actions) // 2:][:20])
    has_snapshots = callable(getattr(env, "snapshot", None)) and callable(getattr(env, "restore", None))
    has_hash = callable(getattr(env, "state_hash", None))
    if not (has_snapshots or has_hash):
        return problems
    rollout(env, seed, half)
    if has_snapshots:
        snapshot = env.snapshot()
        before = [frame_hash(env.step(a).frame) for a in rest]
        env.restore(snapshot)
        if [frame_hash(env.step(a).frame) for a in rest] != before:
            problems.append("restore(snapshot()) does not return to the same state: the "
                            "next frames differ")
    if has_hash:
        rollout(env, seed, half)
        first = env.state_hash()
        rollout(env, seed, half)
        if env.state_hash() != first:
            problems.append("state_hash() differs for the same seed and actions")
    return problems


@dataclass(frozen=True)
class StepCost:
    """The heaviest step seen, in evaluations, against the environment's step budget."""

    heaviest: int
    budget: int

    def __str__(self) -> str:
        return (f"heaviest step {self.heaviest:,} evaluations of a budget of {self.budget:,} "
                f"({self.heaviest / self.budget:.1%})")


def step_cost(envs: Sequence[GridEnv]) -> StepCost | None:
    """The heaviest step any of ``envs`` has done so far (None when none counts its
    steps: only Autumn programs do)."""
    counted = [env for env in envs if hasattr(env, "heaviest_step")]
    if not counted:
        return None
    worst = max(counted, key=lambda env: env.heaviest_step)
    return StepCost(worst.heaviest_step, worst.step_budget)
