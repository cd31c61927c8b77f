"""The page live: Chromium's screencast of a session, only while someone watches it.

- ANY THREAD (the view's request threads): `Screencasts.watch` / `leave` count the viewers of
  a session; the first sets the session's "screencast" ticker, the last removes it and queues
  the stop. `Cast.next` waits for a newer frame (JPEG bytes) under the cast's condition.
- SESSION THREAD: `_tick` (the ticker, between calls and in a long wait's slices) starts the
  screencast on the current page (CDP `Page.startScreencast`), follows the page when the tab
  changes, dispatches the browser's events and acknowledges the last frame when the frame rate
  allows; `_on_frame` (a CDP event, dispatched on the session thread) keeps a frame.
  Chromium sends its next frame only after the ack: acking at most FPS times a second (after a
  burst of BURST) caps its encoding work there, not only what we pass on.
"""

import base64
import threading
import time
from typing import Any

from mcpbrowser.core.face import CoreFace
from mcpbrowser.logs import log
from mcpbrowser.session import page_reading

FPS = 5  # frames a second at most, for every viewer of a session together
# Frames let through at once before the rate holds them: a page that changes now and then (an agent's
# action) has each change sent as it comes; one that never stops (an animation) gets FPS frames a second.
BURST = 2
QUALITY = 60  # JPEG quality: a 1280x720 login page is 30-60 KB
MAX_SIZE = (1280, 960)
# An idle session thread takes the browser's frames in (and acks them) only when it ticks: a frame waits
# for the next tick, up to this long, before a viewer gets it.
TICK_S = 0.05


class Cast:
    """One session's screencast: its viewers (any thread) and the newest frame (bytes, numbered)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.viewers = 0
        self.frame: bytes | None = None
        self.seq = 0
        self.ended = False
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
        with self._cond:
            self.ended = True
            self._cond.notify_all()

    def next(self, after: int, timeout: float) -> tuple[int, bytes | None]:
        """(seq, frame) of a frame newer than `after`, else of the newest one after `timeout` (ANY THREAD)."""
        with self._cond:
            self._cond.wait_for(lambda: self.seq > after or self.ended, timeout)
            return self.seq, self.frame


class Screencasts:
    """The screencasts the view runs: one per watched session, whatever the number of its viewers."""

    def __init__(self, core: CoreFace, fps: float = FPS) -> None:
        self._registry = core.registry  # the open sessions, read through the core's face
        self.interval = 1 / fps
        self._lock = threading.Lock()
        self._casts: dict[str, Cast] = {}
        self.starts = 0  # Page.startScreencast sent, over the server's life (stated in the view's JSON)

    # ANY THREAD
    def watch(self, session_id: str) -> Cast | None:
        """One more viewer of an open session: its cast (started by the first); None when it is not open."""
        record = self._registry.open_record(session_id)
        if record is None:
            return None
        with self._lock:
            cast = self._casts.get(session_id)
            if cast is None or cast.ended:
                cast = self._casts[session_id] = Cast(session_id)
            cast.viewers += 1
            first = cast.viewers == 1
        if first:
            worker = record.worker
            worker.tickers["screencast"] = (TICK_S, lambda state: self._tick(state, cast))
            worker.submit(self._tick, cast)  # wakes an idle session thread to start it
        return cast

    # ANY THREAD
    def leave(self, cast: Cast) -> None:
        """A viewer left; the last one stops the screencast on the session thread."""
        with self._lock:
            cast.viewers -= 1
            last = cast.viewers <= 0
            if last and self._casts.get(cast.session_id) is cast:
                del self._casts[cast.session_id]
        if not last:
            return
        cast.end()
        record = self._registry.open_record(cast.session_id)
        if record is not None:
            record.worker.tickers.pop("screencast", None)
            record.worker.submit(_stop, cast)

    def viewers(self, session_id: str) -> int:
        with self._lock:
            cast = self._casts.get(session_id)
            return cast.viewers if cast is not None else 0

    # SESSION THREAD
    def _tick(self, state: Any, cast: Cast) -> None:
        if cast.ended:
            _stop(state, cast)
            return
        page = state.page
        if page is not cast.page and page is not None and not page.is_closed():
            _stop(state, cast)
            cdp = page_reading.cdp_session(state, page)
            cast.handler = lambda params: self._on_frame(cast, cdp, params)
            cdp.on("Page.screencastFrame", cast.handler)
            # One frame in flight, and the last one drawn meanwhile kept and sent on the ack: with the
            # default (3 in flight, frames drawn while they wait dropped) a change made while the acks
            # were held back to the frame rate was never sent on a page that then stayed still, and
            # the person saw the page before it until something else moved.
            cdp.send("Page.startScreencast", {"format": "jpeg", "quality": QUALITY, "maxWidth": MAX_SIZE[0],
                                              "maxHeight": MAX_SIZE[1], "maxFramesInFlight": 1,
                                              "sendLastFrame": True})
            cast.page, cast.cdp = page, cdp
            self.starts += 1
            log.info("screencast started", extra={"event": "screencast_started", "session": state.session_id})
        state.flush_events()  # frames the browser sent arrive now, through _on_frame
        if _ack(cast, self.interval):
            state.flush_events()  # the frame kept back until the ack comes right behind it: in now, not a tick later

    # SESSION THREAD (a CDP event)
    def _on_frame(self, cast: Cast, cdp: Any, params: dict[str, Any]) -> None:
        if cdp is not cast.cdp:
            return  # a page the cast has left
        cast.put(base64.b64decode(params["data"]))
        cast.unacked = params["sessionId"]
        _ack(cast, self.interval)


def _ack(cast: Cast, interval: float) -> bool:
    """SESSION THREAD: let Chromium send its next frame, once a frame interval after a burst; whether it did."""
    now = time.monotonic()
    cast.allowance, cast.counted = min(BURST, cast.allowance + (now - cast.counted) / interval), now
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
