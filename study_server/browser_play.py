"""An attempt played in the participant's browser, kept by the server: the browser's
log replayed on the server's own engine, every frame checked.

In browser play the page ticks the engine itself (the ``tasks`` package under Pyodide,
``study_server/engine.py``) and sends its :class:`tasks.worldtest.verify.PlayLog` in
batches. :class:`BrowserAttempt` takes each batch in order: an applied action is applied
here to the attempt's own :class:`~tasks.worldtest.episode.Episode` (same problem, same
seed) and written as the server's step, with the server's frame; the browser's hash of
the frame it showed is compared with the server's, and the first tick where they differ
marks the attempt unverified (``info.verified`` false, ``info.first_difference`` the
tick and both hashes). An action the server's episode refuses, or a failure that does
not happen here, is a difference too. A refused input is written as the raw input it
was. So the record is the one the server would have written had it ticked the game,
whatever the browser claims; a tampered log only marks its own attempt.

Batches may be sent again (a lost acknowledgement, a reload): entries already taken are
skipped by their number ``n``; a batch that leaves a gap is refused whole, with what
the server expects next.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from records.offload import off_loop
from records.recorder import EpisodeRecorder
from records.schema import as_utc
from records.store import PAGE_WAIT
from study_server.clock import UNIX_SECONDS, is_unix_time, steady_time
from tasks.core import parse_action
from tasks.limits import StepLimitExceeded
from tasks.worldtest.episode import DONE, Episode
from tasks.worldtest.tick import AUTO, DROPPED, ERROR, INPUT, MALFORMED, RATE_LIMITED, REJECTED

BROWSER = "browser"
"""``info.play`` of an attempt played in the browser."""
SOURCES = frozenset({INPUT, AUTO})
REFUSALS = frozenset({DROPPED, REJECTED, MALFORMED, RATE_LIMITED})
"""What a page's tick engine may say became of an input it did not apply."""
REASON_CHARS = 500
"""Characters of a refusal's reason kept (a page's are a line)."""
MAX_BATCH = 512
"""Entries one batch may hold (about a minute of play at 8 FPS)."""
AHEAD = 2.0
"""Seconds of play a log may hold beyond the time since its attempt began (the page's
clock and the server's differ a little, and the page may tick before its attempt's row
says it began)."""
REFUSALS_PER_SECOND = 30
"""Refused inputs a log may hold per second of its attempt (a key held down repeats
about 30 times a second; the page refuses those that come faster than its ticks)."""
_HASH = re.compile(r"[0-9a-f]{16}")
MOVED = "the game moved to another server; join it again"


class LogError(ValueError):
    """A batch the server cannot take: what is wrong with it, in one line."""


@dataclass
class Taken:
    """What a batch did: the number of the next entry the server expects (everything
    before it is stored), and whether the attempt still replays to the browser's frames."""

    next: int
    verified: bool


