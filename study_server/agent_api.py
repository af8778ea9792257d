"""The agent API: language models (or any program) play problems over HTTP.

An agent run is one configuration (``AgentRun``); each attempt is an episode of the same
:class:`~tasks.worldtest.Episode` the real-time server and the in-process runner drive,
played by the same agent turn (:class:`tasks.worldtest.turn.AgentTurns`) and written by
the same recorder, so the dashboard and the analysis see agent runs beside participants.

Every request carries ``Authorization: Bearer <token>`` (:mod:`study_server.tokens`);
a run belongs to the token that created it. Routes (JSON in, JSON out; errors are
``{"error": message}`` with 400, 401, 403, 404, 409, 410 or 413; 410 for an attempt that
was not over but cannot go on, its environment changed since it began, ended with why as
the answer says, ``records.rebuild.stored_attempt``):

``POST /api/agent/runs``                      ``{agent_kind, model, config, study_id}`` -> 201 ``{agent_run_id}``
(200 with the existing run when this token already made one with exactly this configuration)
``GET  /api/agent/runs?agent_kind=K&model=M``  -> ``{runs: [{agent_run_id, config}]}``: this
token's runs of one agent, newest first
``GET  /api/agent/runs/<id>/episodes``        -> ``{episodes: [{episode_id, problem_id, status,
resumable, run_index, owner, last_seen}]}``
``GET  /api/agent/runs/<id>/spending``        -> ``{cost, tokens}``: what its recorded model
turns cost over every invocation (``cost`` null when none had a price)
``POST /api/agent/runs/<id>/episodes``        ``{problem_id, max_invalid, max_turns, run_index, owner}`` -> 201 ``{episode_id, state}``
``GET  /api/agent/episodes/<id>``             -> ``{episode_id, state}``
``POST /api/agent/episodes/<id>/actions``     ``{action, error, raw_reply, prompt, ..., turn}`` (the
model fields of ``records.schema.MODEL_TURN``) -> ``{applied, action, error, state}``
``POST /api/agent/episodes/<id>/end``         ``{reason, status}`` -> ``{state}`` (``abandoned``;
``error`` when the agent's model could not answer, ``interrupted`` when its operator stopped
it: both can be resumed)
``POST /api/agent/episodes/<id>/resume``      -> ``{episode_id, state, turns}``: an interrupted
attempt, or one its provider failed, continues; ``turns`` are its recorded model turns, from
which the agent rebuilds its conversation

``state`` is ``Episode.view()`` plus ``text`` (the observation text a model is shown),
``actions`` (the allowed action patterns), ``info``, ``ended`` and ``attempt`` (status,
reason, turns, invalid turns, score). An action that is null, does not parse or is not
available now is an invalid turn: logged with the raw reply, counted for grounding
accuracy, the episode not stepped; ``max_invalid`` of them in a row (default 5) abandon
the attempt, as do ``max_turns`` turns (default 1000) without an end. A live episode
lost by a restart is rebuilt from its stored events.

A request may be sent again when its answer did not come (the server restarted, a
worker died behind nginx, the connection dropped), and it does what it did once:

- a turn that names its ``turn`` (how many model turns the attempt had before it) and
  repeats the last one taken is answered as it was, not applied again; one that names
  a later turn than the server holds is refused (409, with ``turns``, the number it
  holds): the turns between were answered but lost by a ``kill -9`` within the store's
  flush window, and the client sends them again from its copy;
- a start naming its ``run_index`` whose place is held by an attempt still being played
  by the same ``owner`` (the object, apart from ``since``) is answered with that attempt;
- a resume of an attempt the same ``owner`` resumed and is playing is answered again;
- an end of an ended attempt changes nothing.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint, Flask, current_app, g, jsonify, request
from sqlmodel import select
from werkzeug.exceptions import RequestEntityTooLarge

from records import schema
from records.models import AgentRun, EpisodeRow, Study
from records.rebuild import CannotResume, stored_attempt
from records.recorder import EpisodeRecorder, last_seen, merge_info, run_spending
from records.store import PAGE_WAIT, RunIndexTaken
from study_server import cluster, tokens
from tasks import registry
from tasks.core import LONGEST_ACTION
from tasks.words import suggest
from tasks.worldtest.episode import Episode
from tasks.worldtest.turn import (
    ABANDONED,
    ACTIVE,
    ERROR,
    INTERRUPTED,
    MAX_INVALID,
    MAX_TURNS,
    AgentTurns,
    TurnResult,
    resumable,
)

bp = Blueprint("agent_api", __name__, url_prefix="/api/agent")
ENDINGS = (ABANDONED, ERROR, INTERRUPTED)
"""How an agent may end its own attempt (the last two can be resumed)."""
MAX_BODY = 6 * sum(schema.TURN_TEXT_LIMITS.values()) + 100_000
"""Largest request body, in bytes: a turn whose texts all hold as much as they may, each
character as long as JSON can write it (six bytes), and room for the rest. The agent
API reads up to it; every other route only up to the server's ``MAX_CONTENT_LENGTH``
(``study_server/app.py``). A longer body is refused as it arrives."""
MAX_DEPTH = 32
"""Deepest nesting a request's JSON may have."""


