"""Planning (002 App. C.3): bring the world into a goal state.

The test phase is the same environment from its initial state; the goal (target colours
on some cells) is checked after every step, and reaching it within the horizon scores 1.
There is no reset; ``quit`` ends with 0.

Problem ``params``: ``goal_cells`` (``[x, y]``), ``goal_colours``, ``horizon`` (test steps
allowed), ``optimal_length`` (the length of a shortest plan when a search proved it, or
null), ``plan`` (the shortest plan known), ``stochastic``. Imported problems may add
``declared_optimal_length`` (the answer file's count) and, when the import's search found
no plan, ``search_states`` (its budget).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from tasks import registry
from tasks.core import Action, Frame, Observation, parse_action, region, rollout
from tasks.worldtest.challenge import (
    DONE,
    EXPLORE_FREELY,
    GIVE_UP,
    MATCH,
    REACHES_GOAL,
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
    WARNING,
    Solvability,
    after_detour,
    final_frames,
    from_anywhere,
    is_stochastic,
    sample_seeds,
    searched,
)
from tasks.worldtest.derive import (
    Cells,
    cells_in_grid,
    default_horizon,
    deterministic_cells,
    env_actions,
    windows,
)
from tasks.worldtest.problem import Problem
from tasks.worldtest.search import (
    Clicks,
    clicked_cells,
    focus_clicks,
    goal_distance,
    shortest_plan,
)

GOAL_SHAPES = tuple((w, h) for w in (1, 2, 3, 4) for h in (1, 2, 3, 4))


class Planning(TestPhase):
    """The same environment from its initial state; the goal (target colours on masked
    cells) is checked after every step; success within the horizon scores 1. No reset;
    ``quit`` ends with 0."""

    def __init__(self, problem: Problem, make_env: EnvFactory) -> None:
        super().__init__(problem, make_env)
        self.goal_cells = [tuple(cell) for cell in self.params["goal_cells"]]
        self.goal_colours = tuple(self.params["goal_colours"])
        self.horizon = int(self.params.get("horizon", 1000))
        self.steps = 0
        self.goal_reached = False

    def start(self) -> Observation:
        self.env = self.make_env(self.problem.env_id)
        self.steps = 0
        self.goal_reached = False
        self.observation = self.env.reset(self.problem.seed)
        self.goal_grid = self._goal_grid(self.observation.frame)
        return self.observation

    def _goal_grid(self, first: list[list[str]]) -> list[list[str]]:
        """The goal as a whole grid: the recorded one when the problem has it (imported
        from AutumnBench), else the test's first frame with the goal colours on the goal
        cells."""
        if self.params.get("goal_grid"):
            return [list(row) for row in self.params["goal_grid"]]
        grid = [list(row) for row in first]
        for (x, y), colour in zip(self.goal_cells, self.goal_colours):
            grid[y][x] = colour
        return grid

    def allowed_verbs(self, phase: str) -> tuple[str, ...]:
        return (*env_verbs(self.env), "quit")

    def reached(self, frame: list[list[str]]) -> bool:
        return region(frame, self.goal_cells) == self.goal_colours

    def apply(self, action: Action) -> Result:
        if action.verb == "quit":
            return Result(self.observation, DONE, 0.0)
        self.observation = self.env.step(action)
        self.steps += 1
        if self.reached(self.observation.frame):
            self.goal_reached = True
            return Result(self.observation, DONE, 1.0)
        if self.steps >= self.horizon:
            return Result(self.observation, DONE, 0.0)
        return Result(self.observation)

    def view(self, phase: str) -> dict[str, Any]:
        return {
            "kind": "planning",
            "goal_cells": [list(c) for c in self.goal_cells],
            "goal_colours": list(self.goal_colours),
            "steps": self.steps,
            "horizon": self.horizon,
            "goal_grid": self.goal_grid,
        }

    def outcome(self) -> dict[str, Any]:
        return {"steps": self.steps, "reached": self.goal_reached}


# -- derivation ----------------------------------------------------------------------------


def derive_planning(
    env_id: str,
    seed: int,
    plan: Sequence[str | Action],
    *,
    goal_cells: Iterable[Sequence[int]] | None = None,
    horizon: int | None = None,
    search: bool = True,
    clicks: Clicks = "all",
    max_states: int = 50_000,
    samples: int = 8,
    rng_seed: int = 0,
    problem_id: str | None = None,
    make_env: EnvFactory = registry.make,
) -> Problem:
    """A planning problem whose goal is the final frame's region after ``plan``.

    Without ``goal_cells`` the goal is the window (up to 4x4) holding the most cells
    that the plan changed and whose final colours are the same from sampled seeds. The
    plan is cut at its first step reaching the goal. When the environment is
    deterministic and ``search`` is on, a breadth-first search over ``clicks`` looks for
    a shorter plan; with every click allowed and the search within ``max_states`` its
    length is recorded as ``optimal_length`` (else null: the plan's length is then only
    an upper bound).
    """
    plan = env_actions(plan)
    env = make_env(env_id)
    frames = [o.frame for o in rollout(env, seed, plan)]
    finals = [frames[-1], *final_frames(env, plan, sample_seeds(samples, rng_seed, seed))]
    cells = _goal_window(frames, finals) if goal_cells is None else cells_in_grid(goal_cells, frames[0])
    goal = region(frames[-1], cells)
    if region(frames[0], cells) == goal:
        raise ValueError(f"the goal on {cells} already holds in the initial frame")
    plan = plan[: next(t for t, f in enumerate(frames) if t and region(f, cells) == goal)]
    stochastic = is_stochastic(env, finals)
    optimal = None
    if search and not stochastic:
        result = shortest_plan(
            partial(make_env, env_id), seed, lambda o: region(o.frame, cells) == goal,
            clicks=clicks, max_depth=len(plan) - 1, max_states=max_states,
        )
        plan = result.plan if result.found else plan
        optimal = len(plan) if clicks == "all" and (result.found or result.exhausted) else None
    params = {
        "goal_cells": [list(c) for c in cells], "goal_colours": list(goal),
        "horizon": horizon or default_horizon(len(plan)), "optimal_length": optimal,
        "plan": plan, "stochastic": stochastic,
    }
    return Problem(problem_id or f"{env_id}/planning-{seed}", env_id, "planning", seed, params)


def _goal_window(frames: list[Frame], finals: list[Frame]) -> Cells:
    stable = deterministic_cells(finals)
    changed = {(x, y) for x, y in stable if frames[-1][y][x] != frames[0][y][x]}
    if not changed:
        raise ValueError("the plan changes no cell that is the same across sampled seeds")
    best = max(
        (cells for cells in windows(frames[0], GOAL_SHAPES) if stable.issuperset(cells)),
        key=lambda cells: (len(changed.intersection(cells)), -len(cells)),
    )
    return best


# -- check -----------------------------------------------------------------------------------


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


SEARCHES = (("best first", 1), ("settled", 1), ("random", 1), ("best first", 4))
"""The searches :func:`solvability` tries in turn until one reaches the goal, each with
its scale of the budget: best first by the goal cells still wrong; breadth first over
actions each followed by waiting, for a goal the first step towards which looks like a
step away (emptying every basin to fill one of them again); random play, for a goal no
distance guides towards (walking a maze to its far corner); the first again, four times
as long (:func:`tasks.worldtest.check.searched`)."""


def solvability(problem: Problem, seeds: int = DEAD_END_SEEDS,
                make_env: EnvFactory = registry.make, *, max_states: int = 1500,
                max_seconds: float = 4.0, on_run: Any = None) -> Solvability:
    """Whether ``problem``'s goal stays reachable whatever the program's randomness and
    whatever a player did first (:func:`tasks.worldtest.check.from_anywhere`): from
    where a player's random actions into the test lead, the searches of
    the problem's own plan is tried (:func:`~tasks.worldtest.check.after_detour`), then
    the searches of :data:`SEARCHES`, clicking where that plan clicks besides the
    likeliest cells."""
    params = problem.params
    cells = [tuple(c) for c in params["goal_cells"]]
    colours = list(params["goal_colours"])
    distance = goal_distance(cells, colours)
    plan = list(params.get("plan") or [])
    factory = partial(make_env, problem.env_id)
    clicks = focus_clicks(factory(), cells, colours, limit=FOCUS, known=clicked_cells(plan))
    horizon = int(params.get("horizon", 1000))

    def passes(seed: int, prefix: list[str], run: int) -> bool:
        if after_detour(factory, seed, prefix, plan, lambda obs: distance(obs) == 0):
            return True
        return any(searched(kind, factory, seed, prefix, distance, clicks,
                            max_states=max_states * scale, max_seconds=max_seconds * scale,
                            horizon=horizon, rng_seed=run) for kind, scale in SEARCHES)

    return from_anywhere(problem, factory, seeds, passes, what="goal reachable",
                         on_run=on_run)


def _unverified_planning(params) -> str:
    reason = f"{UNVERIFIED}no plan found within {params['search_states']} states"
    declared = params.get("declared_optimal_length")
    if declared is not None:
        reason += f"; the answer file declares an optimum of {declared} actions"
    return reason


def _from_recipe(env_id, changed_env_id, seed, recipe, *, problem_id, samples) -> Problem:
    return derive_planning(env_id, seed, recipe["plan"], goal_cells=recipe.get("goal_cells"),
                           max_states=20_000, problem_id=problem_id)


def _oracle(problem: Problem, limits: Mapping[str, Any]) -> list[str]:
    """A shortest plan to the goal found by search, after ``go-to-test``."""
    cells = [tuple(c) for c in problem.params["goal_cells"]]
    colours = tuple(problem.params["goal_colours"])
    result = shortest_plan(
        problem.env_id, problem.seed, lambda obs: region(obs.frame, cells) == colours,
        clicks=limits["clicks"], max_depth=limits["max_depth"], max_states=limits["max_states"],
    )
    if result.plan is None:
        raise ValueError(f"no plan of at most {limits['max_depth']} actions found for {problem.id}")
    return ["go-to-test", *result.plan]


def _goal(state: dict[str, Any]) -> tuple[list[list[Any]], list[list[int]]] | None:
    """The goal grid (target colours, 'ignore' elsewhere; the whole recorded goal grid
    with ``goal_format`` ``full``) and its 0/1 highlight mask, or None outside the test."""
    test = state.get("test") or {}
    if "goal_cells" not in test:
        return None
    width, height = state["size"]
    goal = [["ignore"] * width for _ in range(height)]
    mask = [[0] * width for _ in range(height)]
    for (x, y), colour in zip(test["goal_cells"], test["goal_colours"]):
        goal[y][x], mask[y][x] = colour, 1
    if state.get("goal_format") == "full" and test.get("goal_grid"):
        goal = test["goal_grid"]
    return goal, mask


def goal_text(state: dict[str, Any]) -> str:
    """The ``goal`` grid and its 0/1 ``highlight_mask``, as JSON, shown after the frame;
    nothing with ``goal_format`` ``full``, where they are part of the frame
    (:func:`goal_frame`)."""
    found = _goal(state)
    if found is None or state.get("goal_format") == "full":
        return ""
    return json.dumps({"goal": found[0], "highlight_mask": found[1]})


def goal_frame(state: dict[str, Any]) -> str | None:
    """With ``goal_format`` ``full`` (the autumnbench profile), each test turn's frame
    as the published harness sends it: one JSON object with the ``render``, the ``goal``
    and the ``highlight_mask``; None otherwise (the frame's text, then :func:`goal_text`)."""
    found = _goal(state)
    if found is None or state.get("goal_format") != "full":
        return None
    try:
        render = json.loads(state["text"])
    except ValueError:  # a picture's note in place of the text grid
        render = state["text"]
    return json.dumps({"render": render, "goal": found[0], "highlight_mask": found[1]})


CHALLENGE = register(Challenge(
    name="planning",
    title="planning",
    phase=Planning,
    goal="make the framed cells look like the goal picture",
    how="In the test, make the framed cells look like the goal picture.",
    buttons={"quit": GIVE_UP},
    guide={"interaction": EXPLORE_FREELY,
           "test": ("Test: make the cells framed in the goal picture look exactly like it. "
                    "The rest of the grid does not matter. The world keeps moving while you "
                    "think. Give up ends this game with no score.")},
    model_task=(
        "you will be given a goal state and a highlight mask of the same size as the grid where "
        "1 indicates the region to be reached and 0 indicates the region to be ignored.\nYour "
        "aim is to solve a planning task in the environment you interacted with by reaching the "
        "goal state in the highlighted region.\nNote that you can no longer reset the "
        "environment, so plan carefully. You will be given the same environment as you "
        "interacted with in the interaction phase, you need to interact with it to reach the "
        "goal state in the highlighted region.\nYour grid will be checked against the goal "
        "state and the highlight mask at every timestep. If you reach the goal state in the "
        "highlighted region, you will be given a reward. You may choose to quit at any time if "
        "you are stuck."
    ),
    model_details=goal_text,
    model_frame=goal_frame,
    questions=(
        Question(
            "planning-goal",
            "In the test a goal picture frames some cells. What do you do?",
            ("Wait until time runs out", "Act so that the framed cells look like the goal picture",
             "Press Reset"),
            1,
        ),
    ),
    check=_check_planning,
    from_recipe=_from_recipe,
    harness="tasks.worldtest.planning_harness:from_harness",
    oracle=_oracle,
    progress=MATCH,
    baseline=REACHES_GOAL,
    scored_by_steps=True,
))
