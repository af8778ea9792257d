"""From a study to a published comparison, every part real.

Three participants walk a Prolific-style study over HTTP on the real server and play its
games over Socket.IO; two configurations of one model (full history, and the current
observation only) play the same problems through the text bridge and the server's agent
API, against the local stand-in for a chat-completions provider; ``gridstudy report``
then reads the server's SQLite file. The numbers the report must give are worked out by
hand below, and the page is opened in Chromium.

The games run on a Walker at 3 frames per second. A participant's inputs are sent in
bursts of at most four (the server's input queue), each acknowledged in milliseconds, so
a burst is applied on consecutive ticks with no automatic no-op inside it: the number of
test steps a participant takes is exact, whatever the machine's load.
"""

from __future__ import annotations

import csv
import json
import re

import httpx
import numpy as np
import pytest
from click.testing import CliRunner
from matplotlib.image import imread
from sqlmodel import select

from analysis.cli import report
from bench.standin import FakeOpenAI
from records.models import Participant, Study
from study_server.cli import main
from tasks import registry
from tasks.worldtest.problem import Problem
from tests.conftest import Player
from tests.consent.helpers import make_definition
from tests.envs import Walker, register_test_envs


class SlowWalker(Walker):
    frame_rate = 3


P0, P1, TUTORIAL = "test/rp-p0", "test/rp-p1", "test/rp-tutorial"
GOALS = {P0: 1, P1: 2, TUTORIAL: 1}
"""Each problem wants the gold walker on cell (x, 0), from (0, 0)."""

HUMANS = {
    # solves p0 at test step 1 and p1 at step 2
    "P1": {P0: [["go-to-test", "right"]], P1: [["go-to-test", "right", "right"]]},
    # clicks and resets, then gives up on both
    "P2": {P0: [["click 1 1", "reset"], ["go-to-test", "down", "quit"]],
           P1: [["click 1 1", "reset"], ["go-to-test", "down", "quit"]]},
    # solves p0 the long way, at step 3; gives up on p1
    "P3": {P0: [["go-to-test", "down", "right", "up"]], P1: [["go-to-test", "down", "quit"]]},
}
TUTORIAL_PLAY = [["go-to-test", "right"]]
GARBAGE = "Let me think about the grid first."


def walker_problem(problem_id: str) -> Problem:
    return Problem(id=problem_id, env_id="test/slow-walker", challenge="planning", seed=0,
                   params={"goal_cells": [[GOALS[problem_id], 0]], "goal_colours": ["gold"],
                           "horizon": 40})


@pytest.fixture
def problems():
    register_test_envs()
    registry.register_env("test/slow-walker", SlowWalker, replace=True, tags=("test",))
    for problem_id in GOALS:
        registry.add_problem(walker_problem(problem_id), replace=True)
    yield
    for problem_id in GOALS:
        registry.unregister(problem_id=problem_id)


# -- the participants -------------------------------------------------------------------


def take_part(live, pid: str) -> None:
    """One participant from the study link to the completion page."""
    flow = live.app.extensions["gridstudy.flow"]
    with httpx.Client(base_url=live.url, timeout=10) as client:
        entry = client.get(f"/study/pilot?PROLIFIC_PID={pid}&STUDY_ID=s1&SESSION_ID=x-{pid}")
        assert entry.status_code == 302, entry.text
        with live.store.session() as db:
            participant = db.exec(select(Participant.id).where(Participant.external_id == pid)).one()
        for _ in range(20):
            shown = client.get("/study/pilot/flow")
            if "<strong data-code>" in shown.text:  # the completion page, with its code
                assert "<strong data-code>DONE1234</strong>" in shown.text
                return
            page = flow.page("pilot", participant)
            if page.stage.name in ("task", "tutorial"):
                problem = page.context["problem"].id
                play(live, page.context["token"], TUTORIAL_PLAY if problem == TUTORIAL
                     else HUMANS[pid][problem], cookie_of(client))
                shown = client.get("/study/pilot/flow")
            token = re.search(r'name="csrf_token" value="([^"]+)"', shown.text).group(1)
            answers = page.stage.simulate(page.state, "pass")
            sent = client.post("/study/pilot/flow", data={**answers, "csrf_token": token})
            assert sent.status_code == 302, sent.text
    raise AssertionError(f"{pid} never reached the end of the study")


def cookie_of(client: httpx.Client) -> str:
    """The participant's cookies (their game is theirs only)."""
    return "; ".join(f"{k}={v}" for k, v in client.cookies.items())


def play(live, token: str, bursts: list[list[str]], cookie: str) -> None:
    """Join the game's session over Socket.IO (as the participant whose flow ``cookie``
    it carries) and send each burst of inputs; wait for it to be applied before the
    next, and for the episode's end after the last."""
    player = Player(live.url, token, cookie=cookie).connect()
    try:
        joined = player.join()
        assert joined.get("ok", True), joined
        for burst in bursts:
            player.wait_for(lambda s: True)  # the first state has arrived
            until = player.states[-1]["tick"] + len(burst)
            for action in burst:
                assert player.send(action)["ok"], action
            player.wait_for(lambda s, n=until: s["tick"] >= n or s["phase"] == "done")
        player.wait_for(lambda s: s["phase"] == "done")
    finally:
        player.close()


# -- the models -------------------------------------------------------------------------


def goal_x(prompt: str) -> int | None:
    """The goal cell's column in a test-phase prompt (None in the interaction phase)."""
    found = re.search(r'\{"goal": (\[\[.*?\]\])', prompt)
    if found is None:
        return None
    return json.loads(found.group(1))[0].index("gold")


