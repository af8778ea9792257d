"""Running a study on Prolific through its API: publish it, follow its submissions, carry
out the payment decisions (:func:`study_server.payments.decide`) and pay bonuses once.

The API token comes from ``PROLIFIC_API_TOKEN`` and is sent as ``Authorization: Token
<token>``; ``PROLIFIC_API_URL`` overrides the API's address. The token is never written
to the database, a log line or an export: only this module's :class:`Api` holds it.

What gridstudy keeps of Prolific is in four tables (``records/schema.py``): the study's
Prolific id (``prolificstudy``), each submission with its status and what review did
with it (``prolificsubmission``), each participant's bonus (``prolificbonus``) and each
bulk bonus payment (``prolificbatch``).

Paying bonuses happens at most once. Prolific's pay call is not idempotent, so:

* a participant's bonus is entered once (its row's key is the study and the
  PROLIFIC_PID; a second review finds it and leaves it);
* a batch takes the bonuses no batch holds, in one ``UPDATE`` (two reviews at once
  take disjoint sets, and the second usually none);
* the batch's Prolific id is stored (state ``set-up``) before the pay call, and the
  batch leaves ``set-up`` for ``paying`` in one conditional ``UPDATE`` before the call
  is sent: only the review whose update changed the row sends it;
* a review that dies after setting up and before paying leaves a ``set-up`` batch,
  which the next review pays; one that dies during the pay call leaves ``paying``,
  which no review pays again by itself: Prolific's answer was lost, and only the
  researcher, looking at Prolific, can say whether the money went
  (``gridstudy prolific review --unpaid BATCH`` says it did not).
"""

from __future__ import annotations

import base64
import getpass
import hashlib
import hmac
import json
import logging
import math
import os
import random
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
from flask import Blueprint, current_app, request
from sqlalchemy import and_, delete, or_, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from consent.definition import StudyDefinition
from records.models import (
    Audit,
    Participant,
    ProlificBatch,
    ProlificBonus,
    ProlificStudy,
    ProlificSubmission,
    Setting,
)
from records.remote import Backoff, WaitTooLong, request_whole, retry_after_seconds
from records.schema import as_utc
from study_server import assignment
from study_server.payments import (
    APPROVE,
    PENDING,
    REJECT,
    RETURN,
    PaymentRow,
    bonus_lines,
    payment_rows,
)

log = logging.getLogger(__name__)

API_URL = "https://api.prolific.com"
TOKEN_VARIABLE = "PROLIFIC_API_TOKEN"
URL_VARIABLE = "PROLIFIC_API_URL"
DEVICES = ["desktop"]
"""What the study's device check lets through: a computer with a keyboard."""

CODE_TYPES = {"completed": "COMPLETED", "no_consent": "NO_CONSENT",
              "wrong_device": "INCOMPATIBLE_DEVICE", "failed_attention": "FAILED_ATTENTION_CHECK"}
"""Our ending -> Prolific's ``code_type`` for it; the other endings (screened out, timed
out, study full or closed, failed quiz, slow connection) are ``OTHER``."""
REVIEWED = ("completed", "failed_attention")
"""Endings whose submissions gridstudy reviews (``MANUALLY_REVIEW``); every other ending's
code asks Prolific to request a return (``REQUEST_RETURN``), as our payment decision does."""
RETURN_REASONS = {"no_consent": "Withdrew consent", "wrong_device": "Encountered technical problems"}
"""The reason a return is requested for, in the words Prolific's own pages offer."""
DIDNT_FINISH = "Didn't finish the study"

AWAITING, ACTIVE = "AWAITING REVIEW", "ACTIVE"
STILL_OPEN = (ACTIVE, AWAITING)
"""The statuses a submission leaves for another (approved, rejected, returned, timed out,
screened out), never the reverse."""
HOOK_EVENT = "submission.status.change"
HOOK_TOLERANCE = 300.0
"""A hook whose timestamp is further than this (seconds) from our clock is refused: a
signed request recorded and sent again later is not taken."""
SECRET_SETTING = "prolific-hook-secret:"
STALE_CLAIM = 120.0
"""Seconds after which a review may take over a submission or a batch that another
review claimed and did not finish (it died): only where doing the call twice is safe."""
REJECTION_TEXT = ("Thank you for taking part. We cannot approve this submission because "
                  "{reason}. This follows the study's stated rules, applied to every "
                  "participant in the same way; contact us through Prolific if you think "
                  "this is a mistake.")