class BrowserAttempt:
    """The server's side of one attempt played in a browser.

    A page ticks in real time, so its log never holds more ticks than the frame rate
    allows since the attempt began (:data:`AHEAD` seconds of slack), nor more refused
    inputs than :data:`REFUSALS_PER_SECOND` allows: a batch that would is refused whole.
    Without that bound one connection made the server replay and store 100,000 ticks
    in eight seconds, a record no person played and a disk filled at will.
    ``began``: when the attempt began (Unix seconds; now by default); ``ticks`` and
    ``refusals``: the entries of each kind it holds already (a rebuilt attempt);
    ``clock``: now, in Unix seconds (:func:`study_server.clock.steady_time`, which a step
    of the system's clock does not move: on the system's clock, a step back of an hour
    refused every page's log for the hour)."""

    def __init__(self, episode: Episode, recorder: EpisodeRecorder, next_entry: int = 0, *,
                 began: float | None = None, ticks: int = 0, refusals: int = 0,
                 clock: Any = steady_time) -> None:
        self.episode = episode
        self.recorder = recorder
        self.next = next_entry
        self.clock = clock
        self.began = clock() if began is None else began
        self.ticks, self.refusals = ticks, refusals
        self.difference: dict[str, Any] | None = None
        self.ended = False
        self.ended_at: float | None = None
        self.actions: list[str] = []
        """The actions applied so far, in order: what a page that left rebuilds from."""
        self.last_input_at: float | None = None
        """When the server took the last entry a person made (the live monitor's idle)."""
        self.moved = False
        """Another worker takes the log now: nothing more is taken here."""
        self.lock = threading.Lock()

    @property
    def verified(self) -> bool:
        return self.difference is None

    def take(self, batch: Any) -> Taken:
        """Check the whole batch, then store and verify its new entries in order (one
        batch at a time: a batch sent again while the first is replayed waits)."""
        with self.lock:
            if self.moved:
                raise LogError(MOVED)
            entries = self._checked(batch)
            self._on_time([entry for entry in entries if entry["n"] >= self.next])
            for entry in entries:
                if entry["n"] < self.next:
                    continue
                if self.ended and "refused" not in entry:  # a key pressed as it ended is kept
                    raise LogError("the attempt is over; nothing after its end is taken")
                self._take(entry)
                self.next += 1
            return Taken(self.next, self.verified)

    def stop(self) -> None:
        """Take nothing more: the attempt was ended elsewhere (its row says how)."""
        with self.lock:
            if not self.ended:
                self.ended, self.ended_at = True, steady_time()

    def move(self) -> None:
        """Take nothing more here: another worker takes the log from now on (once the
        batch being taken, if any, is stored)."""
        with self.lock:
            self.moved = True

    def abandon(self, reason: str) -> None:
        """End the attempt here, ``abandoned`` for ``reason``; nothing after is taken."""
        with self.lock:
            if not self.ended:
                self._end("abandoned", {"reason": reason})

    def _on_time(self, new: list[dict[str, Any]]) -> None:
        """A :class:`LogError` unless the log, with ``new``, keeps to the clock."""
        seconds = max(0.0, self.clock() - self.began) + AHEAD
        refused = sum("refused" in entry for entry in new)
        ticks, rate = self.ticks + len(new) - refused, self.episode.frame_rate
        if ticks > seconds * rate:
            raise LogError(f"the log runs ahead of the clock: {ticks} ticks within "
                           f"{seconds:.0f} s at {rate} a second")
        if self.refusals + refused > seconds * REFUSALS_PER_SECOND:
            raise LogError(f"the log holds more refused inputs than anyone can press: "
                           f"{self.refusals + refused} within {seconds:.0f} s")
        self.ticks, self.refusals = ticks, self.refusals + refused

    def record(self) -> dict[str, Any]:
        """What a page rebuilds the attempt from: the actions applied, and the number of
        the next entry the server expects (``tasks.worldtest.verify.LocalPlay``)."""
        with self.lock:
            return {"actions": list(self.actions), "next": self.next}

    def _checked(self, batch: Any) -> list[dict[str, Any]]:
        if not isinstance(batch, list) or len(batch) > MAX_BATCH:
            raise LogError(f"a batch is a list of at most {MAX_BATCH} entries")
        expected = None
        for entry in batch:
            if not isinstance(entry, dict) or type(entry.get("n")) is not int:
                raise LogError("every entry is an object with its number n")
            if expected is not None and entry["n"] != expected:
                raise LogError(f"entries are numbered in order: {entry['n']} after {expected - 1}")
            expected = entry["n"] + 1
            _check_entry(entry)
        if batch and batch[0]["n"] > self.next:
            raise LogError(f"entry {batch[0]['n']} leaves a gap: the server expects entry "
                           f"{self.next} next")
        return batch

    def _take(self, entry: dict[str, Any]) -> None:
        client_time = entry.get("t")
        if "refused" in entry:
            self.recorder.refused(entry["text"][:200], status=entry["refused"],
                                  reason=entry["reason"][:REASON_CHARS], received_at=time.time(),
                                  client_time=client_time)
            return
        action, source, tick = entry["action"], entry["source"], entry["tick"]
        refusal = self.episode.refusal(parse_action(action))
        if refusal is not None:
            self._differs(tick, entry, f"the server's episode refuses {action!r}: {refusal}")
            self.recorder.refused(action, status="rejected", reason=refusal,
                                  received_at=time.time(), client_time=client_time)
            return
        try:
            step = self.episode.apply(action)
        except StepLimitExceeded as error:
            self._failed(entry, action, source, error, client_time)
            self._end(ERROR, {"reason": error.plain})
            return
        except Exception as error:  # an environment's runtime error, as the tick engine
            self._failed(entry, action, source, error, client_time)
            return
        self.actions.append(action)
        if source != AUTO:
            self.last_input_at = time.time()
        shown = self.recorder.applied(step, source=source, client_time=client_time)
        if "error" in entry or entry["hash"] != shown or entry["tick"] != step.index:
            self._differs(tick, entry, "the frame differs" if "hash" in entry
                          else "the browser's step failed and the server's did not",
                          server_hash=shown)
        if step.done:
            self._end("done", {"ticks": step.index + 1})

    def _failed(self, entry: dict[str, Any], action: str, source: str, error: Exception,
                client_time: float | None) -> None:
        message = f"{type(error).__name__}: {error}"
        self.recorder.failed(action, phase=self.episode.phase, source=source, error=message,
                             client_time=client_time)
        if "error" not in entry:
            self._differs(entry["tick"], entry, f"the server's step failed: {message}")

    def _differs(self, tick: Any, entry: dict[str, Any], why: str, **more: Any) -> None:
        if self.difference is None:
            self.difference = {"tick": tick, "n": entry["n"], "why": why,
                               "browser_hash": entry.get("hash"), **more}

    def _end(self, status: str, info: dict[str, Any]) -> None:
        self.ended, self.ended_at = True, steady_time()
        self.recorder.finished(self.episode, status=status, info={**info, **self.outcome()})

    def outcome(self) -> dict[str, Any]:
        """What the episode's info keeps about the check."""
        return {"play": BROWSER, "verified": self.verified,
                "first_difference": self.difference}


