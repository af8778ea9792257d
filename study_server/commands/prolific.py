"""``gridstudy prolific``: publish a study on Prolific, follow its submissions, carry out
the payment decisions and pay the bonuses, with the API token in ``PROLIFIC_API_TOKEN``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from study_server.commands.export import DB

STUDY = click.option("--study", required=True, help="Our study's id (its slug).")


@click.group()
def prolific() -> None:
    """Run a study on Prolific through its API.

    \b
    In order:
      gridstudy prolific publish --study ID --db URL --base-url https://... \\
          --places N                                   create it there and publish it
      gridstudy prolific hooks --study ID --db URL --url https://.../prolific/hook
                                                       (optional) status changes pushed
      gridstudy prolific sync --study ID --db URL      who took part there, and here
      gridstudy prolific review --study ID --db URL --dry-run   what review would do
      gridstudy prolific review --study ID --db URL    approve, reject, ask for returns,
                                                       pay bonuses (once)

    The token is read from PROLIFIC_API_TOKEN (Prolific: Settings > API token) and
    never stored; PROLIFIC_API_URL overrides Prolific's address. `gridstudy payments`
    writes the same decisions as files, without a token.
    """


@contextmanager
def _connected(url: str, need_api: bool = True) -> Iterator[tuple[Any, Any]]:
    from records.database import open_existing
    from records.store import Store
    from study_server.prolific import Api, ProlificError

    try:  # a mistyped --db is said as such, not made an empty database
        open_existing(url).dispose()
    except (FileNotFoundError, ValueError, PermissionError) as error:
        raise click.ClickException(str(error)) from None
    try:
        api = Api()
    except ProlificError as error:
        if need_api:
            raise click.ClickException(str(error)) from None
        api = None
    try:
        with Store(url) as store:
            yield store, api
    except (ProlificError, LookupError) as error:
        raise click.ClickException(str(error)) from None
    finally:
        if api is not None:
            api.close()


@prolific.command()
@STUDY
@DB
@click.option("--base-url", envvar="GRIDSTUDY_BASE_URL", required=True,
              help="Where participants reach this server, https://... (the study link "
                   "Prolific sends them to is made from it; default: $GRIDSTUDY_BASE_URL).")
@click.option("--places", type=int, required=True, help="How many participants Prolific recruits.")
@click.option("--reward-cents", type=int,
              help="The reward, in the smallest unit of the workspace's currency (450: 4.50); "
                   "default, and the only value accepted when it names one: the study file's "
                   "payment, which the consent page states.")
@click.option("--minutes", type=int,
              help="The estimated completion time; default, and the only value accepted: "
                   "the study file's expected_minutes, which the consent page states.")
@click.option("--draft", is_flag=True, help="Create the study on Prolific but do not publish it.")
def publish(study: str, url: str, base_url: str, places: int, reward_cents: int | None,
            minutes: int | None, draft: bool) -> None:
    """Create the study on Prolific from the study file (name, description, time, reward,
    places, desktop only, our link with Prolific's placeholders, every ending's code with
    the action Prolific takes for it), then publish it unless --draft."""
    from study_server.commands.study import study_link
    from study_server.prolific import command_line_actor
    from study_server.prolific import publish as run

    link = study_link(base_url.rstrip("/"), study)
    if not base_url.startswith("https://"):
        click.echo(f"note: {base_url} is not https://: Prolific's participants need an address "
                   "they can reach, over https", err=True)
    with _connected(url) as (store, api):
        done = run(store, api, study, link, places=places, reward_cents=reward_cents,
                   minutes=minutes, draft=draft, actor=command_line_actor())
    if done.already:
        click.echo(f"{study} is already published on Prolific as {done.prolific_id} ({done.status})")
        return
    made = "created" if done.created else "found"
    state = "left as a draft" if draft else f"published ({done.status})"
    click.echo(f"{study}: {made} on Prolific as {done.prolific_id}, {state}")
    click.echo(f"study link sent to participants: {link}")


@prolific.command()
@STUDY
@DB
def sync(study: str, url: str) -> None:
    """List the study's submissions on Prolific (every page) and keep each one's status
    with our participant; say who is on Prolific but never reached us, and who reached
    us without a submission."""
    from study_server.prolific import sync as run

    with _connected(url) as (store, api):
        done = run(store, api, study)
    counts = ", ".join(f"{status} {n}" for status, n in sorted(done.statuses.items())) or "none"
    click.echo(f"{study}: {done.submissions} submissions on Prolific ({counts})")
    _listed("on Prolific, never reached the study", done.only_on_prolific)
    _listed("reached the study, no submission on Prolific", done.only_here)


def _listed(title: str, items: list[str]) -> None:
    click.echo(f"{title}: {len(items)}")
    for item in items:
        click.echo(f"  {item}")


@prolific.command()
@STUDY
@DB
@click.option("--dry-run", is_flag=True,
              help="Print what would be done and change nothing (it reads the submissions; "
                   "without a token, it uses the last sync's).")
@click.option("--wait", default=30.0, show_default=True, type=float,
              help="Seconds to wait for completed participants to submit on Prolific.")
@click.option("--unpaid", "unpaid", type=int, default=None, metavar="BATCH",
              help="Say that a bonus batch whose pay call got no answer was NOT paid (you "
                   "checked on Prolific), so that this review pays it.")
def review(study: str, url: str, dry_run: bool, wait: float, unpaid: int | None) -> None:
    """Carry out the payment decisions: approve in bulk by submission id, reject with
    the reason and category, ask for returns, and set up and pay the bonuses exactly
    once (a rerun reports what was already paid)."""
    from study_server.prolific import command_line_actor, mark_unpaid
    from study_server.prolific import review as run

    actor = command_line_actor()
    with _connected(url, need_api=not dry_run) as (store, api):
        if unpaid is not None:
            mark_unpaid(store, study, unpaid, actor)
        done = run(store, api, study, actor=actor, dry_run=dry_run, wait=wait)
    for line in done.lines:
        click.echo(line)
    if not dry_run:
        click.echo(f"{study}: approved {len(done.approved)}, rejected {len(done.rejected)}, "
                   f"asked to return {len(done.returns)}, waiting {len(done.waiting)}")
    if done.unknown_batches:
        raise click.ClickException(f"{len(done.unknown_batches)} bonus batch(es) need a look on "
                                   "Prolific (see above)")


@prolific.command()
@STUDY
@DB
@click.option("--url", "target", required=True,
              help="This server's hook address, https://.../prolific/hook.")
@click.option("--workspace", default=None,
              help="Prolific workspace id (needed when the token has several).")
def hooks(study: str, url: str, target: str, workspace: str | None) -> None:
    """Subscribe this server to the study's submission status changes: Prolific signs
    each hook with the workspace's secret, which is kept here to check it."""
    from study_server.prolific import command_line_actor, subscribe

    with _connected(url) as (store, api):
        subscription = subscribe(store, api, study, target, command_line_actor(), workspace)
    click.echo(f"subscribed {target} to submission status changes ({subscription}); "
               "the server checks each hook's signature with the workspace's secret")
