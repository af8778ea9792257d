"""The ``gridstudy`` command line.

Each room contributes its own commands from its own module; they are listed here as
entry points (``"package.module:command"``) and imported only when used, so that
``gridstudy envs list`` never loads pygame or matplotlib, and ``study_server`` does not
import ``game_client`` or ``analysis`` at all.
"""

from __future__ import annotations

import importlib
import json
import os

import click

COMMANDS = {
    "envs": "study_server.commands.catalog:envs",
    "problems": "study_server.commands.catalog:problems",
    "serve": "study_server.commands.serve:serve",
    "demo": "study_server.commands.serve:demo",
    "study": "study_server.commands.study:study",
    "admin": "study_server.commands.study:admin",
    "token": "study_server.commands.study:token",
    "export": "study_server.commands.export:export",
    "payments": "study_server.commands.export:payments",
    "backup": "study_server.commands.export:backup",
    "prolific": "study_server.commands.prolific:prolific",
    "play": "game_client.cli:play",
    "agent": "game_client.cli:agent",
    "baseline": "game_client.cli:baseline",
    "report": "analysis.cli:report",
}
"""Sub-command name -> entry point. A missing module means that part is not installed."""


USER_ERRORS = (ValueError, OSError, UnicodeError)
"""What a bad file, URL or option raises: said in one line (``GRIDSTUDY_DEBUG=1`` shows
the traceback)."""


class LazyGroup(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except click.ClickException:
            raise
        except USER_ERRORS as error:
            if os.environ.get("GRIDSTUDY_DEBUG"):
                raise
            raise click.ClickException(one_line(error)) from None
        except Exception as error:
            if os.environ.get("GRIDSTUDY_DEBUG") or not is_database_error(error):
                raise
            raise click.ClickException(one_line(error)) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if self._load(name) is not None)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return self._load(name)

    @staticmethod
    def _load(name: str) -> click.Command | None:
        entry = COMMANDS.get(name)
        if entry is None:
            return None
        module_name, _, attribute = entry.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name == module_name:
                return None
            raise
        return getattr(module, attribute, None)


def one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    if is_database_error(error) and getattr(error, "orig", None) is not None:
        # the driver's words, without SQLAlchemy's class name and link to its docs
        text = "the database could not be used: " + " ".join(str(error.orig).split())
    elif isinstance(error, json.JSONDecodeError):
        text = f"a value stored as JSON is not valid JSON ({text}): fix that row or restore a backup"
    return text if len(text) < 400 else text[:400] + " ..."


def is_database_error(error: BaseException) -> bool:
    """A database the command was pointed at cannot be read (SQLAlchemy's errors)."""
    return type(error).__module__.startswith("sqlalchemy")


@click.group(cls=LazyGroup)
@click.version_option(package_name="gridstudy")
def main() -> None:
    """gridstudy: human studies and LLM-agent evaluations on the same grid worlds."""


if __name__ == "__main__":  # the workers of `gridstudy serve --workers N`
    main()
