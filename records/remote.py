"""What every client of a remote service shares (an LLM provider, Prolific's API): how
long to wait before trying again, and what a server's ``Retry-After`` asks for."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime


@dataclass
class Backoff:
    """Exponential backoff: ``base * 2**attempt`` capped at ``cap``, minus up to
    ``jitter`` of it at random; never less than a server's ``Retry-After``."""

    base: float = 1.0
    cap: float = 60.0
    jitter: float = 0.5
    retries: int = 5

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None = None) -> float:
        wait = min(self.cap, self.base * 2 ** attempt)
        wait *= 1.0 - self.jitter * rng.random()
        return max(wait, retry_after or 0.0)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A ``Retry-After`` header (seconds, or an HTTP date) in seconds from now.

    >>> retry_after_seconds("2"), retry_after_seconds(None), retry_after_seconds("soon")
    (2.0, None, None)
    """
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, moment - (time.time() if now is None else now))
