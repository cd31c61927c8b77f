"""One tab of a session: its Playwright page, its open dialog and what the session knows of that page alone.

SESSION THREAD ONLY: made by SessionState as the context opens a page, used by the session's modules and handlers.
"""

from typing import Any


class Tab:
    """A page of the session's context, with its own dialog, counts, refs, held snapshot, health and logs."""

    def __init__(self, page):
        self.page = page
        self.navigations = 0      # new documents of its main frame, to tell an action's answer
        self.refs: frozenset[str] = frozenset()  # the refs of its last snapshot, which the agent may use
        self.full_snapshot = None  # (text, arming): its last whole-page snapshot, read as the page watch was armed
        self.arming = 0           # the token its last walk armed the page watch with (snapshots.page_root)
        # (arming, title, command, navigations): the capture's walk, taken as that queued command waited (fresh_walk)
        self.fresh = None
        self.crashed = False      # its renderer died: the next call replaces it with a fresh tab
        self.closing = False      # the agent or the server closes it (SessionState.close_tab): no news of it
        self.unresponsive = False  # it did not answer a probe (acting.PROBE_S)
        # The dialog is its page's (the page tools on it wait for its answer, other tabs go on); told the agent
        # once, in the next answer (SessionState._news). Closing or crashing, the tab drops it.
        self.dialog: Any = None
        self.held_by: Any = None  # the tab whose open dialog holds this page too (SessionState.responsive)
        self.dialog_run = 0       # dialogs in a row, each soon after the previous one's answer (LOOP_DIALOGS)
        self.dialog_answered_at = float("-inf")  # monotonic time its last dialog was answered
        self.looping = False      # it raised dialogs in a loop: the server answers them until it navigates
        self.throttled = False    # it was sent a throttling, so that "none" reaches it
        self.cdp_session = None   # its CDP session, once opened (cdp)
        self.log_pages: set = set()  # keys of the pages whose log entries are its (EventBuffers.key): its own, replaced
        self.page_mark = 0        # the session's request count when its page's document was requested
        self.document_request: Any = None  # its main frame's document request in flight, until it commits or ends

    def cdp(self):
        """Its CDP session, opened on first use (the opener opens the first tab's ahead: navigate's title)."""
        if self.cdp_session is None:
            self.cdp_session = self.page.context.new_cdp_session(self.page)
        return self.cdp_session

    def navigated(self, new_document):
        """Its main frame committed a navigation: a new document ends its refs and dialog loop with the old one; the
        same document at another URL (the History API, a fragment) keeps them (the call's end compares the URL)."""
        if not new_document:
            return
        self.document_request = None
        self.navigations, self.looping, self.refs = self.navigations + 1, False, frozenset()
