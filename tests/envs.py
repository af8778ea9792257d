"""Small environments defined for the tests, each keeping the ``GridEnv`` contract.

* ``Walker``: a gold cell moved by the arrows on a black grid; a click paints a cell
  blue. Deterministic. ``Walker(changed=True)`` paints clicks red once the walker has
  reached column 3: a change-detection pair whose change is triggered by the agent.
* ``Rain``: a deterministic walker plus one grey drop that falls from a random column
  drawn from the seeded generator: stochastic, but the walker's cell is not.
  ``Rain(changed=True)`` changes clicks like the changed walker and draws randomness
  exactly as ``Rain`` does (a valid change-detection pair); ``Rain(skewed=True)`` draws one
  extra number on every click, so its randomness parts from ``Rain``'s before any frame
  does (an invalid pair the checker must reject).

Both keep the optional hooks the search and the checkers use when they exist:
``snapshot()``/``restore()``, ``state_hash()`` and (``Rain``) ``random_state()``.

``register_test_envs()`` registers them under ``test/...`` ids; ``make_test_env(env_id)``
makes one without touching the registry (what the tests pass as ``make_env``).
"""

from __future__ import annotations

import hashlib
import random

from tasks import registry
from tasks.core import Action, FrameText, Observation, parse_action


class Walker:
    """A gold walker; arrows move it (walls stop it), clicks paint cells blue."""

    frame_rate = 8

    def __init__(self, width: int = 5, height: int = 5, changed: bool = False) -> None:
        self.size = (width, height)
        self.changed = changed
        self.position = (0, 0)
        self.painted: dict[tuple[int, int], str] = {}
        self.triggered = False
        self._text = FrameText()

    def snapshot(self) -> tuple:
        """The whole state, to :meth:`restore` later (the search uses it)."""
        return (self.position, dict(self.painted), self.triggered)

    def restore(self, snapshot: tuple) -> None:
        position, painted, self.triggered = snapshot[:3]
        self.position, self.painted = position, dict(painted)

    def state_hash(self) -> str:
        """Equal for equal states, hidden ones included (the trigger, the generator)."""
        position, painted, *rest = self.snapshot()
        text = repr((position, sorted(painted.items()), *rest))
        return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()

    def reset(self, seed: int) -> Observation:
        self.position = (0, 0)
        self.painted = {}
        self.triggered = False
        self._reset_extra(seed)
        return self._observe()

    def _reset_extra(self, seed: int) -> None:
        pass

    def available_actions(self) -> tuple[str, ...]:
        return ("noop", "up", "down", "left", "right", "click")

    def step(self, action: Action | str) -> Observation:
        action = parse_action(action, self.size)
        if not action.is_env_action:
            raise ValueError(f"{action} is not an environment action")
        dx, dy = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}.get(
            action.verb, (0, 0)
        )
        x, y = self.position[0] + dx, self.position[1] + dy
        if 0 <= x < self.size[0] and 0 <= y < self.size[1]:
            self.position = (x, y)
        if self.changed and self.position[0] >= 3:
            self.triggered = True
        if action.verb == "click":
            self.painted[(action.x, action.y)] = "red" if self.triggered else "blue"
        self._step_extra(action)
        return self._observe()

    def _step_extra(self, action: Action) -> None:
        pass

    def render(self) -> list[list[str]]:
        width, height = self.size
        frame = [["black"] * width for _ in range(height)]
        for (x, y), colour in self.painted.items():
            frame[y][x] = colour
        x, y = self.position
        frame[y][x] = "gold"
        return frame

    def _observe(self) -> Observation:
        frame = self.render()
        return Observation(frame, lambda: self._text(frame), {"position": list(self.position)})


class Rain(Walker):
    """A walker plus one grey drop falling down a column chosen at random."""

    def __init__(self, width: int = 5, height: int = 5, changed: bool = False,
                 skewed: bool = False) -> None:
        super().__init__(width, height, changed)
        self.skewed = skewed

    def snapshot(self) -> tuple:
        return (*super().snapshot(), self.drop, self.rng.getstate())

    def restore(self, snapshot: tuple) -> None:
        super().restore(snapshot)
        self.drop = snapshot[3]
        self.rng.setstate(snapshot[4])

    def random_state(self) -> tuple:
        """The generator's state: equal iff the same numbers were drawn since reset."""
        return self.rng.getstate()

    def _reset_extra(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.drop = (self.rng.randrange(self.size[0]), 0)

    def _step_extra(self, action: Action) -> None:
        if self.skewed and action.verb == "click":
            self.rng.random()
        x, y = self.drop
        self.drop = (self.rng.randrange(self.size[0]), 0) if y + 1 >= self.size[1] else (x, y + 1)

    def render(self) -> list[list[str]]:
        frame = super().render()
        x, y = self.drop
        if frame[y][x] == "black":
            frame[y][x] = "grey"
        return frame


TEST_ENVS = {
    "test/walker": (Walker, {}),
    "test/walker-changed": (Walker, {"changed": True}),
    "test/rain": (Rain, {}),
    "test/rain-changed": (Rain, {"changed": True}),
    "test/rain-skewed": (Rain, {"skewed": True}),
}


def make_test_env(env_id: str) -> Walker:
    """A fresh test environment by id, without the registry."""
    try:
        cls, kwargs = TEST_ENVS[env_id]
    except KeyError:
        raise KeyError(f"unknown environment {env_id!r}; known: {', '.join(TEST_ENVS)}") from None
    return cls(**kwargs)


def register_test_envs() -> None:
    """Register the test environments (idempotent)."""
    for env_id, (cls, kwargs) in TEST_ENVS.items():
        registry.register_env(env_id, cls, replace=True, tags=("test",), **kwargs)


class Stuck(Walker):
    """A walker whose ``left`` never returns (a Python environment's endless loop)."""

    def step(self, action):
        if str(action) == "left":
            while True:
                pass
        return super().step(action)


OVER_BUDGET = """(program
  (= GRID_SIZE 5)
  (object Dot (Cell 0 0 "gold"))
  (= dot (initnext (Dot (Position 0 0)) (prev dot)))
  (= count (initnext 0 (prev count)))
  (on right (= dot (moveRight (prev dot))))
  (on left (= count (length (range 0 200000000))))
)"""
"""An Autumn program whose ``left`` asks for a list of 200 million items (line 7): over
its step budget."""


HEAVY = """(program
  (= GRID_SIZE 5)
  (object Dot (Cell 0 0 "gold"))
  (= dot (initnext (Dot (Position 0 0)) (prev dot)))
  (= count (initnext 0 (prev count)))
  (= down (fn (n) (if (== n 0) 0 (+ 1 (down (- n 1))))))
  (on right (= dot (moveRight (prev dot))))
  (on left (= count (foldl (fn (a x) (+ a (down 120))) 0 (range 0 2000))))
)"""
"""An Autumn program whose ``left`` runs until its step budget stops it (lines of
recursive calls, about a tenth of a second or more of work before line 8 fails)."""


def heavy_env():
    """The :data:`HEAVY` program, loaded as ``heavy.sexp``."""
    from tasks.autumn import load
    return load(HEAVY, "heavy.sexp")


def over_budget_env():
    """The :data:`OVER_BUDGET` program, loaded as ``over_budget.sexp``."""
    from tasks.autumn import load
    return load(OVER_BUDGET, "over_budget.sexp")
