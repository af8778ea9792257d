"""``gridstudy play``, ``gridstudy agent`` and ``gridstudy baseline``.

Heavy modules (pygame, httpx, the store) are imported inside the commands so that
``gridstudy --help`` stays fast.
"""

from __future__ import annotations

import click


def open_store(db: str | None):
    """The store at ``--db``, else ``$DATABASE_URL``, else ``gridstudy.db``."""
    from records.store import Store

    return Store.for_command(db)


def make_driver(target: str, seed: int):
    """An Episode for a problem id, or a Sandbox for an environment id."""
    from game_client.sandbox import Sandbox
    from tasks import registry
    from tasks.worldtest.episode import Episode

    try:
        return Episode(registry.get_problem(target))
    except KeyError:
        pass
    try:
        registry.env_spec(target)
    except KeyError:
        raise click.BadParameter(
            f"{target!r} is neither a registered problem nor an environment; "
            "see `gridstudy problems list` and `gridstudy envs list`", param_hint="TARGET",
        ) from None
    return Sandbox(target, seed)


@click.command()
@click.argument("target", required=False)
@click.option("--seed", default=0, show_default=True, help="Seed (environments only; a problem has its own).")
@click.option("--fps", type=int, default=None, help="Frame rate (default: the environment's).")
@click.option("--scale", default=32, show_default=True, help="Pixels per cell.")
@click.option("--record", is_flag=True, help="Write the run to the store like any other.")
@click.option("--db", default=None, help="Database URL or SQLite file (default $DATABASE_URL or gridstudy.db).")
@click.option("--server", default=None, help="Play remotely: the study server's URL.")
@click.option("--join", "code", default=None, help="Join code of a running session (with --server).")
def play(target, seed, fps, scale, record, db, server, code):
    """Play TARGET (a problem or an environment id) in a window, or join a session.

    Keys: arrows move, click a cell, R reset, T go to the test, space pause, period one
    frame while paused, +/- frame rate, Esc closes. Masked frame prediction: right/left
    step/rewind, 1-6 choose, Enter submits. Change detection: F found the change, then
    left/right pick the frame, Enter submits.
    """
    if server or code:
        if not (server and code):
            raise click.UsageError("remote play needs both --server URL and --join CODE")
        from game_client.remote import play_remote

        play_remote(server, code, scale=scale)
        return
    if target is None:
        raise click.UsageError("name a problem or an environment to play (or --server/--join)")
    _play_local(target, seed, fps, scale, record, db)


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


@agent.command("run")
@click.option("--problems", "patterns", multiple=True, required=True,
              help="Problem ids or fnmatch patterns (repeat, or separate with commas).")
@click.option("--agent", "kind", type=click.Choice(["llm", "random", "planner"]), default="llm", show_default=True)
@click.option("--model", default=None, help="Model name at the endpoint (llm).")
@click.option("--runs", default=1, show_default=True, help="Attempts per problem.")
@click.option("--concurrency", default=1, show_default=True, help="Attempts played at once.")
@click.option("--db", default=None, help="Database URL or SQLite file.")
@click.option("--history", type=click.Choice(["full", "last", "none"]), default="full", show_default=True)
@click.option("--k", default=0, help="Turns kept with --history last.")
@click.option("--prompt-variant", default="base", show_default=True, help="Task-DAG prompt variant.")
@click.option("--summary", is_flag=True, help="Task-DAG memory summary (000 App. D).")
@click.option("--temperature", type=float, default=None)
@click.option("--max-tokens", type=int, default=None)
@click.option("--timeout", default=120.0, show_default=True, help="Seconds per model request.")
@click.option("--retries", default=5, show_default=True, help="Retries on 429, 5xx and timeouts.")
@click.option("--prices", "prices_file", default=None, help="JSON price table: {model: {input, output}} per million tokens.")
@click.option("--max-turns", default=1000, show_default=True)
@click.option("--max-invalid", default=5, show_default=True, help="Invalid replies in a row that end an attempt.")
@click.option("--interaction-steps", default=0, show_default=True, help="Random agent: actions before go-to-test.")
@click.option("--seed", default=0, show_default=True, help="Random agent seed (plus the run index).")
@click.option("--server", default=None,
              help="Play through a running server's agent API (recorded there) instead of in-process.")
@click.option("--token", envvar="GRIDSTUDY_TOKEN", default=None,
              help="The agent-API token for --server (default: $GRIDSTUDY_TOKEN).")
