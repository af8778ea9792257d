"""Searches for an action sequence that reaches a goal: exact and guided.

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

Breadth-first search is exact but blind: on a 16x16 program every state has 256 clicks
besides the arrows, so it cannot look far. For programs nobody wrote a plan for (those
imported from AutumnBench) :func:`guided_plan` searches best first by how many goal cells
still differ, over the arrows and a few clicks chosen by :func:`focus_clicks`; it finds
*a* plan, not a shortest one. :func:`probe_rollouts` plays seeded random trajectories
biased to click objects, for goals no distance guides (a change that has not shown yet).
"""

from __future__ import annotations

import heapq
import itertools
import random
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
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
Distance = Callable[[Observation], int]
"""How far an observation is from a goal, 0 when it is reached."""
Cell = tuple[int, int]
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
    ``states`` counts what the budget ``max_states`` bounds: distinct states seen by
    :func:`shortest_plan`, states expanded by :func:`guided_plan`. ``timed_out`` is true
    when a time budget, not ``max_states``, cut the search.
    """

    plan: list[str] | None
    states: int
    exhausted: bool
    dedupe: str
    timed_out: bool = False

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


def _return_to(env: GridEnv, seed: int, node: _Node, snapshots: bool,
               prefix: Sequence[str] = ()) -> None:
    if snapshots:
        env.restore(node.snapshot)
    else:
        rollout(env, seed, [*prefix, *node.path()])


def _start(env: GridEnv, seed: int, prefix: Sequence[str]) -> Observation:
    """The observation after ``reset(seed)`` and ``prefix``."""
    observation = env.reset(seed)
    for action in prefix:
        observation = env.step(action)
    return observation


def _state_key(env: GridEnv) -> tuple[Callable[[Observation], str], str]:
    if callable(getattr(env, "state_hash", None)):
        return (lambda _observation: env.state_hash()), "state"
    return (lambda observation: frame_hash(observation.frame)), "frame"


def _make(env_id_or_factory: str | Callable[[], GridEnv]) -> GridEnv:
    if isinstance(env_id_or_factory, str):
        return registry.make(env_id_or_factory)
    return env_id_or_factory()


# -- guided search -------------------------------------------------------------------------


def goal_distance(cells: Sequence[Cell], colours: Sequence[str]) -> Distance:
    """The number of ``cells`` whose colour is not the goal's ``colours``."""
    goal = list(zip(cells, colours, strict=True))
    return lambda observation: sum(observation.frame[y][x] != c for (x, y), c in goal)


def clicked_cells(actions: Iterable[str]) -> list[Cell]:
    """The cells ``actions`` click, in their order: a problem's own plan or witness, whose
    clicks are worth trying again (:func:`focus_clicks`' ``known``)."""
    return [(action.x, action.y) for action in map(parse_action, actions)
            if action.verb == "click"]


def focus_clicks(env: GridEnv, cells: Sequence[Cell] = (), colours: Sequence[str] = (),
                 spare: int = 3, limit: int = 24,
                 known: Sequence[Cell] = ()) -> Callable[[Frame], list[Cell]]:
    """The clicks worth trying in a frame: at most ``limit``, chosen likeliest first.

    First the goal ``cells`` whose colour still differs from ``colours`` (what must
    change), then the ``known`` cells (those a plan already found clicks: a program may
    take clicks on empty cells only, such as a row to drop sand from), then the cells
    not of the background colour (the objects), then ``spare``
    background cells spread along the diagonal (a click on empty space, which many
    programs react to anywhere), then the wrong cells' four neighbours. They are returned
    in reading order, so that among clicks with the same effect :func:`guided_plan` keeps
    the same one from every state (an interpreter that remembers the last click would
    otherwise count each equivalent click as a new state).
    """
    width, height = env.size
    spread = [((i + 1) * width // (spare + 1), (i + 1) * height // (spare + 1))
              for i in range(spare)]
    goal = list(zip(cells, colours, strict=True))

    def choose(frame: Frame) -> list[Cell]:
        wrong = [(x, y) for (x, y), colour in goal if frame[y][x] != colour]
        near = [(x + dx, y + dy) for x, y in wrong for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))]
        inside = [(x, y) for x, y in near if 0 <= x < width and 0 <= y < height]
        ordered = [*wrong, *known, *click_cells(env, frame, "foreground"), *spread, *inside]
        return sorted(list(dict.fromkeys(ordered))[:limit], key=lambda c: (c[1], c[0]))

    return choose


