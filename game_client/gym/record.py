"""Recording Gymnasium episodes in the store, beside people's and models' attempts."""

from __future__ import annotations

import atexit
import contextlib
import json
import signal
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import gymnasium
import numpy as np

from game_client.batch import find_or_create_run
from records.recorder import EpisodeRecorder
from records.schema import RL as KIND


def stored_config(config: dict[str, Any] | None) -> dict[str, Any]:
    """``config`` as the run's row keeps it, JSON: NumPy numbers and arrays as Python's,
    tuples as lists, so that the same hyper-parameters find the same run (a tuple never
    equalled the list it was stored as: each script's start made a new run); a value JSON
    cannot hold is refused in words (it failed as the row was inserted, with its SQL).

    >>> stored_config({"layers": (64, 64), "lr": np.float32(0.5)})
    {'layers': [64, 64], 'lr': 0.5}
    """
    def plain(value: Any) -> Any:
        if isinstance(value, np.generic | np.ndarray):
            return value.tolist()
        raise TypeError(f"config: {type(value).__name__} {value!r:.40} cannot be kept as "
                        "JSON: give numbers, text, true/false, lists or mappings")

    if config is None:
        return {}
    if not isinstance(config, dict):
        raise TypeError(f"config must be a mapping of names to values, not {type(config).__name__}")
    return json.loads(json.dumps(config, default=plain))


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
    script that returns, or fails, without closing its environment: most do), saying so,
    and a SIGTERM where the script keeps Python's default for it (which would end the
    process at once). Before, such an episode was left ``active`` for good.
    """

    def __init__(self, env: gymnasium.Env, db: str, agent: str,
                 config: dict[str, Any] | None = None) -> None:
        super().__init__(env)
        from records.store import Store

        name, config = parse_agent(agent), stored_config(config)
        target = env.unwrapped
        if not hasattr(target, "recorder"):
            raise TypeError(f"{type(target).__name__} is not a gridstudy environment; make one "
                            "with gymnasium.make('gridstudy/...')")
        self.store = Store(db)
        self.agent_run_id = find_or_create_run(
            self.store, KIND, name, {"gym_id": env.spec.id if env.spec else None,
                                     **config})
        limit = target.time_limit
        target.recorder = lambda problem: EpisodeRecorder(
            self.store, problem, agent_run_id=self.agent_run_id,
            info={"max_turns": limit, "max_invalid": limit + 1})
        self._stop = weakref.finalize(self, _stop_recording, target, self.store)
        # at the interpreter's end, before the store's writer stops (when the main thread
        # ends, before the atexit functions: the hook concurrent.futures uses for its own
        # threads)
        getattr(threading, "_register_atexit", atexit.register)(self._stop)
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _end_on_sigterm)  # a scheduler's preemption

    def step(self, action: Any) -> Any:
        with _whole():
            return super().step(action)

    def reset(self, **options: Any) -> Any:
        with _whole():
            return super().reset(**options)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._stop()


class _Steps(threading.local):
    """Whether this thread is inside a step or a reset, and the exit a SIGTERM asked for
    meanwhile."""

    depth = 0
    exit: int | None = None


_steps = _Steps()


@contextlib.contextmanager
def _whole() -> Iterator[None]:
    """A step or a reset, which a SIGTERM does not cut in two: it ends the script after."""
    _steps.depth += 1
    try:
        yield
    finally:
        _steps.depth -= 1
        if not _steps.depth and _steps.exit is not None:
            raise SystemExit(_steps.exit)


def _end_on_sigterm(number: int, _frame: Any) -> None:
    """SIGTERM (a cluster's scheduler preempting the job, ``kill``) ends the script as an
    uncaught exception does (after the step under way, whose rows it would split), so
    that the episode under way is recorded as ended: Python's own default ends the process
    at once, leaving it active. Installed only where the script keeps the default."""
    if _steps.depth:
        _steps.exit = 128 + number
    else:
        raise SystemExit(128 + number)


def _stop_recording(target: Any, store: Any) -> None:
    """End the environment's unfinished episode, as the process ends without closing it
    (nothing when ``close`` did), and write every row."""
    try:
        target._abandon("the process ended before the episode did")
    finally:
        target.recorder = None
        store.close()
