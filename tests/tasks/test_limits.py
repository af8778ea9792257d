"""The time limit of a Python environment's step (``tasks.limits``): what the registry
makes is limited, a step or reset over the limit stops with an error naming it, a
limited environment otherwise behaves as the one it wraps, and only the step's own
computing counts (not a busy machine, a garbage collection or waiting)."""

from __future__ import annotations

import gc
import threading
import time

import pytest

from tasks import registry
from tasks.autumn import AutumnEnv
from tasks.limits import (
    STEP_TIME_LIMIT,
    StepLimitExceeded,
    StepTimeLimitExceeded,
    TimeLimited,
    run_limited,
)
from tests.envs import Stuck, Walker, over_budget_env


class SlowReset(Walker):
    """A walker whose reset with seed 13 never returns."""

    def _reset_extra(self, seed: int) -> None:
        while seed == 13:
            pass


CASES = [
    # (case, environment, limit, what is called, the start of the error's message)
    ("step", Stuck, 0.2, lambda env: env.step("left"),
     "step time limit exceeded: Stuck.step ran longer than the limit of 0.2 s"),
    ("reset", SlowReset, 0.15, lambda env: env.reset(13),
     "step time limit exceeded: SlowReset.reset ran longer than the limit of 0.15 s"),
]


@pytest.mark.parametrize(("factory", "limit", "call", "message"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_a_call_over_the_limit_stops_with_the_limit_named_and_play_goes_on(
        scratch_ids, factory, limit, call, message) -> None:
    env_id = scratch_ids("slow")
    registry.register_env(env_id, factory, step_time_limit=limit)
    env = registry.make(env_id)
    assert type(env) is TimeLimited and isinstance(env, factory)
    assert env.step_time_limit == limit
    env.reset(0)
    assert env.step("right").frame[0][1] == "gold"
    with pytest.raises(StepTimeLimitExceeded) as failure:
        call(env)
    assert isinstance(failure.value, StepLimitExceeded)
    assert str(failure.value).startswith(message)
    assert "time limit" in failure.value.plain
    for _ in range(2000):  # no interrupt is left pending for the next calls
        env.step("down")
    assert env.reset(0).frame[0][0] == "gold"


def test_the_registry_limits_python_environments_and_leaves_programs_their_budget(
        scratch_ids) -> None:
    walker, program = scratch_ids("walker"), scratch_ids("program")
    registry.register_env(walker, Walker)
    registry.register_env(program, over_budget_env)
    assert registry.make(walker).step_time_limit == STEP_TIME_LIMIT
    made = registry.make(program)
    assert type(made) is AutumnEnv and made.step_budget > 0


def test_the_limit_holds_in_any_thread() -> None:
    caught: list[BaseException] = []

    def endless() -> None:
        while True:
            pass

    def run() -> None:
        try:
            run_limited(0.1, "endless", endless)
        except StepTimeLimitExceeded as error:
            caught.append(error)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(caught) == 3 and not any(t.is_alive() for t in threads)


@pytest.mark.parametrize("limit", [0, -1.0])
def test_a_limit_that_is_not_positive_is_refused(limit: float) -> None:
    with pytest.raises(ValueError, match="step_time_limit must be a positive number of seconds"):
        TimeLimited(Walker(), limit)


def _compute(seconds: float) -> None:
    """Busy for ``seconds`` of this thread's processor time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_a_busy_process_does_not_end_a_cheap_step() -> None:
    """Four threads hold the interpreter while a step computes for 0.1 s: the step
    takes longer than its 0.2 s limit by the clock, and is not stopped, because the
    limit counts the step's own processor time."""
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass

    spinners = [threading.Thread(target=spin) for _ in range(4)]
    for spinner in spinners:
        spinner.start()
    try:
        began = time.monotonic()
        run_limited(0.2, "cheap", _compute, 0.1)
        took = time.monotonic() - began
    finally:
        stop.set()
        for spinner in spinners:
            spinner.join()
    assert took > 0.2  # the clock alone would have stopped it


def test_garbage_collection_during_a_step_does_not_count() -> None:
    garbage = [[i] for i in range(1_000_000)]

    def collect_for(seconds: float) -> int:
        end, collections = time.thread_time() + seconds, 0
        while time.thread_time() < end:
            gc.collect()
            collections += 1
        return collections

    assert run_limited(0.05, "collecting", collect_for, 0.3) >= 1  # not stopped
    del garbage
    with pytest.raises(StepTimeLimitExceeded):  # computing, not collecting, still counts
        run_limited(0.05, "computing", _compute, 0.3)


def test_waiting_is_not_computing() -> None:
    assert run_limited(0.05, "waiting", time.sleep, 0.2) is None


def test_a_call_after_the_watchdog_went_quiet_is_still_stopped(monkeypatch) -> None:
    """The watchdog sleeps after a quiet spell instead of being woken for every call;
    the first call after it is still watched, and it does not sleep while one runs."""
    from tasks import limits

    monkeypatch.setattr(limits, "WATCH_QUIET", 0.05)
    run_limited(0.2, "cheap", lambda: None)
    deadline = time.monotonic() + 5
    while not (limits._watchdog.sleeping or time.monotonic() > deadline):
        time.sleep(0.01)
    assert limits._watchdog.sleeping
    began = time.monotonic()
    with pytest.raises(StepTimeLimitExceeded):
        run_limited(0.2, "endless", _compute, 10.0)
    assert time.monotonic() - began < 2
