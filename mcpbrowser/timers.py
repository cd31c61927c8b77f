"""Time for any thread: keyed one-shot timers (session expiry, the login cooldown's end) and wall-clock stamps.

Any thread schedules and cancels; callbacks run on timer threads and never touch Playwright: they only
move flags and enqueue work for the thread that owns it. The timer factory is injectable, for fakes."""

import threading
import time
from collections.abc import Callable
from typing import Any


def now_ms() -> int:
    """Wall-clock epoch milliseconds, for timestamps shown to clients (never for deadlines)."""
    return time.time_ns() // 1_000_000


class KeyedTimers:
    """At most one pending timer per key; scheduling a key again replaces its timer."""

    def __init__(self, factory: Callable[..., Any] = threading.Timer, name: str = "timer") -> None:
        self.factory, self._name = factory, name
        self._timers: dict[str, Any] = {}
        self._lock = threading.Lock()

    def schedule(self, key: str, delay_s: float, callback: Callable[[str], Any]) -> None:
        """Call callback(key) after delay_s seconds unless cancelled or rescheduled first."""
        timer = self.factory(delay_s, callback, args=(key,))
        timer.name = f"{self._name}-{key[:8]}"
        timer.daemon = True
        with self._lock:
            old = self._timers.pop(key, None)
            self._timers[key] = timer
        if old is not None:
            old.cancel()
        timer.start()

    def cancel(self, key: str) -> None:
        """Stop the key's timer if it has one; safe to call twice."""
        with self._lock:
            timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def forget(self, key: str) -> None:
        """Drop the record of a timer that has fired."""
        with self._lock:
            self._timers.pop(key, None)

    def cancel_all(self) -> None:
        with self._lock:
            timers, self._timers = list(self._timers.values()), {}
        for timer in timers:
            timer.cancel()

    def pending(self) -> set[str]:
        with self._lock:
            return set(self._timers)
