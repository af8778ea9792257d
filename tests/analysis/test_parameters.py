"""Every metric can say which parameters it uses, with docs/metrics.md's defaults."""

import pytest

import analysis.metrics as metrics
from analysis.metrics import parameters_of


@pytest.mark.parametrize(
    ("metric", "used", "expected"),
    [
        (metrics.percentile_score, {}, {"q": 80}),
        (metrics.percentile_interval, {},
         {"q": 80, "resamples": 1000, "seed": 0, "level": 0.95, "min_n": 5}),
        (metrics.perplexity_auc, {}, {"window": 10, "include": ()}),
        (metrics.final_perplexity, {"include": ("noop",)}, {"window": 10, "include": ("noop",)}),
        (metrics.reset_frequency, {}, {"per": 100}),
        (metrics.auv, {"t_max": 30}, {"t_max": 30}),
        (metrics.loop_ratio, {}, {"actions": None, "overlapping": False}),
        (metrics.metric_at_k, {"k": 5}, {"k": 5}),
        (metrics.random_baseline, {}, {"timeout": 1000}),
    ],
)
def test_parameters_are_read_from_the_metric(metric, used, expected):
    assert parameters_of(metric, **used) == expected


def test_an_unknown_parameter_is_refused():
    with pytest.raises(ValueError, match="perplexity_auc has no parameter windw"):
        parameters_of(metrics.perplexity_auc, windw=20)


def test_every_exported_name_is_documented():
    for name in metrics.__all__:
        assert getattr(metrics, name).__doc__, name
