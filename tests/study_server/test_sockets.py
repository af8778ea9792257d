"""The socket protocol against the live server, with python-socketio clients."""

from __future__ import annotations

import itertools
import logging
import random
import time

import pytest

from tasks.worldtest.changes import idle_every
from tests.conftest import Player

MFP = "test/rt-walker-mfp"


def statuses(live_server, episode_id):
    return [(r.text, r.status) for r in live_server.raw_inputs(episode_id)]


def test_joining_sends_the_state_and_inputs_come_back_applied(live_server, player):
    client = player(MFP)
    assert client.send("right") == {"ok": True, "status": "queued"}
    state = client.wait_for(lambda s: s["frame"][0][1] == "gold")
    assert (state["phase"], state["problem_id"], state["token"]) == (
        "interaction", MFP, client.token)


@pytest.mark.parametrize(("message", "reason"), [
    ("right", "input: expected {token, action, client_time}"),
    ({"token": "x"}, "input: expected {token, action, client_time}"),
    ({"token": "x", "action": 7}, "input: expected {token, action, client_time}"),
    ({"token": None, "action": "up"}, "input: not your session"),
])
def test_malformed_messages_are_ignored_with_a_warning(live_server, player, caplog, message,
                                                       reason):
    client = player(MFP)
    door = live_server.app.extensions["gridstudy.door"]
    before = dict(door.totals)
    with caplog.at_level(logging.WARNING, logger="study_server.door"):
        assert client.sio.call("input", message, timeout=10) == {"ok": False, "error": reason}
        client.sio.emit("pong", "garbage")
        client.sio.emit("no-such-event", {"a": 1})
        client.wait_ticks(3)
        assert client.send("down")["ok"] is True  # the session goes on
        client.wait_for(lambda s: s["frame"][1][0] == "gold")
        door.log()  # the minute's line, now
    counted = {k: v - before.get(k, 0) for k, v in door.totals.items() if v > before.get(k, 0)}
    assert counted == {reason: 1, "pong: expected {sent, client_time}": 1,
                       "an event not allowed now": 1}
    lines = [r.getMessage() for r in caplog.records if r.name == "study_server.door"]
    assert 1 <= len(lines) <= 2  # the first refusal of a quiet minute, then the rest counted
    assert reason in " ".join(lines) and "'x'" not in " ".join(lines)  # never a message's text


def test_a_message_for_another_participants_session_is_refused(live_server, player):
    alice, mallory = player(MFP), player(MFP)
    assert mallory.send("right", token=alice.token) == {"ok": False,
                                                        "error": "input: not your session"}
    assert mallory.join(alice.token)["ok"] is False
    alice.wait_ticks(3)
    alice_events = live_server.events(live_server.scheduler.get(alice.token).episode_id)
    assert {e.action for e in alice_events} == {"noop"}
    assert {r["reason"] for r in mallory.refusals} == {
        "input: not your session", "join: this session is open in another connection"}


def test_bad_inputs_are_logged_as_raw_inputs(live_server, player):
    client = player(MFP)
    episode_id = live_server.scheduler.get(client.token).episode_id
    assert client.send("click 5 2")["status"] == "rejected"
    assert client.send("fly away")["status"] == "malformed"
    assert client.send("submit")["status"] == "queued"  # judged when its tick comes
    client.wait_ticks(3)
    assert statuses(live_server, episode_id) == [
        ("click 5 2", "rejected"), ("fly away", "malformed"), ("submit", "rejected")]
    assert [r["reason"] for r in client.refusals] == ["rejected", "malformed"]


def test_more_than_thirty_inputs_a_second_are_rate_limited(live_server, player):
    client = player(MFP)
    episode_id = live_server.scheduler.get(client.token).episode_id
    answered: dict[int, str] = {}
    started = time.monotonic()
    for k in range(40):  # sent at once, not each after the last one's answer: a burst
        client.sio.emit("input", {"token": client.token, "action": "noop",
                                  "client_time": client.now()},
                        callback=lambda answer, k=k: answered.__setitem__(k, answer["status"]))
    assert time.monotonic() - started < 1.0, "the burst must be sent within one second"
    deadline = time.monotonic() + 10
    while len(answered) < 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    answers = [answered.get(k) for k in range(40)]
    assert answers.count("rate-limited") == 10
    assert answers[30:] == ["rate-limited"] * 10
    time.sleep(1.0)
    client.wait_ticks(2)  # the second is over: its flood is stored as one row
    limited = [r for r in live_server.raw_inputs(episode_id) if r.status == "rate-limited"]
    assert [r.reason for r in limited] == [
        "more than 30 inputs per second: 10 input(s) refused in the second from this one on"]
    assert client.send("up")["status"] in ("queued", "dropped")  # not cut off for good


