"""Colour-vision screening built from the colours the study's environments actually show.

A participant who cannot tell the study's colours apart cannot do its problems, so the
screen uses exactly those colours (002 Sec. 4.1.1 included only people who were not
colour-blind). Two kinds of item, mixed:

* ``pair``: two patches side by side; are they the same colour or different?
* ``name``: one patch; which of three colour names (all from the palette) is it?

Items come from a generator seeded by the caller (the participant id), so a participant
who reloads sees the same items and a test can predict them.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tasks import registry
from tasks.worldtest.problem import Problem

PROBE_ACTIONS = ("noop", "right", "down", "click 0 0", "left", "up", "noop", "click 1 1")
"""A few steps taken to reveal colours that appear only once something moves."""


@dataclass(frozen=True)
class ScreeningItem:
    kind: str
    """``pair`` or ``name``."""
    colours: tuple[str, ...]
    """The patches shown (two for ``pair``, one for ``name``)."""
    choices: tuple[str, ...]
    answer: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "colours": list(self.colours), "choices": list(self.choices), "answer": self.answer}


def frame_colours(frame: Sequence[Sequence[str]]) -> set[str]:
    return {cell for row in frame for cell in row}


def problem_palette(problem: Problem, probe: Iterable[str] = PROBE_ACTIONS) -> set[str]:
    """Colours a participant sees in ``problem``: its first frames after a few probing
    steps, plus the colours its test phase names (goal or option colours)."""
    env = registry.make(problem.env_id)
    colours = frame_colours(env.reset(problem.seed).frame)
    width, height = env.size
    for text in probe:
        if text.startswith("click") and (width < 2 or height < 2):
            continue
        try:
            colours |= frame_colours(env.step(text).frame)
        except ValueError:
            continue  # an environment without that action (e.g. no clicks)
    colours |= set(problem.params.get("goal_colours", ()))
    for option in problem.params.get("options", ()):
        colours |= set(option)
    colours.discard("mask")
    return colours


def study_palette(problem_ids: Iterable[str]) -> list[str]:
    """The sorted union of the palettes of the given problems."""
    colours: set[str] = set()
    for problem_id in problem_ids:
        colours |= problem_palette(registry.get_problem(problem_id))
    return sorted(colours)


def make_items(palette: Sequence[str], count: int, seed: int) -> list[ScreeningItem]:
    """``count`` items alternating ``pair`` and ``name``, drawn from ``palette``."""
    if len(palette) < 2:
        raise ValueError(
            f"colour screening needs at least two colours; the study's problems show {list(palette)}"
        )
    rng = random.Random(seed)
    return [_pair_item(palette, rng) if i % 2 == 0 else _name_item(palette, rng) for i in range(count)]


def _pair_item(palette: Sequence[str], rng: random.Random) -> ScreeningItem:
    first = rng.choice(palette)
    same = rng.random() < 0.4
    second = first if same else rng.choice([c for c in palette if c != first])
    return ScreeningItem("pair", (first, second), ("same", "different"), "same" if same else "different")


def _name_item(palette: Sequence[str], rng: random.Random) -> ScreeningItem:
    names = rng.sample(list(palette), min(3, len(palette)))
    answer = names[0]
    rng.shuffle(names)
    return ScreeningItem("name", (answer,), tuple(names), answer)


def score(items: Sequence[ScreeningItem], answers: Sequence[str | None]) -> int:
    """How many answers are right (a missing answer is wrong)."""
    return sum(1 for item, answer in zip(items, answers) if answer == item.answer)
