"""``gridstudy export``: the store's trajectories as files to share and reload."""

from __future__ import annotations

from typing import Any

import click

from tasks.words import count


def stopped(error: OSError, out: str, what: str, runs: str) -> click.ClickException:
    """What a command writing the files of folder ``out`` (``study_server.export.staged``)
    says when ``error`` stopped it: what it wrote is removed and the folder is as it
    was, or, stopped among the moves into the folder, that the folder holds files of two
    ``runs``."""
    from pathlib import Path

    from records.schema import EXPORT_UNFINISHED

    if (Path(out) / EXPORT_UNFINISHED).exists():
        return click.ClickException(
            f"the {what} stopped as it moved its files into {out}: {error.strerror or error}; "
            f"the folder holds files of two {runs} (its {EXPORT_UNFINISHED} says so): run the "
            f"{what} again")
    return click.ClickException(f"the {what} stopped: {error.strerror or error}; what it had "
                                f"written is removed and {out} is as it was")


DB = click.option("--db", "url", envvar="DATABASE_URL", required=True,
                  help="Database URL or SQLite file (default: $DATABASE_URL).")


@click.command()
@DB
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Directory to write (created if missing; the export's files in it are "
                   "replaced once the new ones are all written).")
@click.option("--study", default=None, help="Export only this study (default: everything).")
@click.option("--pseudonymize", is_flag=True,
              help="Replace Prolific ids with keyed hashes (the same in every export of this "
                   "database; the key stays in it) before sharing the data.")
def export(url: str, out: str, study: str | None, pseudonymize: bool) -> None:
    """Write events (JSONL, Parquet), episodes (CSV), frames, participants with their
    Prolific ids, and a data dictionary."""
    import contextlib
    import sys

    from study_server.export import export as run_export

    with contextlib.ExitStack() as shown:
        bar: Any = None

        def progress(done: int, total: int) -> None:
            nonlocal bar
            if bar is None:  # the database is open: nothing but the bar from now on
                bar = shown.enter_context(click.progressbar(
                    length=1, label="exporting rows", file=sys.stderr, show_pos=True))
            bar.length = max(total, 1)
            bar.update(done - bar.pos)

        try:
            summary = run_export(url, out, study=study, pseudonymize=pseudonymize,
                                 progress=progress)
        except (FileNotFoundError, LookupError) as error:
            raise click.ClickException(str(error)) from None
        except OSError as error:  # a full disk, a folder it may not write
            raise stopped(error, out, "export", "exports") from None
    click.echo(str(summary))
    if not pseudonymize and summary.participants:
        click.echo("participants.jsonl holds Prolific ids: export with --pseudonymize "
                   "before sharing the data", err=True)


@click.command()
@DB
@click.option("--study", required=True, help="The study to pay.")
@click.option("--out", default=".", show_default=True, type=click.Path(file_okay=False),
              help="Where to write decisions.csv, approve.txt and bonuses.csv.")
def payments(url: str, study: str, out: str) -> None:
    """Write the study's payment decisions (decisions.csv: approve, reject, return or
    pending for each participant, and why: completed and included, excluded and by which
    rule, or how the visit ended), the ids to approve (approve.txt, one per line, for
    Prolific's bulk approval) and the bonuses in Prolific's bulk-bonus format
    (bonuses.csv: PROLIFIC_PID,amount; included solved attempts only)."""
    from collections import Counter
    from pathlib import Path

    from sqlmodel import Session

    from records.database import open_existing
    from study_server.export import known_study
    from study_server.payments import payment_rows, write_payments

    try:  # a mistyped --db is said as such, and no empty database is left behind it
        engine = open_existing(url)
    except (FileNotFoundError, ValueError, PermissionError) as error:
        raise click.ClickException(str(error)) from None
    try:
        known_study(engine, study)
        with Session(engine) as db:
            definition, rows = payment_rows(db, study)
    except LookupError as error:
        raise click.ClickException(str(error)) from None
    finally:
        engine.dispose()
    try:
        decisions, approve, bonuses = write_payments(rows, Path(out))
    except OSError as error:  # a full disk, a folder it may not write
        raise stopped(error, out, "payments", "payments runs") from None
    counts = Counter(row.decision for row in rows)
    currency, total = definition.currency, sum(row.bonus for row in rows)
    decided = ", ".join(f"{d} {n}" for d, n in counts.items())
    click.echo(f"{study}: {count(len(rows), 'participant')}" + (f" ({decided})" if rows else ""))
    paid = count(sum(row.bonus > 0 for row in rows), "bonus", "bonuses")
    click.echo(f"wrote {decisions}, {approve} and {bonuses} ({paid}, {currency} {total:.2f} "
               "in all)")


@click.command()
@DB
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="The backup's file (an earlier backup there is replaced once the new one "
                   "is whole).")
def backup(url: str, out: str) -> None:
    """Copy a SQLite database, whole, while its server runs (a copy made with cp can be
    torn and misses what the write-ahead log holds)."""
    from records.backup import backup as run_backup

    def starting(path: Any) -> None:  # a large study's copy takes a while
        from pathlib import Path

        log = Path(f"{path}-wal")
        held = log.stat().st_size if log.exists() else 0
        click.echo(f"backing up {path} ({path.stat().st_size / 1e6:,.1f} MB"
                   + (f", and {held / 1e6:,.1f} MB in its write-ahead log" if held else "")
                   + ") ...", err=True)

    click.echo(str(run_backup(url, out, starting)))
