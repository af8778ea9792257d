"""The analysis benchmark runs end to end at a small size (so that it cannot silently
break when a metric's signature changes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_analysis_benchmark_runs_at_a_small_size():
    result = subprocess.run([sys.executable, "-m", "bench.analysis", "--events", "2400",
                             "--actions", "60"], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "2,400 events in 40 episodes" in result.stdout
    assert "random_baseline_table" in result.stdout
    assert "full report over 2,400 events" in result.stdout
    assert "peak memory: " in result.stdout
