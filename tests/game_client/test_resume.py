"""Resuming an attempt its provider cut short: in process and through a server's agent
API, the environment and the conversation continue exactly where they stopped."""

from __future__ import annotations

import pytest

from bench.standin import Failure, FakeOpenAI
from game_client.api_client import AgentAPIClient
from game_client.batch import Batch, LocalRecords, pending_jobs
from game_client.evaluate import Limits, ModelSpec, llm_run
from records.schema import TURN_TEXT_LIMITS, kept

PROBLEM = "test/rt-walker-planning"
PLAN = ["go-to-test", "click 4 4", "right", "I am not sure.", "right", "down", "down"]
"""Replies that solve the problem, one of them invalid (so the streak and the error
message the next turn shows are part of what a resume must rebuild)."""
REPLIES = [reply if " " in reply and not reply.startswith("click") else f"<action>{reply}</action>"
           for reply in PLAN]


def batch(records, fake, runs=1):
    """One model on PROBLEM through the real batch; ``(outcome, run)``."""
    model = ModelSpec("fake-model", base_url=fake.base_url, retries=1, timeout=2.0)
    run = llm_run(model, Limits(), sleep=lambda seconds: False)
    run.agent_run_id = records.create_run(run.kind, run.model, run.config)
    jobs = pending_jobs(run, [PROBLEM], runs, records.episodes(run.agent_run_id))
    return Batch(records.open_attempt, progress=False).run(jobs), jobs


def messages(fake):
    return [request["messages"] for request in fake.requests]


def uninterrupted(records):
    with FakeOpenAI(REPLIES) as fake:
        outcome, _ = batch(records, fake)
    assert outcome.results[0].status == "done"
    return messages(fake)


def cut_and_resumed(records, cut_at: int):
    """Play until the provider fails on turn ``cut_at``, then rerun: the requests of
    both runs and the resumed job."""
    with FakeOpenAI([*REPLIES[:cut_at], Failure(503), Failure(503)]) as fake:
        first, _ = batch(records, fake)
        assert first.results[0].status == "error" and first.results[0].resumable
        before = messages(fake)[:cut_at]
        fake.requests.clear()
        fake.script.extend(REPLIES[cut_at:])  # the same endpoint: the same agent run
        second, jobs = batch(records, fake)
        after = messages(fake)
        _, left = batch(records, fake)  # a third run finds nothing left to play
    assert left == [] and len(fake.requests) == len(after)
    assert [job.episode_id for job in jobs] == [first.results[0].episode_id]
    return first, second, before, after


@pytest.mark.parametrize("cut_at", [2, 4])
def test_a_resumed_attempt_continues_the_same_conversation_in_process(cut_at, store_factory,
                                                                      test_problems):
    expected = uninterrupted(LocalRecords(store_factory("whole.db")))
    store = store_factory("cut.db")
    first, second, before, after = cut_and_resumed(LocalRecords(store), cut_at)
    assert before + after == expected
    result = second.results[0]
    assert (result.status, result.score, result.turns, result.invalid, result.resumed) == \
        ("done", 1.0, len(PLAN), 1, True)
    assert result.episode_id == first.results[0].episode_id
    store.flush()
    events = events_of(store, result.episode_id)
    assert [e.seq for e in events] == list(range(len(PLAN)))
    assert [e.raw_reply for e in events] == REPLIES
    assert episode_of(store, result.episode_id).info["resumed"] == 1


@pytest.mark.parametrize("cut_at", [2, 4])
def test_a_resumed_attempt_continues_the_same_conversation_through_the_server(
        cut_at, live_server, store_factory, test_problems):
    expected = uninterrupted(LocalRecords(store_factory("whole.db")))
    client = AgentAPIClient(live_server.url, live_server.token())
    first, second, before, after = cut_and_resumed(client, cut_at)
    assert before + after == expected
    result = second.results[0]
    assert (result.status, result.score, result.turns, result.invalid, result.resumed) == \
        ("done", 1.0, len(PLAN), 1, True)
    events = live_server.events(result.episode_id)
    assert [e.seq for e in events] == list(range(len(PLAN)))
    assert [e.raw_reply for e in events] == REPLIES
    row = live_server.episode(result.episode_id)
    assert (row.status, row.score, row.info["resumed"]) == ("done", 1.0, 1)


