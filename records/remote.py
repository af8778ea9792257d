"""What every client of a remote service shares (an LLM provider, Prolific's API): how
long to wait before trying again, what a server's ``Retry-After`` asks for, and how an
answer is read whole within a deadline."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

LONGEST_WAIT = 600.0
"""Seconds a ``Retry-After`` may ask for. A server asking for longer (a daily quota
spent, a proxy gone wrong; ``Retry-After: 86400``) ends the request with its words,
instead of holding the run for hours without a word."""
LARGEST_ANSWER = 32 * 1024 * 1024
"""Bytes an answer may have: a longer one is a service or a proxy gone wrong, given up
on instead of filling memory."""


class WaitTooLong(Exception):
    """A server asked to wait longer than :data:`LONGEST_WAIT` before trying again."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"it asks to wait {seconds:.0f} s before trying again (longer than "
                         f"{LONGEST_WAIT:.0f} s)")
        self.seconds = seconds


class NotWhole(httpx.TransportError):
    """An answer not read whole: too slow to finish, or too long (the message says which)."""


@dataclass
class Backoff:
    """Exponential backoff: ``base * 2**attempt`` capped at ``cap``, minus up to
    ``jitter`` of it at random; never less than a server's ``Retry-After``."""

    base: float = 1.0
    cap: float = 60.0
    jitter: float = 0.5
    retries: int = 5

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None = None) -> float:
        """Seconds to wait before try ``attempt + 1``; :class:`WaitTooLong` when the
        server's ``retry_after`` is over :data:`LONGEST_WAIT`."""
        if retry_after is not None and retry_after > LONGEST_WAIT:
            raise WaitTooLong(retry_after)
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


def request_whole(client: httpx.Client, method: str, url: str, *, timeout: float,
                  **options: Any) -> httpx.Response:
    """One request, its answer read whole within ``timeout`` seconds of sending it.

    httpx's own timeout bounds each read, not the whole answer: a service or a proxy
    that keeps a slow request open by sending a byte of whitespace now and then would
    hold it for as long as it likes. The answer is read piece by piece and given up at
    the first piece after the deadline (so within ``timeout`` plus the longest silence,
    itself at most ``timeout``), or past :data:`LARGEST_ANSWER` bytes: :class:`NotWhole`,
    which callers take as a transport error (retried where a retry is safe)."""
    deadline = time.monotonic() + timeout
    too_long = f"sent an answer longer than {LARGEST_ANSWER // 2 ** 20} MB"
    with client.stream(method, url, **options) as response:
        raw = bytearray()
        for piece in response.iter_raw():
            raw += piece
            if len(raw) > LARGEST_ANSWER:
                raise NotWhole(too_long)
            if time.monotonic() > deadline:
                raise NotWhole(f"did not finish its answer within {timeout:g} s")
    whole = httpx.Response(response.status_code, headers=response.headers,
                           stream=httpx.ByteStream(bytes(raw)), request=response.request)
    if len(whole.read()) > LARGEST_ANSWER:  # once decompressed
        raise NotWhole(too_long)
    return whole
