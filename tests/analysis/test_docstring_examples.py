"""The examples in the metrics' docstrings are true (they teach the definitions)."""

import doctest
import importlib

import pytest

MODULES = [
    *(f"analysis.metrics.{name}" for name in (
        "actions", "at_k", "loops", "parameters", "perplexity", "progress", "records",
        "scores", "tti",
    )),
    # the random baseline and the input checks, re-exported by analysis.metrics.baseline
    # and analysis.metrics.checks (whose own docstrings then hold no example)
    "tasks.worldtest.baseline",
    "analysis.scope",
    "analysis.figures",
    "analysis.columns",
    "records.flow",
    "records.schema",  # what a text the record cannot hold keeps
    "study_server.arrivals",  # what an address counts as
    "consent.definition",  # what a study file's number may be
    "study_server.clock",  # the clock offset, and which times a client may send
    "tasks.autumn.render",  # which cell expressions the renderer may keep
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0
