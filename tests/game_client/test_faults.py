"""Every way a real provider misbehaves, against the local stand-in, through the real
batch, bridge and store: each fault with the outcome a researcher should see."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlmodel import select

from bench.standin import Drop, Failure, FakeOpenAI, Reply, Stall, Trickle
from game_client.batch import Batch, LocalRecords, pending_jobs
from game_client.bridge.prompts import task_description
from game_client.evaluate import Limits, ModelSpec, llm_run
from records.models import EpisodeRow, Event

SOLVE = ["<action>go-to-test</action>", "<action>right</action>", "<action>right</action>",
         "<action>down</action>"]
CONTEXT = ('{"error": {"message": "This model\'s maximum context length is 8192 tokens, '
           'you requested 9100", "code": "context_length_exceeded"}}')


@dataclass
class Case:
    script: list[Any]
    status: str
    requests: int
    reason: str | None = None
    first: dict[str, Any] = field(default_factory=dict)
    """Fields of the attempt's first event row (a substring for text)."""
    runs: int = 1
    fatal: str | None = None
    timeout: float = 5.0
    """Seconds a whole reply may take: 0.5 for the cases about the timeout only. With 0.5
    for every case, a reply the stand-in was slow to send on a loaded machine (the whole
    suite running) became a timeout and its retries, in a case about something else."""


CASES = {
    "429 with Retry-After is retried": Case(
        [Failure(429, {"Retry-After": "1"}), *SOLVE], "done", 5, first={"retries": 1}),
    "503 is retried": Case([Failure(503), *SOLVE], "done", 5, first={"retries": 1}),
    "a dropped connection is retried": Case([Drop(), *SOLVE], "done", 5, first={"retries": 1}),
    "an HTML page with status 200 is retried": Case(
        [Failure(200, body="<html><body>Bad gateway</body></html>"), *SOLVE], "done", 5,
        first={"retries": 1}),
    "{} with status 200 is retried": Case([Failure(200, body="{}"), *SOLVE], "done", 5,
                                          first={"retries": 1}),
    "a cut-off 200 body is retried": Case(
        [Failure(200, body='{"choices": [{"message": {"content": "<act'), *SOLVE], "done", 5,
        first={"retries": 1}),
    "an empty reply is an invalid turn with its own message": Case(
        [Reply(""), *SOLVE], "done", 5,
        first={"parse_valid": False, "error": "the reply was empty"}),
    "null content with reasoning keeps the reasoning": Case(
        [Reply(None, reasoning="The walker is gold; I should move."), *SOLVE], "done", 5,
        first={"parse_valid": False, "reasoning": "The walker is gold", "error": "empty"}),
    "a refusal is kept as what the model answered": Case(
        [Reply(None, refusal="I can't help with moving the walker."), *SOLVE], "done", 5,
        first={"parse_valid": False, "raw_reply": "I can't help with moving the walker."}),
    "content given as parts is read, its thinking kept as the reasoning": Case(
        [Reply([{"type": "thinking", "thinking": [{"type": "text", "text": "Test first."}]},
                {"type": "text", "text": SOLVE[0]}]), *SOLVE[1:]], "done", 4,
        first={"parse_valid": True, "reasoning": "Test first.", "retries": 0}),
    "a reply cut at the token limit says so": Case(
        [Reply("First I will consider", finish_reason="length"), *SOLVE], "done", 5,
        first={"finish_reason": "length", "error": "cut off at the token limit"}),
    "a 200 KB reply is kept whole": Case(
        ["x" * 200_000 + "<action>go-to-test</action>", *SOLVE[1:]], "done", 4,
        first={"parse_valid": True, "raw_reply": "x" * 1000}),
    "a context-length 400 trims the history and asks again": Case(
        [SOLVE[0], Failure(400, body=CONTEXT), *SOLVE[1:]], "done", 5),
    "5xx on every retry ends the attempt as a resumable error": Case(
        [Failure(500)] * 3, "error", 3, reason="the model's provider failed"),
    "a reply slower than the timeout ends the attempt as an error": Case(
        [Stall(1.5)] * 3, "error", 3, reason="did not answer within", timeout=0.5),
    "a reply cut inside an emoji is kept with U+FFFD and sent back so": Case(
        [Reply("\ud83d<action>go-to-test</action>", reasoning="r\ud83d"), *SOLVE[1:]], "done", 4,
        first={"raw_reply": "\ufffd<action>go-to-test</action>", "reasoning": "r\ufffd"}),
    "a reply trickled a byte at a time past the timeout ends the attempt as an error": Case(
        [Trickle(12, 0.2)] * 3, "error", 3, reason="did not finish its answer within 0.5 s",
        timeout=0.5),
    "a reply trickled within the timeout is taken": Case(
        [Trickle(4, 0.05, SOLVE[0]), *SOLVE[1:]], "done", 4, first={"retries": 0},
        timeout=1.0),
    "token counts no provider could mean are kept as unknown": Case(
        [Reply(SOLVE[0], usage={"prompt_tokens": 2 ** 70, "completion_tokens": -5}), *SOLVE[1:]],
        "done", 4, first={"prompt_tokens": None, "completion_tokens": None, "cost": None}),
    "a finish reason that is not text is kept as unknown": Case(
        [Reply(SOLVE[0], finish_reason={"why": "stop"}), *SOLVE[1:]], "done", 4,
        first={"finish_reason": None, "parse_valid": True}),
    "a reply over 32 MB is retried, not kept in memory": Case(
        [Trickle(33 * 2 ** 20, 0), *SOLVE], "done", 5, first={"retries": 1}),
    "a 429 asking to wait a day ends the attempt as a resumable error at once": Case(
        [Failure(429, {"Retry-After": "86400"})], "error", 1,
        reason="it asks to wait 86400 s before trying again"),
    "a refused key stops the batch at once": Case(
        [Failure(401, body='{"error": {"message": "Incorrect API key provided"}}')],
        "interrupted", 1, runs=3, fatal="the provider refused the key"),
    "a 403 stops the batch at once": Case(
        [Failure(403, body='{"error": {"message": "project not allowed"}}')],
        "interrupted", 1, runs=3, fatal="the provider refused the key"),
    "an unknown model (404) stops the batch at once": Case(
        [Failure(404, body='{"error": {"message": "The model does not exist", '
                           '"code": "model_not_found"}}')],
        "interrupted", 1, runs=3, fatal="unknown model"),
    "an unknown model (400) stops the batch at once": Case(
        [Failure(400, body='{"error": {"message": "The model `fake` does not exist"}}')],
        "interrupted", 1, runs=3, fatal="unknown model"),
}


