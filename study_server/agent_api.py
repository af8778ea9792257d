"""The agent API: language models (or any program) play problems over HTTP.

An agent run is one configuration (``AgentRun``); each attempt is an episode of the same
:class:`~tasks.worldtest.Episode` the real-time server and the in-process runner drive,
and its events go to the same store with the same columns, so the dashboard and the
analysis see agent runs beside participants.

Routes (JSON in, JSON out; errors are ``{"error": message}`` with 400/404/409):

``POST /api/agent/runs``                      ``{agent_kind, model, config, study_id}`` -> 201 ``{agent_run_id}``
``POST /api/agent/runs/<id>/episodes``        ``{problem_id, max_invalid}`` -> 201 ``{episode_id, state}``
``GET  /api/agent/episodes/<id>``             -> ``{episode_id, state, turns, invalid}``
``POST /api/agent/episodes/<id>/actions``     ``{action, raw_reply, error, prompt_tokens,
completion_tokens, cost, latency}`` -> ``{applied, error, state}``
``POST /api/agent/episodes/<id>/end``         ``{reason}`` -> ``{state}`` (abandons it)

``state`` is ``Episode.view()`` plus ``text`` (the observation text a model is shown),
``actions`` (the allowed action patterns) and ``info``. An action that is null, does not
parse or is not available now is an invalid turn: logged with the raw reply, counted for
grounding accuracy, the episode not stepped; ``max_invalid`` of them in a row (default
5) abandon the attempt. A live episode lost by a restart is rebuilt by replaying its
applied events.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint, Flask, current_app, jsonify, request
from sqlmodel import select

from study_server.models import AgentRun, EpisodeRow, Event
from study_server.store import event_from_invalid_turn, event_from_step
from tasks import registry
from tasks.worldtest.episode import Episode

bp = Blueprint("agent_api", __name__, url_prefix="/api/agent")
MODEL_FIELDS = ("prompt_tokens", "completion_tokens", "cost", "latency")
DEFAULT_MAX_INVALID = 5


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class LiveEpisode:
    """An episode being played through the API, with its counters."""

    id: int
    episode: Episode
    agent_run_id: int
    study_id: str | None
    max_invalid: int
    seq: int = 0
    turns: int = 0
    invalid: int = 0
    streak: int = 0
    ended: bool = False
    """True once the attempt is over: finished, or abandoned."""
    lock: threading.Lock = field(default_factory=threading.Lock)


def init_app(app: Flask) -> None:
    app.extensions["gridstudy.agent_episodes"] = {}
    app.register_blueprint(bp)


@bp.errorhandler(ApiError)
def api_error(error: ApiError):
    return jsonify({"error": str(error)}), error.status


def _store() -> Any:
    return current_app.extensions["gridstudy.store"]


def _body() -> dict[str, Any]:
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise ApiError(400, "send a JSON object (Content-Type: application/json)")
    return body


def state_of(live: LiveEpisode) -> dict[str, Any]:
    """What the agent is shown: the view, the observation text, the allowed actions, and
    ``ended`` (finished or abandoned: no more turns)."""
    episode = live.episode
    return {**episode.view(), "text": episode.observation.text,
            "actions": [] if live.ended else episode.allowed_actions(),
            "info": episode.observation.info, "ended": live.ended}


@bp.post("/runs")
def create_run():
    """A new agent run (one agent configuration)."""
    body = _body()
    config = body.get("config") or {}
    if not isinstance(config, dict):
        raise ApiError(400, "config must be a JSON object")
    row = AgentRun(agent_kind=str(body.get("agent_kind") or "llm"), model=body.get("model"),
                   config=config, study_id=body.get("study_id"))
    with _store().session() as session:
        session.add(row)
        session.flush()
        return jsonify({"agent_run_id": row.id}), 201


@bp.post("/runs/<int:run_id>/episodes")
def start_episode(run_id: int):
    """Start an attempt at ``problem_id`` under this run."""
    body = _body()
    with _store().session() as session:
        run = session.get(AgentRun, run_id)
    if run is None:
        raise ApiError(404, f"no agent run {run_id}; create one with POST /api/agent/runs")
    try:
        problem = registry.get_problem(str(body.get("problem_id")))
    except KeyError as error:
        raise ApiError(404, error.args[0]) from None
    max_invalid = body.get("max_invalid", DEFAULT_MAX_INVALID)
    if not isinstance(max_invalid, int) or max_invalid < 1:
        raise ApiError(400, "max_invalid must be a positive integer")
    episode = Episode(problem)
    episode_id = _store().start_episode(problem=problem, agent_run_id=run_id, study_id=run.study_id,
                                        info={"max_invalid": max_invalid})
    live = LiveEpisode(episode_id, episode, run_id, run.study_id, max_invalid)
    current_app.extensions["gridstudy.agent_episodes"][episode_id] = live
    return jsonify({"episode_id": episode_id, "state": state_of(live)}), 201


@bp.get("/episodes/<int:episode_id>")
def get_episode(episode_id: int):
    live = _live(episode_id)
    return jsonify({"episode_id": episode_id, "state": state_of(live),
                    "turns": live.turns, "invalid": live.invalid})


@bp.post("/episodes/<int:episode_id>/actions")
def post_action(episode_id: int):
    """One turn: apply the action, or log why it could not be applied."""
    body = _body()
    live = _live(episode_id)
    with live.lock:
        if live.ended:
            raise ApiError(409, f"episode {episode_id} is over; start another")
        fields = {name: body.get(name) for name in MODEL_FIELDS}
        error = _why_invalid(live.episode, body.get("action"), body.get("error"))
        live.turns += 1
        if error is None:
            _apply(live, str(body["action"]), body.get("raw_reply"), fields)
        else:
            _invalid(live, body.get("raw_reply") or str(body.get("action") or ""), error, fields)
        return jsonify({"applied": error is None, "error": error, "state": state_of(live)})


@bp.post("/episodes/<int:episode_id>/end")
def end_episode(episode_id: int):
    """Abandon an unfinished attempt (score 0), with the agent's reason."""
    body = request.get_json(silent=True) or {}
    live = _live(episode_id)
    with live.lock:
        if not live.ended:
            _finish(live, "abandoned", str(body.get("reason") or "ended by the agent"))
    return jsonify({"state": state_of(live)})


