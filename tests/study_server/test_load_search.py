"""The load benchmark's search for the largest session count within 25 ms p99."""

from __future__ import annotations

import pytest

from bench.load import arrival_plan, search


@pytest.mark.parametrize(("capacity", "expected", "counts"), [
    (137, 137, [50, 100, 150, 125, 137, 143, 140]),  # up in steps, then bisection
    (30, 28, [50, 25, 37, 31, 28]),
    (500, 400, [50, 100, 150, 200, 250, 300, 350, 400]),  # never fails below the limit
])
def test_steps_up_then_bisects_to_the_resolution(capacity, expected, counts):
    measured = []

    def measure_count(sessions):
        measured.append(sessions)
        return {"lateness_p99_ms": 20.0 if sessions <= capacity else 30.0}

    assert search(measure_count, step=50, limit=400, resolution=5) == expected
    assert measured == counts


def test_arrivals_spread_the_joins_and_everyone_plays_on_together():
    plan = arrival_plan(["a", "b", "c"], 200, seconds=15, arrivals=10, start=100.0)
    joins = [join for _, join, _, _ in plan]
    assert joins == sorted(joins) and joins[0] == 100.0 and joins[-1] < 110.0
    assert max(b - a for a, b in zip(joins, joins[1:])) == pytest.approx(0.05)
    assert {leave for _, _, leave, _ in plan} == {125.0}
    assert [problem for problem, *_ in plan[:4]] == ["a", "b", "c", "a"]
    assert len({seed for *_, seed in plan}) == 200


def test_the_generator_plays_a_session_over_its_own_socket_io_client(live_server, test_problems):
    """One simulated participant of bench.load against the real server: it joins, its
    states are counted, its keys and clock pongs are accepted and its events stored."""
    import asyncio
    import threading
    import time

    import httpx

    from bench.load import Participant, summarise

    problem = test_problems["planning"]
    start = time.time() + 0.5
    person = Participant(live_server.url, problem.id, start, start + 3.0, seed=3)
    other = Participant(live_server.url, problem.id, start, start + 3.0, seed=4)

    async def play():
        async with httpx.AsyncClient(timeout=30) as http:
            return await asyncio.gather(person.run(http), other.run(http))

    results = []  # in a thread of its own: the browser fixture's loop may be running here
    thread = threading.Thread(target=lambda: results.extend(asyncio.run(play())))
    thread.start()
    thread.join(30)
    result, _ = results
    seconds = result["left"] - result["joined"]
    assert result["states"] >= 0.8 * seconds * result["frame_rate"]
    assert result["sent"] > 0
    events = live_server.events(result["episode_id"])
    assert [e.seq for e in events] == list(range(len(events)))
    inputs = sum(e.source == "input" for e in events) + len(
        live_server.raw_inputs(result["episode_id"]))
    assert inputs == result["sent"]
    session = next(s for s in live_server.scheduler.sessions.values()
                   if s.episode_id == result["episode_id"])
    assert session.clock.round_complete  # the clock pings were answered
    # the figures of one participant read only that participant's rows, though the
    # database holds the other's too (as a --db given twice, or --repeat, does)
    live_server.store.flush(timeout=10)
    figures = summarise(str(live_server.store.engine.url), [{**result, "challenge": "planning"}],
                        {"workers": 1.0, "helpers": 0.0, "generator": 0.0}, 1.0)
    assert figures["sessions"] == 1 and figures["seq_gaps"] == 0
    assert figures["inputs_accounted"] == 1.0
    assert figures["events_persisted_per_ticks_run"] == 1.0


@pytest.mark.parametrize("log_every", [0.5, 2.0])
def test_a_simulated_page_plays_in_its_browser_and_sends_its_log_as_often_as_told(
        live_server, test_problems, log_every):
    """bench.load's browser participant: its own engine ticks the game, its log reaches
    the server in batches ``log_every`` seconds apart, every one stored and verified."""
    import asyncio
    import threading
    import time

    import httpx

    from bench.load import BrowserParticipant

    start = time.time() + 0.5
    person = BrowserParticipant(live_server.url, test_problems["planning"].id, start,
                                start + 4.0, seed=3, log_every=log_every)

    async def play():
        async with httpx.AsyncClient(timeout=30) as http:
            return await person.run(http)

    results = []
    thread = threading.Thread(target=lambda: results.append(asyncio.run(play())))
    thread.start()
    thread.join(30)
    result, = results
    assert result["verified"] and result["sent"] > 0
    played = result["left"] - result["joined"]
    # a page looks at its clock between keys (at most 0.25 s apart), the last batch at the end
    assert played / (log_every + 0.25) - 1 <= result["batches"] <= played / log_every + 2
    events = live_server.events(result["episode_id"])
    assert [e.seq for e in events] == list(range(len(events)))
    assert len(events) >= 0.8 * played * result["frame_rate"]
