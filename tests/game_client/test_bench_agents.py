"""``python -m bench.agents`` measures what it says: every turn it counts was played."""

from __future__ import annotations

from bench.agents import bridge_turns_per_second
from bench.standin import FakeOpenAI


def test_the_bridge_benchmark_plays_and_counts_every_turn(tmp_path):
    with FakeOpenAI(["<action>noop</action>"] * 12) as fake:
        rate, cpu_ms, played = bridge_turns_per_second(fake.base_url, 2, 3, str(tmp_path / "b.db"))
    assert played == 12 == len(fake.requests)  # 2 x concurrency attempts of 3 turns
    assert rate > 0 and cpu_ms > 0