def _why_invalid(episode: Episode, action: Any, reported: Any) -> str | None:
    if action is None:
        return str(reported or "the reply names no action")
    if not isinstance(action, str) or not episode.is_allowed(action):
        return f"{action} is not available now; available: {', '.join(episode.allowed_actions())}"
    return None


def _apply(live: LiveEpisode, action: str, raw_reply: Any, fields: dict[str, Any]) -> None:
    step = live.episode.apply(action)
    live.streak = 0
    _store().write_event(event_from_step(
        step, episode_id=live.id, seq=_next_seq(live), problem_id=live.episode.problem.id,
        source="agent", agent_run_id=live.agent_run_id, study_id=live.study_id,
        raw_reply=raw_reply, parse_valid=True, **fields,
    ))
    if step.done:
        _finish(live, "done")


def _invalid(live: LiveEpisode, raw_reply: str, error: str, fields: dict[str, Any]) -> None:
    live.invalid += 1
    live.streak += 1
    _store().write_event(event_from_invalid_turn(
        episode_id=live.id, seq=_next_seq(live), problem_id=live.episode.problem.id,
        phase=live.episode.phase, raw_reply=raw_reply, error=error,
        agent_run_id=live.agent_run_id, study_id=live.study_id, **fields,
    ))
    if live.streak >= live.max_invalid:
        _finish(live, "abandoned", f"{live.streak} invalid replies in a row")


def _next_seq(live: LiveEpisode) -> int:
    live.seq += 1
    return live.seq - 1


def _finish(live: LiveEpisode, status: str, reason: str | None = None) -> None:
    episode = live.episode
    info: dict[str, Any] = {**episode.outcome(), "turns": live.turns, "invalid": live.invalid}
    if reason:
        info["reason"] = reason
    score = episode.score if episode.done else 0.0
    _store().finish_episode(live.id, status=status, phase=episode.phase, score=score, info=info)
    live.ended = True


def _live(episode_id: int) -> LiveEpisode:
    """The live episode, rebuilt from its stored events after a restart."""
    episodes = current_app.extensions["gridstudy.agent_episodes"]
    live = episodes.get(episode_id)
    if live is None:
        live = episodes[episode_id] = _rebuild(episode_id)
    return live


def _rebuild(episode_id: int) -> LiveEpisode:
    store = _store()
    store.flush()
    with store.session() as session:
        row = session.get(EpisodeRow, episode_id)
        if row is None or row.agent_run_id is None:
            raise ApiError(404, f"no agent episode {episode_id}")
        events = session.exec(select(Event).where(Event.episode_id == episode_id)
                              .order_by(Event.seq)).all()
    episode = Episode.replay(registry.get_problem(row.problem_id),
                             [e.action for e in events if e.applied])
    streak = 0
    for event in events:
        streak = 0 if event.applied else streak + 1
    return LiveEpisode(episode_id, episode, row.agent_run_id, row.study_id,
                       row.info.get("max_invalid", DEFAULT_MAX_INVALID), seq=len(events),
                       turns=len(events), invalid=sum(not e.applied for e in events),
                       streak=streak, ended=row.status != "active")
