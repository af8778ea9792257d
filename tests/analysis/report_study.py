"""A small stored study whose report numbers can be worked out by hand.

Two planning problems on the test walker (gold walker from the top-left corner; each
goal asks for gold on one cell and black on the start cell, so a step right already
earns half the progress): ``easy`` wants the walker on (1, 0), ``hard`` on (3, 0).
Three counted participants, one excluded participant, an LLM run (with a refused
reply), a second model run twice for the memory index (full history and none), a random
run (planning, and two change-detection attempts: one triggers the change at test step 4,
one never does), and a scripted run's task-DAG episode. Every applied step comes from a
real Episode and goes through the real store, and each episode keeps its outcome as the
server does.
"""

from __future__ import annotations

from records.models import AgentRun, Participant, Study
from records.rows import step_row
from records.store import Store
from tasks import registry
from tasks.worldtest import Episode, Problem
from tests.envs import register_test_envs


def goal_problem(name: str, x: int, difficulty: str, **params) -> Problem:
    return Problem(id=f"test/report-{name}", env_id="test/walker", challenge="planning", seed=0,
                   params={"goal_cells": [[x, 0], [0, 0]], "goal_colours": ["gold", "black"],
                           "horizon": 5, **params}, difficulty=difficulty)


EASY, HARD, CD = "easy", "hard", "cd"
INJECTED = {"cells": [[1, 1]], "colours": ["blue"]}
"""Easy's injected solution: cell (1, 1) turning blue (a click paints it)."""
PROBLEMS = {EASY: goal_problem(EASY, 1, "easy", injected_solution=INJECTED),
            HARD: goal_problem(HARD, 3, "hard"),
            CD: Problem(id="test/report-cd", env_id="test/walker", challenge="cd", seed=0,
                        params={"changed_env_id": "test/walker-changed", "horizon": 20})}
EXPLORE_ID = "dagmap/high-n4"

HUMANS = {
    1: {EASY: ["up", "click 1 1", "go-to-test", "right"],
        HARD: ["go-to-test", "right", "right", "right"]},
    2: {EASY: ["click 2 2", "click 2 2", "reset", "go-to-test", "down", "quit"],
        HARD: ["go-to-test", "right", "quit"]},
    3: {EASY: ["left", "go-to-test", "quit"]},
    4: {EASY: ["go-to-test", "right"]},  # participant excluded for attention checks
}
LLM = {EASY: ["go-to-test", None, "right"], HARD: ["go-to-test", "right", "quit"]}
"""``None`` is a reply that did not parse: logged, not applied."""
MEMORY = {"full": {EASY: ["go-to-test", "right"], HARD: ["go-to-test", "right", "right", "right"]},
          "none": {EASY: ["go-to-test", "down", "quit"],
                   HARD: ["go-to-test", "right", "right", "right"]}}
"""A second model with full history and with the current observation only."""
RANDOM = {EASY: ["click 0 0", "noop", "go-to-test", "right"],
          HARD: ["noop", "go-to-test", "up", "quit"]}
RANDOM_CD = [["go-to-test", "right", "right", "right", "click 0 4", "found-change",
              "choose_frame_4", "submit"],
             ["go-to-test", "noop", "found-change", "choose_frame_1", "submit"]]
EXPLORE = ["down", "up"]


def register_problems() -> None:
    register_test_envs()
    for problem in PROBLEMS.values():
        registry.add_problem(problem, replace=True)


def fill(store: Store) -> None:
    """Write the study into ``store`` and flush it."""
    register_problems()
    with store.session() as session:
        session.add(Study(id="report"))
        session.add_all([Participant(id=p, study_id="report", external_id=f"P{p}",
                                     status="complete") for p in (1, 2, 3)])
        session.add(Participant(id=4, study_id="report", external_id="P4", status="excluded",
                                exclusion_reason="failed 2 attention checks"))
        session.add_all([AgentRun(id=1, study_id="report", agent_kind="llm", model="m-1"),
                         AgentRun(id=2, study_id="report", agent_kind="random"),
                         AgentRun(id=3, study_id="report", agent_kind="scripted"),
                         AgentRun(id=4, study_id="report", agent_kind="llm", model="m-2",
                                  config={"history": "full"}),
                         AgentRun(id=5, study_id="report", agent_kind="llm", model="m-2",
                                  config={"history": "none"})])
    for participant, attempts in HUMANS.items():
        for problem, actions in attempts.items():
            play(store, PROBLEMS[problem], actions, source="input", participant_id=participant)
    for problem, actions in LLM.items():
        play(store, PROBLEMS[problem], actions, source="agent", agent_run_id=1, prompt_tokens=100,
             completion_tokens=5, cost=0.01)
    for run_id, setting in ((4, "full"), (5, "none")):
        for problem, actions in MEMORY[setting].items():
            play(store, PROBLEMS[problem], actions, source="agent", agent_run_id=run_id)
    for problem, actions in RANDOM.items():
        play(store, PROBLEMS[problem], actions, source="agent", agent_run_id=2)
    for actions in RANDOM_CD:
        play(store, PROBLEMS[CD], actions, source="agent", agent_run_id=2)
    play(store, registry.get_problem(EXPLORE_ID), EXPLORE, source="agent", agent_run_id=3)
    store.flush()


def play(store: Store, problem: Problem, actions: list[str | None], study_id: str | None = "report",
         **who) -> None:
    """One attempt: each action applied to a real Episode and written as an event."""
    model = {k: who.pop(k) for k in ("prompt_tokens", "completion_tokens", "cost") if k in who}
    ids = {k: v for k, v in who.items() if k != "source"}
    episode_id = store.start_episode(problem=problem, study_id=study_id, **ids)
    episode = Episode(problem)
    common = {"episode_id": episode_id, "problem_id": problem.id, "study_id": study_id, **who}
    for seq, action in enumerate(actions):
        valid = None if not model else action is not None
        if action is None:
            store.write_event({**common, "seq": seq, "phase": episode.phase, "tick": None,
                               "action": None, "applied": False, "server_time": 1.0,
                               "parse_valid": False, "cost": 0.02, "prompt_tokens": 100,
                               "completion_tokens": 5})
            continue
        step = episode.apply(action)
        store.write_event(step_row(step, seq=seq, server_time=1.0 + seq,
                                          parse_valid=valid, **common, **model))
    store.finish_episode(episode_id, status="done", phase=episode.phase, score=episode.score,
                         info=episode.outcome())
