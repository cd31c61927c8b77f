"""The page live: Chromium's screencast of a session, only while someone watches it.

- ANY THREAD: `cast_of` gives the session's cast (a new one once the last ended); `Cast.next` waits for a
  newer frame (JPEG bytes) under the cast's condition; `Cast.end` (the live view's last viewer left).
- SESSION THREAD: `start` (the person's `person_watch` call, tools/person.py) sets the session's
  "screencast" ticker; `_tick` (between calls and in a long wait's slices) starts the screencast on the
  current page (CDP `Page.startScreencast`), follows the page when the tab changes, dispatches the
  browser's events and acknowledges the last frame when the frame rate allows, and once the cast ended
  stops it and its ticker; `_on_frame` (a CDP event, dispatched on the session thread) keeps a frame.
  Chromium sends its next frame only after the ack: acking at most FPS times a second (after a
  burst of BURST) caps its encoding work there, not only what we pass on.
"""

import base64
import threading
import time
import weakref
from typing import Any

from mcpbrowser.logs import log

FPS = 5  # frames a second at most, for every viewer of a session together
# Frames let through at once before the rate holds them: a page that changes now and then (an agent's
# action) has each change sent as it comes; one that never stops (an animation) gets FPS frames a second.
BURST = 2
QUALITY = 60  # JPEG quality: a 1280x720 login page is 30-60 KB
MAX_SIZE = (1280, 960)
TICK_S = 0.05  # an idle session thread takes frames in (and acks them) only as it ticks: a frame may wait this long
INTERVAL_S = 1 / FPS


class Cast:
    """One session's screencast: the newest frame (bytes, numbered), read on any thread."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.frame: bytes | None = None
        self.seq = 0
        self.ended = False
        self.starts = 0  # Page.startScreencast sent for it (a new tab's page starts it again)
        self._cond = threading.Condition()
        # SESSION THREAD only: the page and CDP session it runs on, the frame waiting for its ack
        self.page: Any = None
        self.cdp: Any = None
        self.handler: Any = None
        self.unacked: Any = None
        self.allowance = float(BURST)  # frames that may go now (a token bucket, refilled at FPS)
        self.counted = 0.0  # monotonic time of the allowance

    def put(self, frame: bytes) -> None:
        with self._cond:
            self.frame, self.seq = frame, self.seq + 1
            self._cond.notify_all()

    def end(self) -> None:
        """ANY THREAD: nobody watches any more; the session thread stops it at its next tick."""
        with self._cond:
            self.ended = True
            self._cond.notify_all()
        with _LOCK:
            if _CASTS.get(self.session_id) is self:
                del _CASTS[self.session_id]

    def next(self, after: int, timeout: float) -> tuple[int, bytes | None]:
        """(seq, frame) of a frame newer than `after`, else of the newest one after `timeout` (ANY THREAD)."""
        with self._cond:
            self._cond.wait_for(lambda: self.seq > after or self.ended, timeout)
            return self.seq, self.frame


# ANY THREAD: each watched session's cast, by session id (a watchdog's fresh thread for the session keeps it).
_LOCK = threading.Lock()
_CASTS: dict[str, Cast] = {}


def cast_of(session_id: str) -> Cast:
    """ANY THREAD: the session's running cast, or a new one (the person's `person_watch` call starts it)."""
    with _LOCK:
        cast = _CASTS.get(session_id)
        if cast is None or cast.ended:
            cast = _CASTS[session_id] = Cast(session_id)
        return cast


# SESSION THREAD (each session's own key): the cast its ticker runs.
_RUNNING: "weakref.WeakKeyDictionary[Any, Cast]" = weakref.WeakKeyDictionary()


# SESSION THREAD
def start(state: Any) -> Cast:
    """The session's cast ticks on its thread from now on, until it ends."""
    cast = cast_of(state.session_id)
    before = _RUNNING.get(state)
    if before is not None and before is not cast:
        _stop(state, before)  # ended, its ticker not run since: this one takes its place
    _RUNNING[state] = cast
    state.worker.tick("screencast", TICK_S, lambda state: _tick(state, cast))  # due at once: it starts now
    return cast


# SESSION THREAD
def _tick(state: Any, cast: Cast) -> None:
    if cast.ended:
        _stop(state, cast)
        if _RUNNING.get(state) in (None, cast):
            _RUNNING.pop(state, None)
            state.worker.untick("screencast")
        return
    tab = state.tab
    if tab is not None and tab.page is not cast.page and not tab.page.is_closed():
        _stop(state, cast)
        page, cdp = tab.page, tab.cdp()
        cast.handler = lambda params: _on_frame(cast, cdp, params)
        cdp.on("Page.screencastFrame", cast.handler)
        # One frame in flight, and the last one drawn meanwhile sent on the ack: with the default (3 in flight,
        # frames drawn while they wait dropped), a change made while the acks were held back was never sent
        # on a page that then stayed still.
        cdp.send("Page.startScreencast", {"format": "jpeg", "quality": QUALITY, "maxWidth": MAX_SIZE[0],
                                          "maxHeight": MAX_SIZE[1], "maxFramesInFlight": 1,
                                          "sendLastFrame": True})
        cast.page, cast.cdp = page, cdp
        cast.starts += 1
        log.info("screencast started", extra={"event": "screencast_started", "session": state.session_id})
    state.flush_events()  # frames the browser sent arrive now, through _on_frame
    if _ack(cast):
        state.flush_events()  # the frame kept back until the ack comes right behind it: in now, not a tick later


# SESSION THREAD (a CDP event)
def _on_frame(cast: Cast, cdp: Any, params: dict[str, Any]) -> None:
    if cdp is not cast.cdp:
        return  # a page the cast has left
    cast.put(base64.b64decode(params["data"]))
    cast.unacked = params["sessionId"]
    _ack(cast)


def _ack(cast: Cast) -> bool:
    """SESSION THREAD: let Chromium send its next frame, once a frame interval after a burst; whether it did."""
    now = time.monotonic()
    cast.allowance, cast.counted = min(BURST, cast.allowance + (now - cast.counted) / INTERVAL_S), now
    if cast.unacked is None or cast.cdp is None or cast.allowance < 1:
        return False
    frame, cast.unacked = cast.unacked, None
    cast.allowance -= 1
    try:
        cast.cdp.send("Page.screencastFrameAck", {"sessionId": frame})
    except Exception as exc:  # the page closed meanwhile: the next tick follows the new one
        log.debug("screencast ack failed", extra={"session": cast.session_id, "error": str(exc)})
        return False
    return True


def _stop(state: Any, cast: Cast) -> None:
    """SESSION THREAD: stop the screencast on the page it runs on, if any."""
    cdp, cast.cdp, cast.page, cast.unacked = cast.cdp, None, None, None
    if cdp is None:
        return
    try:
        cdp.remove_listener("Page.screencastFrame", cast.handler)
        cdp.send("Page.stopScreencast")
    except Exception as exc:  # the page is gone: so is its screencast
        log.debug("screencast stop failed", extra={"session": state.session_id, "error": str(exc)})
    log.info("screencast stopped", extra={"event": "screencast_stopped", "session": state.session_id})
