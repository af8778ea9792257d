"""Data-quality signals: what a participant's browser says about how they took part.

``static/gridstudy/signals.js`` runs on every page of the flow and reports, as they
happen: the device (once per page: user agent, screen and window size, a touch screen
without a mouse), the tab hidden and shown again, the window losing and regaining focus,
idle periods (no key, click or mouse movement for :data:`IDLE_AFTER` seconds), and
key-mashing (:data:`MASHING_KEYS` keys or more within one second). Each arrives as one
row of the ``signal`` table (:func:`parse` checks it first), tied to the game on the
page, if any.

:func:`summarise` turns an attempt's or a participant's signals into flags (seconds
hidden, focus losses, idle periods, mashing bursts, the devices seen), which the export,
the dashboard and the study file's exclusion rules (:func:`consent.exclusion.quality_reason`)
read. Pure functions: the flow and the server own the database.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from consent.definition import is_number

KINDS = ("device", "hidden", "shown", "blur", "focus", "idle", "active", "mashing")
"""What a signal can report (the ``kind`` column)."""
IDLE_AFTER = 30
"""Seconds without any input after which the browser reports ``idle``."""
MASHING_KEYS = 10
"""Keys within one second from which the browser reports ``mashing``."""
MIN_WINDOW = (1000, 500)
"""The smallest window, in CSS pixels, in which the games fit beside their controls."""
MAX_SIGNALS = 50
"""Signals one request may carry."""
SIGNALS_PER_SECOND, SIGNALS_AHEAD = 2, 200
"""Signals a participant may have stored: :data:`SIGNALS_AHEAD`, and
:data:`SIGNALS_PER_SECOND` more for every second since they arrived. A page sends one
per event (a window switched away and back is two, key-mashing at most one a second);
without a bound one made-up participant stored 1,800 rows a second, a disk filled at
will."""
LONGEST = 86400.0
"""The longest duration a signal may report, in seconds."""
_VALUE_KEYS = {"device": ("user_agent", "screen", "window", "pixel_ratio", "touch"),
               "mashing": ("keys",), "hidden": ("leaving",)}


class SignalError(ValueError):
    """A signal that cannot be stored; the message says which field and why."""


def parse(item: Any, index: int = 0) -> dict[str, Any]:
    """One signal as sent by the browser, checked: ``{kind, client_time?, seconds?,
    value?}``; the row's fields (``kind``, ``client_time``, ``seconds``, ``value``)."""
    where = f"signal {index}"
    if not isinstance(item, Mapping):
        raise SignalError(f"{where}: expected an object, got {type(item).__name__}")
    kind = item.get("kind")
    if kind not in KINDS:
        raise SignalError(f"{where}: kind must be one of {', '.join(KINDS)}, not {str(kind)[:40]!r}")
    row: dict[str, Any] = {"kind": kind, "client_time": _number(item, "client_time", where, 1e11),
                           "seconds": _number(item, "seconds", where, LONGEST)}
    value = item.get("value") or {}
    if not isinstance(value, Mapping):
        raise SignalError(f"{where}: value must be an object")
    row["value"] = {key: _plain(value[key]) for key in _VALUE_KEYS.get(kind, ()) if key in value}
    return row


def _number(item: Mapping, name: str, where: str, most: float) -> float | None:
    value = item.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < most:
        raise SignalError(f"{where}: {name} must be a number from 0 to {most:g}")
    return float(value)


def _plain(value: Any) -> Any:
    """A device field as kept: short text, a finite number, a boolean, or a pair of
    whole numbers; anything else as null. (Python's JSON parser reads ``NaN`` and
    ``Infinity``, which no browser sends: a pair holding one answered 500, and a NaN
    reached a JSON column PostgreSQL refuses.)"""
    if isinstance(value, str):
        return value[:300]
    if isinstance(value, bool) or is_number(value):
        return value
    if isinstance(value, list) and len(value) == 2 and all(is_number(v) for v in value):
        return [int(v) for v in value]
    return None


def too_small(window: Any, touch: Any = False) -> bool:
    """Whether a device cannot play: a window smaller than :data:`MIN_WINDOW`, or a touch
    screen without a mouse (the games need a keyboard).

    >>> too_small([1280, 720]), too_small([390, 844]), too_small([1280, 720], touch=True)
    (False, True, True)
    """
    if touch is True:
        return True
    if not (isinstance(window, list) and len(window) == 2):
        return False
    return window[0] < MIN_WINDOW[0] or window[1] < MIN_WINDOW[1]


def summarise(signals: Iterable[Any]) -> dict[str, Any]:
    """Flags from signal rows (anything with ``kind``, ``seconds``, ``value``):

    * ``hidden_seconds``, ``hidden_count``: time and times the tab was hidden (not
      counting the page being left: a form sent, a link followed);
    * ``focus_losses``, ``unfocused_seconds``: times and time the window lost focus (a
      loss never regained counts until the last signal);
    * ``idle_periods``, ``idle_seconds``: idle periods of :data:`IDLE_AFTER` s or more,
      whole (a period never ended, the page left while idle, counts what its ``idle``
      signal said);
    * ``mashing``: bursts of :data:`MASHING_KEYS` or more keys in a second;
    * ``devices``: the user agents seen; ``small_window``: a page was shown in a window
      too small to play (:func:`too_small`).
    """
    flags: dict[str, Any] = {"hidden_seconds": 0.0, "hidden_count": 0, "focus_losses": 0,
                             "unfocused_seconds": 0.0, "idle_periods": 0, "idle_seconds": 0.0,
                             "mashing": 0, "devices": [], "small_window": False}
    idle_counted = 0.0  # of the idle period still open: what its idle signal said
    blurred_at = None  # when the window lost focus, while it has not come back
    last_seen = None  # the participant's clock at the latest signal
    for signal in signals:
        kind, seconds, value = signal.kind, signal.seconds or 0.0, signal.value or {}
        last_seen = getattr(signal, "client_time", None) or last_seen
        if kind == "hidden":
            flags["hidden_count"] += not value.get("leaving")
        elif kind == "shown":
            flags["hidden_seconds"] += seconds
        elif kind == "blur":
            flags["focus_losses"] += 1
            blurred_at = getattr(signal, "client_time", None)
        elif kind == "focus":
            flags["unfocused_seconds"] += seconds
            blurred_at = None
        elif kind == "idle":  # idle this long already; the period may never be closed
            flags["idle_periods"] += 1
            flags["idle_seconds"] += seconds
            idle_counted = seconds
        elif kind == "active":  # the whole period: what its idle signal counted, and more
            flags["idle_seconds"] += max(0.0, seconds - idle_counted)
            idle_counted = 0.0
        elif kind == "mashing":
            flags["mashing"] += 1
        elif kind == "device":
            agent = value.get("user_agent")
            if agent and agent not in flags["devices"]:
                flags["devices"].append(agent)
            flags["small_window"] |= too_small(value.get("window"), value.get("touch"))
    if blurred_at is not None and last_seen is not None:  # never came back: until the last signal
        flags["unfocused_seconds"] += max(0.0, last_seen - blurred_at)
    for name in ("hidden_seconds", "unfocused_seconds", "idle_seconds"):
        flags[name] = round(flags[name], 1)
    return flags
