"""How often a dashboard login may be tried: growing delays per address and per (address,
user name), kept in the database so that every worker counts the same attempts.

Measured before: 30 wrong passwords for the researcher's name from one address locked
the researcher out everywhere for a minute (the limit counted the user name alone), and
with two workers each kept its own count, so a guesser had twice the tries.

Each failed attempt is a ``loginfailure`` row under two keys: its address, and its
address with the user name (hashed: the name is not kept in clear). An attempt is
counted as a failure first (:func:`begin`); then each key's failures of the last
:data:`WINDOW` seconds counted before it decide how long it must wait after the last of
them: nothing for the first ``free`` ones, then a delay that doubles with every further
failure, up to :data:`LONGEST`. A refused attempt costs no password hash and its rows are
taken back, so it is not counted again; a right password takes its rows back too. A guesser at one address slows only
that address; the right password from another address is never held up by it. A
successful login clears its (address, user name) failures.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from sqlalchemy import and_, delete, func, or_, select
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


@dataclass(frozen=True)
class Attempt:
    """A login attempt as counted: the seconds it must still wait (above 0: refused, and
    not counted), and its own rows, which count it as a failure until its password is
    found right."""

    wait: float
    rows: tuple[int, ...] = ()


@blocking
def begin(engine: Engine, address: str, username: str, limits: Limits,
          now: float | None = None) -> Attempt:
    """Count this attempt as a failure, then decide from the failures counted before it
    how long it must still wait (0: check the password; more: it is refused and its rows
    taken back). Counted before it is checked, so that attempts sent at once see one
    another, on every worker: checked first and counted after the hash, a burst of 60
    wrong passwords sent together from one address was hashed and counted whole, where
    5 are free."""
    now = time.time() if now is None else now
    address_key, pair_key = keys(address, username)
    table = LoginFailure.__table__
    with engine.begin() as db:
        db.execute(delete(LoginFailure).where(LoginFailure.at < now - WINDOW))
        mine = {key: db.execute(table.insert().values(key=key, at=now)).inserted_primary_key[0]
                for key in (address_key, pair_key)}
    earlier = or_(*(and_(LoginFailure.key == key, LoginFailure.id < row)
                    for key, row in mine.items()))
    with engine.connect() as db:
        rows = db.execute(
            select(LoginFailure.key, func.count(), func.max(LoginFailure.at))
            .where(earlier, LoginFailure.at >= now - WINDOW)
            .group_by(LoginFailure.key)).all()
    found = {key: (count, last) for key, count, last in rows}
    pair, by_address = found.get(pair_key, (0, None)), found.get(address_key, (0, None))
    wait = max(wait_for(*pair, limits.per_pair, limits.first_delay, now),
               wait_for(*by_address, limits.per_address, limits.first_delay, now))
    if wait > 0:
        _forget(engine, list(mine.values()))
        return Attempt(wait)
    return Attempt(0.0, tuple(mine.values()))


@blocking
def succeeded(engine: Engine, address: str, username: str, attempt: Attempt) -> None:
    """The right password: the attempt was no failure, and this (address, user name)
    starts afresh."""
    with engine.begin() as db:
        db.execute(delete(LoginFailure).where(or_(LoginFailure.key == keys(address, username)[1],
                                                  LoginFailure.id.in_(attempt.rows))))


def _forget(engine: Engine, rows: list[int]) -> None:
    with engine.begin() as db:
        db.execute(delete(LoginFailure).where(LoginFailure.id.in_(rows)))
