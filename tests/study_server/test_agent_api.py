"""The agent API: runs, episodes and turns over HTTP, recorded like any other play."""

from __future__ import annotations

import pytest

from bench.standin import FakeOpenAI
from game_client.agents import ScriptedAgent
from game_client.api_client import AgentAPIClient, AgentAPIError, run_remote_episode
from game_client.bridge.agent import LLMAgent
from game_client.bridge.provider import ChatProvider
from game_client.runner import run_episode
from records.store import RunIndexTaken
from tasks.worldtest.episode import Episode

PLAN = ["go-to-test", "click 4 4", "right", "right", "down", "down"]


@pytest.fixture
def api(live_server):
    return AgentAPIClient(live_server.url, live_server.token())


def test_a_scripted_run_over_http_is_stored_like_an_in_process_one(api, live_server, test_problems):
    run_id = api.create_run("scripted", None, {"note": "test"})
    result = run_remote_episode(ScriptedAgent(PLAN), "test/rt-walker-planning", api, run_id)
    assert (result.status, result.score, result.turns, result.invalid) == ("done", 1.0, 6, 0)
    events = live_server.events(result.episode_id)
    assert [(e.tick, e.action, e.source, e.agent_run_id) for e in events] == \
        [(i, a, "agent", run_id) for i, a in enumerate(PLAN)]
    row = live_server.episode(result.episode_id)
    assert (row.status, row.score, row.agent_run_id, row.info["turns"]) == ("done", 1.0, run_id, 6)
    local = run_episode(ScriptedAgent(PLAN), test_problems["planning"], store=live_server.store)
    local_events = live_server.events(local.episode_id)
    columns = ("phase", "tick", "action", "frame_hash", "next_phase", "score", "applied", "parse_valid")
    assert [tuple(getattr(e, c) for c in columns) for e in events] == \
        [tuple(getattr(e, c) for c in columns) for e in local_events]


def test_invalid_turns_are_logged_and_end_the_attempt(api, live_server, test_problems):
    run_id = api.create_run("llm", "fake", {})
    started = api.start_episode(run_id, "test/rt-walker-mfp", max_invalid=2)
    episode_id = started["episode_id"]
    assert started["state"]["phase"] == "interaction"
    assert started["state"]["actions"] == ["noop", "up", "down", "left", "right",
                                           "click [0-4] [0-4]", "reset", "go-to-test"]
    first = api.act(episode_id, {"action": "step", "raw_reply": "<action>step</action>"})
    assert first["applied"] is False and first["error"].startswith("step is not available now")
    ok = api.act(episode_id, {"action": "right", "raw_reply": "<action>right</action>",
                              "prompt_tokens": 10, "completion_tokens": 2, "cost": 0.5})
    assert ok["applied"] is True and ok["state"]["tick"] == 1
    api.act(episode_id, {"action": None, "error": "no tag", "raw_reply": "hm"})
    last = api.act(episode_id, {"action": "jump", "raw_reply": "<action>jump</action>"})
    assert last["state"]["ended"] is True and last["state"]["actions"] == []
    with pytest.raises(AgentAPIError, match="answered 409: episode .* is over"):
        api.act(episode_id, {"action": "right"})
    events = live_server.events(episode_id)
    assert [(e.action, e.tick, e.applied, e.parse_valid, e.raw_reply) for e in events] == [
        (None, None, False, False, "<action>step</action>"),
        ("right", 0, True, True, "<action>right</action>"),
        (None, None, False, False, "hm"),
        (None, None, False, False, "<action>jump</action>")]
    assert (events[1].prompt_tokens, events[1].cost) == (10, 0.5) and events[2].error == "no tag"
    row = live_server.episode(episode_id)
    assert (row.status, row.score, row.info["reason"]) == ("abandoned", 0.0, "2 invalid replies in a row")


