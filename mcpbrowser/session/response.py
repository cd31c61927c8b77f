"""One call's `Response`: what its handler says it did. SESSION THREAD only.

core/on_session.py's `OnSession.run` makes one for each call on a session and hands it to the tool's handler
as `handler(state, args, response)`; the handler, its helpers and the page-side checks (state.run_tool) say on
it what happened, and nowhere else. `OnSession.run` alone reads it, once the handler returned, and decides
from it the call's record, capture and answer (as @playwright/mcp's `Response`: the handler adds, `finish`
decides). Nothing here decides anything.
"""

from collections.abc import Callable
from typing import Any


class Response:
    """What one call's handler did, as it says so."""

    __slots__ = ("caller", "progress", "stores_page", "stores_after", "result", "page", "page_is_snapshot", "secret",
                 "same_page", "reused", "field_edit", "news", "page_crash", "revealed")

    def __init__(self, caller: Any, stores_page: bool, inline: bool,
                 progress: Callable[[float, float | None, str], None] | None = None) -> None:
        # Who made the call: the handler may ask its user (a domain, a hand-over), and tell it how the call goes
        # through `progress`, the caller's own scrubbed of the call's secret book (core/answer.py's progress_to).
        self.caller = caller
        self.progress = progress or caller.progress
        # The page the call leaves is stored (decided from the tool's declaration and the response mode), into the
        # answer too when `inline` (--response-mode full), else after the answer: then a read of the title may count
        # the page's elements in the same round trip (page_reading.loaded_title), which that capture needs.
        self.stores_page = stores_page
        self.stores_after = stores_page and not inline
        self.result: dict[str, Any] | None = None  # what the call answers, see answer
        self.page: str | None = None   # page text the handler read and wants stored under the call's refId
        self.page_is_snapshot = True   # that text is the page's snapshot (else a report: answered as it is)
        self.secret: bool | None = None  # its text: True secret, False looked at and plain, None not known
        self.same_page = False         # it read the page the agent's last answer named (url, title)
        self.reused = False            # it answered from the page's last snapshot, unchanged
        # (selector, value): it filled one plain field, see filled; (selector, None): it chose in a select, see chose
        self.field_edit: tuple[str, str | None] | None = None
        self.news: dict[str, Any] = {}  # what the page did that the agent was not told yet, see page_news
        self.revealed: list[str] = []  # secrets this answer shows because the agent asked for them, see reveal
        self.page_crash: bool | None = None  # as the handler failed: True its page had crashed, False it hung

    def answer(self, result: dict[str, Any]) -> None:
        """What the call answers: the agent's and the library's result, the history's row (a handler returns
        nothing; a later answer replaces an earlier one, as measure_performance's replaces the navigate's it ran)."""
        self.result = result

    def store_page(self, text: str | None, snapshot: bool = True) -> None:
        """Keep `text` as the page this call read (get_content(refId) reads it); `snapshot`: it is the page's
        aria snapshot (else a report of the handler's own, such as a measurement)."""
        self.page, self.page_is_snapshot = text, snapshot

    def text_is_secret(self) -> None:
        """The text this call typed went into a secret field (or may have): never stored in clear."""
        self.secret = True

    def text_is_plain(self) -> None:
        """The text this call typed went into a plain field, looked at: stored, less the known secrets."""
        if self.secret is None:
            self.secret = False

    def read_same_page(self) -> None:
        """The page read is the one the agent's last answer named: its view of the answer omits url and title."""
        self.same_page = True

    def filled(self, selector: str, value: str) -> None:
        """It filled the plain text field at `selector` (Playwright's, a ref's or the agent's) with `value` and did
        nothing else: the capture after it may be the page's last snapshot with that field's line changed
        (snapshots.capture_snapshot)."""
        self.field_edit = (selector, value)

    def chose(self, selector: str) -> None:
        """It chose one option in the select at `selector` and did nothing else: the capture after it may be the
        page's last snapshot with that select's [selected] mark moved (snapshots.capture_snapshot)."""
        self.field_edit = (selector, None)

    def page_news(self, news: dict[str, Any]) -> None:
        """Where the call left the page and what it did that the agent was not told yet, as the answer's fields
        (session/state.py's run_tool reads it off the session; core/answer.py's with_news words it): url, title,
        whether it navigated, a page that stopped answering, a dialog that opened, new tabs, a replaced tab,
        dialogs dismissed, downloads."""
        self.news = news

    def reveal(self, value: str) -> None:
        """The agent asked for this secret by name (a session cookie): this answer shows it, and it is a secret of
        the session's from then on, scrubbed from the history's row of this call and from everything after."""
        self.revealed.append(value)

    def reused_snapshot(self) -> None:
        """The snapshot came from the page's last one, the page provably unchanged (the call's log says so)."""
        self.reused = True

    def page_failed(self, crashed: bool) -> None:
        """As the handler failed, its page had crashed (`crashed`), or stopped answering: a fact the call's end
        classifies the failure with, the handler's exception kept as it is."""
        self.page_crash = crashed
