"""One library: an environment written with ``envs new --library DIR`` is found by every
later command when ``GRIDSTUDY_LIBRARY`` is DIR, each run as an author types it (the real
command line, one process each); a broken folder beside it is reported and skipped."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import yaml

from tests.consent.helpers import definition_data
from tests.game_client.test_debugger import close_when_drawn, xvfb  # noqa: F401 (a fixture)
from tests.study_server.test_bad_files import GRIDSTUDY, gridstudy


def test_an_environment_made_with_envs_new_goes_all_the_way_into_a_study(
        xvfb: str, tmp_path: Path) -> None:  # noqa: F811
    library = tmp_path / "lib"
    env = {"GRIDSTUDY_LIBRARY": str(library)}

    def run(*args: str) -> subprocess.CompletedProcess:
        return gridstudy(*args, cwd=tmp_path, env=env)

    made = run("envs", "new", "glass_house", "--category", "tool use", "--library", str(library))
    folder = library / "autumn" / "glass_house"
    assert made.returncode == 0 and f"created {folder}" in made.stdout, made.stderr
    assert "warning" not in made.stderr  # --library is $GRIDSTUDY_LIBRARY: nothing to warn of
    # A broken folder beside it is reported by each command, never fatal.
    (library / "autumn" / "half_done").mkdir()
    (library / "autumn" / "half_done" / "program.sexp").write_text("(program)")
    (library / "autumn" / "half_done" / "env.json").write_text("{not json")

    listed = run("envs", "list")
    assert listed.returncode == 0, listed.stderr
    ids = [line.split()[0] for line in listed.stdout.splitlines()]
    assert "autumn/glass_house" in ids and "autumn/glass_house-changed" in ids
    assert "autumn/lamp_grid" in ids  # gridstudy's own library is still there
    assert "half_done" in listed.stderr and "not valid JSON" in listed.stderr
    sizes = {line.split()[0]: line.split()[1:4] for line in listed.stdout.splitlines()}
    assert sizes["autumn/glass_house"] == ["10x10", "4", "fps"]  # the skeleton's, as promised
    assert sizes["autumn/lamp_grid"] == ["5x5", "4", "fps"]

    checked = run("envs", "check", str(folder))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "2 programs checked: 0 errors" in checked.stderr

    # Without problems yet, the debugger opens the environment by its id.
    def start() -> subprocess.Popen:
        return subprocess.Popen([GRIDSTUDY, "play", "autumn/glass_house", "--debug", "--scale",
                                 "20"], cwd=tmp_path, env={**_environ(), **env},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, _ = close_when_drawn(start, xvfb, tmp_path / "window.png", (4, 4), "royalblue")
    assert out.startswith(f"{folder / 'program.sexp'}: stopped at tick ")

    derived = run("problems", "derive", "glass_house", "--samples", "4")
    assert derived.returncode == 0, derived.stdout + derived.stderr
    assert sorted(p.name for p in (folder / "problems").iterdir()) == ["cd.json", "mfp.json",
                                                                      "planning.json"]
    problems = [f"glass_house/{c}" for c in ("mfp", "planning", "cd")]
    listed = run("problems", "list")
    assert all(f"{p} " in listed.stdout for p in problems), listed.stdout
    valid = run("problems", "check", "--samples", "4", *problems)
    assert valid.returncode == 0 and "3 valid, 0 unverified, 0 invalid" in valid.stdout, valid.stdout

    study = definition_data(problems=problems, problems_per_participant=1,
                            tutorials={c: f"glass_house/{c}" for c in ("mfp", "planning", "cd")})
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study))
    stored = run("study", "create", "study.yaml", "--db", "s.db")
    assert stored.returncode == 0 and "study 'pilot' stored: 3 problems" in stored.stdout, stored.stderr
    assert "warning" not in stored.stderr  # the check above kept its 50 runs of each

    # The browser engine carries the library too: the same frames in the page as here.
    made = subprocess.run(
        [str(Path(GRIDSTUDY).parent / "python"), "-c", BROWSER_JOBS, str(tmp_path)],
        cwd=tmp_path, env={**_environ(), **env, "PYTHONPATH": str(Path(__file__).parents[2])},
        capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-2000:]
    expected = json.loads((tmp_path / "expected.json").read_text())
    from tests.tasks.test_browser_engine import replay_in_node

    answer = replay_in_node(tmp_path / "engine.zip", json.loads((tmp_path / "jobs.json").read_text()))
    assert {r["problem"]: r["hashes"] for r in answer["results"]} == expected
    assert sorted(expected) == sorted(problems)

    # Names nobody wrote are errors, with exit 1.
    for command, says in ((["problems", "derive", "glass_hose"],
                           "unknown environment 'glass_hose' (did you mean 'glass_house'?)"),
                          (["problems", "check", "glass_house/mpf"],
                           "unknown problem 'glass_house/mpf' (did you mean 'glass_house/mfp'?)")):
        unknown = run(*command)
        assert unknown.returncode == 1 and says in unknown.stderr, unknown.stderr
    assert json.loads((folder / "problems" / "mfp.json").read_text())["env_id"] == "autumn/glass_house"


BROWSER_JOBS = """
import json, sys
from pathlib import Path
from bench.browser_engine import some_play
from study_server.engine import engine_archive, in_engine
from tasks import registry
from tasks.worldtest.verify import frame_hashes
out = Path(sys.argv[1])
problems = [f"glass_house/{c}" for c in ("mfp", "planning", "cd")]
assert all(in_engine(p) for p in problems)
jobs = [{"problem": p, "actions": some_play(p)} for p in problems]
(out / "engine.zip").write_bytes(engine_archive())
(out / "jobs.json").write_text(json.dumps(jobs))
(out / "expected.json").write_text(json.dumps(
    {j["problem"]: frame_hashes(registry.get_problem(j["problem"]), j["actions"]) for j in jobs}))
