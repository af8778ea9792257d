"""The LLM bridge end to end: the real provider over HTTP to a local fake endpoint, the
real runner and store."""

from __future__ import annotations

import pytest
from sqlmodel import select

from bench.standin import Failure, FakeOpenAI, Stall
from game_client.agents import ScriptedAgent
from game_client.bridge.agent import LLMAgent
from game_client.bridge.provider import (
    Backoff,
    ChatProvider,
    Limiter,
    Prices,
    PriceTable,
    ProviderError,
)
from game_client.loop import GameLoop
from game_client.runner import run_episode
from records.models import EpisodeRow, Event
from records.recorder import EpisodeRecorder
from tasks.worldtest.episode import Episode
from tests.game_client.conftest import CD, MFP, PLANNING

MODEL = "fake-model"
PRICES = PriceTable({MODEL: Prices(input=1.0, output=2.0)})


def tagged(*actions: str) -> list[str]:
    return [f"Thinking... <action>{a}</action>" for a in actions]


class FakeTime:
    """A clock that moves only when slept on, and the sleeps it was asked for."""

    def __init__(self, sleeps: list) -> None:
        self.now, self.sleeps = 0.0, sleeps

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def provider(fake: FakeOpenAI, sleeps: list | None = None, **options) -> ChatProvider:
    options.setdefault("backoff", Backoff(base=0.5, cap=4.0, jitter=0.0, retries=2))
    time = FakeTime([] if sleeps is None else sleeps)
    return ChatProvider(MODEL, base_url=fake.base_url, api_key="test-key", prices=PRICES,
                        sleep=time.sleep, limiter=Limiter(clock=time.clock), **options)


def events_and_row(store, episode_id):
    store.flush()
    with store.session() as session:
        events = session.exec(select(Event).where(Event.episode_id == episode_id)
                              .order_by(Event.seq)).all()
        return events, session.get(EpisodeRow, episode_id)


EPISODES = {
    "mfp": (MFP, ["go-to-test", "step", "step", "step", "choose_option_1", "submit"], 1.0),
    "planning": (PLANNING, ["go-to-test", "right", "right", "down"], 1.0),
    "cd": (CD, ["go-to-test", "right", "right", "right", "click 0 4", "found-change",
                "choose_frame_3", "submit"], 1.0),
}


@pytest.mark.parametrize("challenge", sorted(EPISODES))
def test_a_model_plays_a_full_episode(challenge, store):
    problem, actions, score = EPISODES[challenge]
    with FakeOpenAI(tagged(*actions)) as fake:
        result = run_episode(LLMAgent(provider(fake)), problem, store=store)
    assert (result.status, result.score, result.turns, result.invalid) == ("done", score, len(actions), 0)
    events, row = events_and_row(store, result.episode_id)
    assert [e.action for e in events] == actions
    assert [e.tick for e in events] == list(range(len(actions)))
    assert all(e.parse_valid and e.source == "agent" and e.raw_reply.endswith("</action>")
               for e in events)
    first = fake.requests[0]
    assert first["model"] == MODEL and first["messages"][0]["role"] == "system"
    assert "# Task Description:" in first["messages"][1]["content"]
    assert len(fake.requests[-1]["messages"]) == 1 + 2 * (len(actions) - 1) + 1  # full history
    expected_cost = sum((e.prompt_tokens * 1.0 + e.completion_tokens * 2.0) / 1e6 for e in events)
    assert result.cost == pytest.approx(expected_cost) and events[0].cost > 0
    assert (row.status, row.score, row.info["invalid"]) == ("done", score, 0)


def test_malformed_replies_are_logged_counted_and_never_step(store):
    replies = ["I would go up.", "<action>jump</action>", "<action>step</action>",
               "<ACTION> `Go-To-Test` </ACTION>", *tagged("right", "right", "down")]
    with FakeOpenAI(replies) as fake:
        result = run_episode(LLMAgent(provider(fake)), PLANNING, store=store)
    assert (result.status, result.score, result.turns, result.invalid) == ("done", 1.0, 7, 3)
    assert result.grounding == pytest.approx(4 / 7)
    events, _ = events_and_row(store, result.episode_id)
    assert [(e.action, e.tick, e.applied, e.parse_valid) for e in events[:4]] == [
        (None, None, False, False), (None, None, False, False), (None, None, False, False),
        ("go-to-test", 0, True, True)]
    assert events[0].raw_reply == "I would go up." and "no <action>" in events[0].error
    assert "'jump'" in events[1].error
    assert "step is not available now" in events[2].error
    assert events[0].frame_hash is None
    second_prompt = fake.requests[1]["messages"][-1]["content"]
    assert second_prompt.startswith("Your previous reply was not applied, and nothing changed: "
                                    "the reply has no <action>")


def test_consecutive_invalid_replies_end_the_episode(store):
    with FakeOpenAI(["nothing"] * 3) as fake:
        result = run_episode(LLMAgent(provider(fake)), MFP, store=store, max_invalid=3)
    assert (result.status, result.score, result.turns, result.invalid) == ("abandoned", 0.0, 3, 3)
    _, row = events_and_row(store, result.episode_id)
    assert (row.status, row.score, row.info["reason"]) == ("abandoned", 0.0, "3 invalid replies in a row")


def test_a_429_is_retried_after_retry_after(store):
    sleeps = []
    script = [Failure(429, {"Retry-After": "3"}), Failure(503), *tagged("go-to-test", "right", "right", "down")]
    with FakeOpenAI(script) as fake:
        result = run_episode(LLMAgent(provider(fake, sleeps)), PLANNING, store=store)
    assert (result.status, result.score, result.invalid) == ("done", 1.0, 0)
    assert sleeps == [3.0, 1.0]  # Retry-After beats 0.5 s; then 0.5 * 2**1
    assert len(fake.requests) == 6


