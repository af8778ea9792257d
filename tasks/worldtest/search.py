"""Breadth-first search for a shortest action sequence that reaches a goal.

Same seed and same actions always give the same frames, so for one seed every
environment is a deterministic graph of states; the search walks it breadth first and
so returns a shortest plan. It confirms that planning problems are solvable, records
their optimal plan length, and a planner agent wraps it.

Returning to a state already reached is done by ``env.snapshot()``/``env.restore(s)``
when the environment has both (the Autumn interpreter does), otherwise by resetting with
the seed and replaying the action prefix. States are told apart by ``env.state_hash()``
when the environment has it, otherwise by the frame's hash; the latter assumes the frame
is the whole state, so an environment with hidden state and no ``state_hash`` may miss a
shorter plan. A plan found is always valid: it was executed on the real environment.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tasks import registry
from tasks.core import (
    MOVES,
    Action,
    Frame,
    GridEnv,
    Observation,
    frame_hash,
    is_available,
    parse_action,
    rollout,
)

GoalTest = Callable[[Observation], bool]
Clicks = str | Iterable[tuple[int, int]] | None
"""``"all"`` (every cell), ``"foreground"`` (cells not of the background colour in the
initial frame), an explicit list of cells ``(x, y)``, or ``None`` (no clicks)."""


@dataclass(frozen=True)
class SearchResult:
    """What a search found.

    ``plan`` is the shortest action sequence (texts) reaching the goal, ``[]`` when the
    goal holds at the start, ``None`` when none was found. ``exhausted`` is true when
    every state within ``max_depth`` was expanded, so that ``None`` proves there is no
    plan that short with these actions; false when ``max_states`` cut the search.
    ``dedupe`` says how states were told apart: ``"state"`` or ``"frame"``.
    """

    plan: list[str] | None
    states: int
    exhausted: bool
    dedupe: str

    @property
    def found(self) -> bool:
        return self.plan is not None


@dataclass(frozen=True)
class _Node:
    parent: _Node | None
    action: str | None
    snapshot: Any
    depth: int

    def path(self) -> list[str]:
        node, out = self, []
        while node.parent is not None:
            out.append(node.action)
            node = node.parent
        return out[::-1]


def background_colour(env: GridEnv, frame: Frame) -> str:
    """The environment's declared ``background`` if it has one, else the commonest colour."""
    declared = getattr(env, "background", None)
    if isinstance(declared, str):
        return declared
    return Counter(colour for row in frame for colour in row).most_common(1)[0][0]


def default_actions(env: GridEnv, frame: Frame, clicks: Clicks = "all") -> list[Action]:
    """``noop``, the arrows and the chosen clicks, kept to the verbs ``env`` accepts."""
    verbs = set(env.available_actions())
    actions = [Action(verb) for verb in ("noop", *MOVES) if verb in verbs]
    if "click" in verbs:
        actions += [Action("click", x=x, y=y) for x, y in click_cells(env, frame, clicks)]
    return actions


def click_cells(env: GridEnv, frame: Frame, clicks: Clicks) -> list[tuple[int, int]]:
    """The cells ``clicks`` names, in reading order."""
    width, height = env.size
    if clicks is None:
        return []
    if clicks == "all":
        return [(x, y) for y in range(height) for x in range(width)]
    if clicks == "foreground":
        background = background_colour(env, frame)
        return [(x, y) for y in range(height) for x in range(width) if frame[y][x] != background]
    if isinstance(clicks, str):
        raise ValueError(f"clicks must be 'all', 'foreground', a list of cells or None, not {clicks!r}")
    return sorted({(int(x), int(y)) for x, y in clicks}, key=lambda c: (c[1], c[0]))


def shortest_plan(
    env_id_or_factory: str | Callable[[], GridEnv],
    seed: int,
    goal_test: GoalTest,
    actions: Sequence[Action | str] | None = None,
    *,
    clicks: Clicks = "all",
    max_depth: int = 50,
    max_states: int = 100_000,
    use_snapshots: bool = True,
) -> SearchResult:
    """Breadth-first search from ``reset(seed)`` for a shortest plan satisfying ``goal_test``.

    ``actions`` defaults to :func:`default_actions` with ``clicks``; restrict clicks (to
    ``"foreground"`` or a list of cells) to keep large grids tractable. The search stops
    at ``max_depth`` actions or after seeing ``max_states`` distinct states.
    ``use_snapshots=False`` forces replay even when the environment can snapshot.
    """
    env = _make(env_id_or_factory)
    start = env.reset(seed)
    key, dedupe = _state_key(env)
    if goal_test(start):
        return SearchResult([], 1, True, dedupe)
    chosen = [parse_action(a) for a in actions] if actions is not None else default_actions(
        env, start.frame, clicks
    )
    snapshots = use_snapshots and callable(getattr(env, "snapshot", None)) and callable(
        getattr(env, "restore", None)
    )
    return _breadth_first(env, seed, goal_test, chosen, key, dedupe, snapshots, max_depth,
                          max_states, start)


def _breadth_first(env, seed, goal_test, actions, key, dedupe, snapshots, max_depth,
                   max_states, start) -> SearchResult:
    seen = {key(start)}
    frontier = deque([_Node(None, None, env.snapshot() if snapshots else None, 0)])
    while frontier:
        node = frontier.popleft()
        if node.depth >= max_depth:
            continue
        for action in actions:
            _return_to(env, seed, node, snapshots)
            if not is_available(action, env):
                continue
            observation = env.step(action)
            state = key(observation)
            if state in seen:
                continue
            seen.add(state)
            expand = not observation.done and node.depth + 1 < max_depth
            snapshot = env.snapshot() if snapshots and expand else None
            child = _Node(node, str(action), snapshot, node.depth + 1)
            if goal_test(observation):
                return SearchResult(child.path(), len(seen), False, dedupe)
            if len(seen) >= max_states:
                return SearchResult(None, len(seen), False, dedupe)
            if expand:
                frontier.append(child)
    return SearchResult(None, len(seen), True, dedupe)


def _return_to(env: GridEnv, seed: int, node: _Node, snapshots: bool) -> None:
    if snapshots:
        env.restore(node.snapshot)
    else:
        rollout(env, seed, node.path())


def _state_key(env: GridEnv) -> tuple[Callable[[Observation], str], str]:
    if callable(getattr(env, "state_hash", None)):
        return (lambda _observation: env.state_hash()), "state"
    return (lambda observation: frame_hash(observation.frame)), "frame"


def _make(env_id_or_factory: str | Callable[[], GridEnv]) -> GridEnv:
    if isinstance(env_id_or_factory, str):
        return registry.make(env_id_or_factory)
    return env_id_or_factory()
