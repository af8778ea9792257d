"""The examples in the metrics' docstrings are true (they teach the definitions)."""

import doctest
import importlib

import pytest

MODULES = [
    "actions", "at_k", "baseline", "checks", "loops", "parameters", "perplexity", "progress",
    "records", "scores", "tti",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"analysis.metrics.{name}")
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0
