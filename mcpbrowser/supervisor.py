"""Session expiry timers; called from any thread, callbacks run on timer threads.

A timer callback never touches Playwright: it asks the core to stop the
session, which only sets flags and enqueues a stop command for the session's
own thread. The timer factory is injectable so the logic is tested with fakes.
"""

import threading


class Supervisor:
    """Owns one expiry timer per session."""

    def __init__(self, timer_factory=threading.Timer):
        self._timer_factory = timer_factory
        self._timers = {}
        self._lock = threading.Lock()

    def schedule_expiry(self, session_id, delay_s, callback):
        """Call callback(session_id) after delay_s seconds unless cancelled first."""
        timer = self._timer_factory(delay_s, callback, args=(session_id,))
        timer.name = f"expire-{session_id[:8]}"
        timer.daemon = True
        with self._lock:
            old = self._timers.pop(session_id, None)
            self._timers[session_id] = timer
        if old is not None:
            old.cancel()
        timer.start()

    def cancel_expiry(self, session_id):
        """Stop the session's timer if it has one; safe to call twice."""
        with self._lock:
            timer = self._timers.pop(session_id, None)
        if timer is not None:
            timer.cancel()

    def forget(self, session_id):
        """Drop the record of a timer that has fired."""
        with self._lock:
            self._timers.pop(session_id, None)

    def cancel_all(self):
        with self._lock:
            timers, self._timers = list(self._timers.values()), {}
        for timer in timers:
            timer.cancel()

    def pending(self):
        with self._lock:
            return set(self._timers)