def run_batch(fake: FakeOpenAI, store: Any, runs: int = 1, timeout: float = 5.0,
              **spec: Any):
    """One model on the planning problem through the real batch, without waiting
    between retries; ``timeout``: seconds a whole reply may take."""
    model = ModelSpec("fake-model", base_url=fake.base_url, api_key_env="FAKE_KEY",
                      retries=2, timeout=timeout, prices={"input": 1.0, "output": 2.0}, **spec)
    run = llm_run(model, Limits(), sleep=lambda seconds: False)
    records = LocalRecords(store)
    run.agent_run_id = records.create_run(run.kind, run.model, run.config)
    jobs = pending_jobs(run, ["test/walker-planning"], runs, records.episodes(run.agent_run_id))
    return Batch(records.open_attempt, progress=False).run(jobs)


def stored(store: Any) -> tuple[list[EpisodeRow], list[Event]]:
    store.flush()
    with store.session() as session:
        return (session.exec(select(EpisodeRow).order_by(EpisodeRow.id)).all(),
                session.exec(select(Event).order_by(Event.episode_id, Event.seq)).all())


@pytest.mark.parametrize("name", CASES)
def test_each_fault_has_its_outcome(name, store, registered, monkeypatch):
    case = CASES[name]
    monkeypatch.setenv("FAKE_KEY", "sk-test")
    with FakeOpenAI(case.script) as fake:
        outcome = run_batch(fake, store, runs=case.runs, timeout=case.timeout)
    episodes, events = stored(store)
    assert len(fake.requests) == case.requests
    assert fake.keys[0] == "Bearer sk-test"
    assert [e.status for e in episodes] == [case.status]  # a fatal fault starts no other
    result = outcome.results[0]
    assert result.status == case.status
    if case.reason:
        assert case.reason in result.reason and case.reason in episodes[0].info["reason"]
    if case.status in ("error", "interrupted"):
        assert episodes[0].info["resumable"] is True and result.resumable
        assert outcome.failed == [result]
    else:
        assert (episodes[0].score, outcome.failed) == (1.0, [])
    assert (outcome.guard.fatal is None) == (case.fatal is None)  # only key and model refusals
    if case.fatal:
        assert case.fatal in outcome.guard.fatal and case.fatal in episodes[0].info["reason"]
    for name_, expected in case.first.items():
        value = getattr(events[0], name_)
        if isinstance(expected, str):
            assert expected in value, (name_, value)
        else:
            assert value == expected, (name_, value)


def test_the_context_window_learned_from_a_refusal_trims_the_oldest_turns(store, registered):
    with FakeOpenAI([SOLVE[0], Failure(400, body=CONTEXT), *SOLVE[1:]]) as fake:
        run_batch(fake, store)
    _, events = stored(store)
    refused, retried = fake.requests[1]["messages"], fake.requests[2]["messages"]
    assert len(refused) == 4 and len(retried) == 2  # system, [turn 1 and its reply], now
    # every later request keeps under the size refused, leaving out more as turns add up
    trimmed = [e.trimmed for e in events]
    assert trimmed[0] is None and trimmed[1:] == sorted(trimmed[1:]) and trimmed[1] == 1

    def size(request):
        return sum(len(m["content"]) for m in request["messages"])

    assert all(size(r) < size(fake.requests[1]) for r in fake.requests[2:])
    # the task is repeated once the first turn, which held it, is left out
    task = task_description("planning")
    assert task in fake.requests[0]["messages"][-1]["content"]
    assert task not in refused[-1]["content"] and task in retried[-1]["content"]


def test_every_turn_keeps_what_was_sent_and_received(store, registered):
    with FakeOpenAI([Reply("<action>go-to-test</action>", reasoning="Test first."),
                     *SOLVE[1:]]) as fake:
        run_batch(fake, store)
    _, events = stored(store)
    first, second = events[0], events[1]
    assert first.system_prompt == fake.requests[0]["messages"][0]["content"]
    assert second.system_prompt is None  # stored once
    assert [e.prompt for e in events] == [r["messages"][-1]["content"] for r in fake.requests]
    assert (first.reasoning, first.finish_reason, first.retries) == ("Test first.", "stop", 0)
    assert all(e.latency is not None and e.latency >= 0 for e in events)
    assert all(e.cost is not None and e.prompt_tokens for e in events)
