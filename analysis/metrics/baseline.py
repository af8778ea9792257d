"""The random-agent baseline, summarised as in 002 Table E.3.

The summary (:func:`random_baseline`) and the per-environment table
(:func:`random_baseline_table`) are the ones :mod:`tasks.worldtest.baseline` defines;
they are re-exported here so the report (``analysis.tables.random_baseline_rows``) and
``gridstudy baseline random`` (``game_client``, which never imports ``analysis``) shape
the same table with the same code.
"""

from __future__ import annotations

from tasks.worldtest.baseline import (
    COLUMNS,
    SUMMARY,
    TIMEOUT,
    random_baseline,
    random_baseline_table,
    sampled_reading,
)

__all__ = [
    "COLUMNS",
    "SUMMARY",
    "TIMEOUT",
    "random_baseline",
    "random_baseline_table",
    "sampled_reading",
]