class ProlificError(RuntimeError):
    """Prolific refused or failed a request; the message says what to do, in one line."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


# -- the API -------------------------------------------------------------------------------


class Api:
    """Prolific's API with a token: retries what may be retried (429 and 5xx, waiting
    at least the ``Retry-After`` asked for), and says plainly what went wrong."""

    def __init__(self, token: str | None = None, base_url: str | None = None, *,
                 backoff: Backoff | None = None, sleep: Callable[[float], Any] = time.sleep,
                 timeout: float = 30.0) -> None:
        token = token if token is not None else os.environ.get(TOKEN_VARIABLE, "")
        if not token.strip():
            raise ProlificError(f"no Prolific API token: set {TOKEN_VARIABLE} (Prolific: "
                                "Settings > Go to API token page > Create API token)")
        self.base_url = (base_url or os.environ.get(URL_VARIABLE) or API_URL).rstrip("/")
        self.backoff = backoff or Backoff(base=0.5, cap=30.0, retries=5)
        self.sleep = sleep
        self.rng = random.Random()
        self.timeout = timeout
        self.client = httpx.Client(base_url=self.base_url, timeout=timeout, headers={
            "Authorization": f"Token {token.strip()}", "Accept": "application/json"})

    def __repr__(self) -> str:  # never the token
        return f"Api({self.base_url!r})"

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    def call(self, method: str, path: str, body: Any = None, *, params: dict | None = None,
             retry: bool = True) -> Any:
        """The decoded JSON answer of one request (None for an empty one). ``retry``:
        whether a 5xx or a lost connection may be tried again; a 429 always may, since
        Prolific refused the request before doing anything."""
        for attempt in range(self.backoff.retries + 1):
            wait = None
            try:
                response = request_whole(self.client, method, path, timeout=self.timeout,
                                         json=body, params=params)
            except httpx.HTTPError as error:
                if not retry:
                    raise ProlificError(f"{method} {path}: no answer from Prolific ({error}); "
                                        "whether it was done is not known") from None
                problem, response = f"no answer from Prolific ({error})", None
            if response is not None:
                if response.status_code < 300:
                    return _decoded(method, path, response)
                problem = _problem(method, path, response)
                if response.status_code in (401, 403):
                    raise ProlificError(f"Prolific refused the API token (HTTP {response.status_code}):"
                                        f" check {TOKEN_VARIABLE}", response.status_code)
                if response.status_code != 429 and (response.status_code < 500 or not retry):
                    raise ProlificError(problem, response.status_code)
                wait = retry_after_seconds(response.headers.get("retry-after"))
            if attempt == self.backoff.retries:
                raise ProlificError(f"{problem} (gave up after {attempt + 1} attempts)",
                                    response.status_code if response is not None else None)
            try:
                self.sleep(self.backoff.delay(attempt, self.rng, wait))
            except WaitTooLong as error:
                raise ProlificError(f"{problem}; {error}: try again later",
                                    response.status_code if response is not None else None) from None
        raise AssertionError("unreachable")

    def pages(self, path: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every result of a listing, following its ``_links.next`` to the end."""
        answer = self.call("GET", path, params=params)
        while True:
            yield from answer.get("results") or []
            following = ((answer.get("_links") or {}).get("next") or {}).get("href")
            if not following:
                return
            answer = self.call("GET", following.removeprefix(self.base_url))


def _decoded(method: str, path: str, response: httpx.Response) -> Any:
    """A successful answer's JSON (None for an empty one); a body that is not JSON (a
    proxy's page) is a :class:`ProlificError`, since whether it was done is not known."""
    if not response.content.strip():
        return None
    try:
        return response.json()
    except ValueError:
        raise ProlificError(f"{method} {path}: Prolific answered {response.status_code} with "
                            f"something that is not JSON ({response.text[:120]!r}); whether it "
                            "was done is not known", response.status_code) from None


def _problem(method: str, path: str, response: httpx.Response) -> str:
    """Prolific's own words for a refusal: its ``error.detail`` (a text, or field ->
    messages), else its title, else the body's start."""
    try:
        error = response.json().get("error") or {}
    except (ValueError, AttributeError):
        error = {}
    detail = error.get("detail") if isinstance(error, dict) else None
    if isinstance(detail, dict):
        detail = "; ".join(f"{k}: {' '.join(map(str, v)) if isinstance(v, list) else v}"
                           for k, v in detail.items())
    elif isinstance(detail, list):
        detail = "; ".join(map(str, detail))
    words = detail or (error.get("title") if isinstance(error, dict) else None) or response.text[:200]
    return f"Prolific answered {response.status_code} to {method} {path}: {words}"


# -- who did it ------------------------------------------------------------------------------


def command_line_actor() -> str:
    """Who runs a command: the account's name, as the audit log keeps it."""
    try:
        return f"{getpass.getuser()} (command line)"
    except (KeyError, OSError):
        return "command line"


def _audit(db: Session, actor: str, action: str, target: str, reason: str,
           before: dict[str, Any], after: dict[str, Any]) -> None:
    db.add(Audit(admin=actor, action=action, target=target, reason=reason[:500],
                 before=before, after=after))


# -- publish -------------------------------------------------------------------------------


def completion_codes(definition: StudyDefinition) -> list[dict[str, Any]]:
    """One entry per distinct code of the study file, with Prolific's code type and the
    action Prolific takes when a participant enters it. Several endings that share a
    code (the screen-out code, by default) are one entry: reviewed if any of them is,
    else a return request."""
    from consent.definition import ENDINGS

    endings: dict[str, list[str]] = {}
    for ending in dict.fromkeys(ENDINGS.values()):
        if ending == "failed_attention" and definition.attention_failure != "end":
            continue  # a failed check does not end the visit: the participant completes
        status = next(s for s, e in ENDINGS.items() if e == ending)
        endings.setdefault(definition.code_for(status), []).append(ending)
    codes = []
    for code, named in endings.items():
        types = {CODE_TYPES.get(e, "OTHER") for e in named}
        code_type = types.pop() if len(types) == 1 else "OTHER"
        if any(e in REVIEWED for e in named):
            actions = [{"action": "MANUALLY_REVIEW"}]
        else:
            reason = RETURN_REASONS.get(named[0], DIDNT_FINISH) if len(named) == 1 else DIDNT_FINISH
            actions = [{"action": "REQUEST_RETURN", "return_reason": reason}]
        codes.append({"code": code, "code_type": code_type, "actor": "participant",
                      "actions": actions})
    return codes


