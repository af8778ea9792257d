"""How an AutumnBench harness folder's masked-frame-prediction files become a problem
(``prompts/<env>_mfp.json``: the recording and the choices; ``answers/<env>_mfp.json``:
``correct_idx``); :mod:`tasks.importer` asks the challenge for this reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tasks.core import parse_action, rollout
from tasks.import_files import FolderError, json_field, read_json
from tasks.importer import IMPORT_SEED, MASKED, ImportedEnv, colour_of, read_grid
from tasks.worldtest.challenge import HarnessRules
from tasks.worldtest.problem import Problem


def from_harness(folder: Path, env: ImportedEnv, colours: dict[int, str], make_env) -> Problem:
    path = folder / "prompts" / f"{env.name}_mfp.json"
    prompt = read_json(path)
    observations = json_field(prompt, "observations", list, path)
    if len(observations) < 2 or not all(isinstance(o, dict) for o in observations):
        raise FolderError(f"{path}: expected 'observations' to be at least two objects")
    grids = [read_grid(o.get("masked_grid"), path, f"observation {i} masked_grid")
             for i, o in enumerate(observations)]
    actions = [_action(o.get("action"), path, i) for i, o in enumerate(observations[1:], 1)]
    masked_at = [i for i, g in enumerate(grids) if any(MASKED in row for row in g)]
    if not masked_at:
        raise FolderError(f"{path}: no observation has masked cells (value {MASKED})")
    mask = [(x, y) for y, row in enumerate(grids[-1]) for x, v in enumerate(row) if v == MASKED]
    choices = json_field(prompt, "choices", list, path)
    options = [_option(choice, mask, colours, path, i) for i, choice in enumerate(choices)]
    answer_path = folder / "answers" / f"{env.name}_mfp.json"
    answer = json_field(read_json(answer_path), "correct_idx", int, answer_path)
    if not 0 <= answer < len(options):
        raise FolderError(f"{answer_path}: correct_idx {answer} is not a choice 0..{len(options) - 1}")
    _note_recording(env, make_env, actions, grids, colours)
    params = {"actions": actions, "mask": [list(c) for c in mask], "masked_from": masked_at[0],
              "options": options, "answer": answer}
    return Problem(f"{env.env_id}/mfp", env.env_id, "mfp", IMPORT_SEED, params,
                   description=f"imported from AutumnBench ({env.name}_mfp)")


def _action(value: Any, path: Path, index: int) -> str:
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise FolderError(f"{path}: observation {index}: expected an 'action' like "
                          '{"type": "left"} or {"type": "click", "x": 1, "y": 2}')
    text = value["type"]
    if text == "click":
        text = f"click {value.get('x')} {value.get('y')}"
    try:
        action = parse_action(text)
    except ValueError as error:
        raise FolderError(f"{path}: observation {index}: {error}") from None
    if not action.is_env_action:
        raise FolderError(f"{path}: observation {index}: {text!r} is not an environment action")
    return str(action)


def _option(choice: Any, mask: list[tuple[int, int]], colours: dict[int, str], path: Path,
            index: int) -> list[str]:
    """The colours of one choice grid (the mask's bounding box) in the mask's order."""
    grid = read_grid(choice, path, f"choice {index}")
    left, top = min(x for x, _ in mask), min(y for _, y in mask)
    width = max(x for x, _ in mask) - left + 1
    height = max(y for _, y in mask) - top + 1
    if len(grid) != height or any(len(row) != width for row in grid):
        raise FolderError(f"{path}: choice {index}: expected {height} rows of {width} "
                          "(the masked rectangle)")
    return [colour_of(grid[y - top][x - left], colours, path) for x, y in mask]


def _note_recording(env: ImportedEnv, make_env, actions, grids, colours) -> None:
    """Say when our interpreter does not reproduce the recording's visible frames."""
    frames = [o.frame for o in rollout(make_env(env.env_id), IMPORT_SEED, actions)]
    for t, (frame, grid) in enumerate(zip(frames, grids, strict=True)):
        shown = [[colours.get(v) for v in row] for row in grid]
        if any(v != MASKED and shown[y][x] != frame[y][x]
               for y, row in enumerate(grid) for x, v in enumerate(row)):
            env.notes.append(f"mfp: frame {t} differs from the recording (a stochastic "
                             "program, or an interpreter difference)")
            return


class Rules(HarnessRules):
    """The published harness's masked frame prediction: only ``step`` until the last
    frame, then ``rewind`` and the options (no ``noop``, ``quit`` or ``submit``);
    choosing an option submits it; a wrong option scores -1."""

    noop_in_test = False

    def offered(self, texts, test, phase, list_each_choice):
        if test["position"] < test["length"]:
            return ["step"]
        return [t for t in texts if t not in ("noop", "quit", "submit")]

    def follow_up(self, applied):
        return ["submit"] if applied.startswith("choose_option_") else []

    def score(self, score, outcome, answered=None):
        return -1.0 if outcome.get("test_chosen") is not None and score < 1.0 else score


RULES = Rules()