@dataclass(frozen=True)
class Spec:
    """One request field: its stored field (type and meaning), whether it may be null,
    and its largest size (characters of text, or the largest number)."""

    field: schema.Field
    nullable: bool = True
    most: float | None = None

    def value(self, name: str, body: dict[str, Any]) -> Any:
        """``body[name]`` checked; a stored field's messages name the request's field."""
        value = body.get(name)
        if value is None:
            if not self.nullable:
                raise ApiError(400, f"{name} is required")
            return None
        reason = self.field.rejects(value)
        if reason:
            raise ApiError(400, reason.replace(self.field.name, name, 1))
        if self.most is not None:
            size = len(value) if isinstance(value, str) else value
            if not 0 <= size <= self.most:
                unit = " characters" if isinstance(value, str) else ""
                raise ApiError(400, f"{name} must lie in 0..{self.most:g}{unit}, not {size}")
        return value


def _event(name: str, **options: Any) -> Spec:
    return Spec(schema.EVENT.field(name), **options)


RUN = {
    "agent_kind": Spec(schema.AGENT_RUN.field("agent_kind"), most=40),
    "model": Spec(schema.AGENT_RUN.field("model"), most=200),
    "config": Spec(schema.AGENT_RUN.field("config")),
    "study_id": Spec(schema.AGENT_RUN.field("study_id"), most=64),
}
NUMBER_LIMITS = {"cost": 10**6, "latency": 86_400}
TURN = {
    "action": _event("action", most=LONGEST_ACTION),
    "error": _event("error", most=schema.TURN_TEXT_LIMITS["error"]),
    **{name: _event(name, most=schema.TURN_TEXT_LIMITS.get(name) or NUMBER_LIMITS.get(name, 10**9))
       for name in schema.MODEL_TURN},
}
START = {"problem_id": Spec(schema.EPISODE.field("problem_id"), nullable=False, most=200)}
END = {"reason": _event("error", most=2000), "status": _event("source", most=20)}


class ApiError(Exception):
    def __init__(self, status: int, message: str, **more: Any) -> None:
        super().__init__(message)
        self.status = status
        self.more = more
        """Fields the answer carries beside ``error``."""