def _check_entry(entry: dict[str, Any]) -> None:
    """A :class:`LogError` for an entry of the wrong shape (nothing of it is taken)."""
    number = entry["n"]
    t = entry.get("t")
    if t is not None and not is_unix_time(t):  # the row would refuse it after the step
        raise LogError(f"entry {number}: t is {UNIX_SECONDS}, or null")
    if "refused" in entry:
        if not all(isinstance(entry.get(k), str) for k in ("text", "reason")):
            raise LogError(f"entry {number}: a refused input has refused, text and reason")
        if entry.get("refused") not in REFUSALS:
            raise LogError(f"entry {number}: refused is one of {', '.join(sorted(REFUSALS))}")
        return
    if not isinstance(entry.get("action"), str) or entry.get("source") not in SOURCES:
        raise LogError(f"entry {number}: an action entry has an action and a source "
                       f"({' or '.join(sorted(SOURCES))})")
    if entry.get("tick") is not None and type(entry["tick"]) is not int:
        raise LogError(f"entry {number}: tick is a whole number")
    if "error" in entry:
        if not isinstance(entry["error"], str):
            raise LogError(f"entry {number}: error is text")
    elif not isinstance(entry.get("hash"), str) or not _HASH.fullmatch(entry["hash"]):
        raise LogError(f"entry {number}: hash is the frame's 16-hex-digit hash")
    try:
        parse_action(entry["action"])
    except ValueError as error:
        raise LogError(f"entry {number}: {error}") from None


@dataclass
class BrowserSession:
    """An attempt a page plays in its browser, as the server holds it: who may send its
    log (the connection bound to it), and the attempt that takes it."""

    attempt: BrowserAttempt
    problem_id: str
    frame_rate: int
    study_id: str | None = None
    participant_id: int | None = None
    owner: str | None = None
    token: str = ""
    sid: str | None = None
    joined: bool = False
    """A page joined it once (a preview no page joins goes sooner, as the scheduler's)."""
    idle_since: float | None = field(default_factory=steady_time)
    """Since when no page is connected to it (None while one is)."""

    def __post_init__(self) -> None:
        self.token = self.token or secrets.token_urlsafe(16)

    @property
    def episode_id(self) -> int | None:
        return self.attempt.recorder.episode_id


def open_browser_session(store: Any, problem: Any, *, study_id: str | None = None,
                         participant_id: int | None = None, owner: str | None = None) -> BrowserSession:
    """A recorded attempt of ``problem`` to be played in a browser (its episode row made
    now, marked ``play: browser``)."""
    token = secrets.token_urlsafe(16)
    episode = Episode(problem)
    recorder = EpisodeRecorder(store, problem, study_id=study_id, participant_id=participant_id,
                               info=_marks(token), wait_for_end=False)
    return BrowserSession(BrowserAttempt(episode, recorder), problem.id, episode.frame_rate,
                          study_id, participant_id, owner, token)


