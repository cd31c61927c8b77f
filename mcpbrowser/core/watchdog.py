"""The watchdog: finds session commands running far past their timeout and replaces their thread.

Runs on the watchdog thread (only when --watchdog-grace is set). It never touches Playwright: it answers the
stuck command, starts a fresh session thread from the session's last saved state, and kills the old driver."""

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import InvalidStateError
from typing import Any

from mcpbrowser.core import answer
from mcpbrowser.core.history import History
from mcpbrowser.core.sessions import SessionRecord, SessionRegistry
from mcpbrowser.errors import CommandTimeout
from mcpbrowser.logs import log
from mcpbrowser.session.worker import SessionWorker

WATCHDOG_TICK_S = 1.0  # how often the watchdog looks for stuck commands


class Watchdog:
    """Looks at every session once a tick until `stop` is set."""

    def __init__(self, registry: SessionRegistry, history: History, opener: Callable[[SessionWorker], Any],
                 options: Callable[[list[str] | None, str], dict[str, Any]], stop: threading.Event) -> None:
        self._registry, self._history = registry, history
        self._opener, self._options = opener, options
        self._stop = stop
        self._thread = threading.Thread(target=self._watch, name="watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()

    # WATCHDOG THREAD
    def _watch(self) -> None:
        while not self._stop.wait(WATCHDOG_TICK_S):
            now = time.monotonic()
            for record in self._registry.records():
                stuck = record.worker.stuck(now)
                if stuck is not None:
                    self._replace_stuck(record, *stuck)

    def _replace_stuck(self, record: SessionRecord, fut: Any, tag: Any) -> None:
        """Answer a stuck command COMMAND_TIMEOUT and give its session a fresh thread, on a new context from the
        last saved state (Playwright objects cannot change threads); killing the old driver frees the old thread
        and closes its context."""
        call, budget = tag
        old, session_id = record.worker, record.session_id
        saved = self._history.saved_state(session_id)
        options = self._options(old.options.get("allowed_domains"), session_id)
        # The fresh page looks and runs like the old one, logged in as it began (and its login's name kept).
        options.update({key: old.options[key] for key in ("emulation", "throttle", "storage_state", "login")
                        if old.options.get(key)})
        if saved is not None:
            options.update(storage_state=saved[0], url=saved[1])
        new = SessionWorker(session_id, self._opener, options)
        if not self._registry.replace_worker(record, old, new):
            if options["proxy"] is not None:
                options["proxy"].close()
            return
        # The server's own work (between calls: tag None; after an answer: its capture) is named as the server's,
        # never as a tool the agent did not send or already has an answer to.
        goes_on = ("The session goes on in a fresh page" + (" at its last saved URL, with its cookies" if saved else "")
                   + "; check the page and retry.")
        if call is None:
            what, tool = "The server's own work on this session between calls", None
        elif fut.done():
            what, tool = f"The server's work after {call.tool} (storing the page it left)", None
        else:
            what, tool = call.tool, call.tool
        timeout = CommandTimeout(
            f"{what} was still running {budget:.0f} s after it started, far past its own timeout: the page "
            f"stopped responding, so its session thread was replaced. {goes_on}",
            session_id=session_id, details={**({"tool": tool} if tool else {}), "budgetSeconds": round(budget)})
        # It finished just now: the session still moves to the fresh thread.
        with contextlib.suppress(InvalidStateError):
            if tool:  # the call ends in its Outcome here, as it would on its session thread
                fut.set_result(answer.finish(call, error=timeout))
            else:
                fut.set_exception(timeout)
        new.start()
        old.stop(timeout)
        if old.driver_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(old.driver_pid, signal.SIGKILL)
        log.error("command stuck: session thread replaced", extra={
            "event": "session_thread_replaced", "session": session_id, "tool": call.tool if call else None,
            "budget_s": round(budget), "driver_killed": bool(old.driver_pid)})
