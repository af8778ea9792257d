"""Every library problem as a Gymnasium environment (RL agents as the third kind of player).

Importing this package registers every problem of the library (and of the user's
``$GRIDSTUDY_LIBRARY``) with Gymnasium, as Minigrid does::

    import gymnasium
    import game_client.gym
    env = gymnasium.make("gridstudy/ant_trail-planning-v0")

or, with no import, ``gymnasium.make("game_client.gym:gridstudy/ant_trail-planning-v0")``.
The environment is :class:`game_client.gym.env.GridstudyEnv` (its docstring gives the
spaces, rewards and info); :class:`RecordEpisodes` writes its episodes into the store.
"""

from __future__ import annotations

import gymnasium

from game_client.gym.env import GridstudyEnv
from game_client.gym.record import RecordEpisodes
from tasks import registry
from tasks.worldtest.problem import gym_id

__all__ = ["GridstudyEnv", "RecordEpisodes", "gym_id", "register_all"]

ENTRY_POINT = "game_client.gym.env:GridstudyEnv"


def register_all() -> list[str]:
    """Register every problem not yet registered; the ids registered now. A problem whose
    id Gymnasium cannot take (a character outside letters, digits, ``_.-/``) is left out
    with a warning naming it."""
    added = []
    for spec in registry.list_problems():
        try:
            env_id = gym_id(spec.id)
        except ValueError as error:
            gymnasium.logger.warn(str(error))
            continue
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"problem_id": spec.id})
        added.append(env_id)
    return added


register_all()
