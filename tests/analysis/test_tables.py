"""analysis.tables: every table against numbers worked out by hand on a stored study.

The study is tests/analysis/report_study.py; each expected value below says how it
comes about from the actions played there.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from analysis import curiosity, tables
from analysis.load import load
from records.store import Store
from tests.analysis.report_study import fill


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('study') / 'gridstudy.db'}"
    with Store(url) as store:
        fill(store)
    return load(url)


def pick(rows, **where):
    """The one row matching ``where``."""
    found = [r for r in rows if all(r[k] == v for k, v in where.items())]
    assert len(found) == 1, found
    return found[0]


def test_problem_scores_give_humans_the_80th_percentile_with_interval(dataset):
    rows = tables.problem_scores(dataset)
    # easy: humans 1, 0, 0 (the excluded participant's success is left out);
    # p80 of [0, 0, 1] sits at 1.6 -> 0 + 0.6 * 1
    easy = pick(rows, problem="test/report-easy", agent="human")
    assert (easy["n"], easy["mean"], easy["score"]) == (3, pytest.approx(1 / 3),
                                                       pytest.approx(0.6))
    # three attempts are fewer than a bootstrap interval needs: no interval, said so
    assert (easy["ci_low"], easy["ci_high"], easy["interval"]) == (None, None,
                                                                   "n too small (< 5)")
    hard = pick(rows, problem="test/report-hard", agent="human")
    assert (hard["n"], hard["mean"], hard["score"]) == (2, 0.5, pytest.approx(0.8))
    llm = pick(rows, problem="test/report-easy", agent="llm:m-1")
    assert (llm["n"], llm["score"], llm["ci_low"]) == (1, 1.0, None)


def test_task_type_and_environment_scores_average_problems(dataset):
    by_type = {(r["challenge"], r["agent"]): (r["problems"], r["attempts"], r["score"])
               for r in tables.task_type_scores(dataset)}
    assert by_type == {
        ("planning", "human"): (2, 5, pytest.approx(0.7)),  # (0.6 + 0.8) / 2
        ("planning", "llm:m-1"): (2, 2, 0.5),
        ("planning", "llm:m-2"): (2, 2, 1.0),
        ("planning", "llm:m-2 [history none]"): (2, 2, 0.5),  # a separate agent, not merged
        ("planning", "random"): (2, 2, 0.5),
        ("cd", "random"): (1, 2, 0.5),  # choose_frame_4 at t* = 4 scores 1; the other 0
        ("explore", "scripted"): (1, 1, 0.0),
    }
    walker = pick(tables.environment_scores(dataset), env="test/walker", agent="human")
    assert walker["score"] == pytest.approx(0.7)


def test_action_types_average_unique_action_shares(dataset):
    rows = {r["agent"]: r for r in tables.action_types(dataset)}
    # human episodes with interaction actions: {up, click 1 1}, {click 2 2, reset}, {left}
    assert rows["human"] == {"agent": "human", "episodes": 3, "click": pytest.approx(1 / 3),
                             "directional": 0.5, "reset": pytest.approx(1 / 6), "noop": 0.0}
    # random: {click 0 0, noop} and {noop}
    assert rows["random"] == {"agent": "random", "episodes": 2, "click": 0.25,
                              "directional": 0.0, "reset": 0.0, "noop": 0.75}
    assert "llm:m-1" not in rows  # it went to the test at once: no value, not zeros


def test_unique_actions_and_reset_rates(dataset):
    human = pick(tables.unique_actions(dataset), env="test/walker", agent="human")
    assert (human["episodes"], human["unique_clicks"], human["unique_directional"]) == (
        5, 0.4, 0.4)  # clicks 1+1+0+0+0, arrows 1+0+1+0+0 over five episodes
    resets = pick(tables.reset_rates(dataset), env="test/walker", agent="human")
    # one reset in five episodes; rates 0, 100/3 and 0 (the others have no action)
    assert (resets["resets"], resets["per_100_actions"]) == (0.2, pytest.approx(100 / 9))


def test_perplexity_per_environment(dataset):
    rows = tables.perplexity(dataset)
    # [up, click 1 1] has two symbols in one window: value 1; [click 2 2 x2] and [left]: 0
    human = pick(rows, agent="human")
    assert (human["episodes"], human["auc"], human["final"]) == (
        3, pytest.approx(1 / 3), pytest.approx(1 / 3))
    assert [r["agent"] for r in rows] == ["human", "random"]
    curves = tables.perplexity_curves(dataset)
    assert sorted(list(c) for c in curves["human"]) == [[(0.0, 0.0)], [(0.0, 0.0)], [(0.0, 1.0)]]


def test_score_cost_counts_every_model_turn(dataset):
    llm = pick(tables.score_cost(dataset), agent="llm:m-1")
    # six turns at 0.01 except the refused one at 0.02; 5 of 6 turns grounded
    assert llm == {"agent": "llm:m-1", "attempts": 2, "scored": 2, "incomplete": 0,
                   "score": 0.5, "cost": pytest.approx(0.07),
                   "cost_per_attempt": pytest.approx(0.035),
                   "prompt_tokens": 600, "completion_tokens": 30, "uncounted_turns": 0,
                   "grounding_accuracy": pytest.approx(5 / 6)}
    assert "human" not in {r["agent"] for r in tables.score_cost(dataset)}


def test_random_baseline_from_random_runs(dataset):
    # one row for the environment (Table E.3); cd: one attempt triggered the change at
    # test step 4, the other never did; planning, the two problems pooled: easy solved at
    # its first test step, hard quit
    assert tables.random_baseline_rows(dataset) == [
        {"env": "test/walker", "P(trigger change)": 0.5, "trigger mean steps": 4.0,
         "trigger samples": 2, "P(reach goal)": 0.5, "goal mean steps": 1.0,
         "goal samples": 2}]


def test_progress_by_difficulty(dataset):
    rows = {(r["agent"], r["difficulty"]): (r["episodes"], r["progress_rate"], r["success"])
            for r in tables.progress_rows(dataset) if r["challenge"] == "planning"}
    # a step off the start cell earns 1/2 (it turns black), reaching the goal 1
    assert rows == {
        ("human", "easy"): (3, 0.5, pytest.approx(1 / 3)),  # 1, 1/2 (down), 0 (quit)
        ("human", "hard"): (2, 0.75, 0.5),  # 1, 1/2 (one step right)
        ("llm:m-1", "easy"): (1, 1.0, 1.0),
        ("llm:m-1", "hard"): (1, 0.5, 0.0),
        ("llm:m-2", "easy"): (1, 1.0, 1.0),
        ("llm:m-2", "hard"): (1, 1.0, 1.0),
        ("llm:m-2 [history none]", "easy"): (1, 0.5, 0.0),  # down: the start cell turns black
        ("llm:m-2 [history none]", "hard"): (1, 1.0, 1.0),
        ("random", "easy"): (1, 1.0, 1.0),
        ("random", "hard"): (1, 0.0, 0.0),  # up into the wall
    }
    assert tables.progress_curves(dataset)["llm:m-1"] == [[0.0, 1.0], [0.0, 0.5, 0.5]]


def test_progress_of_a_task_dag_episode_counts_achieved_nodes(dataset):
    # high-n4, seed 0: nothing achieved at the start; down enters and achieves one of the
    # map's four nodes; up goes back (the rate never falls)
    assert tables.progress_curves(dataset)["scripted"] == [[0.0, 0.25, 0.25]]
    assert pick(tables.progress_rows(dataset), agent="scripted") == {
        "agent": "scripted", "challenge": "explore", "difficulty": "high", "episodes": 1,
        "progress_rate": 0.25, "success": 0.0}


def test_auv_over_scored_steps(dataset):
    rows = tables.auv_rows(dataset, t_max=3)
    human = pick(rows, challenge="planning", agent="human")
    # solved at test steps 1 and 3 of five episodes: P = 0, .2, .2, .4
    assert (human["success"], human["auv"]) == (0.4, pytest.approx(0.2))
    llm = pick(rows, challenge="planning", agent="llm:m-1")
    # the refused reply is not a step: solved at 1 of two episodes: P = 0, .5, .5, .5
    assert llm["auv"] == pytest.approx(5 / 12)
    assert human["loop_ratio"] == human["loop_ratio_printed_alg1"] == 0.0


def test_at_k_and_its_refusal(dataset):
    human = pick(curiosity.at_k_rows(dataset, k=1), agent="human")
    assert human["pass@1"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    # only easy has an injected solution (cell 1 1 turning blue): participant 1 clicked
    # it (and so saw it) in one of three counted attempts
    assert (human["discovery@1"], human["interaction@1"]) == (pytest.approx(1 / 3),
                                                              pytest.approx(1 / 3))
    assert pick(curiosity.at_k_rows(dataset, k=1), agent="llm:m-1")["discovery@1"] == 0.0
    scripted = pick(curiosity.at_k_rows(dataset, k=1), agent="scripted")
    assert (scripted["discovery@1"], scripted["interaction@1"]) == (None, None)
    with pytest.raises(ValueError, match=r"llm:m-1 has 1 attempt\(s\) at test/report-easy; "
                                         r"@2 needs n >= 2"):
        curiosity.at_k_rows(dataset, k=2)


def test_explore_exploit_on_task_dag_episode(dataset):
    # down enters a new cell (progress, no error); up returns to the start (no gain):
    # two exploration-case steps, one error; no step needed exploitation
    assert tables.explore_exploit_rows(dataset) == [
        {"agent": "scripted", "episodes": 1, "exploration_error": 0.5,
         "exploitation_error": None, "success": 0.0}]


def test_memory_index_pairs_runs_by_history_setting(dataset):
    # full history solves at test steps 1 and 3: P = 0, .5, .5, 1 -> AUV (.5+1+1.5)/6 = .5;
    # none solves only hard at 3: P = 0, 0, 0, .5 -> AUV .5/6 = 1/12; MI = 5/12.
    # m-1 and the random and scripted runs have no history option: not in the table.
    rows = tables.memory_rows(dataset, t_max=3)
    assert [(r["agent"], r["challenge"], r["history"], r["episodes"]) for r in rows] == [
        ("llm:m-2", "planning", "full", 2), ("llm:m-2", "planning", "none", 2)]
    assert [r["auv"] for r in rows] == [0.5, pytest.approx(1 / 12)]
    assert [r["memory_index"] for r in rows] == [pytest.approx(5 / 12)] * 2


def test_a_dag_episode_that_does_not_replay_is_refused(dataset):
    episode = next(e for e in dataset.included() if e.challenge == "explore")
    first = episode.events[0]
    tampered = dataclasses.replace(episode, events=[dataclasses.replace(first, frame_hash="0" * 16),
                                                    *episode.events[1:]])
    with pytest.raises(ValueError, match=r"does not replay to its stored frames at seq 0"):
        tables.dag_errors(tampered)


def test_the_same_model_at_both_clocks_and_with_pictures_is_kept_apart(dataset):
    import dataclasses

    from analysis.readings import agent_of

    model = next(e for e in dataset.records if e.agent_kind == "llm" and e.model == "m-1")
    at = {name: agent_of(dataclasses.replace(model, agent_config=config)) for name, config in {
        "default": {}, "turns": {"clock": "turns", "observation": "text"},
        "realtime": {"clock": "realtime"}, "image": {"observation": "image"},
        "both": {"clock": "realtime", "observation": "both", "history": "none"},
        "published": {"protocol": "autumnbench"},
        "hot": {"params": {"temperature": 1, "reasoning_effort": "high"}},
        "many": {"params": {"temperature": 1, "top_p": 0.9, "seed": 7, "max_tokens": 4096}},
        "labelled": {"label": "m-1-hot", "params": {"temperature": 1}},
    }.items()}
    assert at == {"default": "llm:m-1", "turns": "llm:m-1", "realtime": "llm:m-1 [realtime clock]",
                  "image": "llm:m-1 [image]",
                  "both": "llm:m-1 [history none, realtime clock, text+image]",
                  "published": "llm:m-1 [autumnbench protocol]",
                  "hot": "llm:m-1 [reasoning_effort=high, temperature=1]",
                  "many": at["many"], "labelled": "m-1-hot"}
    # too many parameters to spell out: a short digest of them, still one name per setting
    assert re.fullmatch(r"llm:m-1 \[params [0-9a-f]{6}\]", at["many"])


def test_the_headline_sets_people_first_with_intervals_over_problems(dataset):
    assert {r["interval"] for r in tables.headline(dataset)} == {"n too small (< 5)"}
    rows = tables.headline(dataset, min_n=1)  # the bootstrap itself, even from one attempt
    planning = [r for r in rows if r["challenge"] == "planning"]
    assert planning[0]["agent"] == "human"
    by_type = {(r["challenge"], r["agent"]): r["score"] for r in tables.task_type_scores(dataset)}
    for row in rows:
        assert row["score"] == pytest.approx(by_type[(row["challenge"], row["agent"])])
        assert row["ci_low"] <= row["score"] <= row["ci_high"]
        assert row["attempts"] >= row["problems"] >= 1


def test_the_task_interval_resamples_attempts_within_problems():
    from analysis.metrics import TooFew, task_interval

    assert task_interval([[1.0] * 5, [0.0] * 5]) == (0.5, 0.5)  # nothing varies
    with pytest.raises(TooFew, match="n too small: 1 attempt"):  # 2 problems x 1 attempt
        task_interval([[1.0], [0.0]], q=None)
    low, high = task_interval([[0.0, 1.0] * 10, [1.0] * 20], q=None)
    assert 0.6 < low < 0.75 < high < 0.9  # only the first problem varies, around 0.5
    with pytest.raises(ValueError, match="no problems"):
        task_interval([])
