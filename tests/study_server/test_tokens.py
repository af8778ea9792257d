"""``gridstudy token create|list|revoke``: the token is printed once and stored hashed."""

from __future__ import annotations

import sqlite3

from click.testing import CliRunner

from study_server.cli import main
from study_server.tokens import digest


def test_tokens_are_created_listed_and_revoked_from_the_command_line(tmp_path):
    db = str(tmp_path / "g.db")
    runner = CliRunner()
    made = runner.invoke(main, ["token", "create", "gpt-eval", "--db", db])
    assert made.exit_code == 0, made.output
    token = made.stdout.splitlines()[0]
    assert token.startswith("gs_") and len(token) > 40
    with sqlite3.connect(db) as reader:
        stored = reader.execute("select name, token_hash from apitoken").fetchall()
    assert stored == [("gpt-eval", digest(token))]
    again = runner.invoke(main, ["token", "create", "gpt-eval", "--db", db])
    assert again.exit_code == 1 and "a token called 'gpt-eval' exists" in again.output
    unknown_study = runner.invoke(main, ["token", "create", "x", "--study", "nope", "--db", db])
    assert unknown_study.exit_code == 1 and "no study 'nope'" in unknown_study.output
    assert "valid" in runner.invoke(main, ["token", "list", "--db", db]).output
    assert runner.invoke(main, ["token", "revoke", "gpt-eval", "--db", db]).exit_code == 0
    assert "revoked" in runner.invoke(main, ["token", "list", "--db", db]).output
    missing = runner.invoke(main, ["token", "revoke", "nope", "--db", db])
    assert missing.exit_code == 1 and "no token called 'nope'" in missing.output
