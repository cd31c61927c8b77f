"""Acting on a page without being held by it: `act` returns INTERRUPTED when a dialog opens and
TIMED_OUT past a deadline; `responsive` probes a page that may hang. SessionState's base.

SESSION THREAD ONLY: every Playwright object touched here is the session's own.
"""

import time
from typing import TYPE_CHECKING, Any

from mcpbrowser.errors import PageUnresponsive
from mcpbrowser.logs import log
from mcpbrowser.page_strings import clip
from mcpbrowser.session.playwright_internals import event_loop, run_coroutine, take_coroutine

INTERRUPTED = object()  # act() result: the call opened a dialog before it finished
TIMED_OUT = object()  # act() result: the page did not answer within the deadline given
# A page whose own script never yields answers nothing. Work the server does by itself (the capture after a call, the
# storage save, the idle collection) gives up after INTERNAL_S; a page that made it give up, or made a call fail slowly
# (after PROBE_AFTER_S), is asked for one trivial evaluation, given PROBE_S: no answer, and calls answer
# PAGE_UNRESPONSIVE at once instead of waiting out their timeouts and the watchdog.
INTERNAL_S = 2.0
PROBE_AFTER_S = 1.0
PROBE_S = 1.0
COUNT_BEFORE_ANSWER_S = 1.0  # an answer waits this long at most for the page's element count (snapshots.too_large)


def _retrieve(task):
    # An action left running behind an open dialog finishes later; its outcome is
    # no longer anyone's answer, but must be read so asyncio does not warn about it.
    if not task.cancelled():
        task.exception()


class Acting:
    """SessionState's acts and probes, on its tabs (a tab that does not answer is marked so), behind its dialog."""

    tab: Any
    tabs: list[Any]
    context: Any
    trapped: bool
    _dialog_waiter: Any
    if TYPE_CHECKING:
        @property
        def session_id(self) -> str: ...
        def dialog_open_error(self) -> Exception: ...

    # Here, beside the acts it stops, not in state.py: an act asks it first, and a call's way in does not go back
    # into the session's state for it (tests/test_call_trace.py).
    @property
    def blocker(self):
        """The open dialog that holds the current tab: its own, or another tab's found to freeze it (responsive)."""
        tab = self.tab
        if tab is None:
            return None
        holder = tab if tab.dialog is not None else tab.held_by
        return holder.dialog if holder is not None and holder in self.tabs else None

    def holder(self, besides=None):
        """The first tab but `besides` with an open dialog, or None."""
        return next((tab for tab in self.tabs if tab is not besides and tab.dialog is not None), None)

    def act(self, target, method, /, deadline_s=None, watch=None, **kwargs):
        """Call target.method(**kwargs), but return INTERRUPTED as soon as a dialog opens (and TIMED_OUT after
        deadline_s seconds, when given): an action whose click opens an alert would otherwise block until the
        dialog is answered. The sync method hands over its coroutine (playwright_internals), and we wait for
        whichever comes first. watch=(every_s, still_fine): while the call runs, ask still_fine() every every_s
        seconds; when it says no, stop waiting (TIMED_OUT) and leave the call to its fate.
        """
        if self.blocker is not None:
            return INTERRUPTED  # one opened earlier in this call: nothing reaches the page until it is answered
        direct, coroutine = take_coroutine(target, method, kwargs)
        if coroutine is None:
            return direct
        import asyncio  # here, not at module top: keeps it off the path to `initialize`

        task = event_loop(self.context).create_task(coroutine)
        task.add_done_callback(_retrieve)
        end = None if deadline_s is None else time.monotonic() + deadline_s
        while True:
            if self._dialog_waiter is None or self._dialog_waiter.done():
                self._dialog_waiter = event_loop(self.context).create_future()
            waiter = self._dialog_waiter
            step = None if end is None else max(0.0, end - time.monotonic())
            if watch is not None:
                step = watch[0] if step is None else min(step, watch[0])
            run_coroutine(target, asyncio.wait({task, waiter}, timeout=step, return_when=asyncio.FIRST_COMPLETED))
            if task.done():
                return task.result()
            if waiter.done():
                # Its tab's dialog, or another tab's that froze this page too: a popup and its same-site opener
                # run on one thread, which an alert in either stops. A page that still answers goes on.
                if self.blocker is not None or self.trapped or not self.responsive():
                    return INTERRUPTED
                continue
            if watch is None or (end is not None and time.monotonic() >= end) or not watch[1]():
                return TIMED_OUT

    def responsive(self, tab=None):
        """Whether the tab's page (the current tab's by default) runs a trivial script within PROBE_S; remembered.

        A page that does not answer while another tab's dialog is open is held by that dialog, not hung (Chromium
        runs a popup and its same-site opener on one thread, which an alert in either stops): Tab.held_by."""
        tab = self.tab if tab is None else tab
        try:
            answered = self.act(tab.page, "evaluate", deadline_s=PROBE_S, expression="1") is not TIMED_OUT
        except Exception:  # closed, navigating, crashed: not a page that hangs
            answered = True
        tab.held_by = None if answered else tab if tab.dialog is not None else self.holder(besides=tab)
        tab.unresponsive = not answered and tab.held_by is None
        if tab.unresponsive:
            log.warning("page unresponsive", extra={"event": "page_unresponsive", "session": self.session_id})
        return answered

    def background(self, tab, target, method, /, **kwargs):
        """The server's own work on a tab (no agent waits for it): target.method(**kwargs) through act,
        given INTERNAL_S; None when a dialog or the deadline ended it, or the tab is known to hang."""
        held = tab.dialog is not None or (tab.held_by is not None and tab.held_by.dialog is not None)
        if tab.unresponsive or held:  # a page behind a dialog (its own, or one that freezes it too) answers nothing
            return None
        result = self.act(target, method, deadline_s=INTERNAL_S, **kwargs)
        if result is TIMED_OUT:
            self.responsive(tab)
        return None if result is INTERRUPTED or result is TIMED_OUT else result

    def unresponsive_error(self):
        """The PAGE_UNRESPONSIVE error for the current tab, with what to do; DIALOG_OPEN when a dialog holds it."""
        if self.blocker is not None:  # another tab's dialog froze it (responsive): that is what to answer
            return self.dialog_open_error()
        url = self.tab.page.url
        return PageUnresponsive(
            f"The page at {clip(url)} does not respond: a script of its own keeps it busy, so nothing can act on it. "
            "Navigate elsewhere, or to the same URL to reload it (navigate replaces the stuck tab); the session, "
            "its cookies and its other tabs are fine.", session_id=self.session_id, details={"url": url})