"""
"""Run with the library's environment: the archive (with the library), random plays of
its problems, and their frames on this machine."""


def glass_house(tmp_path: Path) -> tuple[Path, Callable[..., subprocess.CompletedProcess]]:
    """An author's library at ``tmp_path/lib`` holding ``glass_house``, made and derived
    as an author types it; and a way to run a command on it (one that fails, fails)."""
    library = tmp_path / "lib"

    def run(*args: str) -> subprocess.CompletedProcess:
        done = gridstudy(*args, cwd=tmp_path, env={"GRIDSTUDY_LIBRARY": str(library)})
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    run("envs", "new", "glass_house", "--category", "tool use", "--library", str(library))
    run("problems", "derive", "glass_house", "--samples", "4")
    return library, run


def test_study_create_names_each_problem_no_check_showed_passable_at_its_version(
        tmp_path: Path) -> None:
    """Guarantee 4.5 says every problem a study serves can be solved, and only
    ``problems check`` looks (minutes per problem): it keeps what it found beside the
    program, under the problem's version, and ``study create`` names each problem of the
    study not shown passable at the version it will serve (never checked, checked with
    too few runs, or before the program was edited), with the command that checks them;
    ``serve`` says the same as it starts, of the programs as it serves them. Before, a
    study served an author's problem nobody had checked, without a word."""
    library, run = glass_house(tmp_path)
    problems = ["glass_house/planning", "glass_house/cd"]
    study = definition_data(problems=problems, problems_per_participant=1,
                            tutorials={"planning": problems[0], "cd": problems[1]})
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study))

    def warnings(first: bool = False) -> list[str]:
        stored = run("study", "create", "study.yaml", "--db", "s.db",
                     *([] if first else ["--replace"]))
        assert "study 'pilot' stored" in stored.stdout
        return [" ".join(line.split()) for line in stored.stderr.splitlines()]

    assert warnings(first=True) == [
        "warning: 2 problem(s) of this study are not known to stay passable whatever a "
        "participant does first (docs/guarantees.md, 4.5):",
        "glass_house/planning never checked", "glass_house/cd never checked",
        "check them (a minute or more each): gridstudy problems check glass_house/planning "
        "glass_house/cd"]
    run("problems", "check", problems[0], "--seeds", "5")
    assert warnings()[1:3] == [
        "glass_house/planning checked with 5 runs only (the check's default is 50)",
        "glass_house/cd never checked"]
    checked = run("problems", "check", *problems, "--jobs", "2")  # a process each
    checks = library / "autumn" / "glass_house" / "checks.json"
    record = json.loads(checks.read_text())
    assert {k: (v["passed"], v["runs"]) for k, v in record.items()} == {
        problems[0]: (50, 50), problems[1]: (50, 50)}
    # the same check on a later day finds the same and changes no file (before, it
    # rewrote each record's day: a check of a clone's library left changes to commit)
    checks.write_text(checks.read_text().replace(record[problems[0]]["checked"], "2026-01-05"))
    record, earlier = json.loads(checks.read_text()), checks.read_bytes()
    again = run("problems", "check", *problems, "--jobs", "1")
    assert again.stdout.replace("\n", " ").count("recorded as before: the same check on "
                                                  "2026-01-05 at this version (50 of 50 passed)") == 2
    assert checks.read_bytes() == earlier
    assert [line for line in again.stdout.splitlines()
            if "recorded as before" not in line] == checked.stdout.splitlines()
    assert warnings() == []
    # a quick check afterwards (its runs are the first five of the full one) keeps the
    # full record; before, it replaced it, and the study was warned of again
    quick = run("problems", "check", problems[0], "--seeds", "5")
    assert "recorded as before: the check of 50 runs on " in " ".join(quick.stdout.split())
    assert json.loads((library / "autumn" / "glass_house" / "checks.json").read_text()) == record
    assert warnings() == []
    program = library / "autumn" / "glass_house" / "program.sexp"
    program.write_text(program.read_text() + "\n; the author's edit\n")
    # the server serves the program as it is now, and says so as it starts
    from tests.conftest import start_serve

    server, _ = start_serve(tmp_path / "s.db", log=tmp_path / "serve.log",
                            env={"GRIDSTUDY_LIBRARY": str(library)})
    server.terminate()
    server.wait(60)
    said = (tmp_path / "serve.log").read_text()
    assert ("Warning: 2 problem(s) of study 'pilot' are not known to stay passable" in said
            and "gridstudy problems check glass_house/planning glass_house/cd" in said), said
    assert [line.split(" checked on ")[0] for line in warnings()[1:3]] == problems
    assert all(line.endswith("at another version (its program or definition changed "
                             "since)") for line in warnings()[1:3])


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


