"""The preview blueprint: a researcher plays any registered problem without a study.

``/play/`` lists the registered problems; ``/play/<problem_id>`` opens a real-time
session and serves the browser client; nothing is recorded unless ``?record=1``.
``POST /play/<problem_id>/session`` opens one for scripts (the load benchmark, the remote
pygame client) and answers its token as JSON.

:func:`open_session` is how every page (this one, the study flow) starts real-time play.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flask import (
    Blueprint,
    abort,
    current_app,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)

from study_server import auth, cluster
from study_server.browser_play import BrowserSession, keep, open_browser_session, sessions, sweep
from study_server.session import GameSession, limits
from tasks import registry
from tasks.worldtest.challenge import challenges, get
from tasks.worldtest.problem import Problem

bp = Blueprint("play", __name__, url_prefix="/play")


def open_session(
    problem: Problem,
    *,
    record: bool,
    study_id: str | None = None,
    participant_id: int | None = None,
) -> GameSession:
    """A new live session of ``problem`` under the app's scheduler (ticking once a
    client joins); its episode is recorded in the app's store when ``record``."""
    config = current_app.config
    store = current_app.extensions["gridstudy.store"] if record else None
    with preview_place(participant_id is None):
        owner = None
        if participant_id is None:  # a preview: only the researcher who opened it may join it
            owner = auth.current_admin(current_app.extensions["gridstudy.store"].engine)
        try:
            session = GameSession.create(problem, store, study_id=study_id, owner=owner,
                                         participant_id=participant_id, **limits(config))
        except (ValueError, OSError) as error:  # AutumnError is a ValueError
            abort(422, f"{problem.env_id} cannot be played: "
                       f"{' '.join(str(error).split())[:300]}")
        return cluster.keep(current_app, session)


class _Opening:
    """Previews being opened on this worker: asked for, not yet kept."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0


@contextmanager
def preview_place(preview: bool = True) -> Iterator[None]:
    """A place among the ``MAX_PREVIEWS`` previews open at once, played by the server or
    in the browser, for one being opened (503 when there is none): counted from the
    moment it is asked for until it is kept, since opening one waits on the database and
    the program's compilation. Counted only when kept, 40 asked for at once under a cap
    of 5 opened 40."""
    if not preview:
        yield
        return
    app = current_app._get_current_object()
    limit = int(app.config["MAX_PREVIEWS"])
    opening = app.extensions.setdefault("gridstudy.previews_opening", _Opening())
    sweep(app)  # the previews played in the browser that no page came to are let go first
    with opening.lock:
        held = sum(played.participant_id is None for played in sessions(app).values())
        if app.extensions["gridstudy.realtime"].preview_count() + held + opening.count >= limit:
            abort(503, f"{limit} previews are open already; try again in a minute")
        opening.count += 1
    try:
        yield
    finally:
        with opening.lock:
            opening.count -= 1


OPEN, RESEARCHERS, OFF = "open", "researchers", "off"
"""Who may open previews (the ``PREVIEW`` config): anyone (``gridstudy demo``, tests),
logged-in researchers only (``gridstudy serve``), or nobody."""


@bp.before_request
def preview_allowed() -> Any:
    mode = current_app.config["PREVIEW"]
    if mode in (False, OFF):
        abort(404, "previews are switched off on this server (PREVIEW = off)")
    if mode == RESEARCHERS and auth.current_admin(current_app.extensions["gridstudy.store"].engine) is None:
        if request.method == "GET":
            return redirect(url_for("dashboard.login", next=request.path))
        abort(403, "previews are for logged-in researchers on this server")
    return None


@bp.get("/")
def index() -> str:
    """Every registered problem, each a preview link."""
    return render_template("play_index.html", problems=registry.list_problems(),
                           titles={name: c.title for name, c in challenges().items()})


@bp.get("/<path:problem_id>")
def play(problem_id: str) -> str:
    """The browser client on a fresh session of ``problem_id``; with ``?play=browser``
    the page ticks the engine itself (an attempt the server records and checks)."""
    problem = _problem_or_404(problem_id)
    title = get(problem.challenge).title.capitalize()
    if request.args.get("play") == "browser":
        played = open_browser(problem)
        return render_template("play.html", problem=problem, token=played.token, record=True,
                               title=title, play="browser", problem_id=problem.id)
    record = request.args.get("record") == "1"
    session = open_session(problem, record=record)
    return render_template("play.html", problem=problem, token=session.token, record=record,
                           title=title)


def open_browser(problem: Problem, *, study_id: str | None = None,
                 participant_id: int | None = None) -> BrowserSession:
    """A new attempt of ``problem`` for the page to play in the browser, recorded and
    checked by the server (``study_server/browser_play.py``)."""
    with preview_place(participant_id is None):
        owner = None
        if participant_id is None:
            owner = auth.current_admin(current_app.extensions["gridstudy.store"].engine)
        return keep(current_app, open_browser_session(
            current_app.extensions["gridstudy.store"], problem, study_id=study_id,
            participant_id=participant_id, owner=owner))


@bp.post("/<path:problem_id>/session")
def new_session(problem_id: str) -> Any:
    """A fresh session for a script: ``{token, problem_id, frame_rate, episode_id}``;
    with ``?play=browser`` one the script ticks itself and logs (recorded, checked)."""
    problem = _problem_or_404(problem_id)
    if request.args.get("play") == "browser":
        played = open_browser(problem)
        return jsonify(token=played.token, problem_id=problem.id, frame_rate=played.frame_rate,
                       episode_id=played.episode_id, play="browser")
    session = open_session(problem, record=request.args.get("record") == "1")
    return jsonify(token=session.token, problem_id=problem.id,
                   frame_rate=session.episode.frame_rate, episode_id=session.episode_id)


def _problem_or_404(problem_id: str) -> Problem:
    try:
        return registry.get_problem(problem_id)
    except KeyError:
        abort(404, f"no problem {problem_id!r} is registered; see /play/ for the list")
