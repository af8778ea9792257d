"""How an AutumnBench harness folder's change-detection files become a problem
(``prompts/<env>_cd.json`` names the changed program), with a witness found by rollouts
of the two programs in lockstep; :mod:`tasks.importer` asks the challenge for this
reader."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

from tasks.core import rollout
from tasks.import_files import changed_program
from tasks.importer import IMPORT_SEED, ImportedEnv
from tasks.worldtest.cd import derive_cd
from tasks.worldtest.challenge import SELECT, HarnessRules
from tasks.worldtest.check import Lockstepped, lockstep
from tasks.worldtest.derive import default_horizon
from tasks.worldtest.problem import Problem
from tasks.worldtest.scoring import cd_score
from tasks.worldtest.search import probe_rollouts, shorten


def from_harness(folder: Path, env: ImportedEnv, colours: dict[int, str], make_env) -> Problem:
    env.changed = changed_program(folder, env.name)  # make_env finds it from now on
    description = f"imported from AutumnBench ({env.name}_cd)"
    rejected = []
    for witness in _witnesses(env, make_env):
        try:
            problem = derive_cd(env.env_id, env.changed_env_id, IMPORT_SEED,
                                shorten(witness, partial(_shows_change, env, make_env)),
                                problem_id=f"{env.env_id}/cd", make_env=make_env)
        except ValueError as error:
            rejected.append(str(error))
            continue
        return Problem(**{**problem.to_dict(), "description": description})
    env.notes.append(f"cd: no action sequence within {env.search_states} states shows the "
                     "change" + (f" ({len(rejected)} rejected, the last: {rejected[-1]})"
                                 if rejected else ""))
    params = {"changed_env_id": env.changed_env_id, "horizon": default_horizon(0),
              "search_states": env.search_states}
    return Problem(f"{env.env_id}/cd", env.env_id, "cd", IMPORT_SEED, params,
                   description=description)


def _shows_change(env: ImportedEnv, make_env, actions: list[str]) -> bool:
    """Whether ``actions`` make the programs' frames differ, their randomness agreeing."""
    run = lockstep(make_env(env.env_id), make_env(env.changed_env_id), IMPORT_SEED, actions)
    return run.t_star is not None and run.randomness_agrees


def _witnesses(env: ImportedEnv, make_env) -> Iterator[list[str]]:
    """Action sequences after which the two programs' frames differ, to be checked by
    :func:`derive_cd`: the MFP trajectory when it shows the change, then seeded random
    rollouts of the two programs in lockstep."""
    def pair() -> Lockstepped:
        return Lockstepped(make_env(env.env_id), make_env(env.changed_env_id))

    mfp = next((p for p in env.problems if p.challenge == "mfp"), None)
    if mfp is not None:
        if any(o.info["differs"] for o in rollout(pair(), IMPORT_SEED, mfp.params["actions"])):
            yield list(mfp.params["actions"])
    yield from probe_rollouts(pair, IMPORT_SEED, lambda o: o.info["differs"],
                              max_states=env.search_states)


FOUND_AFTER = 2
"""Test steps before the published harness offers ``I found the change!``."""


class Rules(HarnessRules):
    """The published harness's change detection: ``found-change`` only after
    :data:`FOUND_AFTER` test steps, ``reset`` offered (and doing nothing); in the
    selection every frame listed, then ``submit`` and ``quit``; an answer before the
    change (or a change never triggered) scores -1."""

    def offered(self, texts, test, phase, list_each_choice):
        if phase == SELECT:
            if not list_each_choice:
                return texts
            frames = [t for t in texts if t.startswith("choose_frame_")]
            return [*frames, "submit", "quit"]  # the harness lists its submit from the start
        if test["steps"] < FOUND_AFTER:
            texts = [t for t in texts if t != "found-change"]
        texts = list(texts)
        texts.insert(len(texts) - 1, "reset")
        return texts

    def does_nothing(self, text):
        return text == "reset"

    def score(self, score, outcome, answered=None):
        """With ``answered``, the formula is taken there in place of the chosen frame,
        as the harness's code does."""
        chosen, t_star = outcome.get("test_chosen"), outcome.get("test_t_star")
        if chosen is None:
            return score
        at = chosen if answered is None else answered
        if t_star is None or at < t_star - 1:
            return -1.0
        return cd_score(at, t_star) if answered is not None else score


RULES = Rules()
