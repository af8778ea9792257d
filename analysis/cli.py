"""``gridstudy report``: tables as CSV and an HTML page from a database or an export."""

from __future__ import annotations

from pathlib import Path

import click


def source_of(text: str) -> str:
    """A database URL, an export directory, or a SQLite file turned into its URL."""
    path = Path(text)
    if "://" not in text and path.is_file():
        return f"sqlite:///{path.resolve()}"
    return text


@click.command()
@click.option("--db", "url", envvar="DATABASE_URL", required=True,
              help="Database URL, SQLite file or export directory (default: $DATABASE_URL).")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Directory to write report.html and the tables' CSV files into.")
@click.option("--study", multiple=True, help="Report only this study (repeatable).")
@click.option("--t-max", default=50, show_default=True, type=click.IntRange(min=1),
              help="AUV horizon in scored steps (004).")
@click.option("--k", default=1, show_default=True, type=click.IntRange(min=1),
              help="k of pass@k, discovery@k and interaction@k (003).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def report(url: str, out: str, study: tuple[str, ...], t_max: int, k: int, quiet: bool) -> None:
    """Write report.html (figures embedded) and every table as CSV into OUT."""
    from analysis.load import load
    from analysis.report import warning_lines, write_report

    try:
        dataset = load(source_of(url), study=study or None)
    except (FileNotFoundError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    page = write_report(dataset, Path(out), t_max=t_max, k=k, progress=not quiet)
    for line in warning_lines(dataset):
        click.echo(line, err=True)
    click.echo(f"wrote {page} ({len(dataset)} episodes)")