def test_retries_give_up_with_the_servers_message():
    with FakeOpenAI([Failure(500)] * 3) as fake, pytest.raises(ProviderError) as caught:
        provider(fake).complete([{"role": "user", "content": "hi"}])
    assert "answered 500" in str(caught.value) and "after 3 attempts" in str(caught.value)
    with FakeOpenAI([Failure(401, body='{"error": "bad key"}')]) as fake, pytest.raises(ProviderError) as caught:
        provider(fake).complete([{"role": "user", "content": "hi"}])
    assert "answered 401" in str(caught.value) and len(fake.requests) == 1


def test_a_timeout_is_retried_and_then_gives_up(store):
    with FakeOpenAI([Stall(1.0), "<action>up</action>"]) as fake:
        reply = provider(fake, timeout=0.2).complete([{"role": "user", "content": "hi"}])
    assert (reply.text, reply.retries) == ("<action>up</action>", 1)
    with FakeOpenAI([Stall(1.0)] * 3) as fake:
        result = run_episode(LLMAgent(provider(fake, timeout=0.2)), MFP, store=store)
    assert result.status == "error" and "did not answer within 0.2s" in result.reason
    _, row = events_and_row(store, result.episode_id)
    assert (row.status, row.score) == ("error", 0.0)


def test_the_scratchpad_is_carried_across_turns_whatever_the_history():
    replies = ["<scratchpad_add>gold moves with arrows\nclicks paint blue</scratchpad_add><action>right</action>",
               "<scratchpad_del>clicks paint blue</scratchpad_del><action>right</action>",
               "<action>go-to-test</action>"]
    with FakeOpenAI(replies + ["<action>quit</action>"]) as fake:
        result = run_episode(LLMAgent(provider(fake), history="none"), PLANNING)
    assert result.status == "done"
    prompts = [r["messages"][-1]["content"] for r in fake.requests]
    assert all(len(r["messages"]) == 2 for r in fake.requests)  # system + this turn only
    assert "Your scratchpad is empty." in prompts[0]
    assert "- gold moves with arrows\n- clicks paint blue" in prompts[1]
    assert "- gold moves with arrows" in prompts[2] and "clicks paint blue" not in prompts[2]
    assert "# Task Description:" in prompts[1]  # repeated once the first turn is out of view
    assert '"highlight_mask"' in prompts[3]


def test_a_history_window_keeps_the_last_k_turns():
    with FakeOpenAI(tagged("right", "right", "left", "left", "go-to-test", "quit")) as fake:
        run_episode(LLMAgent(provider(fake), history="last", k=2), PLANNING)
    assert [len(r["messages"]) for r in fake.requests] == [2, 4, 6, 6, 6, 6]


def test_human_and_model_records_have_the_same_columns_and_values(store):
    actions = EPISODES["cd"][1]
    recorder = EpisodeRecorder(store, CD)
    loop = GameLoop(Episode(CD), recorder=recorder)
    for action in actions:
        loop.enqueue(action)
        loop.tick()
    human_id = recorder.episode_id
    model = run_episode(ScriptedAgent(list(actions)), CD, store=store)
    human_rows, _ = events_and_row(store, human_id)
    model_rows, _ = events_and_row(store, model.episode_id)
    same = ("problem_id", "phase", "tick", "action", "frame_hash", "next_phase", "score", "applied")
    assert [tuple(getattr(e, c) for c in same) for e in human_rows] == \
           [tuple(getattr(e, c) for c in same) for e in model_rows]
    assert list(human_rows[0].model_dump()) == list(model_rows[0].model_dump())
    assert {e.source for e in human_rows} == {"input"} and {e.source for e in model_rows} == {"agent"}


def test_requests_to_one_endpoint_share_its_rate_limit_and_its_429_hold():
    sleeps: list[float] = []
    time = FakeTime(sleeps)
    limiter = Limiter(per_minute=600, clock=time.clock)  # one request every 0.1 s
    for _ in range(4):
        assert limiter.wait(time.sleep)
    assert sleeps == pytest.approx([0.1, 0.1, 0.1])
    script = [Failure(429, {"Retry-After": "2"}), "<action>up</action>", "<action>down</action>"]
    with FakeOpenAI(script) as fake:
        shared = Limiter(clock=time.clock)
        first, second = (ChatProvider(MODEL, base_url=fake.base_url, sleep=time.sleep,
                                      limiter=shared, backoff=Backoff(jitter=0.0))
                         for _ in range(2))
        sleeps.clear()
        assert first.complete([{"role": "user", "content": "a"}]).text == "<action>up</action>"
        assert sleeps == pytest.approx([2.0])  # the 429's hold, slept once
        held_until = shared.held_until
        assert held_until <= time.now
        shared.hold(5.0)  # as if the other provider had just met a 429
        sleeps.clear()
        assert second.complete([{"role": "user", "content": "b"}]).text == "<action>down</action>"
        assert sleeps == pytest.approx([5.0])


def test_a_stopping_batch_cuts_a_retry_wait_short():
    with FakeOpenAI([Failure(503)] * 3) as fake:
        provider_ = ChatProvider(MODEL, base_url=fake.base_url, sleep=lambda seconds: True,
                                 limiter=Limiter(), backoff=Backoff(retries=2))
        with pytest.raises(ProviderError, match="the batch is stopping"):
            provider_.complete([{"role": "user", "content": "a"}])
    assert len(fake.requests) == 1
