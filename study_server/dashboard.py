"""The researcher dashboard: watch a study fill, read timelines, replay sessions, export.

Behind the admin login (``gridstudy admin create``); every form carries the CSRF token.
Participants' free text (debrief feedback) is shown through Jinja's autoescaping only,
never marked safe.
"""

from __future__ import annotations

import functools
import io
import json
import math
import re
import time
from typing import Any

import yaml
from flask import (
    Blueprint,
    Flask,
    abort,
    copy_current_request_context,
    current_app,
    g,
    redirect,
    render_template,
    request,
    send_file,
    url_for,
)
from sqlmodel import Session, func, select

from consent import quality
from consent.definition import from_stored
from records import schema
from records.flow import COMPLETE, EXCLUDED, standing
from records.models import (
    Audit,
    EpisodeRow,
    Event,
    Frame,
    LiveSession,
    Participant,
    Signal,
    Study,
)
from records.offload import off_loop_for_pages
from records.store import PAGE_WAIT, locked
from study_server import (
    assignment,
    auth,
    browser_play,
    logins,
    monitor,
    prolific,
    study_figures,
    tokens,
)
from study_server.commands.study import PROLIFIC_QUERY
from study_server.payments import APPROVE, approve_list, bonuses_csv, decisions_csv, payment_rows
from study_server.sockets import game_ended
from tasks.words import count

bp = Blueprint("dashboard", __name__, url_prefix="/dashboard")
ROW_ID_MAX = schema.INT_LIMIT - 1
"""Ids in URLs beyond what a row can have are unknown pages (404), not errors."""
bp.before_request(auth.check_csrf)


@bp.app_template_global()
def utc_time(seconds: float | None) -> str:
    """Unix seconds as the dashboard shows times (``HH:MM:SS``, UTC)."""
    from datetime import UTC, datetime

    return "" if seconds is None else datetime.fromtimestamp(seconds, UTC).strftime("%H:%M:%S")


bp.add_app_template_global(count)  # "1 period", "2 periods"


@bp.app_template_filter("size")
def size(count: int) -> str:
    """A number of bytes as people read it: ``812 bytes``, ``11.6 KB``, ``68.2 MB``."""
    if count < 1000:
        return f"{count} bytes"
    shown = count / 1000
    for unit in ("KB", "MB"):
        if shown < 1000:
            return f"{shown:.1f} {unit}"
        shown /= 1000
    return f"{shown:.1f} GB"


def built_off_loop(view: Any) -> Any:
    """A page that only reads, built in the native threads kept for pages
    (``records.offload.off_loop_for_pages``) with the request's context: its rows made
    into objects and its template rendered there, so
    that the loop goes on ticking every game meanwhile (the interpreter hands it the lock
    every few milliseconds). On the loop, with 16,000 participants on the server, reading
    the dashboard made every game's ticks 0.27 to 0.45 s late (measured), and it grows
    with the studies. The pages that act on a live session (ending it, excluding) stay on
    the loop, which owns the sessions. Put it above ``auth.login_required``, so that the
    signed-in researcher (``g.admin``) is found in the thread's context, where the
    template reads it."""

    @functools.wraps(view)
    def page(*args: Any, **kwargs: Any) -> Any:
        return off_loop_for_pages(copy_current_request_context(view), *args, **kwargs)

    return page


def init_app(app: Flask) -> None:
    from study_server.export import export, pseudonym_key
    from study_server.export_jobs import Exports

    store = app.extensions["gridstudy.store"]
    app.extensions["gridstudy.exports"] = Exports(
        store.url, export, lambda: pseudonym_key(store),
        lambda *args: app.extensions["socketio"].start_background_task(*args),
        lambda seconds: app.extensions["socketio"].sleep(seconds))
    auth.init_app(app)
    app.register_blueprint(bp)
    app.add_url_rule("/", "landing", landing)


def landing() -> str:
    """The server's root: for researchers, a way to the dashboard; nothing about any
    study, so a participant who strips the link learns nothing."""
    return render_template("dashboard/landing.html")


def login_limits(app: Flask) -> logins.Limits:
    """The app's login limits (``LOGIN_FREE_PER_USER``, ``LOGIN_FREE_PER_ADDRESS``,
    ``LOGIN_FIRST_DELAY``; see study_server/logins.py)."""
    default = logins.Limits()
    return logins.Limits(int(app.config.get("LOGIN_FREE_PER_USER", default.per_pair)),
                         int(app.config.get("LOGIN_FREE_PER_ADDRESS", default.per_address)),
                         float(app.config.get("LOGIN_FIRST_DELAY", default.first_delay)))


