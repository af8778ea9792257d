"""A model on the participants' clock (``--clock realtime``): the same session and
scheduler a participant plays under, so that while the stand-in model "thinks" the
clock applies automatic no-ops, and the stored events look like a participant's."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from bench.standin import FakeOpenAI, Stall
from study_server.cli import main
from tasks import registry
from tasks.worldtest.problem import Problem
from tasks.worldtest.turn import resumable
from tests.game_client.test_agent_run import rows

SLOW = Problem("test/walker-planning-slow", "test/walker", "planning", 0,
               params={"goal_cells": [[2, 1]], "goal_colours": ["gold"], "horizon": 400})
THINK = 0.4


@pytest.fixture
def slow_problem(registered):
    registry.add_problem(SLOW, replace=True)
    yield SLOW
    registry.unregister(problem_id=SLOW.id)


def run(db, script, *args):
    with FakeOpenAI(script) as fake:
        result = CliRunner().invoke(main, [
            "agent", "run", "--problems", SLOW.id, "--db", str(db), "--retries", "0", "--quiet",
            "--model", "m", "--clock", "realtime", *args],
            env={"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"})
    return result, fake


def test_the_clock_applies_noops_while_the_model_thinks(tmp_path, slow_problem):
    replies = ["go-to-test", "right", "right", "down"]
    result, fake = run(tmp_path / "r.db", [Stall(THINK, f"<action>{a}</action>") for a in replies])
    assert result.exit_code == 0, result.stderr
    runs, episodes, events = rows(tmp_path / "r.db")
    assert runs[0].config["clock"] == "realtime" and episodes[0].info["clock"] == "realtime"
    assert (episodes[0].status, episodes[0].score) == ("done", 1.0)
    assert [e.action for e in events if e.source == "agent"] == replies
    # like a participant's record: one applied action per tick, in order, with the
    # clock's no-ops between the inputs
    assert [e.tick for e in events] == list(range(len(events)))
    assert [e.seq for e in events] == list(range(len(events)))
    rate = registry.make("test/walker").frame_rate
    agent_rows = [i for i, e in enumerate(events) if e.source == "agent"]
    for before, after in zip(agent_rows, agent_rows[1:]):
        gap = events[before + 1:after]
        assert gap and {e.action for e in gap} == {"noop"} and {e.source for e in gap} == {"auto"}
        assert len(gap) >= int(THINK * rate * 0.5), (len(gap), THINK * rate)
    # each model turn's reply and latency are on the event of the tick that applied it
    for index in agent_rows:
        row = events[index]
        assert row.raw_reply.startswith("<action>") and row.latency >= THINK * 0.9
        assert row.prompt and row.parse_valid is not False
    first = events[agent_rows[0]]
    assert first.system_prompt  # the first turn carries the system prompt
    assert len(fake.requests) == len(replies)


def test_an_invalid_reply_is_recorded_and_the_clock_goes_on(tmp_path, slow_problem):
    script = [Stall(THINK, "I am not sure yet."), *[Stall(THINK, f"<action>{a}</action>")
                                                    for a in ("go-to-test", "right", "right", "down")]]
    result, _ = run(tmp_path / "r.db", script)
    assert result.exit_code == 0, result.stderr
    _, episodes, events = rows(tmp_path / "r.db")
    invalid = [e for e in events if not e.applied]
    assert len(invalid) == 1 and invalid[0].raw_reply == "I am not sure yet."
    assert invalid[0].source == "agent" and invalid[0].tick is None
    assert episodes[0].score == 1.0
    applied_before = [e for e in events if e.applied and e.seq < invalid[0].seq]
    assert applied_before and all(e.source == "auto" for e in applied_before)


def test_an_interrupted_realtime_attempt_is_not_continued():
    assert resumable("interrupted", {"resumable": False}) is False
    assert resumable("interrupted", {}) is True
    assert resumable("error", {"resumable": True}) is True


def test_realtime_does_not_go_through_a_server(tmp_path, slow_problem):
    result, _ = run(tmp_path / "r.db", [], "--server", "http://127.0.0.1:9", "--token", "t")
    assert result.exit_code == 2 and "--clock realtime plays in this process" in result.stderr


@pytest.mark.parametrize("replies, limit, reason", [
    (["<action>noop</action>"] * 3, ("--max-turns", "3"), "no end after 3 turns"),
    (["I am not sure yet."] * 2, ("--max-invalid", "2"), "2 invalid replies in a row"),
])
def test_both_clocks_end_an_attempt_by_the_one_turn_rule(tmp_path, slow_problem, replies, limit,
                                                         reason):
    ended = {}
    for clock in ("turns", "realtime"):
        result, _ = run(tmp_path / f"{clock}.db", replies, *limit, "--clock", clock)
        assert result.exit_code == 0, result.stderr
        _, episodes, _ = rows(tmp_path / f"{clock}.db")
        info = episodes[0].info
        ended[clock] = (episodes[0].status, info["reason"], info["turns"], info["invalid"])
    assert ended["turns"] == ended["realtime"]
    assert ended["turns"][:2] == ("abandoned", reason)


def test_a_realtime_attempt_shows_the_model_what_a_turn_based_one_does(slow_problem):
    from game_client.realtime import RealtimeAttempt
    from game_client.runner import LocalAttempt

    on_clock, by_turns = RealtimeAttempt(SLOW), LocalAttempt(SLOW)
    try:
        shown, expected = on_clock.state(), by_turns.state()
    finally:
        on_clock.end("interrupted", "the test is over")
    assert set(shown) == set(expected) | {"refused"}
    assert (shown["protocol"], shown["goal_format"], shown["actions"]) == \
        (expected["protocol"], expected["goal_format"], expected["actions"])
    assert on_clock.summary()["status"] == "interrupted"
    assert on_clock.summary()["resumable"] is False
