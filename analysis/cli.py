"""``gridstudy report``: tables as CSV and an HTML page from a database or an export."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from tasks.words import count


def source_of(text: str) -> str:
    """A database URL, an export directory, or a SQLite file turned into its URL.
    Nothing at all (``--db "$DB"`` with ``DB`` unset) is refused, not read as the current
    folder."""
    if not text.strip():
        from records.database import ACCEPTED

        raise click.BadParameter(f"no database given: {ACCEPTED}, or an export folder",
                                 param_hint="--db")
    path = Path(text)
    if "://" not in text and path.is_file():
        return f"sqlite:///{path.resolve()}"
    return text


@click.command()
@click.option("--db", "url", envvar="DATABASE_URL", required=True,
              help="Database URL, SQLite file or export directory (default: $DATABASE_URL).")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Directory to write report.html and the tables' CSV files into.")
@click.option("--study", multiple=True,
              help="Report this study (repeatable); required when the source holds several.")
@click.option("--all-studies", is_flag=True,
              help="Pool every study of the source (the report's first screen says so).")
@click.option("--agent-run", "agent_runs", multiple=True, type=int,
              help="Add this agent run's episodes, e.g. a model run outside any study "
                   "(repeatable).")
@click.option("--runs-outside-studies", "outside", is_flag=True,
              help="Add every model run recorded outside any study.")
@click.option("--t-max", default=50, show_default=True, type=click.IntRange(min=1),
              help="AUV horizon in scored steps (004).")
@click.option("--k", default=1, show_default=True, type=click.IntRange(min=1),
              help="k of pass@k, discovery@k and interaction@k (003).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def report(url: str, out: str, study: tuple[str, ...], all_studies: bool,
           agent_runs: tuple[int, ...], outside: bool, t_max: int, k: int, quiet: bool) -> None:
    """Write report.html (figures embedded) and every table as CSV into OUT."""
    from analysis import scope
    from analysis.load import load, located, study_counts
    from analysis.report import warning_lines, write_report
    from records.database import cannot_create

    source = source_of(url)
    unwritable = cannot_create(Path(out))  # said before the reading, not after minutes of it
    if unwritable:
        raise click.BadParameter(f"cannot write {out}: {unwritable}", param_hint="--out")
    started = time.monotonic()
    try:
        chosen = scope.choose(study_counts(source), study, all_studies, agent_runs, outside)
        if not quiet:  # a study of millions of events takes seconds to read, silently
            click.echo("reading the attempts ...", err=True)
        dataset = load(source, **chosen.options)
    except (FileNotFoundError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    missing = sorted(set(agent_runs) - {episode.agent_run_id for episode in dataset})
    if missing:  # a mistyped id added nothing, and the report said nothing of it
        raise click.ClickException(
            f"agent run {', '.join(map(str, missing))}: no attempt in {url} (gridstudy "
            "agent run prints each run's id in its summary: (agent run N))")
    if not quiet:
        events = sum(len(episode.events) for episode in dataset)
        click.echo(f"read {len(dataset)} attempts, {events} events in "
                   f"{time.monotonic() - started:.1f} s", err=True)
    dataset.scope = chosen.lines
    payments = study_payments(located(source)[0])
    page = write_report(dataset, Path(out), t_max=t_max, k=k, progress=not quiet,
                        payments=payments)
    for line in warning_lines(dataset):
        click.echo(line, err=True)
    click.echo(f"wrote {page} ({count(len(dataset), 'episode')})")


def study_payments(url: str | None) -> Any:
    """Each study's payment decisions (counts per decision and ``bonus_total``) as the
    study's own rule gives them, ``study_server.payments.payment_rows``, so the report's
    flow and ``gridstudy payments`` cannot disagree; ``None`` for an export, which holds
    no study file. Like ``study_server/cli.py``, this command line is where a room may
    reach another: the analysis itself never imports the server."""
    if url is None:
        return None
    from collections import Counter

    from sqlmodel import Session

    from records.database import open_existing
    from study_server.payments import payment_rows

    engine = open_existing(url)

    def decided(study_id: str) -> dict[str, Any] | str:
        with Session(engine) as db:
            try:
                _, rows = payment_rows(db, study_id)
            except (LookupError, ValueError, TypeError, KeyError) as error:
                return f"not available: study {study_id} has no readable study file ({error})"
        return {**Counter(row.decision for row in rows),
                "bonus_total": round(sum(row.bonus for row in rows), 2)}

    return decided
