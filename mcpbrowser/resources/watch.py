"""One session's subscribers, and telling them of new log entries as they arrive, coalesced.

Threads:
- SESSION THREAD: `changed`, from the event buffers' on_log as Playwright dispatches an entry
  (during a call, or during `tick`); `tick` runs as the session worker's ticker (worker.py) every
  TICK_S while anyone subscribes, and its round trip makes the browser's events dispatch while
  the session is idle.
- TIMER THREAD: the trailing `changed` of a coalescing window (it only sends; no Playwright).
- ANY THREAD: `add`, `remove`, `close`, `listeners`.

Coalescing: a resource's subscribers hear of it at most once per COALESCE_S. An entry that arrives within the window is
told when it closes (a timer, at most one per resource), so a page that logs without pause costs a client four
notifications a second, and the last entries of a burst are never left untold.
"""

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from mcpbrowser.timers import KeyedTimers

TICK_S = 0.1       # how often an idle subscribed session asks the browser for what it sent
COALESCE_S = 0.25  # a resource's subscribers hear of it at most this often


class Listener(Protocol):
    """Who hears about one resource: a connection's subscription (transports/resource_methods.py)."""

    def updated(self, uri: str) -> None:
        """New entries wait to be read (the session thread, or a timer thread)."""

    def ended(self, uri: str) -> None:
        """The session ended: nothing more will come (any thread)."""


class SessionWatch:
    """The subscriptions to one session's resources (by resource name), and what each was last told."""

    def __init__(self, session_id: str, resources: dict[str, Any], events: Any, coalesce_s: float = COALESCE_S,
                 clock: Callable[[], float] = time.monotonic, timer_factory: Callable[..., Any] = threading.Timer):
        self.session_id = session_id
        self._resources, self._coalesce_s, self._clock = resources, coalesce_s, clock
        self._lock = threading.Lock()
        self._listeners: dict[str, dict[object, Listener]] = {}  # resource name -> {token: listener}
        self._told: dict[str, int] = {}        # resource name -> its position when last told (or subscribed)
        self._told_at: dict[str, float] = {}   # resource name -> when it was last told
        self._timers = KeyedTimers(timer_factory, "watch")  # by resource name: its pending trailing timer
        self._events: Any = None
        self._attach(events)

    def _attach(self, events: Any) -> None:
        """Follow these event buffers (a session's; a watchdog's fresh thread brings new ones)."""
        self._events = events
        if events is not None:
            events.on_log = self.changed

    # -- ANY THREAD ------------------------------------------------------------------

    def add(self, name: str, token: object, listener: Listener) -> None:
        events = self._events
        position = self._resources[name].position(events) if events is not None else 0
        with self._lock:
            if name not in self._listeners:
                self._told[name] = position  # a new subscription hears of what comes next
            self._listeners.setdefault(name, {})[token] = listener

    def remove(self, token: object) -> bool:
        """Forget a subscription; True when none is left."""
        with self._lock:
            for name in list(self._listeners):
                self._listeners[name].pop(token, None)
                if not self._listeners[name]:
                    del self._listeners[name]
                    self._told.pop(name, None)
            return not self._listeners

    def listeners(self) -> list[tuple[str, Listener]]:
        with self._lock:
            return [(name, listener) for name, by_token in self._listeners.items() for listener in by_token.values()]

    def close(self) -> None:
        """Tell no more: the buffers stop calling, pending timers are cancelled."""
        events = self._events
        if events is not None and events.on_log == self.changed:
            events.on_log = None
        self._timers.cancel_all()

    def changed(self, name: str) -> None:
        """An entry joined a log: tell its subscribers now, or when the coalescing window closes."""
        events = self._events
        if events is None:
            return
        position = self._resources[name].position(events)
        now = self._clock()
        with self._lock:
            if name not in self._listeners or position == self._told.get(name):
                return
            wait = self._told_at.get(name, float("-inf")) + self._coalesce_s - now
            if wait > 0:
                if name not in self._timers.pending():
                    self._timers.schedule(name, wait, self._trailing)
                return
            self._told[name], self._told_at[name] = position, now
            listeners = list(self._listeners[name].values())
        uri = self._resources[name].uri(self.session_id)
        for listener in listeners:
            listener.updated(uri)

    def _trailing(self, name: str) -> None:
        self._timers.forget(name)
        self.changed(name)

    # -- SESSION THREAD ------------------------------------------------------------------

    def tick(self, state: Any) -> None:
        if state.events is not self._events:
            self._attach(state.events)
        state.flush_events()  # what the browser sent arrives now, through `changed`
        with self._lock:
            names = list(self._listeners)
        for name in names:
            self.changed(name)