def guided_plan(
    env_id_or_factory: str | Callable[[], GridEnv],
    seed: int,
    distance: Distance,
    clicks: Callable[[Frame], Iterable[Cell]] | None = None,
    *,
    max_states: int = 10_000,
    max_seconds: float = 60.0,
    max_depth: int = 300,
    weight: float = 1.0,
    settle: int = 40,
    clock: Callable[[], float] = time.monotonic,
    prefix: Sequence[str] = (),
    settled: bool = False,
) -> SearchResult:
    """Best-first (weighted A*) search from ``reset(seed)`` for a plan reaching ``distance`` 0.

    The open state with the least ``moves + weight * distance`` is expanded first, the
    nearer the goal first among equals (a plan whose every step puts one more cell right
    is not kept waiting behind every state as far off as its start). Its
    moves are ``noop``, the arrows, the cells ``clicks`` gives for its frame (default:
    the objects), and *waiting*: ``noop`` repeated until the frame stops changing (at
    most ``settle`` times), one move however long, so that letting things fall or grow
    is not a long plateau the distance cannot guide. A click whose next frame another
    click from the same state already gave is taken for the same move and dropped.
    States are told apart as :func:`shortest_plan` does; the search stops after
    expanding ``max_states`` states or after ``max_seconds``, and plans are cut at
    ``max_depth`` steps. The plan found is valid (it was executed) but need not be shortest, and
    ``exhausted`` proves nothing, since only some clicks were tried. With ``prefix``, the
    search starts where those actions lead from ``reset(seed)`` (a player part-way into
    the test), and the plan continues from there.

    With ``settled``, every move is its action followed by waiting, and with ``weight``
    0 the search is breadth first over such moves: the settled states of a world that
    keeps flowing or falling after each action (water reaching a basin, sand coming to
    rest) are few, where the steps in between are many, and a goal that first needs a
    step away from it (emptying every basin to fill one again) is a few moves away, not
    a valley the distance keeps the search in.
    """
    env = _make(env_id_or_factory)
    start = _start(env, seed, prefix)
    key, dedupe = _state_key(env)
    if distance(start) == 0:
        return SearchResult([], 1, True, dedupe)
    clicks = clicks or (lambda frame: click_cells(env, frame, "foreground"))
    snapshots = callable(getattr(env, "snapshot", None)) and callable(getattr(env, "restore", None))
    deadline = clock() + max_seconds
    seen, order, expanded = {key(start)}, itertools.count(), 0
    frontier = [(0.0, 0, next(order), _Node(None, None, _snap(env, snapshots), 0), start.frame, 0)]
    while frontier:
        if expanded >= max_states or clock() > deadline:
            return SearchResult(None, expanded, False, dedupe, expanded < max_states)
        _f, _h, _n, node, frame, moves = heapq.heappop(frontier)
        expanded += 1
        for actions, observation in _successors(env, seed, node, frame, clicks, settle,
                                                snapshots, distance, prefix, settled):
            state = key(observation)
            if state in seen:
                continue
            seen.add(state)
            child = _extend(node, actions, _snap(env, snapshots))
            h = distance(observation)
            if h == 0:
                return SearchResult(child.path(), expanded, False, dedupe)
            if not observation.done and child.depth < max_depth:
                priority = moves + 1 + weight * h
                heapq.heappush(frontier, (priority, h, next(order), child, observation.frame,
                                          moves + 1))
    return SearchResult(None, expanded, True, dedupe)


