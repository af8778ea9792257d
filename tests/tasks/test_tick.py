"""The real-time rule, through both of its drivers: the study server's session and the
local pygame loop must store the same events, refusals and messages for the same inputs
(tasks.worldtest.tick.TickEngine is the one rule both keep)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from sqlmodel import select

from game_client.loop import GameLoop
from records.models import EpisodeRow, Event, RawInput
from records.recorder import EpisodeRecorder
from records.store import Store
from study_server.session import GameSession
from tasks.autumn import STEP_BUDGET
from tasks.worldtest.episode import Episode


class Clock:
    """The drivers' clock, set by the test before every call."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class ServerDriver:
    """The study server's session (study_server.session.GameSession)."""

    def __init__(self, problem, store, clock, **limits):
        self.session = GameSession.create(problem, store, **limits)
        self.clock = clock
        self.episode_id = self.session.episode_id
        self.engine = self.session.engine

    def send(self, text, client_time):
        return self.session.enqueue_action(text, client_time=client_time, now=self.clock())

    def tick(self):
        return self.session.tick(now=self.clock()).step

    def abandon(self):
        self.session.engine.abandon("the session was abandoned", now=self.clock())


class LocalDriver:
    """The local pygame loop (game_client.loop.GameLoop), recording like --record."""

    def __init__(self, problem, store, clock, **limits):
        recorder = EpisodeRecorder(store, problem)
        self.loop = GameLoop(Episode(problem), recorder=recorder, clock=clock, **limits)
        self.episode_id = recorder.episode_id
        self.engine = self.loop.engine

    def send(self, text, client_time):
        return self.loop.enqueue(text, client_time)

    def tick(self):
        return self.loop.tick()

    def abandon(self):
        self.loop.engine.abandon("the session was abandoned")


DRIVERS = {"server": ServerDriver, "local": LocalDriver}


@dataclass
class Case:
    """Inputs sent before each tick (``{tick: [text, ...]}``), then what must be stored."""

    challenge: str
    inputs: dict[int, list]
    ticks: int
    statuses: list[str]
    """What each input was answered, in the order sent."""
    events: list[tuple]
    """(tick, action, source, applied) of every event row, in seq order."""
    refusals: list[tuple]
    """(text, status, start of the reason) of every raw input row."""
    limits: dict = field(default_factory=dict)
    ending: tuple | None = None
    """(status, score) of the episode row, when the case ends it."""
    abandon: bool = False
    failure: str = "RuntimeError: division by zero in on-click"
    """The start of the error of every failed step."""


