"""``gridstudy study create FILE`` and ``gridstudy admin create``.

A study file is validated against the problem registry before anything is stored, so a
typo in a problem id is reported with its field (``problems[2]: unknown problem ...``)
instead of surfacing when the first participant arrives.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from consent.definition import DefinitionError, StudyDefinition, from_stored, load_definition
from tasks.words import count

PROLIFIC_QUERY = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
"""Prolific's placeholders, filled in for each participant."""


def study_link(base_url: str, study_id: str) -> str:
    """The URL to paste into Prolific for ``study_id``."""
    return f"{base_url}/study/{study_id}?{PROLIFIC_QUERY}"


def study_links(store: Any, base_url: str) -> list[str]:
    """One line per open study in ``store`` with its Prolific link (``gridstudy serve``
    prints them)."""
    from sqlmodel import select

    from records.models import Study

    with store.session() as db:
        studies = db.exec(select(Study).where(Study.status == "open").order_by(Study.id)).all()
    return [f"  {s.id}: {study_link(base_url, s.id)}" for s in studies]


def served_studies(engine: Any) -> list[tuple[str, StudyDefinition]]:
    """The studies a server starting on ``engine`` serves, with their definitions: those
    open, and those with participants playing."""
    from sqlalchemy import inspect
    from sqlmodel import Session, select

    from records.models import Participant, Study

    if not inspect(engine).has_table(Study.__tablename__):
        return []  # a new database, its tables not made yet: no study to serve
    with Session(engine) as db:
        playing = set(db.exec(select(Participant.study_id).where(
            Participant.status == "active").distinct()).all())
        studies = db.exec(select(Study).order_by(Study.id)).all()
    return [(study.id, from_stored(study.definition)) for study in studies
            if study.status == "open" or study.id in playing]


def unknown_problems(served: list[tuple[str, StudyDefinition]]) -> dict[str, list[str]]:
    """Per study ``served`` (:func:`served_studies`), the problems and practice rounds it
    plays that this process has not registered (its library is not the one the study was
    made with: ``./gridstudy-library`` of another folder, or no ``$GRIDSTUDY_LIBRARY``).
    Serving it would answer its participants' pages with an error."""
    from tasks import registry

    unknown = {}
    for study_id, definition in served:
        missing = []
        for problem_id in dict.fromkeys([*definition.problems, *definition.tutorials.values()]):
            try:
                registry.problem_spec(problem_id)
            except KeyError:
                missing.append(problem_id)
        if missing:
            unknown[study_id] = missing
    return unknown


def check_tutorials(definition: StudyDefinition) -> None:
    """Every task type in the study needs a tutorial problem of the same type."""
    from tasks import registry

    kinds = {registry.problem_spec(p).challenge for p in definition.problems}
    for kind in sorted(kinds):
        tutorial = definition.tutorials.get(kind)
        if tutorial is None:
            raise DefinitionError(f"tutorials.{kind}: missing; expected a practice problem of type {kind}")
        if registry.problem_spec(tutorial).challenge != kind:
            raise DefinitionError(f"tutorials.{kind}: {tutorial!r} is not a {kind} problem")


def check_programs(definition: StudyDefinition) -> None:
    """No problem of the study (tutorials included) runs a program with static errors or
    one that fails when rolled out over the problem's horizon."""
    from tasks import registry
    from tasks.worldtest.check import program_errors

    for problem_id in dict.fromkeys([*definition.problems, *definition.tutorials.values()]):
        broken = program_errors(registry.get_problem(problem_id))
        if broken:
            what = ("environment" if all(r.startswith("contract check: ") for r in broken)
                    else "program")
            raise DefinitionError(f"{problem_id}: its {what} has errors "
                                  "(gridstudy envs check, gridstudy problems check):\n"
                                  + "\n".join(broken))


