"""The participant flow's persistence: where each participant is, what they answered,
which live game session plays their current problem.

The stages themselves are pure (:mod:`consent.stages`); the blueprint is thin
(:mod:`consent.views`). This module is what stands between them and the database and the
real-time scheduler: it finds or creates the participant from Prolific's parameters,
builds their flow, stores each stage's one record, reserves their problems
(:mod:`study_server.assignment`) and opens, or after a restart rebuilds by replay, the
game session of their current problem.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from flask import Flask
from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, func, select

from consent import exclusion, quality
from consent.definition import StudyDefinition
from consent.screening import study_palette
from consent.stages import (
    CONTINUE,
    JUDGES_EPISODE,
    JUDGES_PARTICIPANT,
    PLAYS_TASK,
    PLAYS_TUTORIAL,
    RESERVES_PROBLEMS,
    RETRY,
    FlowState,
    Stage,
    build_steps,
)
from records import schema
from records.models import EpisodeRow, Event, Participant, Signal, utcnow
from records.recorder import merge_info
from records.schema import as_utc
from records.store import PAGE_WAIT, hold, locked
from study_server import assignment, browser_play, cluster, engine
from study_server.arrivals import Arrivals
from tasks import registry

FELL_BACK = "play_fallback"
"""``participant.data``'s record of a browser that could not run the engine: its games
are played from the server from then on."""
LAST_ERROR = "last_error"
"""``participant.data``'s last answer to be redone: ``[its answering, what it was told]``
(:func:`answering`), told again to the same answer sent twice."""
STUDY_REREAD = 5.0
"""Seconds a study's connection limit is kept in memory before it is read again: a study
file replaced while the server runs (``gridstudy study create --replace --live``) is
followed within them."""
ENDED = ("complete", "declined", "screened-out", "failed-quiz", "timed-out", "full",
         "wrong-device", "failed-attention", "slow-connection")


class StudyNotOpen(LookupError):
    """A new arrival at a study that is paused or closed (returning participants go on)."""

    def __init__(self, status: str, definition: StudyDefinition) -> None:
        super().__init__(f"study {definition.id!r} is {status}")
        self.status, self.definition = status, definition


def answering(data: dict[str, Any]) -> str:
    """The stage a participant is at and the tries they have made of it (``data`` of
    their row): a form carries it, so that a form sent twice, or a stale one, is told
    from the answer the stage waits for (:meth:`Flow.submit`)."""
    return f"{data['step']}.{data.get('tries', 0)}"


@dataclass
class Page:
    """What the participant sees now: a stage, or the end of their flow."""

    participant: Participant
    definition: StudyDefinition
    stage: Stage | None = None
    state: FlowState | None = None
    context: dict[str, Any] = field(default_factory=dict)

    @property
    def answering(self) -> str:
        """Which answer of which stage the page's form gives (:func:`answering`)."""
        return answering(self.participant.data)

    @property
    def deadline(self) -> float:
        """Unix seconds when the visit's time limit passes (every page counts down to it;
        the server ends the visit then, whatever the page: ``Flow.end_overdue``)."""
        started = as_utc(self.participant.created_at)
        return started.timestamp() + self.definition.time_limit_seconds

    @property
    def seconds_left(self) -> int:
        """Whole seconds until :attr:`deadline` (what the page counts down from: the
        participant's clock may be set wrong)."""
        return max(0, int(self.deadline - time.time()))


def init_app(app: Flask) -> None:
    """Register the participant flow (``/study/...``) on ``app``."""
    from consent import views
    from study_server import auth

    auth.init_app(app)
    app.extensions["gridstudy.flow"] = Flow(app)
    views.init_app(app)