def test_a_lost_episode_is_rebuilt_by_replay(api, live_server, test_problems):
    run_id = api.create_run("scripted", None, {})
    episode_id = api.start_episode(run_id, "test/rt-walker-cd", max_invalid=3)["episode_id"]
    for action in ["go-to-test", "right", "bogus", "right"]:
        api.act(episode_id, {"action": action})
    live_server.app.extensions["gridstudy.agent_episodes"].clear()  # as after a restart
    state = api.http.get(f"/episodes/{episode_id}").json()
    expected = Episode.replay(test_problems["cd"], ["go-to-test", "right", "right"])
    assert (state["state"]["attempt"]["turns"], state["state"]["attempt"]["invalid"]) == (4, 1)
    assert state["state"]["frame"] == expected.observation.frame
    answer = api.act(episode_id, {"action": "right"})
    assert answer["state"]["tick"] == 4 and [e.seq for e in live_server.events(episode_id)] == [0, 1, 2, 3, 4]


def test_requests_are_checked(api, live_server, test_problems):
    with pytest.raises(AgentAPIError, match="answered 404: no agent run 99"):
        api.start_episode(99, "test/rt-walker-cd", 3)
    run_id = api.create_run("llm", "m", {})
    with pytest.raises(AgentAPIError, match="answered 404: unknown problem 'nope'"):
        api.start_episode(run_id, "nope", 3)
    with pytest.raises(AgentAPIError, match="max_invalid must be an integer of at least 1"):
        api.start_episode(run_id, "test/rt-walker-cd", 0)
    response = api.http.post("/runs", content=b"not json")
    assert (response.status_code, response.json()["error"]) == (
        400, "send a JSON object (Content-Type: application/json)")


def test_a_model_plays_through_the_api(api, live_server, test_problems):
    replies = [f"<action>{a}</action>" for a in ["go-to-test", "right", "right", "right",
                                                  "click 0 4", "found-change", "choose_frame_3", "submit"]]
    with FakeOpenAI(replies) as fake:
        agent = LLMAgent(ChatProvider("fake", base_url=fake.base_url))
        run_id = api.create_run("llm", "fake", agent.config())
        result = run_remote_episode(agent, "test/rt-walker-cd", api, run_id)
    assert (result.status, result.score, result.turns) == ("done", 1.0, 8)
    events = live_server.events(result.episode_id)
    assert all(e.raw_reply.startswith("<action>") and e.prompt_tokens > 0 for e in events)


def test_agent_run_command_plays_through_a_running_server(live_server, test_problems):
    from click.testing import CliRunner

    from study_server.cli import main

    result = CliRunner().invoke(main, [
        "agent", "run", "--problems", "test/rt-walker-mfp", "--agent", "random",
        "--runs", "2", "--concurrency", "2", "--server", live_server.url,
    ], env={"GRIDSTUDY_TOKEN": live_server.token()})
    assert result.exit_code == 0, result.output
    assert "random (agent run 1): 2 attempts (done 2)" in result.output
    run_id = int(result.output.split("(agent run ")[1].split(")")[0])
    from sqlmodel import select

    from records.models import EpisodeRow

    with live_server.store.session() as session:
        episodes = session.exec(select(EpisodeRow).where(EpisodeRow.agent_run_id == run_id)).all()
    assert [e.status for e in episodes] == ["done", "done"]
    assert all(e.score in (0.0, 1.0) for e in episodes)
    for episode in episodes:
        assert {e.source for e in live_server.events(episode.id)} == {"agent"}


