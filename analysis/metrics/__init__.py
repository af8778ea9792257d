"""Every metric of the analysis pipeline, as pure functions of the event record.

Each function matches its definition in docs/metrics.md and computes the same thing for a
person and for a model. Modules, one idea each:

* :mod:`~analysis.metrics.scores`: the change-detection score (the episode's own) and
  the humans' 80th-percentile aggregate with its bootstrap interval;
* :mod:`~analysis.metrics.perplexity`: normalized perplexity curve, AUC, final value;
* :mod:`~analysis.metrics.actions`: action-type distribution, unique actions, resets;
* :mod:`~analysis.metrics.progress`: progress rate (subgoal and match forms), grounding
  accuracy;
* :mod:`~analysis.metrics.tti`: AUV, its memory-window ablation, memory index;
* :mod:`~analysis.metrics.loops`: loop ratio (004 Algorithm 1);
* :mod:`~analysis.metrics.at_k`: pass@k, discovery@k, interaction@k;
* :mod:`~analysis.metrics.baseline`: the random-agent baseline table;
* :mod:`~analysis.metrics.explore_exploit`: exploration and exploitation errors on
  task-DAG maps (its own module, exported from there).

**Inputs.** Behaviour metrics take plain action texts (read as the interaction phase)
or event records, mappings or objects (filtered to applied interaction-phase actions);
:mod:`~analysis.metrics.records` says exactly how.

**Parameters.** Every choice a metric makes is a keyword parameter whose default is
docs/metrics.md's; the signature is the only place the default lives. To print the
parameters a figure was computed with, ask the function::

    parameters_of(perplexity_auc)            # {'window': 10, 'include': ()}
    parameters_of(auv, t_max=30)             # {'t_max': 30}

and pass the same overrides to the metric itself.

**No value.** A per-episode metric with nothing to measure (no exploration symbol, no
model turn) returns ``None``, never 0, so that averages leave the episode out; an
aggregate with nothing to aggregate (no scores, no episodes, fewer attempts than k)
raises ``ValueError`` saying what is missing.
"""

from analysis.metrics.actions import action_type_distribution, reset_frequency, unique_action_counts
from analysis.metrics.at_k import at_k, metric_at_k, solution_contact
from analysis.metrics.baseline import random_baseline, random_baseline_table
from analysis.metrics.loops import cycles, loop_ratio, loop_steps, pooled_loop_ratio
from analysis.metrics.parameters import parameters_of
from analysis.metrics.perplexity import (
    final_perplexity,
    normalized_perplexity_curve,
    perplexity_auc,
)
from analysis.metrics.progress import (
    grounding_accuracy,
    match_fraction,
    progress_curve,
    progress_rate,
    subgoal_fraction,
)
from analysis.metrics.records import interaction_actions
from analysis.metrics.scores import (
    TooFew,
    cd_score,
    percentile_interval,
    percentile_score,
    task_interval,
)
from analysis.metrics.tti import auv, auv_by_window, memory_index, success_curve

__all__ = [
    "TooFew",
    "action_type_distribution",
    "at_k",
    "auv",
    "auv_by_window",
    "cd_score",
    "cycles",
    "final_perplexity",
    "grounding_accuracy",
    "interaction_actions",
    "loop_ratio",
    "loop_steps",
    "match_fraction",
    "memory_index",
    "metric_at_k",
    "normalized_perplexity_curve",
    "parameters_of",
    "percentile_interval",
    "percentile_score",
    "perplexity_auc",
    "pooled_loop_ratio",
    "progress_curve",
    "progress_rate",
    "random_baseline",
    "random_baseline_table",
    "reset_frequency",
    "solution_contact",
    "subgoal_fraction",
    "success_curve",
    "task_interval",
    "unique_action_counts",
]