def sessions(app: Any) -> dict[str, BrowserSession]:
    return app.extensions.setdefault("gridstudy.browser", {})


ENDED_KEPT = 60.0
"""Seconds an ended attempt stays held (a page whose last acknowledgement was lost sends
its last batch again), before the next new attempt forgets it."""


def keep(app: Any, played: BrowserSession, *, leased: bool = False) -> BrowserSession:
    """Hold ``played`` in this process (its page joins it by token), after a
    :func:`sweep`; its lease is taken first unless it is ``leased`` here already
    (``study_server/cluster.py``: one worker at a time takes an attempt's log)."""
    sweep(app)
    if not leased:
        app.extensions["gridstudy.cluster"].claim(played.token, played.episode_id)
    sessions(app)[played.token] = played
    return played


def sweep(app: Any, now: float | None = None) -> None:
    """Let go of the attempts no page needs here, as the scheduler lets go of the games it
    ticks: forget those that ended over :data:`ENDED_KEPT` seconds ago (their record is
    stored); end ``abandoned`` a preview no page joined within ``UNJOINED_TIMEOUT``
    seconds; forget any other no page was connected to for ``IDLE_TIMEOUT``.

    The last is only forgotten, its row left as it is: its page may play it on another
    worker, which rebuilds it by its token and has no lease to tell this one (a page that
    comes back here is rebuilt the same way), and in a study the abandon timeout releases
    it as it does any attempt gone silent. Without the sweep, the previews opened and left
    were held for good, and once ``MAX_PREVIEWS`` of them had been opened no page could
    open another until the server restarted."""
    from study_server.scheduler import NOT_JOINED

    now = steady_time() if now is None else now
    unjoined, idle = (float(app.config[key]) for key in ("UNJOINED_TIMEOUT", "IDLE_TIMEOUT"))
    held = sessions(app)
    for token, played in list(held.items()):
        attempt = played.attempt
        if attempt.ended_at is not None:
            if now - attempt.ended_at > ENDED_KEPT:
                held.pop(token, None)
            continue
        away = None if played.idle_since is None else now - played.idle_since
        if away is None:
            continue
        if not played.joined and played.participant_id is None and away > unjoined:
            attempt.abandon(NOT_JOINED)
        elif away <= idle:
            continue
        held.pop(token, None)


TOKEN_KEY = "browser_token"
"""``info`` key of a browser attempt: its token's digest, by which a page that kept
playing while its server restarted (or while another worker took over) joins it again."""


def browser_token(app: Any, episode_id: int, token: str | None = None) -> str | None:
    """The token of the browser attempt of episode ``episode_id``: the one held here; the
    one another live worker holds (the page's join asks that worker for it); or one
    rebuilt here from its stored record (a first visit, a restart, its worker's death)
    under its lease's token, else under ``token`` (a new one when None). None when it
    cannot be rebuilt (:func:`_rebuilt`)."""
    from study_server import cluster as clusters

    for played in list(sessions(app).values()):
        if played.episode_id == episode_id:
            return played.token
    workers: clusters.Cluster = app.extensions["gridstudy.cluster"]
    lease = workers.lease(episode_id=episode_id)
    if lease is not None and lease.alive and lease.worker != workers.id:
        return lease.token
    adopted = _rebuilt(app, episode_id, token or "", leased=False) if lease is None else \
        adopt(app, episode_id, lease.token)
    if isinstance(adopted, str):
        return lease.token
    return None if adopted is None else adopted.token


def adopt(app: Any, episode_id: int, token: str, takeover: bool = False,
          sleep: Any = time.sleep) -> BrowserSession | str | None:
    """The attempt of ``episode_id`` rebuilt here under ``token`` once its lease is this
    worker's (:func:`study_server.cluster.acquire`: taken from a dead worker, or handed
    over by a live one at its next heartbeat, which it declines while its page is
    connected there unless ``takeover``); or the reason it cannot be had; None when it
    cannot be rebuilt (:func:`_rebuilt`). Without the
    lease, a page that reached another worker (its own was briefly unreachable) and came
    back was given the first worker's old copy: it went back to that frame, and its log
    from there was stored a second time, two events with each ``seq``."""
    from study_server.cluster import leased

    return leased(app, token, lambda lease: off_loop(_rebuilt, app, episode_id, token,
                                                     leased=lease is not None),
                  takeover, sleep)


