"""What a WorldTest challenge is, and the registry every part of gridstudy reads.

A challenge is one module in :mod:`tasks.worldtest` that declares one :class:`Challenge`:
its name and title, the class of its test phase, how its problems are derived from a
library recipe and checked again, what a participant and a model are told, its quiz
questions, and how the analysis reads its episodes. Nothing else in the project names a
challenge: the episode, the drivers, the clients, the consent flow and the report ask
the registry. A new challenge is a new module calling :func:`register` (and, only when
it needs a widget the clients do not have, that widget in ``game.js`` and
:mod:`game_client.render`); the registry imports the modules named in :data:`BUILT_IN`
itself, so a challenge shipped with gridstudy is named there, and one from elsewhere
registers when its own module is imported.

The built-in challenges (``mfp``, ``planning``, ``cd``, ``explore``) register when
this registry is first read, so importing one module never depends on import order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from tasks.core import Action, GridEnv, Observation

if TYPE_CHECKING:
    from tasks.worldtest.problem import Problem

TEST, SELECT, DONE = "test", "select", "done"
EnvFactory = Callable[[str], GridEnv]
BUILT_IN = ("mfp", "planning", "cd", "explore")
"""The modules of the built-in challenges, in the order they register."""

# Analysis readings a challenge may declare (docs/metrics.md).
MATCH, SUBGOAL = "match", "subgoal"
"""Progress-rate forms (001): goal-cell colours matched, or task-DAG nodes achieved."""
REACHES_GOAL, TRIGGERS_CHANGE, PICKS_OPTION = "goal", "trigger", "chance"
"""Random-baseline readings (002 Table E.3): the chance a random agent reaches the goal,
triggers the change, or picks the right option."""
WORLDTEST_PROMPT, TASK_DAG_PROMPT = "worldtest", "task-dag"
"""How a language model is prompted: the AutumnBench text interface, or the task-DAG
map's own prompts."""


@dataclass
class Result:
    """What one test-phase action did: the observation, the phase it leads to (None: stay)
    and the score when it ends the episode."""

    observation: Observation
    next_phase: str | None = None
    score: float | None = None


class TestPhase:
    """Base class: what happens after ``go-to-test``, which verbs are allowed, and the
    score. ``noop`` is allowed in every phase that is not over, because a real-time
    session applies it on every tick without input."""

    has_interaction_phase = True
    __test__ = False  # not a test class, whatever pytest guesses from its name

    def __init__(self, problem: Problem, make_env: EnvFactory) -> None:
        self.problem = problem
        self.make_env = make_env
        self.params = problem.params

    def start(self) -> Observation:
        raise NotImplementedError

    def allowed_verbs(self, phase: str) -> tuple[str, ...]:
        raise NotImplementedError

    def apply(self, action: Action) -> Result:
        raise NotImplementedError

    def choice_count(self, verb: str) -> int:
        return 0

    def view(self, phase: str) -> dict[str, Any]:
        """What the clients draw. ``kind`` names the widget that shows it; a client that
        has no such widget shows the grid and the challenge's buttons."""
        return {"kind": self.problem.challenge}

    def outcome(self) -> dict[str, Any]:
        """What the episode's record keeps about how this test went (JSON values)."""
        return {}


def env_verbs(env: GridEnv) -> tuple[str, ...]:
    return tuple(env.available_actions())


@dataclass(frozen=True)
class Question:
    """A multiple-choice comprehension question."""

    id: str
    text: str
    choices: tuple[str, ...]
    answer: int
    """Index of the right choice."""


class HarnessRules:
    """How the published AutumnBench harness presents a challenge's test where it differs
    from gridstudy (the ``autumnbench`` protocol, :mod:`tasks.worldtest.protocol`, plays
    by them); this base presents it as gridstudy does."""

    def offered(self, texts: list[str], test: dict[str, Any], phase: str,
                list_each_choice: bool) -> list[str]:
        """The actions offered in the test (gridstudy's texts, indexed ones written out
        when ``list_each_choice``)."""
        return texts

    noop_in_test = True
    """A reply naming no action is played as ``noop`` in the test too."""

    def does_nothing(self, text: str) -> bool:
        """An offered test action the harness answers with nothing."""
        return False

    def follow_up(self, applied: str) -> list[str]:
        """Actions the harness applies after ``applied`` in the test."""
        return []

    def score(self, score: float, outcome: Mapping[str, Any],
              answered: int | None = None) -> float:
        """The harness's score of a finished attempt (gridstudy's ``score`` in [0, 1]
        and the test's outcome, its keys prefixed ``test_``); ``answered``: the number
        of test turns before the submit, where the harness's code reads the answer
        there (:meth:`tasks.worldtest.protocol.Protocol.score`)."""
        return score


