"""Each session's renderer memory: measured for list_sessions, and held under --session-memory-mb.

`measure` and `after_call` run on a SESSION THREAD (over CDP); the figure is published as plain data on the
worker (`worker.memory_mb`), which any thread reads. A session over the limit is ended through the registry
(`end_over_memory`), which queues its stop: its thread closes it with a last save, for resume_session."""

import time
from typing import Any

from mcpbrowser.config import Config
from mcpbrowser.core.sessions import SessionRegistry
from mcpbrowser.logs import log
from mcpbrowser.session import page_reading

# Reading a tab's heap is a round trip the renderer answers on its main thread, so after a call the limit is
# checked at most this often: a fast-growing page is caught within one more call, quick calls do not each pay.
CHECK_EVERY_S = 2.0


class SessionMemory:
    """The per-session memory figure and limit (0: no limit; the figure is still shown)."""

    def __init__(self, config: Config, registry: SessionRegistry) -> None:
        self.limit_mb = config.session_memory_mb
        self._registry = registry

    # -- SESSION THREAD ---------------------------------------------------------------

    def measure(self, state: Any) -> float | None:
        """The session's figure in MB, published on its worker; ends it when over the limit. None off Chromium;
        the last figure when no tab could be read now (behind a dialog)."""
        used = page_reading.heap_bytes(state)
        worker = state.worker
        worker.measured(None if used is None else round(used / 1_048_576, 1))
        if used is None:
            return worker.memory_mb
        if self.limit_mb and worker.memory_mb > self.limit_mb:
            log.warning("session over its memory limit", extra={
                "event": "session_memory_exceeded", "session": state.session_id, "usedMb": worker.memory_mb,
                "limitMb": self.limit_mb})
            self._registry.end_over_memory(state.session_id, worker, worker.memory_mb)
        return worker.memory_mb

    def after_call(self, state: Any) -> None:
        """After a call's answer went out: check the limit, when one is set and a check is due."""
        if self.limit_mb and time.monotonic() - state.worker.memory_checked >= CHECK_EVERY_S:
            self.measure(state)

    def probe(self, state: Any) -> dict[str, Any]:
        """list_sessions' figure of a session, read on its thread: {"memoryMb": ...} or {}."""
        used = self.measure(state)
        return {} if used is None else {"memoryMb": used}