def full_history_policy(messages) -> str:
    """Go to the test at once, then walk right to the goal."""
    return "<action>right</action>" if goal_x(messages[-1]["content"]) else "<action>go-to-test</action>"


def no_history_policy(messages) -> str:
    """Ramble before going to the test; walk right to a goal one step away, else quit."""
    prompt = messages[-1]["content"]
    goal = goal_x(prompt)
    if goal is None:
        return "<action>go-to-test</action>" if "not applied" in prompt else GARBAGE
    return "<action>right</action>" if goal == 1 else "<action>quit</action>"


def run_model(live, monkeypatch, policy, history: str) -> None:
    with FakeOpenAI([policy] * 20) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("GRIDSTUDY_TOKEN", live.token())
        result = CliRunner().invoke(main, [
            "agent", "run", "--problems", f"{P0},{P1}", "--model", "m", "--history", history,
            "--server", live.url, "--retries", "0"])
    assert result.exit_code == 0, result.output
    assert "2 attempts (done 2)" in result.output, result.output


# -- the test -----------------------------------------------------------------------------


def read(path):
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_study_and_models_to_report(make_live_server, problems, monkeypatch, page, tmp_path):
    live = make_live_server()
    definition = make_definition(problems=[P0, P1], problems_per_participant=2,
                                 tutorials={"planning": TUTORIAL})
    with live.store.session() as db:
        db.add(Study(id="pilot", title=definition.title, definition=definition.to_dict()))
    for pid in HUMANS:
        take_part(live, pid)
    run_model(live, monkeypatch, full_history_policy, "full")
    run_model(live, monkeypatch, no_history_policy, "none")
    live.store.flush(timeout=10)
    assert live.raw_inputs() == []  # every input sent was applied: none dropped or refused

    out = tmp_path / "report"
    result = CliRunner().invoke(report, ["--db", str(live.db_path), "--out", str(out),
                                         "--t-max", "3", "--quiet"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"wrote {out / 'report.html'} (9 episodes)\n"  # the study alone
    result = CliRunner().invoke(report, ["--db", str(live.db_path), "--out", str(out),
                                         "--t-max", "3", "--quiet", "--runs-outside-studies"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"wrote {out / 'report.html'} (13 episodes)\n"

    # p0: humans 1, 0, 1 -> p80 of [0, 1, 1] = 1; p1: 1, 0, 0 -> p80 = 0 + 0.6 * 1
    scores = {(r["problem"], r["agent"]): float(r["score"]) for r in read(out / "problem_scores.csv")}
    assert scores == {(P0, "human"): 1.0, (P1, "human"): pytest.approx(0.6),
                      (P0, "llm:m"): 1.0, (P1, "llm:m"): 1.0,
                      (P0, "llm:m [history none]"): 1.0, (P1, "llm:m [history none]"): 0.0}

    # humans solve at test steps 1, 2 and 3 of six episodes: P = 0, 1/6, 2/6, 3/6,
    # AUV = (1/6 + 3/6 + 5/6) / 6 = 1/4. Full history solves at 1 and 2: P = 0, .5, 1, 1,
    # AUV = (.5 + 1.5 + 2) / 6 = 2/3; no history only p0, at 1: AUV = (.5 + 1 + 1) / 6.
    auv = {r["agent"]: float(r["auv"]) for r in read(out / "auv.csv")}
    assert auv == {"human": pytest.approx(0.25), "llm:m": pytest.approx(2 / 3),
                   "llm:m [history none]": pytest.approx(5 / 12)}
    memory = [(r["agent"], r["history"], int(r["episodes"]), float(r["auv"]),
               float(r["memory_index"])) for r in read(out / "memory_index.csv")]
    assert memory == [("llm:m", "full", 2, pytest.approx(2 / 3), pytest.approx(1 / 4)),
                      ("llm:m", "none", 2, pytest.approx(5 / 12), pytest.approx(1 / 4))]

    # every turn of the full-history run was an action; the other rambled once per problem
    grounding = {r["agent"]: float(r["grounding_accuracy"]) for r in read(out / "score_cost.csv")}
    assert grounding == {"llm:m": 1.0, "llm:m [history none]": pytest.approx(4 / 6)}

    # P2 clicked once and reset once in each of its two episodes (of six)
    unique = {r["agent"]: float(r["unique_clicks"]) for r in read(out / "unique_actions.csv")}
    assert unique["human"] == pytest.approx(2 / 6)
    resets = {r["agent"]: float(r["resets"]) for r in read(out / "reset_rates.csv")}
    assert resets["human"] == pytest.approx(2 / 6)

    # one goal cell: the progress rate is 1 where solved, 0 elsewhere
    progress = {r["agent"]: (int(r["episodes"]), float(r["progress_rate"]))
                for r in read(out / "progress.csv")}
    assert progress["human"] == (6, 0.5)

    html = (out / "report.html").read_text()
    assert "<p>Studies: (none), pilot.</p>" in html  # the model runs belong to no study
    assert '<tr><td class="text">human</td><td>9</td><td>6</td><td>0</td><td>3</td></tr>' in html
    assert '<td class="text">tutorial</td><td>3</td>' in html

    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((out / "report.html").resolve().as_uri())
    figures = page.locator("img")
    assert figures.count() >= 6
    for index in range(figures.count()):
        shot = out / f"figure-{index}.png"
        figures.nth(index).screenshot(path=str(shot))
        pixels = imread(shot)
        assert pixels.shape[0] > 100 and pixels.shape[1] > 200
        assert np.std(pixels[..., :3]) > 0.05  # drawn on, not a blank box
    page.screenshot(path=str(out / "report.png"), full_page=True)
    assert errors == []
