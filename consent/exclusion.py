"""Exclusion rules: which attempts and participants stay out of aggregation, and why.

Pure functions over plain numbers so that the dashboard, the assignment (which counts
only included attempts) and the tests all apply the same rules. Each returns a reason a
researcher can read, or ``None`` when the rule keeps the attempt.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from consent.definition import ExclusionRules
from tasks.words import count


def participant_reason(rules: ExclusionRules, attention_results: Iterable[bool]) -> str | None:
    """Why a participant is excluded as a whole (failed attention checks), if at all."""
    failed = sum(1 for ok in attention_results if not ok)
    if failed > rules.max_failed_attention_checks:
        return (
            f"failed {count(failed, 'attention check')} "
            f"(at most {rules.max_failed_attention_checks} allowed)"
        )
    return None


def longest_idle(input_times: Sequence[float], start: float, end: float) -> float:
    """The longest stretch in seconds with no input between ``start`` and ``end``.

    >>> longest_idle([2.0, 3.0], 0.0, 10.0)
    7.0
    """
    marks = [start, *sorted(input_times), end]
    return max(b - a for a, b in zip(marks, marks[1:]))


def episode_reason(
    rules: ExclusionRules, input_times: Sequence[float], start: float, end: float,
    solved: bool = False,
) -> str | None:
    """Why one finished attempt is excluded (too few inputs, or idle too long), if at all.
    A solved attempt is never excluded for having few inputs: solving with few actions
    is efficiency, not disengagement."""
    if len(input_times) < rules.min_input_actions and not solved:
        return f"{len(input_times)} inputs (at least {rules.min_input_actions} required)"
    idle = longest_idle(input_times, start, end)
    if idle > rules.max_idle_seconds:
        return f"idle for {idle:.0f} s (at most {rules.max_idle_seconds:.0f} s allowed)"
    return None


def quality_reason(rules: ExclusionRules, flags: dict) -> str | None:
    """Why an attempt is excluded by its data-quality flags
    (:func:`consent.quality.summarise`), if a rule the study file set says so."""
    hidden, losses, mashing = flags.get("hidden_seconds", 0), flags.get("focus_losses", 0), \
        flags.get("mashing", 0)
    if rules.max_hidden_seconds is not None and hidden > rules.max_hidden_seconds:
        return (f"tab hidden for {hidden:.0f} s during play "
                f"(at most {rules.max_hidden_seconds:.0f} s allowed)")
    if rules.max_focus_losses is not None and losses > rules.max_focus_losses:
        return (f"window left {count(losses, 'time')} during play "
                f"(at most {rules.max_focus_losses} allowed)")
    if rules.max_mashing is not None and mashing > rules.max_mashing:
        return (f"{count(mashing, 'burst')} of key-mashing "
                f"(at most {rules.max_mashing} allowed)")
    return None


def unverified_reason(rules: ExclusionRules, info: dict) -> str | None:
    """Why an attempt played in the browser is excluded: its frames differ from the
    server's replay of its inputs (``study_server.browser_play``), unless the study file
    keeps such attempts."""
    if not rules.exclude_unverified or info.get("verified") is not False:
        return None
    first = info.get("first_difference") or {}
    return (f"unverified: the browser's play differs from the server's replay at tick "
            f"{first.get('tick')} ({first.get('why', 'the frame differs')})")