def _store() -> Any:
    return current_app.extensions["gridstudy.store"]


@bp.route("/login", methods=("GET", "POST"))
def login() -> Any:
    """The login form; a wrong name or password gets one message, whichever was wrong."""
    error = None
    if request.method == "POST":
        username, password = request.form.get("username", ""), request.form.get("password", "")
        engine, address = _store().engine, request.remote_addr or "unknown"
        attempt = logins.begin(engine, address, username, login_limits(current_app))
        if attempt.wait > 0:
            seconds = math.ceil(attempt.wait)
            return (render_template("dashboard/login.html", error=(
                f"Too many failed logins from this address; try again in {seconds} s.")),
                    429, {"Retry-After": str(seconds)})
        if not auth.verify(engine, username, password):  # counted as a failure already
            error = "Wrong username or password."
        if error is None:
            logins.succeeded(engine, address, username, attempt)
            auth.login(engine, username)
            target = request.args.get("next", "")
            return redirect(target if target.startswith("/dashboard") else url_for("dashboard.index"))
    return render_template("dashboard/login.html", error=error)


@bp.post("/logout")
def logout() -> Any:
    auth.logout(_store().engine)
    return redirect(url_for("dashboard.login"))


@bp.get("/")
@built_off_loop
@auth.login_required
def index() -> str:
    """Every study with its fill, the live sessions and recent participants."""
    with _store().session() as db:
        studies = [study_summary(db, study) for study in db.exec(select(Study)).all()]
        changes = db.exec(select(Audit).order_by(Audit.id.desc()).limit(50)).all()
    return render_template("dashboard/index.html", studies=studies,
                           monitor=monitor.render(current_app),
                           exports=current_app.extensions["gridstudy.exports"],
                           tokens=tokens.listed(_store().engine), changes=changes,
                           loaded_at=time.time())


INDEX_PARTICIPANTS = 50
"""Participants a study's section of the index lists: the last to arrive; and excluded
attempts: the last excluded. The study's participant list and its list of excluded
attempts have them all, :data:`PAGE_PARTICIPANTS` a page (the index listed every one:
1.9 MB at 5,000 participants)."""
PAGE_PARTICIPANTS = 500
"""Rows a page of a study's participant list, or of its excluded attempts, shows."""


def _excluded(study_id: str, problems: list[str]) -> Any:
    """The study's excluded attempts, practice rounds aside (they are not listed): the
    columns a list shows, in the order they were made."""
    return select(EpisodeRow.id, EpisodeRow.problem_id, EpisodeRow.participant_id,
                  EpisodeRow.exclusion_reason).where(
        EpisodeRow.study_id == study_id, EpisodeRow.included.is_(False),
        EpisodeRow.problem_id.in_(problems))


def _count(db: Session, query: Any) -> int:
    """How many rows ``query`` gives."""
    return db.exec(select(func.count()).select_from(query.subquery())).one()


def _page_of(total: int, what: str) -> dict[str, int]:
    """The page of a list of ``total`` rows asked for (``?page=N``, from 1): its number,
    how many pages the list has (:data:`PAGE_PARTICIPANTS` rows each), the offset of its
    first row and the total; a 404 for a page past the last."""
    pages = max(1, math.ceil(total / PAGE_PARTICIPANTS))
    page = request.args.get("page", 1, type=int)
    if not 1 <= page <= pages:
        abort(404, f"{what} has {pages} page(s)")
    return {"page": page, "pages": pages, "offset": (page - 1) * PAGE_PARTICIPANTS,
            "total": total}


def study_summary(db: Session, study: Study) -> dict[str, Any]:
    definition = from_stored(study.definition)
    problems = list(definition.problems)
    fill = assignment.fill_counts(db, study.id, problems)
    done = assignment.included_done(db, study.id)
    excluded = _excluded(study.id, problems)
    _, payments = payment_rows(db, study.id)
    return {
        "prolific": db.get(prolific.ProlificStudy, study.id),
        "prolific_statuses": prolific.statuses(db, study.id),
        "prolific_batches": db.exec(select(prolific.ProlificBatch).where(
            prolific.ProlificBatch.study_id == study.id).order_by(prolific.ProlificBatch.id)).all(),
        "study": study, "definition": definition,
        "excluded": db.exec(excluded.order_by(EpisodeRow.id.desc())
                            .limit(INDEX_PARTICIPANTS)).all(),
        "excluded_count": _count(db, excluded),
        "fill": [(p, done.get(p, 0), fill[p], definition.attempts_per_problem) for p in problems],
        "payments": payments, "bonus_total": sum(row.bonus for row in payments),
        "to_approve": sum(row.decision == APPROVE for row in payments),
        "recent": list(reversed(payments[-INDEX_PARTICIPANTS:])),
        "figures": {"fill": study_figures.fill_over_time(db, study.id, problems,
                                                         definition.attempts_per_problem),
                    "flow": study_figures.participant_flow(db, study.id)},
        "definition_yaml": yaml.safe_dump(study.definition, sort_keys=False, allow_unicode=True),
    }