def study_body(definition: StudyDefinition, link: str, places: int, reward_cents: int,
               minutes: int) -> dict[str, Any]:
    """The ``POST /api/v1/studies/`` body for ``definition`` with our study ``link``
    (which carries the PROLIFIC_PID, STUDY_ID and SESSION_ID placeholders)."""
    return {
        "name": definition.title or definition.id,
        "internal_name": f"gridstudy {definition.id}",
        "description": definition.description or definition.title or definition.id,
        "external_study_url": link,
        "prolific_id_option": "url_parameters",
        "completion_codes": completion_codes(definition),
        "total_available_places": places,
        "estimated_completion_time": minutes,
        "reward": reward_cents,
        "device_compatibility": list(DEVICES),
    }


@dataclass
class Published:
    prolific_id: str
    status: str
    created: bool
    already: bool = False


def publish(store: Any, api: Api, study_id: str, link: str, *, places: int,
            reward_cents: int | None = None, minutes: int | None = None, draft: bool,
            actor: str) -> Published:
    """Create the study on Prolific (once: its id is kept with ours) and publish it
    unless ``draft``. A study already published is left as it is. The reward and the time
    are the study file's (``payment``, ``expected_minutes``), which its consent page
    states; others are refused (:func:`terms`)."""
    with store.session() as db:
        _, definition = assignment.load_study(db, study_id)
    reward_cents, minutes = terms(definition, reward_cents, minutes)
    for name, value in (("places", places), ("reward-cents", reward_cents), ("minutes", minutes)):
        if value < 1:
            raise ValueError(f"--{name} must be at least 1, got {value}")
    known = _known_or_claimed(store, study_id)
    created = False
    if known is None:  # this request creates it
        try:
            answer = api.call("POST", "/api/v1/studies/",
                              study_body(definition, link, places, reward_cents, minutes))
        except BaseException:
            with store.session() as db:  # the next publish creates it
                db.exec(delete(ProlificStudy).where(ProlificStudy.study_id == study_id,
                                                    ProlificStudy.status == CREATING))
            raise
        with store.session() as db:
            known = db.get(ProlificStudy, study_id)
            known.prolific_id, known.status = answer["id"], answer.get("status") or "UNPUBLISHED"
            _audit(db, actor, "prolific-publish", f"study {study_id}",
                   f"created on Prolific as {answer['id']}", {}, {"prolific_id": answer["id"]})
        created = True
    if known.status not in ("UNPUBLISHED", ""):
        return Published(known.prolific_id, known.status, created, already=True)
    if draft:
        return Published(known.prolific_id, known.status, created)
    try:
        answer = api.call("POST", f"/api/v1/studies/{known.prolific_id}/transition/",
                          {"action": "PUBLISH"})
    except ProlificError as error:
        raise ProlificError(f"the study {known.prolific_id} was created on Prolific but not "
                            f"published: {error}", error.status) from None
    status = (answer or {}).get("status") or "ACTIVE"
    with store.session() as db:
        row = db.get(ProlificStudy, study_id)
        row.status, row.published_at = status, datetime.now(UTC)
        _audit(db, actor, "prolific-publish", f"study {study_id}",
               f"published on Prolific ({known.prolific_id})", {"status": known.status},
               {"status": status})
    return Published(known.prolific_id, status, created)


def terms(definition: StudyDefinition, reward_cents: int | None,
          minutes: int | None) -> tuple[int, int]:
    """The reward (in cents) and the minutes Prolific is told: what the consent page tells
    participants, unless the study file's payment names no amount. A reward or a time
    other than the page's is refused: typed as 45 for 4.50, it would have paid a tenth of
    what participants were promised, and Prolific judges the hourly rate by the time."""
    stated = definition.payment_cents
    if reward_cents is None and stated is None:
        raise ValueError(f"give the reward in cents: the study file's payment "
                         f"({definition.payment or 'none'!r}) names no amount to read it from")
    if reward_cents is not None and stated is not None and reward_cents != stated:
        raise ValueError(f"the consent page tells participants they are paid "
                         f"{definition.payment}, and a reward of {reward_cents} cents pays "
                         f"{reward_cents / 100:.2f}: give {stated} (or leave the reward out), "
                         "or change payment in the study file (gridstudy study create "
                         "--replace)")
    if minutes is not None and minutes != definition.stated_minutes:
        raise ValueError(f"the consent page says the study takes about "
                         f"{definition.stated_minutes} minutes, and Prolific would be told "
                         f"{minutes}: give {definition.stated_minutes} (or leave the minutes "
                         "out), or change expected_minutes in the study file (gridstudy "
                         "study create --replace)")
    return (stated if reward_cents is None else reward_cents,
            definition.stated_minutes if minutes is None else minutes)


CREATING = "CREATING"
"""The status of a study's row while one request creates the study on Prolific (its
Prolific id empty until Prolific answers)."""


def _known_or_claimed(store: Any, study_id: str) -> ProlificStudy | None:
    """The study's counterpart on Prolific, or None when this request is now the one to
    create it: its row is inserted first, ``CREATING``, so that two publishes at once (a
    double click on the dashboard's button, the command run twice) create one study on
    Prolific. Before, each created one: a second study, a draft nobody would publish, and
    a 500. Another request creating it is said (:class:`ProlificError`); one that died
    creating it (``STALE_CLAIM`` ago) is taken over, with a note in the log, since it may
    have left a draft on Prolific."""
    try:
        with store.session() as db:
            db.add(ProlificStudy(study_id=study_id, prolific_id="", status=CREATING))
        return None
    except IntegrityError:
        pass
    with store.session() as db:
        known = db.get(ProlificStudy, study_id)
    if known is None:  # its creation failed meanwhile: this request creates it
        return _known_or_claimed(store, study_id)
    if known.status != CREATING:
        return known
    since = as_utc(known.created_at)
    waited = (datetime.now(UTC) - since).total_seconds()
    if waited >= STALE_CLAIM:
        with store.session() as db:
            taken = db.exec(update(ProlificStudy).where(
                ProlificStudy.study_id == study_id, ProlificStudy.status == CREATING,
                ProlificStudy.created_at == known.created_at).values(
                created_at=datetime.now(UTC))).rowcount
        if taken:
            log.warning("the creation of %s on Prolific begun at %s never finished; created "
                        "again (a draft named %r from then may be on Prolific: delete it)",
                        study_id, since.isoformat(timespec="seconds"), f"gridstudy {study_id}")
            return None
    raise ProlificError(f"{study_id} is being created on Prolific by another request (for "
                        f"{waited:.0f} s); look again in a minute")