def test_a_program_edited_between_two_runs_is_two_versions_and_the_report_says_so(
        tmp_path: Path) -> None:
    """An author edits a program while its data is being collected: each attempt records
    the version of the environment it was played on (the program as its process ran it),
    and the report warns that the problem's scores pool two versions. A process keeps the
    program it first read, so an edit under a running process changes neither what it
    plays nor the version it records. Before, nothing in the record told the attempts on
    the old program from those on the new one."""
    from click.testing import CliRunner
    from sqlmodel import select

    from analysis.cli import report
    from records.models import EpisodeRow
    from records.schema import VERSION_KEY
    from records.store import Store
    from tasks.library import load_env

    library, run = glass_house(tmp_path)
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    play = ("agent", "run", "--agent", "random", "--problems", "glass_house/planning",
            "--db", db)
    run(*play, "--runs", "2")
    program = library / "autumn" / "glass_house" / "program.sexp"
    original = program.read_text()
    program.write_text(original.replace("(range 2 8)", "(range 1 9)"))  # longer walls
    run(*play, "--runs", "3")  # the same run goes on, on the edited program
    with Store(db) as store, store.session() as session:
        rows = session.exec(select(EpisodeRow).order_by(EpisodeRow.id)).all()
    versions = [row.info[VERSION_KEY] for row in rows]
    assert versions[0] == versions[1] != versions[2] and len(versions) == 3

    result = CliRunner().invoke(report, ["--db", db, "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert (f"Warning: glass_house/planning was played on 2 versions of its environment "
            f"(its program or problem was edited while the data was collected): 2 on "
            f"{versions[0]}, 1 on {versions[2]}; its scores pool them.") in result.output

    # In one process: what it read first is what it plays and records.
    program.write_text(original)
    made = load_env("glass_house", folder=str(program.parent))
    program.write_text(original.replace("(range 2 8)", "(range 1 9)"))
    again = load_env("glass_house", folder=str(program.parent))
    assert made.reset(0).frame == again.reset(0).frame


def test_a_report_run_without_the_library_its_data_was_played_from_says_so(tmp_path: Path):
    """The default library is ``./gridstudy-library``: a report run from another folder
    does not know the researcher's own environments. Their scores are read from the
    record, but the metrics that replay the environment fall back to the frames or leave
    the attempts out, so the figures differ; the report says so, naming the problems and
    the library it read. Before, it said nothing: the loop ratio changed (0.19 to 0.07 in
    one such run) and the progress table was missing, silently."""
    import csv
    import html

    library = tmp_path / "lib"
    env = {"GRIDSTUDY_LIBRARY": str(library)}
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def run(*args: str, cwd: Path = tmp_path, **more: str) -> subprocess.CompletedProcess:
        done = gridstudy(*args, cwd=cwd, env={**env, **more})
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    run("envs", "new", "glass_house", "--category", "tool use", "--library", str(library))
    run("problems", "derive", "glass_house", "--samples", "4")
    run("agent", "run", "--agent", "random", "--problems", "glass_house/planning", "--db", db,
        "--runs", "2")
    report = ("report", "--db", db, "--runs-outside-studies", "--quiet", "--out")
    whole = run(*report, str(tmp_path / "whole"))
    assert "not registered here" not in whole.stderr
    cut = run(*report, str(tmp_path / "cut"), cwd=elsewhere, GRIDSTUDY_LIBRARY="")
    warning = next(line for line in cut.stderr.splitlines() if "not registered here" in line)
    assert "(glass_house/planning: 2 attempts)" in warning
    assert f"the library read here is {elsewhere / 'gridstudy-library'}" in warning
    assert html.escape(warning) in (tmp_path / "cut" / "report.html").read_text()
    assert (tmp_path / "whole" / "progress.csv").exists()
    assert not (tmp_path / "cut" / "progress.csv").exists()

    def scores(out: str) -> list[str]:
        with (tmp_path / out / "problem_scores.csv").open() as handle:
            return [row["score"] for row in csv.DictReader(handle)]

    assert scores("whole") == scores("cut")  # what the record holds is read the same


def test_a_changed_program_not_changed_yet_is_named_as_such(tmp_path: Path) -> None:
    """The author has copied program.sexp to changed.sexp and not yet changed a rule: the
    change-detection recipe said only that its witness never made the programs differ."""
    library = tmp_path / "lib"
    env = {"GRIDSTUDY_LIBRARY": str(library)}
    assert gridstudy("envs", "new", "twin", "--category", "tool use", "--library", str(library),
                     cwd=tmp_path, env=env).returncode == 0
    folder = library / "autumn" / "twin"
    (folder / "changed.sexp").write_text((folder / "program.sexp").read_text()
                                         .replace("  ", "    ") + "; to change: the up arrow\n")
    derived = gridstudy("problems", "derive", "twin", "--samples", "4", cwd=tmp_path, env=env)
    said = ("changed.sexp is the same program as program.sexp (comments and spacing aside); "
            "change the one rule it is about")
    assert derived.returncode != 0 and said in derived.stdout + derived.stderr, derived.stdout