def _successors(env, seed, node, frame, clicks, settle, snapshots,
                distance, prefix=(), settled=False) -> Iterator[tuple[list[str], Observation]]:
    """Each move from ``node``'s state (its actions and last observation), the
    environment left in the state it leads to until the next one is asked for;
    equivalent clicks left out, waiting last (with ``settled``, after every action)."""
    clicked = set()
    waits = "noop" in env.available_actions()
    for action in default_actions(env, frame, sorted(clicks(frame), key=lambda c: (c[1], c[0]))):
        _return_to(env, seed, node, snapshots, prefix)
        if not is_available(action, env):
            continue
        observation = env.step(action)
        if action.verb == "click":
            shown = frame_hash(observation.frame)
            if shown in clicked:
                continue
            clicked.add(shown)
        if settled and waits and not observation.done and distance(observation) != 0:
            waited, observation = _wait(env, observation.frame, settle, distance)
            yield [str(action), *waited], observation
            continue
        yield [str(action)], observation
    if waits and not settled:  # settled, the noop's move is the wait
        _return_to(env, seed, node, snapshots, prefix)
        yield _wait(env, frame, settle, distance)


def _wait(env: GridEnv, frame: Frame, settle: int, distance: Distance) -> tuple[list[str], Observation]:
    """``noop`` until the frame stops changing, the goal is reached, or ``settle`` times."""
    actions: list[str] = []
    while len(actions) < settle:
        observation = env.step("noop")
        actions.append("noop")
        if observation.frame == frame or observation.done or distance(observation) == 0:
            break
        frame = observation.frame
    return actions, observation


def _extend(node: _Node, actions: list[str], snapshot: Any) -> _Node:
    """``node`` followed by ``actions``; only the last node keeps a snapshot."""
    for action in actions[:-1]:
        node = _Node(node, action, None, node.depth + 1)
    return _Node(node, actions[-1], snapshot, node.depth + 1)


def _snap(env: GridEnv, snapshots: bool) -> Any:
    return env.snapshot() if snapshots else None


def probe_rollouts(
    env_id_or_factory: str | Callable[[], GridEnv],
    seed: int,
    goal_test: GoalTest,
    *,
    length: int = 40,
    max_states: int = 4_000,
    rng_seed: int = 0,
    prefix: Sequence[str] = (),
) -> Iterator[list[str]]:
    """Seeded random trajectories from ``reset(seed)``, each cut where ``goal_test`` first
    holds: yields those action lists, until ``max_states`` steps have been taken. With
    ``prefix``, each starts where those actions lead (and the list continues them).

    Each step picks a verb the environment accepts uniformly (``noop``, an arrow,
    ``click``); a click lands on an object (a cell not of the background colour) three
    times in four, else anywhere. Actions come from ``random.Random(rng_seed)`` only.
    """
    env, rng = _make(env_id_or_factory), random.Random(rng_seed)
    verbs = [v for v in ("noop", *MOVES, "click") if v in env.available_actions()]
    steps = 0
    while steps < max_states:
        observation, actions = _start(env, seed, prefix), []
        while len(actions) < length and steps < max_states:
            action = random_action(env, observation.frame, verbs, rng)
            observation = env.step(action)
            actions.append(str(action))
            steps += 1
            if goal_test(observation):
                yield actions
                break


def random_action(env: GridEnv, frame: Frame, verbs: list[str], rng: random.Random) -> Action:
    """One of ``verbs`` at random; a click lands on an object three times in four."""
    verb = rng.choice(verbs)
    if verb != "click":
        return Action(verb)
    objects = click_cells(env, frame, "foreground")
    if objects and rng.random() < 0.75:
        x, y = rng.choice(objects)
    else:
        x, y = rng.randrange(env.size[0]), rng.randrange(env.size[1])
    return Action("click", x=x, y=y)


def shorten(actions: Sequence[str], holds: Callable[[list[str]], bool]) -> list[str]:
    """``actions`` with every action dropped, last first, whose removal keeps ``holds``
    true: one pass, so a plan or witness found by a guided or random search loses its
    detours at the cost of one replay per action."""
    kept = list(actions)
    for index in reversed(range(len(kept))):
        shorter = kept[:index] + kept[index + 1:]
        if shorter and holds(shorter):
            kept = shorter
    return kept