@bp.get("/study/<study_id>/participants")
@built_off_loop
@auth.login_required
def study_participants(study_id: str) -> str:
    """Every participant of the study with their payment decision, in arrival order,
    :data:`PAGE_PARTICIPANTS` a page (``?page=N``, from 1)."""
    with _store().session() as db:
        try:
            _, rows = payment_rows(db, study_id)
        except LookupError:
            abort(404, f"no study {study_id}")
        statuses = prolific.statuses(db, study_id)
    paging = _page_of(len(rows), f"the participant list of {study_id}")
    shown = rows[paging["offset"]:paging["offset"] + PAGE_PARTICIPANTS]
    return render_template("dashboard/participants.html", study_id=study_id, rows=shown,
                           statuses=statuses, **paging)


@bp.get("/study/<study_id>/excluded")
@built_off_loop
@auth.login_required
def study_excluded(study_id: str) -> str:
    """Every excluded attempt of the study with why, in the order the attempts were made,
    :data:`PAGE_PARTICIPANTS` a page (``?page=N``, from 1)."""
    with _store().session() as db:
        study = db.get(Study, study_id) or abort(404, f"no study {study_id}")
        excluded = _excluded(study_id, list(from_stored(study.definition).problems))
        total = _count(db, excluded)
        paging = _page_of(total, f"the excluded attempts of {study_id}")
        rows = db.exec(excluded.order_by(EpisodeRow.id).offset(paging["offset"])
                       .limit(PAGE_PARTICIPANTS)).all()
    return render_template("dashboard/excluded.html", study_id=study_id, rows=rows, **paging)


@bp.get('/study/<study_id>/<any("decisions.csv", "approve.txt", "bonuses.csv"):name>')
@built_off_loop
@auth.login_required
def payments_download(study_id: str, name: str) -> Any:
    """The study's payment decisions, the ids to approve (Prolific's bulk approval), or
    its bonuses in Prolific's bulk-bonus format."""
    with _store().session() as db:
        try:
            _, rows = payment_rows(db, study_id)
        except LookupError:
            abort(404, f"no study {study_id}")
    make = {"decisions.csv": decisions_csv, "approve.txt": approve_list,
            "bonuses.csv": bonuses_csv}[name]
    return send_file(io.BytesIO(make(rows).encode()),
                     mimetype="text/csv" if name.endswith(".csv") else "text/plain",
                     as_attachment=True, download_name=f"{study_id}-{name}")


@bp.get(f"/participant/<int(min=1, max={ROW_ID_MAX}):participant_id>")
@built_off_loop
@auth.login_required
def participant(participant_id: int) -> str:
    """One participant's timeline: every stage record and every attempt, in order."""
    with _store().session() as db:
        row = db.get(Participant, participant_id) or abort(404, f"no participant {participant_id}")
        episodes = db.exec(select(EpisodeRow).where(EpisodeRow.participant_id == participant_id)
                           .order_by(EpisodeRow.id)).all()
        signals = db.exec(select(Signal).where(Signal.participant_id == participant_id)
                          .order_by(Signal.id)).all()
        leased = set(db.exec(select(LiveSession.episode_id).where(
            LiveSession.episode_id.in_([e.id for e in episodes]))).all())
    # what the monitor would list: an attempt that holds its slot with a session playing,
    # or played in the browser (whichever worker takes its log stops it at its heartbeat)
    live = {e.id for e in episodes if e.status in assignment.HOLDING
            and (e.id in leased or (e.info or {}).get("play") == browser_play.BROWSER)}
    per_attempt = {e.id: quality.summarise(s for s in signals if s.episode_id == e.id)
                   for e in episodes}
    return render_template("dashboard/participant.html", participant=row, episodes=episodes,
                           excluded=standing(row.status, row.exclusion_reason) == EXCLUDED,
                           records=timed_records((row.data or {}).get("records", [])),
                           flags=quality.summarise(signals), per_attempt=per_attempt,
                           signals=signals[-200:], signal_count=len(signals),
                           idle_after=quality.IDLE_AFTER, live=live)


