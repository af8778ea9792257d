"""Masked frame prediction (002 App. C.1): predict the hidden part of a recording.

The test phase steps and rewinds through a recorded trajectory whose last frames are
masked; the participant or model chooses one of six options for the masked region of
the final frame and submits. The score is 1 iff the chosen option is the correct one.

Problem ``params``: ``actions`` (the recorded trajectory's action texts), ``mask`` (cells
``[x, y]``), ``masked_from`` (first frame index shown masked), ``options`` (six colour
tuples, one per mask cell), ``answer`` (index of the correct option); derived problems
add ``samples`` (realisations sampled) and ``stochastic``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, zip_longest
from typing import Any

from tasks import registry
from tasks.core import Action, Frame, Observation, frame_size, masked, parse_action, region, rollout
from tasks.worldtest.challenge import (
    DONE,
    EXPLORE_FREELY,
    GIVE_UP,
    PICKS_OPTION,
    Challenge,
    EnvFactory,
    Question,
    Result,
    TestPhase,
    register,
)
from tasks.worldtest.check import final_frames, is_stochastic, sample_seeds
from tasks.worldtest.derive import (
    Cells,
    Colours,
    cells_in_grid,
    deterministic_cells,
    env_actions,
    require_deterministic,
    windows,
)
from tasks.worldtest.problem import Problem

DERIVE_SAMPLES = 64
OPTION_COUNT = 6
MFP_SHAPES = tuple((w, h) for w in (2, 3, 4) for h in (2, 3, 4))
SHIFTS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, -1), (1, -1), (-1, 1))


class MaskedFramePrediction(TestPhase):
    """Step and rewind through a recorded trajectory whose last frames are masked, choose
    one of six options for the masked region of the final frame, submit. Score 1 iff the
    chosen option is the correct one."""

    def __init__(self, problem: Problem, make_env: EnvFactory) -> None:
        super().__init__(problem, make_env)
        self.actions: list[str] = list(self.params["actions"])
        self.mask = [tuple(cell) for cell in self.params["mask"]]
        self.masked_from = int(self.params.get("masked_from", len(self.actions)))
        self.options = [tuple(option) for option in self.params["options"]]
        self.answer = int(self.params["answer"])
        self.frames: list[list[list[str]]] = []
        self.position = 0
        self.chosen: int | None = None

    def start(self) -> Observation:
        env = self.make_env(self.problem.env_id)
        self.frames = [env.reset(self.problem.seed).frame]
        self.frames += [env.step(action).frame for action in self.actions]
        self.position = 0
        return self._observation()

    @property
    def length(self) -> int:
        """Index of the final frame (the trajectory has ``length + 1`` frames)."""
        return len(self.actions)

    def allowed_verbs(self, phase: str) -> tuple[str, ...]:
        verbs = ["noop"]
        if self.position < self.length:
            verbs.append("step")
        if self.position > 0:
            verbs.append("rewind")
        verbs.extend(("choose_option", "submit_option"))
        if self.chosen is not None:
            verbs.append("submit")
        verbs.append("quit")
        return tuple(verbs)

    def choice_count(self, verb: str) -> int:
        return len(self.options) if verb in ("choose_option", "submit_option") else 0

    def apply(self, action: Action) -> Result:
        verb = action.verb
        if verb == "step":
            self.position += 1
        elif verb == "rewind":
            self.position -= 1
        elif verb in ("choose_option", "submit_option"):  # submit_option_I: the page's answer
            if not 0 <= action.index < len(self.options):
                raise ValueError(
                    f"{action} is not an option: expected choose_option_0 to "
                    f"choose_option_{len(self.options) - 1}"
                )
            self.chosen = action.index
        if verb in ("submit", "submit_option"):
            return Result(self._observation(), DONE, float(self.chosen == self.answer))
        if verb == "quit":
            return Result(self._observation(), DONE, 0.0)
        return Result(self._observation())

    def frame_at(self, position: int) -> list[list[str]]:
        frame = self.frames[position]
        return masked(frame, self.mask) if position >= self.masked_from else frame

    def _observation(self) -> Observation:
        frame = self.frame_at(self.position)
        text = json.dumps({
            "video_location": f"{self.position}/{self.length}",
            "render": frame,
            "action_taken": self.actions[self.position - 1] if self.position else "start",
            "is_finished": self.position == self.length,
        })
        return Observation(frame, text, {"position": self.position})

    def view(self, phase: str) -> dict[str, Any]:
        return {
            "kind": "mfp",
            "position": self.position,
            "length": self.length,
            "masked_from": self.masked_from,
            "mask": [list(c) for c in self.mask],
            "action_taken": self.actions[self.position - 1] if self.position else "start",
            "options": [list(o) for o in self.options],
            "chosen": self.chosen,
        }

    def outcome(self) -> dict[str, Any]:
        return {"chosen": self.chosen, "answer": self.answer}


# -- derivation ----------------------------------------------------------------------------


def derive_mfp(
    env_id: str,
    seed: int,
    actions: Sequence[str | Action],
    *,
    mask: Iterable[Sequence[int]] | None = None,
    masked_from: int | None = None,
    samples: int = DERIVE_SAMPLES,
    rng_seed: int = 0,
    problem_id: str | None = None,
    make_env: EnvFactory = registry.make,
) -> Problem:
    """A masked-frame-prediction problem on the trajectory ``actions`` from ``seed``.

    The masked region of the final frame must be the same from ``seed`` and from every
    one of ``samples`` sampled seeds, so exactly one option is right in every
    realisation. Without ``mask`` a 2x2 to 4x4 window is chosen that is deterministic,
    changed since the first frame and, preferably, differs from every visible frame.
    Frames from ``masked_from`` on (default: the last quarter) are shown masked.
    """
    actions = env_actions(actions)
    env = make_env(env_id)
    frames = [o.frame for o in rollout(env, seed, actions)]
    finals = [frames[-1], *final_frames(env, actions, sample_seeds(samples, rng_seed, seed))]
    masked_from = len(actions) - len(actions) // 4 if masked_from is None else masked_from
    if not 0 <= masked_from <= len(actions):
        raise ValueError(f"masked_from {masked_from} must lie in 0..{len(actions)}")
    rng = random.Random(rng_seed)
    if mask is None:
        cells, distractors = _choose_mfp_window(frames, finals, masked_from, rng)
    else:
        cells = cells_in_grid(mask, frames[0])
        require_deterministic(cells, finals)
        distractors = _distractors(frames, cells, rng)
        if distractors is None:
            raise ValueError(f"cannot build {OPTION_COUNT - 1} distinct distractors for mask {cells}")
    options, answer = _shuffled(region(frames[-1], cells), distractors, rng)
    params = {
        "actions": actions, "mask": [list(c) for c in cells], "masked_from": masked_from,
        "options": [list(o) for o in options], "answer": answer, "samples": samples,
        "stochastic": is_stochastic(env, finals),
    }
    return Problem(problem_id or f"{env_id}/mfp-{seed}", env_id, "mfp", seed, params)


def _choose_mfp_window(frames, finals, masked_from, rng) -> tuple[Cells, list[Colours]]:
    """The best-ranked deterministic changed window for which distractors exist."""
    stable = deterministic_cells(finals)
    ranked = []
    for order, cells in enumerate(windows(frames[0], MFP_SHAPES)):
        if all(cell in stable for cell in cells):
            rank = _mfp_rank(frames, masked_from, cells)
            if rank is not None:
                ranked.append((rank, -order, cells))
    for _rank, _order, cells in sorted(ranked, reverse=True):
        distractors = _distractors(frames, cells, rng)
        if distractors is not None:
            return cells, distractors
    raise ValueError(
        "no 2x2 to 4x4 window of the final frame is both deterministic across the sampled "
        "seeds and changed since the first frame: try a longer or different trajectory"
    )


def _mfp_rank(frames: list[Frame], masked_from: int, cells: Cells) -> tuple | None:
    """How good a window is to mask (higher is better), None if it never changed.

    A window whose final content appears in no visible frame cannot be guessed by
    copying; then one that differs from the last visible frame; then several colours;
    then one that differs from more visible frames; then a smaller one.
    """
    final = region(frames[-1], cells)
    if final == region(frames[0], cells):
        return None
    visible = [region(frame, cells) for frame in frames[: max(1, masked_from)]]
    return (final not in visible, final != visible[-1], len(set(final)) > 1,
            sum(v != final for v in visible), -len(cells))


def _distractors(frames: list[Frame], cells: Cells, rng: random.Random) -> list[Colours] | None:
    """Five plausible wrong options, or None when there are not enough distinct ones.

    Drawn in turn from the window in earlier frames (latest first), the window shifted
    by a cell in the final frame, and the answer with one (then two) cells recoloured
    with a colour used in the trajectory. Callers have made sure the region is the same
    in every sampled realisation, so a distractor different from the answer is never
    observed as the final value.
    """
    answer = region(frames[-1], cells)
    earlier = [region(frame, cells) for frame in reversed(frames[:-1])]
    shifted = [region(frames[-1], moved) for moved in _shifted(cells, frames[0])]
    palette = sorted({colour for frame in frames for row in frame for colour in row})
    once, twice = _recoloured(answer, palette, rng)
    chosen: list[Colours] = []
    for option in chain(_round_robin(earlier, shifted, once), twice):
        if option != answer and option not in chosen:
            chosen.append(option)
            if len(chosen) == OPTION_COUNT - 1:
                return chosen
    return None


def _recoloured(answer: Colours, palette: list[str], rng: random.Random):
    """The answer with one cell recoloured, and with two, each list shuffled by ``rng``."""
    once = [_with(answer, {i: c}) for i in range(len(answer)) for c in palette if c != answer[i]]
    pairs = [(i, j) for i in range(len(answer)) for j in range(i + 1, len(answer))]
    twice = [_with(answer, {i: c, j: d}) for i, j in pairs for c in palette for d in palette
             if c != answer[i] and d != answer[j]][:500]
    rng.shuffle(once)
    rng.shuffle(twice)
    return once, twice


def _with(colours: Colours, changes: dict[int, str]) -> Colours:
    return tuple(changes.get(i, c) for i, c in enumerate(colours))


def _round_robin(*pools: list[Colours]) -> Iterator[Colours]:
    for row in zip_longest(*pools):
        yield from (option for option in row if option is not None)


def _shuffled(answer: Colours, distractors: list[Colours], rng: random.Random):
    options = [answer, *distractors]
    rng.shuffle(options)
    return options, options.index(answer)


def _shifted(cells: Cells, frame: Frame) -> Iterator[Cells]:
    width, height = frame_size(frame)
    for dx, dy in SHIFTS:
        moved = [(x + dx, y + dy) for x, y in cells]
        if all(0 <= x < width and 0 <= y < height for x, y in moved):
            yield moved


# -- check -----------------------------------------------------------------------------------


def _check_mfp(problem, env, samples, rng_seed, make_env) -> list[str]:
    params = problem.params
    mask = [tuple(cell) for cell in params["mask"]]
    options = [tuple(option) for option in params["options"]]
    answer = params["answer"]
    reasons = _mfp_shape_reasons(env, mask, options, answer, params)
    if reasons:
        return reasons
    phase = MaskedFramePrediction(problem, make_env)
    phase.start()
    truth = region(phase.frames[-1], mask)
    if truth != options[answer]:
        reasons.append(f"the answer (option {answer}) is not the final frame's masked region {list(truth)}")
    seeds = sample_seeds(samples, rng_seed, problem.seed)
    observed = {}
    for seed, frame in zip(seeds, final_frames(env, phase.actions, seeds), strict=True):
        observed.setdefault(region(frame, mask), seed)
    other = next(((v, s) for v, s in observed.items() if v != truth), None)
    if other is not None:
        reasons.append(f"the masked region is not deterministic: seed {other[1]} ends with "
                       f"{list(other[0])}, seed {problem.seed} with {list(truth)}")
    for index, option in enumerate(options):
        if index != answer and option in observed:
            reasons.append(f"distractor {index} {list(option)} is observed with seed {observed[option]}")
    return reasons


def _mfp_shape_reasons(env, mask, options, answer, params) -> list[str]:
    reasons = []
    width, height = env.size
    if not mask:
        reasons.append("the mask is empty")
    outside = [list(c) for c in mask if not (0 <= c[0] < width and 0 <= c[1] < height)]
    if outside:
        reasons.append(f"mask cells {outside} are outside the {width}x{height} grid")
    if len(options) != 6:
        reasons.append(f"{len(options)} options, expected 6")
    if len(set(options)) != len(options):
        reasons.append("options are not unique")
    if any(len(option) != len(mask) for option in options):
        reasons.append(f"every option must have one colour per mask cell ({len(mask)})")
    if not isinstance(answer, int) or not 0 <= answer < len(options):
        reasons.append(f"answer {answer!r} is not an option index 0..{len(options) - 1}")
    actions = [parse_action(a) for a in params["actions"]]
    if not actions or not all(a.is_env_action for a in actions):
        reasons.append("actions must be a non-empty list of environment actions")
    if not 0 <= int(params.get("masked_from", len(actions))) <= len(actions):
        reasons.append(f"masked_from must lie in 0..{len(actions)}")
    return reasons


def _from_recipe(env_id, changed_env_id, seed, recipe, *, problem_id, samples) -> Problem:
    return derive_mfp(env_id, seed, recipe["actions"], mask=recipe.get("mask"),
                      samples=samples, problem_id=problem_id)


HARNESS_PROFILE = "autumnbench"
"""The protocol profile (``state["protocol"]``) under which a model is shown the test as
the published harness shows it (:func:`harness_frame`)."""


def _option_grids(test: dict[str, Any]) -> list[list[list[str]]]:
    """Each option as a matrix over the mask's bounding box ('n/a' for unmasked cells)."""
    xs = [x for x, _ in test["mask"]]
    ys = [y for _, y in test["mask"]]
    x0, y0 = min(xs), min(ys)
    grids = []
    for option in test["options"]:
        grid = [["n/a"] * (max(xs) - x0 + 1) for _ in range(max(ys) - y0 + 1)]
        for (x, y), colour in zip(test["mask"], option):
            grid[y - y0][x - x0] = colour
        grids.append(grid)
    return grids


