"""``gridstudy export``: the store's trajectories as files to share and reload."""

from __future__ import annotations

import click


@click.command()
@click.option("--db", "url", envvar="DATABASE_URL", required=True,
              help="Database URL or SQLite file (default: $DATABASE_URL).")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Directory to write (created if missing; files in it are replaced).")
@click.option("--study", default=None, help="Export only this study (default: everything).")
def export(url: str, out: str, study: str | None) -> None:
    """Write events (JSONL, Parquet), episodes (CSV), frames and a data dictionary."""
    from study_server.export import export as run_export

    try:
        summary = run_export(url, out, study=study)
    except FileNotFoundError as error:
        raise click.ClickException(str(error)) from None
    click.echo(str(summary))
