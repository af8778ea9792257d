"""The parameters a metric was computed with, read from the metric itself.

Every metric's tunable choices are keyword parameters with defaults (docs/metrics.md's
defaults). Their signature is the single place those defaults live, so a report that
wants to print "the parameters it used" asks the function rather than keeping a copy
that could drift.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def parameters_of(metric: Callable[..., Any], **used: Any) -> dict[str, Any]:
    """The parameters of ``metric`` with their defaults, overridden by ``used``.

    Parameters with a default are always listed; one without (``t_max`` of
    :func:`analysis.metrics.tti.auv`) only when given in ``used``. A name in ``used``
    that ``metric`` does not take is an error, so a report cannot print a parameter that
    was never applied.

    >>> from analysis.metrics.perplexity import normalized_perplexity_curve
    >>> parameters_of(normalized_perplexity_curve, window=20)
    {'window': 20, 'include': ()}
    """
    names = inspect.signature(metric).parameters
    unknown = sorted(set(used) - set(names))
    if unknown:
        raise ValueError(
            f"{metric.__name__} has no parameter {', '.join(unknown)}; "
            f"it takes {', '.join(names) or 'nothing'}"
        )
    defaults = {
        name: parameter.default
        for name, parameter in names.items()
        if parameter.default is not inspect.Parameter.empty
    }
    return {**defaults, **used}