def harness_frame(state: dict[str, Any]) -> str | None:
    """Under the autumnbench profile, each test frame as the published harness sends it:
    ``video_location``, ``render``, ``action_took`` and ``is_finished``, and the options
    as ``choices`` only at the last frame; None otherwise (the frame's text, then the
    options after it: :func:`options_text`)."""
    test = state.get("test") or {}
    if state.get("protocol") != HARNESS_PROFILE or "options" not in test:
        return None
    shown = json.loads(state["text"])
    finished = test["position"] == test["length"]
    frame = {"video_location": shown["video_location"], "render": shown["render"],
             "action_took": shown["action_taken"], "is_finished": finished}
    if finished:
        frame["choices"] = _option_grids(test)
    return json.dumps(frame)


def options_text(state: dict[str, Any]) -> str:
    """Each option as a matrix over the mask's bounding box ('n/a' for unmasked cells),
    from the first test frame on (under the autumnbench profile the options are part of
    the last frame instead: :func:`harness_frame`)."""
    test = state.get("test") or {}
    if "options" not in test or state.get("protocol") == HARNESS_PROFILE:
        return ""
    xs = [x for x, _ in test["mask"]]
    ys = [y for _, y in test["mask"]]
    lines = [f"The masked region spans columns {min(xs)}-{max(xs)} and rows "
             f"{min(ys)}-{max(ys)}. The options are:"]
    for index, grid in enumerate(_option_grids(test)):
        lines.append(f"choose_option_{index}: {json.dumps(grid)}")
    if test.get("chosen") is not None:
        lines.append(f"You have chosen option {test['chosen']}; submit to confirm or choose again.")
    return "\n".join(lines)


