"""A small but complete stored study, for the export and load tests.

Two studies; a participant who completed, one excluded for attention checks; an LLM run
with per-turn model fields and one reply that did not parse; a random run that was
abandoned; an attempt excluded on its own. Every applied step comes from a real Episode.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import update

from records.models import AgentRun, EpisodeRow, Participant, Signal, Study
from records.rows import step_row
from records.store import Store
from tasks.core import frame_hash
from tasks.worldtest import Episode, Problem
from tests.envs import register_test_envs

PLAN = Problem(
    id="test/walker-plan",
    env_id="test/walker",
    challenge="planning",
    seed=3,
    params={"goal_cells": [[2, 0]], "goal_colours": ["gold"], "horizon": 10},
)
FAR = Problem(
    id="test/walker-plan-far",
    env_id="test/walker",
    challenge="planning",
    seed=4,
    params={"goal_cells": [[4, 4]], "goal_colours": ["gold"], "horizon": 3},
)


@dataclass(frozen=True)
class Sample:
    """Episode ids of the sample, by role."""

    human: int
    excluded_participant: int
    llm: int
    abandoned: int
    excluded_attempt: int
    frames: dict[str, list[list[str]]]
    """Every frame written, by hash."""


def play(store: Store, episode_id: int, problem: Problem, actions: list[str],
         frames: dict, **who) -> Episode:
    """Apply ``actions`` to a fresh Episode, writing one event per step."""
    episode = Episode(problem)
    for seq, action in enumerate(actions):
        step = episode.apply(action)
        record = step_row(step, episode_id=episode_id, seq=seq, problem_id=problem.id,
                                 server_time=1000.0 + seq / 8, **who)
        frames[frame_hash(record["frame"])] = step.observation.frame
        store.write_event(record)
    return episode


def fill(store: Store) -> Sample:
    """Write the sample study into ``store`` and flush it."""
    register_test_envs()
    with store.session() as session:  # first, for PostgreSQL's foreign keys
        session.add_all([Study(id="pilot"), Study(id="other")])
    with store.session() as session:
        session.add_all([
            Participant(id=1, study_id="pilot", external_id="P1", status="complete"),
            Participant(id=2, study_id="pilot", external_id="P2", status="excluded",
                        exclusion_reason="failed 2 attention checks"),
            AgentRun(id=1, study_id="pilot", agent_kind="llm", model="m-1",
                     config={"temperature": 0}),
            AgentRun(id=2, study_id="other", agent_kind="random"),
        ])
    frames: dict = {}
    human = _human(store, 1, ["right", "go-to-test", "right", "right"], frames)
    store.write_raw_input({"episode_id": human, "participant_id": 1, "received_at": 1000.1,
                           "client_time": 1000.05, "text": "left", "status": "dropped",
                           "reason": "second input in one tick"})
    with store.session() as session:
        session.add_all([
            Signal(participant_id=1, study_id="pilot", stage="task", episode_id=human,
                   kind="device", server_time=1000.0,
                   value={"user_agent": "Chromium", "window": [1280, 720]}),
            Signal(participant_id=1, study_id="pilot", stage="task", episode_id=human,
                   kind="shown", server_time=1010.0, client_time=1009.9, seconds=4.5),
        ])
    excluded_participant = _human(store, 2, ["down", "go-to-test", "quit"], frames)
    llm = _llm(store, frames)
    abandoned = store.start_episode(problem=FAR, study_id="other", agent_run_id=2)
    play(store, abandoned, FAR, ["noop", "click 1 1"], frames, source="agent",
         study_id="other", agent_run_id=2)
    store.finish_episode(abandoned, status="abandoned", phase="interaction", score=None)
    excluded_attempt = _human(store, 1, ["noop", "noop", "go-to-test", "quit"], frames)
    with store.session() as session:
        session.execute(update(EpisodeRow).where(EpisodeRow.id == excluded_attempt)
                        .values(included=False, exclusion_reason="idle for 130 s"))
    store.flush()
    return Sample(human, excluded_participant, llm, abandoned, excluded_attempt, frames)


def _human(store: Store, participant: int, actions: list[str], frames: dict) -> int:
    episode_id = store.start_episode(problem=PLAN, study_id="pilot", participant_id=participant)
    episode = play(store, episode_id, PLAN, actions, frames, source="input",
                   study_id="pilot", participant_id=participant, client_time=999.5)
    store.finish_episode(episode_id, status="done", phase=episode.phase, score=episode.score,
                         info={"resets": episode.resets})
    return episode_id


def _llm(store: Store, frames: dict) -> int:
    episode_id = store.start_episode(problem=PLAN, study_id="pilot", agent_run_id=1)
    who = {"source": "agent", "study_id": "pilot", "agent_run_id": 1}
    episode = play(store, episode_id, PLAN, ["go-to-test", "right"], frames, **who,
                   prompt_tokens=120, completion_tokens=4, cost=0.00025, raw_reply="right",
                   parse_valid=True, latency=0.75)
    store.write_event({"episode_id": episode_id, "seq": 2, "problem_id": PLAN.id,
                       "phase": episode.phase, "tick": None, "action": None, "applied": False,
                       "server_time": 1002.0, "prompt_tokens": 130, "completion_tokens": 9,
                       "cost": 0.0003, "raw_reply": "I jump!", "parse_valid": False,
                       "latency": 1.5, **who})
    step = episode.apply("right")
    store.write_event(step_row(step, episode_id=episode_id, seq=3, problem_id=PLAN.id,
                                      server_time=1003.0, raw_reply="right", parse_valid=True,
                                      **who))
    store.finish_episode(episode_id, status="done", phase=step.next_phase, score=step.score)
    return episode_id
