"""The clock-offset estimate: the shortest round trip of a round, and re-sync rounds."""

from __future__ import annotations

import pytest

from study_server.clock import ClockOffset


def test_client_times_are_stored_on_the_server_clock():
    clock = ClockOffset()
    for sent, client, received in ((10.0, 110.3, 10.4), (20.0, 120.02, 20.04), (30.0, 130.5, 30.9)):
        clock.add(sent, client, received)
    assert (round(clock.offset, 6), round(clock.rtt, 6), clock.samples) == (100.0, 0.04, 3)
    assert clock.to_server(150.0) == pytest.approx(50.0)


def test_a_complete_round_replaces_the_offset_even_with_slower_pings():
    clock = ClockOffset(per_round=3)
    clock.start_round(at=0.0)
    for sent in (0.0, 1.0, 2.0):  # 10 ms round trips, the client 100 s ahead
        clock.add(sent, sent + 100.005, sent + 0.01)
    assert (clock.round_complete, round(clock.offset, 6)) == (True, 100.0)
    clock.start_round(at=30.0)  # the client's clock has drifted 0.5 s; the network is slower
    clock.add(30.0, 30.0 + 100.52, 30.04)
    clock.add(31.0, 31.0 + 100.51, 31.02)
    assert (clock.round_complete, round(clock.offset, 6)) == (False, 100.0)  # kept meanwhile
    clock.add(32.0, 32.0 + 100.53, 32.06)
    assert (clock.round_complete, round(clock.offset, 6), round(clock.rtt, 6)) == (True, 100.5, 0.02)
    assert clock.samples == 6


def test_a_sample_better_than_the_offset_in_use_is_taken_at_once():
    clock = ClockOffset(per_round=5)
    clock.start_round(at=0.0)
    clock.add(0.0, 50.05, 0.1)
    clock.start_round(at=30.0)
    clock.add(30.0, 80.001, 30.002)
    assert (clock.round_complete, round(clock.offset, 6)) == (False, 50.0)
    assert clock.rtt == pytest.approx(0.002)


@pytest.mark.parametrize(("started", "now", "due"), [
    (None, 5.0, True), (0.0, 29.9, False), (0.0, 30.0, True),
])
def test_a_round_is_due_when_the_last_began_an_interval_ago(started, now, due):
    clock = ClockOffset()
    if started is not None:
        clock.start_round(at=started)
    assert clock.due(now, every=30.0) is due


def test_a_connection_is_judged_on_the_median_of_its_last_round_trips_after_a_round():
    clock = ClockOffset(per_round=5)
    clock.start_round(at=0.0)
    for index, rtt in enumerate((0.9, 0.05, 0.05, 0.05)):  # one slow ping among fast ones
        clock.add(index, 0.0, index + rtt)
        assert clock.typical_rtt() is None  # not before a whole round
    clock.add(4.0, 0.0, 4.05)
    assert clock.typical_rtt() == pytest.approx(0.05)
    for index in range(10):  # the connection slows down for good
        clock.add(10.0 + index, 0.0, 10.4 + index)
    assert clock.typical_rtt() == pytest.approx(0.4)
