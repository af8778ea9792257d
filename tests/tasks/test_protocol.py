"""The autumnbench protocol profile: each of the published harness's settings, on the
imported AutumnBench fixture (``dabs``), against gridstudy's default profile."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sqlmodel import select

from game_client.bridge.prompts import observed
from records.models import EpisodeRow, Event
from records.recorder import EpisodeRecorder
from records.store import Store
from study_server.cli import main
from tasks import registry
from tasks.worldtest.episode import Episode
from tasks.worldtest.planning import goal_frame, goal_text
from tasks.worldtest.protocol import AUTUMNBENCH, GRIDSTUDY, get
from tasks.worldtest.turn import AgentTurns
from tests.tasks.test_importer import FIXTURE, unregister_imported


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    CliRunner().invoke(main, ["problems", "import", str(FIXTURE), "--library",
                              str(tmp_path_factory.mktemp("library"))])
    yield
    unregister_imported()


@pytest.fixture
def store(tmp_path):
    with Store(str(tmp_path / "p.db")) as store:
        yield store


def attempt(challenge, protocol, store=None, **options):
    problem = registry.get_problem(f"autumnbench/dabs/{challenge}")
    recorder = EpisodeRecorder(store, problem) if store else None
    return AgentTurns(Episode(problem), recorder, protocol=protocol, **options)


def rows(store, turns):
    store.flush()
    with store.session() as db:
        return db.exec(select(Event).order_by(Event.seq)).all()


def frame_rate():
    return registry.make("autumnbench/dabs").frame_rate


# 1 ----------------------------------------------------------------------------------------

def test_1_a_reply_without_an_action_is_played_as_noop_and_never_ends_the_attempt(imported, store):
    turns = attempt("planning", AUTUMNBENCH, store)
    for _ in range(12):  # more than gridstudy's five in a row
        turns.take(None, error="no <action> tag", raw_reply="hmm")
    assert turns.status == "active" and turns.invalid == 12
    events = rows(store, turns)
    agent = [e for e in events if e.source == "agent"]
    assert [(e.action, e.applied, e.parse_valid) for e in agent] == [("noop", True, False)] * 12
    assert len(turns.episode.history) == 12 * frame_rate()  # the world moved on
    plain = attempt("planning", GRIDSTUDY)
    for _ in range(5):
        plain.take(None, error="no <action> tag")
    assert plain.status == "abandoned" and plain.episode.history == []


def test_1_in_masked_frame_prediction_a_reply_without_an_action_moves_nothing(imported):
    turns = attempt("mfp", AUTUMNBENCH)
    turns.take("go-to-test")
    before = len(turns.episode.history)
    turns.take(None, error="no <action> tag")
    assert len(turns.episode.history) == before and turns.invalid == 1


# 2 ----------------------------------------------------------------------------------------

def test_2_each_interaction_action_advances_a_frame_rate_of_steps_all_shown(imported, store):
    turns = attempt("planning", AUTUMNBENCH, store)
    turns.take("click 1 1")
    rate = frame_rate()
    state = turns.state()
    assert [f["action"] for f in state["stacked"]] == ["click 1 1", *["noop"] * (rate - 1)]
    assert [f["tick"] for f in state["stacked"]] == list(range(rate))
    text = observed(state)
    assert text.count("Frame time: ") == rate and text.startswith("Frame time: 0\nAction took: click 1 1")
    assert "\n\nObservation: Frame time: 1\nAction took: noop\nObservation: " in text
    assert [e.source for e in rows(store, turns)] == ["agent", *["auto"] * (rate - 1)]
    turns.take("go-to-test")  # the test is not stacked
    assert "stacked" not in turns.state()
    plain = attempt("planning", GRIDSTUDY)
    plain.take("click 1 1")
    assert len(plain.episode.history) == 1 and "stacked" not in plain.state()


# 3 ----------------------------------------------------------------------------------------

def test_3_the_interaction_phase_ends_after_300_actions(imported):
    turns = attempt("cd", AUTUMNBENCH, max_turns=5000)
    for i in range(299):
        turns.take("nonsense" if i % 2 else "noop")  # invalid ones count too
    assert turns.episode.phase == "interaction"
    turns.take("reset")
    assert turns.episode.phase == "test" and turns.interaction_turns == 300
    plain = attempt("cd", GRIDSTUDY, max_turns=5000, max_invalid=10**6)
    for _ in range(310):
        plain.take("noop")
    assert plain.episode.phase == "interaction"


# 4 and 5 ----------------------------------------------------------------------------------

def test_4_change_detection_speaks_the_harness_s_names(imported):
    turns = attempt("cd", AUTUMNBENCH)
    turns.take("go-to-test")
    offered = turns.state()["actions"]
    assert "reset" in offered and "I found the change!" not in offered  # not before 2 steps
    turns.take("reset")
    assert turns.invalid == 1 and turns.state()["tick"] == 1  # offered, does nothing
    for action in ("click 1 1", "click 2 1"):
        turns.take(action)
    assert "I found the change!" in turns.state()["actions"]
    turns.take("I found the change!")
    offered = turns.state()["actions"]
    frames = turns.episode.test.choice_count("choose_frame")
    assert offered == [*(f"choose_frame_{i}" for i in range(frames)), "Submit choice", "quit"]
    turns.take("Submit choice")  # offered, but nothing is chosen yet
    assert turns.invalid == 2 and turns.status == "active"
    turns.take("choose_frame_2")
    turns.take("Submit choice")
    assert turns.status == "done"
    assert "found-change" in attempt_offers_plain()


def attempt_offers_plain():
    turns = attempt("cd", GRIDSTUDY)
    turns.take("go-to-test")
    return turns.state()["actions"]


def test_5_masked_frame_prediction_offers_step_until_the_last_frame(imported):
    turns = attempt("mfp", AUTUMNBENCH)
    turns.take("go-to-test")
    seen = []
    while turns.state()["actions"] == ["step"]:
        seen.append(turns.state()["test"]["position"])
        turns.take("step")
    assert seen == list(range(turns.state()["test"]["length"]))
    assert turns.state()["actions"] == ["rewind", *(f"choose_option_{i}" for i in range(6))]
    assert turns.take("choose_option_1").applied is True
    assert turns.status == "done"  # choosing ends the test
    plain = attempt("mfp", GRIDSTUDY)
    plain.take("go-to-test")
    assert "choose_option_[0-5]" in plain.state()["actions"]


# 6 ----------------------------------------------------------------------------------------

def test_6_the_planning_goal_is_a_full_grid_beside_its_mask(imported):
    turns = attempt("planning", AUTUMNBENCH)
    turns.take("go-to-test")
    shown = json.loads(goal_frame(turns.state()))
    assert goal_text(turns.state()) == ""  # one object, as the harness sends it
    assert shown["render"] == json.loads(turns.state()["text"])
    assert shown["goal"] == registry.get_problem("autumnbench/dabs/planning").params["goal_grid"]
    assert "ignore" not in json.dumps(shown["goal"])
    assert shown["highlight_mask"][0][0] == 1 and shown["highlight_mask"][0][1] == 0
    plain = attempt("planning", GRIDSTUDY)
    plain.take("go-to-test")
    assert "ignore" in goal_text(plain.state())


# 7 ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("protocol, expected", [(AUTUMNBENCH, -1.0), (GRIDSTUDY, 0.0)])
def test_7_an_early_change_answer_and_a_wrong_option_score_minus_one(protocol, expected,
                                                                      imported, store):
    cd = attempt("cd", protocol, store)
    for action in ("go-to-test", "click 1 1", "click 2 1", "found-change", "choose_frame_0",
                   "submit"):
        cd.take(protocol.names.get(action, action))
    mfp = attempt("mfp", protocol, store)
    mfp.take("go-to-test")
    while mfp.episode.test.position < mfp.episode.test.length:
        mfp.take("step")
    mfp.take("choose_option_0")  # the answer is 2
    if not mfp.ended:
        mfp.take(protocol.names.get("submit", "submit"))
    store.flush()
    with store.session() as db:
        ended = db.exec(select(EpisodeRow).order_by(EpisodeRow.id)).all()
    assert [e.score for e in ended] == [0.0, 0.0]  # the stored score stays gridstudy's
    assert [e.info.get("protocol_score", 0.0) for e in ended] == [expected, expected]


def test_get_names_the_profiles():
    assert get("autumnbench") is AUTUMNBENCH
    with pytest.raises(ValueError, match="unknown protocol 'mara'"):
        get("mara")


# through the text bridge ------------------------------------------------------------------

CD_POLICY = ["<action>click 4 4</action>", "<action>go-to-test</action>", "<action>click 1 1</action>",
             "<action>click 2 1</action>", "<action>click 2 2</action>",
             "<action>I found the change!</action>", "<action>choose_frame_3</action>",
             "<action>Submit choice</action>"]
CD_POLICY_PLAIN = [r.replace("I found the change!", "found-change").replace(
    "Submit choice", "submit") for r in CD_POLICY]


def run_cd(db, script, *args):
    from bench.standin import FakeOpenAI

    with FakeOpenAI(script) as fake:
        result = CliRunner().invoke(main, [
            "agent", "run", "--problems", "autumnbench/dabs/cd", "--db", str(db), "--retries",
            "0", "--quiet", "--model", "m", *args],
            env={"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"})
    return result, fake


def test_a_model_plays_by_the_harness_s_names_through_the_bridge(imported, tmp_path):
    result, fake = run_cd(tmp_path / "a.db", CD_POLICY, "--protocol", "autumnbench")
    assert result.exit_code == 0, result.stderr
    with Store(str(tmp_path / "a.db")) as store, store.session() as db:
        [row] = db.exec(select(EpisodeRow)).all()
        events = db.exec(select(Event).order_by(Event.seq)).all()
    assert row.status == "done" and row.info["protocol"] == "autumnbench"
    assert [e.action for e in events if e.source == "agent"] == [
        "click 4 4", "go-to-test", "click 1 1", "click 2 1", "click 2 2", "found-change", "choose_frame_3",
        "submit"]
    last_prompt = [m for m in fake.requests[-1]["messages"] if m["role"] == "user"][-1]["content"]
    assert "Submit choice" in last_prompt and "choose_frame_0,\nchoose_frame_1" in last_prompt
    found_prompt = [m for m in fake.requests[5]["messages"] if m["role"] == "user"][-1]["content"]
    assert "I found the change!" in found_prompt and "reset" in found_prompt
    first_reply = [m for m in fake.requests[1]["messages"] if m["role"] == "user"][-1]["content"]
    assert first_reply.count("Frame time: ") == frame_rate()  # the click's frames, stacked


def test_the_same_policy_under_both_profiles_is_recorded_apart(imported, tmp_path):
    """The side-by-side of the issue note: one scripted policy, both profiles."""
    plain, _ = run_cd(tmp_path / "b.db", CD_POLICY_PLAIN)
    published, _ = run_cd(tmp_path / "b.db", CD_POLICY, "--protocol", "autumnbench")
    assert plain.exit_code == published.exit_code == 0
    with Store(str(tmp_path / "b.db")) as store, store.session() as db:
        rows_ = db.exec(select(EpisodeRow).order_by(EpisodeRow.id)).all()
        events = db.exec(select(Event)).all()
    steps = {r.id: sum(1 for e in events if e.episode_id == r.id and e.applied) for r in rows_}
    first, second = rows_
    assert first.agent_run_id != second.agent_run_id  # two runs: the config differs
    assert (first.score, second.score) == (1.0, 1.0)
    assert steps[second.id] > steps[first.id]  # stacked frames moved the world further
    print(f"\nside by side: gridstudy {steps[first.id]} steps, score {first.score}; "
          f"autumnbench {steps[second.id]} steps, score {second.score}, "
          f"protocol_score {second.info['protocol_score']}")


def test_the_report_sets_the_harness_s_scores_beside_gridstudy_s(imported, tmp_path):
    from analysis.load import load
    from analysis.report import write_report

    early = ["<action>go-to-test</action>", "<action>click 1 1</action>",
             "<action>click 2 1</action>", "<action>I found the change!</action>",
             "<action>choose_frame_0</action>", "<action>Submit choice</action>"]
    result, _ = run_cd(tmp_path / "r.db", early, "--protocol", "autumnbench")
    assert result.exit_code == 0, result.stderr
    dataset = load(str(tmp_path / "r.db"))
    from analysis.tables import published_scores

    assert published_scores(dataset) == [{
        "agent": "llm:m [autumnbench protocol]", "challenge": "cd", "attempts": 1,
        "gridstudy score": 0.0, "harness score": -1.0,
        "harness score as its code computes it": -1.0}]
    page = write_report(dataset, tmp_path / "report").read_text()
    assert "Scores as the published harness gives them" in page
    assert (tmp_path / "report" / "published_scores.csv").exists()
