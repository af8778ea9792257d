"""``gridstudy play``, ``gridstudy agent`` and ``gridstudy baseline``.

Heavy modules (pygame, httpx, the store) are imported inside the commands so that
``gridstudy --help`` stays fast.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import click


def open_store(db: str | None):
    """The store at ``--db``, else ``$DATABASE_URL``, else ``gridstudy.db``."""
    from records.store import Store

    return Store.for_command(db)


def make_driver(target: str, seed: int):
    """An Episode for a problem id, or a Sandbox for an environment id."""
    from game_client.sandbox import Sandbox
    from tasks import registry
    from tasks.words import suggest
    from tasks.worldtest.episode import Episode

    try:
        return Episode(registry.get_problem(target))
    except KeyError:
        pass
    try:
        registry.env_spec(target)
    except KeyError:
        known = [spec.id for spec in (*registry.list_problems(), *registry.list_envs())]
        raise click.ClickException(
            f"{target!r} is neither a registered problem nor an environment"
            f"{suggest(target, known)}; see `gridstudy problems list` and "
            "`gridstudy envs list`") from None
    return Sandbox(target, seed)


@click.command()
@click.argument("target", required=False)
@click.option("--seed", default=0, show_default=True, help="Seed (environments only; a problem has its own).")
@click.option("--fps", type=click.IntRange(1, 60), default=None,
              help="Frame rate (default: the environment's).")
@click.option("--scale", type=click.IntRange(1, 256), default=32, show_default=True,
              help="Pixels per cell.")
@click.option("--record", is_flag=True, help="Write the run to the store like any other.")
@click.option("--db", default=None, help="Database URL or SQLite file (default $DATABASE_URL or gridstudy.db).")
@click.option("--server", default=None, help="Play remotely: the study server's URL.")
@click.option("--join", "code", default=None, help="Join code of a running session (with --server).")
@click.option("--debug", is_flag=True,
              help="The author's debugger: state panel, rewind, reload on save (Autumn programs).")
@click.option("--actions", "actions_file", type=click.Path(exists=True, dir_okay=False),
              default=None, help="With --debug: replay this action list first (one per line).")
def play(target, seed, fps, scale, record, db, server, code, debug, actions_file):
    """Play TARGET (a problem or an environment id) in a window, or join a session.

    Keys: arrows move, click a cell, R reset, T go to the test, space pause, period one
    frame while paused, +/- frame rate, Esc closes. Masked frame prediction: right/left
    step/rewind, 1-6 choose, Enter submits. Change detection: F found the change, then
    left/right pick the frame, Enter submits.

    With --debug, TARGET may also be a program file; the window shows the program's
    variables, the objects at a clicked cell (right click: inspect only) and any error
    with its place and tick. Backspace goes back a tick, saving the file reloads it and
    replays the actions to the same tick, W writes the actions for --actions.
    """
    if actions_file and not debug:
        raise click.UsageError("--actions replays an action list in the debugger: add --debug")
    if debug:
        if server or code or record:
            raise click.UsageError("--debug plays a program locally: not with --server or --record")
        if target is None:
            raise click.UsageError("name the program to debug: a file or an environment id")
        _debug(target, seed, fps, scale, actions_file)
        return
    if server or code:
        if not (server and code):
            raise click.UsageError("remote play needs both --server URL and --join CODE")
        from game_client.remote import play_remote

        play_remote(server, code, scale=scale)
        return
    if target is None:
        raise click.UsageError("name a problem or an environment to play (or --server/--join)")
    _play_local(target, seed, fps, scale, record, db)


def _debug(target, seed, fps, scale, actions_file):
    from game_client.debug_window import debug
    from game_client.debugger import read_actions
    from tasks import registry

    path, problem = target, None
    if not target.endswith(".sexp"):
        try:
            problem = registry.get_problem(target)
        except KeyError:
            problem = None
        env_id = problem.env_id if problem else target
        try:
            path = registry.env_spec(env_id).program
        except KeyError:
            raise click.ClickException(f"{target!r} is neither a program file nor a registered "
                                       "environment or problem (see `gridstudy envs list`)") from None
        if not path:
            raise click.BadParameter(f"{env_id} is not written as a program: the debugger "
                                     "shows Autumn programs", param_hint="TARGET")
    from tasks.autumn import AutumnError

    actions = read_actions(actions_file) if actions_file else []
    try:
        session = debug(path, seed=problem.seed if problem else seed, actions=actions, fps=fps,
                        scale=scale)
    except AutumnError as error:  # the program does not load: its messages, as written
        click.echo(str(error), err=True)
        raise SystemExit(1) from None
    click.echo(f"{path}: stopped at tick {session.tick_count}")
    shown = session.load_fault or session.fault  # what the window showed last, kept
    if shown is not None:
        click.echo("\n".join(shown.lines()), err=True)


def _play_local(target, seed, fps, scale, record, db):
    from game_client.loop import GameLoop
    from game_client.play import PygameClient
    from records.recorder import EpisodeRecorder

    driver = make_driver(target, seed)
    store = open_store(db) if record else None
    recorder = EpisodeRecorder(store, driver.problem) if store else None
    try:
        loop = GameLoop(driver, fps=fps, recorder=recorder)
        PygameClient(loop, scale=scale, title=f"gridstudy: {target}").run()
        click.echo(loop.status_line())
        if recorder:
            click.echo(f"recorded episode {recorder.episode_id} in {store!r}")
    finally:
        if store:
            store.close()


# -- agents -------------------------------------------------------------------------------


@click.group()
def agent() -> None:
    """Evaluate agents (language models, random, planner) on problems."""


def _param(ctx, option, values):
    """``--param KEY=VALUE`` pairs as a dict; VALUE is read as JSON when it parses."""
    import json

    params = {}
    for text in values:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{text!r}: expected KEY=VALUE, e.g. reasoning_effort=high")
        try:
            params[key] = json.loads(value)
        except ValueError:
            params[key] = value
    return params


@agent.command("run")
@click.option("--problems", "patterns", multiple=True,
              help="Problem ids or fnmatch patterns (repeat, or separate with commas).")
@click.option("--agent", "kind", type=click.Choice(["llm", "random", "planner"]), default="llm", show_default=True)
@click.option("--model", "models", multiple=True,
              help="Model name at the endpoint (llm); repeat to evaluate several in one batch.")
@click.option("--run-file", type=click.Path(dir_okay=False), default=None,
              help="YAML naming the batch's models (endpoints, key variables, prices, "
                   "parameters) and optionally its problems and limits; see "
                   "game_client/evaluate.py.")
@click.option("--runs", default=None, type=int, help="Attempts per problem and model [1].")
@click.option("--concurrency", default=None, type=int, help="Attempts played at once [1].")
@click.option("--db", default=None, help="Database URL or SQLite file.")
@click.option("--history", type=click.Choice(["full", "last", "none"]), default="full", show_default=True)
@click.option("--k", default=0, help="Turns kept with --history last.")
@click.option("--prompt-variant", default="base", show_default=True, help="Task-DAG prompt variant.")
@click.option("--summary", is_flag=True, help="Task-DAG memory summary (000 App. D).")
@click.option("--observation", type=click.Choice(["text", "image", "both"]), default="text",
              show_default=True,
              help="What a model is shown of each frame: the text grid (as in 002), a PNG "
                   "picture for vision models (game_client/bridge/images.py says how it is "
                   "drawn), or both.")
@click.option("--temperature", type=float, default=None, help="Same as --param temperature=T.")
@click.option("--max-tokens", type=int, default=None, help="Same as --param max_tokens=N.")
@click.option("--param", "params", multiple=True, callback=_param,
              help="A request parameter sent to the provider and kept in the run's config "
                   "(repeat): seed=1, top_p=0.9, reasoning_effort=high, max_completion_tokens=2048.")
@click.option("--context-window", type=int, default=None,
              help="The model's context window in tokens; older turns are left out of a "
                   "request that would not fit (learned from the provider's refusal otherwise).")
@click.option("--requests-per-minute", type=float, default=None,
              help="Most requests a minute to the endpoint, shared by every attempt.")
@click.option("--timeout", default=120.0, show_default=True, help="Seconds per model request.")
@click.option("--retries", default=5, show_default=True, help="Retries on 429, 5xx, timeouts and malformed replies.")
@click.option("--prices", "prices_file", default=None,
              help="Prices in dollars per million tokens, as JSON inline or a JSON file's "
                   'path: \'{"gpt-4o": {"input": 2.5, "output": 10}}\' or prices.json.')
@click.option("--max-cost", type=float, default=None,
              help="Dollars the batch's agent runs may spend, counting what earlier runs of "
                   "the same command spent; then running attempts stop (resumable).")
@click.option("--token-budget", type=int, default=None,
              help="Tokens the batch's agent runs may spend, counting earlier runs of the "
                   "same command.")
@click.option("--max-cost-per-attempt", type=float, default=None,
              help="Dollars one attempt may spend; then it is abandoned (scores 0).")
@click.option("--token-budget-per-attempt", type=int, default=None, help="Tokens one attempt may spend.")
@click.option("--max-turns", type=int, default=None,
              help="Turns after which an attempt is abandoned [1000; the random agent: its "
                   "problem's horizon and a margin].")
@click.option("--max-invalid", default=None, type=int, help="Invalid replies in a row that end an attempt [5].")
@click.option("--clock", type=click.Choice(["turns", "realtime"]), default="turns",
              show_default=True,
              help="turns: the model is never hurried (002's protocol). realtime: it plays on "
                   "the participants' clock, at the environment's frame rate with automatic "
                   "no-ops while it thinks (in this process only).")
@click.option("--protocol", type=click.Choice(["gridstudy", "autumnbench"]), default="gridstudy",
              show_default=True,
              help="gridstudy: this platform's protocol. autumnbench: the published "
                   "AutumnBench harness's settings (tasks/worldtest/protocol.py; README: "
                   "Comparing with published results).")
@click.option("--interaction-steps", default=0, show_default=True, help="Random agent: actions before go-to-test.")
@click.option("--seed", default=0, show_default=True, help="Random agent seed (plus the run index).")
@click.option("--server", default=None,
              help="Play through a running server's agent API (recorded there) instead of in-process.")
@click.option("--token", envvar="GRIDSTUDY_TOKEN", default=None,
              help="The agent-API token for --server (default: $GRIDSTUDY_TOKEN).")
@click.option("--continue-run", "continue_run", is_flag=True,
              help="When the options differ from the agent run holding this command's "
                   "unfinished attempts: finish those attempts with that run's recorded "
                   "options.")
@click.option("--new-run", "new_run", is_flag=True,
              help="When the options differ from the agent run holding this command's "
                   "unfinished attempts: start a new agent run with these options and "
                   "leave those attempts as they are.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def agent_run(**options):
    """Play problems with agents and record every turn.

    Every attempt counts: one the model does not finish (invalid replies, turn limit,
    budget) scores 0. Rerunning the same command continues what is left: attempts
    interrupted (Ctrl-C, a budget, a killed process) or cut short by the provider resume
    from their last recorded turn; when the options changed meanwhile, the command says
    so and asks for --continue-run or --new-run. The first Ctrl-C stops the batch within
    seconds, a second at once. A refused key or an unknown model stops the batch at the
    first request. The exit status is 0 only when every attempt finished.
    """
    import os
    import sys

    from game_client import evaluate
    from game_client.api_client import AgentAPIError
    from game_client.batch import Batch, pending_jobs
    from game_client.runner import Guard, Spending

    context = click.get_current_context()
    options["given"] = {param.opts[0] for param in context.command.params
                        if context.get_parameter_source(param.name)
                        is click.core.ParameterSource.COMMANDLINE}
    try:
        config = evaluate.BatchConfig.build(options)
        guard = Guard(config.budget)
        runs = config.agent_runs(guard.sleep)
    except evaluate.ConfigError as error:
        if error.option:
            raise click.BadParameter(str(error), param_hint=error.option) from None
        raise click.UsageError(str(error)) from None
    for run in runs:  # said, or refused, before anything is opened
        _playable(run, config.problem_ids, say=True)
    for spec in config.models:
        if not spec.api_key:
            click.echo(f"warning: ${spec.api_key_env} is not set: requests to {spec.endpoint} "
                       f"for {spec.name} go without an API key", err=True)
    with _records(config.server, config.token, options["db"], guard.sleep) as records:
        try:
            runs, notes = evaluate.reconcile(records, runs, config.problem_ids, config.choice)
        except evaluate.RerunChoice as error:
            raise click.UsageError(str(error)) from None
        jobs, elsewhere, played = [], [], set()
        for run in runs:
            run.agent_run_id = records.create_run(run.kind, run.model, run.config)
            stored = records.episodes(run.agent_run_id)
            problem_ids = _playable(run, config.problem_ids)
            played.update(problem_ids)
            jobs += pending_jobs(run, problem_ids, config.runs, stored)
            elsewhere += [e for e in stored
                          if e.status == "active" and e.problem_id in config.problem_ids]
        for line in notes + _rerun_notes(records.reaped, elsewhere, jobs, len(played), len(runs)):
            click.echo(line, err=True)
        spent = records.spent
        before = {run.agent_run_id: spent(run.agent_run_id) for run in runs}
        earlier = sum(before.values(), Spending())
        if earlier.uncounted and (config.budget.limited or config.limits.budget.limited):
            click.echo(f"warning: {earlier.uncounted} turn(s) of earlier runs of this command "
                       "gave no token counts: the budget counts what they spent as nothing",
                       err=True)
        guard.carry(earlier)
        outcome = Batch(records.open_attempt, concurrency=config.concurrency, guard=guard,
                        progress=not options["quiet"]).run(jobs)
        try:
            after = {run_id: spent(run_id) for run_id in before}
            spending = {run_id: (after[run_id] - before[run_id], after[run_id])
                        for run_id in before}
        except AgentAPIError as error:  # the server went away as the batch ended
            spending = None
            click.echo(f"warning: {error}; what is spent below is this invocation's only",
                       err=True)
    for line in evaluate.summary_lines(runs, outcome, spending):
        click.echo(line)
    if guard.fatal:
        click.echo(f"Error: {guard.fatal}", err=True)
    code = evaluate.exit_code(outcome)
    if outcome.stragglers:  # threads still waiting on a model: do not wait for them
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _playable(run, problem_ids: list[str], say: bool = False) -> list[str]:
    """The problems ``run``'s agent can play; with ``say``, those it cannot are named on
    stderr, and a batch left with none is refused. Before, each became an attempt that
    ended in an error the summary called resumable, and a rerun played it into the same
    error."""
    from tasks import registry

    left_out: dict[str, list[str]] = {}
    kept = []
    for problem_id in problem_ids:
        why = run.cannot_play(registry.get_problem(problem_id))
        if why is None:
            kept.append(problem_id)
        else:
            left_out.setdefault(why, []).append(problem_id)
    for why, ids in left_out.items():
        message = (f"{run.label} cannot play {len(ids)} problem(s) ({why}): "
                   + ", ".join(ids[:8]) + (" ..." if len(ids) > 8 else ""))
        if say and not kept:
            raise click.UsageError(f"{message}; none of --problems is left to play")
        if say:
            click.echo(f"note: {message}", err=True)
    return kept


def _rerun_notes(reaped, elsewhere, jobs, problems, agents):
    """What the command is about to do: attempts a killed process left, attempts another
    process plays now, and the attempts to play."""
    lines = []
    if reaped:
        lines.append(f"{len(reaped)} attempt(s) were left active by a process that ended "
                     f"without closing them (episode {', '.join(map(str, reaped))}); they are "
                     "continued from their last recorded turn (one played on the real-time "
                     "clock, or on an environment edited since, is played anew)")
    if elsewhere:
        lines.append(f"{len(elsewhere)} attempt(s) are being played by another process "
                     f"(episode {', '.join(str(e.episode_id) for e in elsewhere)}); left to it")
    resumed = sum(job.episode_id is not None for job in jobs)
    lines.append(f"{len(jobs)} attempt(s) to play" + (f", {resumed} of them resumed" if resumed
                                                      else "")
                 + f" on {problems} problem(s) with {agents} agent(s)")
    return lines


@contextmanager
def _records(server, token, db, sleep):
    """Where the batch keeps its runs and attempts: the server's agent API (waited for
    while it is away, until ``sleep`` says the batch is stopping), or a store; the API's
    refusals become one-line errors."""
    from game_client.api_client import AgentAPIClient, AgentAPIError
    from game_client.batch import LocalRecords

    if not server:
        with open_store(db) as store:
            yield LocalRecords(store)
        return
    client = AgentAPIClient(server, token, sleep=sleep)
    try:
        yield client
    except AgentAPIError as error:
        raise click.ClickException(str(error)) from None
    finally:
        client.http.close()


# -- baselines ----------------------------------------------------------------------------


@click.group(short_help="Reference agents: the random baseline (002 App. C, Table E.3).")
def baseline() -> None:
    """Reference agents (002 App. C, Table E.3)."""


@baseline.command("random")
@click.option("--samples", type=click.IntRange(min=1), default=50, show_default=True,
              help="Random runs per problem.")
@click.option("--steps", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Step limit (timeout) per run.")
@click.option("--problems", "patterns", multiple=True, help="Problem ids or patterns (default: every problem whose challenge has a random baseline).")
@click.option("--seed", default=0, show_default=True)
@click.option("--per-problem", is_flag=True, help="One row per problem instead of per environment, with the chance level 1/options of masked frame prediction; its mean steps count a failed run as --steps.")
@click.option("--csv", "csv_path", default="random_baseline.csv", show_default=True, help="Where to write the table.")
def baseline_random(samples, steps, patterns, seed, per_problem, csv_path):
    """The random agent's baseline, one row per environment as in 002 Table E.3.

    For each environment: the probability that a random run triggers the change
    (change-detection problems) and that it reaches the goal (planning problems), with
    the mean steps of the runs that did and the number of runs, pooled over the
    environment's problems of each kind; "-" where there is no value (no such problem,
    or no run succeeded). Masked frame prediction is not run: its chance, 1/options,
    is per problem and shown only with --per-problem.
    """
    from tqdm import tqdm

    from game_client.baseline import (
        format_env_table,
        format_table,
        run_baseline,
        sampled_by_agent,
        success_steps,
        write_csv,
        write_env_csv,
    )
    from game_client.batch import select_problems
    from records.database import cannot_create
    from tasks import registry
    from tasks.worldtest.baseline import random_baseline_table
    from tasks.worldtest.challenge import get

    folder = Path(csv_path).parent  # said before the sampling, not after minutes of it
    why = f"no folder {str(folder)!r}" if not folder.is_dir() else cannot_create(Path(csv_path))
    if why:
        raise click.BadParameter(f"cannot write {csv_path}: {why}", param_hint="--csv")
    ids = select_problems(patterns) if patterns else [s.id for s in registry.list_problems()]
    problems = [registry.get_problem(i) for i in ids]
    problems = [p for p in problems if get(p.challenge).baseline is not None]
    if not per_problem:
        problems = [p for p in problems if sampled_by_agent(p)]
    if not problems:
        raise click.UsageError("none of the selected problems has a random baseline"
                               + ("" if per_problem else " that is sampled (try --per-problem)"))
    with tqdm(total=sum(map(sampled_by_agent, problems)) * samples, unit="sample") as bar:
        def tick() -> None:
            bar.update(1)

        if per_problem:
            rows = run_baseline(problems, samples, steps, seed, on_sample=tick)
        else:
            # the report's table (analysis.tables) is shaped by the same function
            by_env = random_baseline_table(
                [(p.env_id, p.challenge, success_steps(p, samples, steps, seed, tick))
                 for p in problems], timeout=steps)
    if per_problem:
        click.echo(format_table(rows))
        write_csv(rows, csv_path)
    else:
        click.echo(format_env_table(by_env))
        write_env_csv(by_env, csv_path)
    click.echo(f"wrote {csv_path}")
