"""A WorldTest problem: an environment, a challenge, a seed and the challenge's parameters.

Problems are plain data so that they can be written to JSON, shipped in the library,
imported from AutumnBench task folders and checked again later.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tasks.worldtest import challenge

GYM_NAMESPACE = "gridstudy"
_GYM_NAME = re.compile(r"[\w.-]+")


def gym_id(problem_id: str) -> str:
    """The problem's Gymnasium id (``game_client.gym``): ``gridstudy/`` + the id with
    ``/`` as ``-`` + ``-v0``; ``ValueError`` for an id Gymnasium cannot take.

    >>> gym_id("ant_trail/planning"), gym_id("dagmap/low-n4")
    ('gridstudy/ant_trail-planning-v0', 'gridstudy/dagmap-low-n4-v0')
    """
    name = problem_id.replace("/", "-")
    if not _GYM_NAME.fullmatch(name):
        raise ValueError(f"problem {problem_id!r} has no Gymnasium id: rename it with "
                         "letters, digits and _.-/ only")
    return f"{GYM_NAMESPACE}/{name}-v0"


@dataclass(frozen=True)
class Problem:
    """One problem.

    ``params`` belong to the challenge: its module in :mod:`tasks.worldtest` documents
    them. Any challenge may add ``injected_solution`` (``cells`` ``[x, y]`` and
    ``colours``): where the environment shows a solution injected for the curiosity
    metrics (003), read by the analysis to tell whether an attempt saw it and clicked it.
    """

    id: str
    env_id: str
    challenge: str
    seed: int
    params: dict[str, Any] = field(default_factory=dict)
    difficulty: str | None = None
    description: str = ""

    def __post_init__(self) -> None:
        try:
            challenge.get(self.challenge)
        except ValueError as error:
            raise ValueError(f"problem {self.id!r}: {error}") from None

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
