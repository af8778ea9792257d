"""The visit's time limit, kept by the server whether or not the participant is here.

A participant who closes the tab mid-study would otherwise keep their place (and their
attempts' slots) until somebody loads a page. Every :data:`SWEEP_EVERY` seconds each
server process ends the visits whose ``time_limit_minutes`` have passed (the
``timed-out`` ending, its code, the slots freed: ``Flow.end_overdue``; the deadline is
the participant's arrival, stored, so a restart changes nothing), then closes the live
games it holds of any visit that is over, however it ended (here or on another worker,
by the time limit or a connection too slow), played by the server or in the browser: the
game stops, and a connected page is sent to its ending (``visit-ended``). A participant who is away sees the ending on their
next load.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask

from records.offload import off_loop
from records.writer import unavailable
from study_server import browser_play
from study_server.session import GameSession, label

log = logging.getLogger(__name__)

SWEEP_EVERY = 5.0
"""Seconds between two sweeps (``DEADLINE_SWEEP`` in the app's configuration): how late
a visit may end after its limit."""
ENDED = "the participant's visit ended"
"""Why a live game of a visit that is over stops."""


class Deadlines:
    """The sweeping task of one server process; ``running`` false stops it."""

    def __init__(self, app: Flask, socketio: Any) -> None:
        self.app, self.socketio = app, socketio
        self.every = float(app.config.get("DEADLINE_SWEEP", SWEEP_EVERY))
        self.running = True
        socketio.start_background_task(self.run)

    def run(self) -> None:
        while True:
            self.socketio.sleep(self.every)
            if not self.running:
                return
            try:
                self.sweep()
            except Exception as error:  # the storage is away: the next sweep tries again
                log.warning("the visits' time limits could not be checked now (%s); trying "
                            "again in %g s", str(error).splitlines()[0][:300], self.every,
                            exc_info=not unavailable(error))

    def sweep(self) -> None:
        flow = self.app.extensions["gridstudy.flow"]
        ended = off_loop(flow.end_overdue)
        if ended:
            log.info("%d visit(s) ended at their time limit", ended)
        scheduler = self.app.extensions["gridstudy.realtime"]
        live = [s for s in list(scheduler.sessions.values()) if s.participant_id is not None]
        played = browser_play.unfinished(self.app)
        over = off_loop(flow.ended_of, sorted({s.participant_id for s in [*live, *played]}))
        for session in live:
            if session.participant_id in over:
                close(self.app, self.socketio, session, over[session.participant_id])
        for game in played:  # played in the browser: its log is taken no more
            if game.participant_id in over:
                game.attempt.abandon(ENDED)
                _to_ending(self.socketio, game, over[game.participant_id])


def close(app: Flask, socketio: Any, session: GameSession, study_id: str) -> None:
    """Stop the live game of a visit that is over, and send its page to the ending."""
    if app.extensions["gridstudy.realtime"].remove(session.token) is None:
        return  # closed already
    log.info("%s: %s; the game stops", label(session.token), ENDED)
    session.abandon(ENDED)
    _to_ending(socketio, session, study_id)


def _to_ending(socketio: Any, session: Any, study_id: str) -> None:
    """Send the page of ``session`` (a live game, or one played in the browser), if one is
    connected, to the ending of its visit."""
    if session.sid is not None:
        socketio.emit("visit-ended", {"url": f"/study/{study_id}/flow"}, to=session.sid)