def test_client_time_is_corrected_by_the_estimated_clock_offset(live_server, player):
    client = player(MFP, clock_skew=100.0)
    session = live_server.scheduler.get(client.token)
    deadline = time.monotonic() + 5
    while session.clock.samples < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert session.clock.samples == 5
    sent_at = time.time()
    client.send("right")
    client.wait_for(lambda s: s["frame"][0][1] == "gold")
    [event] = [e for e in live_server.events(session.episode_id) if e.source == "input"]
    assert event.client_time == pytest.approx(sent_at, abs=0.05)
    assert event.server_time - event.client_time < 0.2


def test_inputs_within_the_resync_interval_send_no_more_pings(live_server, player):
    client = player(MFP)
    session = live_server.scheduler.get(client.token)
    deadline = time.monotonic() + 5
    while not session.clock.round_complete and time.monotonic() < deadline:
        time.sleep(0.01)
    for action in ("right", "left", "right"):
        client.send(action)
    time.sleep(0.3)
    assert session.clock.samples == 5


def test_disconnecting_pauses_the_session_and_a_new_connection_resumes_it(live_server, player):
    first = player(MFP)
    first.wait_ticks(2)
    first.close()
    time.sleep(0.3)
    session = live_server.scheduler.get(first.token)
    paused_at = len(live_server.events(session.episode_id))
    time.sleep(0.5)
    assert len(live_server.events(session.episode_id)) == paused_at
    second = player(MFP, join=False)
    assert second.join(first.token)["ok"] is True
    second.wait_ticks(2)
    ticks = [e.tick for e in live_server.events(session.episode_id)]
    assert ticks == list(range(len(ticks))) and len(ticks) > paused_at


def test_twenty_concurrent_sessions_record_exactly_one_event_per_tick(live_server, player):
    clients = [player(MFP, join=False) for _ in range(20)]
    joined = {}
    for client in clients:
        client.join()
        joined[client.token] = time.monotonic()
    started = time.monotonic()
    while time.monotonic() - started < 10:
        for i, client in enumerate(clients):  # each presses a key every five seconds
            if int((time.monotonic() - started) * 4) % 20 == i:
                client.sio.emit("input", {"token": client.token, "action": "right",
                                          "client_time": time.time()})
        time.sleep(0.05)
    paused = {}
    for client in clients:
        live_server.scheduler.pause(client.token)
        paused[client.token] = time.monotonic()
    time.sleep(0.3)  # states already sent are received
    for client in clients:
        session = live_server.scheduler.get(client.token)
        events = live_server.events(session.episode_id)
        assert [e.seq for e in events] == list(range(len(events)))
        assert [e.tick for e in events] == list(range(len(events)))
        assert all(e.applied and e.error is None for e in events)
        # 8 FPS; a loaded machine may stall the loop past a whole period, and the
        # scheduler then skips ahead rather than bursting (never more ticks than time).
        expected = (paused[client.token] - joined[client.token]) * 8
        assert expected * 0.8 <= len(events) <= expected + 1.5, (len(events), expected)
        # the state after each input's tick and an idle state every idle_every(8) ticks
        # at least; the other idle ticks send nothing
        received = sorted({s["tick"] for s in client.states})
        inputs = [e.tick + 1 for e in events if e.source == "input"]
        assert inputs and set(inputs) <= set(received)
        assert max(b - a for a, b in itertools.pairwise(received)) <= idle_every(8)
        assert len(events) - idle_every(8) < received[-1] <= len(events)
        assert len(received) < 0.75 * len(events)


def test_a_second_tab_takes_the_session_over_when_asked(live_server, player):
    first = player(MFP)
    second = Player(live_server.url, first.token).connect()
    taken: list = []
    first.sio.on("taken-over", taken.append)
    try:
        assert second.join()["ok"] is False  # refused until it asks to take over
        answer = second.sio.call("join", {"token": first.token, "takeover": True}, timeout=10)
        assert answer["ok"] is True
        deadline = time.monotonic() + 5
        while not taken and time.monotonic() < deadline:
            time.sleep(0.02)
        assert taken == [{"token": first.token}]
        assert first.send("right") == {"ok": False, "error": "input: not your session"}
        assert second.send("right")["ok"] is True
        second.wait_ticks(2)
        seen = len(first.states)
        second.wait_ticks(3)
        assert len(first.states) <= seen + 1  # the first tab no longer gets the states
    finally:
        second.close()


@pytest.mark.parametrize("length", [0, 1, 3, 4, 5, 125, 126, 1000, 65536, 70001])
def test_frames_from_clients_are_unmasked_to_the_bytes_sent(length):
    """RFC 6455 5.3: byte i of the payload is XORed with byte i mod 4 of the mask."""
    from geventwebsocket.websocket import Header

    from study_server.sockets import unmask_in_c

    unmask_in_c()
    rng = random.Random(length)
    header, sent = Header(length=length), rng.randbytes(length)
    header.mask = rng.randbytes(4)
    masked = bytes(b ^ header.mask[i % 4] for i, b in enumerate(sent))
    assert Header.unmask_payload(header, masked) == sent
