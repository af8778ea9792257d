"""``gridstudy study create`` and ``gridstudy admin create`` through click's runner."""

from __future__ import annotations

import yaml
from click.testing import CliRunner
from sqlmodel import Session

from records.models import Study
from records.store import Store
from study_server import auth
from study_server.cli import main
from tests.consent.helpers import definition_data, register_walker_problems


def write_study(tmp_path, **overrides):
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(definition_data(**overrides)))
    return path


def test_study_create_stores_the_definition_and_prints_the_link(tmp_path):
    register_walker_problems(["test/p0", "test/p1", "test/p2", "test/tutorial"])
    db = tmp_path / "s.db"
    result = CliRunner().invoke(main, ["study", "create", str(write_study(tmp_path)), "--db", str(db),
                                       "--base-url", "https://lab.example.org"])
    assert result.exit_code == 0, result.output
    assert "study 'pilot' stored: 3 problems, 5 included attempts each, 2 per participant" in result.output
    assert "https://lab.example.org/study/pilot?PROLIFIC_PID={{%PROLIFIC_PID%}}" in result.output
    with Store(str(db)) as store, Session(store.engine) as session:
        assert session.get(Study, "pilot").definition["completion_code"] == "DONE1234"
    again = CliRunner().invoke(main, ["study", "create", str(write_study(tmp_path)), "--db", str(db)])
    assert again.exit_code == 1 and "exists already; pass --replace" in again.output


def test_without_the_servers_address_the_link_is_not_guessed(tmp_path):
    """A guessed port (the default 5000) sent participants nowhere when the server ran
    elsewhere: without --base-url, the command says where the link will be printed."""
    register_walker_problems(["test/p0", "test/p1", "test/p2", "test/tutorial"])
    result = CliRunner().invoke(main, ["study", "create", str(write_study(tmp_path)),
                                       "--db", str(tmp_path / "s.db")])
    assert result.exit_code == 0, result.output
    assert "127.0.0.1:5000" not in result.output
    assert "printed by `gridstudy serve` when it starts" in result.output


def test_study_create_reports_the_bad_field(tmp_path):
    register_walker_problems(["test/p0", "test/p1", "test/p2", "test/tutorial"])
    path = write_study(tmp_path, problems=["test/p0", "test/nope"], problems_per_participant=1)
    result = CliRunner().invoke(main, ["study", "create", str(path), "--db", str(tmp_path / "s.db")])
    assert result.exit_code == 1
    assert f"{path}: problems[1]: unknown problem 'test/nope'" in result.output
    path = write_study(tmp_path, tutorials={})
    result = CliRunner().invoke(main, ["study", "create", str(path), "--db", str(tmp_path / "s.db")])
    assert "tutorials.planning: missing; expected a practice problem of type planning" in result.output


def test_admin_create_hashes_the_password(tmp_path):
    db = str(tmp_path / "s.db")
    result = CliRunner().invoke(main, ["admin", "create", "researcher", "--db", db], input="long enough\nlong enough\n")
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        assert auth.verify(store.engine, "researcher", "long enough")
        assert not auth.verify(store.engine, "researcher", "wrong one")
    short = CliRunner().invoke(main, ["admin", "create", "x", "--db", db, "--password", "short"])
    assert short.exit_code == 1 and "at least 8 characters" in short.output


def test_replacing_a_study_people_are_in_needs_live(tmp_path):
    """A careless --replace mid-study changed the bonus, the problems and the next pages
    of everyone already in it; now it says what would change for whom, and needs --live."""
    from records.models import Participant

    register_walker_problems(["test/p0", "test/p1", "test/p2", "test/tutorial"])
    db = tmp_path / "s.db"
    assert CliRunner().invoke(main, ["study", "create", str(write_study(tmp_path)),
                                     "--db", str(db)]).exit_code == 0
    with Store(str(db)) as store, Session(store.engine) as session:
        session.add(Participant(study_id="pilot", external_id="p1", status="active"))
        session.add(Participant(study_id="pilot", external_id="p2", status="complete"))
        session.commit()
    same = CliRunner().invoke(main, ["study", "create", str(write_study(tmp_path)), "--db", str(db),
                                     "--replace"])
    assert same.exit_code == 0, same.output  # nothing changes for anyone
    changed = write_study(tmp_path, bonus={"per_solved": 0.5, "max": 1.0}, payment="GBP 1.00")
    refused = CliRunner().invoke(main, ["study", "create", str(changed), "--db", str(db), "--replace"])
    assert refused.exit_code == 1
    assert ("study 'pilot' has 2 participant(s) (1 active now), and this changes bonus, payment "
            "for them as well") in refused.output and "--live" in refused.output
    with Store(str(db)) as store, Session(store.engine) as session:
        assert session.get(Study, "pilot").definition["payment"] == "GBP 2.50"
    live = CliRunner().invoke(main, ["study", "create", str(changed), "--db", str(db), "--replace",
                                     "--live"])
    assert live.exit_code == 0, live.output
    with Store(str(db)) as store, Session(store.engine) as session:
        assert session.get(Study, "pilot").definition["payment"] == "GBP 1.00"


def test_a_new_payment_for_a_study_on_prolific_says_prolific_still_pays_the_old(tmp_path):
    """Pay raised mid-study with --replace --live: the consent page promised the new
    amount while Prolific went on paying what was published, without a word
    (docs/guarantees.md, 4.14)."""
    from records.models import ProlificStudy

    register_walker_problems(["test/p0", "test/p1", "test/p2", "test/tutorial"])
    db = tmp_path / "s.db"
    assert CliRunner().invoke(main, ["study", "create", str(write_study(tmp_path)),
                                     "--db", str(db)]).exit_code == 0

    def replace(**changes):
        result = CliRunner().invoke(main, ["study", "create", str(write_study(tmp_path, **changes)),
                                           "--db", str(db), "--replace", "--live"])
        assert result.exit_code == 0, result.output
        return result.stderr

    assert "Prolific" not in replace(payment="GBP 3.00")  # not published: nothing to say
    with Store(str(db)) as store, Session(store.engine) as session:
        session.add(ProlificStudy(study_id="pilot", prolific_id="60f0c0ffee", status="ACTIVE"))
        session.commit()
    said = replace(payment="GBP 4.00", expected_minutes=12)
    assert ("warning: study 'pilot' is on Prolific (60f0c0ffee), which pays the reward and "
            "states the time it was published with; the consent page now says GBP 4.00, about "
            "12 minutes (it said GBP 3.00, about 10): change the study on Prolific's pages to "
            "match") in said
    assert "Prolific" not in replace(payment="GBP 4.00", expected_minutes=12, title="Renamed")