def prolific_study(store: Any, study_id: str) -> ProlificStudy:
    with store.session() as db:
        assignment.load_study(db, study_id)  # LookupError naming the study if unknown
        row = db.get(ProlificStudy, study_id)
    if row is None or row.status == CREATING:
        raise LookupError(f"{study_id} is not on Prolific yet: run `gridstudy prolific "
                          f"publish --study {study_id}` first")
    return row


# -- sync ------------------------------------------------------------------------------------


@dataclass
class Synced:
    submissions: int
    statuses: dict[str, int]
    only_on_prolific: list[str]
    """Submissions (``PROLIFIC_PID (submission)``) whose participant never reached us."""
    only_here: list[str]
    """Our participants (``participant N (PROLIFIC_PID)``) with no submission on Prolific."""


def sync(store: Any, api: Api, study_id: str) -> Synced:
    """List the study's submissions on Prolific (every page) and keep each one's status
    with our participant: by the SESSION_ID in our link (the submission's id), else by
    PROLIFIC_PID."""
    known = prolific_study(store, study_id)
    listed_at = time.time()  # each status listed is at least as new as this
    listed = list(api.pages("/api/v1/submissions/", {"study": known.prolific_id}))
    with store.session() as db:
        people = db.exec(select(Participant).where(Participant.study_id == study_id)).all()
        by_session = {s: p.id for p in people for s in _sessions(p)}
        by_pid = {p.external_id: p.id for p in people}
        for item in listed:
            _keep(db, study_id, item["id"], item.get("participant_id") or item.get("participant"),
                  item["status"], listed_at, by_session, by_pid)
        row = db.get(ProlificStudy, study_id)
        row.synced_at = datetime.now(UTC)
    statuses: dict[str, int] = {}
    for item in listed:
        statuses[item["status"]] = statuses.get(item["status"], 0) + 1
    seen_pids = {item.get("participant_id") or item.get("participant") for item in listed}
    return Synced(
        len(listed), statuses,
        [f"{item.get('participant_id') or item.get('participant')} ({item['id']}, {item['status']})"
         for item in listed if by_session.get(item["id"]) is None
         and by_pid.get(item.get("participant_id") or item.get("participant")) is None],
        [f"participant {p.id} ({p.external_id}, {p.status})" for p in people
         if p.external_id not in seen_pids and not set(_sessions(p)) & {i["id"] for i in listed}])


def _sessions(person: Any) -> list[str]:
    return list(person.prolific_sessions or {}) or [s for s in (person.prolific_session_id,) if s]


def _keep(db: Session, study_id: str, submission_id: str, pid: str | None, status: str,
          at: float, by_session: dict[str, int], by_pid: dict[str, int]) -> None:
    """Keep ``status``, learnt as of ``at``, for the submission (a new row the first
    time), unless what is kept was learnt later."""
    row = db.get(ProlificSubmission, submission_id)
    participant = by_session.get(submission_id) or by_pid.get(pid)
    if row is None:
        db.add(ProlificSubmission(id=submission_id, study_id=study_id, prolific_pid=pid or "",
                                  participant_id=participant, status=status, status_at=at))
        return
    _take(db, row, status, at)
    row.participant_id = row.participant_id or participant


def _take(db: Session, row: Any, status: str, at: float) -> bool:
    """Set ``row``'s status to ``status``, learnt as of ``at``, if that is newer than what
    it holds; whether it was. Hooks arrive in any order (Prolific sends one again after
    a failure, when a later one may have been taken), so an earlier event is left; of
    two of the same second, a final status wins over ACTIVE or AWAITING REVIEW. One
    conditional ``UPDATE``: two hooks of one submission at once never both win."""
    same_time = ProlificSubmission.status_at == at
    if status in STILL_OPEN:
        same_time = and_(same_time, ProlificSubmission.status.in_(STILL_OPEN))
    taken = db.exec(update(ProlificSubmission).where(
        ProlificSubmission.id == row.id,
        or_(ProlificSubmission.status_at.is_(None), ProlificSubmission.status_at < at, same_time))
        .values(status=status, status_at=at, seen_at=datetime.now(UTC)))
    db.refresh(row)
    return taken.rowcount == 1


# -- review ----------------------------------------------------------------------------------


@dataclass
class Review:
    """What a review did (or, dry, would do), line by line, and what it left."""

    lines: list[str] = field(default_factory=list)
    approved: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    returns: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    paid_batches: list[int] = field(default_factory=list)
    unknown_batches: list[int] = field(default_factory=list)

    def say(self, line: str) -> None:
        self.lines.append(line)


