"""A local stand-in of Prolific's API, for the tests: the requests and answers its
reference documents (docs.prolific.com: studies, submissions, bulk approve, bonuses,
hooks), strict about them (401 without the token, 400 on a body it would not take),
recording every call, with the faults a user meets (401, 429 with Retry-After, 5xx)
injected on demand.

The test plays Prolific's participants with :meth:`Prolific.join` (a participant takes
a place: a submission, ACTIVE) and :meth:`Prolific.submit` (they enter a code on
Prolific: AWAITING REVIEW).
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

TOKEN = "standin-token-0123456789"
CODE_TYPES = {"COMPLETED", "FAILED_ATTENTION_CHECK", "FOLLOW_UP_STUDY", "GIVE_BONUS",
              "INCOMPATIBLE_DEVICE", "NO_CONSENT", "OTHER", "FIXED_SCREENOUT"}
ACTIONS = {"AUTOMATICALLY_APPROVE", "MANUALLY_REVIEW", "ADD_TO_PARTICIPANT_GROUP",
           "REMOVE_FROM_PARTICIPANT_GROUP", "REQUEST_RETURN", "DYNAMIC_PAYMENT"}
REJECTION_CATEGORIES = {"TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL",
                        "FAILED_CHECK", "LOW_EFFORT", "MALINGERING", "NO_CODE", "BAD_CODE",
                        "NO_DATA", "UNSUPP_DEVICE", "OTHER"}
STUDY_FIELDS = {"name", "internal_name", "description", "external_study_url",
                "prolific_id_option", "completion_codes", "total_available_places",
                "estimated_completion_time", "maximum_allowed_time", "reward",
                "device_compatibility", "peripheral_requirements", "filters", "project"}
DEVICES = {"desktop", "tablet", "mobile"}


class Refused(Exception):
    def __init__(self, status: int, title: str, detail: Any = None) -> None:
        self.status, self.title, self.detail = status, title, detail


@dataclass
class Fault:
    method: str
    path: str
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    times: int = 1
    after: bool = False
    """Do the request, then answer with the fault (the answer is lost on its way)."""
    detail: Any = None
    page: str | None = None
    """Answer with this text as it is, not Prolific's JSON (a proxy's page)."""


def _id() -> str:
    return secrets.token_hex(12)


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class Prolific:
    """The stand-in's state and its HTTP server on a loopback port (``url``)."""

    def __init__(self, page_size: int = 2) -> None:
        self.page_size = page_size
        self.lock = threading.Lock()
        self.calls: list[dict[str, Any]] = []
        self.studies: dict[str, dict[str, Any]] = {}
        self.submissions: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.payments: list[str] = []
        """Every pay call taken, by batch id: the same id twice is a bonus paid twice."""
        self.approved: list[str] = []
        self.returns: dict[str, list[str]] = {}
        self.rejections: dict[str, dict[str, Any]] = {}
        self.workspaces = [{"id": "ws-" + _id()[:8], "title": "Lab"}]
        self.secrets: dict[str, dict[str, Any]] = {}
        self.subscriptions: list[dict[str, Any]] = []
        self.faults: list[Fault] = []
        self.holds: list[tuple[str, str, threading.Event, threading.Event]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- what the test does on Prolific's side ----------------------------------------------

    def fail(self, method: str, path: str, status: int, times: int = 1,
             headers: dict[str, str] | None = None, after: bool = False, detail: Any = None,
             page: str | None = None) -> None:
        """Answer the next ``times`` requests ``method path...`` with ``status`` (and
        ``page`` as the body, when given)."""
        self.faults.append(Fault(method, path, status, headers or {}, times, after, detail, page))

    def hold(self, method: str, path: str) -> tuple[threading.Event, threading.Event]:
        """Keep the answer to the next ``method path...`` until released: the request is
        done, and ``(arrived, release)`` lets the test act while its answer waits."""
        arrived, release = threading.Event(), threading.Event()
        self.holds.append((method, path, arrived, release))
        return arrived, release

    def join(self, study_id: str, pid: str) -> str:
        """A participant takes a place in the study: their new submission's id."""
        with self.lock:
            submission = {"id": _id(), "study_id": study_id, "participant_id": pid,
                          "status": "ACTIVE", "started_at": _now(), "completed_at": None,
                          "study_code": None, "return_requested": None}
            self.submissions[submission["id"]] = submission
            return submission["id"]

    def submit(self, submission_id: str, code: str) -> None:
        """The participant enters ``code`` on Prolific."""
        with self.lock:
            submission = self.submissions[submission_id]
            study = self.studies[submission["study_id"]]
            entry = next(c for c in study["completion_codes"] if c["code"] == code)
            submission.update(status="AWAITING REVIEW", completed_at=_now(), study_code=code)
            if any(a["action"] == "REQUEST_RETURN" for a in entry["actions"]):
                submission["return_requested"] = _now()

    def called(self, method: str, prefix: str) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["method"] == method and c["path"].startswith(prefix)]

    # -- the API ------------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

            def _serve(self, method: str) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                call = {"method": method, "path": parts.path, "query": query,
                        "body": None, "authorization": self.headers.get("Authorization")}
                with standin.lock:
                    standin.calls.append(call)
                status, answer, headers = standin.answer(method, parts.path, query, raw,
                                                         self.headers, call)
                data = (b"" if answer is None else answer if isinstance(answer, bytes)
                        else json.dumps(answer).encode())
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def answer(self, method: str, path: str, query: dict[str, str], raw: bytes, headers: Any,
               call: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        if headers.get("Authorization") != f"Token {TOKEN}":
            return 401, _error(401, "Unauthorized", "Invalid token."), {}
        fault = self._fault(method, path)
        if fault is not None and not fault.after:
            page = fault.page.encode() if fault.page is not None else None
            return fault.status, page or _error(fault.status, "Injected", fault.detail), \
                fault.headers
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            return 400, _error(400, "Bad request", "JSON parse error"), {}
        call["body"] = body
        if method == "POST" and raw and "json" not in (headers.get("Content-Type") or ""):
            return 400, _error(400, "Bad request", "expected application/json"), {}
        try:
            with self.lock:
                status, answer = self._route(method, path, query, body)
        except Refused as refused:
            return refused.status, _error(refused.status, refused.title, refused.detail), {}
        for held in list(self.holds):
            if held[0] == method and path.startswith(held[1]):
                self.holds.remove(held)
                held[2].set()
                held[3].wait(60)
        if fault is not None:
            return fault.status, _error(fault.status, "Injected", fault.detail), fault.headers
        return status, answer, {}

    def _fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.times > 0 and fault.method == method and path.startswith(fault.path):
                    fault.times -= 1
                    return fault
        return None

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        routes = [
            ("POST", r"/api/v1/studies/", self._create_study),
            ("POST", r"/api/v1/studies/(\w+)/transition/", self._transition_study),
            ("GET", r"/api/v1/submissions/", self._list_submissions),
            ("POST", r"/api/v1/submissions/bulk-approve/", self._bulk_approve),
            ("POST", r"/api/v1/submissions/bonus-payments/", self._set_up_bonuses),
            ("POST", r"/api/v1/submissions/(\w+)/transition/", self._transition_submission),
            ("POST", r"/api/v1/submissions/(\w+)/request-return/", self._request_return),
            ("POST", r"/api/v1/bulk-bonus-payments/(\w+)/pay/", self._pay),
            ("GET", r"/api/v1/workspaces/", self._workspaces),
            ("GET", r"/api/v1/hooks/secrets/", self._list_secrets),
            ("POST", r"/api/v1/hooks/secrets/", self._create_secret),
            ("POST", r"/api/v1/hooks/subscriptions/", self._subscribe),
        ]
        for verb, pattern, handle in routes:
            found = re.fullmatch(pattern, path)
            if verb == method and found:
                return handle(*found.groups(), query=query, body=body)
        raise Refused(404, "Not found", f"{method} {path}")

    # studies

    def _create_study(self, *, query: dict, body: Any) -> tuple[int, Any]:
        body = _object(body)
        unknown = set(body) - STUDY_FIELDS
        if unknown:
            raise Refused(400, "Invalid request", {k: ["Unknown field."] for k in sorted(unknown)})
        problems: dict[str, list[str]] = {}
        for name in ("name", "description", "external_study_url"):
            if not isinstance(body.get(name), str) or not body[name].strip():
                problems[name] = ["This field is required."]
        url = body.get("external_study_url") or ""
        if body.get("prolific_id_option") == "url_parameters" and "{{%PROLIFIC_PID%}}" not in url:
            problems["external_study_url"] = ["URL parameters need {{%PROLIFIC_PID%}}."]
        if body.get("prolific_id_option") not in ("url_parameters", "question", "not_required"):
            problems["prolific_id_option"] = ["Not a valid choice."]
        for name in ("total_available_places", "estimated_completion_time", "reward"):
            if type(body.get(name)) is not int or body[name] < 1:
                problems[name] = ["A positive integer is required."]
        devices = body.get("device_compatibility", [])
        if not isinstance(devices, list) or not set(devices) <= DEVICES:
            problems["device_compatibility"] = ["Not a valid choice."]
        codes = body.get("completion_codes")
        if not isinstance(codes, list) or not codes:
            problems["completion_codes"] = ["Specify at least one completion code."]
        else:
            seen = set()
            for code in codes:
                reason = _code_problem(code)
                if reason:
                    problems["completion_codes"] = [reason]
                elif code["code"] in seen:
                    problems["completion_codes"] = [f"Code {code['code']} is not unique."]
                else:
                    seen.add(code["code"])
        if problems:
            raise Refused(400, "Invalid request", problems)
        study = {**body, "id": _id(), "status": "UNPUBLISHED"}
        self.studies[study["id"]] = study
        return 201, study

    def _transition_study(self, study_id: str, *, query: dict, body: Any) -> tuple[int, Any]:
        body = _object(body)
        study = self.studies.get(study_id) or _missing("study", study_id)
        if body.get("action") not in ("PUBLISH", "PAUSE", "START", "STOP"):
            raise Refused(400, "Invalid request", {"action": ["Not a valid choice."]})
        if body["action"] == "PUBLISH":
            if study["status"] != "UNPUBLISHED":
                raise Refused(400, "Invalid request",
                              f"The study cannot be published: it is {study['status']}.")
            study["status"] = "ACTIVE"
        return 200, study

    # submissions

    def _list_submissions(self, *, query: dict, body: Any) -> tuple[int, Any]:
        study_id = query.get("study")
        if not study_id:
            raise Refused(400, "Invalid request", {"study": ["This field is required."]})
        mine = [s for s in self.submissions.values() if s["study_id"] == study_id]
        page = int(query.get("page", "1"))
        size = int(query.get("page_size", str(self.page_size)))
        chunk = mine[(page - 1) * size: page * size]
        more = page * size < len(mine)
        link = f"{self.url}/api/v1/submissions/?study={study_id}&page={page + 1}&page_size={size}"
        return 200, {
            "results": [{k: s[k] for k in ("id", "participant_id", "status", "started_at",
                                           "completed_at", "study_code")} for s in chunk],
            "_links": {"self": {"href": None, "title": "Current"},
                       "next": {"href": link if more else None, "title": "Next"},
                       "previous": {"href": None, "title": "Previous"},
                       "last": {"href": None, "title": "Last"}},
            "meta": {"count": len(mine)}}

    def _bulk_approve(self, *, query: dict, body: Any) -> tuple[int, Any]:
        body = _object(body)
        ids = body.get("submission_ids")
        if ids is None and "participant_ids" in body:
            ids = [s["id"] for s in self.submissions.values() if s["study_id"] == body.get("study_id")
                   and s["participant_id"] in body["participant_ids"]]
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise Refused(400, "Invalid request", {"submission_ids": ["A list of ids is required."]})
        not_ready = [i for i in ids if (self.submissions.get(i) or {}).get("status") != "AWAITING REVIEW"]
        if not_ready:
            raise Refused(400, "Invalid request",
                          f"Submissions not awaiting review: {', '.join(not_ready)}")
        for submission_id in ids:
            self.submissions[submission_id]["status"] = "APPROVED"
            self.approved.append(submission_id)
        return 200, "The request to bulk approve is being handled."

    def _transition_submission(self, submission_id: str, *, query: dict, body: Any) -> tuple[int, Any]:
        body = _object(body)
        submission = self.submissions.get(submission_id) or _missing("submission", submission_id)
        action = body.get("action")
        if action not in ("APPROVE", "REJECT"):
            raise Refused(400, "Invalid request", {"action": ["Not a valid choice."]})
        if action == "REJECT":
            message = body.get("message")
            if not isinstance(message, str) or len(message) < 100:
                raise Refused(400, "Invalid request",
                              {"message": ["It must be at least 100 characters long."]})
            if body.get("rejection_category") not in REJECTION_CATEGORIES:
                raise Refused(400, "Invalid request", {"rejection_category": ["Not a valid choice."]})
        done = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}[action]
        if submission["status"] == done:
            return 200, submission  # idempotent: the same request again is ignored
        if submission["status"] != "AWAITING REVIEW":
            raise Refused(400, "Invalid request",
                          f"The submission is {submission['status']}, not awaiting review.")
        submission["status"] = done
        if action == "REJECT":
            self.rejections[submission_id] = body
        return 200, submission

    def _request_return(self, submission_id: str, *, query: dict, body: Any) -> tuple[int, Any]:
        body = _object(body)
        submission = self.submissions.get(submission_id) or _missing("submission", submission_id)
        reasons = body.get("request_return_reasons")
        if not isinstance(reasons, list) or not reasons or not all(isinstance(r, str) and r for r in reasons):
            raise Refused(400, "Invalid request", {"request_return_reasons": ["This field is required."]})
        if submission["status"] not in ("ACTIVE", "AWAITING REVIEW"):
            raise Refused(400, "Invalid request", f"The submission is {submission['status']}.")
        submission["return_requested"] = _now()
        self.returns.setdefault(submission_id, []).extend(reasons)
        return 200, {"id": submission_id, "status": submission["status"],
                     "participant": submission["participant_id"],
                     "return_requested": submission["return_requested"]}

    # bonuses

    def _set_up_bonuses(self, *, query: dict, body: Any) -> tuple[int, Any]:
        body = _object(body)
        study_id, text = body.get("study_id"), body.get("csv_bonuses")
        if study_id not in self.studies or not isinstance(text, str) or not text.strip():
            raise Refused(400, "Invalid request", "study_id and csv_bonuses are required.")
        members = {s["participant_id"] for s in self.submissions.values() if s["study_id"] == study_id}
        members |= {s["id"] for s in self.submissions.values() if s["study_id"] == study_id}
        lines, wrong = [], []
        for line in text.strip().split("\n"):
            who, _, amount = line.partition(",")
            try:
                value = Decimal(amount)
            except InvalidOperation:
                raise Refused(400, "Invalid request", f"Not an amount: {line!r}") from None
            if who not in members or value <= 0:
                wrong.append(who)
            lines.append((who, value))
        if wrong:
            raise Refused(400, "Invalid request", f"These ids did not take part: {', '.join(wrong)}")
        cents = int(sum(v for _, v in lines) * 100)
        batch = {"id": _id(), "study": study_id, "amount": cents, "fees": cents // 3,
                 "total_amount": cents + cents // 3, "lines": lines}
        self.batches[batch["id"]] = batch
        return 201, {k: v for k, v in batch.items() if k != "lines"}

    def _pay(self, batch_id: str, *, query: dict, body: Any) -> tuple[int, Any]:
        if batch_id not in self.batches:
            _missing("bulk bonus payment", batch_id)
        self.payments.append(batch_id)  # not idempotent: every call pays
        return 202, None

    # hooks

    def _workspaces(self, *, query: dict, body: Any) -> tuple[int, Any]:
        return 200, {"results": self.workspaces, "_links": {"next": {"href": None}}}

    def _list_secrets(self, *, query: dict, body: Any) -> tuple[int, Any]:
        workspace = query.get("workspace_id")
        found = [self.secrets[workspace]] if workspace in self.secrets else []
        return 200, {"results": found}

    def _create_secret(self, *, query: dict, body: Any) -> tuple[int, Any]:
        body = _object(body)
        workspace = body.get("workspace_id")
        if workspace not in {w["id"] for w in self.workspaces}:
            raise Refused(400, "Invalid request", {"workspace_id": ["Unknown workspace."]})
        secret = {"id": _id(), "value": secrets.token_urlsafe(32), "workspace_id": workspace}
        self.secrets[workspace] = secret
        return 201, secret

    def _subscribe(self, *, query: dict, body: Any) -> tuple[int, Any]:
        body = _object(body)
        if body.get("workspace_id") not in {w["id"] for w in self.workspaces}:
            raise Refused(400, "Invalid request", {"workspace_id": ["Unknown workspace."]})
        if body.get("event_type") != "submission.status.change":
            raise Refused(400, "Invalid request", {"event_type": ["Unknown event type."]})
        target = body.get("target_url")
        if not isinstance(target, str) or not target.startswith("https://"):
            raise Refused(400, "Invalid request", {"target_url": ["Must use https://."]})
        subscription = {"id": _id(), "event_type": body["event_type"], "target_url": target,
                        "workspace_id": body["workspace_id"], "is_enabled": True}
        self.subscriptions.append(subscription)
        return 201, subscription


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise Refused(400, "Invalid request", "A JSON object is required.")
    return body


def _missing(kind: str, key: str) -> Any:
    raise Refused(404, "Not found", f"No {kind} {key}.")


def _code_problem(code: Any) -> str | None:
    if not isinstance(code, dict) or set(code) - {"code", "code_type", "actions", "actor"}:
        return "A completion code has code, code_type, actions and actor."
    if not isinstance(code.get("code"), str) or not code["code"]:
        return "A completion code needs its code."
    if code.get("code_type") not in CODE_TYPES:
        return f"Unknown code_type {code.get('code_type')!r}."
    if code.get("actor", "participant") not in ("participant", "researcher"):
        return "Unknown actor."
    actions = code.get("actions")
    if not isinstance(actions, list) or not actions:
        return "A completion code needs its actions."
    names = set()
    for action in actions:
        if not isinstance(action, dict) or action.get("action") not in ACTIONS:
            return f"Unknown action {action!r}."
        if action["action"] == "REQUEST_RETURN" and not action.get("return_reason"):
            return "REQUEST_RETURN needs a return_reason."
        names.add(action["action"])
    if {"AUTOMATICALLY_APPROVE", "MANUALLY_REVIEW"} <= names:
        return "AUTOMATICALLY_APPROVE and MANUALLY_REVIEW cannot be used together."
    return None


def _error(status: int, title: str, detail: Any = None) -> dict[str, Any]:
    return {"error": {"status": status, "error_code": status * 1000, "title": title,
                      "detail": detail if detail is not None else title}}
