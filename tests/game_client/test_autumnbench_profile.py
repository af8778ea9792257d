"""The autumnbench profile behaving as the published harness does, one behaviour per test,
each driven through ``gridstudy agent run`` against the stand-in and checked on the
requests it received (and on the record), beside gridstudy's own profile."""

from __future__ import annotations

from click.testing import CliRunner

from bench.standin import FakeOpenAI
from study_server.cli import main
from tasks import registry
from tasks.worldtest.problem import Problem
from tests.game_client.test_agent_run import rows
from tests.tasks.test_protocol import imported  # noqa: F401  (the dabs fixture)

CD = "autumnbench/dabs/cd"


def play(db, problem, script, *args):
    with FakeOpenAI(script) as fake:
        result = CliRunner().invoke(main, [
            "agent", "run", "--problems", problem, "--db", str(db), "--retries", "0",
            "--quiet", "--model", "m", *args],
            env={"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"})
    assert result.exit_code == 0, result.stdout + result.stderr
    return fake.requests


def asked(request):
    """The user message of a request's turn."""
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


def test_the_interaction_offers_quit_in_the_harness_s_order_and_quit_goes_to_the_test(
        imported, tmp_path):  # noqa: F811
    script = ["<action>quit</action>", "<action>noop</action>"]
    requests = play(tmp_path / "a.db", CD, script, "--protocol", "autumnbench",
                    "--max-turns", "2")
    width, height = registry.make("autumnbench/dabs").size
    expected = ",\n".join(["left", "right", "up", "down",
                           f"click [0-{width - 1}] [0-{height - 1}]", "noop", "quit",
                           "go-to-test", "reset"])
    assert f"The following actions are available at this step: {expected}\n" in asked(requests[0])
    assert "The interaction phase is over, you have entered the test phase" in asked(requests[1])
    _, episodes, events = rows(tmp_path / "a.db")
    assert [e.action for e in events if e.source == "agent"][:1] == ["go-to-test"]
    # gridstudy's own profile offers no quit in the interaction phase
    plain = play(tmp_path / "b.db", CD, ["<action>noop</action>"], "--max-turns", "1")
    assert "quit" not in asked(plain[0]).split("available at this step:")[1].split("\n\n")[0]


def test_replies_are_read_as_the_harness_reads_them(imported, tmp_path):  # noqa: F811
    script = ["<action>```left```</action>", "<ACTION>left</ACTION>", "<action>Left</action>",
              "<action>left\nthen up</action>"]
    play(tmp_path / "a.db", CD, script, "--protocol", "autumnbench", "--max-turns", "4")
    _, _, events = rows(tmp_path / "a.db")
    turns = [(e.action, e.applied, e.parse_valid) for e in events if e.source == "agent"]
    assert turns == [
        (None, False, False),     # a fenced action is no action as written: nothing moves
        ("noop", True, False),    # no lower-case tag: the harness plays noop
        (None, False, False),     # Left is not left
        ("left", True, True),     # an environment action's first line
    ]
    play(tmp_path / "b.db", CD, script, "--max-turns", "4")
    _, _, plain = rows(tmp_path / "b.db")
    # gridstudy's reading forgives the tag's case and the action's
    assert [e.action for e in plain if e.source == "agent"][1:3] == ["left", "left"]


def test_the_test_ends_after_the_harness_s_501_steps(tmp_path, registered):
    long = Problem("test/walker-planning-long", "test/walker", "planning", 0,
                   params={"goal_cells": [[2, 1]], "goal_colours": ["gold"], "horizon": 900})
    registry.add_problem(long, replace=True)
    try:
        script = ["<action>go-to-test</action>"] + ["<action>noop</action>"] * 600
        requests = play(tmp_path / "a.db", long.id, script, "--protocol", "autumnbench",
                        "--history", "none", "--max-turns", "2000")
    finally:
        registry.unregister(problem_id=long.id)
    _, [episode], _ = rows(tmp_path / "a.db")
    assert len(requests) == 1 + 501
    assert (episode.status, episode.info["turns"]) == ("abandoned", 502)
    assert episode.info["reason"] == "no end after 501 turns of the test (the autumnbench " \
                                     "profile's cap)"


