"""Change detection (002 App. C.2): notice when the world's rules change, and when.

The changed program runs; the original runs beside it in lockstep on the same actions
from the same seed, and the defect time ``t*`` is the first frame index where their
frames differ. ``found-change`` (or reaching the horizon) opens the selection phase:
``choose_frame_I`` shows test frame I, ``submit`` scores it with
:func:`tasks.worldtest.scoring.cd_score`; ``submit_frame_I`` (the study page's answer)
chooses frame I and scores it at one tick. No reset in the test phase, so frame indices
stay unambiguous.

Problem ``params``: ``changed_env_id``, ``horizon`` (test steps allowed), ``witness``
(action texts that trigger the change) and ``witness_t_star`` (its defect time).
Imported problems whose search found no witness record ``search_states`` instead.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tasks import registry
from tasks.core import Action, Observation
from tasks.worldtest.challenge import (
    DONE,
    EXPLORE_FREELY,
    GIVE_UP,
    SELECT,
    TRIGGERS_CHANGE,
    Challenge,
    EnvFactory,
    Question,
    Result,
    TestPhase,
    env_verbs,
    register,
)
from tasks.worldtest.check import (
    DEAD_END_SEEDS,
    FOCUS,
    UNVERIFIED,
    Lockstepped,
    Solvability,
    after_detour,
    from_anywhere,
    lockstep,
    searched,
)
from tasks.worldtest.derive import default_horizon, env_actions
from tasks.worldtest.problem import Problem
from tasks.worldtest.scoring import cd_score
from tasks.worldtest.search import clicked_cells, focus_clicks


class ChangeDetection(TestPhase):
    """The changed program runs; the original runs beside it in lockstep on the same
    actions from the same seed, and the defect time ``t*`` is the first frame index where
    their frames differ. ``found-change`` (or reaching the horizon) opens the selection
    phase: ``choose_frame_I`` shows test frame I, ``submit`` scores it with
    :func:`cd_score`. No reset in the test phase, so frame indices stay unambiguous."""

    def __init__(self, problem: Problem, make_env: EnvFactory) -> None:
        super().__init__(problem, make_env)
        self.changed_env_id = self.params["changed_env_id"]
        self.horizon = int(self.params.get("horizon", 1000))
        self.frames: list[list[list[str]]] = []
        self.t_star: int | None = None
        self.selecting = False
        self.chosen: int | None = None

    def start(self) -> Observation:
        self.env = self.make_env(self.changed_env_id)
        self.original = self.make_env(self.problem.env_id)
        self.observation = self.env.reset(self.problem.seed)
        reference = self.original.reset(self.problem.seed)
        self.frames = [self.observation.frame]
        self.t_star = 0 if self.observation.frame != reference.frame else None
        return self.observation

    def allowed_verbs(self, phase: str) -> tuple[str, ...]:
        if not self.selecting:
            return (*env_verbs(self.env), "found-change", "quit")
        if self.chosen is None:
            return ("noop", "choose_frame", "submit_frame", "quit")
        return ("noop", "choose_frame", "submit", "submit_frame", "quit")

    def choice_count(self, verb: str) -> int:
        return len(self.frames) if verb in ("choose_frame", "submit_frame") else 0

    def apply(self, action: Action) -> Result:
        verb = action.verb
        if verb == "quit":
            return Result(self.observation, DONE, 0.0)
        if verb == "found-change":
            self.selecting = True
            return Result(self.observation, SELECT)
        if verb == "choose_frame":
            return Result(self._choose(action))
        if verb == "submit_frame":  # the page's choice and its submit, at one tick
            self._choose(action)
        if verb in ("submit", "submit_frame"):
            return Result(self.observation, DONE, cd_score(self.chosen, self.t_star))
        if self.selecting:  # a noop while choosing
            return Result(self.observation)
        return self._step(action)

    def _step(self, action: Action) -> Result:
        self.observation = self.env.step(action)
        self.frames.append(self.observation.frame)
        if self.t_star is None:
            reference = self.original.step(action)
            if reference.frame != self.observation.frame:
                self.t_star = len(self.frames) - 1
        if len(self.frames) - 1 >= self.horizon:
            self.selecting = True
            return Result(self.observation, SELECT)
        return Result(self.observation)

    def _choose(self, action: Action) -> Observation:
        if not 0 <= action.index < len(self.frames):
            raise ValueError(
                f"{action} is not a test frame: expected choose_frame_0 to "
                f"choose_frame_{len(self.frames) - 1}"
            )
        self.chosen = action.index
        frame = self.frames[self.chosen]
        text = json.dumps({"frame_index": self.chosen, "render": frame})
        self.observation = Observation(frame, text, {"frame_index": self.chosen})
        return self.observation

    def view(self, phase: str) -> dict[str, Any]:
        return {
            "kind": "cd",
            "steps": len(self.frames) - 1,
            "horizon": self.horizon,
            "frame_count": len(self.frames),
            "chosen": self.chosen,
        }

    def outcome(self) -> dict[str, Any]:
        """``t_star`` is this attempt's defect time, ``None`` when its actions never
        made the changed program depart from the original (``triggered`` false)."""
        return {"steps": max(len(self.frames) - 1, 0), "t_star": self.t_star,
                "triggered": self.t_star is not None, "chosen": self.chosen}


# -- derivation ----------------------------------------------------------------------------


def derive_cd(
    env_id: str,
    changed_env_id: str,
    seed: int,
    witness_actions: Sequence[str | Action],
    *,
    horizon: int | None = None,
    problem_id: str | None = None,
    make_env: EnvFactory = registry.make,
) -> Problem:
    """A change-detection problem: ``changed_env_id`` in the test, ``witness_actions``
    a trajectory that triggers the change; the witness is cut at the defect time ``t*``.

    Raises ``ValueError`` when the witness triggers no difference, the programs differ
    from the first frame, or their randomness parts before ``t*``.
    """
    witness = env_actions(witness_actions)
    run = lockstep(make_env(env_id), make_env(changed_env_id), seed, witness)
    if run.t_star is None:
        raise ValueError(f"the witness ({len(witness)} actions) never makes the programs differ"
                         + _same_rules(env_id, changed_env_id))
    if run.t_star < 1:
        raise ValueError("the programs differ already in the initial frame: t* must be >= 1")
    if not run.randomness_agrees:
        raise ValueError(f"the programs consume randomness differently from frame "
                         f"{run.random_split}, before t* = {run.t_star}")
    params = {
        "changed_env_id": changed_env_id, "horizon": horizon or default_horizon(run.t_star),
        "witness": witness[: run.t_star], "witness_t_star": run.t_star,
    }
    return Problem(problem_id or f"{env_id}/cd-{seed}", env_id, "cd", seed, params)


def _same_rules(env_id: str, changed_env_id: str) -> str:
    """Why no witness can work, when the changed program is the program itself (comments
    and spacing aside: an author who copied program.sexp and has not changed a rule
    yet); "" otherwise, or for environments not written as programs."""
    from tasks.autumn.reader import read_all

    try:
        files = [registry.env_spec(env).program for env in (env_id, changed_env_id)]
        if all(files):
            first, second = (repr(read_all(Path(name).read_text())) for name in files)
            if first == second:
                return (f": {Path(files[1]).name} is the same program as {Path(files[0]).name}"
                        " (comments and spacing aside); change the one rule it is about")
    except (KeyError, OSError, ValueError):
        pass  # an unreadable file is said by the checks that read it
    return ""


# -- check -----------------------------------------------------------------------------------


def revealability(problem: Problem, seeds: int = DEAD_END_SEEDS,
                  make_env: EnvFactory = registry.make, *, max_states: int = 1500,
                  max_seconds: float = 4.0, on_run: Any = None) -> Solvability:
    """Whether the change can still be shown whatever a player did first
    (:func:`tasks.worldtest.check.from_anywhere`, on the two programs in lockstep): where
    a player's random actions into the test did not show it on the way, the problem's
    witness played from there (:func:`~tasks.worldtest.check.after_detour`), else a
    search breadth first over actions each followed by waiting (clicking where the
    witness clicks besides the objects), else random play, must make the programs'
    frames differ. A change a participant can hide for good (a switch broken, the only
    object the change concerns gone) scores them 0 however well they watch."""
    params = problem.params
    witness = list(params.get("witness") or [])

    def pair() -> Lockstepped:
        return Lockstepped(make_env(problem.env_id), make_env(params["changed_env_id"]))

    def differs(observation: Observation) -> bool:
        return observation.info["differs"]

    def distance(observation: Observation) -> int:
        return 0 if differs(observation) else 1

    clicks = focus_clicks(pair(), limit=FOCUS, known=clicked_cells(witness))
    horizon = int(params.get("horizon", 1000))

    def passes(seed: int, prefix: list[str], run: int) -> bool:
        if after_detour(pair, seed, prefix, witness, differs):
            return True
        return any(searched(kind, pair, seed, prefix, distance, clicks,
                            max_states=max_states, max_seconds=max_seconds, horizon=horizon,
                            rng_seed=run) for kind in ("settled", "random"))

    return from_anywhere(problem, pair, seeds, passes, what="change shown", until=differs,
                         on_run=on_run)


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
        return [f"the witness ({len(witness)} actions) triggers no difference"
                + _same_rules(problem.env_id, params["changed_env_id"])]
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


def _from_recipe(env_id, changed_env_id, seed, recipe, *, problem_id, samples) -> Problem:
    return derive_cd(env_id, changed_env_id, seed, recipe["witness"], problem_id=problem_id)


CHALLENGE = register(Challenge(
    name="cd",
    title="change detection",
    phase=ChangeDetection,
    goal="notice when the rules change",
    how=("In the test, press Found the change when the world behaves differently, then pick "
         "the frame where it began."),
    guide={"interaction": EXPLORE_FREELY,
           "test": ("Test: this is the same world, but one rule may have changed. Play as "
                    "before; as soon as something behaves differently, press Found the change."),
           "select": ("Move the slider to the first frame where the world behaved differently, "
                      "then press Submit.")},
    model_task=(
        "you will interact with a changed version of the environment - where one of the "
        "dynamics rules has been changed.\nYour goal is to use your understanding of the "
        "environment from the interaction phase to detect the change. The environment will "
        "start in a normal state and then at some point, the environment will transition to a "
        "defective state.\nAs soon as you detect the change, you have to select the "
        "'found-change' action to go to the next phase, wherein you have to choose exactly "
        "which frame the change occurred (choose_frame_I shows test frame I), then submit it. "
        "You may choose as many times as you want to see the frames. You will be penalized if "
        "you select 'found-change' before the change is detected."
    ),
    questions=(
        Question(
            "cd-goal",
            "In the test the world's rules may change at some moment. What do you do?",
            (
                "Press Found change as soon as you notice it, then pick the frame where it began",
                "Press Reset when it changes",
                "Keep playing until the end whatever happens",
            ),
            0,
        ),
    ),
    buttons={"found-change": "Found the change", "quit": GIVE_UP},
    keys={"f": "found-change"},
    check=_check_cd,
    from_recipe=_from_recipe,
    harness="tasks.worldtest.cd_harness:from_harness",
    harness_rules="tasks.worldtest.cd_harness:RULES",
    baseline=TRIGGERS_CHANGE,
))
