"""The server's game session alone (no sockets), on a real store: what it adds to the tick
engine (tests/tasks/test_tick.py holds the rules both real-time drivers share)."""

from __future__ import annotations

import pytest
from sqlmodel import select

from records.models import EpisodeRow, Event, RawInput
from records.store import Store
from study_server.session import GameSession


@pytest.fixture
def store(tmp_path):
    with Store(str(tmp_path / "rt.db"), flush_interval=0.01) as store:
        yield store


def rows(store, model, order):
    store.flush(timeout=10)
    with store.session() as session:
        return list(session.exec(select(model).order_by(order)))


def test_each_event_keeps_how_late_its_tick_was(store, test_problems):
    session = GameSession.create(test_problems["mfp"], store)
    session.tick(lateness=0.002)
    assert session.enqueue_action("Right") == "queued"
    session.tick(lateness=0.001)
    session.tick()
    events = rows(store, Event, Event.seq)
    assert [(e.seq, e.tick, e.action, e.source) for e in events] == [
        (0, 0, "noop", "auto"), (1, 1, "right", "input"), (2, 2, "noop", "auto")]
    assert [e.latency for e in events] == [0.002, 0.001, 0.0]
    assert session.get_state()["frame"][0] == ["black", "gold", "black", "black", "black"]
    assert session.get_state()["token"] == session.token


def test_a_client_time_is_stored_on_the_servers_clock(store, test_problems):
    session = GameSession.create(test_problems["mfp"], store)
    session.clock.start_round(at=100.0)
    session.clock.add(sent=100.0, client_time=105.02, received=100.04)
    session.enqueue_action("jump", client_time=110.0)
    session.enqueue_action("right", client_time=111.0)
    session.tick()
    [raw] = rows(store, RawInput, RawInput.id)
    [event] = rows(store, Event, Event.seq)
    assert raw.client_time == pytest.approx(105.0) and event.client_time == pytest.approx(106.0)


def test_a_finished_cd_session_records_when_it_triggered_the_change(store, test_problems):
    session = GameSession.create(test_problems["cd"], store)
    for action in ("go-to-test", "right", "right", "right", "click 0 4", "found-change",
                   "choose_frame_4", "submit"):
        session.enqueue_action(action)
        tick = session.tick()
    assert tick.done and session.get_state()["score"] == 1.0
    store.flush()  # a real-time session's end is queued behind its events, never waited for
    with store.session() as db:
        info = db.get(EpisodeRow, session.episode_id).info
    assert (info["test_triggered"], info["test_t_star"], info["test_chosen"]) == (True, 4, 4)


def test_an_abandoned_session_ends_its_row_with_the_reason(store, test_problems):
    session = GameSession.create(test_problems["mfp"], store)
    session.tick()
    session.enqueue_action("right")
    session.abandon()
    store.flush()
    with store.session() as db:
        row = db.get(EpisodeRow, session.episode_id)
    assert (row.status, row.score, row.info["reason"]) == (
        "abandoned", 0.0, "the session was abandoned")
    assert [(r.text, r.status) for r in rows(store, RawInput, RawInput.id)] == [
        ("right", "dropped")]


def test_a_preview_session_records_nothing(test_problems):
    session = GameSession.create(test_problems["cd"], None)
    session.enqueue_action("down")
    tick = session.tick()
    assert session.episode_id is None
    assert (tick.step.action, session.get_state()["frame"][1][0]) == ("down", "gold")