def test_the_welcome_does_not_describe_the_test_s_task(imported, tmp_path):  # noqa: F811
    published = play(tmp_path / "a.db", CD, ["<action>noop</action>"], "--protocol",
                     "autumnbench", "--max-turns", "1")
    plain = play(tmp_path / "b.db", CD, ["<action>noop</action>"], "--max-turns", "1")
    assert asked(published[0]).startswith("Welcome, you are now in the interactive phase")
    assert "# Task Description" not in asked(published[0])
    assert "# Task Description" in asked(plain[0])
    # the same welcome, without the task's paragraph
    welcome = asked(plain[0]).split("\n\n# Task Description")[0]
    assert asked(published[0]).startswith(f"{welcome}\n\nHere is the initial state of the grid:")


def test_change_detection_is_scored_by_the_paper_and_as_the_harness_computes_it(
        imported, tmp_path):  # noqa: F811
    from analysis.load import load
    from analysis.tables import published_scores
    from tasks.worldtest.scoring import cd_score
    from tests.tasks.test_protocol import CD_POLICY

    play(tmp_path / "a.db", CD, CD_POLICY, "--protocol", "autumnbench")
    _, [episode], events = rows(tmp_path / "a.db")
    info = episode.info
    chosen, t_star = info["test_chosen"], info["test_t_star"]
    # the harness's clock: every test turn before the submit (steps, the found-change
    # answer, the frame chosen), not the frame the model chose
    test_turns = [e for e in events if e.source == "agent" and e.phase != "interaction"]
    answered = len(test_turns) - 1
    assert answered != chosen
    assert info["protocol_score"] == cd_score(chosen, t_star) == 1.0
    assert info["protocol_score_as_run"] == cd_score(answered, t_star) < 1.0
    [row] = published_scores(load(str(tmp_path / "a.db")))
    assert (row["harness score"], row["harness score as its code computes it"]) == \
        (info["protocol_score"], info["protocol_score_as_run"])


def test_the_planning_goal_is_one_object_with_the_frame_each_turn(imported, tmp_path):  # noqa: F811
    import json

    problem = registry.get_problem("autumnbench/dabs/planning")
    script = ["<action>go-to-test</action>", "<action>noop</action>", "<action>noop</action>"]
    published = play(tmp_path / "a.db", problem.id, script, "--protocol", "autumnbench",
                     "--max-turns", "3")
    for request in published[1:]:  # every test turn
        lines = [line for line in asked(request).splitlines() if line.startswith("{")]
        shown = [json.loads(line) for line in lines]
        assert [sorted(s) for s in shown] == [["goal", "highlight_mask", "render"]]
        assert shown[0]["goal"] == problem.params["goal_grid"]
    plain = play(tmp_path / "b.db", problem.id, script, "--max-turns", "3")
    lines = [json.loads(line) for line in asked(plain[1]).splitlines() if line.startswith("{")]
    assert [sorted(s) for s in lines] == [["goal", "highlight_mask"]]  # beside the frame


def test_masked_frame_prediction_shows_the_choices_only_at_the_last_frame(imported, tmp_path):  # noqa: F811
    import json

    problem = registry.get_problem("autumnbench/dabs/mfp")
    length = len(problem.params["actions"])
    script = ["<action>go-to-test</action>"] + ["<action>step</action>"] * length + \
        ["<action>choose_option_0</action>"]
    published = play(tmp_path / "a.db", problem.id, script, "--protocol", "autumnbench")
    frames = [json.loads(line) for request in published[1:] for line in
              asked(request).splitlines() if line.startswith('{"video_location"')]
    assert len(frames) == length + 1  # the first test frame, then one per step
    assert all(set(f) == {"video_location", "render", "action_took", "is_finished"}
               for f in frames[:-1])  # no choices before the last frame
    assert frames[-1]["is_finished"] and len(frames[-1]["choices"]) == len(problem.params["options"])
    assert not any("The options are:" in asked(r) or "masked region spans" in asked(r)
                   for r in published)
    assert '"action_took": action taken at this timestep' in asked(published[1])
    plain = play(tmp_path / "b.db", problem.id, [s.replace("choose_option_0", "submit")
                                                 for s in script[:2]], "--max-turns", "2")
    assert "The options are:" in asked(plain[1])  # from the first test frame on
    assert '"action_taken": action taken at this timestep' in asked(plain[1])
