"""Input checks shared by the metrics, with messages that say what was expected."""

from __future__ import annotations

from typing import Any

import numpy as np


def is_whole(value: Any, minimum: int) -> bool:
    """True for an int (or numpy integer, not a bool) of at least ``minimum``."""
    return (
        not isinstance(value, bool) and isinstance(value, int | np.integer) and value >= minimum
    )


def require_whole(name: str, value: Any, minimum: int = 1, unit: str = "") -> None:
    """Raise ``ValueError`` unless ``value`` is a whole number ``>= minimum``.

    >>> require_whole("window", 0, unit="symbols per window")
    Traceback (most recent call last):
    ...
    ValueError: window must be a whole number >= 1 (symbols per window), not 0
    """
    if not is_whole(value, minimum):
        unit = f" ({unit})" if unit else ""
        raise ValueError(f"{name} must be a whole number >= {minimum}{unit}, not {value!r}")
