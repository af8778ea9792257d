"""The study report: every table as CSV and one self-contained HTML page.

:func:`write_report` runs each :class:`Section` (a table function, optionally a figure,
and the metrics whose parameters it used) over a loaded Dataset, writes
``<section>.csv`` per table, each figure as PNG, SVG and PDF under ``figures/`` (for a
paper), and ``report.html`` with the figures embedded as base64 PNG, so the page can be
mailed or archived on its own. A section with no data, or
one whose metric refuses the data (pass@k with too few attempts), says so on the page
instead of failing the whole report.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import html
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from matplotlib.figure import Figure
from tqdm import tqdm

from analysis import curiosity, figures, flow, tables
from analysis.dataset import Dataset
from analysis.metrics import (
    action_type_distribution,
    at_k,
    auv,
    final_perplexity,
    memory_index,
    percentile_interval,
    percentile_score,
    perplexity_auc,
    pooled_loop_ratio,
    progress_curve,
    random_baseline,
    reset_frequency,
    unique_action_counts,
)
from analysis.metrics.explore_exploit import explore_exploit
from analysis.metrics.parameters import parameters_of
from analysis.metrics.scores import MIN_N, task_interval
from analysis.readings import Row, agent_of, base_agent
from analysis.replay import reading
from records import schema
from tasks.worldtest.turn import ACTIVE, resumable

T_MAX = 50
"""Default AUV horizon in scored steps (004 leaves it to the problem family)."""


@dataclass(frozen=True)
class Section:
    """One part of the report: a table, an optional figure, the metrics it applies."""

    name: str
    title: str
    table: Callable[[Dataset], list[Row]]
    figure: Callable[[Dataset, list[Row]], Figure | None] | None = None
    metrics: tuple[tuple[Callable[..., Any], dict[str, Any]], ...] = ()
    beside: tuple[tuple[str, Callable[[Dataset], list[Row]]], ...] = ()
    """Further tables shown under this one, each written as ``<name>.csv`` too."""


@dataclass
class Result:
    """What a section produced: rows, a figure, or a note saying why there is nothing."""

    section: Section
    rows: list[Row]
    image: Figure | None
    note: str | None
    beside: tuple[tuple[str, list[Row]], ...] = ()


def sections(t_max: int = T_MAX, k: int = 1, colours: dict[str, str] | None = None,
             payments: flow.Payments | None = None) -> list[Section]:
    """The report's sections in page order, with the parameters the CLI chose; every
    figure draws each agent in its one colour of ``colours`` (``figures.agent_colours``);
    the participant flow counts payments with ``payments`` (each study's decisions)."""
    percentile = ((percentile_score, {}), (percentile_interval, {}))
    perplexity = ((perplexity_auc, {}), (final_perplexity, {}))
    c = colours
    return [
        Section("task_type_scores", "People against each model, per task type, with 95% "
                "intervals (002 Fig. 4)", tables.headline,
                lambda d, rows: figures.task_type_figure(rows, c),
                ((percentile_score, {}), (task_interval, {}))),
        Section("participant_flow", "Participant flow: arrivals to inclusion, each drop with "
                "its reason; completion time and payments", participant_flow,
                lambda d, rows: figures.flow_figure(rows),
                beside=(("participant_summary",
                         lambda d: flow.summary_rows(d.participants, payments)),)),
        Section("problem_scores", "Score by problem: humans' 80th percentile with n, mean and "
                "bootstrap 95% interval", tables.problem_scores,
                lambda d, rows: figures.human_interval_figure(rows, c), percentile),
        Section("environment_scores", "Score by environment (002 Table E.1, Fig. 6a)",
                tables.environment_scores, lambda d, rows: figures.environment_figure(rows, c),
                percentile),
        Section("action_types", "Action-type distribution (002 Fig. 5)", tables.action_types,
                lambda d, rows: figures.action_type_figure(rows),
                ((action_type_distribution, {}),)),
        Section("unique_actions", "Unique clicks and directional actions (002 Table E.2)",
                tables.unique_actions, metrics=((unique_action_counts, {}),)),
        Section("reset_rates", "Reset frequency (002 Fig. 6d)", tables.reset_rates,
                lambda d, rows: figures.reset_figure(rows, c), ((reset_frequency, {}),)),
        Section("perplexity", "Normalized perplexity: AUC and final value (002 Fig. 6b, 6c), "
                "and the curves over normalized time",
                tables.perplexity,
                lambda d, rows: figures.perplexity_figure(tables.perplexity_curves(d), c),
                perplexity),
        Section("score_cost", "Score versus cost, grounding accuracy (002 Fig. 3)",
                tables.score_cost, lambda d, rows: figures.score_cost_figure(rows, c)),
        Section("random_baseline", "Random-agent baseline (002 Table E.3)",
                tables.random_baseline_rows, metrics=((random_baseline, {}),)),
        Section("progress", "Progress rate, easy and hard problems (001)", tables.progress_rows,
                lambda d, rows: figures.progress_figure(tables.progress_curves(d), c),
                ((progress_curve, {}),)),
        Section("auv", "Test-time improvement: AUV and loop ratio (004); loop_ratio by "
                "Eq. 2-4, loop_ratio_printed_alg1 by Algorithm 1 as printed in App. C.3",
                partial(tables.auv_rows, t_max=t_max),
                metrics=((auv, {"t_max": t_max}), (pooled_loop_ratio, {}))),
        Section("memory_index", "AUV by history setting and the memory index (004 Eq. 5)",
                partial(tables.memory_rows, t_max=t_max),
                lambda d, rows: figures.memory_figure(tables.memory_curves(d, t_max), c),
                metrics=((auv, {"t_max": t_max}), (memory_index, {}))),
        Section("at_k", f"pass@{k}, discovery@{k}, interaction@{k} (003)",
                partial(curiosity.at_k_rows, k=k), metrics=((at_k, {"k": k}),)),
        Section("explore_exploit", "Exploration and exploitation error (000 Fig. 1)",
                tables.explore_exploit_rows,
                lambda d, rows: figures.explore_exploit_figure(rows, c),
                ((explore_exploit, {}),)),
    ]


def report_colours(dataset: Dataset) -> dict[str, str]:
    """Every agent of the dataset (and each history ablation's base model) with its one
    colour for every figure of the report."""
    agents = {agent_of(e) for e in dataset}
    return figures.agent_colours(agents | {base_agent(e) for e in dataset})


def participant_flow(dataset: Dataset) -> list[Row]:
    """The flow of the selected studies' participants (``analysis.flow``)."""
    return flow.flow_rows(dataset.participants)




def run_section(section: Section, dataset: Dataset) -> Result:
    """The section's rows and figure; a refusal becomes the note shown in its place."""
    try:
        rows = section.table(dataset)
    except ValueError as refusal:
        return Result(section, [], None, f"Omitted: {refusal}.")
    if not rows:
        return Result(section, [], None, "No data for this section in the selected episodes.")
    image = section.figure(dataset, rows) if section.figure else None
    beside = tuple((name, table(dataset)) for name, table in section.beside)
    return Result(section, rows, image, None, beside)


def replay_all(dataset: Dataset, progress: bool = True) -> None:
    """Replay once each attempt whose replay the sections read (``tables.replayed``),
    with a progress bar: the longest part of a large report. One that does not replay
    to its record is left to the sections that read it, which say so."""
    for episode in tqdm(tables.replayed(dataset), desc="replaying attempts", unit="attempt",
                        file=sys.stderr, disable=not progress):
        with contextlib.suppress(ValueError):
            reading(episode)


def write_report(dataset: Dataset, out: Path, *, t_max: int = T_MAX, k: int = 1,
                 progress: bool = True, payments: flow.Payments | None = None) -> Path:
    """Write every table as CSV and ``report.html`` into ``out``; return the page's path.
    ``payments`` gives each study's payment decisions (``gridstudy report`` reads them
    with the study's own rule); without it the flow says they were not read."""
    out.mkdir(parents=True, exist_ok=True)
    chosen = sections(t_max, k, report_colours(dataset), payments)
    replay_all(dataset, progress)
    results = [run_section(s, dataset)
               for s in tqdm(chosen, desc="report", unit="section", file=sys.stderr,
                             disable=not progress)]
    for result in results:
        if result.rows:
            write_csv(out / f"{result.section.name}.csv", result.rows)
        for name, rows in result.beside:
            if rows:
                write_csv(out / f"{name}.csv", rows)
        if result.image is not None:
            figures.save(result.image, out / "figures", result.section.name)
    for name, rows in (("attempt_outcomes", tables.attempt_outcomes(dataset)),
                       ("published_scores", tables.published_scores(dataset))):
        if rows:
            write_csv(out / f"{name}.csv", rows)
    page = out / "report.html"
    page.write_text(render_page(dataset, results), encoding="utf-8")
    return page


def write_csv(path: Path, rows: Sequence[Row]) -> None:
    """Rows as CSV, columns in first-seen order; missing values as empty cells."""
    columns = list(dict.fromkeys(name for row in rows for name in row))
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        writer.writerows(rows)


# -- the page -----------------------------------------------------------------------------


def render_page(dataset: Dataset, results: Sequence[Result]) -> str:
    """The HTML page: what it covers, the first section (people against each model per
    task type), the warnings, the participant flow, the data used, metric parameters,
    then the other sections."""
    template = Template(resources.files("analysis").joinpath("templates/report.html").read_text())
    first, second, rest = results[:1], results[1:2], results[2:]
    return template.substitute(
        source=html.escape(dataset.source),
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        scope="".join(f'<p class="scope">{html.escape(line)}</p>' for line in dataset.scope),
        headline="\n".join(render_section(r) for r in first),
        flow="\n".join(render_section(r) for r in second),
        warnings="".join(f'<p class="warning">{html.escape(w)}</p>'
                         for w in warning_lines(dataset)),
        header=data_used(dataset),
        parameters=html_table(parameter_rows(results)),
        sections="\n".join(render_section(r) for r in rest),
    )


def data_used(dataset: Dataset) -> str:
    """The studies, episodes per agent (counted and excluded), how each agent's attempts
    ended, the harness's scores of autumnbench-profile runs, and the exclusion reasons."""
    studies = sorted({e.study_id or "(none)" for e in dataset})
    return (f"<p>Studies: {html.escape(', '.join(studies) or 'none')}.</p>"
            + html_table(episode_counts(dataset))
            + "<h3>How attempts ended</h3><p>An attempt a model could not finish (invalid "
              "replies, turn limit, budget) is abandoned and scores 0; an incomplete one "
              "(error, interrupted, active) is left out of the scores until it is resumed.</p>"
            + html_table(tables.attempt_outcomes(dataset)) + published(dataset)
            + "<h3>Exclusions</h3>"
            + (html_table(exclusion_rows(dataset)) or "<p>None.</p>"))


def published(dataset: Dataset) -> str:
    """The scores of runs played by the autumnbench profile as the published harness
    gives them, beside gridstudy's (nothing when there are none)."""
    rows = tables.published_scores(dataset)
    if not rows:
        return ""
    return ("<h3>Scores as the published harness gives them</h3><p>Runs played with "
            "<code>--protocol autumnbench</code>: a wrong option, an early change answer "
            "or a change never triggered scores -1 there and 0 in gridstudy. The harness "
            "score follows the paper's definition; the harness's code takes the change-"
            "detection formula at the number of test turns instead of the chosen frame, "
            "and its published numbers include that reading (the last column).</p>"
            + html_table(rows))


def warning_lines(dataset: Dataset) -> list[str]:
    """What a reader must know before reading any score: per model agent, attempts that
    are incomplete and so not scored; problems with few counted attempts by people;
    how many of people's attempts are excluded."""
    incomplete = Counter((agent_of(e), e.status) for e in dataset if e.is_incomplete)
    attempts = Counter(agent_of(e) for e in dataset)
    kinds = {agent_of(e): e.agent_kind for e in dataset}
    lines = []
    for agent in sorted({a for a, _ in incomplete}):
        parts = ", ".join(f"{n} {status}" for (a, status), n in sorted(incomplete.items())
                          if a == agent)
        total = sum(n for (a, _), n in incomplete.items() if a == agent)
        if kinds[agent] == schema.UNKNOWN:  # no run to resume
            lines.append(f"Warning: {total} of {attempts[agent]} plays recorded outside any "
                         f"study and any run did not finish ({parts}); they are not in the "
                         "scores.")
            continue
        if kinds[agent] == schema.RL:  # the researcher's own process plays them
            stopped = (" An active one's training process, unless it is still running, "
                       "stopped before the episode ended (killed, or interrupted outside a "
                       "`with` block and without `env.close()`, which record it as "
                       "abandoned); nothing resumes a Gymnasium episode."
                       if incomplete[(agent, "active")] else "")
            lines.append(f"Warning: {agent} has {total} of {attempts[agent]} episodes "
                         f"unfinished ({parts}); they are not in its scores.{stopped}")
            continue
        again = sum(e.status == ACTIVE or resumable(e.status, e.info) for e in dataset
                    if e.is_incomplete and agent_of(e) == agent)
        rerun = ("Run the same `gridstudy agent run` command again to resume "
                 + ("them." if again == total else f"the {again} that can be; the others "
                    "ended in errors a rerun would meet again (each one's info.reason says "
                    "why).") if again else
                 "A rerun does not resume them: they ended in errors it would meet again "
                 "(each one's info.reason says why).")
        lines.append(f"Warning: {agent} has {total} of {attempts[agent]} attempts incomplete "
                     f"({parts}); they are not in its scores. {rerun}")
    lines += _version_lines(dataset) + _unknown_lines(dataset)
    thin = {problem: n for problem, n in _attempts_per_problem(dataset).items()
            if n < SMALL_N}
    if thin:
        shown = ", ".join(f"{p} ({n})" for p, n in sorted(thin.items())[:5])
        more = f" and {len(thin) - 5} more" if len(thin) > 5 else ""
        lines.append(f"Warning: small n: {len(thin)} problem(s) have fewer than {SMALL_N} "
                     f"counted attempts by people ({shown}{more}); their 80th percentile is "
                     f"loosely determined, and below {MIN_N} it has no interval (n too small).")
    played = [e for e in dataset if e.is_human and not (e.info or {}).get("tutorial")]
    excluded = sum(not e.is_included for e in played)
    if excluded:
        lines.append(f"Note: {excluded} of {len(played)} attempts by people at the study's "
                     "problems are excluded and left out of every score (reasons under "
                     "Exclusions; practice games are never scored).")
    return lines


def _version_lines(dataset: Dataset) -> list[str]:
    """A warning per problem whose attempts were played on more than one version of its
    environment (``info.environment_version``: its program or definition was edited
    while the data was being collected); attempts recorded before versions were kept
    have none and are not counted."""
    versions: dict[str, Counter] = {}
    for episode in dataset:
        version = (episode.info or {}).get(schema.VERSION_KEY)
        if version:
            versions.setdefault(episode.problem_id, Counter())[version] += 1
    lines = []
    for problem, counts in sorted(versions.items()):
        if len(counts) > 1:
            shown = ", ".join(f"{n} on {version}" for version, n in counts.most_common())
            lines.append(f"Warning: {problem} was played on {len(counts)} versions of its "
                         f"environment (its program or problem was edited while the data "
                         f"was collected): {shown}; its scores pool them. Each attempt's "
                         f"version is `{schema.VERSION_KEY}` in its info.")
    return lines


def _unknown_lines(dataset: Dataset) -> list[str]:
    """A warning when problems of the data are not registered where the report runs (a
    report run outside the folder holding the researcher's library, or without
    ``$GRIDSTUDY_LIBRARY``): what needs the environment is read from the frames or left
    out for their attempts, and the figures differ from the ones the library gives."""
    from analysis.replay import known_problem
    from tasks.library import library_root

    attempts = Counter(e.problem_id for e in dataset)
    unknown = sorted(p for p in attempts if known_problem(p) is None)
    if not unknown:
        return []
    shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
    return [f"Warning: {len(unknown)} problem(s) of the data are not registered here "
            f"({shown}: {sum(attempts[p] for p in unknown)} attempts). Their scores are "
            "read from the record, but what needs the environment is not: their loop ratio "
            "counts repeated frames instead of the environment's full state, progress rate, "
            "exploration and exploitation errors, discovery@k and interaction@k leave them "
            "out, and their difficulty is unlabelled. Run the report with the library they were "
            f"played from (the library read here is {library_root().resolve()}; set "
            "$GRIDSTUDY_LIBRARY)."]


SMALL_N = 10
"""Counted attempts by people per problem below which the report warns (002 had 20)."""


def _attempts_per_problem(dataset: Dataset) -> Counter:
    return Counter(e.problem_id for e in dataset.included() if e.is_human)


def episode_counts(dataset: Dataset) -> list[Row]:
    """Per agent: episodes loaded, counted, incomplete (a model's, not yet scored) and
    excluded (by a rule or by hand)."""
    loaded = Counter(agent_of(e) for e in dataset)
    kept = Counter(agent_of(e) for e in dataset.included())
    incomplete = Counter(agent_of(e) for e in dataset if e.is_incomplete)
    return [{"agent": a, "episodes": n, "counted": kept[a], "incomplete": incomplete[a],
             "excluded": n - kept[a] - incomplete[a]} for a, n in sorted(loaded.items())]


def exclusion_rows(dataset: Dataset) -> list[Row]:
    """How many episodes each exclusion reason left out, per agent (incomplete model
    attempts are in "How attempts ended", not here)."""
    reasons = Counter((agent_of(e), reason) for e in dataset if not e.is_incomplete
                      for reason in e.exclusion_reasons)
    return [{"agent": a, "reason": r, "episodes": n} for (a, r), n in sorted(reasons.items())]


def parameter_rows(results: Sequence[Result]) -> list[Row]:
    """Each metric a section applied, with the parameters it was computed with."""
    seen: dict[str, str] = {}
    for result in results:
        for metric, used in result.section.metrics:
            params = parameters_of(metric, **used)
            seen[metric.__name__] = ", ".join(f"{k}={v!r}" for k, v in params.items()) or "none"
    return [{"metric": name, "parameters": text} for name, text in sorted(seen.items())]


def render_section(result: Result) -> str:
    section = result.section
    parts = [f'<section id="{section.name}"><h2>{html.escape(section.title)}</h2>']
    if result.note:
        parts.append(f'<p class="note">{html.escape(result.note)}</p>')
    if result.image is not None:
        data = base64.b64encode(figures.png(result.image)).decode("ascii")
        parts.append(f'<img alt="{html.escape(section.title)}" src="data:image/png;base64,{data}">')
    parts.append(html_table(result.rows))
    parts.extend(html_table(rows) for _, rows in result.beside)
    parts.append("</section>")
    return "\n".join(parts)


def html_table(rows: Sequence[Row]) -> str:
    """Rows as an HTML table; numbers right-aligned to three decimals, text left."""
    if not rows:
        return ""
    columns = list(dict.fromkeys(name for row in rows for name in row))
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(cell(row.get(c)) for c in columns) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def cell(value: Any) -> str:
    if isinstance(value, float):
        return f"<td>{value:.3f}</td>"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"<td>{value}</td>"
    return f'<td class="text">{html.escape("" if value is None else str(value))}</td>'