def test_the_agent_api_needs_a_valid_token_and_keeps_runs_apart(live_server, test_problems):
    from study_server import tokens

    bare = AgentAPIClient(live_server.url, "gs_made-up")
    with pytest.raises(AgentAPIError, match="answered 401: send Authorization: Bearer <token>"):
        bare.create_run("llm", "m", {})
    mine = AgentAPIClient(live_server.url, live_server.token("mine"))
    theirs = AgentAPIClient(live_server.url, live_server.token("theirs"))
    run_id = mine.create_run("scripted", None, {})
    episode_id = mine.start_episode(run_id, "test/rt-walker-mfp")["episode_id"]
    with pytest.raises(AgentAPIError, match=f"answered 404: no agent run {run_id}"):
        theirs.start_episode(run_id, "test/rt-walker-mfp")
    with pytest.raises(AgentAPIError, match=f"answered 404: no agent episode {episode_id}"):
        theirs.act(episode_id, {"action": "up"})
    assert mine.act(episode_id, {"action": "up"})["applied"] is True
    tokens.revoke(live_server.store.engine, "mine-1")
    with pytest.raises(AgentAPIError, match="answered 401"):
        mine.act(episode_id, {"action": "up"})
    assert [e.action for e in live_server.events(episode_id)] == ["up"]


def test_a_study_token_writes_into_its_study_only_and_takes_no_participant_slot(live_server, test_problems):
    from records.models import Study
    from study_server import assignment
    from tests.consent.helpers import make_definition

    definition = make_definition(id="pilot", problems=["test/rt-walker-mfp", "test/rt-walker-cd"],
                                 problems_per_participant=1)
    with live_server.store.session() as session:
        session.add(Study(id="pilot", title="t", definition=definition.to_dict()))
    scoped = AgentAPIClient(live_server.url, live_server.token("pilot-model", "pilot"))
    unscoped = AgentAPIClient(live_server.url, live_server.token("outside"))
    refused = unscoped.http.post("/runs", json={"study_id": "pilot"})
    assert (refused.status_code, refused.json()["error"]) == (
        403, "token 'outside-2' is for runs outside any study only")
    run_id = scoped.create_run("llm", "m", {})
    for _ in range(30):
        scoped.start_episode(run_id, "test/rt-walker-mfp")
    with live_server.store.session() as session:
        counts = assignment.fill_counts(session, "pilot", list(definition.problems))
    assert counts == {"test/rt-walker-mfp": 0, "test/rt-walker-cd": 0}


def test_a_budget_through_a_server_counts_what_earlier_runs_spent(live_server, test_problems):
    """--max-cost with --server: the server says what the agent run spent; a rerun after
    the budget ran out asks the model nothing more."""
    import json

    from click.testing import CliRunner

    from bench.standin import FakeOpenAI
    from study_server.cli import main

    prices = json.dumps({"m": {"input": 1000.0, "output": 1000.0}})
    args = ["agent", "run", "--problems", "test/rt-walker-mfp", "--model", "m", "--prices",
            prices, "--max-cost", "0.5", "--retries", "0", "--quiet", "--server",
            live_server.url]
    with FakeOpenAI(["<action>noop</action>"] * 50) as fake:
        env = {"GRIDSTUDY_TOKEN": live_server.token(), "OPENAI_BASE_URL": fake.base_url,
               "OPENAI_API_KEY": "k"}
        first = CliRunner().invoke(main, args, env=env)
        assert first.exit_code == 1 and "the batch's budget ran out" in first.output
        asked = len(fake.requests)
        again = CliRunner().invoke(main, args, env=env)
    assert len(fake.requests) == asked
    assert again.exit_code == 1 and "all of it by earlier runs" in again.output
    run_id = int(first.output.split("(agent run ")[1].split(")")[0])
    with live_server.store.session() as session:
        from sqlmodel import select

        from records.models import Event

        paid = sum(e.cost for e in session.exec(select(Event).where(Event.agent_run_id == run_id)))
    assert paid >= 0.5
    assert f"{paid:.4f} in all for agent run {run_id}" in first.output


