"""Recording Gymnasium episodes in the store, beside people's and models' attempts."""

from __future__ import annotations

import atexit
import threading
import weakref
from typing import Any

import gymnasium

from game_client.batch import find_or_create_run
from records.recorder import EpisodeRecorder
from records.schema import RL as KIND


def parse_agent(agent: str) -> str:
    """The NAME of ``rl:NAME``; ``ValueError`` saying what is expected otherwise.

    >>> parse_agent("rl:qlearning")
    'qlearning'
    """
    kind, _, name = agent.partition(":")
    if kind != KIND or not name.strip():
        raise ValueError(f"agent {agent!r} must be written rl:NAME (rl:qlearning, rl:ppo ...)")
    return name.strip()


class RecordEpisodes(gymnasium.Wrapper):
    """Writes every episode of ``env`` (a gridstudy environment, wrapped or not) into the
    store at ``db`` as an attempt of the agent run ``rl:NAME``: the same rows, written by
    the same :class:`records.recorder.EpisodeRecorder`, as people's and models' attempts,
    so ``gridstudy report`` shows ``rl:NAME`` beside them.

    ``config`` is what the run's row keeps (hyper-parameters, say); runs with the same
    name and config are one run. ``close()`` ends an unfinished episode (abandoned) and
    waits until every row is written; so does the process's end without it (a training
    script that returns, or fails, without closing its environment: most do), saying so.
    Before, such an episode was left ``active`` for good.
    """

    def __init__(self, env: gymnasium.Env, db: str, agent: str,
                 config: dict[str, Any] | None = None) -> None:
        super().__init__(env)
        from records.store import Store

        name = parse_agent(agent)
        target = env.unwrapped
        if not hasattr(target, "recorder"):
            raise TypeError(f"{type(target).__name__} is not a gridstudy environment; make one "
                            "with gymnasium.make('gridstudy/...')")
        self.store = Store(db)
        self.agent_run_id = find_or_create_run(
            self.store, KIND, name, {"gym_id": env.spec.id if env.spec else None,
                                     **(config or {})})
        limit = target.time_limit
        target.recorder = lambda problem: EpisodeRecorder(
            self.store, problem, agent_run_id=self.agent_run_id,
            info={"max_turns": limit, "max_invalid": limit + 1})
        self._stop = weakref.finalize(self, _stop_recording, target, self.store)
        # at the interpreter's end, before the store's writer stops (when the main thread
        # ends, before the atexit functions: the hook concurrent.futures uses for its own
        # threads)
        getattr(threading, "_register_atexit", atexit.register)(self._stop)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._stop()


def _stop_recording(target: Any, store: Any) -> None:
    """End the environment's unfinished episode, as the process ends without closing it
    (nothing when ``close`` did), and write every row."""
    try:
        target._abandon("the process ended before the episode did")
    finally:
        target.recorder = None
        store.close()