Checker = Callable[["Problem", GridEnv, int, int, EnvFactory], list[str]]
"""``(problem, env, samples, rng_seed, make_env) -> reasons``; see
:func:`tasks.worldtest.check.check_problem`."""
RecipeBuilder = Callable[..., "Problem"]
"""``(env_id, changed_env_id, seed, recipe, *, problem_id, samples) -> Problem``."""
Oracle = Callable[["Problem", Mapping[str, Any]], list[str]]
"""``(problem, limits) -> actions``: a plan for the planner agent, from ``go-to-test``
on; ``limits`` holds the planner's ``clicks``, ``max_depth`` and ``max_states``."""


@dataclass(frozen=True)
class Challenge:
    """One challenge, as every part of gridstudy reads it."""

    name: str
    """The short name stored in problem files and every record (``mfp``)."""
    title: str
    """What a reader calls it (``masked frame prediction``)."""
    phase: type[TestPhase]
    goal: str
    """For participants, what the test asks, as a phrase (``predict hidden parts of a
    recording``)."""
    how: str
    """For participants, one sentence on how to answer in the game."""
    model_task: str
    """For a model, the test described after 'In the test phase, '."""
    model_details: Callable[[dict[str, Any]], str] | None = None
    """Extra text a model needs each test turn (goal grid, options), from the state."""
    model_frame: Callable[[dict[str, Any]], str | None] | None = None
    """The test turn's observation as a model is shown it, when the challenge shows it
    otherwise than the frame's text (None from it: the frame's text)."""
    prompt_style: str = WORLDTEST_PROMPT
    questions: tuple[Question, ...] = ()
    """The quiz questions a participant answers before meeting this challenge."""
    buttons: Mapping[str, str] = field(default_factory=dict)
    """Verb -> label of a button the clients show while the verb is allowed."""
    guide: Mapping[str, str] = field(default_factory=dict)
    """For participants, what to do now, in plain words, per phase (``interaction``,
    ``test``, ``select``): shown beside the grid while they play."""
    keys: Mapping[str, str] = field(default_factory=dict)
    """Key name (as pygame names it) -> verb, in the local client."""
    check: Checker | None = None
    from_recipe: RecipeBuilder | None = None
    """How the library derives this challenge's problem from an ``env.json`` recipe."""
    harness_rules: str | None = None
    """``"module:attribute"``: the :class:`HarnessRules` of the published harness for this
    challenge (None: as gridstudy presents it)."""
    harness: str | None = None
    """``"module:function"``: how an AutumnBench harness folder's files for this
    challenge become a problem, ``(folder, env, colours, make_env) -> Problem``
    (:mod:`tasks.importer` asks; imported only when a folder is read)."""
    oracle: Oracle | None = None
    progress: str | None = None
    """The progress-rate form (``MATCH`` or ``SUBGOAL``), None where undefined."""
    baseline: str | None = None
    """The random-baseline reading, None where there is none."""
    scored_by_steps: bool = False
    """Success comes at a test step (AUV, loop ratio and memory index apply)."""

    def controls(self, allowed: tuple[str, ...]) -> dict[str, Any]:
        """The buttons and keys of the allowed verbs, for a client's view."""
        return {"buttons": [[verb, label] for verb, label in self.buttons.items() if verb in allowed],
                "keys": {key: verb for key, verb in self.keys.items() if verb in allowed}}


EXPLORE_FREELY = ("Explore freely: try the controls named above to find out how this world "
                  "works. Nothing is scored yet. Reset starts the world again. When you think "
                  "you understand it, press Go to test.")
"""What every challenge with an interaction phase says during it. It names no key: the
status line above it names those the world reacts to (``Episode.hint``), and a world
that reacts to clicks alone was told to try the arrow keys."""
GIVE_UP = "Give up"
"""The label of the button that ends a test early (the ``quit`` verb; it scores 0)."""

_REGISTRY: dict[str, Challenge] = {}
_loaded = False


def register(challenge: Challenge, *, replace: bool = False) -> Challenge:
    """Add ``challenge``; a second registration under the same name needs ``replace``."""
    if challenge.name in _REGISTRY and not replace:
        raise ValueError(f"challenge {challenge.name!r} is already registered")
    _REGISTRY[challenge.name] = challenge
    return challenge


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def _load_built_in() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for name in BUILT_IN:
            import_module(f"tasks.worldtest.{name}")


def challenges() -> Mapping[str, Challenge]:
    """Every registered challenge by name, in registration order."""
    _load_built_in()
    return MappingProxyType(_REGISTRY)


def names() -> tuple[str, ...]:
    return tuple(challenges())


def get(name: str) -> Challenge:
    """The challenge called ``name``; ``ValueError`` names the registered ones."""
    found = challenges().get(name)
    if found is None:
        raise ValueError(f"unknown challenge {name!r}; expected one of {', '.join(names())}")
    return found


def harness_rules(name: str) -> HarnessRules:
    """The published harness's rules for the challenge ``name``."""
    from tasks.registry import load_entry_point

    where = get(name).harness_rules
    return load_entry_point(where) if where else _AS_GRIDSTUDY


_AS_GRIDSTUDY = HarnessRules()
