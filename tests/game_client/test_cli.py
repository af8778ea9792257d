"""``gridstudy agent run`` (resumable) and ``gridstudy baseline random``."""

from __future__ import annotations

from click.testing import CliRunner
from sqlmodel import select

from bench.standin import FakeOpenAI
from records.models import AgentRun, EpisodeRow
from records.store import Store
from study_server.cli import main


def test_an_llm_run_is_recorded_and_a_rerun_resumes(tmp_path, monkeypatch, registered):
    db = str(tmp_path / "runs.db")
    replies = ["<action>go-to-test</action>", "<action>right</action>", "<action>right</action>",
               "<action>down</action>"]
    args = ["agent", "run", "--problems", "test/walker-plan*", "--model", "fake", "--runs", "2",
            "--db", db, "--retries", "0"]
    with FakeOpenAI(replies * 2) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        first = CliRunner().invoke(main, args)
        second = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    assert "fake (agent run 1): 2 attempts (done 2); mean score 1.000 over 2 finished; " \
        "grounding 1.000" in first.output
    assert "nothing left to play" in second.output and len(fake.requests) == 8
    with Store(db) as store, store.session() as session:
        runs = session.exec(select(AgentRun)).all()
        episodes = session.exec(select(EpisodeRow)).all()
    assert [(r.agent_kind, r.model, r.config["history"]) for r in runs] == [("llm", "fake", "full")]
    assert [(e.problem_id, e.status, e.score) for e in episodes] == [("test/walker-planning", "done", 1.0)] * 2


def test_unknown_problems_are_refused(tmp_path):
    result = CliRunner().invoke(main, ["agent", "run", "--problems", "nope*", "--agent", "random",
                                       "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2 and "no registered problem matches nope*" in result.output
    # a misspelt id names the one meant, in agent run as in play
    for command in (["agent", "run", "--agent", "random", "--db", str(tmp_path / "x.db"),
                     "--problems", "lamp_grid/plannning"], ["play", "lamp_grid/plannning"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code != 0, result.output
        assert "plannning' is neither" in result.output or "matches lamp_grid/plannning" \
            in result.output
        assert "(did you mean 'lamp_grid/planning'?)" in result.output


def test_the_random_baseline_per_problem_prints_a_table_and_writes_csv(tmp_path, registered):
    out = tmp_path / "baseline.csv"
    result = CliRunner().invoke(main, ["baseline", "random", "--samples", "5", "--steps", "100",
                                       "--problems", "test/walker-*", "--csv", str(out),
                                       "--per-problem"])
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert lines[0] == "env_id,problem_id,challenge,samples,steps,probability,mean_steps"
    assert [line.split(",")[2] for line in lines[1:]] == ["cd", "mfp", "planning"]
    rows = {line.split()[0]: line.split()[1:] for line in result.output.splitlines()
            if line.startswith("test/")}
    assert rows["test/walker-mfp"] == ["mfp", "0.167", "-", "0"]
    assert rows["test/walker-cd"][:2] == ["cd", "1.000"]


def test_a_count_no_command_can_use_is_refused_before_any_work(tmp_path, registered):
    """A zero or negative count is named before anything runs. Before, `baseline random
    --steps 0` played its 50 samples and then failed; `play --fps -5` played at one frame
    a second and `--fps 1000` at 60 without a word."""
    runner = CliRunner()
    for command in (["baseline", "random", "--problems", "test/walker-planning", "--csv",
                     str(tmp_path / "b.csv"), "--steps", "0"],
                    ["baseline", "random", "--problems", "test/walker-planning", "--csv",
                     str(tmp_path / "b.csv"), "--samples", "-3"],
                    ["play", "test/walker-planning", "--fps", "0"],
                    ["play", "test/walker-planning", "--fps", "1000"],
                    ["play", "test/walker-planning", "--scale", "0"],
                    ["problems", "check", "--samples", "0", "test/walker-planning"],
                    ["problems", "derive", "--samples", "0"]):
        result = runner.invoke(main, command)
        assert result.exit_code == 2, (command, result.output)
        assert "is not in the range" in result.stderr, (command, result.stderr)
    assert not (tmp_path / "b.csv").exists()
    nowhere = runner.invoke(main, ["baseline", "random", "--problems", "test/walker-planning",
                                   "--csv", str(tmp_path / "missing" / "b.csv")])
    assert nowhere.exit_code == 2  # said before the samples, not after minutes of them
    assert "cannot write" in nowhere.stderr and "no folder" in nowhere.stderr