CASES = {
    "idle ticks are automatic noops": Case(
        "mfp", {1: ["Right"]}, 3, ["queued"],
        [(0, "noop", "auto", True), (1, "right", "input", True), (2, "noop", "auto", True)], []),
    "one input per tick, in order; a full queue drops": Case(
        "mfp", {0: ["right", "down", "left", "up", "right"]}, 5, ["queued"] * 4 + ["dropped"],
        [(0, "right", "input", True), (1, "down", "input", True), (2, "left", "input", True),
         (3, "up", "input", True), (4, "noop", "auto", True)],
        [("right", "dropped", "4 inputs already wait for the next tick")]),
    "malformed text and clicks outside the grid are refused": Case(
        "mfp", {0: ["jump", "click 5 0", "click 2", 42]}, 1,
        ["malformed", "rejected", "malformed", "malformed"],
        [(0, "noop", "auto", True)],
        [("jump", "malformed", "unknown action 'jump'"),
         ("click 5 0", "rejected", "click 5 0 is outside the grid"),
         ("click 2", "malformed", "malformed click 'click 2'"),
         ("42", "malformed", "an action must be text, not int")]),
    "an input not allowed when its tick comes is rejected, then noop": Case(
        "mfp", {0: ["step", "choose_option_9"]}, 1, ["queued", "queued"],
        [(0, "noop", "auto", True)],
        [("step", "rejected", "step is not allowed in the interaction phase; allowed: noop"),
         ("choose_option_9", "rejected", "choose_option_9 is not allowed in the interaction")]),
    "a queued go-to-test allows the next test verb": Case(
        "mfp", {0: ["go-to-test", "step", "choose_option_7"]}, 3, ["queued"] * 3,
        [(0, "go-to-test", "input", True), (1, "step", "input", True),
         (2, "noop", "auto", True)],
        [("choose_option_7", "rejected", "choose_option_7 is out of range; allowed:")]),
    "more than thirty inputs a second are rate limited, and stored as one row a second": Case(
        "mfp", {0: ["noop"] * 35 + ["up"] * 5}, 9, ["queued"] * 30 + ["rate-limited"] * 10,
        [(t, "noop", "input", True) for t in range(9)],
        [("noop", "rate-limited", "more than 30 inputs per second: 10 input(s) refused")],
        limits={"queue_size": 100}),
    "a step that raises is logged, not applied, and play goes on": Case(
        "broken", {0: ["click 1 1"], 1: ["right"]}, 2, ["queued", "queued"],
        [(None, "click 1 1", "input", False), (0, "right", "input", True)], []),
    "a step over its step budget ends the attempt as an environment error": Case(
        "over-budget", {0: ["right"], 1: ["left"], 2: ["right"]}, 3, ["queued"] * 2 + ["rejected"],
        [(0, "right", "input", True), (None, "left", "input", False)],
        [("right", "rejected", "the environment's step went over its step budget, so this "
          "attempt was stopped")],
        ending=("error", 0.0),
        failure="StepBudgetExceeded: over_budget.sexp:7:29: runtime error: step budget "
                f"exceeded: the step needed more than {STEP_BUDGET:,} evaluations"),
    "a Python step over its time limit ends the attempt as an environment error": Case(
        "stuck", {0: ["right"], 1: ["left"], 2: ["right"]}, 3, ["queued"] * 2 + ["rejected"],
        [(0, "right", "input", True), (None, "left", "input", False)],
        [("right", "rejected", "the environment's step went over its time limit, so this "
          "attempt was stopped")],
        ending=("error", 0.0),
        failure="StepTimeLimitExceeded: step time limit exceeded: Stuck.step ran longer than the limit of 0.2 s"),
    "the step that ends the episode finishes it; later input is refused": Case(
        "planning", {0: ["go-to-test"], 1: ["click 4 4"], 2: ["right"], 3: ["right"],
                     4: ["down"], 5: ["down"], 6: ["up"]}, 6, ["queued"] * 6 + ["rejected"],
        [(0, "go-to-test", "input", True), (1, "click 4 4", "input", True),
         (2, "right", "input", True), (3, "right", "input", True), (4, "down", "input", True),
         (5, "down", "input", True)],
        [("up", "rejected", "the episode is over")], ending=("done", 1.0)),
    "an input queued behind the step that ends the episode is dropped, with why": Case(
        "planning", {0: ["go-to-test"], 1: ["click 4 4"], 2: ["right"], 3: ["right"],
                     4: ["down"], 5: ["down", "down"]}, 6, ["queued"] * 7,
        [(0, "go-to-test", "input", True), (1, "click 4 4", "input", True),
         (2, "right", "input", True), (3, "right", "input", True), (4, "down", "input", True),
         (5, "down", "input", True)],
        [("down", "dropped", "the attempt ended before this input's tick")],
        ending=("done", 1.0)),
    "abandoning drops queued inputs and scores 0": Case(
        "mfp", {1: ["right", "down"]}, 1, ["queued", "queued"], [(0, "noop", "auto", True)],
        [("right", "dropped", "the session was abandoned"),
         ("down", "dropped", "the session was abandoned")],
        ending=("abandoned", 0.0), abandon=True),
}


def play(driver_name, case, problems, tmp_path):
    """Run ``case`` through one driver; (statuses, events, raw inputs, episode row)."""
    clock = Clock()
    with Store(str(tmp_path / f"{driver_name}.db"), flush_interval=0.01) as store:
        driver = DRIVERS[driver_name](problems[case.challenge], store, clock, **case.limits)
        statuses = []
        for tick in range(case.ticks + 1):
            for text in case.inputs.get(tick, []):
                clock.now += 0.01
                statuses.append(driver.send(text, clock.now - 0.005))
            if tick < case.ticks:
                clock.now += 0.125
                driver.tick()
        if case.abandon:
            driver.abandon()
        store.flush(timeout=10)
        with store.session() as db:
            events = db.exec(select(Event).where(Event.episode_id == driver.episode_id)
                             .order_by(Event.seq)).all()
            raw = db.exec(select(RawInput).order_by(RawInput.id)).all()
            row = db.get(EpisodeRow, driver.episode_id)
    # An input still waiting for its tick is in the record already, as queued, and only it.
    waiting = [r.input_seq for r in raw if r.status == "queued"]
    assert waiting == [item.number for item in driver.engine.queue]
    raw = [r for r in raw if r.status != "queued"]
    columns = ("seq", "tick", "action", "source", "applied", "phase", "next_phase", "score",
               "frame_hash", "error", "server_time", "client_time")
    return (statuses, [tuple(getattr(e, c) for c in columns) for e in events],
            [(r.text, r.status, r.reason, r.received_at, r.client_time) for r in raw],
            (row.status, row.score, row.phase, row.info))