class Flow:
    def __init__(self, app: Flask) -> None:
        self.app = app
        self.arrivals = Arrivals(app.config["ARRIVALS_PER_ADDRESS"], app.config["ARRIVALS_WINDOW"])
        self.palettes: dict[tuple[str, ...], list[str]] = {}
        self.round_trips: dict[str, tuple[float, float | None]] = {}  # read at, limit

    @property
    def store(self) -> Any:
        return self.app.extensions["gridstudy.store"]

    @property
    def scheduler(self) -> Any:
        return self.app.extensions["gridstudy.realtime"]

    # -- entry ----------------------------------------------------------------------------

    def enter(self, study_id: str, pid: str, prolific_study: str | None, prolific_session: str | None,
              address: str | None = None) -> int:
        """The participant with this Prolific id (created on first arrival, unless
        ``address`` brought too many new participants lately: :mod:`study_server.arrivals`);
        their id. Two arrivals of one person at once (a link opened twice, a double click)
        are one participant: the second finds the row the first made (the database keeps
        one row per study and Prolific id)."""
        try:
            return self._enter(study_id, pid, prolific_study, prolific_session, address)
        except IntegrityError:  # the same person's other arrival made the row first
            return self._enter(study_id, pid, prolific_study, prolific_session, address)

    def _enter(self, study_id: str, pid: str, prolific_study: str | None,
               prolific_session: str | None, address: str | None) -> int:
        with self.store.session() as db:
            study, definition = assignment.load_study(db, study_id)
            found = db.exec(select(Participant).where(
                Participant.study_id == study_id, Participant.external_id == pid)).first()
            if found is None and study.status != "open":
                raise StudyNotOpen(study.status, definition)
            if found is None:
                self.arrivals.admit(address)
                found = Participant(study_id=study_id, external_id=pid, prolific_study_id=prolific_study,
                                    prolific_session_id=prolific_session, data={"step": 0, "records": []})
                db.add(found)
            sessions = dict(found.prolific_sessions or {})
            if prolific_session and prolific_session not in sessions:
                sessions[prolific_session] = utcnow().isoformat()
                found.prolific_sessions = sessions
            db.flush()
            return found.id

    # -- the current page -----------------------------------------------------------------

    def page(self, study_id: str, participant_id: int) -> Page:
        """Where the participant is, after enforcing the study's time limit (a visit past
        it is ended in a transaction of its own, :meth:`_end_if_active`, then read again)."""
        with self.store.session() as db:
            participant, definition = self._load(db, study_id, participant_id)
            overdue = participant.status == "active" and self._over_time(participant, definition)
        if overdue:
            self._end_if_active(participant_id, "timed-out", overdue=True)
        with self.store.session() as db:
            participant, definition = self._load(db, study_id, participant_id)
            participant.updated_at = utcnow()
            if participant.status != "active":
                return Page(participant, definition)
            steps, state = self._steps(db, participant, definition)
            stage, argument = steps[participant.data["step"]]
            state.argument = argument
            page = Page(participant, definition, stage, state)
        page.context = {**stage.context(state), **self._live_context(page)}
        return page

    def submit(self, study_id: str, participant_id: int, form: dict[str, str]) -> str | None:
        """Evaluate the current stage's form; an error message when it must be redone.

        The outcome is applied only to the answer it gives (the form's ``answering``,
        :func:`answering`; the page's stage and tries when the form has none): under the
        participant's write lock, a form answered meanwhile by another request (the same
        button pressed twice, a form sent from two tabs, a page left open) changes nothing.
        Before, a double click on "I agree" moved on twice: the colour-vision screening
        was skipped, every time; a double click on a wrong quiz answer cost two tries."""
        self.store.wait(PAGE_WAIT)  # the current episode's events, before judging it
        page = self.page(study_id, participant_id)
        if page.stage is None:
            return None
        asked = form.get("answering") or page.answering
        page.state.episode_done = self._episode_done(page)
        outcome = page.stage.evaluate(page.state, form)
        with locked(self.store.engine, Participant, participant_id) as db:
            participant = db.get(Participant, participant_id)
            data = dict(participant.data)
            if answering(data) != asked or participant.status != "active":
                # answered already: the page shows where the participant is, and why
                # again if that answer was to be redone (the second click of a double
                # click is the page the browser shows)
                said = data.get(LAST_ERROR) or [None, None]
                return said[1] if said[0] == asked and participant.status == "active" else None
            if outcome.status == RETRY:
                if page.stage.counts_tries and outcome.costs_try:  # a wrong try
                    data["tries"] = data.get("tries", 0) + 1
                data[LAST_ERROR] = [asked, outcome.error]
                participant.data = data
                return outcome.error
            now = utcnow()
            started = data.get("stage_started_at") or as_utc(participant.created_at).isoformat()
            data["records"] = [*data.get("records", []),
                               {**outcome.record, "started_at": started, "finished_at": now.isoformat()}]
            data["step"], data["tries"] = data["step"] + 1, 0
            data["stage_started_at"] = now.isoformat()
            participant.data = data
            if outcome.record.get("stage") == "consent" and outcome.record.get("agreed"):
                participant.consent_version = outcome.record["version"]
            self._after(db, participant, page, outcome.status)
        return None

    def end_overdue(self) -> int:
        """End every active visit whose time limit has passed (``timed-out``: its code,
        its slots freed), whether or not the participant is still here; how many."""
        with self.store.session() as db:
            active = db.exec(select(Participant).where(Participant.status == "active")).all()
            definitions: dict[str, StudyDefinition] = {}
            overdue = []
            for participant in active:
                study_id = participant.study_id
                if study_id not in definitions:
                    definitions[study_id] = assignment.load_study(db, study_id)[1]
                if self._over_time(participant, definitions[study_id]):
                    overdue.append(participant.id)
        return sum(self._end_if_active(pid, "timed-out", overdue=True) for pid in overdue)

    def ended_of(self, participant_ids: list[int]) -> dict[int, str]:
        """Which of these participants' visits are over: id -> their study."""
        if not participant_ids:
            return {}
        with self.store.session() as db:
            rows = db.exec(select(Participant.id, Participant.study_id).where(
                Participant.id.in_(participant_ids), Participant.status != "active")).all()
        return dict(rows)

    def round_trip_limit(self, study_id: str) -> float | None:
        """The study's ``max_round_trip_ms`` (None: any connection), read again every
        :data:`STUDY_REREAD` seconds. Before, it was read once per process: a researcher
        who relaxed the limit, seeing participant after participant sent away for a slow
        connection, saw the server go on sending them away with the old one."""
        now = time.monotonic()
        read = self.round_trips.get(study_id)
        if read is None or now - read[0] > STUDY_REREAD:
            with self.store.session() as db:
                limit = assignment.load_study(db, study_id)[1].max_round_trip_ms
            read = self.round_trips[study_id] = (now, limit)
        return read[1]

    def leave(self, study_id: str, participant_id: int, status: str,
              because: str | None = None) -> None:
        """End an active participant's visit with ``status``: at their request (a device
        the study cannot be played on), or the server's (a connection too slow).
        ``because``, kept as the participant's ``data.ended_because``, says what their
        device lacked (``"no JavaScript"``)."""
        with self.store.session() as db:
            self._load(db, study_id, participant_id)  # LookupError for another study's
        self._end_if_active(participant_id, status, because=because)

    def _end_if_active(self, participant_id: int, status: str, *, overdue: bool = False,
                       because: str | None = None) -> bool:
        """End the visit with ``status`` if it is still active (and, with ``overdue``,
        past its time limit), under its write lock: whether it was ended. A visit is read
        again under the lock, since another request may have ended it since it was read:
        on SQLite as on PostgreSQL, the deadline sweep, released by the lock of a participant's last
        answer, wrote ``timed-out`` over the completion that answer had just made."""
        with locked(self.store.engine, Participant, participant_id) as db:
            participant = db.get(Participant, participant_id)
            if participant is None or participant.status != "active":
                return False
            if overdue:
                _, definition = assignment.load_study(db, participant.study_id)
                if not self._over_time(participant, definition):
                    return False
            self._end(db, participant, status, because)
            return True

    def record_signals(self, study_id: str, participant_id: int, items: list[Any],
                       episode_id: int | None = None) -> int:
        """Store the browser's data-quality signals (:func:`consent.quality.parse` checks
        each; one bad signal refuses the lot); how many were stored. ``episode_id`` must
        be one of the participant's attempts.

        The request's signals are stored first, then counted with those stored before
        them against the visit's budget (:data:`consent.quality.SIGNALS_AHEAD`), and
        taken back if over it: requests sent at once see one another. Counted before they
        were stored, forty requests of 50 sent together stored 900 in a second where the
        budget was 200."""
        if not isinstance(items, list) or len(items) > quality.MAX_SIGNALS:
            raise quality.SignalError(f"expected a list of at most {quality.MAX_SIGNALS} signals")
        rows = [quality.parse(item, i) for i, item in enumerate(items)]
        now = utcnow()
        with self.store.session() as db:
            participant, _ = self._load(db, study_id, participant_id)
            seconds = (now - as_utc(participant.created_at)).total_seconds()
            if episode_id is not None:
                row = db.get(EpisodeRow, episode_id)
                if row is None or row.participant_id != participant_id:
                    raise quality.SignalError(f"episode {episode_id} is not this participant's")
            added = [Signal(participant_id=participant_id, study_id=study_id,
                            episode_id=episode_id, stage=participant.stage,
                            server_time=now.timestamp(), **row) for row in rows]
            db.add_all(added)
        if not added:
            return 0
        mine = [signal.id for signal in added]
        with self.store.session() as db:
            stored = db.exec(select(func.count()).select_from(Signal).where(
                Signal.participant_id == participant_id, Signal.id <= max(mine))).one()
        if stored > quality.SIGNALS_AHEAD + quality.SIGNALS_PER_SECOND * seconds:
            with self.store.session() as db:
                db.execute(delete(Signal).where(Signal.id.in_(mine)))
            raise quality.SignalError(f"more signals than a page sends: {stored} within "
                                      f"{seconds:.0f} s of the visit")
        return len(rows)

    def _signals(self, db: Session, **where: int) -> list[Any]:
        query = select(Signal).order_by(Signal.id)
        for name, value in where.items():
            query = query.where(getattr(Signal, name) == value)
        return db.exec(query).all()

    def _after(self, db: Session, participant: Participant, page: Page, status: str) -> None:
        if status != CONTINUE:
            self._end(db, participant, status)
            return
        effects = {RESERVES_PROBLEMS: self._reserve, JUDGES_EPISODE: self._judge_episode,
                   JUDGES_PARTICIPANT: self._judge_participant}
        for effect in page.stage.effects:
            effects[effect](db, participant, page)
        if participant.status == "active":
            steps, _ = self._steps(db, participant, page.definition)
            if participant.data["step"] >= len(steps):
                self._end(db, participant, "complete")
            else:
                participant.stage = steps[participant.data["step"]][0].name

    # -- helpers --------------------------------------------------------------------------

    def _load(self, db: Session, study_id: str, participant_id: int) -> tuple[Participant, StudyDefinition]:
        _, definition = assignment.load_study(db, study_id)
        participant = db.get(Participant, participant_id)
        if participant is None or participant.study_id != study_id:
            raise LookupError(f"participant {participant_id} is not in study {study_id!r}")
        return participant, definition

    def _over_time(self, participant: Participant, definition: StudyDefinition) -> bool:
        started = as_utc(participant.created_at)
        return utcnow() - started > timedelta(seconds=definition.time_limit_seconds)

    def _end(self, db: Session, participant: Participant, status: str,
             because: str | None = None) -> None:
        participant.status, participant.stage = status, "end"
        participant.ended_at = utcnow()
        study, definition = assignment.load_study(db, participant.study_id)
        participant.code = definition.code_for(status)
        flags = quality.summarise(self._signals(db, participant_id=participant.id))
        participant.data = {**(participant.data or {}), "quality": flags,
                            **({"ended_because": because} if because else {})}
        if status != "complete":
            self._release(db, participant)

    def _release(self, db: Session, participant: Participant) -> None:
        """Free the slots the ended visit's attempts still hold."""
        held = [r.id for r in assignment.participant_episodes(db, participant.id)
                if r.status in assignment.HOLDING]
        assignment.mark_abandoned(db, held, f"released: participant {participant.status}")

    def _steps(self, db: Session, participant: Participant, definition: StudyDefinition) -> tuple[list, FlowState]:
        rows = assignment.participant_episodes(db, participant.id)
        problems = [r.problem_id for r in rows]
        challenges = {p: registry.problem_spec(p).challenge for p in [*problems, *definition.tutorials.values()]}
        state = FlowState(definition, participant.id, problems, challenges,
                          palette=self.palette(definition), tries=participant.data.get("tries", 0))
        return build_steps(definition, problems, challenges), state

    def palette(self, definition: StudyDefinition) -> list[str]:
        """The colours of the study's problems (the screening's), kept per list of
        problems: a study replaced with other problems is screened on theirs."""
        key = tuple(definition.problems)
        if key not in self.palettes:
            self.palettes[key] = study_palette(definition.problems)
        return self.palettes[key]

    def _reserve(self, db: Session, participant: Participant, page: Page) -> None:
        """Reserve the participant's problems, or end the visit as ``full``. The
        assignment takes the study's lock in a transaction of its own, so the answer's is
        committed first and the visit's lock taken again after, its row read anew: a visit
        ended meanwhile (its time run out) stays ended, and gives back what was reserved
        for it. Before, the answer went on with the row it had read: a visit timed out in
        that instant was ended again as ``full``, or moved on past its end, holding the
        slots it had just been given."""
        db.commit()
        full = False
        try:
            assignment.assign(self.store.engine, participant.study_id, participant.id)
        except assignment.StudyFull:
            full = True
        hold(db.connection(), Participant, participant.id)
        db.refresh(participant)
        if participant.status != "active":
            self._release(db, participant)
        elif full:
            self._end(db, participant, "full")

    def _judge_episode(self, db: Session, participant: Participant, page: Page) -> None:
        row = self._task_row(db, page)
        db.refresh(row, with_for_update=True)  # its info as it is now, until the answer commits
        events = db.exec(select(Event).where(Event.episode_id == row.id).order_by(Event.seq)).all()
        if not events:
            return
        inputs = [e.server_time for e in events if e.source == "input"]
        flags = quality.summarise(self._signals(db, episode_id=row.id))
        row.info = {**(row.info or {}), "quality": flags}
        rules = page.definition.exclusion
        reason = exclusion.unverified_reason(rules, row.info) \
            or exclusion.episode_reason(rules, inputs, events[0].server_time,
                                        events[-1].server_time,
                                        solved=(row.score or 0.0) >= 1.0) \
            or exclusion.quality_reason(rules, flags)
        if reason and row.included:  # an attempt excluded already keeps why (ended, by hand)
            row.included, row.exclusion_reason = False, reason

    def _judge_participant(self, db: Session, participant: Participant, page: Page) -> None:
        results = [r["passed"] for r in participant.data["records"] if r.get("stage") == page.stage.name]
        reason = exclusion.participant_reason(page.definition.exclusion, results)
        if reason:
            earlier, participant.exclusion_reason = participant.exclusion_reason, reason
            for row in assignment.participant_episodes(db, participant.id, every=True):
                # an attempt excluded for its own sake keeps why (and stays out when the
                # participant is included again: dashboard._lift takes this reason only)
                if row.included or (earlier and row.exclusion_reason == earlier):
                    row.included, row.exclusion_reason = False, reason
            if page.definition.attention_failure == "end":  # the study file's choice
                self._end(db, participant, "failed-attention")

    # -- live play ------------------------------------------------------------------------

    def _task_row(self, db: Session, page: Page) -> EpisodeRow:
        return assignment.participant_episodes(db, page.participant.id)[page.state.argument]

    def _played_row(self, db: Session, page: Page) -> EpisodeRow:
        """The episode row of the game this stage's page plays."""
        if page.stage.plays == PLAYS_TUTORIAL:
            return self._tutorial_row(db, page)
        return self._task_row(db, page)

    def _live_context(self, page: Page, again: bool = True) -> dict[str, Any]:
        if page.stage.plays is None:
            return {}
        # Written events first: the writer needs the lock a session below may take, and a
        # session rebuilt by replay needs every action logged so far.
        self.store.wait(PAGE_WAIT)
        with self.store.session() as db:
            row = self._played_row(db, page)
            if row.status == assignment.ABANDONED and page.stage.plays == PLAYS_TASK:
                new = assignment.replace_abandoned(self.store.engine, page.definition.id, page.participant.id,
                                                   page.state.argument)
                row = db.get(EpisodeRow, new) if new else row
            problem = registry.get_problem(row.problem_id)
            if row.status == assignment.ASSIGNED:  # it is played from now, on this version
                row.status, row.started_at = assignment.ACTIVE, utcnow()
                row.info = {**(row.info or {}),
                            schema.VERSION_KEY: registry.problem_version(problem)}
            done, episode_id = row.status in assignment.ENDED, row.id
            ended = row.status == assignment.ABANDONED
        context = {"episode_done": done, "episode_ended": ended, "problem": problem,
                   "episode_id": episode_id, "problem_id": problem.id, "play": "server"}
        if done:
            return {**context, "token": None}
        if page.definition.play == "browser" and not page.participant.data.get(FELL_BACK) \
                and engine.in_engine(problem.id):
            context = {**context, "play": "browser",
                       "token": browser_play.browser_token(self.app, episode_id)}
        else:
            context = {**context, "token": cluster.live_token(self.app, episode_id)}
        if context["token"] is None and again:  # abandoned meanwhile (cluster.resumable)
            return self._live_context(page, again=False)
        return context

    def fall_back(self, study_id: str, participant_id: int, error: str) -> None:
        """The participant's browser could not run the engine: their games are played
        from the server from now on (the attempt under way goes on from what its log
        stored), and the data says why."""
        with self.store.session() as db:
            self._load(db, study_id, participant_id)  # LookupError for another study's
        with locked(self.store.engine, Participant, participant_id) as db:
            participant = db.get(Participant, participant_id)  # its data as it is now
            if participant.data.get(FELL_BACK):
                return
            participant.data = {**participant.data, FELL_BACK: {"error": error[:200],
                                                                "at": utcnow().isoformat()}}
        for episode_id in browser_play.drop(self.app, participant_id):
            merge_info(self.store, episode_id, {"play": "server", "fallback": error[:200]})

    def _tutorial_row(self, db: Session, page: Page) -> EpisodeRow:
        challenge = page.state.argument
        key = f"tutorial:{challenge}"
        episode_id = page.participant.data.get(key)
        if episode_id is not None:
            return db.get(EpisodeRow, episode_id)
        problem = registry.get_problem(page.definition.tutorials[challenge])
        episode_id = self.store.start_episode(problem=problem, participant_id=page.participant.id,
                                              study_id=page.participant.study_id,
                                              info={"tutorial": challenge})
        row = db.get(EpisodeRow, episode_id)
        row.included, row.exclusion_reason = False, "tutorial"
        participant = db.get(Participant, page.participant.id)
        participant.data = {**participant.data, key: episode_id}
        return row

    def _episode_done(self, page: Page) -> bool:
        if page.stage.plays is None:
            return False
        with self.store.session() as db:
            return self._played_row(db, page).status in assignment.ENDED