def review(store: Any, api: Api | None, study_id: str, *, actor: str, dry_run: bool = False,
           wait: float = 0.0, poll: float = 2.0, sleep: Callable[[float], Any] = time.sleep) -> Review:
    """Carry out the study's payment decisions on Prolific: approve in bulk by submission
    id, reject one by one with the reason and category, ask for returns, then set up and
    pay the bonuses of approved participants once (see the module's notes). The
    submissions' statuses are synced first.

    A completed participant whose submission is still active on Prolific (they have not
    yet pressed submit there) is waited for, up to ``wait`` seconds, syncing every
    ``poll``; who is still not submitted is left for the next review. ``dry_run`` sends
    nothing that changes Prolific (without ``api``: from the last sync's statuses)."""
    done = Review()
    prolific_study(store, study_id)
    if api is not None:
        sync(store, api, study_id)  # reading changes nothing on Prolific, dry or not
    deadline = time.monotonic() + wait
    while True:
        plan = _plan(store, study_id)
        if dry_run or not plan.waiting or time.monotonic() >= deadline:
            break
        sleep(poll)
        sync(store, api, study_id)
    done.waiting = [f"participant {row.participant_id} ({sub.id})" for row, sub in plan.waiting]
    for row, sub in plan.waiting:
        done.say(f"waiting: participant {row.participant_id} ({row.prolific_pid}) completed here "
                 f"but their submission {sub.id} is {sub.status} on Prolific: review again "
                 "once they submit")
    for row in plan.unmatched:
        done.say(f"no submission: participant {row.participant_id} ({row.prolific_pid}, "
                 f"{row.decision}) has none on Prolific; nothing to do there")
    if dry_run:
        for row, sub in plan.approve:
            done.say(f"would approve {sub.id} (participant {row.participant_id}): {row.reason}")
        for row, sub in plan.reject:
            done.say(f"would reject {sub.id} (participant {row.participant_id}, "
                     f"{row.rejection_category}): {row.reason}")
        for row, sub in plan.returns:
            done.say(f"would ask {sub.id} (participant {row.participant_id}) to return: {row.reason}")
        owed = _owed_bonuses(store, study_id, plan)
        for row in owed:
            done.say(f"would pay a bonus of {row.bonus:.2f} to {row.prolific_pid} "
                     f"(participant {row.participant_id})")
        done.say("dry run: nothing was changed on Prolific")
        return done
    _approve(store, api, study_id, plan.approve, actor, done)
    for row, sub in plan.reject:
        _one(store, api, study_id, row, sub, actor, done, "reject")
    for row, sub in plan.returns:
        _one(store, api, study_id, row, sub, actor, done, "return")
    _bonuses(store, api, study_id, actor, done)
    for batch in batches(store, study_id):
        if batch.state == "paid" and batch.id not in done.paid_batches:
            done.say(f"bonus batch {batch.id}: paid earlier ({batch.paid_at:%Y-%m-%d %H:%M} UTC), "
                     f"{batch.total:.2f} in all, Prolific {batch.prolific_id}")
    if not done.lines:
        done.say("nothing to do: every decision is carried out")
    return done


@dataclass
class _Plan:
    approve: list[tuple[PaymentRow, Any]] = field(default_factory=list)
    reject: list[tuple[PaymentRow, Any]] = field(default_factory=list)
    returns: list[tuple[PaymentRow, Any]] = field(default_factory=list)
    waiting: list[tuple[PaymentRow, Any]] = field(default_factory=list)
    unmatched: list[PaymentRow] = field(default_factory=list)
    approved_pids: set[str] = field(default_factory=set)


def _plan(store: Any, study_id: str) -> _Plan:
    """Each participant's decision against their submission's status on Prolific."""
    plan = _Plan()
    with store.session() as db:
        _, rows = payment_rows(db, study_id)
        submissions = db.exec(select(ProlificSubmission)
                              .where(ProlificSubmission.study_id == study_id)).all()
    by_participant = {s.participant_id: s for s in submissions if s.participant_id}
    by_pid = {s.prolific_pid: s for s in submissions}
    for row in rows:
        if row.decision == PENDING:
            continue
        sub = by_participant.get(row.participant_id) or by_pid.get(row.prolific_pid)
        if sub is None:
            plan.unmatched.append(row)
            continue
        if row.decision == APPROVE and (sub.status == "APPROVED" or sub.action == "approved"):
            plan.approved_pids.add(row.prolific_pid)
            continue
        if sub.action in ("approved", "rejected", "return-requested") or sub.status in (
                "APPROVED", "REJECTED", "RETURNED", "TIMED-OUT", "SCREENED OUT"):
            continue
        if _claimed(sub):
            continue
        if row.decision == RETURN:
            plan.returns.append((row, sub))
        elif sub.status != AWAITING:
            plan.waiting.append((row, sub))
        elif row.decision == APPROVE:
            plan.approve.append((row, sub))
        elif row.decision == REJECT:
            plan.reject.append((row, sub))
    return plan


def _claimed(sub: Any) -> bool:
    return sub.action in ("approving", "rejecting", "requesting-return") and \
        time.time() - (sub.action_at or 0.0) < STALE_CLAIM


def _claim(store: Any, ids: list[str], doing: str) -> list[str]:
    """Take the submissions no other review is working on (one ``UPDATE`` each: two
    reviews at once never both take one)."""
    taken = []
    now = time.time()
    with store.session() as db:
        for submission_id in ids:
            result = db.exec(update(ProlificSubmission).where(
                ProlificSubmission.id == submission_id,
                (ProlificSubmission.action.is_(None))
                | (ProlificSubmission.action.in_(("approving", "rejecting", "requesting-return"))
                   & (ProlificSubmission.action_at < now - STALE_CLAIM)))
                .values(action=doing, action_at=now))
            if result.rowcount == 1:
                taken.append(submission_id)
    return taken


