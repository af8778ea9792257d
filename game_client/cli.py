"""``gridstudy play``, ``gridstudy agent`` and ``gridstudy baseline``.

Heavy modules (pygame, httpx, the store) are imported inside the commands so that
``gridstudy --help`` stays fast.
"""

from __future__ import annotations

import click

DEFAULT_DB = "gridstudy.db"


def open_store(db: str | None):
    """The store at ``--db``, else ``$DATABASE_URL``, else ``gridstudy.db``."""
    from study_server.store import Store

    return Store(db) if db else Store.from_env(DEFAULT_DB)


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
    from game_client.record import EpisodeRecorder

    driver = make_driver(target, seed)
    store = open_store(db) if record else None
    recorder = EpisodeRecorder(store, driver) if store else None
    try:
        loop = GameLoop(driver, fps=fps, recorder=recorder)
        PygameClient(loop, scale=scale, title=f"gridstudy: {target}").run()
        click.echo(loop.status_line())
        if recorder:
            click.echo(f"recorded episode {recorder.episode_id} in {store!r}")
    finally:
        if store:
            store.close()