def timed_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stage records with the seconds each stage took (records from before stages
    were timed have none)."""
    from datetime import datetime

    out = []
    for record in records:
        seconds = None
        if record.get("started_at") and record.get("finished_at"):
            seconds = round((datetime.fromisoformat(record["finished_at"])
                             - datetime.fromisoformat(record["started_at"])).total_seconds())
        out.append({**record, "seconds": seconds})
    return out


@bp.get(f"/episode/<int(min=1, max={ROW_ID_MAX}):episode_id>")
@built_off_loop
@auth.login_required
def episode(episode_id: int) -> str:
    """A replay of one attempt: its events and the frame after each (live: reload). Each
    frame is sent once, by its hash, as the store keeps it: the page of a 10-minute attempt
    of bee_hive held 4.2 MB, its 362 frames repeated over 2,400 events."""
    _store().wait(PAGE_WAIT)
    with _store().session() as db:
        row = db.get(EpisodeRow, episode_id) or abort(404, f"no episode {episode_id}")
        events = db.exec(select(Event).where(Event.episode_id == episode_id).order_by(Event.seq)).all()
        hashes = {e.frame_hash for e in events if e.frame_hash}
        frames = {f.hash: json.loads(f.data) for f in db.exec(select(Frame).where(Frame.hash.in_(hashes)))}
    first = events[0].server_time if events else 0.0
    replay = [{"seq": e.seq, "t": e.server_time - first, "source": e.source, "action": e.action,
               "phase": e.phase, "next_phase": e.next_phase, "applied": bool(e.applied),
               "phase_change": bool(e.next_phase and e.next_phase != e.phase),
               "error": e.error, "raw_reply": (e.raw_reply or "")[:4000] or None,
               "frame": e.frame_hash if e.frame_hash in frames else None} for e in events]
    live = row.status in assignment.HOLDING
    # the row's phase is written when the attempt ends; while it is played, the last event
    # says where it is
    applied = [e for e in events if e.applied and e.next_phase]
    phase = applied[-1].next_phase if live and applied else row.phase
    return render_template("dashboard/episode.html", episode=row, events=events, replay=replay,
                           frames=frames, live=live, phase=phase)


@bp.post("/export")
@auth.login_required
def export_start() -> Any:
    """Start the export of one study (or all) and show its page: it is read and zipped
    in the background (``study_server/export_jobs.py``), its progress shown."""
    study = request.form.get("study") or None
    _store().wait(PAGE_WAIT)  # the rows already taken are in the export
    job = current_app.extensions["gridstudy.exports"].start(
        study, pseudonymized=request.form.get("pseudonymize") == "1")
    return redirect(url_for("dashboard.export_page", job_id=job.id), code=303)


def _export_job(job_id: str) -> Any:
    job = current_app.extensions["gridstudy.exports"].get(job_id)
    if job is None:
        abort(404, "This export is not kept here: an export is kept for an hour after it "
                   "is made, and not across a restart of the server. Make it again from "
                   "the dashboard.")
    return job


@bp.get("/export/<job_id>")
@auth.login_required
def export_page(job_id: str) -> str:
    """How far the export is (the page reloads itself until it is made), then its link."""
    from study_server.export_jobs import KEPT_SECONDS

    return render_template("dashboard/export.html", job=_export_job(job_id), now=time.time(),
                           kept_minutes=round(KEPT_SECONDS / 60))


@bp.get("/export/<job_id>/zip")
@auth.login_required
def export_download(job_id: str) -> Any:
    job = _export_job(job_id)
    if job.path is None:
        abort(409, "This export is not made yet: its page says how far it is.")
    return send_file(job.path, mimetype="application/zip", as_attachment=True,
                     download_name=job.name)


# -- a researcher's hand: every change needs a reason and is kept in the audit log ---------

REASON_MAX = 500
STUDY_ACTIONS = {"open": "open-study", "paused": "pause-study", "closed": "close-study"}
STUDY_STATUSES = tuple(STUDY_ACTIONS)


def _reason() -> str:
    reason = (request.form.get("reason") or "").strip()
    if not reason:
        abort(400, "give a reason: it is kept in the audit log")
    return reason[:REASON_MAX]


def audit(db: Session, action: str, target: str, reason: str, before: dict[str, Any],
          after: dict[str, Any]) -> None:
    """Keep one change by hand, with who made it and why."""
    db.add(Audit(admin=g.admin, action=action, target=target, reason=reason,
                 before=before, after=after))


@bp.post(f"/session/<int(min=1, max={ROW_ID_MAX}):episode_id>/end")
@auth.login_required
def end_session(episode_id: int) -> Any:
    """End a stuck attempt now (its slot is freed at once, not after the idle timeout).
    A session another worker ticks stops there at its next heartbeat, which finds its
    attempt abandoned (``study_server/cluster.py``)."""
    reason = _reason()
    why = f"ended by {g.admin}: {reason}"
    _store().wait(PAGE_WAIT)
    # marked before the live session is ended: its end makes the row stop holding a slot,
    # and the mark, which changes only such rows, then left it included and without why
    with _store().session() as db:
        row = db.get(EpisodeRow, episode_id) or abort(404, f"no episode {episode_id}")
        before = {"status": row.status}
        if row.status in assignment.HOLDING:
            assignment.mark_abandoned(db, [episode_id], why)
        audit(db, "end-session", f"episode {episode_id}", reason, before, {"status": "abandoned"})
    scheduler, socketio = current_app.extensions["gridstudy.realtime"], current_app.extensions["socketio"]
    live = next((s for s in list(scheduler.sessions.values()) if s.episode_id == episode_id), None)
    if live is not None and scheduler.remove(live.token) is not None:
        live.abandon(why)
        game_ended(socketio, live)
    for played in browser_play.unfinished(current_app):  # played in the browser: nothing
        if played.episode_id == episode_id:              # more of its log is taken
            played.attempt.abandon(why)
            game_ended(socketio, played)
    return redirect(request.referrer or url_for("dashboard.index"))


@bp.post(f"/episode/<int(min=1, max={ROW_ID_MAX}):episode_id>/inclusion")
@auth.login_required
def set_episode_inclusion(episode_id: int) -> Any:
    """Exclude an attempt from aggregation by hand, or include it again."""
    reason, include = _reason(), request.form.get("included") == "1"
    with _store().session() as db:
        row = db.get(EpisodeRow, episode_id) or abort(404, f"no episode {episode_id}")
        before = {"included": row.included, "exclusion_reason": row.exclusion_reason}
        row.included = include
        row.exclusion_reason = None if include else f"by hand: {reason}"
        audit(db, "include-attempt" if include else "exclude-attempt", f"episode {episode_id}",
              reason, before, {"included": row.included, "exclusion_reason": row.exclusion_reason})
    return redirect(request.referrer or url_for("dashboard.episode", episode_id=episode_id))


@bp.post(f"/participant/<int(min=1, max={ROW_ID_MAX}):participant_id>/inclusion")
@auth.login_required
def set_participant_inclusion(participant_id: int) -> Any:
    """Exclude a participant (every attempt) by hand, or include them again with the
    status they had before; including one whom a failed attention check excluded
    includes again the attempts that check excluded."""
    reason, include = _reason(), request.form.get("included") == "1"
    with _store().session() as db:
        db.get(Participant, participant_id) or abort(404, f"no participant {participant_id}")
    # under the participant's write lock, as they stand now: an exclusion
    # read before the participant's last answer and written after it wrote "excluded" over
    # the completion and kept "active" as the status to restore
    with locked(_store().engine, Participant, participant_id) as db:
        row = db.get(Participant, participant_id)
        before = {"status": row.status, "exclusion_reason": row.exclusion_reason}
        after: dict[str, Any] = {}
        if include:
            previous = db.exec(select(Audit).where(
                Audit.target == f"participant {participant_id}",
                Audit.action == "exclude-participant").order_by(Audit.id.desc())).first()
            earlier = (previous.before or {}) if previous and row.status == EXCLUDED else {}
            row.status = earlier.get("status", row.status if row.status != EXCLUDED else COMPLETE)
            after["included_again"] = _lift(db, participant_id, {
                row.exclusion_reason, earlier.get("exclusion_reason")})
            row.exclusion_reason = None
        else:
            row.status, row.exclusion_reason = EXCLUDED, f"by hand: {reason}"
        audit(db, "include-participant" if include else "exclude-participant",
              f"participant {participant_id}", reason, before,
              {"status": row.status, "exclusion_reason": row.exclusion_reason, **after})
    return redirect(request.referrer or url_for("dashboard.participant", participant_id=participant_id))


def _lift(db: Session, participant_id: int, reasons: set[str | None]) -> list[int]:
    """Include again the participant's attempts that a rule on the participant excluded
    (a failed attention check writes its reason on every attempt); an attempt excluded
    for its own sake, or by hand, stays out. The ids included again."""
    reasons = {r for r in reasons if r and not r.startswith("by hand: ")}  # never on attempts
    lifted = [a for a in assignment.participant_episodes(db, participant_id, every=True)
              if not a.included and a.exclusion_reason in reasons]
    for attempt in lifted:
        attempt.included, attempt.exclusion_reason = True, None
    return [a.id for a in lifted]


@bp.post("/study/<study_id>/manage")
@auth.login_required
def manage_study(study_id: str) -> Any:
    """Open, pause or close a study (new arrivals of a paused or closed one get a polite
    page with the screen-out code; those already in go on), or raise the attempts
    wanted per problem."""
    reason = _reason()
    with _store().session() as db:
        study = db.get(Study, study_id) or abort(404, f"no study {study_id}")
        status, wanted = request.form.get("status"), request.form.get("wanted")
        if status:
            if status not in STUDY_STATUSES:
                abort(400, f"status must be one of {', '.join(STUDY_STATUSES)}")
            audit(db, STUDY_ACTIONS[status], f"study {study_id}", reason,
                  {"status": study.status}, {"status": status})
            study.status = status
        if wanted:
            least = from_stored(study.definition).attempts_per_problem
            wanted = _whole("wanted", least, "it can only be raised")
            audit(db, "set-wanted", f"study {study_id}", reason,
                  {"attempts_per_problem": least}, {"attempts_per_problem": wanted})
            study.definition = {**study.definition, "attempts_per_problem": wanted}
    return redirect(url_for("dashboard.index"))


# -- Prolific: the same actions as `gridstudy prolific`, with the server's token ------------

PROLIFIC_ACTIONS = ("publish", "sync", "dry-run", "review")


@bp.post('/study/<study_id>/prolific/<any("publish", "sync", "dry-run", "review"):action>')
@auth.login_required
def prolific_action(study_id: str, action: str) -> Any:
    """Publish the study on Prolific, sync its submissions, or review them (dry, or for
    real: approvals, rejections, returns and the bonuses, paid once), with the API token
    in the server's ``PROLIFIC_API_TOKEN``. The page shows what was done, line by line."""
    lines: list[str] = []
    try:
        with prolific.Api() as api:
            if action == "publish":
                link = url_for("consent.enter", study_id=study_id, _external=True) + "?" + PROLIFIC_QUERY
                done = prolific.publish(
                    _store(), api, study_id, link, places=_whole("places", 1),
                    reward_cents=_whole("reward_cents", 1), minutes=_whole("minutes", 1),
                    draft=bool(request.form.get("draft")), actor=g.admin)
                lines.append(f"{'already published' if done.already else 'on Prolific'} as "
                             f"{done.prolific_id} ({done.status})")
            elif action == "sync":
                synced = prolific.sync(_store(), api, study_id)
                lines.append(f"{synced.submissions} submissions on Prolific")
                lines += [f"on Prolific, never reached the study: {x}" for x in synced.only_on_prolific]
                lines += [f"reached the study, no submission on Prolific: {x}" for x in synced.only_here]
            else:
                lines += prolific.review(_store(), api, study_id, actor=g.admin,
                                         dry_run=action == "dry-run").lines
    except (prolific.ProlificError, LookupError, ValueError) as error:
        lines.append(f"error: {error}")
    return render_template("dashboard/prolific.html", study_id=study_id, action=action,
                           lines=lines or ["nothing to do"])


WHOLE = re.compile(r"[0-9]{1,9}")
"""A whole number a researcher types into a form: ASCII digits (``str.isdigit`` also
passes "²", which ``int`` refuses: a 500), nine at most."""


def _whole(name: str, least: int = 0, why: str = "") -> int:
    """The form's field ``name`` as a whole number of at least ``least``, or a 400 saying
    what it must be (and ``why``)."""
    value = request.form.get(name, "").strip()
    if not WHOLE.fullmatch(value) or int(value) < least:
        abort(400, f"{name} must be a whole number of at least {least}"
                   + (f" ({why})" if why else ""))
    return int(value)
