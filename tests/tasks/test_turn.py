"""The agent turn, through both of its drivers: an attempt played in this process
(game_client.runner.LocalAttempt) and one played through the server's agent API
(game_client.api_client.RemoteAttempt) must end the same way and store the same events
for the same replies (tasks.worldtest.turn.AgentTurns is the one rule both keep)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from game_client.agents import Decision
from game_client.api_client import AgentAPIClient, RemoteAttempt
from game_client.bridge.provider import ProviderError
from game_client.runner import LocalAttempt, play


@dataclass
class Replies:
    """An agent that replies from a script: an action text, ``(None, why)`` for a reply
    that named no action, or a ``ProviderError`` to raise (the provider failed)."""

    script: list[Any]
    kind: str = "scripted"

    def start(self, problem: Any) -> None:
        self.position = 0

    def decide(self, turn: Any) -> Decision:
        if self.position >= len(self.script):
            return Decision("quit", "quit")
        reply = self.script[self.position]
        self.position += 1
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, tuple):
            return Decision(None, "no action here", reply[1], prompt_tokens=7)
        return Decision(reply, f"<action>{reply}</action>", prompt_tokens=7)


@dataclass
class Case:
    challenge: str
    script: list[Any]
    ending: tuple
    """(status, score, turns, invalid, start of the reason or None)."""
    events: list[tuple]
    """(tick, action, applied, parse_valid) of every stored event, in order."""
    limits: dict = field(default_factory=dict)


PLAN = ["go-to-test", "click 4 4", "right", "right", "down", "down"]
CASES = {
    "a plan that reaches the goal scores 1": Case(
        "planning", PLAN, ("done", 1.0, 6, 0, None),
        [(i, a, True, True) for i, a in enumerate(PLAN)]),
    "invalid replies are logged and never step; a streak of them ends the attempt": Case(
        "mfp", ["step", "Right", (None, "no <action> tag in the reply"), "jump"],
        ("abandoned", 0.0, 4, 3, "2 invalid replies in a row"),
        [(None, None, False, False), (0, "right", True, True), (None, None, False, False),
         (None, None, False, False)],
        limits={"max_invalid": 2}),
    "the turn limit abandons an unfinished attempt": Case(
        "mfp", ["right", "left", "right", "left"], ("abandoned", 0.0, 3, 0, "no end after 3 turns"),
        [(0, "right", True, True), (1, "left", True, True), (2, "right", True, True)],
        limits={"max_turns": 3}),
    "an environment that raises ends the attempt as an error": Case(
        "broken", ["right", "click 1 1", "right"],
        ("error", 0.0, 2, 0, "the environment failed on click 1 1: RuntimeError"),
        [(0, "right", True, True), (None, "click 1 1", False, True)]),
    "a step over its step budget ends the attempt as an environment error": Case(
        "over-budget", ["right", "left", "right"],
        ("error", 0.0, 2, 0, "the environment's step went over its step budget, so this "
         "attempt was stopped (the environment needs fixing, not the player) on left: "
         "StepBudgetExceeded: over_budget.sexp:7:29: runtime error: step budget exceeded"),
        [(0, "right", True, True), (None, "left", False, True)]),
    "a Python step over its time limit ends the attempt as an environment error": Case(
        "stuck", ["right", "left", "right"],
        ("error", 0.0, 2, 0, "the environment's step went over its time limit, so this "
         "attempt was stopped (the environment needs fixing, not the player) on left: "
         "StepTimeLimitExceeded: step time limit exceeded: Stuck.step ran longer than the "
         "limit of 0.2 s"),
        [(0, "right", True, True), (None, "left", False, True)]),
    "a provider that fails ends the attempt as an error": Case(
        "cd", ["go-to-test", ProviderError("the provider answered 503")],
        ("error", 0.0, 1, 0, "the model's provider failed: the provider answered 503"),
        [(0, "go-to-test", True, True)]),
    "quit ends the test with 0": Case(
        "cd", ["go-to-test", "quit"], ("done", 0.0, 2, 0, None),
        [(0, "go-to-test", True, True), (1, "quit", True, True)]),
}


def local(problem, live_server, limits):
    return LocalAttempt(problem, store=live_server.store, **limits)


def remote(problem, live_server, limits):
    api = AgentAPIClient(live_server.url, live_server.token())
    return RemoteAttempt.start(api, api.create_run("scripted", None, {}), problem.id, **limits)


DRIVERS = {"local": local, "remote": remote}


def attempt_with(driver, case, problems, live_server):
    """Play ``case`` through one driver: the result and the stored events."""
    attempt = DRIVERS[driver](problems[case.challenge], live_server, case.limits)
    result = play(Replies(case.script), attempt)
    columns = ("tick", "action", "applied", "parse_valid", "source", "phase", "next_phase",
               "score", "frame_hash", "error", "raw_reply", "prompt_tokens")
    events = [tuple(getattr(e, c) for c in columns) for e in live_server.events(result.episode_id)]
    row = live_server.episode(result.episode_id)
    # which process played it (in-process attempts only: game_client/owner.py) differs
    info = {k: v for k, v in row.info.items() if k != "owner"}
    return result, events, (row.status, row.score, row.phase, info)


@pytest.mark.parametrize("name", CASES)
def test_both_drivers_end_and_store_the_same_for_the_same_replies(name, problems, live_server):
    case = CASES[name]
    here, here_events, here_row = attempt_with("local", case, problems, live_server)
    there, there_events, there_row = attempt_with("remote", case, problems, live_server)
    assert (here.status, here.score, here.turns, here.invalid, here.reason) == \
        (there.status, there.score, there.turns, there.invalid, there.reason)
    assert here_events == there_events
    assert here_row == there_row
    status, score, turns, invalid, reason = case.ending
    assert (here.status, here.score, here.turns, here.invalid) == (status, score, turns, invalid)
    assert (here.reason or "").startswith(reason or ""), here.reason
    assert [e[:4] for e in here_events] == case.events
    assert all(e[4] == "agent" for e in here_events)
    assert here_row[:2] == (status, score)