def _settle(store: Any, ids: list[str], action: str | None, status: str | None = None) -> None:
    with store.session() as db:
        for submission_id in ids:
            row = db.get(ProlificSubmission, submission_id)
            row.action, row.action_at = action, time.time()
            if status:  # what Prolific says now: a hook of an earlier event does not undo it
                _take(db, row, status, row.action_at)


def _approve(store: Any, api: Api, study_id: str, pairs: list[tuple[PaymentRow, Any]],
             actor: str, done: Review) -> None:
    ids = _claim(store, [sub.id for _, sub in pairs], "approving")
    if not ids:
        return
    try:
        api.call("POST", "/api/v1/submissions/bulk-approve/", {"submission_ids": ids})
    except ProlificError as error:
        _settle(store, ids, None)
        done.say(f"approval of {len(ids)} submission(s) failed: {error}")
        return
    _settle(store, ids, "approved", "APPROVED")
    with store.session() as db:
        for row, sub in pairs:
            if sub.id in ids:
                _audit(db, actor, "prolific-approve", f"participant {row.participant_id}",
                       row.reason, {"submission": sub.id, "status": sub.status},
                       {"status": "APPROVED"})
                done.approved.append(sub.id)
                done.say(f"approved {sub.id} (participant {row.participant_id}): {row.reason}")


def _one(store: Any, api: Api, study_id: str, row: PaymentRow, sub: Any, actor: str,
         done: Review, kind: str) -> None:
    doing, finished = {"reject": ("rejecting", "rejected"),
                       "return": ("requesting-return", "return-requested")}[kind]
    if not _claim(store, [sub.id], doing):
        return
    try:
        if kind == "reject":
            api.call("POST", f"/api/v1/submissions/{sub.id}/transition/", {
                "action": "REJECT", "rejection_category": row.rejection_category,
                "message": REJECTION_TEXT.format(reason=row.reason)})
        else:
            api.call("POST", f"/api/v1/submissions/{sub.id}/request-return/",
                     {"request_return_reasons": [_return_reason(row)]})
    except ProlificError as error:
        _settle(store, [sub.id], None)
        done.say(f"{kind} of {sub.id} (participant {row.participant_id}) failed: {error}")
        return
    _settle(store, [sub.id], finished, "REJECTED" if kind == "reject" else None)
    with store.session() as db:
        _audit(db, actor, f"prolific-{kind}", f"participant {row.participant_id}", row.reason,
               {"submission": sub.id, "status": sub.status}, {"action": finished})
    (done.rejected if kind == "reject" else done.returns).append(sub.id)
    done.say(f"{'rejected' if kind == 'reject' else 'asked to return'} {sub.id} "
             f"(participant {row.participant_id}): {row.reason}")


def _return_reason(row: PaymentRow) -> str:
    from consent.definition import ENDINGS

    return RETURN_REASONS.get(ENDINGS.get(row.status, ""), DIDNT_FINISH)


# -- bonuses, once ---------------------------------------------------------------------------


def _owed_bonuses(store: Any, study_id: str, plan: _Plan) -> list[PaymentRow]:
    """Approved participants with a bonus that no earlier review entered."""
    with store.session() as db:
        _, rows = payment_rows(db, study_id)
        entered = set(db.exec(select(ProlificBonus.prolific_pid)
                              .where(ProlificBonus.study_id == study_id)).all())
    approved = plan.approved_pids | {row.prolific_pid for row, _ in plan.approve}
    return [row for row in rows if row.bonus > 0 and row.decision == APPROVE
            and row.prolific_pid in approved and row.prolific_pid not in entered]


def _bonuses(store: Any, api: Api, study_id: str, actor: str, done: Review) -> None:
    plan = _plan(store, study_id)
    for row in _owed_bonuses(store, study_id, plan):
        try:
            with store.session() as db:
                db.add(ProlificBonus(id=f"{study_id}/{row.prolific_pid}", study_id=study_id,
                                     prolific_pid=row.prolific_pid, amount=round(row.bonus, 2)))
        except IntegrityError:
            pass  # another review entered it first
    owner = uuid.uuid4().hex
    with store.session() as db:
        batch = ProlificBatch(study_id=study_id, state="new", owner=owner,
                              claimed_at=time.time(), actor=actor)
        db.add(batch)
        db.flush()
        batch_id = batch.id
        taken = db.exec(update(ProlificBonus).where(
            ProlificBonus.study_id == study_id, ProlificBonus.batch.is_(None))
            .values(batch=batch_id)).rowcount
        if not taken:
            db.delete(batch)
    for batch in _open_batches(store, study_id):
        _carry(store, api, study_id, batch, owner, actor, done)
    for batch in _open_batches(store, study_id, ("paying",)):
        done.unknown_batches.append(batch.id)
        done.say(f"bonus batch {batch.id} (Prolific {batch.prolific_id}, {batch.total:.2f}): the "
                 "pay call was sent and its answer was lost. It is not sent again: look at the "
                 "study's bonus payments on Prolific, and only if they were not paid run "
                 f"`gridstudy prolific review --study {study_id} --unpaid {batch.id}`")


def _open_batches(store: Any, study_id: str, states: tuple[str, ...] = ("new", "set-up")) -> list[Any]:
    with store.session() as db:
        return db.exec(select(ProlificBatch).where(ProlificBatch.study_id == study_id,
                                                   ProlificBatch.state.in_(states))
                       .order_by(ProlificBatch.id)).all()