@pytest.mark.parametrize("name", CASES)
def test_both_drivers_store_the_same_for_the_same_inputs(name, problems, tmp_path):
    case = CASES[name]
    server = play("server", case, problems, tmp_path)
    local = play("local", case, problems, tmp_path)
    assert server == local
    statuses, events, raw, (ended, score, _, _) = server
    assert statuses == case.statuses
    assert [(e[1], e[2], e[3], e[4]) for e in events] == case.events
    assert [e[0] for e in events] == list(range(len(events)))
    assert [(text, status) for text, status, *_ in raw] == [r[:2] for r in case.refusals]
    for (_, _, reason, *_), (*_, want) in zip(raw, case.refusals, strict=True):
        assert reason.startswith(want), reason
    assert (ended, score) == (case.ending or ("active", None))
    failed = [e for e in events if not e[4]]
    assert all(e[9].startswith(case.failure) for e in failed), [e[9] for e in failed]


def test_a_finished_attempt_keeps_how_many_ticks_it_took(problems, tmp_path):
    case = CASES["the step that ends the episode finishes it; later input is refused"]
    *_, (status, score, phase, info) = play("server", case, problems, tmp_path)
    assert (status, score, phase, info["ticks"]) == ("done", 1.0, "done", 6)
    assert (info["test_steps"], info["test_reached"]) == (5, True)


@pytest.mark.parametrize(("name", "limit"), [("over-budget", "step budget"),
                                             ("stuck", "time limit")])
def test_a_step_over_its_limit_tells_the_researcher_and_the_participant(
        name, limit, problems, tmp_path):
    plain = (f"the environment's step went over its {limit}, so this attempt was stopped "
             "(the environment needs fixing, not the player)")
    with Store(str(tmp_path / "limit.db"), flush_interval=0.01) as store:
        session = GameSession.create(problems[name], store)
        assert session.enqueue_action("left") == "queued"
        tick = session.tick()
        assert (tick.step, tick.stopped, tick.done) == (None, True, True)
        assert session.get_state()["stopped"] == plain
        later = session.tick()  # the clock may tick once more: nothing is applied
        assert (later.step, later.stopped) == (None, True)
        assert session.enqueue_action("right") == "rejected"
        store.flush(timeout=10)
        with store.session() as db:
            row = db.get(EpisodeRow, session.episode_id)
            events = db.exec(select(Event).where(Event.episode_id == session.episode_id)).all()
    assert (row.status, row.info["reason"], row.info["ticks"]) == ("error", plain, 0)
    assert row.info["error"] == events[0].error and len(events) == 1


def test_keys_told_as_unsent_are_bounded_by_what_a_person_could_press(problems, tmp_path):
    """A page told of the keys pressed while it was cut off (``keep_unsent``) is taken at
    its word only up to the rows a person pressing at the rate limit could have made since
    the attempt began here, and a minute before: a page reconnecting again and again to
    tell made-up keys writes no more than one sending inputs. Each row kept is
    ``dropped``, never applied."""
    from tasks.worldtest.tick import RATE_LIMIT, UNSENT, UNSENT_GRACE, UNSENT_KEPT, TickEngine

    clock = Clock()
    with Store(str(tmp_path / "unsent.db"), flush_interval=0.01) as store:
        recorder = EpisodeRecorder(store, problems["mfp"])
        engine = TickEngine(Episode(problems["mfp"]), recorder, clock=clock)
        told = [("right", clock.now - 1)] * UNSENT_KEPT
        allowed = int(RATE_LIMIT * UNSENT_GRACE) // UNSENT_KEPT
        assert [engine.keep_unsent(told) for _ in range(allowed + 1)] == [True] * allowed + [False]
        clock.now += 10  # ten seconds on: ten seconds of keys more
        assert [engine.keep_unsent(told) for _ in range(4)] == [True, True, True, False]
        engine.tick()
        store.flush(timeout=10)
        with store.session() as db:
            kept = db.exec(select(RawInput.status, RawInput.reason)).all()
            events = db.exec(select(Event.action)).all()
    assert len(kept) == (allowed + 3) * UNSENT_KEPT
    assert set(kept) == {("dropped", UNSENT)} and events == ["noop"]