def create_study(url: str, path: str, replace: bool = False, live: bool = False,
                 notes: list[str] | None = None) -> StudyDefinition:
    """Validate the file at ``path`` and store it; the definition stored.

    Replacing the definition of a study people have entered changes, for them, what they
    see next and how they are paid (their step in the flow, their problems, the bonus,
    the codes): refused unless ``live`` says the researcher means it, with the fields
    that change and who is in the study. A new payment or time for a study already on
    Prolific is stored with a line in ``notes``: Prolific keeps paying what was
    published until it is changed there (docs/guarantees.md, 4.14)."""
    from sqlalchemy import func
    from sqlmodel import select

    from records.models import Participant, ProlificStudy, Study
    from records.store import Store
    from tasks import registry

    known = {spec.id for spec in registry.list_problems()}
    definition = load_definition(path, known_problems=known)
    try:
        check_tutorials(definition)
        check_programs(definition)
    except DefinitionError as error:
        raise DefinitionError(f"{path}: {error}") from None
    with Store(url) as store, store.session() as db:
        existing = db.get(Study, definition.id)
        if existing is not None and not replace:
            raise DefinitionError(f"{path}: study {definition.id!r} exists already; pass --replace to update it")
        if existing is not None and not live:
            stored = json.loads(json.dumps(definition.to_dict()))  # as the column keeps it
            changed = sorted(key for key, value in stored.items()
                             if existing.definition.get(key) != value)
            people = dict(db.exec(select(Participant.status, func.count()).where(
                Participant.study_id == definition.id).group_by(Participant.status)).all())
            if changed and people:
                raise DefinitionError(
                    f"{path}: study {definition.id!r} has {sum(people.values())} "
                    f"participant(s) ({people.get('active', 0)} active now), and this changes "
                    f"{', '.join(changed)} for them as well (their next pages, their problems, "
                    "their pay): pass --live to replace it anyway, or store the new version "
                    "under another id")
        published = db.get(ProlificStudy, definition.id) if existing is not None else None
        if notes is not None and published is not None and published.prolific_id:
            try:
                before = from_stored(existing.definition)
            except DefinitionError:  # stored under the rules of an earlier version
                before = definition
            if (before.payment_cents, before.stated_minutes) != (
                    definition.payment_cents, definition.stated_minutes):
                notes.append(
                    f"warning: study {definition.id!r} is on Prolific ({published.prolific_id}), "
                    f"which pays the reward and states the time it was published with; the "
                    f"consent page now says {definition.payment or 'no payment'}, about "
                    f"{definition.stated_minutes} minutes (it said {before.payment or 'no payment'}"
                    f", about {before.stated_minutes}): change the study on Prolific's pages "
                    "to match")
        row = existing or Study(id=definition.id)
        row.title, row.definition = definition.title, definition.to_dict()
        db.add(row)
    return definition


def doubt_lines(definition: StudyDefinition, warning: str = "warning",
                of: str = "this study") -> list[str]:
    """A warning naming each problem of the study (practice included) that
    ``gridstudy problems check`` never showed to stay passable at the version it will
    serve (:func:`tasks.worldtest.checked.doubts`), with the command that checks them;
    none when every one was."""
    from tasks.worldtest.checked import doubts

    doubtful = doubts([*definition.problems, *definition.tutorials.values()])
    if not doubtful:
        return []
    width = max(map(len, doubtful))
    return [f"{warning}: {len(doubtful)} problem(s) of {of} are not known to stay "
            "passable whatever a participant does first (docs/guarantees.md, 4.5):",
            *(f"  {problem_id:<{width}}  {why}" for problem_id, why in doubtful.items()),
            "  check them (a minute or more each): gridstudy problems check "
            + " ".join(doubtful)]


def existing(db: str | None) -> Any:
    """An engine on the database a listing command was pointed at (``--db``, else
    ``$DATABASE_URL``, else ``gridstudy.db``), which must exist: a mistyped name is said
    so, not made an empty database whose listing shows nothing."""
    from records.database import open_existing
    from records.store import command_url

    try:
        return open_existing(command_url(db))
    except (FileNotFoundError, ValueError) as error:
        raise click.ClickException(str(error)) from None


@contextmanager
def writing(db: str | None) -> Iterator[Any]:
    """The store a command that adds an account or a token was pointed at. Such a command
    may make the database (the first step of a new deployment), but says so when it does:
    `admin create NAME` run without the `--db` given to `study create` and `serve` made
    an admin in another database, said it "can now log in", and the login was refused."""
    from records.database import sqlite_path
    from records.store import Store, command_url

    url = command_url(db)
    path = sqlite_path(url)
    new = path is not None and not path.exists()
    with Store(url) as store:
        yield store
    if new:
        click.echo(f"note: there was no database at {path}: a new one was made, holding no "
                   "study; give the server and the other commands the same --db (or "
                   "DATABASE_URL)", err=True)


def shown(url: str) -> str:
    """A database URL as a command prints it: without its password."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url


def _not_empty(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse an empty ``--db`` before anything else is asked (``admin create`` asked for
    the password twice, then refused it)."""
    from records.store import command_url

    if value is not None:
        try:
            command_url(value)
        except ValueError as error:
            raise click.ClickException(str(error)) from None
    return value


_DB_OPTION = click.option("--db", "db", default=None, is_eager=True, callback=_not_empty,
                          help="Database URL or SQLite file (default: $DATABASE_URL or gridstudy.db).")


@click.group()
def study() -> None:
    """Create and list studies."""


@study.command("create")
@click.argument("file", type=click.Path(dir_okay=False))
@_DB_OPTION
@click.option("--replace", is_flag=True, help="Update a study that already exists.")
@click.option("--live", is_flag=True,
              help="With --replace: change a study people have entered (refused without it).")