def _carry(store: Any, api: Api, study_id: str, batch: Any, owner: str, actor: str,
           done: Review) -> None:
    """Set up ``batch`` on Prolific if it is not yet, then pay it, each step taken from
    the state the store holds (see the module's notes)."""
    now = time.time()
    if batch.state == "new":
        with store.session() as db:  # our own new batch, or one whose review died
            # set-up pays nothing: a review may take over a new batch whatever its owner
            # (one that died, or one still at work, whose own store update then fails)
            took = db.exec(update(ProlificBatch).where(
                ProlificBatch.id == batch.id, ProlificBatch.state == "new")
                .values(owner=owner, claimed_at=now)).rowcount
        if not took:
            return
        with store.session() as db:
            bonuses = db.exec(select(ProlificBonus).where(ProlificBonus.batch == batch.id)).all()
        prolific_study_id = prolific_study(store, study_id).prolific_id
        csv = bonus_lines((b.prolific_pid, b.amount) for b in bonuses)
        try:
            answer = api.call("POST", "/api/v1/submissions/bonus-payments/",
                              {"study_id": prolific_study_id, "csv_bonuses": csv})
        except ProlificError as error:
            _batch_error(store, batch.id, str(error))
            done.say(f"bonus batch {batch.id}: Prolific did not set it up: {error}")
            return
        total = round(sum(b.amount for b in bonuses), 2)
        with store.session() as db:
            stored = db.exec(update(ProlificBatch).where(
                ProlificBatch.id == batch.id, ProlificBatch.state == "new",
                ProlificBatch.owner == owner)
                .values(state="set-up", prolific_id=answer["id"], total=total, error=None)).rowcount
            if stored:
                _audit(db, actor, "prolific-bonus-setup", f"study {study_id}",
                       f"bonus batch {batch.id}: {len(bonuses)} bonuses, {total:.2f} in all",
                       {}, {"batch": batch.id, "prolific_id": answer["id"]})
        if not stored:
            return  # another review took the batch over meanwhile: it pays it
    with store.session() as db:
        took = db.exec(update(ProlificBatch).where(
            ProlificBatch.id == batch.id, ProlificBatch.state == "set-up")
            .values(state="paying", owner=owner, claimed_at=time.time())).rowcount
        current = db.get(ProlificBatch, batch.id)
        prolific_id, total = current.prolific_id, current.total
    if not took:
        return  # another review is paying it, or has paid it
    try:
        api.call("POST", f"/api/v1/bulk-bonus-payments/{prolific_id}/pay/", retry=False)
    except ProlificError as error:
        if error.status is not None and error.status < 500:
            with store.session() as db:  # Prolific refused: nothing was paid
                db.exec(update(ProlificBatch).where(ProlificBatch.id == batch.id)
                        .values(state="set-up", error=str(error)))
            done.say(f"bonus batch {batch.id}: Prolific refused to pay it: {error}; it is paid "
                     "by the next review")
        return  # 5xx or no answer: left "paying", reported by the caller
    with store.session() as db:
        db.exec(update(ProlificBatch).where(ProlificBatch.id == batch.id)
                .values(state="paid", paid_at=datetime.now(UTC), error=None))
        _audit(db, actor, "prolific-bonus-pay", f"study {study_id}",
               f"bonus batch {batch.id} paid: {total:.2f} in all", {"state": "set-up"},
               {"state": "paid", "prolific_id": prolific_id})
    done.paid_batches.append(batch.id)
    done.say(f"paid bonus batch {batch.id} (Prolific {prolific_id}): {total:.2f} in all")


def _batch_error(store: Any, batch_id: int, error: str) -> None:
    with store.session() as db:
        db.exec(update(ProlificBatch).where(ProlificBatch.id == batch_id).values(error=error))


def mark_unpaid(store: Any, study_id: str, batch_id: int, actor: str) -> None:
    """The researcher saw on Prolific that a ``paying`` batch was not paid: it may be
    paid by the next review."""
    with store.session() as db:
        row = db.get(ProlificBatch, batch_id)
        if row is None or row.study_id != study_id:
            raise LookupError(f"no bonus batch {batch_id} in {study_id}")
        if row.state != "paying":
            raise ValueError(f"bonus batch {batch_id} is {row.state}, not paying: nothing to do")
        row.state = "set-up"
        _audit(db, actor, "prolific-bonus-pay", f"study {study_id}",
               f"bonus batch {batch_id} marked unpaid by hand, to be paid again",
               {"state": "paying"}, {"state": "set-up"})


def batches(store: Any, study_id: str) -> list[Any]:
    with store.session() as db:
        return db.exec(select(ProlificBatch).where(ProlificBatch.study_id == study_id)
                       .order_by(ProlificBatch.id)).all()


# -- hooks -----------------------------------------------------------------------------------


