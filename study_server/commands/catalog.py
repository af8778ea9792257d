"""``gridstudy envs ...`` and ``gridstudy problems ...``."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from tasks import registry
from tasks.library import CATEGORIES
from tasks.words import count, join_and, suggest
from tasks.worldtest.challenge import names as challenge_names
from tasks.worldtest.check import DEAD_END_SEEDS
from tasks.worldtest.problem import gym_id


@click.group()
def envs() -> None:
    """Registered environments."""


@envs.command("list")
def envs_list() -> None:
    """List every registered environment with its grid size and frame rate."""
    specs = registry.list_envs()
    if not specs:
        click.echo("no environments registered")
        return
    width = max(len(s.id) for s in specs)
    for spec in specs:
        tags = ", ".join(spec.tags)
        summary = spec.description.strip().splitlines()[0] if spec.description.strip() else ""
        click.echo(f"{spec.id:<{width}}  {_size_and_rate(spec):<13}  {tags:<28}  {summary}")


def _size_and_rate(spec: registry.EnvSpec) -> str:
    """``16x16 8 fps``, as the environment starts (seed 0); ``does not start`` for one
    whose program fails (``gridstudy envs check`` says why). The help promised both, and
    the listing printed neither."""
    try:
        env = spec.make()
        frame, rate = env.reset(0).frame, env.frame_rate
    except Exception:  # an author's program mid-edit: listed, not fatal to the listing
        return "does not start"
    return f"{len(frame[0])}x{len(frame)} {rate} fps"


@envs.command("check")
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option("--strict", is_flag=True, help="Fail on warnings too.")
@click.option("--quiet", "-q", is_flag=True, help="Print errors only.")
@click.option("--steps", default=300, show_default=True,
              help="Ticks of each rollout once a program has no static errors "
                   "(0: static checks only).")
def envs_check(paths: tuple[str, ...], strict: bool, quiet: bool, steps: int) -> None:
    """Check Autumn programs in two stages: statically, then rolled out.

    PATHS are program files or folders (every .sexp inside is checked); without PATHS,
    every registered environment's program. Each message is file:line:col with the
    source quoted. Rollout: a program without static errors is played for --steps ticks
    from two seeds, with no-ops and with random actions; its first runtime error (a
    step over its step budget included) is an error, with the tick, the seed and a file
    of the actions that reach it for the debugger; otherwise its heaviest step is
    reported against the budget (its folder's env.json may raise it), and an object that
    starts with none of its cells on the grid is a warning. Exits with 1 when a program
    has errors (with --strict, warnings).
    """
    from tasks.autumn.lint import ERROR, WARNING, check_file

    files = _program_files(paths)
    if not files:
        raise click.ClickException("no Autumn programs (.sexp files) found")
    counts = {"error": 0, "warning": 0}
    failing = 0
    for path in files:
        findings = check_file(path)
        for finding in findings:
            counts[finding.severity] += 1
            if not (quiet and finding.severity == WARNING):
                click.echo(str(finding))
        failing += any(f.severity != WARNING or strict for f in findings)
        if steps > 0 and not any(f.severity == ERROR for f in findings):
            failures, warnings, cost = _roll_out(path, steps)
            for line in failures + ([] if quiet else warnings):
                click.echo(line)
            counts["error"] += len(failures)
            counts["warning"] += len(warnings)
            failing += bool(failures or strict and warnings)
            if cost and not quiet:
                click.echo(f"rollout: {path}: {cost}")
    click.echo(f"{count(len(files), 'program')} checked: {count(counts['error'], 'error')}, "
               f"{count(counts['warning'], 'warning')}", err=True)
    if failing:
        sys.exit(1)


@envs.command("new")
@click.argument("name")
@click.option("--category", required=True, type=click.Choice(sorted(CATEGORIES)),
              help="The kind of environment (the library covers all six).")
@click.option("--stochastic", is_flag=True, help="The skeleton includes a source of randomness.")
@click.option("--library", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The user's library to write into [default: $GRIDSTUDY_LIBRARY or "
                   "./gridstudy-library].")
def envs_new(name: str, category: str, stochastic: bool, library: Path | None) -> None:
    """Start a new environment in the user's library (LIBRARY/autumn/NAME): a folder with
    a working skeleton program, its changed variant, documentation and recipes. Adding
    an environment touches that folder only; every command finds it there."""
    from tasks.library import OWN
    from tasks.library.scaffold import create, next_steps

    root = _library_option(library)
    try:
        folder = create(name, category, stochastic=stochastic, library=root / OWN)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"created {folder} (autumn/{name}, {category}"
               f"{', stochastic' if stochastic else ''}); next:")
    for step in next_steps(folder):
        click.echo(f"  {step}")


def _library_option(library: Path | None) -> Path:
    """The user's library a command writes into: ``--library``, else $GRIDSTUDY_LIBRARY;
    a warning when they differ, since every other command looks in $GRIDSTUDY_LIBRARY."""
    from tasks.library import LIBRARY_VARIABLE, library_root

    root = library_root()
    if library is None:
        return root
    if library.resolve() != root.resolve():
        click.echo(f"warning: the other commands look in ${LIBRARY_VARIABLE} ({root}); run "
                   f"'export {LIBRARY_VARIABLE}={library}' so they find what is written "
                   f"to {library}", err=True)
    return library


def _roll_out(path: str, steps: int) -> tuple[list[str], list[str], str]:
    """The rollout stage of the program in ``path``: its failures (each naming the path);
    when none, its warnings and its heaviest step."""
    from tasks.autumn import AutumnError, load
    from tasks.checker import step_cost
    from tasks.library import step_budget_of
    from tasks.worldtest.rollout import ROLLOUT_SEEDS, program_failures

    try:
        budget = step_budget_of(Path(path).parent)
        env = load(Path(path).read_text(encoding="utf-8"), str(path), budget)
    except AutumnError as error:  # the start of the program failed
        return [f"rollout check: {error}"], [], ""
    except ValueError as error:  # env.json, or its step_budget
        return [f"{path}: error: {error}"], [], ""
    failures = program_failures(env, str(path), horizon=steps)
    if failures:
        return [str(f) for f in failures], [], ""
    cost = str(step_cost([env]))
    off_grid: dict[tuple[str, str, tuple[int, int]], list[int]] = {}
    for seed in ROLLOUT_SEEDS:
        env.reset(seed)
        for found in env.objects_off_grid():
            off_grid.setdefault(found, []).append(seed)
    width, height = env.size
    return [], [f"{path}: warning: {holder} (a {kind} at {origin}) starts outside the "
                f"{width}x{height} grid (from seed{'s' if len(seeds) > 1 else ''} "
                f"{join_and([str(seed) for seed in seeds])}): none of its "
                "cells is drawn until it moves in; if it is meant to wait off the grid, "
                "ignore this" for (holder, kind, origin), seeds in off_grid.items()], cost


def _program_files(paths: tuple[str, ...]) -> list[str]:
    if not paths:
        return sorted({s.program for s in registry.list_envs() if s.program})
    found: list[str] = []
    for path in map(Path, paths):
        found += sorted(map(str, path.rglob("*.sexp"))) if path.is_dir() else [str(path)]
    return found


@click.group()
def problems() -> None:
    """Registered WorldTest problems."""


@problems.command("list")
@click.option("--challenge", type=click.Choice(challenge_names()))
@click.option("--gym", is_flag=True,
              help="Print each problem's Gymnasium id (after `import game_client.gym`).")
def problems_list(challenge: str | None, gym: bool) -> None:
    """List every registered problem."""
    specs = registry.list_problems(challenge=challenge)
    if not specs:
        click.echo("no problems registered")
        return
    if gym:
        for spec in specs:
            click.echo(_gym_id_or_why(spec.id))
        return
    width = max(len(s.id) for s in specs)
    for spec in specs:
        click.echo(f"{spec.id:<{width}}  {spec.challenge:<9}  {spec.env_id}")
    click.echo(f"{len(specs)} problems")


def _gym_id_or_why(problem_id: str) -> str:
    try:
        return gym_id(problem_id)
    except ValueError as error:
        return f"# {error}"


@problems.command("check")
@click.argument("problem_ids", nargs=-1)
@click.option("--samples", default=None, type=click.IntRange(min=1),
              help="Seeds sampled for stochastic checks.")
@click.option("--strict", is_flag=True,
              help="Fail on unverified problems too (a search found no plan or witness).")
@click.option("--seeds", default=DEAD_END_SEEDS, show_default=True, type=click.IntRange(min=0),
              help="Runs of each planning and change-detection problem's check from "
                   "anywhere: a player wanders into the test under a seed, then a search "
                   "must still reach the goal or show the change (0: skip it).")
@click.option("--search-states", default=1500, show_default=True, type=click.IntRange(min=1),
              help="States each search from a wandered state expands (the planning goal's "
                   "last one four times as many; a larger program may need more).")
@click.option("--jobs", default=None, type=click.IntRange(min=1),
              help="Problems checked at once, each in its own process [the machine's "
                   "cores]. The verdicts are the same whatever it is: the searches count "
                   "their time in their own CPU seconds.")
def problems_check(problem_ids: tuple[str, ...], samples: int | None, strict: bool,
                   seeds: int, search_states: int, jobs: int | None) -> None:
    """Check that problems are valid, and say why not when one is not; for a program,
    the heaviest step the check saw (evaluations against its step budget); for a
    planning problem, in how many runs a search still reached its goal after a player
    wandered into the test, and for a change-detection problem, in how many the change
    could still be shown (below all of them it is unverified: a participant may reach a
    state it cannot be passed from, and the run is written to a file to replay). What
    was found is kept in checks.json beside the program, under the problem's version:
    `gridstudy study create` warns of a problem without a full check at its version.

    Exits with 1 when a problem is invalid (or, with --strict, unverified: valid as far
    as could be checked, but the bounded search found no plan or witness to prove it)."""
    ids = list(problem_ids) or [s.id for s in registry.list_problems()]
    _known(ids, {s.id for s in registry.list_problems()}, "problem",
           "gridstudy problems list; a new environment's problems exist once "
           "'gridstudy problems derive NAME' wrote them")
    counts = dict.fromkeys(CHECK_LABELS, 0)
    work = [(problem_id, samples, seeds, search_states) for problem_id in ids]
    jobs = min(jobs or len(os.sched_getaffinity(0)), len(ids))
    with _processes(jobs) as pool:  # each said, in order, once it and those before are
        for problem_id, (status, lines) in zip(ids, pool(_check_one, work)):  # checked
            click.echo(f"{CHECK_LABELS[status]:<10} {problem_id}")
            for line in lines:
                click.echo(f"           {line}")
            counts[status] += 1
    click.echo(", ".join(f"{n} {status}" for status, n in counts.items()))
    if counts["invalid"] or (strict and counts["unverified"]):
        sys.exit(1)


CHECK_LABELS = {"valid": "ok", "unverified": "UNVERIFIED", "invalid": "INVALID"}


@contextmanager
def _processes(count: int) -> Iterator[Callable[..., Iterable[Any]]]:
    """An ordered ``map`` over ``count`` processes forked from this one (the problems
    this process registered, an author's library among them, are theirs too); the
    plain ``map`` for one, and in a process running other threads (the command called
    inside a test's process beside its servers): a fork copies none of them but every
    lock one of them held, and a process forked there hung for good."""
    if count <= 1 or threading.active_count() > 1:
        yield map
        return
    from study_server.services import die_with_parent

    # the processes leave Ctrl-C to the command, which stops them (each printed its
    # traceback), from their first instant, and end with the command, even one killed
    # (they went on checking for minutes)
    interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        pool = multiprocessing.get_context("fork").Pool(count, die_with_parent)
    finally:
        signal.signal(signal.SIGINT, interrupt)
    with pool:
        yield pool.imap


def _check_one(job: tuple[str, int | None, int, int]) -> tuple[str, list[str]]:
    """One problem's check for ``problems check`` (in a process of its own): its status
    and the lines said under it, its heaviest step last."""
    status, reasons, cost = _checked(*job)
    return status, [*reasons, *([str(cost)] if cost is not None else [])]


def _checked(problem_id: str, samples: int | None, seeds: int,
             search_states: int) -> tuple[str, list[str], Any]:
    """One problem's check for ``problems check``: its status, the reasons and the
    heaviest step seen (None for a problem that could not be checked)."""
    from tasks.worldtest.cd import revealability
    from tasks.worldtest.check import Metered, check_problem, heaviest_step
    from tasks.worldtest.checked import remember
    from tasks.worldtest.planning import solvability

    kwargs = {} if samples is None else {"samples": samples}
    metered = Metered()
    try:
        problem = registry.get_problem(problem_id)
        report = check_problem(problem, make_env=metered, **kwargs)
    except Exception as error:  # a broken problem must not hide the others
        return "invalid", [f"{type(error).__name__}: {error}"], metered.cost
    status, reasons = report.status, list(report.reasons)
    dead_ends = {"planning": (solvability, problem.env_id, "the goal cannot be reached",
                              "the goal"),
                 "cd": (revealability, problem.params.get("changed_env_id"),
                        "the change cannot be shown", "the change")}.get(problem.challenge)
    if seeds and dead_ends and status == "valid":
        check, played, lost, fix = dead_ends
        try:
            found = check(problem, seeds, max_states=search_states)
        except Exception as error:  # an environment failing mid-search: said, not fatal
            return "invalid", [*reasons, f"a player's run into the test failed: "
                               f"{type(error).__name__}: {error}"], metered.cost
        reasons.append(found.words())
        instead = remember(problem, found)  # what `study create` asks of the problem
        if instead:
            reasons.append(instead)
        if found.fraction < 1:  # a bounded search proves no dead end: it names one
            status = "unverified"
            reasons.append(f"a participant may reach a state {lost} from (or the search "
                           f"was too short): replay the run named, then fix the program "
                           f"or {fix}")
            reasons.append(_replay(problem, played, *found.stuck[0]))
    return status, reasons, heaviest_step(problem, metered)


def _replay(problem, env_id: str, seed: int, prefix: list[str]) -> str:
    """How to see a stuck run of a problem's check from anywhere: the test's start
    under its seed (``env_id``, the program the test plays), then the player's random
    actions, written to a file the debugger replays."""
    from tasks.worldtest.rollout import save_actions

    path = save_actions(f"{problem.id}-seed{seed}-stuck",
                        f"{problem.id}: the test from seed {seed}, then a player's "
                        f"{len(prefix)} random actions; no search passed the test from "
                        "here", prefix)
    if registry.env_spec(env_id).program:
        return f"replay: gridstudy play {env_id} --debug --seed {seed} --actions {path}"
    return f"the run's actions: {path}"


@problems.command("derive")
@click.argument("names", nargs=-1)
@click.option("--samples", type=click.IntRange(min=1), default=64, show_default=True,
              help="Seeds sampled for each check.")
def problems_derive(names: tuple[str, ...], samples: int) -> None:
    """Derive the problems of the named library environments (all by default, both
    libraries) from their recipes, and write them into each folder's problems/.

    Prints each problem as it starts, and the heaviest step its check saw (evaluations
    against the program's step budget)."""
    from tasks.library import library_envs
    from tasks.library.build import derive_library

    _known(names, {env.name for env in library_envs()}, "environment",
           "gridstudy envs list; derive takes the NAME of autumn/NAME")
    failures = derive_library(
        names, samples=samples, progress=lambda line: click.echo(line, err=True)
    )
    for failure in failures:
        click.echo(f"FAILED  {failure}")
    if failures:
        sys.exit(1)
    click.echo("all problems derived")


def _known(names, known: set[str], kind: str, hint: str) -> None:
    """Exit with 1, naming them, when some of ``names`` are unknown."""
    unknown = [n for n in names if n not in known]
    for name in unknown:
        click.echo(f"error: unknown {kind} '{name}'" + (suggest(name, known) or f" (see {hint})"),
                   err=True)
    if unknown:
        sys.exit(1)


@problems.command("import")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--library", type=click.Path(file_okay=False), default=None,
              help="Library folder to import into [default: $GRIDSTUDY_LIBRARY or "
                   "./gridstudy-library].")
@click.option("--search-states", default=1000, show_default=True,
              help="States each plan or witness search may visit.")
def problems_import(folder: str, library: str | None, search_states: int) -> None:
    """Import an AutumnBench folder (programs/, prompts/, answers/, color_dict.yaml) into
    the library, where every later command and server finds it."""
    from tasks.import_files import FolderError
    from tasks.imported import register_library
    from tasks.importer import library_files, read_folder

    root = _library_option(Path(library) if library else None)
    try:
        imported = read_folder(folder, search_states=search_states)
    except FolderError as error:
        raise click.ClickException(str(error)) from None
    for env in imported:
        _write_files(root, f"autumnbench/{env.name}", library_files(env))
        ids = ", ".join(p.id for p in env.problems)
        click.echo(f"imported {env.env_id}: {ids}")
        for note in env.notes:
            click.echo(f"  note: {note}")
    register_library(root)
    click.echo(f"{len(imported)} environments written to {root}; "
               "check them with 'gridstudy problems check'")


def _write_files(root: Path, folder: str, files: dict[str, str]) -> None:
    """Replace ``root/folder`` by ``files`` (paths relative to ``root``)."""
    shutil.rmtree(root / folder, ignore_errors=True)
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
