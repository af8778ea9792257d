"""Clock re-sync over the socket: a new round of pings follows a client's drifting clock."""

from __future__ import annotations

import time

import pytest

from tests.conftest import wait_until

MFP = "test/rt-walker-mfp"


@pytest.fixture
def live_server(make_live_server, test_problems):
    """The live server re-syncing clocks every half second instead of every 30 s."""
    return make_live_server({"CLOCK_RESYNC": 0.5})


def test_inputs_after_a_resync_round_use_the_new_offset(live_server, player):
    client = player(MFP, clock_skew=100.0)
    session = live_server.scheduler.get(client.token)
    wait_until(lambda: session.clock.round_complete)
    assert (session.clock.samples, round(session.clock.offset)) == (5, 100)

    client.clock_skew = 160.0  # the participant's clock jumps a minute ahead
    time.sleep(0.6)
    first_sent = time.time()
    client.send("right")  # stamped with the old offset; it starts a new round
    moved = client.wait_for(lambda s: s["frame"][0][1] == "gold")
    wait_until(lambda: session.clock.samples >= 10 and session.clock.round_complete)
    assert round(session.clock.offset) == 160
    second_sent = time.time()
    client.send("left")
    client.wait_for(lambda s: s["frame"][0][0] == "gold" and s["tick"] > moved["tick"])

    first, second = [e for e in live_server.events(session.episode_id) if e.source == "input"]
    assert first.client_time == pytest.approx(first_sent + 60.0, abs=0.05)
    assert second.client_time == pytest.approx(second_sent, abs=0.05)
