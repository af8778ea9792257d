"""The report's tables, each a pure function from a loaded Dataset to a list of rows.

A row is a flat dict (one CSV line). Who an episode's agent is and whether it counts
are read in :mod:`analysis.readings`; the report's header lists the episodes left out,
with their reasons.

A table with nothing to show returns ``[]``; one that cannot be computed at all (pass@k
with fewer than k attempts) raises ``ValueError`` saying why, and the report prints the
reason in place of the table.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from analysis.dataset import Dataset, EpisodeRecord, event_sum, event_values, memo
from analysis.metrics import (
    action_type_distribution,
    auv,
    final_perplexity,
    memory_index,
    percentile_interval,
    percentile_score,
    perplexity_auc,
    pooled_loop_ratio,
    progress_curve,
    random_baseline_table,
    reset_frequency,
    success_curve,
    task_interval,
    unique_action_counts,
)
from analysis.metrics.explore_exploit import explore_exploit
from analysis.metrics.loops import EQUATIONS, PRINTED_ALGORITHM
from analysis.metrics.perplexity import perplexity_curves as perplexity_curves_of
from analysis.metrics.progress import grounding_counts
from analysis.metrics.records import KINDS
from analysis.metrics.scores import MIN_N, TooFew
from analysis.readings import (
    FULL_HISTORY,
    HUMAN,
    NO_HISTORY,
    Row,
    agent_of,
    base_agent,
    challenge_of,
    counted,
    declared,
    env_of,
    group,
    history_setting,
    mean_of,
    problem_of,
    score_of,
    scored_by_steps,
    scored_indices,
    solve_step,
    solved,
)
from analysis.replay import known_problem, reading
from tasks.worldtest.challenge import MATCH, REACHES_GOAL, SUBGOAL, TRIGGERS_CHANGE

# -- scores (002 Fig. 4, Table E.1) ---------------------------------------------------


def problem_scores(dataset: Dataset, q: float = 80, resamples: int = 1000,
                   seed: int = 0, min_n: int = MIN_N) -> list[Row]:
    """Per problem and agent: attempts, mean, and the agent's score. The human score is
    the ``q``-th percentile of the attempts with its bootstrap 95% interval; a model's is
    its mean score. Fewer than ``min_n`` attempts give no interval ("n too small")."""
    rows = []
    for (problem, agent), episodes in group(counted(dataset), problem_of, agent_of).items():
        scores = [score_of(e) for e in episodes]
        row = {"problem": problem, "challenge": episodes[0].challenge,
               "env": episodes[0].env_id, "agent": agent, "n": len(scores),
               "mean": float(np.mean(scores)), "score": float(np.mean(scores)),
               "ci_low": None, "ci_high": None, "interval": None}
        if agent == HUMAN:
            row["score"] = percentile_score(scores, q)
            row |= interval(lambda s=scores: percentile_interval(s, q, resamples, seed, min_n=min_n),
                            min_n)
        rows.append(row)
    return rows


def interval(compute: Callable[[], tuple[float, float]], min_n: int = MIN_N) -> Row:
    """``ci_low``, ``ci_high`` and ``interval`` (what they are): the bootstrap interval
    ``compute`` gives, or none and "n too small" when it refuses too few attempts."""
    try:
        low, high = compute()
    except TooFew:
        return {"ci_low": None, "ci_high": None, "interval": f"n too small (< {min_n})"}
    return {"ci_low": low, "ci_high": high, "interval": "bootstrap 95%"}


def _mean_by(rows: list[Row], *keys: str) -> list[Row]:
    """Problem scores averaged over problems within each ``keys`` group."""
    groups: dict[tuple, list[Row]] = defaultdict(list)
    for row in rows:
        groups[tuple(row[k] for k in keys)].append(row)
    return [{**dict(zip(keys, key)), "problems": len(group_rows),
             "attempts": sum(r["n"] for r in group_rows),
             "score": float(np.mean([r["score"] for r in group_rows]))}
            for key, group_rows in sorted(groups.items())]


def task_type_scores(dataset: Dataset, q: float = 80) -> list[Row]:
    """Per challenge and agent, the mean over problems of the problem scores (Fig. 4)."""
    return _mean_by(problem_scores(dataset, q), "challenge", "agent")


def headline(dataset: Dataset, q: float = 80, resamples: int = 1000, seed: int = 0,
             min_n: int = MIN_N) -> list[Row]:
    """The report's first answer: per task type, people's score (the mean over problems
    of each problem's ``q``-th percentile) and each model's (the mean over problems of
    its mean), with the problems, the attempts and a stratified bootstrap 95% interval
    (``task_interval``)."""
    rows = []
    by_task: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for episode in counted(dataset):
        by_task[(challenge_of(episode), agent_of(episode))][problem_of(episode)].append(
            score_of(episode))
    for (challenge, agent), problems in sorted(by_task.items(),
                                               key=lambda item: (item[0][0], item[0][1] != HUMAN,
                                                                 item[0][1])):
        human = agent == HUMAN
        per_problem = [percentile_score(s, q) if human else float(np.mean(s))
                       for s in problems.values()]
        rows.append({"challenge": challenge, "agent": agent, "problems": len(problems),
                     "attempts": sum(map(len, problems.values())),
                     "score": float(np.mean(per_problem)),
                     **interval(lambda p=problems, q_=q if human else None:
                                task_interval(p.values(), q_, resamples, seed, min_n=min_n),
                                min_n)})
    return rows


def environment_scores(dataset: Dataset, q: float = 80) -> list[Row]:
    """Per environment and agent, the mean over its problems of the scores (Table E.1)."""
    return _mean_by(problem_scores(dataset, q), "env", "agent")


# -- exploration behaviour (002 Fig. 5, Table E.2, App. D.1) ------------------------------


def action_types(dataset: Dataset) -> list[Row]:
    """Per agent, the mean action-type distribution over its episodes (Fig. 5)."""
    rows = []
    for (agent,), episodes in group(counted(dataset), agent_of).items():
        shares = [d for d in (action_type_distribution(e.events) for e in episodes) if d]
        if shares:
            rows.append({"agent": agent, "episodes": len(shares),
                         **{kind: mean_of(d[kind] for d in shares) for kind in KINDS}})
    return rows


def unique_actions(dataset: Dataset) -> list[Row]:
    """Per environment and agent, mean unique clicks and directional keys (Table E.2)."""
    rows = []
    for (env, agent), episodes in group(counted(dataset), env_of, agent_of).items():
        counts = [unique_action_counts(e.events) for e in episodes]
        rows.append({"env": env, "agent": agent, "episodes": len(counts),
                     "unique_clicks": mean_of(c["clicks"] for c in counts),
                     "unique_directional": mean_of(c["directional"] for c in counts)})
    return rows


def reset_rates(dataset: Dataset, per: int = 100) -> list[Row]:
    """Per environment and agent, resets per interaction phase and per ``per`` actions."""
    rows = []
    for (env, agent), episodes in group(counted(dataset), env_of, agent_of).items():
        found = [reset_frequency(e.events, per) for e in episodes]
        rows.append({"env": env, "agent": agent, "episodes": len(found),
                     "resets": mean_of(f["resets"] for f in found),
                     f"per_{per}_actions": mean_of(f["rate"] for f in found)})
    return rows


def perplexity(dataset: Dataset, window: int = 10, include: tuple[str, ...] = ()) -> list[Row]:
    """Per environment and agent, mean normalized-perplexity AUC and final value over
    the episodes that have exploration symbols (Fig. 6)."""
    rows = []
    episodes_counted = counted(dataset)
    perplexity_curves_of([e.events for e in episodes_counted], window, include)  # all at once
    for (env, agent), episodes in group(episodes_counted, env_of, agent_of).items():
        aucs = [perplexity_auc(e.events, window, include) for e in episodes]
        finals = [final_perplexity(e.events, window, include) for e in episodes]
        measured = sum(a is not None for a in aucs)
        if measured:
            rows.append({"env": env, "agent": agent, "episodes": measured,
                         "auc": mean_of(aucs), "final": mean_of(finals)})
    return rows


def perplexity_curves(dataset: Dataset, window: int = 10,
                      include: tuple[str, ...] = ()) -> dict[str, list[list[tuple[float, float]]]]:
    """Per agent, the normalized-perplexity curve of each episode that has one."""
    curves: dict[str, list] = defaultdict(list)
    episodes = counted(dataset)
    for episode, curve in zip(episodes, perplexity_curves_of([e.events for e in episodes],
                                                             window, include), strict=True):
        if curve is not None:
            curves[agent_of(episode)].append(curve)
    return dict(curves)


def memory_rows(dataset: Dataset, t_max: int = 50) -> list[Row]:
    """Per model that has a history option (its run's ``config["history"]``), challenge
    scored by steps (planning, explore) and history setting: AUV over ``t_max`` scored steps, and the memory index ``AUV(full) - AUV(none)`` (004 Eq. 5) on every
    row of a model and challenge that has runs with both settings (else ``None``)."""
    runs = [e for e in counted(dataset) if "history" in e.agent_config and scored_by_steps(e)]
    rows = []
    for (base, challenge), episodes in group(runs, base_agent, challenge_of).items():
        by_setting = group(episodes, history_setting)
        values = {setting: auv([solve_step(e) for e in es], t_max)
                  for (setting,), es in by_setting.items()}
        index = (memory_index(values[FULL_HISTORY], values[NO_HISTORY])
                 if {FULL_HISTORY, NO_HISTORY} <= set(values) else None)
        for (setting,), es in sorted(by_setting.items(), key=lambda item: _setting_order(item[0][0])):
            rows.append({"agent": base, "challenge": challenge, "history": setting,
                         "episodes": len(es), "t_max": t_max, "auv": values[setting],
                         "memory_index": index})
    return rows


def memory_curves(dataset: Dataset, t_max: int = 50) -> dict[tuple[str, str, str], Row]:
    """The success curves behind :func:`memory_rows` (004 Fig. 2): per model, challenge
    and history setting, ``curve``, the share of episodes solved within ``t`` scored
    steps for ``t`` from 0 to ``t_max``, and ``auv``, the area under it."""
    runs = [e for e in counted(dataset) if "history" in e.agent_config and scored_by_steps(e)]
    curves = {}
    for (base, challenge, setting), episodes in group(runs, base_agent, challenge_of,
                                                      history_setting).items():
        steps = [solve_step(e) for e in episodes]
        curves[(base, challenge, setting)] = {"curve": success_curve(steps, t_max).tolist(),
                                              "auv": auv(steps, t_max)}
    return dict(sorted(curves.items(), key=lambda item: (item[0][:2], _setting_order(item[0][2]))))


def _setting_order(setting: str) -> tuple[int, int]:
    """full first, then ``last K`` by decreasing K, then none."""
    if setting == FULL_HISTORY:
        return (0, 0)
    if setting.startswith("last "):
        k = setting.removeprefix("last ")
        return (1, -int(k) if k.isdecimal() else 0)
    return (2, 0)


# -- models: cost and grounding (002 Fig. 3, 001 Sec. 5.3) --------------------------------


def score_cost(dataset: Dataset) -> list[Row]:
    """Per model agent: mean score of its finished attempts (those it did not finish
    score 0), grounding accuracy, and the cost and tokens of *every* attempt, incomplete
    ones included (Fig. 3). ``cost`` is "unpriced" for a model without a price, and
    "unknown" when some of its turns' replies gave no token counts (``uncounted_turns``):
    the sum of the others would understate it, and place it wrongly in the figure."""
    rows = []
    models = [e for e in dataset if not e.is_human]
    counted_ids = {id(e) for e in counted(dataset)}
    for (agent,), episodes in group(models, agent_of).items():
        scored = [e for e in episodes if id(e) in counted_ids]
        prompt = sum(event_sum(e, "prompt_tokens") for e in episodes)
        completion = sum(event_sum(e, "completion_tokens") for e in episodes)
        unpriced = (prompt + completion) and not any(event_sum(e, "cost", None) is not None
                                                     for e in episodes)
        uncounted = sum(uncounted_turns(e) for e in episodes)
        cost = None if unpriced or uncounted else sum(event_sum(e, "cost") for e in episodes)
        turns = [grounding_counts(e.events) for e in scored]
        model_turns = sum(t for t, _ in turns)
        rows.append({"agent": agent, "attempts": len(episodes), "scored": len(scored),
                     "incomplete": sum(e.is_incomplete for e in episodes),
                     "score": mean_of(score_of(e) for e in scored),
                     "cost": "unpriced" if unpriced else "unknown" if uncounted else cost,
                     "cost_per_attempt": None if cost is None else cost / len(episodes),
                     "prompt_tokens": prompt, "completion_tokens": completion,
                     "uncounted_turns": uncounted,
                     "grounding_accuracy": (sum(g for _, g in turns) / model_turns
                                            if model_turns else None)})
    return rows


def uncounted_turns(episode: EpisodeRecord) -> int:
    """The turns of ``episode`` where a model was asked (a latency is recorded) and its
    reply gave no token counts."""
    return sum(latency is not None and (prompt is None or completion is None)
               for latency, prompt, completion in zip(
                   event_values(episode, "latency"), event_values(episode, "prompt_tokens"),
                   event_values(episode, "completion_tokens")))


ENDINGS = (("invalid replies", "invalid replies in a row"), ("turn limit", "no end after"),
           ("budget", "budget ran out"))
"""How an abandoned model attempt ended, read off its reason."""


def attempt_outcomes(dataset: Dataset) -> list[Row]:
    """Per agent, how its attempts ended: done; abandoned (by invalid replies, the turn
    limit, the budget, or giving up), scored 0; and, not scored until resumed, error,
    interrupted and active."""
    rows = []
    for (agent,), episodes in group(dataset, agent_of).items():
        row: Row = {"agent": agent, "attempts": len(episodes),
                    "done": sum(e.status == "done" for e in episodes)}
        abandoned = [str((e.info or {}).get("reason") or "") for e in episodes
                     if e.status == "abandoned"]
        for name, marker in ENDINGS:
            row[f"abandoned: {name}"] = sum(marker in reason for reason in abandoned)
        row["abandoned: other"] = len(abandoned) - sum(row[f"abandoned: {n}"] for n, _ in ENDINGS)
        for status in ("error", "interrupted", "active"):
            row[status] = sum(e.status == status for e in episodes)
        rows.append(row)
    return rows


def published_scores(dataset: Dataset) -> list[Row]:
    """Per agent played under a protocol profile that scores as the published harness
    does (``info.protocol_score``) and per challenge: the mean of gridstudy's scores and
    of the harness's over the same finished attempts, side by side, so that neither is
    read as the other. The harness's is given twice: by the paper's definition, and as
    its code computes it (change detection's formula taken at the number of test turns
    rather than the chosen frame, ``info.protocol_score_as_run``; the same elsewhere)."""
    rows = []
    finished = [e for e in counted(dataset) if "protocol_score" in (e.info or {})]
    for (agent, challenge), episodes in group(finished, agent_of, challenge_of).items():
        as_run = [e.info.get("protocol_score_as_run", e.info["protocol_score"])
                  for e in episodes]
        rows.append({"agent": agent, "challenge": challenge, "attempts": len(episodes),
                     "gridstudy score": float(np.mean([score_of(e) for e in episodes])),
                     "harness score": float(np.mean([e.info["protocol_score"]
                                                     for e in episodes])),
                     "harness score as its code computes it": float(np.mean(as_run))})
    return rows


# -- the random baseline (002 Table E.3) --------------------------------------------------


def random_baseline_rows(dataset: Dataset, timeout: int = 1000) -> list[Row]:
    """Table E.3 from the random agent's recorded runs, one row per environment in the
    layout of :func:`random_baseline_table` (as ``gridstudy baseline random`` prints
    it): for a challenge read as reaching the goal, the chance of doing so within
    ``timeout`` scored steps; for one read as triggering the change, the chance its
    actions did (the recorded ``test_triggered``, at test step ``test_t_star``); and the
    mean steps it took."""
    samples = []
    runs = [e for e in counted(dataset) if e.agent_kind == "random"]
    for (env, challenge), episodes in group(runs, env_of, challenge_of).items():
        reading = declared(challenge, "baseline")
        if reading == REACHES_GOAL:
            steps = [solve_step(e) for e in episodes]
        elif reading == TRIGGERS_CHANGE:
            steps = [trigger_step(e) for e in episodes if "test_triggered" in e.info]
        else:
            continue
        if steps:
            samples.append((env, challenge, steps))
    return random_baseline_table(samples, timeout)


def trigger_step(episode: EpisodeRecord) -> int | None:
    """The test step at which a change-detection attempt made the change show, or
    ``None`` when it never did."""
    return episode.info.get("test_t_star") if episode.info.get("test_triggered") else None


# -- test-time improvement (004): AUV and loop ratio -----------------------------------


def auv_rows(dataset: Dataset, t_max: int = 50) -> list[Row]:
    """Per challenge scored by steps (planning, explore) and agent: success rate, AUV over ``t_max``
    scored steps, and the pooled loop ratio over the scored-phase states, by the
    definition (Eq. 2-4, ``loop_ratio``) and by Algorithm 1 as printed
    (``loop_ratio_printed_alg1``, to set beside the paper's code)."""
    rows = []
    for (challenge, agent), episodes in group(replayed(dataset), challenge_of,
                                              agent_of).items():
        states = [_states(e) for e in episodes]
        rows.append({"challenge": challenge, "agent": agent, "episodes": len(episodes),
                     "t_max": t_max, "success": mean_of(float(solved(e)) for e in episodes),
                     "auv": auv([solve_step(e) for e in episodes], t_max),
                     "loop_ratio": pooled_loop_ratio(states, overlapping=EQUATIONS),
                     "loop_ratio_printed_alg1": pooled_loop_ratio(
                         states, overlapping=PRINTED_ALGORITHM)})
    return rows


def replayed(dataset: Dataset) -> list[EpisodeRecord]:
    """The attempts whose replays the report reads (``analysis.replay.reading``): those
    counted, of a challenge scored by steps (planning, explore)."""
    return [e for e in counted(dataset) if scored_by_steps(e)]


def _states(episode: EpisodeRecord) -> list[str]:
    """The scored phase as a sequence of environment states: the full state where the
    replayed environment has one (docs/metrics.md), else the stored frame hashes."""
    read = reading(episode)
    if read is not None:
        return read.states
    hashes = event_values(episode, "frame_hash")
    return [hashes[i] for i in scored_indices(episode) if hashes[i] is not None]


# -- progress rate (001) and task-DAG errors (000) -------------------------------------


def match_progress(episode: EpisodeRecord, goal: dict) -> list[float]:
    """``r_t`` over the test phase (match form): the frame entering it, then one per
    test step."""
    columns = zip(*(event_values(episode, n)
                    for n in ("applied", "frame_hash", "phase", "next_phase")))
    states = episode.frames([key for applied, key, phase, next_phase in columns
                             if applied and key and (phase == "test" or next_phase == "test")])
    return progress_curve(episode.challenge, states, goal) if states else []


def subgoal_progress(episode: EpisodeRecord) -> list[float]:
    """``r_t`` of a task-DAG episode: the fraction of the map's nodes achieved, from the
    start position on, one value per applied step (read from the replayed map)."""
    read = reading(episode)
    if read is None or read.achieved is None:
        return []
    return progress_curve(episode.challenge, read.achieved, read.dagmap.nodes)


def episode_progress(episode: EpisodeRecord) -> list[float]:
    """The progress curve of an episode in the form its challenge declares (``[]`` where
    none is defined, and for match-form problems this machine does not know)."""
    def compute() -> list[float]:
        form = declared(episode.challenge, "progress")
        if form == SUBGOAL:
            return subgoal_progress(episode)
        problem = known_problem(episode.problem_id) if form == MATCH else None
        return match_progress(episode, problem.params) if problem is not None else []
    return memo(episode, "progress", compute)


def difficulty_of(episode: EpisodeRecord) -> str:
    problem = known_problem(episode.problem_id)
    return (problem.difficulty if problem is not None else None) or "unlabelled"


def progress_curves(dataset: Dataset) -> dict[str, list[list[float]]]:
    """Per agent, the progress curve of each planning and explore episode."""
    curves: dict[str, list[list[float]]] = defaultdict(list)
    for episode in counted(dataset):
        curve = episode_progress(episode)
        if curve:
            curves[agent_of(episode)].append(curve)
    return dict(curves)


def progress_rows(dataset: Dataset) -> list[Row]:
    """Per agent, challenge and difficulty (easy/hard, or the task-DAG map's level, when
    problems are labelled), the mean final progress rate and the success rate."""
    rows: dict[tuple, list] = defaultdict(list)
    for episode in counted(dataset):
        curve = episode_progress(episode)
        if curve:
            key = (agent_of(episode), episode.challenge, difficulty_of(episode))
            rows[key].append((curve[-1], solved(episode)))
    return [{"agent": a, "challenge": c, "difficulty": d, "episodes": len(v),
             "progress_rate": mean_of(r for r, _ in v), "success": mean_of(float(o) for _, o in v)}
            for (a, c, d), v in sorted(rows.items())]


def dag_errors(episode: EpisodeRecord) -> Any:
    """The exploration/exploitation reading of a task-DAG episode (its map regenerated
    by replaying the episode on its registered problem)."""
    read = reading(episode)
    if read is None:
        raise ValueError(f"{episode.problem_id} is not registered here: its map cannot be rebuilt")
    moves = [action for action in read.actions if action in ("up", "down", "left", "right")]
    return explore_exploit(read.dagmap, read.dagmap.follow(moves))


def explore_exploit_rows(dataset: Dataset) -> list[Row]:
    """Per agent: mean exploration and exploitation error and success rate on task-DAG
    (``explore``) problems (000 Fig. 1)."""
    rows = []
    runs = [e for e in counted(dataset) if declared(e.challenge, "progress") == SUBGOAL]
    for (agent,), episodes in group(runs, agent_of).items():
        readings = [dag_errors(e) for e in episodes]
        rows.append({"agent": agent, "episodes": len(episodes),
                     "exploration_error": mean_of(r.exploration_error for r in readings),
                     "exploitation_error": mean_of(r.exploitation_error for r in readings),
                     "success": mean_of(float(solved(e)) for e in episodes)})
    return rows