@pytest.mark.parametrize("where", ["in process", "through the server"])
def test_an_attempt_whose_replies_outgrew_the_record_resumes_reading_the_same_actions(
        where, live_server, store_factory, test_problems):
    """A model that thinks aloud past what the record keeps (200,000 characters of a
    reply) and writes its action last. The action is read from what the record keeps,
    its start and its end, so the resumed attempt, which reads the record, reads the same
    actions and sends the same conversation. Before, the action was read from the whole
    reply and the record kept its start only: the resume found no action there and
    refused the attempt, saying the problem or the agent had changed."""
    thinking = " and on" * 40_000
    replies = [thinking + reply for reply in REPLIES[:3]] + REPLIES[3:]
    records = (LocalRecords(store_factory("long.db")) if where == "in process"
               else AgentAPIClient(live_server.url, live_server.token()))
    with FakeOpenAI([*replies[:3], Failure(503), Failure(503)]) as fake:
        first, _ = batch(records, fake)
        assert first.results[0].status == "error" and first.results[0].resumable
        before = messages(fake)[:3]
        fake.requests.clear()
        fake.script.extend(replies[3:])
        second, _ = batch(records, fake)
        after = messages(fake)
    result = second.results[0]
    assert (result.status, result.score, result.turns, result.invalid, result.resumed) == \
        ("done", 1.0, len(PLAN), 1, True), result.reason
    # the resumed conversation holds the long replies as the first run sent them
    assert after[0][:len(before[-1])] == before[-1]
    assert after[0][len(before[-1])]["content"] == kept(replies[2], TURN_TEXT_LIMITS["raw_reply"])


def test_a_finished_attempt_is_not_resumed(live_server, test_problems):
    client = AgentAPIClient(live_server.url, live_server.token())
    with FakeOpenAI(REPLIES) as fake:
        outcome, _ = batch(client, fake)
    from game_client.api_client import AgentAPIError

    with pytest.raises(AgentAPIError, match="409.*done and cannot be resumed"):
        client.resume(outcome.results[0].episode_id)


# -- helpers ------------------------------------------------------------------------------


@pytest.fixture
def store_factory(tmp_path):
    from records.store import Store

    stores = []

    def make(name):
        stores.append(Store(str(tmp_path / name), flush_interval=0.01))
        return stores[-1]

    yield make
    for store in stores:
        store.close()


def events_of(store, episode_id):
    from sqlmodel import select

    from records.models import Event

    with store.session() as session:
        return session.exec(select(Event).where(Event.episode_id == episode_id)
                            .order_by(Event.seq)).all()


def episode_of(store, episode_id):
    from records.models import EpisodeRow

    with store.session() as session:
        return session.get(EpisodeRow, episode_id)


def test_an_attempt_whose_record_no_longer_replays_is_played_again_from_the_start(
        store_factory, test_problems):
    from sqlalchemy import text

    store = store_factory("tampered.db")
    records = LocalRecords(store)
    with FakeOpenAI([*REPLIES[:2], Failure(503), Failure(503)]) as fake:
        first, _ = batch(records, fake)
        episode_id = first.results[0].episode_id
        store.flush()
        with store.engine.begin() as connection:  # the record says a different reply
            connection.execute(text("update event set raw_reply = '<action>up</action>' "
                                    "where episode_id = :e and seq = 1"), {"e": episode_id})
        fake.script.extend(REPLIES)
        second, jobs = batch(records, fake)
        assert [job.episode_id for job in jobs] == [episode_id]
        result = second.results[0]
        assert (result.status, result.score) == ("done", 1.0)
        assert result.episode_id != episode_id
        [why] = second.restarted
        assert "does not arrive where the record stands" in why
        third, jobs = batch(records, fake)  # not tried again
    assert jobs == []
    old = episode_of(store, episode_id)
    assert (old.status, old.info["resumable"]) == ("error", False)


