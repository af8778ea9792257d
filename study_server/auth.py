"""Researcher login and CSRF protection for every form of the server.

Passwords are stored only as werkzeug.security's salted hashes. The CSRF mechanism is
the synchroniser-token pattern, small enough to read in full: one random token per
browser session, kept in Flask's signed session cookie, rendered into every form as
``csrf_token()`` and compared in constant time on every POST of a protected blueprint.
(A library such as Flask-WTF would do the same; this avoids a dependency for ten lines.)
"""

from __future__ import annotations

import functools
import hmac
import secrets
from collections.abc import Callable
from typing import Any

from flask import Flask, abort, current_app, g, redirect, request, session, url_for
from sqlalchemy.engine import Engine
from sqlmodel import Session
from werkzeug.security import check_password_hash, generate_password_hash

from records.models import Admin
from records.offload import off_loop_for_pages

CSRF_FIELD = "csrf_token"


def init_app(app: Flask) -> None:
    """Make ``csrf_token()`` available in every template and the check to blueprints."""
    app.jinja_env.globals["csrf_token"] = csrf_token
    app.extensions["gridstudy.csrf"] = check_csrf


def csrf_token() -> str:
    """This browser session's token (created on first use)."""
    token = session.get(CSRF_FIELD)
    if not token:
        token = session[CSRF_FIELD] = secrets.token_urlsafe(32)
    return token


def check_csrf() -> None:
    """``before_request`` hook: refuse a POST whose form token does not match (400)."""
    if request.method != "POST":
        return
    sent = request.form.get(CSRF_FIELD, "")
    expected = session.get(CSRF_FIELD, "")
    if not expected or not hmac.compare_digest(sent, expected):
        abort(400, "the form has expired or did not come from this site; reload the page and try again")


def create_admin(engine: Engine, username: str, password: str) -> None:
    """Create or update an admin account."""
    if not username or len(password) < 8:
        raise ValueError("an admin needs a username and a password of at least 8 characters")
    with Session(engine) as db:
        admin = db.get(Admin, username) or Admin(username=username, password_hash="")
        admin.password_hash = generate_password_hash(password)
        db.add(admin)
        db.commit()


_UNKNOWN_USER_HASH = generate_password_hash("no admin has this password")
"""Checked when the username is unknown, so both answers take as long."""


def verify(engine: Engine, username: str, password: str) -> bool:
    """Whether ``password`` is ``username``'s. The slow hash runs off the event loop (a
    gevent server would otherwise stall every game while it runs), in the threads kept
    for pages (a burst of attempts waits for those, not for the games'), and an unknown
    user costs the same hash as a known one."""
    with Session(engine) as db:
        admin = db.get(Admin, username[:200])
    stored = admin.password_hash if admin is not None else _UNKNOWN_USER_HASH
    matches = off_loop_for_pages(check_password_hash, stored, password[:1000])
    return admin is not None and matches


def login(engine: Engine, username: str) -> None:
    """Start an admin session (a fresh cookie, so a planted session id is useless) bound
    to a new server-side nonce."""
    session.clear()
    session["admin"] = username
    session["nonce"] = _renew_nonce(engine, username)


def logout(engine: Engine) -> None:
    """End the session here and on the server: a copy of the cookie opens nothing."""
    username = session.get("admin")
    if username:
        _renew_nonce(engine, username)
    session.clear()


def _renew_nonce(engine: Engine, username: str) -> str:
    nonce = secrets.token_urlsafe(16)
    with Session(engine) as db:
        admin = db.get(Admin, username)
        if admin is not None:
            admin.session_nonce = nonce
            db.add(admin)
            db.commit()
    return nonce


def current_admin(engine: Engine) -> str | None:
    """The logged-in admin of this request, if the cookie's nonce is still the server's."""
    return signed_in(engine, session.get("admin"), session.get("nonce"))


def signed_in(engine: Engine, username: str | None, nonce: str | None) -> str | None:
    """``username`` if it names an admin whose current login nonce is ``nonce``."""
    if not username or not nonce:
        return None
    with Session(engine) as db:
        admin = db.get(Admin, username)
    if admin is None or not admin.session_nonce or not hmac.compare_digest(admin.session_nonce, nonce):
        return None
    return username


def login_required(view: Callable[..., Any]) -> Callable[..., Any]:
    """Send anyone not logged in to the login page, then back."""

    @functools.wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        g.admin = current_admin(current_app.extensions["gridstudy.store"].engine)
        if g.admin is None:
            return redirect(url_for("dashboard.login", next=request.path))
        return view(*args, **kwargs)

    return wrapped
