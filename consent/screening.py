"""Colour-vision screening built from the colours the study's environments actually show.

A participant who cannot tell the study's colours apart cannot do its problems, so the
screen tests exactly those colours (002 Sec. 4.1.1 included only people who were not
colour-blind), and tests discrimination, not vocabulary: each item is a grid of
:data:`CELLS` squares of one colour with one square in another, and the participant
picks the square that differs. The pairs tested first are those a colour-blind person
is most likely to confuse (:func:`tasks.colours.weakest_difference`) among pairs that
normal vision tells apart plainly (:data:`PLAINLY_DIFFERENT`); a pair nobody could tell
apart is not a fair item and is left out.

Items come from a generator seeded by the caller (the participant id), so a participant
who reloads sees the same items and a test can predict them.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

from tasks import colours, registry
from tasks.worldtest.problem import Problem

CELLS = 9
"""Squares per item, shown 3 by 3: a guess is right one time in nine."""
PLAINLY_DIFFERENT = 20.0
"""Delta E from which a pair counts as plainly different to normal vision."""

PROBE_ACTIONS = ("noop", "right", "down", "click 0 0", "left", "up", "noop", "click 1 1")
"""A few steps taken to reveal colours that appear only once something moves."""


@dataclass(frozen=True)
class ScreeningItem:
    """A grid of :data:`CELLS` squares, all ``base`` but the one at ``answer``."""

    base: str
    odd: str
    answer: int

    @property
    def colours(self) -> list[str]:
        return [self.odd if i == self.answer else self.base for i in range(CELLS)]

    def to_dict(self) -> dict:
        return {"base": self.base, "odd": self.odd, "answer": self.answer}


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


def pairs_to_test(palette: Sequence[str]) -> list[tuple[str, str]]:
    """The palette's pairs that normal vision tells apart plainly, those a colour-blind
    person would find hardest first (names that are no colour are left out)."""
    known = {name: colours.rgb(name) for name in palette}
    plain = [(a, b) for a, b in combinations(sorted(n for n, v in known.items() if v), 2)
             if colours.difference(known[a], known[b]) >= PLAINLY_DIFFERENT]
    return sorted(plain, key=lambda pair: colours.weakest_difference(known[pair[0]], known[pair[1]]))


def make_items(palette: Sequence[str], count: int, seed: int) -> list[ScreeningItem]:
    """``count`` items over the riskiest pairs of ``palette`` in turn (see the module)."""
    pairs = pairs_to_test(palette)
    if not pairs:
        raise ValueError(
            "colour screening needs two colours that look plainly different; the study's "
            f"problems show {sorted(palette)}"
        )
    rng = random.Random(seed)
    items = []
    for i in range(count):
        pair = list(pairs[i % len(pairs)])
        rng.shuffle(pair)
        items.append(ScreeningItem(pair[0], pair[1], rng.randrange(CELLS)))
    return items


def score(items: Sequence[ScreeningItem], answers: Sequence[str | None]) -> int:
    """How many answers name the square that differs (a missing answer is wrong)."""
    return sum(1 for item, answer in zip(items, answers) if answer == str(item.answer))
