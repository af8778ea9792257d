"""``gridstudy agent run`` as an evaluation researcher drives it: errors that stop and
show, budgets, request parameters, several models in one batch from a run file, and the
random agent's defaults."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sqlmodel import select

from analysis.load import load
from analysis.tables import random_baseline_rows, score_cost
from bench.standin import Failure, FakeOpenAI, Reply
from records.models import AgentRun, EpisodeRow, Event
from records.store import Store
from study_server.cli import main
from tasks import registry
from tasks.worldtest.problem import Problem

SOLVE = ["<action>go-to-test</action>", "<action>right</action>", "<action>right</action>",
         "<action>down</action>"]


def solver(messages):
    """The reply for this point of the conversation, whatever order attempts ask in."""
    return SOLVE[sum(m["role"] == "user" for m in messages) - 1]


def agent_run(db, *args, env=None):
    asks_a_model = "--agent" not in args or args[args.index("--agent") + 1] == "llm"
    base = ["agent", "run", "--problems", "test/walker-planning", "--db", str(db),
            *(["--retries", "0"] if asks_a_model else []), "--quiet"]
    return CliRunner().invoke(main, [*base, *args], env=env or {})


def rows(db):
    with Store(str(db)) as store, store.session() as session:
        return (session.exec(select(AgentRun).order_by(AgentRun.id)).all(),
                session.exec(select(EpisodeRow).order_by(EpisodeRow.id)).all(),
                session.exec(select(Event).order_by(Event.episode_id, Event.seq)).all())


def test_a_refused_key_stops_the_batch_with_the_providers_message(tmp_path, registered):
    refusal = Failure(401, body='{"error": {"message": "Incorrect API key provided: sk-wr**"}}')
    with FakeOpenAI([refusal] * 10) as fake:
        result = agent_run(tmp_path / "r.db", "--model", "m", "--runs", "5", "--concurrency", "2",
                           env={"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-wrong"})
    assert result.exit_code == 1
    assert "Error: the provider refused the key" in result.stderr
    assert "Incorrect API key provided" in result.stderr
    assert len(fake.requests) <= 2  # the first refusal stops it; at most one other was in flight
    # one line for the attempts it interrupted (however many), one for why the batch stopped
    assert result.stdout.count("Incorrect API key provided") == 2, result.stdout
    _, episodes, _ = rows(tmp_path / "r.db")
    assert len(episodes) <= 2 and {e.status for e in episodes} == {"interrupted"}


def test_a_missing_key_warns_and_every_outcome_is_counted(tmp_path, registered):
    script = [*SOLVE, *["I do not know."] * 5]
    with FakeOpenAI(script) as fake:
        result = agent_run(tmp_path / "r.db", "--model", "m", "--runs", "2",
                           env={"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": ""})
    assert "warning: $OPENAI_API_KEY is not set" in result.stderr
    assert fake.keys[0] is None
    assert result.exit_code == 0, result.stderr  # done and abandoned are both finished
    assert "m (agent run 1): 2 attempts (done 1, abandoned 1); mean score 0.500 over 2 " \
           "finished" in result.stdout
    assert "cost unpriced" in result.stdout


def test_request_parameters_reach_the_provider_and_the_runs_config(tmp_path, registered):
    with FakeOpenAI(SOLVE) as fake:
        result = agent_run(tmp_path / "r.db", "--model", "m", "--temperature", "0",
                           "--param", "reasoning_effort=high", "--param", "seed=7",
                           "--param", "max_completion_tokens=512",
                           env={"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"})
    assert result.exit_code == 0, result.stderr
    body = fake.requests[0]
    assert (body["temperature"], body["reasoning_effort"], body["seed"],
            body["max_completion_tokens"]) == (0.0, "high", 7, 512)
    runs, _, _ = rows(tmp_path / "r.db")
    assert runs[0].config["params"] == {"temperature": 0.0, "reasoning_effort": "high",
                                        "seed": 7, "max_completion_tokens": 512}
    with FakeOpenAI([]) as fake:
        typo = agent_run(tmp_path / "r.db", "--model", "m", "--param", "temprature=0",
                         env={"OPENAI_BASE_URL": fake.base_url})
    assert typo.exit_code == 2 and "unknown request parameter 'temprature'" in typo.stderr


def test_an_attempt_budget_abandons_and_a_batch_budget_interrupts(tmp_path, registered):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"m": {"input": 10000.0, "output": 10000.0}}))
    env_of = lambda fake: {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"}  # noqa: E731
    with FakeOpenAI(["<action>noop</action>"] * 20) as fake:
        per_attempt = agent_run(tmp_path / "a.db", "--model", "m", "--prices", str(prices),
                                "--max-cost-per-attempt", "10", env=env_of(fake))
    _, episodes, events = rows(tmp_path / "a.db")
    assert per_attempt.exit_code == 0, per_attempt.stderr
    assert episodes[0].status == "abandoned" and "attempt's budget ran out" in episodes[0].info["reason"]
    assert episodes[0].score == 0.0 and 1 <= len(events) < 20
    with FakeOpenAI(["<action>noop</action>"] * 20) as fake:
        batch = agent_run(tmp_path / "b.db", "--model", "m", "--prices", str(prices),
                          "--max-cost", "10", "--runs", "3", env=env_of(fake))
    _, episodes, _ = rows(tmp_path / "b.db")
    assert batch.exit_code == 1
    assert "stopped early: the batch's budget ran out" in batch.stdout
    assert [e.status for e in episodes] == ["interrupted"]
    assert episodes[0].info["resumable"] is True


@pytest.mark.parametrize("usage", [{"prompt_tokens": None, "completion_tokens": None},
                                   {"prompt_tokens": -5, "completion_tokens": "many"}],
                         ids=["no-usage", "garbage-usage"])
def test_a_budget_never_counts_what_it_cannot_count_as_nothing(tmp_path, registered, usage):
    """A budget is kept or the batch stops: a dollar budget for a model with no price is
    refused before any request, and a reply without token counts stops a batch with a
    budget after that one request. Without a budget such turns are played, and every
    figure says their spending is unknown, never $0; a rerun on a budget says it counts
    them as nothing."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"m": {"input": 10000.0, "output": 10000.0}}))
    env_of = lambda fake: {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"}  # noqa: E731
    noop = Reply("<action>noop</action>", usage=usage)
    with FakeOpenAI([noop] * 20) as fake:
        unpriced = agent_run(tmp_path / "u.db", "--model", "m", "--max-cost", "1",
                             env=env_of(fake))
    assert unpriced.exit_code == 2 and fake.requests == []
    assert "--max-cost counts dollars, and m has no price" in unpriced.stderr
    for budget, db in ((["--max-cost", "1"], "a.db"), (["--token-budget", "10000"], "b.db"),
                       (["--max-cost-per-attempt", "1"], "c.db"),
                       (["--token-budget-per-attempt", "10000"], "d.db")):
        with FakeOpenAI([noop] * 20) as fake:
            result = agent_run(tmp_path / db, "--model", "m", "--prices", str(prices),
                               "--runs", "2", *budget, env=env_of(fake))
        assert result.exit_code == 1 and len(fake.requests) == 1, (budget, result.stdout)
        assert "gave no token counts" in result.stderr and "so a budget cannot be kept" in \
            result.stderr
        _, episodes, events = rows(tmp_path / db)
        assert [(e.status, e.info["resumable"]) for e in episodes] == [("interrupted", True)]
        assert len(events) == 1 and events[0].prompt_tokens is None
    with FakeOpenAI([noop] * 6 + ["<action>noop</action>"] * 6) as fake:
        free = agent_run(tmp_path / "f.db", "--model", "m", "--prices", str(prices),
                         "--max-turns", "6", env=env_of(fake))
        assert free.exit_code == 0 and len(fake.requests) == 6
        assert "tokens 0 and cost unknown this invocation" in free.stdout
        assert "(6 turns, 6 of them this invocation, whose replies gave no token counts" in \
            free.stdout
        row, = score_cost(load(f"sqlite:///{tmp_path / 'f.db'}"))
        assert (row["cost"], row["cost_per_attempt"], row["uncounted_turns"]) == (
            "unknown", None, 6)
        # the same agent run continued on a budget, its replies counted again: the budget
        # cannot count the earlier turns, and says so
        again = agent_run(tmp_path / "f.db", "--model", "m", "--prices", str(prices),
                          "--max-turns", "6", "--runs", "2", "--token-budget", "100000",
                          env=env_of(fake))
    assert again.exit_code == 0 and len(fake.requests) == 12, again.output
    assert "(agent run 1)" in again.stdout
    assert ("warning: 6 turn(s) of earlier runs of this command gave no token counts: the "
            "budget counts what they spent as nothing") in again.stderr


@pytest.mark.parametrize("left_out", ["completion_tokens", "prompt_tokens"])
def test_a_count_left_out_is_the_total_less_the_other(tmp_path, registered, left_out):
    """An endpoint that sends one count and the total: the other is their difference, so
    the turn is counted and a budget is kept (it does not stop the batch as uncounted)."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"m": {"input": 1.0, "output": 1.0}}))
    with FakeOpenAI([Reply("<action>noop</action>", usage={left_out: None})] * 4) as fake:
        result = agent_run(tmp_path / "r.db", "--model", "m", "--prices", str(prices),
                           "--max-cost", "5", "--max-turns", "4",
                           env={"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"})
    assert result.exit_code == 0 and len(fake.requests) == 4, result.output
    _, _, events = rows(tmp_path / "r.db")
    words = len("<action>noop</action>".split())  # the stand-in counts a reply's words
    assert all(e.prompt_tokens > 0 and e.completion_tokens == words for e in events)
    assert all(e.cost == pytest.approx((e.prompt_tokens + words) / 1e6) for e in events)


def test_a_run_file_evaluates_two_models_at_two_endpoints(tmp_path, registered):
    with FakeOpenAI([solver] * 8) as first, FakeOpenAI(["I would rather not."] * 10) as second:
        run_file = tmp_path / "models.yaml"
        run_file.write_text(f"""
problems: ["test/walker-planning"]
runs: 2
concurrency: 4
models:
  - model: alpha
    base_url: {first.base_url}
    api_key_env: ALPHA_KEY
    prices: {{input: 1.0, output: 2.0}}
    params: {{temperature: 0}}
  - model: beta
    label: beta-local
    base_url: {second.base_url}
    api_key_env: BETA_KEY
""")
        result = CliRunner().invoke(main, [
            "agent", "run", "--run-file", str(run_file), "--db", str(tmp_path / "r.db"),
            "--quiet", "--max-invalid", "3"], env={"ALPHA_KEY": "sk-a", "BETA_KEY": "sk-b"})
    assert result.exit_code == 0, result.stderr
    assert set(first.keys) == {"Bearer sk-a"} and set(second.keys) == {"Bearer sk-b"}
    assert {r["model"] for r in first.requests} == {"alpha"}
    runs, episodes, _ = rows(tmp_path / "r.db")
    assert [(r.model, r.config["base_url"]) for r in runs] == [("alpha", first.base_url),
                                                               ("beta", second.base_url)]
    by_run = {r.id: sorted(e.status for e in episodes if e.agent_run_id == r.id) for r in runs}
    assert by_run == {runs[0].id: ["done", "done"], runs[1].id: ["abandoned", "abandoned"]}
    # the summary and the report name each configuration alike: its label, else the model
    # with the parameters that change its behaviour
    alpha, beta = "llm:alpha [temperature=0]", "beta-local"
    assert f"{alpha} (agent run 1): 2 attempts (done 2)" in result.stdout
    assert f"{beta} (agent run 2): 2 attempts (abandoned 2); mean score 0.000" in result.stdout
    # the report: a model whose every reply is invalid scores 0, and its tokens count
    table = {row["agent"]: row for row in score_cost(load(f"sqlite:///{tmp_path / 'r.db'}"))}
    assert set(table) == {alpha, beta}
    assert (table[beta]["score"], table[beta]["scored"]) == (0.0, 2)
    assert table[beta]["cost"] == "unpriced" and table[beta]["prompt_tokens"] > 0
    assert table[alpha]["score"] == 1.0 and table[alpha]["cost"] > 0


@pytest.mark.parametrize("text, message", [
    ("models: []", "non-empty list 'models:'"),
    ("models: [{model: a, colour: red}]", "models[0]: unknown key 'colour'"),
    ("models: [{model: a}, {model: a}]", "two models are named 'a'"),
    ("models: [{model: a, prices: {input: 1}}]", "prices must be {input: N, output: N}"),
    ("runs: 2\nmodel: [a]", "unknown key 'model'"),
    ("models: [a\n", "not YAML"),
    ("runs: 0\nmodels: [a]", "runs must be a whole number of at least 1, not 0"),
    ("concurrency: four\nmodels: [a]", "concurrency must be a whole number of at least 1, "
     "not 'four'"),
    ("max_cost: -1\nmodels: [a]", "max_cost must be a number of dollars above 0, not -1"),
    ("models: [{model: a, timeout: 0}]", "models[0]: timeout must be a number of seconds "
     "above 0, not 0"),
    ("models: [{model: a, retries: -1}]", "models[0]: retries must be a whole number of at "
     "least 0, not -1"),
    ("models: [{model: a, prices: {input: .nan, output: 1}}]", "prices must be {input: N"),
])
def test_a_bad_run_file_is_a_clear_error(tmp_path, registered, text, message):
    run_file = tmp_path / "bad.yaml"
    run_file.write_text(text)
    result = CliRunner().invoke(main, [
        "agent", "run", "--run-file", str(run_file), "--problems", "test/walker-planning",
        "--db", str(tmp_path / "r.db")])
    assert result.exit_code == 2 and message in result.stderr, result.stderr


@pytest.mark.parametrize("option, value, words", [
    ("--runs", "0", "a whole number of at least 1"),
    ("--concurrency", "0", "a whole number of at least 1"),
    ("--max-turns", "0", "a whole number of at least 1"),
    ("--max-invalid", "0", "a whole number of at least 1"),
    ("--token-budget", "-5", "a whole number of at least 1"),
    ("--token-budget-per-attempt", "0", "a whole number of at least 1"),
    ("--max-cost", "-1", "a number of dollars above 0"),
    ("--max-cost", "nan", "a number of dollars above 0"),
    ("--max-cost-per-attempt", "0", "a number of dollars above 0"),
    ("--timeout", "0", "a number of seconds above 0"),
    ("--timeout", "inf", "a number of seconds above 0"),
    ("--retries", "-1", "a whole number of at least 0"),
    ("--requests-per-minute", "0", "a number of requests above 0"),
    ("--k", "-1", "a whole number of at least 0"),
    ("--context-window", "0", "a whole number of at least 1"),
])
def test_a_number_no_batch_can_use_is_named_before_any_request(tmp_path, registered, option,
                                                               value, words):
    """A number typed wrong stops the command at once, naming the option. Before, `--retries
    -1` ended every attempt with an UnboundLocalError, `--timeout inf` with an
    OverflowError, `--timeout 0` with a failed request each, `--token-budget -5` as "the
    budget ran out", and `--concurrency 0` played on."""
    with FakeOpenAI(["<action>noop</action>"] * 5) as fake:
        result = agent_run(tmp_path / "r.db", "--model", "m", option, value,
                           env={"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"})
    assert result.exit_code == 2 and fake.requests == []
    assert f"Invalid value for {option}: must be {words}, not " in result.stderr, result.stderr
    assert not (tmp_path / "r.db").exists() or rows(tmp_path / "r.db")[1] == []


@pytest.mark.parametrize(("agent", "options", "named"), [
    ("random", ["--model", "gpt-4o"], "--model concerns"),
    ("planner", ["--max-cost", "1", "--token-budget", "9"], "--max-cost, --token-budget concern"),
    ("random", ["--history", "full"], "--history concerns"),  # the default, said aloud
    ("random", ["--timeout", "5", "--retries", "2"], "--timeout, --retries concern"),
    ("planner", ["--observation", "image", "--param", "top_p=0.9"],
     "--observation, --param concern"),
])
def test_model_options_for_an_agent_that_asks_no_model_are_refused(tmp_path, registered, agent,
                                                                    options, named):
    """`--agent random --model gpt-4o` played the random agent, and a budget given to it
    or to the planner counted nothing, each without a word."""
    result = agent_run(tmp_path / "r.db", "--agent", agent, *options)
    assert result.exit_code == 2
    assert f"{named} a language model's requests, and --agent {agent} asks no model" in \
        result.stderr, result.stderr
    assert not (tmp_path / "r.db").exists()


@pytest.mark.parametrize(("agent", "options", "said"), [
    ("planner", ["--seed", "3"], "--seed steers the random agent only, and this is --agent planner"),
    ("llm", ["--model", "m", "--seed", "0", "--interaction-steps", "5"],
     "--seed, --interaction-steps steer the random agent only, and this is --agent llm (a "
     "model's sampling seed is --param seed=N)"),
])
def test_random_agent_options_for_another_agent_are_refused(tmp_path, registered, agent, options,
                                                             said):
    """`--agent llm --seed 3` looked like a model's sampling seed and was the random agent's,
    unused, without a word."""
    result = agent_run(tmp_path / "r.db", "--agent", agent, *options)
    assert result.exit_code == 2 and said in result.stderr, result.stderr
    assert not (tmp_path / "r.db").exists()


def test_the_random_agent_is_never_cut_short_and_fills_the_baseline_table(tmp_path, registered):
    result = CliRunner().invoke(main, [
        "agent", "run", "--problems", "test/walker-planning,test/walker-cd", "--agent", "random",
        "--runs", "4", "--db", str(tmp_path / "r.db"), "--quiet"])
    assert result.exit_code == 0, result.stderr
    _, episodes, _ = rows(tmp_path / "r.db")
    assert len(episodes) == 8 and {e.status for e in episodes} == {"done"}
    assert all(e.info["max_turns"] > 20 for e in episodes)  # the horizon, not 1000 flat
    table = random_baseline_rows(load(f"sqlite:///{tmp_path / 'r.db'}"))
    assert [row["env"] for row in table] == ["test/walker"]
    assert table[0]["trigger samples"] == 4 and table[0]["goal samples"] == 4


def test_the_report_scores_an_all_invalid_model_0_counts_its_cost_and_warns(tmp_path, registered):
    import csv

    db = tmp_path / "r.db"
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"zero": {"input": 1.0, "output": 1.0}}))
    with FakeOpenAI(["Let me think."] * 10) as fake:
        agent_run(db, "--model", "zero", "--runs", "2", "--max-invalid", "5", "--prices",
                  str(prices), env={"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"})
    with FakeOpenAI([Failure(401, body="bad key")]) as fake:
        agent_run(db, "--model", "cut", env={"OPENAI_BASE_URL": fake.base_url,
                                              "OPENAI_API_KEY": "k"})
    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["report", "--db", str(db), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.stderr
    assert "Warning: llm:cut has 1 of 1 attempts incomplete (1 interrupted)" in result.stderr
    page = (out / "report.html").read_text()
    assert page.index("Warning: llm:cut") < page.index("Studies:")  # the first screen
    # episodes, counted, incomplete, excluded: a model's unfinished attempt is not "excluded"
    assert '<td class="text">llm:cut</td><td>1</td><td>0</td><td>1</td><td>0</td>' in page
    assert '<td class="text">llm:zero</td><td>2</td><td>2</td><td>0</td><td>0</td>' in page
    assert "incomplete (interrupted)" not in page.split("<h3>Exclusions</h3>")[1]
    with (out / "score_cost.csv").open() as handle:
        table = {row["agent"]: row for row in csv.DictReader(handle)}
    zero = table["llm:zero"]
    assert (float(zero["score"]), int(zero["scored"]), float(zero["grounding_accuracy"])) == (0.0, 2, 0.0)
    assert float(zero["cost"]) > 0 and int(zero["prompt_tokens"]) > 0
    assert (int(table["llm:cut"]["attempts"]), int(table["llm:cut"]["incomplete"])) == (1, 1)
    with (out / "attempt_outcomes.csv").open() as handle:
        outcomes = {row["agent"]: row for row in csv.DictReader(handle)}
    assert outcomes["llm:zero"]["abandoned: invalid replies"] == "2"
    assert outcomes["llm:cut"]["interrupted"] == "1"


def test_two_configurations_of_one_model_are_two_agents_everywhere(tmp_path, registered):
    """One model twice in a run file, labelled: the summary, the report's tables, the
    DataFrames and the export keep the two apart under their labels."""
    import csv

    from study_server.export import export

    run_file = tmp_path / "models.yaml"
    with FakeOpenAI([solver] * 16) as fake:
        run_file.write_text(f"""
problems: ["test/walker-planning"]
runs: 2
models:
  - model: policy
    label: policy-t0
    base_url: {fake.base_url}
    params: {{temperature: 0}}
  - model: policy
    label: policy-t1-high
    base_url: {fake.base_url}
    params: {{temperature: 1, reasoning_effort: high}}
""")
        result = CliRunner().invoke(main, ["agent", "run", "--run-file", str(run_file),
                                           "--db", str(tmp_path / "r.db"), "--quiet"],
                                    env={"OPENAI_API_KEY": "sk-a"})
    assert result.exit_code == 0, result.stdout + result.stderr
    assert {r.get("temperature") for r in fake.requests} == {0, 1}
    labels = {"policy-t0", "policy-t1-high"}
    assert {line.split(" (agent run")[0] for line in result.stdout.splitlines()
            if "(agent run" in line} == labels
    url = f"sqlite:///{tmp_path / 'r.db'}"
    table = {row["agent"]: row for row in score_cost(load(url))}
    assert set(table) == labels and all(row["attempts"] == 2 for row in table.values())
    data = load(url)  # its tables are DataFrames
    assert set(data.episodes["agent"]) == labels and set(data.turns["agent"]) == labels
    assert data.turns.groupby("agent").size().to_dict() == {"policy-t0": 8, "policy-t1-high": 8}
    export(url, tmp_path / "out")
    with open(tmp_path / "out" / "episodes.csv", newline="") as handle:
        exported = list(csv.DictReader(handle))
    assert sorted(row["agent"] for row in exported) == sorted([*labels, *labels])


def test_the_batch_budget_counts_what_earlier_runs_of_the_command_spent(tmp_path, registered):
    """--max-cost 1 spent by a first run: rerunning stops at once, paying nothing; a
    larger budget continues the same agent run, and the summary names this invocation's
    cost and the run's total apart. Prices are given inline."""
    prices = json.dumps({"m": {"input": 1000.0, "output": 1000.0}})
    env_of = lambda fake: {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"}  # noqa: E731
    db = tmp_path / "r.db"
    args = ("--model", "m", "--prices", prices, "--runs", "2", "--max-turns", "30")
    with FakeOpenAI(["<action>noop</action>"] * 100) as fake:
        first = agent_run(db, *args, "--max-cost", "1", env=env_of(fake))
        assert first.exit_code == 1 and "the batch's budget ran out" in first.stdout
        paid = sum(e.cost for e in rows(db)[2])
        assert paid >= 1.0
        asked = len(fake.requests)
        again = agent_run(db, *args, "--max-cost", "1", env=env_of(fake))
        assert len(fake.requests) == asked  # not one request more
        assert again.exit_code == 1, again.stdout
        assert "all of it by earlier runs of the same command" in again.stdout
        assert "(agent run 1): 2 attempts not started" in again.stdout
        more = agent_run(db, *args, "--max-cost", "2", env=env_of(fake))
    runs, _, events = rows(db)
    assert len(runs) == 1  # one agent run across the three invocations
    total = sum(e.cost for e in events)
    assert 2.0 <= total < 2.0 + max(e.cost for e in events)  # stopped at the budget, in all
    line = next(line for line in more.stdout.splitlines() if "(agent run 1)" in line)
    assert f"cost ${total - paid:.4f} this invocation" in line
    assert f"${total:.4f} in all for agent run 1" in line
    assert more.stdout.count("$") >= 2 and "grounding" in line
    broken = agent_run(db, *args[:2], "--prices", '{"m": {"input": 1}}', env=env_of(fake))
    assert broken.exit_code == 2
    assert "the inline price table: not a price table (KeyError: 'output')" in broken.stderr
    negative = agent_run(db, *args[:2], "--prices", '{"m": {"input": -1, "output": 2}}',
                         env=env_of(fake))
    assert negative.exit_code == 2
    assert ("the inline price table: the prices of 'm' must be numbers of dollars of at least "
            "0, not -1.0 and 2.0") in negative.stderr


def test_a_model_without_a_finished_attempt_has_no_grounding(tmp_path, registered):
    """Its one turn was valid, but an attempt that did not finish has no grounding to show."""
    with FakeOpenAI(["<action>noop</action>", Failure(503)]) as fake:
        result = agent_run(tmp_path / "r.db", "--model", "m",
                           env={"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"})
    line = next(line for line in result.stdout.splitlines() if "(agent run 1)" in line)
    assert "no finished attempt; grounding -;" in line, line


def test_a_rerun_with_other_options_says_so_and_lets_the_researcher_choose(tmp_path, registered):
    """Interrupted attempts of a run at temperature 0; the command again at temperature 1
    refuses, naming the difference and the attempts; --new-run leaves them; --continue-run
    finishes them with the recorded temperature."""
    env_of = lambda fake: {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"}  # noqa: E731
    db = tmp_path / "r.db"
    prices = json.dumps({"m": {"input": 1000.0, "output": 1000.0}})
    cold = ("--model", "m", "--temperature", "0", "--prices", prices, "--max-turns", "6")
    hot = ("--model", "m", "--temperature", "1", "--prices", prices, "--max-turns", "6")
    with FakeOpenAI(["<action>noop</action>"] * 100) as fake:
        first = agent_run(db, *cold, "--max-cost", "0.5", env=env_of(fake))
        assert first.exit_code == 1 and "budget ran out" in first.stdout
        _, stranded, _ = rows(db)
        assert [e.status for e in stranded] == ["interrupted"]
        asked = len(fake.requests)
        refused = agent_run(db, *hot, env=env_of(fake))
        assert refused.exit_code == 2 and len(fake.requests) == asked
        assert "params.temperature: 0.0 -> 1.0" in refused.stderr
        assert f"episode {stranded[0].id} (test/walker-planning, interrupted)" in refused.stderr
        assert "--continue-run" in refused.stderr and "--new-run" in refused.stderr
        new = agent_run(db, *hot, "--new-run", env=env_of(fake))
        assert new.exit_code == 0, new.stderr
        assert f"agent run 1 keeps 1 unfinished attempt(s) (episode {stranded[0].id}" in new.stderr
        assert "params.temperature: 0.0 -> 1.0" in new.stderr
        assert {r["temperature"] for r in fake.requests[asked:]} == {1.0}
        asked = len(fake.requests)
        both = agent_run(db, *hot, "--new-run", "--continue-run", env=env_of(fake))
        assert both.exit_code == 2 and "exclude each other" in both.stderr
        kept = agent_run(db, *hot, "--continue-run", env=env_of(fake))
    assert kept.exit_code == 0, kept.stderr
    assert "continuing agent run 1 with its recorded options" in kept.stderr
    assert {r["temperature"] for r in fake.requests[asked:]} == {0.0}  # the recorded one
    runs, episodes, _ = rows(db)
    assert len(runs) == 2
    assert [(e.agent_run_id, e.status) for e in episodes] == [(1, "abandoned"), (2, "abandoned")]
    assert episodes[0].id == stranded[0].id  # finished, not replaced


def test_problems_the_planner_cannot_play_are_left_out_and_its_failures_not_resumed(
        tmp_path, registered):
    """The planner over `--problems 'lamp_grid/*'`: each mfp and cd problem became an
    attempt ending in an error the summary called resumable ("run the same command
    again"), and so did a planning problem it finds no plan for; a rerun played each into
    the same error. Now the problems it cannot play are named and left out, a batch with
    none left is refused before anything is opened, and a plan it cannot find is an error
    a rerun does not resume."""
    unreachable = Problem("test/walker-unreachable", "test/walker", "planning", 0,
                          params={"goal_cells": [[2, 1]], "goal_colours": ["purple"],
                                  "horizon": 20})
    registry.add_problem(unreachable, replace=True)
    try:
        result = agent_run(tmp_path / "p.db", "--agent", "planner", "--problems", "test/walker-mfp",
                           "--problems", "test/walker-cd", "--problems", unreachable.id)
        assert result.exit_code == 1, result.output  # one attempt ended in an error
        assert ("note: planner cannot play 1 problem(s) (the planner plays planning and "
                "explore problems, not mfp): test/walker-mfp") in result.stderr
        assert "2 attempt(s) to play on 2 problem(s)" in result.stderr
        assert "no model asked" in result.stdout and "tokens" not in result.stdout
        assert "CannotPlay: no plan of at most 30 actions found" in result.stdout
        assert "can be resumed" not in result.stdout
        _, episodes, _ = rows(tmp_path / "p.db")
        assert sorted((e.problem_id, e.status, e.info.get("resumable")) for e in episodes) == [
            ("test/walker-planning", "done", False), (unreachable.id, "error", False)]
        report = CliRunner().invoke(main, ["report", "--db", str(tmp_path / "p.db"), "--out",
                                           str(tmp_path / "report"), "--quiet"])
        assert ("Warning: planner has 1 of 2 attempts incomplete (1 error); they are not in its "
                "scores. A rerun does not resume them") in report.stderr, report.output
        refused = CliRunner().invoke(main, ["agent", "run", "--agent", "planner", "--problems",
                                           "test/walker-cd", "--db", str(tmp_path / "n.db")])
        assert refused.exit_code == 2
        assert "none of --problems is left to play" in refused.output
        assert not (tmp_path / "n.db").exists()
    finally:
        registry.unregister(problem_id=unreachable.id)


@pytest.mark.parametrize("prices, shown, not_shown", [
    (None, "cost unpriced", "$"),
    (json.dumps({"m": {"input": 1000.0, "output": 1000.0}}), " with earlier runs)", "unpriced"),
])
def test_the_progress_of_a_rerun_prices_what_earlier_runs_spent_only_when_priced(
        tmp_path, registered, prices, shown, not_shown):
    """The bar's last line on a second invocation of the same agent run: a model with no
    price is unpriced throughout (it read "cost unpriced ($0.0000 with earlier runs)"),
    and a priced one gives this invocation's cost and the run's total."""
    db = tmp_path / "r.db"
    base = ["agent", "run", "--problems", "test/walker-planning", "--db", str(db),
            "--retries", "0", "--model", "m", "--max-turns", "5",
            *(["--prices", prices] if prices else [])]
    with FakeOpenAI(["<action>noop</action>"] * 20) as fake:
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"}
        assert CliRunner().invoke(main, [*base, "--runs", "1"], env=env).exit_code == 0
        again = CliRunner().invoke(main, [*base, "--runs", "2"], env=env)
    assert again.exit_code == 0, again.output
    [last] = [line for line in again.stderr.replace("\r", "\n").splitlines()
              if "tokens" in line][-1:]
    assert shown in last and not_shown not in last.split("cost", 1)[1], last
