"""A WorldTest problem: an environment, a challenge, a seed and the challenge's parameters.

Problems are plain data so that they can be written to JSON, shipped in the library,
imported from AutumnBench task folders and checked again later.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CHALLENGES = ("mfp", "planning", "cd", "explore")
"""Masked frame prediction, planning, change detection, and ``explore``: a task-DAG map
played from its start to its goal within its budget, with no separate test phase."""

CHALLENGE_TITLES = {
    "mfp": "masked frame prediction",
    "planning": "planning",
    "cd": "change detection",
    "explore": "exploration",
}


@dataclass(frozen=True)
class Problem:
    """One problem.

    ``params`` by challenge (all JSON-serialisable):

    * ``mfp``: ``actions`` (the recorded trajectory's action texts), ``mask`` (cells
      ``[x, y]``), ``masked_from`` (first frame index shown masked), ``options`` (six
      colour tuples, one per mask cell), ``answer`` (index of the correct option); derived
      problems add ``samples`` (realisations sampled) and ``stochastic``.
    * ``planning``: ``goal_cells`` (``[x, y]``), ``goal_colours``, ``horizon`` (test steps
      allowed), ``optimal_length`` (the length of a shortest plan when a search proved
      it, or null), ``plan`` (the shortest plan known), ``stochastic``.
    * ``cd``: ``changed_env_id``, ``horizon`` (test steps allowed), ``witness`` (action
      texts that trigger the change) and ``witness_t_star`` (its defect time).
    * imported problems may add ``declared_optimal_length`` (the answer file's count) and,
      when the import's search found no plan or witness, ``search_states`` (its budget).
    * ``explore``: nothing required.

    Any challenge may add ``injected_solution`` (``cells`` ``[x, y]`` and ``colours``):
    where the environment shows a solution injected for the curiosity metrics (003), read
    by the analysis to tell whether an attempt saw it and clicked it.
    """

    id: str
    env_id: str
    challenge: str
    seed: int
    params: dict[str, Any] = field(default_factory=dict)
    difficulty: str | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if self.challenge not in CHALLENGES:
            raise ValueError(
                f"problem {self.id!r}: unknown challenge {self.challenge!r}; "
                f"expected one of {', '.join(CHALLENGES)}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Problem:
        known = {"id", "env_id", "challenge", "seed", "params", "difficulty", "description"}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"problem {data.get('id')!r}: unknown fields {sorted(unknown)}")
        missing = {"id", "env_id", "challenge", "seed"} - set(data)
        if missing:
            raise ValueError(f"problem {data.get('id')!r}: missing fields {sorted(missing)}")
        return cls(**data)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Problem:
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON ({error})") from None