@dataclass
class LiveEpisode:
    """An attempt being played through the API: its turns, under one lock."""

    id: int
    turns: AgentTurns
    token: str
    """The name of the API token whose run this is."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_turn_at: float | None = None
    """When its last turn arrived (the dashboard's monitor)."""
    last: TurnResult | None = None
    """What its last model turn did (the answer to that turn sent again)."""

    @property
    def episode(self) -> Episode:
        return self.turns.episode


def init_app(app: Flask) -> None:
    app.extensions["gridstudy.agent_episodes"] = {}
    app.register_blueprint(bp)
    for status in (404, 405, 413):
        app.register_error_handler(status, _json_for_api)


def _json_for_api(error: Any) -> Any:
    """Routing errors under ``/api/`` (an unknown route, a wrong method) and a body over
    the server's limit answer JSON like every other agent-API error; elsewhere Flask's
    page."""
    if not request.path.startswith(bp.url_prefix):
        return error
    if error.code == 413:
        return jsonify({"error": f"the request body is over {MAX_BODY} bytes"}), 413
    return jsonify({"error": f"{error.name}: {request.method} {request.path}"}), error.code


@bp.before_request
def require_token() -> None:
    """Every route needs ``Authorization: Bearer <token>`` (``gridstudy token create``);
    without a valid one nothing is read or written (401)."""
    request.max_content_length = MAX_BODY  # before anything reads the body
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    found = tokens.holder(_store().engine, presented.strip()) if scheme.lower() == "bearer" else None
    if found is None:
        raise ApiError(401, "send Authorization: Bearer <token>; a researcher creates one with "
                            "gridstudy token create NAME")
    g.token = found


@bp.errorhandler(ApiError)
def api_error(error: ApiError):
    return jsonify({"error": str(error), **error.more}), error.status


def _store() -> Any:
    return current_app.extensions["gridstudy.store"]


def _body(specs: dict[str, Spec], *, allowed: tuple[str, ...] = ()) -> dict[str, Any]:
    """The request's JSON object, every field checked against ``specs`` (a 400 names the
    first field that is unknown, of the wrong type or too large)."""
    data = request.get_data(cache=True)
    if len(data) >= MAX_BODY:  # a chunked body is read up to the limit, and no further
        raise RequestEntityTooLarge()  # answered as one announced too large
    try:
        body = json.loads(data) if data else None
    except (ValueError, RecursionError):
        raise ApiError(400, "send a JSON object (Content-Type: application/json)") from None
    if not isinstance(body, dict):
        raise ApiError(400, "send a JSON object (Content-Type: application/json)")
    unknown = sorted(set(body) - set(specs) - set(allowed))
    if unknown:
        raise ApiError(400, f"unknown field {unknown[0]!r}"
                            f"{suggest(str(unknown[0]), (*specs, *allowed))}; expected some of "
                            f"{', '.join(sorted((*specs, *allowed)))}")
    if _depth(body) > MAX_DEPTH:
        raise ApiError(400, f"the JSON nests deeper than {MAX_DEPTH} levels")
    if b"\\u" in data:  # an escape can make a NUL or a lone surrogate, which no row holds
        body = schema.storable(body)
    return {name: spec.value(name, body) for name, spec in specs.items()} | \
        {name: body[name] for name in allowed if name in body}


def _depth(value: Any, level: int = 1) -> int:
    if level > MAX_DEPTH:
        return level
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return max((_depth(child, level + 1) for child in children), default=level)


def _id(value: int, what: str) -> int:
    """A row id from the path; one no row can have is unknown (404), not an error."""
    if not 0 < value < schema.INT_LIMIT:
        raise ApiError(404, f"no {what} {value}")
    return value


def state_of(live: LiveEpisode) -> dict[str, Any]:
    """What the agent is shown (:meth:`AgentTurns.state`)."""
    return live.turns.state()


@bp.post("/runs")
def create_run():
    """A new agent run (one agent configuration)."""
    body = _body(RUN)
    config = body["config"] or {}
    if not isinstance(config, dict):
        raise ApiError(400, "config must be a JSON object")
    body["study_id"] = body["study_id"] or g.token.study_id
    if body["study_id"] != g.token.study_id:
        scope = f"study {g.token.study_id!r}" if g.token.study_id else "runs outside any study"
        raise ApiError(403, f"token {g.token.name!r} is for {scope} only")
    kind = body["agent_kind"] or "llm"
    with _store().session() as session:
        if body["study_id"] is not None and session.get(Study, body["study_id"]) is None:
            raise ApiError(404, f"no study {body['study_id']!r}")
        same = session.exec(select(AgentRun).where(
            AgentRun.token == g.token.name, AgentRun.agent_kind == kind,
            AgentRun.model == body["model"], AgentRun.study_id == body["study_id"])).all()
        for row in same:
            if row.config == config:
                return jsonify({"agent_run_id": row.id}), 200
        row = AgentRun(agent_kind=kind, model=body["model"], config=config,
                       study_id=body["study_id"], token=g.token.name)
        session.add(row)
        session.flush()
        return jsonify({"agent_run_id": row.id}), 201


@bp.get("/runs")
def list_runs():
    """This token's runs of one agent (``?agent_kind=llm&model=NAME``; no model: runs
    without one), newest first, with their configurations: how a rerun whose options
    changed finds the run that holds its unfinished attempts."""
    kind = request.args.get("agent_kind") or "llm"
    model = request.args.get("model") or None
    with _store().session() as session:
        rows = session.exec(select(AgentRun).where(
            AgentRun.token == g.token.name, AgentRun.agent_kind == kind,
            AgentRun.model == model).order_by(AgentRun.id.desc())).all()
    return jsonify({"runs": [{"agent_run_id": r.id, "config": r.config or {}} for r in rows]})


def _run(run_id: int) -> AgentRun:
    """This token's run ``run_id`` (404 for another token's)."""
    with _store().session() as session:
        run = session.get(AgentRun, _id(run_id, "agent run"))
    if run is None or run.token != g.token.name:
        raise ApiError(404, f"no agent run {run_id}; create one with POST /api/agent/runs")
    return run


@bp.get("/runs/<int:run_id>/episodes")
def list_episodes(run_id: int):
    """The run's attempts: what a rerun needs to continue it."""
    _run(run_id)
    _store().wait(PAGE_WAIT)
    with _store().session() as session:
        rows = session.exec(select(EpisodeRow).where(EpisodeRow.agent_run_id == run_id)
                            .order_by(EpisodeRow.id)).all()
    live = current_app.extensions["gridstudy.agent_episodes"]
    seen = last_seen(_store(), [r for r in rows if r.status == ACTIVE])
    return jsonify({"episodes": [
        {"episode_id": r.id, "problem_id": r.problem_id,
         "status": live[r.id].turns.status if r.id in live else r.status,
         "resumable": resumable(r.status, r.info), "run_index": (r.info or {}).get("run_index"),
         "owner": (r.info or {}).get("owner"), "last_seen": seen.get(r.id)}
        for r in rows]})


@bp.get("/runs/<int:run_id>/spending")
def run_spent(run_id: int):
    """What the run's recorded model turns cost, over every invocation: a rerun counts it
    against its budget."""
    _run(run_id)
    cost, tokens, uncounted = run_spending(_store(), run_id)
    return jsonify({"cost": cost, "tokens": tokens, "uncounted": uncounted})


@bp.post("/runs/<int:run_id>/episodes")
def start_episode(run_id: int):
    """Start an attempt at ``problem_id`` under this run."""
    body = _body(START, allowed=("max_invalid", "max_turns", "run_index", "owner"))
    run = _run(run_id)
    try:
        problem = registry.get_problem(body["problem_id"])
    except KeyError as error:
        raise ApiError(404, error.args[0]) from None
    limits = {"max_invalid": _positive(body, "max_invalid", MAX_INVALID),
              "max_turns": _positive(body, "max_turns", MAX_TURNS)}
    run_index = _positive(body, "run_index", 0, least=0)
    owner = _owner(body)
    try:
        recorder = EpisodeRecorder(_store(), problem, agent_run_id=run_id, study_id=run.study_id,
                                   info={**limits, "run_index": run_index, **owner},
                                   claim_run="run_index" in body)
    except RunIndexTaken as error:
        held, status, info = error.holder
        if status != ACTIVE or not _same_owner(info.get("owner"), owner.get("owner")):
            raise ApiError(409, str(error)) from None
        live = _live(held)  # this client's start sent again: its answer did not arrive
        return jsonify({"episode_id": live.id, "state": state_of(live)}), 201
    live = LiveEpisode(recorder.episode_id, AgentTurns(Episode(problem), recorder, **limits),
                       g.token.name)
    current_app.extensions["gridstudy.cluster"].claim(cluster.agent_token(live.id), live.id)
    current_app.extensions["gridstudy.agent_episodes"][live.id] = live
    return jsonify({"episode_id": live.id, "state": state_of(live)}), 201


def _positive(body: dict[str, Any], name: str, default: int, least: int = 1) -> int:
    value = body.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or \
            not least <= value < schema.INT_LIMIT:
        raise ApiError(400, f"{name} must be an integer of at least {least}")
    return value


@bp.get("/episodes/<int:episode_id>")
def get_episode(episode_id: int):
    live = _live(episode_id)
    return jsonify({"episode_id": episode_id, "state": state_of(live)})


@bp.post("/episodes/<int:episode_id>/actions")
def post_action(episode_id: int):
    """One turn: apply the action, or log why it could not be applied."""
    body = _body(TURN, allowed=("turn",))
    turn = _positive(body, "turn", -1, least=0) if "turn" in body else None
    live = _live(episode_id)
    with live.lock:
        taken = live.turns.turns
        if turn is not None and turn == taken - 1 and live.last is not None:
            result = live.last  # sent again: its answer did not arrive
        elif live.turns.ended:
            raise ApiError(409, f"episode {episode_id} is over; start another")
        elif turn is not None and turn != taken:
            raise ApiError(409, f"episode {episode_id} holds {taken} turns, so the next is turn "
                                f"{taken}, not {turn}", turns=taken)
        else:
            fields = {name: body[name] for name in schema.MODEL_TURN if name != "raw_reply"}
            live.last_turn_at = time.time()
            result = live.last = live.turns.take(body["action"], error=body["error"],
                                                 raw_reply=body["raw_reply"], **fields)
        _stored_if_ended(live)
        return jsonify({"applied": result.applied, "action": result.action,
                        "error": result.error, "state": state_of(live)})


ENDED_WAIT = 10.0
"""Seconds an answer that ends an attempt waits for the store (then 503, kept)."""


def _stored_if_ended(live: LiveEpisode) -> None:
    """An answer that says the attempt ended is sent once its end is in the database, so
    that whatever the agent reads next (its run, the export) agrees."""
    if live.turns.ended:
        _store().wait(ENDED_WAIT)


@bp.post("/episodes/<int:episode_id>/end")
def end_episode(episode_id: int):
    """End an unfinished attempt (score 0) with the agent's reason: ``abandoned``, or
    ``error`` when its model could not answer."""
    body = _body(END) if request.get_data() else {"status": None, "reason": None}
    status = body["status"] or ABANDONED
    if status not in ENDINGS:
        raise ApiError(400, f"status must be one of {', '.join(ENDINGS)}")
    live = _live(episode_id)
    with live.lock:
        live.turns.end(status, body["reason"] or "ended by the agent",
                       resumable=status != ABANDONED)
        _stored_if_ended(live)
    return jsonify({"state": state_of(live)})


def _owner(body: dict[str, Any]) -> dict[str, Any]:
    """The client process playing the attempt, as the client names it (``owner``: a small
    JSON object), for the info of the attempt; a rerun of the client's batch reads it to
    tell an attempt whose process died from one still played."""
    owner = body.get("owner")
    if owner is None:
        return {}
    if not isinstance(owner, dict) or len(json.dumps(owner)) > 1000:
        raise ApiError(400, "owner must be a JSON object of at most 1000 characters")
    return {"owner": owner}


@bp.post("/episodes/<int:episode_id>/resume")
def resume_episode(episode_id: int):
    """Continue an interrupted attempt, or one its provider failed, where it stopped;
    with its recorded model turns, from which the agent rebuilds its conversation."""
    owner = _owner(_body({}, allowed=("owner",))) if request.get_data() else {}
    live = _live(episode_id)
    with live.lock:
        if not live.turns.ended:
            if not owner or not _same_owner(_recorded_owner(episode_id), owner["owner"]):
                raise ApiError(409, f"episode {episode_id} is still being played")
            stored = _stored(episode_id)  # this client's resume sent again: answered again
        else:
            stored = _stored(episode_id)
            if not resumable(stored.row.status, stored.row.info):
                raise ApiError(409, f"episode {episode_id} is {stored.row.status} and cannot be "
                                    "resumed; only an interrupted attempt, or one its provider "
                                    "failed, can")
            live.turns, live.last = stored.turns, last_turn(stored.events)
            live.turns.reopen()
            if owner:
                merge_info(_store(), episode_id, owner)
        turns = [{name: getattr(e, name) for name in schema.RECORDED_TURN}
                 for e in stored.events if e.source == "agent"]
        return jsonify({"episode_id": episode_id, "state": state_of(live), "turns": turns})


def _recorded_owner(episode_id: int) -> Any:
    """The ``owner`` the attempt's info names (the client that started or resumed it)."""
    _store().wait(PAGE_WAIT)
    with _store().session() as session:
        row = session.get(EpisodeRow, episode_id)
        return (row.info or {}).get("owner") if row else None


def _same_owner(stored: Any, given: Any) -> bool:
    """Whether two ``owner`` objects name one client: equal apart from ``since`` (when it
    asked)."""
    if not isinstance(stored, dict) or not isinstance(given, dict):
        return False
    return {k: v for k, v in stored.items() if k != "since"} == \
        {k: v for k, v in given.items() if k != "since"}


def last_turn(events: list[Any]) -> TurnResult | None:
    """What the last model turn among an attempt's stored ``events`` did, as its answer
    said (None before the first)."""
    turns = [e for e in events if e.parse_valid is not None]
    if not turns:
        return None
    last = turns[-1]
    return TurnResult(bool(last.applied), last.action if last.applied else None, last.error)


def _live(episode_id: int) -> LiveEpisode:
    """The live episode, rebuilt from its stored events after a restart, or when another
    worker played it last (``study_server/cluster.py``: one worker plays an attempt at a
    time; its lease moves here first)."""
    episodes = current_app.extensions["gridstudy.agent_episodes"]
    workers = current_app.extensions["gridstudy.cluster"]
    token = cluster.agent_token(_id(episode_id, "agent episode"))
    live, lease = episodes.get(episode_id), workers.lease(token)
    if live is None or lease is None or lease.worker != workers.id:
        episodes.pop(episode_id, None)
        _stored_run(episode_id)  # another token's episode is not moved here
        workers.pending.add(token)
        try:
            found = cluster.acquire(current_app, token, takeover=True,
                                    sleep=current_app.extensions["socketio"].sleep)
            if isinstance(found, str):
                raise ApiError(503, f"episode {episode_id} is being played on another server "
                                    "that did not answer; try again")
            live = episodes[episode_id] = _rebuild(episode_id)
            if found is None:
                workers.claim(token, episode_id)
        finally:
            workers.pending.discard(token)
    if live.token != g.token.name:
        raise ApiError(404, f"no agent episode {episode_id}")
    return live


def _stored_run(episode_id: int) -> AgentRun:
    """The agent run of this token that episode ``episode_id`` belongs to (404 if none)."""
    with _store().session() as session:
        row = session.get(EpisodeRow, episode_id)
        run = session.get(AgentRun, row.agent_run_id) if row and row.agent_run_id else None
    if run is None or run.token != g.token.name:
        raise ApiError(404, f"no agent episode {episode_id}")
    return run


def _rebuild(episode_id: int) -> LiveEpisode:
    stored = _stored(episode_id)
    return LiveEpisode(episode_id, stored.turns, g.token.name, last=last_turn(stored.events))


def _stored(episode_id: int) -> Any:
    """This token's stored attempt ``episode_id`` (404 for another token's)."""
    _stored_run(episode_id)
    try:
        stored = stored_attempt(_store(), episode_id)
    except CannotResume as error:  # ended now, with why: a rerun plays a new attempt
        raise ApiError(410, str(error)) from None
    if stored is None:
        raise ApiError(404, f"no agent episode {episode_id}")
    return stored
