"""Free play of a bare environment: no challenge, no test phase.

``gridstudy play ENV_ID`` lets the author of an environment poke at it. A
:class:`Sandbox` is an :class:`~tasks.worldtest.Episode` whose only phase is the
interaction phase, with ``reset`` and ``quit`` and no ``go-to-test``, so the game loop,
the pygame front end and the recorder drive it without asking which of the two it is.
Nothing is scored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tasks import registry
from tasks.core import Action, GridEnv, Observation
from tasks.worldtest.episode import DONE, Episode


@dataclass(frozen=True)
class SandboxProblem:
    """The fields of a problem that a sandbox has (the store keeps these four)."""

    id: str
    env_id: str
    seed: int
    challenge: str = "sandbox"


class _NoTest:
    has_interaction_phase = True

    def view(self, phase: str) -> None:
        return None

    def outcome(self) -> dict[str, Any]:
        return {}


class Sandbox(Episode):
    """One environment played from ``seed`` with ``reset`` and ``quit``."""

    def __init__(
        self, env_id: str, seed: int = 0, make_env: Callable[[str], GridEnv] = registry.make
    ) -> None:
        super().__init__(SandboxProblem(env_id, env_id, seed), make_env)

    def _test_phase(self) -> _NoTest:
        return _NoTest()  # no challenge: only the interaction phase, from the seed

    def allowed_verbs(self) -> tuple[str, ...]:
        if self.phase == DONE:
            return ()
        return (*self.env.available_actions(), "reset", "quit")

    def _interact(self, action: Action) -> Observation:
        if action.verb == "quit":
            self.phase = DONE
            return self.observation
        observation = super()._interact(action)
        if observation.done:
            self.phase = DONE
        return observation

    @property
    def final_score(self) -> None:
        """Free play is never scored."""
        return None

    def guide(self) -> str:
        return "Free play: nothing is scored. Reset starts the world again."

    def view(self) -> dict[str, Any]:
        return {**super().view(), "score": None}
