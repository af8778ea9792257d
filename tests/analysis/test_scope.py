"""One study at a time: the report refuses to pool studies unless told to, and says on
its first screen what it covers."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from analysis.cli import report
from analysis.load import PLAYS, load, study_counts
from records.models import AgentRun, Participant, Study
from records.store import Store
from tests.analysis.report_study import EASY, PROBLEMS, fill, play, register_problems


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    """The report study, a pilot study with one participant's attempt, an agent run
    recorded outside any study (two attempts) and a preview recorded with ?record=1."""
    path = tmp_path_factory.mktemp("scope") / "gridstudy.db"
    with Store(f"sqlite:///{path}") as store:
        fill(store)
        with store.session() as session:
            session.add(Study(id="pilot"))
            session.add(Participant(id=9, study_id="pilot", external_id="P9", status="complete"))
            session.add(AgentRun(id=9, agent_kind="random"))
        play(store, PROBLEMS[EASY], ["go-to-test", "right"], study_id="pilot",
             source="input", participant_id=9)
        for _ in range(2):
            play(store, PROBLEMS[EASY], ["go-to-test", "left"], study_id=None,
                 source="agent", agent_run_id=9)
        play(store, PROBLEMS[EASY], ["go-to-test"], study_id=None, source="input")
        store.flush()
    return path


def run(database, tmp_path, *options):
    return CliRunner().invoke(report, ["--db", str(database), "--out", str(tmp_path / "out"),
                                       "--quiet", "--t-max", "3", *options])


def first_screen(tmp_path) -> str:
    page = (tmp_path / "out" / "report.html").read_text()
    return page[:page.index('<section id="task_type_scores">')]


def test_counts_per_study(database, tmp_path):
    """Per study; outside any: the model runs, and apart the plays no run made."""
    from study_server.export import export

    assert study_counts(database) == {"report": 17, "pilot": 1, None: 2, PLAYS: 1}
    export(f"sqlite:///{database}", tmp_path / "export")
    assert study_counts(tmp_path / "export") == study_counts(database)


def test_refuses_to_pool_without_a_flag(database, tmp_path):
    result = run(database, tmp_path)
    assert result.exit_code == 1
    assert ("the source holds 2 studies (pilot: 1 episode, report: 17 episodes): report one "
            "with --study ID, or pool them with --all-studies") in result.output
    assert not (tmp_path / "out").exists()


def test_one_study_leaves_out_the_others_and_says_so(database, tmp_path):
    result = run(database, tmp_path, "--study", "pilot")
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("(1 episode)\n")
    screen = first_screen(tmp_path)
    assert '<p class="scope">Study: pilot.</p>' in screen
    assert ("Left out: 2 episodes of model runs outside any study (add them with --agent-run "
            "ID or --runs-outside-studies).") in screen
    assert ("Left out: 1 episode played outside any study and any model run: previews "
            "recorded with ?record=1, local play with --record (add them with "
            "--runs-outside-studies).") in screen  # it was counted among the model runs


def test_all_studies_is_said_first(database, tmp_path):
    result = run(database, tmp_path, "--all-studies")
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("(18 episodes)\n")
    assert ('<p class="scope">Pooled studies (--all-studies): pilot: 1 episode, report: 17 '
            'episodes.</p>') in first_screen(tmp_path)


@pytest.mark.parametrize(("options", "episodes"), [
    (("--agent-run", "9"), 3), (("--runs-outside-studies",), 4)])
def test_runs_outside_studies_join_by_choice(database, tmp_path, options, episodes):
    result = run(database, tmp_path, "--study", "pilot", *options)
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith(f"({episodes} episodes)\n")


@pytest.mark.parametrize(("options", "message"), [
    (("--study", "nope"), "no study nope in the source; it holds: pilot: 1 episode, "
                          "report: 17 episodes"),
    (("--study", "pliot"), "no study pliot in the source (did you mean 'pilot'?); it holds: "),
    (("--study", "pilot", "--all-studies"), "--study and --all-studies contradict each other"),
    (("--study", "pilot", "--agent-run", "9", "--agent-run", "99"),
     "agent run 99: no attempt in "),
])
def test_bad_choice_is_explained(database, tmp_path, options, message):
    """A report over nothing of what was asked is refused, and says what there is (a
    mistyped --agent-run added nothing, and the report said nothing of it)."""
    result = run(database, tmp_path, *options)
    assert result.exit_code == 1
    assert message in result.output
    assert not (tmp_path / "out").exists()


def test_load_keeps_runs_outside_studies_only_when_asked(database):
    assert {e.study_id for e in load(database, study="pilot")} == {"pilot"}
    assert len(load(database, study="pilot", outside=True)) == 4  # the preview too
    assert len(load(database, study="pilot", agent_runs=[9])) == 3
    assert len(load(database)) == 21


def test_an_unfinished_recorded_play_is_not_called_a_model_run_to_resume(tmp_path):
    """A preview recorded with ?record=1 whose tab was closed stays active. The report
    used to warn that "unknown" had an attempt incomplete and tell the researcher to run
    the same `gridstudy agent run` command again, for a play no run made."""
    from records.rows import step_row
    from tasks.worldtest import Episode

    register_problems()
    path = tmp_path / "previews.db"
    with Store(str(path)) as store:
        play(store, PROBLEMS[EASY], ["go-to-test", "right"], study_id=None, source="input")
        episode_id = store.start_episode(problem=PROBLEMS[EASY])  # its tab closed mid-way
        step = Episode(PROBLEMS[EASY]).apply("right")
        store.write_event(step_row(step, seq=0, episode_id=episode_id, source="input",
                                   problem_id=EASY))
    result = run(path, tmp_path)
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("Warning")]
    assert ("Warning: 1 of 2 plays recorded outside any study and any run did not finish "
            "(1 active); they are not in the scores.") in warnings, warnings
    assert not any("agent run" in line for line in warnings), warnings


def test_a_study_nobody_has_finished_is_named_as_waiting_not_as_missing(tmp_path):
    """A researcher asks for a report on the study they just launched. It was refused with
    "no study demo in the source; it holds: none", as if the study did not exist; an
    unfinished study is now named as such, listed among those held, and not pooled."""
    register_problems()
    path = tmp_path / "fresh.db"
    with Store(str(path)) as store:
        with store.session() as session:
            session.add(Study(id="pilot"))
            session.add(Study(id="launched"))
            session.add(Participant(id=1, study_id="pilot", external_id="P1", status="complete"))
        play(store, PROBLEMS[EASY], ["go-to-test", "right"], study_id="pilot",
             source="input", participant_id=1)
    assert study_counts(path) == {"pilot": 1, "launched": 0}
    waiting = run(path, tmp_path, "--study", "launched")
    assert waiting.exit_code == 1
    assert "study launched holds no episode yet" in waiting.output
    unknown = run(path, tmp_path, "--study", "nope")
    assert "it holds: launched: 0 episodes, pilot: 1 episode" in unknown.output
    assert not (tmp_path / "out").exists()
    alone = run(path, tmp_path)  # the launched study does not make two to choose from
    assert alone.exit_code == 0, alone.output
    assert alone.stdout.endswith("(1 episode)\n")
    assert "Study: pilot." in first_screen(tmp_path)


def test_an_out_folder_it_cannot_make_is_said_before_the_reading(database, tmp_path):
    """`--out` under a file: the report read every attempt (minutes on a large study),
    then failed at its first write with an OSError."""
    (tmp_path / "taken").write_text("")
    result = CliRunner().invoke(report, ["--db", str(database), "--out", str(tmp_path / "taken" / "r")])
    assert result.exit_code == 2
    assert "cannot write" in result.stderr and "taken is a file, not a folder" in result.stderr
    assert "reading the attempts" not in result.stderr
