"""Credentials for the agent API: tokens a researcher creates, scopes and revokes.

A token is shown once, when it is created (``gridstudy token create NAME``), and only
its SHA-256 is stored: a random 32-byte token needs no slow hash, and a leaked database
leaks no usable token. A token scoped to a study (``--study ID``) may create runs in that
study only; an unscoped one, runs outside every study only. Every run remembers the token
that created it, and only that token may play, read or end its episodes.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from records.models import ApiToken, Study, utcnow

PREFIX = "gs_"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create(engine: Engine, name: str, study_id: str | None = None) -> str:
    """A new token called ``name``; ``ValueError`` when the name is taken or the study
    unknown. Returns the token itself, which is stored nowhere."""
    if not name or len(name) > 64:
        raise ValueError("a token's name is 1 to 64 characters")
    token = PREFIX + secrets.token_urlsafe(32)
    with Session(engine) as db:
        if db.get(ApiToken, name) is not None:
            raise ValueError(f"a token called {name!r} exists; revoke it or choose another name")
        if study_id is not None and db.get(Study, study_id) is None:
            raise ValueError(f"no study {study_id!r}; create it first (gridstudy study create)")
        db.add(ApiToken(name=name, token_hash=digest(token), study_id=study_id))
        db.commit()
    return token


def revoke(engine: Engine, name: str) -> None:
    """From now on the token ``name`` opens nothing; ``ValueError`` when there is none."""
    with Session(engine) as db:
        row = db.get(ApiToken, name)
        if row is None:
            raise ValueError(f"no token called {name!r}")
        row.revoked_at = row.revoked_at or utcnow()
        db.add(row)
        db.commit()


def listed(engine: Engine) -> list[ApiToken]:
    """Every token, newest first (revoked ones too)."""
    with Session(engine) as db:
        return list(db.exec(select(ApiToken).order_by(ApiToken.created_at.desc())))


def holder(engine: Engine, presented: str | None) -> ApiToken | None:
    """The valid token matching ``presented``, or None."""
    if not presented or not presented.startswith(PREFIX) or len(presented) > 200:
        return None
    wanted = digest(presented)
    with Session(engine) as db:
        row = db.exec(select(ApiToken).where(ApiToken.token_hash == wanted)).first()
    if row is None or row.revoked_at is not None or not hmac.compare_digest(row.token_hash, wanted):
        return None
    return row