def _rebuilt(app: Any, episode_id: int, token: str, *, leased: bool) -> BrowserSession | None:
    """The attempt rebuilt from its stored record under ``token`` (a new one when empty):
    the stored events replayed on the server's episode, the log numbered on from what is
    stored; held here (:func:`keep`). None when it cannot be: its environment changed
    since it began (``study_server.cluster.resumable`` ends it)."""
    from sqlmodel import func, select

    from records.models import EpisodeRow, Event, RawInput
    from records.rebuild import rebuild, replays
    from study_server.cluster import resumable
    from tasks import registry

    store = app.extensions["gridstudy.store"]
    store.wait(PAGE_WAIT)
    with store.session() as db:
        row = db.get(EpisodeRow, episode_id)
        if not resumable(store, db, row):
            return None
        events = list(db.exec(select(Event).where(Event.episode_id == episode_id)
                              .order_by(Event.seq)).all())
        refused = db.exec(select(func.count()).select_from(RawInput)
                          .where(RawInput.episode_id == episode_id)).one()
    problem = registry.get_problem(row.problem_id)
    rebuilt = rebuild(problem, events)
    recorder = EpisodeRecorder(store, problem, episode_id=episode_id, next_seq=rebuilt.next_seq,
                               study_id=row.study_id, participant_id=row.participant_id,
                               wait_for_end=False)
    attempt = BrowserAttempt(rebuilt.episode, recorder, next_entry=len(events) + refused,
                             began=as_utc(row.started_at).timestamp(), ticks=len(events), refusals=refused)
    attempt.actions = [e.action for e in events if replays(e)]
    played = BrowserSession(attempt, problem.id, rebuilt.episode.frame_rate, row.study_id,
                            row.participant_id, token=token)
    remember(store, played, row.info or {})
    return keep(app, played, leased=leased)


def _marks(token: str) -> dict[str, str]:
    """What an attempt's info says when it is played in the browser under ``token``."""
    from study_server.tokens import digest

    return {"play": BROWSER, TOKEN_KEY: digest(token)}


def remember(store: Any, played: BrowserSession, info: dict[str, Any]) -> None:
    """Note in the attempt's row (whose info is ``info``) that it is played in the browser,
    under this token, unless it says so already."""
    from records.recorder import merge_info

    mark = _marks(played.token)
    if any(info.get(key) != value for key, value in mark.items()):
        merge_info(store, played.episode_id, mark)


def find(app: Any, token: str) -> tuple[int, str | None, int | None] | None:
    """The unfinished attempt played under ``token`` that this process does not hold (its
    server restarted, or another worker held it): its episode, study and participant
    (whose page alone may have it rebuilt here, :func:`adopt`); None when there is none."""
    from sqlmodel import select

    from records.models import EpisodeRow
    from study_server import assignment
    from study_server.tokens import digest

    store = app.extensions["gridstudy.store"]
    with store.session() as db:
        found = db.exec(select(EpisodeRow.id, EpisodeRow.study_id, EpisodeRow.participant_id)
                        .where(EpisodeRow.info[TOKEN_KEY].as_string() == digest(token),
                               EpisodeRow.status.in_(assignment.HOLDING))).first()
    return None if found is None else tuple(found)


def playing(app: Any) -> list[BrowserSession]:
    """The participants' attempts this process takes the logs of, unfinished or done (an
    attempt ended otherwise is over for the page too)."""
    return [played for played in list(sessions(app).values()) if played.participant_id
            and (not played.attempt.ended or played.attempt.episode.phase == DONE)]


def unfinished(app: Any) -> list[BrowserSession]:
    """The participants' attempts whose logs this process still takes (ending one of them
    stops its page)."""
    return [played for played in playing(app) if not played.attempt.ended]


def drop(app: Any, participant_id: int) -> list[int]:
    """Stop taking the logs of the participant's browser attempts (their games go on
    from the server): the episodes they were."""
    held = sessions(app)
    gone = [held.pop(token) for token, played in list(held.items())
            if played.participant_id == participant_id]
    for played in gone:
        played.attempt.move()  # a batch being taken is stored first, none after
    return [played.episode_id for played in gone]