def test_a_rerun_through_a_server_with_other_options_says_so(live_server, test_problems):
    """The rerun of the issue through a server: a budget interrupts an attempt at
    temperature 0; the command at temperature 1 refuses and names it; --continue-run
    finishes it with temperature 0 on the server."""
    import json

    from click.testing import CliRunner

    from bench.standin import FakeOpenAI
    from study_server.cli import main

    prices = json.dumps({"m": {"input": 1000.0, "output": 1000.0}})

    def args(temperature, *extra):
        return ["agent", "run", "--problems", "test/rt-walker-mfp", "--model", "m", "--prices",
                prices, "--temperature", temperature, "--max-turns", "6", "--retries", "0",
                "--quiet", "--server", live_server.url, *extra]

    with FakeOpenAI(["<action>noop</action>"] * 50) as fake:
        env = {"GRIDSTUDY_TOKEN": live_server.token(), "OPENAI_BASE_URL": fake.base_url,
               "OPENAI_API_KEY": "k"}
        first = CliRunner().invoke(main, args("0", "--max-cost", "0.3"), env=env)
        assert first.exit_code == 1 and "budget ran out" in first.output
        refused = CliRunner().invoke(main, args("1"), env=env)
        assert refused.exit_code == 2, refused.output
        assert "params.temperature: 0.0 -> 1.0" in refused.output
        asked = len(fake.requests)
        kept = CliRunner().invoke(main, args("1", "--continue-run"), env=env)
    assert kept.exit_code == 0, kept.output
    assert "continuing agent run 1 with its recorded options" in kept.output
    assert {r["temperature"] for r in fake.requests[asked:]} == {0.0}


def test_a_request_sent_again_does_what_it_did_once(api, live_server, test_problems):
    """A client whose answer did not come (the server restarted, the connection dropped)
    sends the request again: a start, a turn, an end or a resume does what it did once,
    and a turn beyond what the server holds is refused with the number it holds."""
    run_id = api.create_run("scripted", None, {})
    me = {"host": "lab-1", "pid": 41, "started": 7}
    start = {"problem_id": "test/rt-walker-mfp", "run_index": 0}
    first = api._request("POST", f"/runs/{run_id}/episodes", {**start, "owner": {**me, "since": 1}})
    again = api._request("POST", f"/runs/{run_id}/episodes", {**start, "owner": {**me, "since": 2}})
    episode_id = first["episode_id"]
    assert again == first
    with pytest.raises(RunIndexTaken):  # another client's start of the same run
        api.start_episode(run_id, "test/rt-walker-mfp", run_index=0)

    right = {"action": "right", "raw_reply": "<action>right</action>", "turn": 0}
    answers = [api.act(episode_id, right) for _ in range(2)]
    assert answers[0] == answers[1] and answers[0]["state"]["tick"] == 1
    jump = {"action": "jump", "raw_reply": "<action>jump</action>", "turn": 1}
    invalid = api.act(episode_id, jump)
    assert invalid["applied"] is False and api.act(episode_id, jump) == invalid
    live_server.app.extensions["gridstudy.agent_episodes"].clear()  # as after a restart
    assert api.act(episode_id, jump) == invalid  # answered from the record
    for turn in (0, 5):  # an older turn than the last, or one beyond: refused
        with pytest.raises(AgentAPIError, match=f"holds 2 turns, so the next is turn 2, not {turn}") \
                as refused:
            api.act(episode_id, {**right, "turn": turn})
        assert refused.value.status == 409 and refused.value.answer["turns"] == 2
    assert [(e.action, e.applied) for e in live_server.events(episode_id)] == \
        [("right", True), (None, False)]

    ended = [api.end(episode_id, "stopped", "interrupted") for _ in range(2)]
    assert ended[0] == ended[1] and ended[0]["state"]["attempt"]["status"] == "interrupted"
    resume = {"owner": {**me, "since": 3}}
    resumed = api._request("POST", f"/episodes/{episode_id}/resume", resume)
    assert api._request("POST", f"/episodes/{episode_id}/resume", resume) == resumed
    assert [t["raw_reply"] for t in resumed["turns"]] == [right["raw_reply"], jump["raw_reply"]]
    with pytest.raises(AgentAPIError, match="409: episode .* is still being played"):
        api.resume(episode_id)  # another client
    assert api.act(episode_id, {**right, "turn": 2})["state"]["tick"] == 2
    assert live_server.episode(episode_id).info["resumed"] == 1
    assert [e.seq for e in live_server.events(episode_id)] == [0, 1, 2]