def subscribe(store: Any, api: Api, study_id: str, url: str, actor: str,
              workspace: str | None = None) -> str:
    """Subscribe ``url`` (our ``/prolific/hook``) to submission status changes in the
    workspace, keeping the workspace's hook secret to check the hooks' signatures.
    Returns the subscription's id."""
    if not url.startswith("https://"):
        raise ValueError(f"--url must be an https:// address Prolific can reach, got {url!r}")
    prolific_study(store, study_id)
    if workspace is None:
        found = list(api.pages("/api/v1/workspaces/", {}))
        if len(found) != 1:
            names = ", ".join(f"{w['id']} ({w.get('title', '')})" for w in found) or "none"
            raise ValueError(f"give --workspace: the token's workspaces are {names}")
        workspace = found[0]["id"]
    secrets = list(api.pages("/api/v1/hooks/secrets/", {"workspace_id": workspace}))
    secret = secrets[0] if secrets else api.call("POST", "/api/v1/hooks/secrets/",
                                                 {"workspace_id": workspace})
    with store.session() as db:
        row = db.get(Setting, SECRET_SETTING + workspace)
        if row is None:
            db.add(Setting(name=SECRET_SETTING + workspace, value=secret["value"]))
        else:
            row.value = secret["value"]
    answer = api.call("POST", "/api/v1/hooks/subscriptions/", {
        "workspace_id": workspace, "event_type": HOOK_EVENT, "target_url": url})
    with store.session() as db:
        _audit(db, actor, "prolific-hooks", f"study {study_id}",
               f"hooks of {HOOK_EVENT} sent to {url}", {}, {"subscription": answer["id"]})
    return answer["id"]


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """Prolific's signature of a hook: HMAC-SHA256 of the timestamp followed by the body,
    with the workspace's secret, base64-encoded."""
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def verified(secrets: list[str], timestamp: str | None, given: str | None, body: bytes,
             now: float | None = None) -> bool:
    """Whether a hook is Prolific's: signed with one of our workspaces' secrets, and sent
    within :data:`HOOK_TOLERANCE` of now."""
    if not timestamp or not given or not secrets:
        return False
    try:
        sent = float(timestamp)
    except ValueError:
        return False
    if abs((time.time() if now is None else now) - sent) > HOOK_TOLERANCE:
        return False
    return any(hmac.compare_digest(signature(s, timestamp, body), given) for s in secrets)


def event_time(headers: Any) -> float:
    """When a verified hook's event happened: Prolific's ``X-Timestamp``, but never later
    than the request's signed timestamp (the header itself is not signed: a hook sent
    again by someone else cannot claim to be newer than it is), and that timestamp when
    it is missing or not a number of seconds."""
    sent = float(headers["X-Prolific-Request-Timestamp"])
    try:
        said = float(headers.get("X-Timestamp", ""))
    except ValueError:
        return sent
    return min(said, sent) if math.isfinite(said) else sent


def hook_secrets(db: Session) -> list[str]:
    return [row.value for row in db.exec(select(Setting).where(
        Setting.name.startswith(SECRET_SETTING))).all()]


def take_hook(db: Session, payload: Any, at: float) -> str:
    """Keep the status a verified hook reports, as ``sync`` would, for its event of time
    ``at`` (:func:`event_time`). Returns what was done, or raises ``ValueError`` for a
    payload that is not a submission status change."""
    if not isinstance(payload, dict) or payload.get("event_type") != HOOK_EVENT:
        raise ValueError(f"expected a {HOOK_EVENT} event")
    submission_id, status = payload.get("resource_id"), payload.get("status")
    if not isinstance(submission_id, str) or not isinstance(status, str) or not submission_id:
        raise ValueError("expected resource_id and status")
    row = db.get(ProlificSubmission, submission_id)
    if row is not None:
        if not _take(db, row, status, at):
            return (f"submission {submission_id}: {status} is older than the {row.status} "
                    f"kept: not taken")
        return f"submission {submission_id}: {status}"
    study = db.exec(select(ProlificStudy).where(
        ProlificStudy.prolific_id == payload.get("study_id"))).first()
    if study is None:
        return f"submission {submission_id} of no study of ours: ignored"
    pid = payload.get("participant_id") if isinstance(payload.get("participant_id"), str) else ""
    people = db.exec(select(Participant).where(Participant.study_id == study.study_id)).all()
    _keep(db, study.study_id, submission_id, pid, status, at,
          {s: p.id for p in people for s in _sessions(p)}, {p.external_id: p.id for p in people})
    return f"submission {submission_id}: {status} (new)"


def statuses(db: Session, study_id: str) -> dict[int, str]:
    """Our participant -> their submission's status on Prolific and what review asked of
    it, for the dashboard."""
    return {s.participant_id: s.status + (f" ({s.action.replace('-', ' ')})" if s.action and
                                          s.action not in ("approved", "rejected") else "")
            for s in db.exec(select(ProlificSubmission).where(
                ProlificSubmission.study_id == study_id,
                ProlificSubmission.participant_id.is_not(None))).all()}


# -- the endpoint Prolific's hooks reach -----------------------------------------------------

bp = Blueprint("prolific", __name__)
HOOK_BODY_MAX = 64 * 1024


@bp.post("/prolific/hook")
def hook() -> Any:
    """A submission's status change, from Prolific: taken only when its signature is
    right and its timestamp recent; anything else is refused with 401 and changes
    nothing."""
    if (request.content_length or 0) > HOOK_BODY_MAX:
        return {"error": "too large"}, 413
    body = request.get_data(cache=False)[:HOOK_BODY_MAX + 1]
    store = current_app.extensions["gridstudy.store"]
    with store.session() as db:
        secrets = hook_secrets(db)
    if not verified(secrets, request.headers.get("X-Prolific-Request-Timestamp"),
                    request.headers.get("X-Prolific-Request-Signature"), body):
        return {"error": "signature or timestamp not accepted"}, 401
    try:
        payload, at = json.loads(body), event_time(request.headers)
        try:
            with store.session() as db:
                done = take_hook(db, payload, at)
        except IntegrityError:  # another hook of a new submission made its row first
            with store.session() as db:
                done = take_hook(db, payload, at)
    except ValueError as error:
        return {"error": str(error)[:200]}, 400
    return {"ok": True, "done": done}, 200