@click.option("--base-url", default=None,
              help="The address participants will reach the server at (https://...), to "
                   "print the Prolific link now; without it, `gridstudy serve` prints the "
                   "link with its own address when it starts.")
def create(file: str, db: str | None, replace: bool, live: bool, base_url: str | None) -> None:
    """Validate a study definition FILE (YAML) and store it."""
    from records.store import command_url

    url = command_url(db)
    try:
        notes: list[str] = []
        definition = create_study(url, file, replace=replace, live=live, notes=notes)
    except DefinitionError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"study {definition.id!r} stored: {len(definition.problems)} problems, "
               f"{definition.attempts_per_problem} included attempts each, "
               f"{definition.problems_per_participant} per participant")
    if base_url:
        click.echo(f"Prolific link: {study_link(base_url, definition.id)}")
    else:
        click.echo("Prolific link: printed by `gridstudy serve` when it starts, with the "
                   "address it serves at (or run this again with --base-url https://...)")
    sys.stdout.flush()  # the warnings after what was stored, in a terminal as in a pipe
    for line in [*notes, *doubt_lines(definition)]:
        click.echo(line, err=True)


@study.command("list")
@_DB_OPTION
def list_studies(db: str | None) -> None:
    """Every study: its status and title, how full it is (finished included attempts
    against those wanted), and its participants by how their visit stands."""
    from sqlmodel import Session, func, select

    from records.models import Participant, Study
    from study_server.assignment import included_done

    with Session(existing(db)) as session:
        studies = session.exec(select(Study).order_by(Study.id)).all()
        if not studies:
            click.echo("no studies; store one with gridstudy study create FILE")
        for row in studies:
            definition = from_stored(row.definition)
            done = included_done(session, row.id)
            wanted = definition.attempts_per_problem * len(definition.problems)
            finished = sum(min(done.get(p, 0), definition.attempts_per_problem)
                           for p in definition.problems)
            people = dict(session.exec(
                select(Participant.status, func.count()).where(Participant.study_id == row.id)
                .group_by(Participant.status)).all())
            click.echo(f"{row.id}  {row.status}  {row.title}")
            click.echo(f"  {count(len(definition.problems), 'problem')}, {finished} of {wanted} included "
                       f"attempts ({definition.attempts_per_problem} each); "
                       f"{count(sum(people.values()), 'participant')}"
                       + "".join(f", {n} {status}" for status, n in sorted(people.items())))


@click.group()
def admin() -> None:
    """Manage researcher accounts for the dashboard."""


@admin.command("create")
@click.argument("username")
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True)
@_DB_OPTION
def create_admin(username: str, password: str, db: str | None) -> None:
    """Create (or reset the password of) the admin USERNAME."""
    from study_server import auth

    with writing(db) as store:
        try:
            auth.create_admin(store.engine, username, password)
        except ValueError as error:
            raise click.ClickException(str(error)) from None
        click.echo(f"admin {username!r} can now log in at /dashboard/ of the server on "
                   f"{shown(store.url)}")


@click.group()
def token() -> None:
    """Credentials for the agent API (sent as Authorization: Bearer <token>)."""


@token.command("create")
@click.argument("name")
@click.option("--study", "study_id", default=None, help="The study its runs belong to (default: none).")
@_DB_OPTION
def create_token(name: str, study_id: str | None, db: str | None) -> None:
    """Create the token NAME and print it (it is shown this once)."""
    from study_server import tokens

    with writing(db) as store:
        try:
            secret = tokens.create(store.engine, name, study_id)
        except ValueError as error:
            raise click.ClickException(str(error)) from None
        click.echo(secret)
        click.echo(f"token {name!r} created in {shown(store.url)}; give it to the agent as "
                   "GRIDSTUDY_TOKEN (it is not stored and cannot be shown again)", err=True)


@token.command("revoke")
@click.argument("name")
@_DB_OPTION
def revoke_token(name: str, db: str | None) -> None:
    """Revoke the token NAME: it opens nothing from now on."""
    from study_server import tokens

    engine = existing(db)  # a mistyped --db is said so, not made an empty database
    try:
        tokens.revoke(engine, name)
    except ValueError as error:
        raise click.ClickException(f"{error} in {shown(str(engine.url))}") from None
    finally:
        engine.dispose()
    click.echo(f"token {name!r} revoked")


@token.command("list")
@_DB_OPTION
def list_tokens(db: str | None) -> None:
    """Every token: name, study, created, revoked."""
    from study_server import tokens

    rows = tokens.listed(existing(db))
    if not rows:
        click.echo("no tokens; create one with gridstudy token create NAME")
    for row in rows:
        revoked = f"revoked {row.revoked_at:%Y-%m-%d %H:%M}" if row.revoked_at else "valid"
        click.echo(f"{row.name:<24} {row.study_id or '-':<16} {row.created_at:%Y-%m-%d %H:%M}  {revoked}")
