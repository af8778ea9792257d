"""Input checks shared by the metrics, with messages that say what was expected.

:func:`is_whole` and :func:`require_whole` are defined in :mod:`tasks.worldtest.baseline`,
whose random-baseline summary needs them beneath the analysis; they are re-exported here
for every metric.
"""

from __future__ import annotations

from tasks.worldtest.baseline import is_whole, require_whole

__all__ = ["is_whole", "require_whole"]
