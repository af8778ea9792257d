"""How often a dashboard login may be tried: growing delays per address and per (address,
user name), kept in the database so that every worker counts the same attempts.

Measured before: 30 wrong passwords for the researcher's name from one address locked
the researcher out everywhere for a minute (the limit counted the user name alone), and
with two workers each kept its own count, so a guesser had twice the tries.

Each failed attempt is a ``loginfailure`` row under two keys: its address, and its
address with the user name (hashed: the name is not kept in clear). Before a password is
checked, each key's failures of the last :data:`WINDOW` seconds decide how long the next
attempt must wait after the last failure: nothing for the first ``free`` ones, then a
delay that doubles with every further failure, up to :data:`LONGEST`. A refused attempt
costs no password hash and is not counted again. A guesser at one address slows only
that address; the right password from another address is never held up by it. A
successful login clears its (address, user name) failures.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from sqlalchemy import delete, func, select
from sqlalchemy.engine import Engine

from records.models import LoginFailure
from records.offload import blocking

WINDOW = 24 * 3600.0
"""Seconds a failure counts (and is kept)."""
LONGEST = 15 * 60.0
"""The longest wait between two attempts, in seconds."""


@dataclass(frozen=True)
class Limits:
    """Free failures per (address, user name) and per address, then the first delay."""

    per_pair: int = 5
    per_address: int = 20
    first_delay: float = 1.0


def wait_for(failures: int, last: float | None, free: int, first_delay: float,
             now: float) -> float:
    """Seconds still to wait after ``failures`` failures, the last at ``last``.

    >>> wait_for(5, 100.0, free=5, first_delay=1.0, now=100.2)
    0.8
    >>> wait_for(8, 100.0, free=5, first_delay=1.0, now=104.0)
    4.0
    >>> wait_for(4, 100.0, free=5, first_delay=1.0, now=100.0)
    0.0
    """
    if failures < free or last is None:
        return 0.0
    delay = min(LONGEST, first_delay * 2 ** (failures - free))
    return round(max(0.0, last + delay - now), 3)


def keys(address: str, username: str) -> tuple[str, str]:
    """The address's key and the (address, user name) key; the name is hashed."""
    name = hashlib.sha256(username.encode("utf-8", "replace")).hexdigest()[:16]
    return f"addr:{address}", f"pair:{address} {name}"


@blocking
def retry_after(engine: Engine, address: str, username: str, limits: Limits,
                now: float | None = None) -> float:
    """Seconds this attempt must still wait (0: check the password)."""
    now = time.time() if now is None else now
    address_key, pair_key = keys(address, username)
    with engine.connect() as db:
        rows = db.execute(
            select(LoginFailure.key, func.count(), func.max(LoginFailure.at))
            .where(LoginFailure.key.in_((address_key, pair_key)), LoginFailure.at >= now - WINDOW)
            .group_by(LoginFailure.key)).all()
    found = {key: (count, last) for key, count, last in rows}
    pair, by_address = found.get(pair_key, (0, None)), found.get(address_key, (0, None))
    return max(wait_for(*pair, limits.per_pair, limits.first_delay, now),
               wait_for(*by_address, limits.per_address, limits.first_delay, now))


@blocking
def failed(engine: Engine, address: str, username: str, now: float | None = None) -> None:
    """Count a failed attempt (and forget failures older than :data:`WINDOW`)."""
    now = time.time() if now is None else now
    with engine.begin() as db:
        db.execute(LoginFailure.__table__.insert(),
                   [{"key": key, "at": now} for key in keys(address, username)])
        db.execute(delete(LoginFailure).where(LoginFailure.at < now - WINDOW))


@blocking
def succeeded(engine: Engine, address: str, username: str) -> None:
    """The right password: this (address, user name) starts afresh."""
    with engine.begin() as db:
        db.execute(delete(LoginFailure).where(LoginFailure.key == keys(address, username)[1]))
