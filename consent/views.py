"""The participant-facing pages: Prolific entry, one page per stage, the end.

``/study/<study_id>?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...`` is the link given to
Prolific. The participant is remembered in the signed session cookie, and found again by
their Prolific id if they come back from another browser, so they resume where they were.
Finishing sends them to Prolific's completion URL with the study's completion code; a
screen-out (declined consent, failed screening or quiz, study full, time limit) ends on a
polite page with the screen-out code.

The views are thin: the flow's state lives behind ``app.extensions["gridstudy.flow"]``.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from typing import Any
from urllib.parse import urlencode

from flask import (
    Blueprint,
    Flask,
    abort,
    current_app,
    redirect,
    render_template,
    request,
    session,
    url_for,
)

from consent import quality
from tasks import registry
from tasks.worldtest import challenge
from tasks.worldtest.episode import env_hint

bp = Blueprint("consent", __name__, url_prefix="/study", template_folder="templates")


@bp.context_processor
def challenge_texts() -> dict[str, Any]:
    """Templates read a challenge's title and participant texts from the registry, and
    what the keys and clicks do in an environment."""
    return {"challenge": challenge.get, "quality": quality, "controls": controls_of}


@cache
def controls_of(env_id: str) -> str:
    """What the keys and clicks do in this environment, in plain words (read from its
    program's handlers; ``tasks.worldtest.episode.env_hint``), made once per process."""
    return env_hint(registry.make(env_id))


PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete"


def init_app(app: Flask) -> None:
    """Register the pages; the server provides ``gridstudy.flow`` and ``gridstudy.csrf``."""
    app.register_blueprint(bp)


@bp.before_request
def check_csrf() -> None:
    """Every form of the flow carries the server's CSRF token (see study_server.auth)."""
    current_app.extensions["gridstudy.csrf"]()


def prolific_url(code: str) -> str:
    """Prolific's completion link for ``code``.

    >>> prolific_url("C1A2B3")
    'https://app.prolific.com/submissions/complete?cc=C1A2B3'
    """
    return f"{PROLIFIC_COMPLETE}?{urlencode({'cc': code})}"


REDIRECT_SECONDS = 5
"""Seconds the completion page shows its code before going to Prolific."""


LINK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""What an id in the study's link may be (Prolific's are 24 hexadecimal digits, a local
study's join codes are words): letters, digits, ``_``, ``.`` and ``-``, a letter or a
digit first, at most 64. An id is written into the payment files and the export, which
researchers open in spreadsheets: one starting with ``=``, ``+``, ``-`` or ``@`` would be
run there as a formula (``=HYPERLINK(...)`` sends the sheet's data away)."""


LEAVING = {"wrong-device": "a window too small or no keyboard (the device check)",
           "no-javascript": "no JavaScript"}
"""The reasons a participant may end the study on their device (``leave``), with what is
kept as their ``data.ended_because``; both end the visit ``wrong-device``."""

PLACEHOLDER = "{{%"
"""How Prolific's placeholders in a study's link begin (``{{%PROLIFIC_PID%}}``)."""


def _prolific(name: str) -> str | None:
    """A Prolific id from the link, None when absent."""
    return request.args.get(name, "").strip() or None


def _flow() -> Any:
    return current_app.extensions["gridstudy.flow"]


def _key(study_id: str) -> str:
    return f"participant:{study_id}"


@bp.get("/<study_id>")
def enter(study_id: str) -> Any:
    """Prolific's link: find or create the participant, then show their current stage."""
    pid = _prolific("PROLIFIC_PID")
    error = None
    if not pid:
        error = "This link must be opened from Prolific (it has no PROLIFIC_PID)."
    elif PLACEHOLDER in pid:
        error = ("This is the study's link as it is given to Prolific, which puts each "
                 f"participant's id in the place of {PLACEHOLDER}PROLIFIC_PID%}}}}. To try the "
                 "study yourself, put an id of your own there (PROLIFIC_PID=try-1, and any "
                 "STUDY_ID and SESSION_ID): that visit is a participant of the study, to be "
                 "excluded on the dashboard afterwards.")
    elif not all(LINK_ID.fullmatch(value) for value in (pid, _prolific("STUDY_ID"),
                                                         _prolific("SESSION_ID")) if value):
        error = "This Prolific id is not valid."
    if error is not None:
        return render_template("consent/error.html", message=error), 400
    try:
        participant_id = _flow().enter(study_id, pid, _prolific("STUDY_ID"), _prolific("SESSION_ID"),
                                       request.remote_addr)
    except LookupError as refusal:  # the study is not open, or too many from one address
        retry_after = getattr(refusal, "retry_after", None)
        if retry_after is not None:
            minutes = max(1, math.ceil(retry_after / 60))
            error = (f"Many people have just started this study from your network. Please "
                     f"try again in {minutes} minute{'s' if minutes > 1 else ''}.")
            return render_template("consent/error.html", message=error), 429, {
                "Retry-After": str(math.ceil(retry_after))}
        definition = getattr(refusal, "definition", None)
        if definition is None:
            return render_template("consent/error.html", message="This study is not open."), 404
        code = definition.code_for(refusal.status)
        return render_template("consent/end.html", status=refusal.status, study=definition,
                               code=code, link=prolific_url(code)), 200
    session[_key(study_id)] = participant_id
    return redirect(url_for("consent.stage", study_id=study_id))


@bp.route("/<study_id>/flow", methods=("GET", "POST"))
def stage(study_id: str) -> Any:
    """The current stage (GET), or its submitted form (POST, then back here)."""
    participant_id = session.get(_key(study_id))
    if participant_id is None:
        abort(403, "open the study from its Prolific link")
    error = None
    if request.method == "POST":
        error = _flow().submit(study_id, participant_id, request.form.to_dict())
        if error is None:
            return redirect(url_for("consent.stage", study_id=study_id))
    elif request.args.get("play") == "server":  # the browser could not run the engine
        _flow().fall_back(study_id, participant_id, request.args.get("engine_error", "")[:200])
        return redirect(url_for("consent.stage", study_id=study_id))
    page = _flow().page(study_id, participant_id)
    if page.stage is None:
        return _end(page)
    return render_template(page.stage.template, page=page, study=page.definition, error=error, **page.context)


@bp.post("/<study_id>/signals")
def signals(study_id: str) -> Any:
    """The browser's data-quality signals (``signals.js``): a form with ``signals`` (a
    JSON list) and, on a page with a game, its ``episode_id``. 204 when stored; 400 with
    the reason when not (nothing of that request is stored)."""
    participant_id = session.get(_key(study_id))
    if participant_id is None:
        return {"error": "open the study from its Prolific link"}, 403
    try:
        items = json.loads(request.form.get("signals", ""))
        episode = request.form.get("episode_id") or None
        count = _flow().record_signals(study_id, participant_id, items,
                                       int(episode) if episode is not None else None)
    except (ValueError, TypeError) as error:  # SignalError and bad JSON are ValueErrors
        return {"error": f"signals not stored: {str(error)[:200]}"}, 400
    return {"stored": count}, 200


@bp.post("/<study_id>/leave")
def leave(study_id: str) -> Any:
    """A participant who cannot take part on this device ends their visit here, with the
    study's code for that ending."""
    participant_id = session.get(_key(study_id))
    if participant_id is None:
        abort(403, "open the study from its Prolific link")
    reason = request.form.get("reason")
    if reason not in LEAVING:
        abort(400, f"the reasons to leave here are {' and '.join(LEAVING)}")
    _flow().leave(study_id, participant_id, "wrong-device", LEAVING[reason])
    return redirect(url_for("consent.stage", study_id=study_id))


def _end(page: Any) -> Any:
    """Every ending shows its code (with a copy button) and the link back to Prolific; a
    completed visit also goes there by itself after :data:`REDIRECT_SECONDS`, so a
    redirect that fails still leaves the participant with their code."""
    definition, status = page.definition, page.participant.status
    code = definition.code_for(status)
    return render_template("consent/end.html", status=status, study=definition, code=code,
                           link=prolific_url(code),
                           redirect_after=REDIRECT_SECONDS if status == "complete" else None)
