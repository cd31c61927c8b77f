"""One session's subscribers, and the tick that tells them of new log entries, coalesced.

SESSION THREAD: `tick` runs as the session worker's ticker (worker.py) every TICK_S while anyone
subscribes; its round trip makes the browser's events dispatch between calls, and it compares
each resource's position with the last one told. ANY THREAD: `add`, `remove`, `listeners`.

Coalescing: a resource's subscribers hear of it at most once per COALESCE_S; what arrives
meanwhile is told by the next tick after that, so a page that logs without pause costs a
client four notifications a second, and the last entries are never left untold.
"""

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

TICK_S = 0.1       # how often an idle subscribed session looks for new entries
COALESCE_S = 0.25  # a resource's subscribers hear of it at most this often


class Listener(Protocol):
    """Who hears about one resource: a connection's subscription (transports/resource_methods.py)."""

    def updated(self, uri: str) -> None:
        """New entries wait to be read (called on the session thread)."""

    def ended(self, uri: str) -> None:
        """The session ended: nothing more will come (any thread)."""


class SessionWatch:
    """The subscriptions to one session's resources (by resource name)."""

    def __init__(self, session_id: str, resources: dict[str, Any], coalesce_s: float = COALESCE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.session_id = session_id
        self._resources, self._coalesce_s, self._clock = resources, coalesce_s, clock
        self._lock = threading.Lock()
        self._listeners: dict[str, dict[object, Listener]] = {}  # resource name -> {token: listener}
        self._told: dict[str, int] = {}        # resource name -> its position when last told (or first seen)
        self._told_at: dict[str, float] = {}   # resource name -> when it was last told

    # -- ANY THREAD ------------------------------------------------------------------

    def add(self, name: str, token: object, listener: Listener) -> None:
        with self._lock:
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

    # -- SESSION THREAD ------------------------------------------------------------------

    def tick(self, state: Any) -> None:
        state.flush_events()
        now = self._clock()
        with self._lock:
            watched = {name: list(by_token.values()) for name, by_token in self._listeners.items()}
        for name, listeners in watched.items():
            position = self._resources[name].position(state)
            with self._lock:
                told = self._told.setdefault(name, position)  # a new subscription hears of what comes next
                if position == told or now - self._told_at.get(name, float("-inf")) < self._coalesce_s:
                    continue
                self._told[name], self._told_at[name] = position, now
            uri = self._resources[name].uri(self.session_id)
            for listener in listeners:
                listener.updated(uri)
