"""The history recorder: every call's request and response rows, the page it left, what resume needs.

`request`, `response` and `wait_recorded` run on any thread; `after_call` and the storage saves run on the
session thread, after the call's answer went out. The SQL itself is history.py's."""

import threading
import time
from typing import Any

from mcpbrowser.core import answer
from mcpbrowser.core.history import History
from mcpbrowser.logs import log
from mcpbrowser.session import page_reading

STORAGE_SAVE_INTERVAL_S = 5.0  # see save_storage


class Recorder:
    """Writes calls to the history, and lets get_content wait for a call still being recorded."""

    def __init__(self, history: History, tools: dict[str, Any]) -> None:
        self.history, self._tools = history, tools
        self._lock = threading.Lock()
        self._pending: dict[str, Any] = {}  # ref_id -> Call not yet recorded

    # -- ANY THREAD ------------------------------------------------------------------

    def request(self, call: Any, args: Any) -> None:
        self.history.request(call.ref_id, call.session_id, call.tool,
                             answer.history_request(args, call.secret, call.secrets), owner=call.owner)

    def claim(self, ref_id: str) -> dict[str, Any] | None:
        """Whether a call being answered is recorded: None, or why not (see Store.claim)."""
        return self.history.store.claim(ref_id)

    def pending(self, call: Any) -> None:
        """The call's answer is on its way: wait_recorded(ref_id) waits for its response row."""
        with self._lock:
            self._pending[call.ref_id] = call

    def response(self, call: Any, outcome: answer.Outcome) -> None:
        """The call's response row: the history's rendering of its Outcome (core/answer.py), with the page kept."""
        try:
            self.history.response(call.ref_id, answer.for_history(outcome, call.snapshot, call.console or [],
                                                                  call.secrets), call.session_id)
        except Exception as exc:
            # The answer promised a record: a row that cannot be built whole is written without what it could not hold.
            log.exception("a call's record could not be written whole", extra={
                "event": "record_failed", "session": call.session_id, "refId": call.ref_id})
            self.history.response_unrecorded(call.ref_id, outcome, type(exc).__name__)
        finally:
            with self._lock:
                self._pending.pop(call.ref_id, None)
            call.recorded.set()

    def wait_recorded(self, ref_id: str, timeout: float = 10.0) -> None:
        """Block until the call's response row is queued (its snapshot may still be in capture)."""
        with self._lock:
            call = self._pending.get(ref_id)
        if call is not None:
            call.recorded.wait(timeout)

    # -- SESSION THREAD ---------------------------------------------------------------

    def after_call(self, state: Any, outcome: answer.Outcome, call: Any) -> None:
        """After the answer went out (and the page's capture): keep what resume needs, then record the call."""
        try:
            if outcome.error is None and self._tools[call.tool].changes_page:
                self.save_storage(state)
        finally:  # whatever the save met, the answer promised a record (meta.recorded): it is written
            self.response(call, outcome)

    def save_storage(self, state: Any, force: bool = False) -> None:
        """Keep what resume_session needs (cookies, localStorage, URL). Its read is a round trip the next command
        waits for, so only when the URL changed or STORAGE_SAVE_INTERVAL_S passed, and at the close."""
        url = state.tab.page.url if state.tab is not None else None
        due = time.monotonic() - state.storage_saved_at >= STORAGE_SAVE_INTERVAL_S
        if not (force or due or url != state.storage_saved_url):
            return
        saved = page_reading.storage_state(state)
        if saved is None:
            return
        state.storage_saved(saved[1])
        self.history.save_state(state.session_id, saved[0], saved[1])

    def final_save(self, state: Any) -> None:
        """The last storage save, run just before the session closes."""
        if state.storage_saved_at or state.storage_saved_url:
            self.save_storage(state, force=True)