@pytest.mark.parametrize("where", ["in process", "through the server"])
def test_an_attempt_whose_environment_was_edited_is_not_resumed_on_the_new_one(
        where, live_server, store_factory, test_problems):
    """A model's attempt cut short, its problem edited, the same command run again: the
    attempt is not continued on the edited problem (before, it was, whenever its stored
    actions replayed to the same state: one attempt over two versions); it is ended with
    both versions named, and its run is played again from the start."""
    import dataclasses

    from game_client.evaluate import summary_lines
    from records.schema import VERSION_KEY
    from tasks import registry

    if where == "in process":
        store = store_factory("edited.db")
        records = LocalRecords(store)
    else:
        store = live_server.store
        records = AgentAPIClient(live_server.url, live_server.token())
    problem = registry.get_problem(PROBLEM)
    played_on = registry.problem_version(problem)
    try:
        with FakeOpenAI([*REPLIES[:3], Failure(503), Failure(503)]) as fake:
            first, _ = batch(records, fake)
            cut = first.results[0]
            assert (cut.status, cut.resumable) == ("error", True)
            store.flush()
            kept = [(e.seq, e.action, e.raw_reply) for e in events_of(store, cut.episode_id)]
            assert len(kept) == 3
            registry.add_problem(dataclasses.replace(problem, seed=problem.seed + 1),
                                 replace=True)
            now = registry.problem_version(registry.get_problem(PROBLEM))
            asked = len(fake.requests)
            fake.script.extend(REPLIES)
            second, jobs = batch(records, fake)
            assert [job.episode_id for job in jobs] == [cut.episode_id]
            again = batch(records, fake)[1]
        why = (f"its environment changed since it began (version {played_on}, now {now}), "
               f"so it was not resumed")
        assert second.restarted == [f"episode {cut.episode_id}: {why} ({PROBLEM}, run 0)"]
        assert f"episode {cut.episode_id}: {why} ({PROBLEM}, run 0); its run was played " \
               "again from the start" in summary_lines([jobs[0].run], second)
        fresh = second.results[0]
        assert (fresh.status, fresh.score, fresh.resumable) == ("done", 1.0, False)
        assert fresh.episode_id != cut.episode_id
        # the fresh attempt's conversation starts anew: no recorded turn is recalled
        assert len(fake.requests) - asked == len(REPLIES)
        assert len(fake.requests[asked]["messages"]) == len(fake.requests[0]["messages"])
        store.flush()
        old, new = episode_of(store, cut.episode_id), episode_of(store, fresh.episode_id)
        assert (old.status, old.info["resumable"], old.info["reason"]) == ("error", False, why)
        assert (old.included, old.exclusion_reason) == (False, why)
        assert old.info[VERSION_KEY] == played_on and new.info[VERSION_KEY] == now
        assert new.info["run_index"] == old.info["run_index"] == 0
        assert [(e.seq, e.action, e.raw_reply) for e in events_of(store, cut.episode_id)] == kept
        assert again == []  # the edited problem's run is complete
    finally:
        registry.add_problem(problem, replace=True)


MISBEHAVING = ["<action>click 999 999</action>", "<action>click 3</action>",
               "<action>up</action><action>down</action>", "I think I will go up",
               "<action></action>", "<action>" + "x" * 5000 + "</action>",
               "\ud83d<action>left</action>", "<action>submit_frame_99</action>",
               "<ACTION>UP</ACTION>", "```<action>down</action>```", "<action>up" * 300,
               "<action>left</action>" + " and on" * 40_000]
"""Replies a careless or broken model gives, each followed by a valid one (so that no
streak of invalid turns abandons the attempt)."""


@pytest.mark.parametrize("where", ["in process", "through the server"])
def test_a_misbehaving_model_leaves_the_same_record_in_process_and_through_the_server(
        where, live_server, store_factory, test_problems):
    """Every reply is a turn in the record, whichever way the attempt is played: through
    the server, a 5,000-character action used to be refused (400), ending the attempt as
    an error and losing its turn."""
    replies = [r for reply in MISBEHAVING for r in (reply, "<action>noop</action>")] + REPLIES
    if where == "in process":
        store = store_factory("local.db")
        records = LocalRecords(store)
    else:
        records = AgentAPIClient(live_server.url, live_server.token())
    with FakeOpenAI(replies) as fake:
        outcome, _ = batch(records, fake)
    result = outcome.results[0]
    assert (result.status, result.score) == ("done", 1.0), result.reason
    if where == "in process":
        store.flush()
        events = events_of(store, result.episode_id)
    else:
        events = live_server.events(result.episode_id)
    assert [e.seq for e in events] == list(range(len(replies)))
    # a model rambling past the record's limit: its action is played, its start kept
    assert [e.raw_reply for e in events] == [
        kept(r, TURN_TEXT_LIMITS["raw_reply"]).replace("\ud83d", "\ufffd") for r in replies]
    rambling = events[2 * (len(MISBEHAVING) - 1)]
    assert (rambling.action, rambling.parse_valid) == ("left", True)
    assert " [280,021 characters: the first 149,950 and the last 49,983 kept] " in \
        rambling.raw_reply
    invalid = [e for e in events if not e.parse_valid]
    assert len(invalid) >= 7 and all(0 < len(e.error) < 600 for e in invalid)
    assert "5000 characters long" in events[10].error