CHALLENGE = register(Challenge(
    name="mfp",
    title="masked frame prediction",
    phase=MaskedFramePrediction,
    goal="predict hidden parts of a recording",
    how="In the test, step through the recording and choose the option that fills the hidden cells.",
    buttons={"quit": GIVE_UP},
    guide={"interaction": EXPLORE_FREELY,
           "test": ("Test: a recording of this world is played back step by step. Use Step and "
                    "Rewind to watch it; in its last frame some cells are hidden. Choose the "
                    "option that shows what those cells look like, then press Submit.")},
    model_task=(
        "you will step through frames from a trajectory in this same environment you interacted "
        "with (use the 'step' action to step through the trajectory). Each frame is structured "
        "as a json object with the following fields:\n\"render\": the grid observed,\n"
        "\"video_location\": timestep at which the frame was observed,\n\"action_taken\": action "
        "taken at this timestep,\n\"is_finished\": whether the episode is finished.\nYou will "
        "step through the trajectory one frame at a time. Towards the end of the trajectory, "
        "parts of the grid will be masked (where the masked locations are marked as 'mask') and "
        "you will be given a set of choices to fill in the masked region at the final timestep. "
        "You need to choose the option that fits the masked region at the final timestep "
        "(choose_option_I), then submit. You can also use the 'rewind' action to go back to the "
        "previous frame."
    ),
    model_details=options_text,
    model_frame=harness_frame,
    questions=(
        Question(
            "mfp-goal",
            "In the test you watch a recording whose last frames are partly hidden. What do you do?",
            ("Pick the option that fills the hidden cells correctly", "Repaint the grid", "Nothing"),
            0,
        ),
    ),
    check=_check_mfp,
    from_recipe=_from_recipe,
    harness="tasks.worldtest.mfp_harness:from_harness",
    harness_rules="tasks.worldtest.mfp_harness:RULES",
    baseline=PICKS_OPTION,
))
