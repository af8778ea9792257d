"""The task-DAG exploration map as an environment (the ``GridEnv`` contract)."""

from __future__ import annotations

from typing import Any

from tasks.core import MOVES, Action, Observation, parse_action
from tasks.dagmap.config import DagMapConfig, preset
from tasks.dagmap.generator import generate
from tasks.dagmap.layout import grid_dimensions
from tasks.dagmap.model import DagMap
from tasks.dagmap.progress import Event, Progress
from tasks.dagmap.view import labels, node_facts, observation_text, render_frame

ACTIONS = ("noop", *MOVES)


class DagMapEnv:
    """A partially observed grid map hiding a task DAG (000 Sec. 3).

    **Description** (for researchers). The agent starts on an empty cell of a grid whose
    traversable cells, obstacles and task nodes it cannot see. Each node is achieved
    ("activated") by standing on it once its prerequisites are met: every parent of at
    least one of its prerequisite sets achieved; a primitive node needs nothing. The
    task is to achieve the goal node within a hidden step budget of ``alpha x`` the
    traversable cells. Maps come from :func:`tasks.dagmap.generate`; the exploration
    and exploitation errors of a trajectory from
    ``analysis.metrics.explore_exploit``.

    **Actions.** ``up``, ``down``, ``left``, ``right`` (``up`` is ``y - 1``). A move into
    an obstacle or off the grid is refused: the agent stays, and the move still costs a
    step. ``noop`` does nothing at all: it is neither a move nor a step and costs no
    budget, because a real-time session sends it on every tick without a key press.
    Clicks are not actions here (``ValueError``).

    **Observation.** ``text``: the sentence of 000 App. C.3 (position, what is here: a
    node's prerequisites, state and successors; admissible directions; steps spent).
    ``frame``: the grid with fog of war (see :mod:`tasks.dagmap.view`). ``info``:
    ``position``, ``action``, ``moved``, ``rejected``, ``noop``, ``directions``,
    ``steps``, ``budget``, ``events`` (``new_cell`` / ``discovered`` / ``achieved``),
    ``discovered``, ``achieved`` (in order), ``node`` (the facts the sentence states, or
    None), ``labels`` (discovered nodes with cell and state, for drawing names),
    ``goal`` (its name once discovered) and ``success``.

    **Termination.** ``done`` when the goal is achieved (``info["success"]`` True) or
    the budget is spent (False). Stepping a finished map is a ``ValueError``.

    **Registered ids.** ``dagmap/<preset>-s<seed>`` for the nine presets
    ``{low,medium,high}-n{4,6,8}`` (exploitation demand, DAG size) and seeds 0-2, and
    ``dagmap/<preset>-semantic-s<seed>`` with cooking names; see
    :mod:`tasks.dagmap.register`.

    ``map_seed`` fixes the map; without it ``reset(seed)`` generates the map from
    ``seed``. The map is the only randomness, so ``reset``'s seed changes nothing once
    ``map_seed`` is given.
    """

    frame_rate = 4

    def __init__(
        self,
        preset_name: str = "medium-n6",
        map_seed: int | None = None,
        names: str | None = None,
        config: DagMapConfig | None = None,
    ) -> None:
        config = config or preset(preset_name)
        self.config = config if names is None else config.with_(names=names)
        self.map_seed = map_seed
        self.map: DagMap | None = None
        self.size = grid_dimensions(self.config)
        self.progress: Progress | None = None
        self.steps = 0
        self.done = False

    def reset(self, seed: int) -> Observation:
        if self.map is None or self.map_seed is None:
            self.map = generate(self.config, seed if self.map_seed is None else self.map_seed)
        self.progress = Progress(self.map)
        self.steps = 0
        self.done = False
        return self._observe(None, [])

    def available_actions(self) -> tuple[str, ...]:
        return () if self.done else ACTIONS

    def step(self, action: Action | str) -> Observation:
        parsed = parse_action(action)
        if self.progress is None:
            raise ValueError("call reset(seed) before step")
        if self.done:
            raise ValueError("this map is finished (goal reached or budget spent): call reset(seed)")
        if parsed.verb == "noop":
            return self._observe("noop", [])
        if parsed.verb not in MOVES:
            raise ValueError(f"{parsed} is not an action of a task-DAG map: expected {', '.join(ACTIONS)}")
        here = self.progress.position
        there = self.map.move(here, parsed.verb)
        events = self.progress.enter(there)
        self.steps += 1
        self.done = self.progress.success or self.steps >= self.map.budget
        return self._observe(parsed.verb, events, rejected=there == here)

    def _observe(self, action: str | None, events: list[Event], rejected: bool = False) -> Observation:
        dagmap, progress = self.map, self.progress
        position = progress.position
        node = dagmap.node_at.get(position)
        facts = node_facts(dagmap, progress, node, events) if node else None
        directions = dagmap.directions(position)
        text = observation_text(
            position, directions, self.steps, facts,
            blocked=action if rejected else None, ending=self._ending(),
        )
        info: dict[str, Any] = {
            "position": list(position),
            "action": action,
            "moved": action in MOVES and not rejected,
            "rejected": rejected,
            "noop": action == "noop",
            "directions": directions,
            "steps": self.steps,
            "budget": dagmap.budget,
            "events": [event.to_dict() for event in events],
            "discovered": sorted(progress.discovered),
            "achieved": list(progress.achieved),
            "node": facts,
            "labels": labels(dagmap, progress),
            "success": progress.success,
        }
        if dagmap.goal in progress.discovered:
            info["goal"] = dagmap.goal
        return Observation(render_frame(dagmap, progress), text, info, done=self.done)

    def _ending(self) -> str | None:
        if self.progress.success:
            return "You activated the goal state. The task is complete."
        if self.done:
            return "Your step budget is spent. The task is over."
        return None
