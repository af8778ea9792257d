"""The WorldTest episode: one state machine for every driver.

``interaction -> test (-> select) -> done``. The interaction phase is reward-free: the
environment's own actions, ``reset`` (back to the initial state of the same seed) and
``go-to-test``. The test phase belongs to the problem's challenge
(:mod:`tasks.worldtest.challenge`); change detection adds a ``select`` phase. A challenge
without an interaction phase (task-DAG ``explore`` maps) starts in the test phase.

The episode never knows who drives it: a real-time session calls :meth:`Episode.apply`
once per tick (``noop`` when nobody pressed anything), an agent runner once per model
reply. An action not allowed in the current phase raises ``ValueError`` and changes
nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tasks import registry
from tasks.core import ANSWER_VERBS, INDEXED_VERBS, Action, GridEnv, Observation, parse_action
from tasks.words import join_and
from tasks.worldtest.challenge import Challenge, TestPhase, get
from tasks.worldtest.problem import Problem

INTERACTION, TEST, SELECT, DONE = "interaction", "test", "select", "done"
PHASES = (INTERACTION, TEST, SELECT, DONE)

EnvFactory = Callable[[str], GridEnv]


@dataclass
class Step:
    """What one applied action did."""

    index: int
    """0-based position of this action in the episode (the tick index)."""
    action: str
    """Canonical text of the applied action."""
    phase: str
    """Phase the action was applied in."""
    next_phase: str
    observation: Observation
    done: bool
    score: float | None
    info: dict[str, Any] = field(default_factory=dict)


MOVES = ("up", "down", "left", "right")


def controls_hint(verbs: set[str] | frozenset[str]) -> str:
    """The words for keys and clicks that do something (``verbs``); empty for none. Only
    the arrows that do something are named when not all four do.

    >>> controls_hint({"up", "down", "left", "right", "click", "noop"})
    'Arrow keys move; click a cell to act on it.'
    >>> controls_hint({"up", "click"}), controls_hint({"left", "right"}), controls_hint({"click"})
    ('The up arrow key acts; click a cell to act on it.', 'The left and right arrow keys act.', 'Click a cell to act on it.')
    """
    arrows = [verb for verb in MOVES if verb in verbs]
    if len(arrows) == len(MOVES):
        keys = "Arrow keys move"
    elif arrows:
        named = join_and(arrows)
        keys = f"The {named} arrow key{'s' if len(arrows) > 1 else ''} act{'' if len(arrows) > 1 else 's'}"
    else:
        return "Click a cell to act on it." if "click" in verbs else ""
    return f"{keys}; click a cell to act on it." if "click" in verbs else f"{keys}."


def env_hint(env: GridEnv, allowed: Iterable[str] | None = None) -> str:
    """:func:`controls_hint` for ``env``: of the ``allowed`` verbs (default: all its
    actions), those it reacts to (an Autumn program's handlers, ``reacts_to``; all of
    them for an environment that does not say)."""
    reacts = getattr(env, "reacts_to", None)
    allowed = env.available_actions() if allowed is None else allowed
    return controls_hint({verb for verb in allowed if reacts is None or verb in reacts})


class Episode:
    """One attempt at one problem."""

    def __init__(self, problem: Problem, make_env: EnvFactory = registry.make) -> None:
        self.problem = problem
        self._make_env = make_env
        self.env = make_env(problem.env_id)
        self.test: TestPhase = self._test_phase()
        self.history: list[tuple[str, str]] = []
        """Every applied action as ``(phase, action text)``, in order: enough to replay."""
        self._hints: dict[tuple[str, ...], str] = {}
        """:meth:`hint` by allowed verbs (asked every tick, the same for the same verbs)."""
        self.score: float | None = None
        self.resets = 0
        if self.test.has_interaction_phase:
            self.phase = INTERACTION
            self.observation = self.env.reset(problem.seed)
        else:
            self.phase = TEST
            self.observation = self.test.start()

    def _test_phase(self) -> TestPhase:
        """The challenge's test phase (``challenge``: the problem's challenge)."""
        self.challenge: Challenge = get(self.problem.challenge)
        return self.challenge.phase(self.problem, self._make_env)

    # -- the one entry point ------------------------------------------------------------

    def apply(self, action: Action | str) -> Step:
        """Apply one action in the current phase and say what happened."""
        parsed = parse_action(action)
        refusal = self.refusal(parsed)
        if refusal is not None:
            raise ValueError(refusal)
        phase = self.phase
        if phase == INTERACTION:
            self.observation = self._interact(parsed)
        else:
            result = self.test.apply(parsed)
            self.observation = result.observation
            if result.next_phase is not None:
                self.phase = result.next_phase
            if result.score is not None:
                self.score = result.score
        if self.phase == DONE and self.score is None:
            self.score = 0.0
        step = Step(
            index=len(self.history),
            action=str(parsed),
            phase=phase,
            next_phase=self.phase,
            observation=self.observation,
            done=self.phase == DONE,
            score=self.score if self.phase == DONE else None,
        )
        self.history.append((phase, step.action))
        return step

    def _interact(self, action: Action) -> Observation:
        if action.verb == "reset":
            self.resets += 1
            return self.env.reset(self.problem.seed)
        if action.verb == "go-to-test":
            self.phase = TEST
            return self.test.start()
        return self.env.step(action)

    # -- what a driver asks -------------------------------------------------------------

    def allowed_verbs(self) -> tuple[str, ...]:
        """Verbs allowed now (``click`` and ``choose_*`` stand for their indexed forms)."""
        if self.phase == INTERACTION:
            return (*self.env.available_actions(), "reset", "go-to-test")
        if self.phase == DONE:
            return ()
        return self.test.allowed_verbs(self.phase)

    def allowed_actions(self) -> list[str]:
        """Action texts allowed now, with ``click X Y`` and indexed verbs written out
        as patterns (``click [0-15] [0-15]``, ``choose_option_[0-5]``)."""
        width, height = self.size
        out = []
        for verb in self.allowed_verbs():
            if verb == "click":
                out.append(f"click [0-{width - 1}] [0-{height - 1}]")
            elif verb in ANSWER_VERBS:
                continue  # the study page's answer form, not offered to a player
            elif verb in INDEXED_VERBS:
                out.append(f"{verb}_[0-{self.test.choice_count(verb) - 1}]")
            else:
                out.append(verb)
        return out

    def is_allowed(self, action: Action | str) -> bool:
        """True if ``action`` would be accepted now (indices and cells in range)."""
        try:
            return self.refusal(parse_action(action)) is None
        except ValueError:
            return False

    def refusal(self, action: Action) -> str | None:
        """Why ``action`` would be refused now (naming what is allowed), or None."""
        if self.phase == DONE:
            return f"{action} is not allowed: the episode is over (score {self.score})"
        if action.verb not in self.allowed_verbs():
            return self._refused(action, f"is not allowed in the {self.phase} phase")
        if action.verb == "click":
            width, height = self.size
            if not (0 <= action.x < width and 0 <= action.y < height):
                return self._refused(action, f"is outside the {width}x{height} grid")
        if action.verb in INDEXED_VERBS:
            if not 0 <= action.index < self.test.choice_count(action.verb):
                return self._refused(action, "is out of range")
        return None

    def _refused(self, action: Action, why: str) -> str:
        """A refusal's text, naming what is allowed (written only when refusing: every
        tick asks whether its action is allowed)."""
        return f"{action} {why}; allowed: " + ", ".join(self.allowed_actions())

    @property
    def done(self) -> bool:
        return self.phase == DONE

    @property
    def final_score(self) -> float | None:
        """The score an attempt's record keeps: the episode's score once it is over, and 0
        for an attempt that never finished (docs/metrics.md, challenge scores)."""
        return self.score if self.done else 0.0

    @property
    def size(self) -> tuple[int, int]:
        return self.env.size

    @property
    def frame_rate(self) -> int:
        return self.env.frame_rate

    def view(self) -> dict[str, Any]:
        """Everything a client needs to draw the current state (JSON-serialisable)."""
        allowed = self.allowed_verbs()
        return {
            "problem_id": self.problem.id,
            "challenge": self.problem.challenge,
            "phase": self.phase,
            "tick": len(self.history),
            "frame": self.observation.frame,
            "size": list(self.size),
            "frame_rate": self.frame_rate,
            "allowed": list(allowed),
            "score": self.score if self.done else None,
            "test": self.test.view(self.phase) if self.phase != INTERACTION else None,
            "guide": self.guide(),
            "hint": self.hint(allowed),
            **self.controls(allowed),
        }

    def hint(self, allowed: tuple[str, ...]) -> str:
        """What the keys and clicks do now, in plain words: the moves and clicks the phase
        allows and the environment reacts to (an Autumn program's handlers,
        ``reacts_to``; every allowed one for an environment that does not say)."""
        hint = self._hints.get(allowed)
        if hint is None:
            hint = self._hints[allowed] = env_hint(self.env, allowed)
        return hint

    def guide(self) -> str:
        """What a participant is told to do now (the challenge's guide for this phase)."""
        return self.challenge.guide.get(self.phase, "")

    def controls(self, allowed: tuple[str, ...]) -> dict[str, Any]:
        """The challenge's buttons and keys for the ``allowed`` verbs (none outside the
        test)."""
        if self.phase == INTERACTION or self.done:
            return {"buttons": [], "keys": {}}
        return self.challenge.controls(allowed)

    def outcome(self) -> dict[str, Any]:
        """What the episode's record keeps about the attempt: actions applied, resets,
        and the test phase's own outcome as ``test_*`` (``test_t_star``,
        ``test_triggered``, ``test_chosen`` ...) once the test has begun."""
        info: dict[str, Any] = {"steps": len(self.history), "resets": self.resets}
        if self.phase != INTERACTION:
            info.update({f"test_{name}": value for name, value in self.test.outcome().items()})
        return info

    # -- replay -------------------------------------------------------------------------

    @classmethod
    def replay(
        cls,
        problem: Problem,
        actions: Iterable[str],
        make_env: EnvFactory = registry.make,
    ) -> Episode:
        """Rebuild an episode by applying logged actions in order (resume and audit)."""
        episode = cls(problem, make_env)
        for action in actions:
            episode.apply(action)
        return episode
