"""Task-DAG exploration maps (000): a partially observed grid hiding a task DAG.

* :func:`generate` makes a :class:`DagMap` from a :class:`DagMapConfig` (or a preset
  name, see :data:`PRESETS`) and a seed;
* :class:`DagMapEnv` plays one as an environment (registered as ``dagmap/...``);
* :mod:`tasks.dagmap.oracle` solves a map knowing it; :mod:`tasks.dagmap.summary` and
  :mod:`tasks.dagmap.prompts` serve the LLM text bridge.

The exploration/exploitation error metric lives in ``analysis.metrics.explore_exploit``.
"""

from tasks.dagmap.config import PRESETS, DagMapConfig, preset
from tasks.dagmap.env import DagMapEnv
from tasks.dagmap.generator import generate
from tasks.dagmap.model import DagMap

__all__ = ["PRESETS", "DagMap", "DagMapConfig", "DagMapEnv", "generate", "preset"]
