"""What ``gridstudy agent run`` evaluates: the agent configurations of a batch, from the
command's options or a run file, and the summary it prints.

A run file (YAML) names the models of one batch, each with its endpoint, the name of the
environment variable holding its key, its prices and its request parameters; anything
not given falls back to the command's options::

    problems: ["autumn/*/planning"]
    runs: 3
    concurrency: 8
    max_cost: 25            # dollars for the batch's runs, over every invocation
    models:
      - model: gpt-4o-mini
        base_url: https://api.openai.com/v1
        api_key_env: OPENAI_API_KEY
        prices: {input: 0.15, output: 0.6}      # dollars per million tokens
        params: {temperature: 0, seed: 1}
        context_window: 128000                 # tokens; learned from a refusal if absent
        requests_per_minute: 500
      - model: qwen2.5-7b-instruct
        label: qwen-local
        base_url: http://127.0.0.1:8000/v1
        history: last
        k: 10

Each model is its own agent run; its attempts share the batch's concurrency, and the
requests to one endpoint share one rate limiter.

:meth:`BatchConfig.build` merges the command's options and the run file once (an option
given wins over the run file, which wins over the defaults) and validates the result;
the command only wires it to the store, the batch and the summary.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from game_client.agents import PlannerAgent, RandomAgent
from game_client.batch import Outcome, RunSpec
from game_client.bridge.images import OBSERVATIONS
from game_client.runner import Budget, EpisodeResult, Spending
from records.schema import agent_name, is_number
from tasks.words import count
from tasks.worldtest.turn import MAX_INVALID, MAX_TURNS

MODEL_KEYS = {
    "model": "the model's name at its endpoint (required)",
    "label": "how reports, the export and the summary name it (default: llm:MODEL with "
             "the settings that differ from the defaults, e.g. llm:m [temperature=0])",
    "base_url": "the endpoint (default $OPENAI_BASE_URL, else OpenAI's)",
    "api_key_env": "the environment variable holding its key (default OPENAI_API_KEY)",
    "prices": "{input, output}: dollars per million prompt and completion tokens",
    "params": "request parameters (temperature, seed, top_p, max_completion_tokens, ...)",
    "context_window": "its context window in tokens",
    "requests_per_minute": "most requests a minute to its endpoint",
    "history": "full, last or none", "k": "turns kept with history last",
    "prompt_variant": "task-DAG prompt variant", "summary": "task-DAG memory summary",
    "observation": "text, image or both: each frame as the text grid, a PNG picture, or both",
    "timeout": "seconds per request", "retries": "retries on 429, 5xx and timeouts",
}
BATCH_KEYS = ("problems", "runs", "concurrency", "max_cost", "token_budget",
              "max_cost_per_attempt", "token_budget_per_attempt", "max_turns", "max_invalid",
              "clock", "protocol", "models")


class RunFileError(ValueError):
    """A run file that cannot be used (the message says where and why)."""


def _whole(least: int) -> tuple[str, Callable[[Any], bool]]:
    return (f"a whole number of at least {least}",
            lambda value: is_number(value) and type(value) is int and value >= least)


def _above_zero(unit: str) -> tuple[str, Callable[[Any], bool]]:
    return (f"a number of {unit} above 0", lambda value: is_number(value) and value > 0)


NUMBERS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "runs": _whole(1), "concurrency": _whole(1), "max_turns": _whole(1),
    "max_invalid": _whole(1), "token_budget": _whole(1), "token_budget_per_attempt": _whole(1),
    "max_cost": _above_zero("dollars"), "max_cost_per_attempt": _above_zero("dollars"),
    "timeout": _above_zero("seconds"), "requests_per_minute": _above_zero("requests"),
    "retries": _whole(0), "k": _whole(0), "context_window": _whole(1),
}
"""What each number of a batch or a model may be, whether an option or a run file gives
it (``--retries -1`` or ``runs: 0`` would otherwise fail later, without saying which)."""


def broken_number(key: str, value: Any) -> str | None:
    """Why ``value`` cannot be the setting ``key`` (:data:`NUMBERS`), or None."""
    if key not in NUMBERS or value is None:
        return None
    words, holds = NUMBERS[key]
    return None if holds(value) else f"must be {words}, not {value!r}"


@dataclass
class ModelSpec:
    """One model of a batch, as the options or a run file describe it."""

    model: str
    label: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    prices: dict[str, float] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    context_window: int | None = None
    requests_per_minute: float | None = None
    history: str = "full"
    k: int = 0
    prompt_variant: str = "base"
    summary: bool = False
    observation: str = "text"
    timeout: float = 120.0
    retries: int = 5

    @property
    def name(self) -> str:
        return self.label or self.model

    @property
    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    @property
    def endpoint(self) -> str:
        from game_client.bridge.provider import DEFAULT_BASE_URL

        return (self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


def read_run_file(path: str | Path, defaults: dict[str, Any]) -> tuple[dict[str, Any], list[ModelSpec]]:
    """The batch settings and the models of a run file; ``defaults`` (the command's
    options) fill what it leaves out."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as error:
        raise RunFileError(f"{path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise RunFileError(f"{path}: not YAML: {error}") from None
    unknown = sorted(set(data) - set(BATCH_KEYS)) if isinstance(data, dict) else []
    if unknown:
        raise RunFileError(f"{path}: unknown key {unknown[0]!r}; known: {', '.join(BATCH_KEYS)}")
    if not isinstance(data, dict) or not isinstance(data.get("models"), list) or not data["models"]:
        raise RunFileError(f"{path}: expected a mapping with a non-empty list 'models:' "
                           "(see gridstudy agent run --help)")
    models = [_model_spec(entry, f"{path}: models[{i}]", defaults)
              for i, entry in enumerate(data["models"])]
    names = Counter(m.name for m in models)
    twice = [n for n, count in names.items() if count > 1]
    if twice:
        raise RunFileError(f"{path}: two models are named {twice[0]!r}; give one a label")
    return {k: v for k, v in data.items() if k != "models"}, models


def _model_spec(entry: Any, where: str, defaults: dict[str, Any]) -> ModelSpec:
    if isinstance(entry, str):
        entry = {"model": entry}
    if not isinstance(entry, dict) or not isinstance(entry.get("model"), str):
        raise RunFileError(f"{where}: expected a mapping with model: NAME")
    unknown = sorted(set(entry) - set(MODEL_KEYS))
    if unknown:
        raise RunFileError(f"{where}: unknown key {unknown[0]!r}; known: {', '.join(MODEL_KEYS)}")
    for key, value in entry.items():
        broken = broken_number(key, value)
        if broken:
            raise RunFileError(f"{where}: {key} {broken}")
    values = {k: defaults[k] for k in MODEL_KEYS if k in defaults and defaults[k] is not None}
    values.update(entry)
    values["params"] = {**(defaults.get("params") or {}), **(entry.get("params") or {})}
    prices = values.get("prices")
    if prices is not None and not (isinstance(prices, dict) and set(prices) == {"input", "output"}
                                   and all(is_number(v) and v >= 0 for v in prices.values())):
        raise RunFileError(f"{where}: prices must be {{input: N, output: N}} dollars per "
                           "million tokens")
    if not isinstance(values["params"], dict):
        raise RunFileError(f"{where}: params must be a mapping")
    if values.get("observation", "text") not in OBSERVATIONS:
        raise RunFileError(f"{where}: observation must be one of {', '.join(OBSERVATIONS)}")
    return ModelSpec(**values)


# -- agent configurations ----------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """The turn and spending limits every attempt of the batch gets."""

    max_turns: int | None = None
    """None: 1000, or for the random agent its problem's horizon and a margin."""
    max_invalid: int = MAX_INVALID
    budget: Budget = field(default_factory=Budget)
    clock: str = "turns"
    """``turns``, or ``realtime``: on the participants' clock (game_client/realtime.py)."""
    protocol: str = "gridstudy"
    """The protocol profile (tasks/worldtest/protocol.py)."""

    @classmethod
    def of(cls, config: dict[str, Any]) -> Limits:
        """The limits an agent run's stored configuration keeps (:meth:`config`)."""
        return cls(config.get("max_turns"), config.get("max_invalid", MAX_INVALID),
                   Budget(config.get("max_cost_per_attempt"),
                          config.get("token_budget_per_attempt")),
                   config.get("clock", "turns"), config.get("protocol", "gridstudy"))

    def config(self) -> dict[str, Any]:
        return {"max_turns": self.max_turns, "max_invalid": self.max_invalid,
                "max_cost_per_attempt": self.budget.cost,
                "token_budget_per_attempt": self.budget.tokens, "clock": self.clock,
                "protocol": self.protocol}


def llm_run(spec: ModelSpec, limits: Limits, *, sleep: Callable[[float], Any],
            price_table: Any = None) -> RunSpec:
    """The batch's run of one model."""
    from game_client.bridge.agent import ContextWindow, LLMAgent
    from game_client.bridge.provider import Backoff, ChatProvider, Prices, PriceTable, limiter_for

    prices = PriceTable(dict(price_table.prices) if price_table else {})
    if spec.prices:
        prices.prices[spec.model] = Prices(float(spec.prices["input"]), float(spec.prices["output"]))
    context = ContextWindow(spec.context_window)
    limiter = limiter_for(spec.endpoint, spec.requests_per_minute)

    def make(run_index: int) -> LLMAgent:
        provider = ChatProvider(spec.model, base_url=spec.endpoint, api_key=spec.api_key,
                                params=spec.params, timeout=spec.timeout,
                                backoff=Backoff(retries=spec.retries), prices=prices,
                                limiter=limiter, sleep=sleep)
        return LLMAgent(provider, history=spec.history, k=spec.k,
                        prompt_variant=spec.prompt_variant, summary=spec.summary,
                        context=context, observation=spec.observation)

    agent = make(0)
    config = {**agent.config(), "context_window": spec.context_window, **limits.config()}
    if spec.label:
        config["label"] = spec.label
    if spec.model in prices.prices:
        price = prices.prices[spec.model]
        config["prices"] = {"input": price.input, "output": price.output}
    def stored(config: dict[str, Any]) -> RunSpec:
        behaviour = {name: config[name] for name in STORED_MODEL_KEYS if name in config}
        rebuilt = replace(spec, **behaviour, label=config.get("label"),
                          prices=config.get("prices"))
        return llm_run(rebuilt, Limits.of(config), sleep=sleep, price_table=price_table)

    return RunSpec(agent_name("llm", spec.model, config), "llm", spec.model, config, make,
                   max_turns=lambda problem: limits.max_turns or MAX_TURNS,
                   max_invalid=limits.max_invalid, budget=limits.budget, clock=limits.clock,
                   protocol=limits.protocol, from_config=stored)


def random_run(seed: int, interaction_steps: int, limits: Limits) -> RunSpec:
    """The random agent's run: unless ``max_turns`` is set, each attempt may take the
    turns its problem's horizon needs, so that none is abandoned for lack of turns."""
    config = {"seed": seed, "interaction_steps": interaction_steps, **limits.config()}
    return RunSpec(agent_name("random", None, config), "random", None, config,
                   lambda index: RandomAgent(seed=seed + index, interaction_steps=interaction_steps),
                   max_turns=lambda problem: limits.max_turns or
                   RandomAgent.turn_limit(problem, interaction_steps),
                   max_invalid=limits.max_invalid, budget=limits.budget, clock=limits.clock,
                   protocol=limits.protocol,
                   from_config=lambda c: random_run(c["seed"], c["interaction_steps"],
                                                    Limits.of(c)))


def planner_run(limits: Limits) -> RunSpec:
    config = {**PlannerAgent().config(), **limits.config()}
    return RunSpec(agent_name("planner", None, config), "planner", None, config, lambda index: PlannerAgent(),
                   max_turns=lambda problem: limits.max_turns or MAX_TURNS,
                   max_invalid=limits.max_invalid, budget=limits.budget, clock=limits.clock,
                   protocol=limits.protocol, from_config=lambda c: planner_run(Limits.of(c)),
                   cannot_play=PlannerAgent.cannot_play)


# -- the batch's configuration -------------------------------------------------------------

MODEL_OPTIONS = ("--model", "--history", "--k", "--prompt-variant", "--summary", "--observation",
                 "--temperature", "--max-tokens", "--param", "--context-window",
                 "--requests-per-minute", "--timeout", "--retries", "--prices", "--max-cost",
                 "--token-budget", "--max-cost-per-attempt", "--token-budget-per-attempt",
                 "--max-invalid")
"""The command's options that only a language model's requests read: given with another
agent, they are refused (before, ``--history none`` or ``--timeout 5`` with ``--agent
random`` were accepted and did nothing)."""
RANDOM_OPTIONS = ("--seed", "--interaction-steps")
"""The options only the random agent reads."""
CLOCKS = ("turns", "realtime")
PROTOCOLS = ("gridstudy", "autumnbench")


class ConfigError(ValueError):
    """Options and a run file that do not make a batch; ``option`` names the option to fix."""

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


@dataclass
class BatchConfig:
    """Everything ``gridstudy agent run`` plays, from its options and its run file, merged
    once (:meth:`build`): an option given on the command line wins over the run file,
    which wins over the defaults; a model of the run file takes the command's model
    options for what it leaves out."""

    kind: str
    """llm, random or planner."""
    problem_ids: list[str]
    models: list[ModelSpec]
    """The language models (llm); empty for the other kinds."""
    runs: int = 1
    """Attempts per problem and agent."""
    concurrency: int = 1
    limits: Limits = field(default_factory=Limits)
    """What each attempt may take and spend, its clock and protocol."""
    budget: Budget = field(default_factory=Budget)
    """What the batch's agent runs may spend, over every invocation."""
    prices: Any = None
    """A :class:`game_client.bridge.provider.PriceTable` from ``--prices``, or None."""
    seed: int = 0
    interaction_steps: int = 0
    """The random agent's seed and actions before going to the test."""
    server: str | None = None
    token: str | None = None
    """Play through a server's agent API (``--server``, ``--token``), else in process."""
    choice: str | None = None
    """``continue`` or ``new`` when the options differ from a stored run (:func:`reconcile`)."""

    @classmethod
    def build(cls, options: dict[str, Any]) -> BatchConfig:
        """The batch the command's ``options`` (click's parameters by name) describe;
        :class:`ConfigError` when they do not make one."""
        from game_client.batch import select_problems
        from game_client.bridge.provider import PriceTable

        o = options
        for key in NUMBERS:
            broken = broken_number(key, o.get(key))
            if broken:
                raise ConfigError(broken, "--" + key.replace("_", "-"))
        defaults = {"history": o["history"], "k": o["k"], "prompt_variant": o["prompt_variant"],
                    "summary": o["summary"], "observation": o["observation"],
                    "timeout": o["timeout"], "retries": o["retries"],
                    "context_window": o["context_window"],
                    "requests_per_minute": o["requests_per_minute"],
                    "params": {**({"temperature": o["temperature"]}
                                  if o["temperature"] is not None else {}),
                               **({"max_tokens": o["max_tokens"]}
                                  if o["max_tokens"] is not None else {}),
                               **o["params"]}}
        named = [ModelSpec(**{"model": m, **{k: v for k, v in defaults.items() if v is not None}})
                 for m in o["models"]]
        batch: dict[str, Any] = {}
        models = named
        if o["run_file"]:
            if o["kind"] != "llm":
                raise ConfigError("--run-file lists language models; it goes with --agent llm")
            try:
                batch, models = read_run_file(o["run_file"], defaults)
            except RunFileError as error:
                raise ConfigError(str(error), "--run-file") from None
            for key, value in batch.items():
                broken = broken_number(key, value)
                if broken:
                    raise ConfigError(f"{o['run_file']}: {key} {broken}", "--run-file")
            models += named
        patterns = o["patterns"] or tuple(batch.get("problems") or ())
        if not patterns:
            raise ConfigError("name the problems: --problems PATTERN (or problems: in the run file)")
        try:
            problem_ids = select_problems(patterns)
        except ValueError as error:
            raise ConfigError(str(error), "--problems") from None

        def pick(option: Any, key: str, default: Any) -> Any:
            return option if option is not None else batch.get(key, default)

        limits = Limits(pick(o["max_turns"], "max_turns", None),
                        pick(o["max_invalid"], "max_invalid", MAX_INVALID),
                        Budget(pick(o["max_cost_per_attempt"], "max_cost_per_attempt", None),
                               pick(o["token_budget_per_attempt"], "token_budget_per_attempt",
                                    None)),
                        pick(None if o["clock"] == "turns" else o["clock"], "clock", "turns"),
                        pick(None if o["protocol"] == "gridstudy" else o["protocol"], "protocol",
                             "gridstudy"))
        if limits.clock not in CLOCKS:
            raise ConfigError(f"clock must be turns or realtime, not {limits.clock!r}", "--clock")
        if limits.protocol not in PROTOCOLS:
            raise ConfigError(f"protocol must be gridstudy or autumnbench, not "
                              f"{limits.protocol!r}", "--protocol")
        if limits.protocol != "gridstudy" and (o["server"] or limits.clock == "realtime"):
            raise ConfigError("--protocol autumnbench plays turn by turn in this process; it "
                              "goes with neither --server nor --clock realtime")
        if limits.clock == "realtime" and o["server"]:
            raise ConfigError("--clock realtime plays in this process; it does not go with "
                              "--server")
        given = o["given"]
        model_only = [flag for flag in MODEL_OPTIONS if flag in given]
        if o["kind"] != "llm" and model_only:  # before: ignored without a word
            verb = "concerns" if len(model_only) == 1 else "concern"
            raise ConfigError(f"{', '.join(model_only)} {verb} a language model's requests, "
                              f"and --agent {o['kind']} asks no model: leave them out, or "
                              "play a model with --agent llm (the default)", model_only[0])
        random_only = [flag for flag in RANDOM_OPTIONS if flag in given]
        if o["kind"] != "random" and random_only:
            verb = "steers" if len(random_only) == 1 else "steer"
            sampling = " (a model's sampling seed is --param seed=N)" if "--seed" in random_only \
                and o["kind"] == "llm" else ""
            raise ConfigError(f"{', '.join(random_only)} {verb} the random agent only, and "
                              f"this is --agent {o['kind']}{sampling}", random_only[0])
        if o["kind"] == "llm" and not models:
            raise ConfigError("name the model: --model NAME (repeat for several) or "
                              "--run-file FILE")
        if o["server"] and not o["token"]:
            raise ConfigError("--server needs an agent-API token: --token or GRIDSTUDY_TOKEN "
                              "(a researcher creates one with gridstudy token create NAME)")
        if o["continue_run"] and o["new_run"]:
            raise ConfigError("--continue-run and --new-run exclude each other: choose one")
        try:
            prices = PriceTable.load(o["prices_file"]) if o["prices_file"] else None
        except ValueError as error:
            raise ConfigError(str(error), "--prices") from None
        return cls(o["kind"], problem_ids, models if o["kind"] == "llm" else [],
                   pick(o["runs"], "runs", 1), pick(o["concurrency"], "concurrency", 1), limits,
                   Budget(pick(o["max_cost"], "max_cost", None),
                          pick(o["token_budget"], "token_budget", None)),
                   prices, o["seed"], o["interaction_steps"], o["server"], o["token"],
                   CONTINUE if o["continue_run"] else NEW if o["new_run"] else None)

    def agent_runs(self, sleep: Callable[[float], Any]) -> list[RunSpec]:
        """The batch's agent configurations; ``sleep`` is how a provider waits between
        retries (the batch's guard: it wakes when the batch stops). :class:`ConfigError`
        for a model the provider could not be asked with."""
        if self.kind == "random":
            return [random_run(self.seed, self.interaction_steps, self.limits)]
        if self.kind == "planner":
            return [planner_run(self.limits)]
        try:
            runs = [llm_run(spec, self.limits, sleep=sleep, price_table=self.prices)
                    for spec in self.models]
        except ValueError as error:  # a request parameter the provider would refuse
            raise ConfigError(str(error)) from None
        dollars = next((option for option, budget in (("--max-cost", self.budget),
                                                      ("--max-cost-per-attempt", self.limits.budget))
                        if budget.cost is not None), None)
        unpriced = [run.model for run in runs if "prices" not in run.config]
        if dollars and unpriced:
            raise ConfigError(
                f"{dollars} counts dollars, and {', '.join(unpriced)} "
                f"{'has no price' if len(unpriced) == 1 else 'have no prices'}: give it "
                f"with --prices '{{\"{unpriced[0]}\": {{\"input\": 2.5, \"output\": 10}}}}' "
                "(dollars per million tokens) or prices: in the run file, or limit tokens "
                "with --token-budget instead", dollars)
        return runs


# -- reruns ------------------------------------------------------------------------------

STORED_MODEL_KEYS = ("base_url", "params", "history", "k", "prompt_variant", "summary",
                     "observation", "context_window")
"""The keys of a model's :class:`ModelSpec` its agent run's configuration keeps."""
CONTINUE, NEW = "continue", "new"


class RerunChoice(ValueError):
    """A rerun whose options differ from the agent run holding its unfinished attempts
    (the message lists the differences and the attempts, and the two ways on)."""


def differences(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    """``key: old -> new`` for each setting that differs (nested mappings by dotted key).

    >>> differences({"params": {"temperature": 0}, "k": 0}, {"params": {"temperature": 1}, "k": 0})
    ['params.temperature: 0 -> 1']
    """
    found = []
    for key in sorted(set(old) | set(new), key=str):
        before, after = old.get(key), new.get(key)
        if isinstance(before, dict) and isinstance(after, dict):
            found += differences(before, after, f"{prefix}{key}.")
        elif before != after:
            found.append(f"{prefix}{key}: {_shown(before)} -> {_shown(after)}")
    return found


def _shown(value: Any) -> str:
    return "(unset)" if value is None else str(value)


def reconcile(records: Any, runs: list[RunSpec], problem_ids: list[str],
              choice: str | None) -> tuple[list[RunSpec], list[str]]:
    """The batch's runs after comparing each with the agent runs already stored for the
    same agent (kind, model and label), and what to tell the researcher.

    A run whose configuration is stored continues that agent run. One whose options
    differ from a stored run that still has unfinished attempts (interrupted, ended by
    its provider, or left by a killed process) on these problems raises
    :class:`RerunChoice`, unless ``choice`` is ``continue`` (play the stored run's
    attempts with its stored configuration) or ``new`` (start a new agent run; the old
    one's attempts stay as they are). A new run beside finished ones is said, not refused."""
    from tasks.worldtest.turn import ACTIVE, resumable

    like = records.runs_like
    kept, notes = [], []
    for run in runs:
        stored = [(i, c) for i, c in like(run.kind, run.model)
                  if c.get("label") == run.config.get("label")]
        same = any(config == run.config for _, config in stored)
        stranded = []
        for run_id, config in stored:
            if config == run.config:
                continue
            unfinished = [e for e in records.episodes(run_id) if e.problem_id in problem_ids and
                          (e.status == ACTIVE or resumable(e.status, e.info))]
            if unfinished:
                stranded.append((run_id, config, unfinished))
        if not stranded:
            if stored and not same:
                run_id, config = stored[0]
                notes.append(f"{run.label}: a new agent run; its options differ from agent "
                             f"run {run_id} ({'; '.join(differences(config, run.config))})")
            kept.append(run)
            continue
        run_id, config, unfinished = stranded[0]
        which = ", ".join(f"{e.episode_id} ({e.problem_id}, {e.status})" for e in unfinished)
        changed = "; ".join(differences(config, run.config))
        if choice == CONTINUE:
            again = run.from_config(config) if run.from_config else None
            if again is None or again.config != config:
                raise RerunChoice(f"agent run {run_id} was recorded with settings this version "
                                  "cannot rebuild; start a new run with --new-run")
            notes.append(f"{again.label}: continuing agent run {run_id} with its recorded "
                         f"options (this command's differ: {changed})")
            kept.append(again)
        elif choice == NEW or same:
            notes.append(f"{run.label}: agent run {run_id} keeps {len(unfinished)} unfinished "
                         f"attempt(s) (episode {which}) played with other options ({changed}); "
                         "--continue-run would finish them")
            kept.append(run)
        else:
            raise RerunChoice(
                f"{run.label}: the options differ from agent run {run_id}, which has "
                f"{len(unfinished)} unfinished attempt(s) on these problems (episode {which}). "
                f"Differences (recorded -> now): {changed}. Add --continue-run to finish "
                "them with the recorded options, or --new-run to start a new agent run with "
                "these options and leave them.")
    return kept, notes


# -- the summary ---------------------------------------------------------------------------

OUTCOMES = ("done", "abandoned", "error", "interrupted")


def summary_lines(runs: Iterable[RunSpec], outcome: Outcome,
                  spending: dict[int, tuple[Spending, Spending]] | None = None) -> list[str]:
    """One line per agent run (its attempts by how they ended, mean score, grounding,
    tokens and cost), then why the batch stopped and what a rerun would do.

    ``spending`` gives, per agent run id, what this invocation spent and what the run
    has spent in all invocations (from the record); without it, the attempts' own
    figures (which count the recorded turns of a resumed attempt) are shown."""
    by_run: dict[str, list[EpisodeResult]] = defaultdict(list)
    for result in outcome.results:
        by_run[result.agent].append(result)
    unplayed = Counter(job.run.label for job in outcome.unplayed)
    lines = []
    for run in runs:
        results = by_run.get(run.label, [])
        name = f"{run.label} (agent run {run.agent_run_id})"
        if not results:
            lines.append(f"{name}: {count(unplayed[run.label], 'attempt')} not started"
                         if unplayed[run.label] else
                         f"{name}: nothing left to play (every attempt is finished)")
            continue
        counts = Counter(r.status for r in results)
        ended = ", ".join(f"{s} {counts[s]}" for s in OUTCOMES if counts[s])
        finished = [r for r in results if r.status in ("done", "abandoned")]
        score = (f"mean score {sum(r.score or 0.0 for r in finished) / len(finished):.3f} "
                 f"over {len(finished)} finished") if finished else "no finished attempt"
        turns = sum(r.turns for r in results)
        grounding = (turns - sum(r.invalid for r in results)) / turns if turns and finished \
            else None
        if run.model is None:  # the random agent and the planner ask no model
            spent = "no model asked"
        elif spending and run.agent_run_id in spending:
            now, total = spending[run.agent_run_id]
            spent = (f"tokens {now.tokens:,} and cost {now.dollars()} this invocation; "
                     f"{total.tokens:,} and {total.dollars()} in all for agent run "
                     f"{run.agent_run_id}")
            if total.uncounted:
                spent += (f" ({count(total.uncounted, 'turn')}, {now.uncounted} of them this "
                          "invocation, whose replies gave no token counts: what they spent is "
                          "in neither figure)")
        else:
            spent = (f"tokens {sum(r.tokens for r in results):,}; cost "
                     f"{Spending(*_cost_of(results)).dollars()}")
        lines.append(f"{name}: {count(len(results), 'attempt')} ({ended}); {score}; grounding "
                     f"{'-' if grounding is None else f'{grounding:.3f}'}; {spent}")
        if unplayed[run.label]:
            lines.append(f"  not started, {count(unplayed[run.label], 'attempt')}")
        unfinished: dict[tuple[str, str], list[str]] = defaultdict(list)
        for result in results:
            if result.status in ("error", "interrupted"):
                unfinished[(result.status, result.reason or "no reason given")].append(
                    f"{result.episode_id} ({result.problem_id})")
        for (status, reason), which in unfinished.items():
            lines.append(f"  {status}, {count(len(which), 'attempt')} (episode "
                         f"{', '.join(which)}): {reason}")
    lines += [f"{why}; its run was played again from the start" for why in outcome.restarted]
    if outcome.elsewhere:
        lines.append(f"{count(len(outcome.elsewhere), 'attempt')} started meanwhile by "
                     "another invocation of this batch, left to it: "
                     + ", ".join(f"{job.problem_id} run {job.run_index}"
                                 for job in outcome.elsewhere))
    failed = outcome.failed
    if outcome.stopped:
        lines.append(f"stopped early: {outcome.stopped}")
    resumable_count = sum(r.resumable for r in failed)
    if resumable_count:
        lines.append(f"{resumable_count} attempt(s) can be resumed: "
                     + ("put right what stopped the batch and run the command again"
                        if outcome.guard.fatal else "run the same command again"))
    return lines


def _cost_of(results: list[EpisodeResult]) -> tuple[float | None, int]:
    costs = [r.cost for r in results]
    cost = None if any(c is None for c in costs) and not any(costs) else sum(c or 0.0 for c in costs)
    return cost, sum(r.tokens for r in results)


def exit_code(outcome: Outcome) -> int:
    """0 when every attempt finished; 130 after Ctrl-C; 1 when any attempt failed or was
    never started (the budget was spent), or the provider refused the batch."""
    if outcome.guard.fatal:
        return 1
    if outcome.stopped and "operator" in outcome.stopped:
        return 130
    return 1 if outcome.failed or outcome.unplayed else 0