def agent_run(patterns, kind, model, runs, concurrency, db, history, k, prompt_variant, summary,
              temperature, max_tokens, timeout, retries, prices_file, max_turns, max_invalid,
              interaction_steps, seed, server, token):
    """Play problems with an agent and record every turn; a rerun resumes (in-process)."""
    from game_client.batch import find_or_create_run, run_batch, select_problems

    try:
        problem_ids = select_problems(patterns)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--problems") from None
    make_agent, config = _agent_factory(
        kind, model, dict(history=history, k=k, prompt_variant=prompt_variant, summary=summary,
                          temperature=temperature, max_tokens=max_tokens, timeout=timeout,
                          retries=retries, prices_file=prices_file,
                          interaction_steps=interaction_steps, seed=seed))
    config = {**config, "max_turns": max_turns, "max_invalid": max_invalid}
    if server:
        if not token:
            raise click.UsageError("--server needs an agent-API token: --token or GRIDSTUDY_TOKEN "
                                   "(a researcher creates one with gridstudy token create NAME)")
        _summarise(*_run_remote(server, token, problem_ids, make_agent, kind, model, config,
                                runs, concurrency))
        return
    with open_store(db) as store:
        run_id = find_or_create_run(store, kind, model, config)
        results = run_batch(problem_ids, make_agent, store=store, agent_run_id=run_id, runs=runs,
                            concurrency=concurrency, max_turns=max_turns, max_invalid=max_invalid)
    _summarise(run_id, results)


def _run_remote(server, token, problem_ids, make_agent, kind, model, config, runs, concurrency):
    """Play every attempt through the server's agent API: ``(run_id, results)``."""
    from collections import Counter
    from concurrent.futures import ThreadPoolExecutor

    from tqdm import tqdm

    from game_client.api_client import AgentAPIClient, AgentAPIError, run_remote_episode
    from game_client.batch import pending_jobs

    client = AgentAPIClient(server, token)
    try:
        run_id = client.create_run(kind, model, config)
    except AgentAPIError as error:
        raise click.ClickException(str(error)) from None
    jobs = pending_jobs(problem_ids, runs, Counter())

    def play(job):
        return run_remote_episode(make_agent(job), job.problem_id, client, run_id,
                                  max_turns=config["max_turns"], max_invalid=config["max_invalid"])


    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        results = list(tqdm(pool.map(play, jobs), total=len(jobs), desc="attempts", unit="ep"))
    return run_id, results


def _agent_factory(kind, model, options):
    """``(make_agent(job), config)`` for the chosen kind of agent."""
    from game_client.agents import PlannerAgent, RandomAgent

    if kind == "random":
        def make(job):
            return RandomAgent(seed=options["seed"] + job.run_index,
                               interaction_steps=options["interaction_steps"])
        return make, {"seed": options["seed"], "interaction_steps": options["interaction_steps"]}
    if kind == "planner":
        return (lambda job: PlannerAgent()), PlannerAgent().config()
    if not model:
        raise click.UsageError("--model is required for --agent llm")
    return _llm_factory(model, options)


def _llm_factory(model, options):
    from game_client.bridge.agent import LLMAgent
    from game_client.bridge.provider import Backoff, ChatProvider, PriceTable

    prices = PriceTable.load(options["prices_file"]) if options["prices_file"] else PriceTable()

    def make(job):
        provider = ChatProvider.from_env(
            model, temperature=options["temperature"], max_tokens=options["max_tokens"],
            timeout=options["timeout"], backoff=Backoff(retries=options["retries"]), prices=prices)
        return LLMAgent(provider, history=options["history"], k=options["k"],
                        prompt_variant=options["prompt_variant"], summary=options["summary"])

    return make, make(None).config()


def _summarise(run_id, results):
    if not results:
        click.echo(f"agent run {run_id}: nothing left to play (every attempt is finished)")
        return
    scores = [r.score or 0.0 for r in results]
    turns = sum(r.turns for r in results)
    invalid = sum(r.invalid for r in results)
    statuses = ", ".join(f"{s} {sum(r.status == s for r in results)}" for s in ("done", "abandoned", "error"))
    click.echo(f"agent run {run_id}: {len(results)} episodes ({statuses}); mean score "
               f"{sum(scores) / len(scores):.3f}; grounding {(turns - invalid) / max(1, turns):.3f}; "
               f"cost ${sum(r.cost for r in results):.4f}")


# -- baselines ----------------------------------------------------------------------------


@click.group()
def baseline() -> None:
    """Reference agents (002 App. C, Table E.3)."""


@baseline.command("random")
@click.option("--samples", default=50, show_default=True, help="Random runs per problem.")
@click.option("--steps", default=1000, show_default=True, help="Step limit (timeout) per run.")
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
    from tasks import registry
    from tasks.worldtest.baseline import random_baseline_table
    from tasks.worldtest.challenge import get

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
