"""A session's snapshots as shown and stored: cleaned, secrets redacted, refs remembered.

SESSION THREAD ONLY: each function takes the session's SessionState, whose
`refs` (of `refs_page`) say which refs the agent may use, and whose `secrets`
are scrubbed from all output.
"""

import re

from mcpbrowser import snapshot_text
from mcpbrowser.logs import log
from mcpbrowser.redaction import MIN_SCRUBBED, has_textbox_values, redact_textboxes, scrub_text, secret_values
from mcpbrowser.session import page_reading, page_watch

REF_MARKER = re.compile(r"\[ref=([A-Za-z0-9_-]+)\]")


# A page of more elements than this is not walked by the server's own capture (the history's
# snapshot after a call): an aria snapshot costs the page about 0.1 ms per element here (10,000
# table rows with a link each, 20,000 elements: 2.5 s; 60,000: 6.4 s), and the walk, once started,
# goes on in the page after any timeout, so the agent's next click would wait behind it and the
# page would look hung. Such a call's history has no snapshot; the agent's own snapshot still walks it.
HUGE_ELEMENTS = 15_000


def capture_snapshot(state):
    """The page as YAML with refs, for the history; None when a dialog, failure or a huge page prevents it."""
    if state.dialog is not None or state.page is None:
        return None
    state.full_snapshot = None
    try:  # a dialog that opens meanwhile, or a page that hangs, ends the capture, not the session thread's wait
        if too_large(state):
            return None
        text = state.background(state.page, page_root(state), "aria_snapshot", mode="ai", timeout=2000)
    except Exception as exc:
        log.debug("snapshot capture failed", extra={"session": state.session_id, "error": str(exc)})
        state.responsive()  # a page that hangs fails with Playwright's own timeout first
        return None
    if text is None:
        return None
    return took_whole_snapshot(state, text)


def too_large(state, counted=None, deadline_s=None):
    """Whether the history's capture skips the page: over HUGE_ELEMENTS (`counted`, a count just read, else
    one read), or too busy to answer the count within deadline_s (a walk would wait as long, then run on).
    A count that failed (a page navigating): False, the capture's own try decides."""
    count = counted if counted is not None else page_reading.element_count(state, deadline_s)
    if count is not None and (count > HUGE_ELEMENTS or count == page_reading.NO_ANSWER):
        log.debug("snapshot capture skipped", extra={"session": state.session_id, "elements": count})
        return True
    return False


def page_root(state):
    """What a whole-page aria snapshot is taken of: the page, through the page watch's engine when
    there is one, which arms the watch in the same evaluation as the walk (see page_watch)."""
    return state.page.locator(page_watch.ARM) if state.watching else state.page


def took_whole_snapshot(state, text):
    """took_snapshot, for a whole-page snapshot read through page_root: unchanged_snapshot may give it again."""
    page = state.page
    text = took_snapshot(state, text)
    if state.watching:
        state.full_snapshot = (page, text)
    return text


def unchanged_snapshot(state):
    """The tab's last whole-page snapshot if the page provably did not change since it was read, else None.

    One count through the page watch's engine (about 2 ms on a small page, 4 ms on
    Sphinx's autodoc page, against 5 and 100 ms for walking it again). Playwright's
    refs are still that snapshot's: nothing else read an aria snapshot since (every
    other read clears full_snapshot). The count goes through state.act: behind a
    dialog that opened meanwhile it would hang.
    """
    held = state.full_snapshot
    if held is None or held[0] is not state.page:
        return None
    if state.act(state.page.locator(page_watch.CLEAN), "count") != 1:
        return None
    text = scrub_text(held[1], state.secrets)  # a secret typed since is scrubbed from it too
    state.refs = frozenset(REF_MARKER.findall(text))
    state.refs_page = state.page
    if state.call is not None:
        state.call.snapshot_reused = True  # the call's log line says so
    return text


def mark_secret(state, text):
    """The running call's text is a secret: recorded as [REDACTED], and scrubbed from all output.

    Values shorter than MIN_SCRUBBED are not scrubbed from everything (a one-letter
    secret would blank every "a" of a page); the field still never shows them.
    """
    if state.call is not None:
        state.call.secret = True
    learn_secrets(state, (text,))


def learn_secrets(state, values):
    """Values known to be secret from now on: scrubbed everywhere, or (shorter ones) where they stand alone."""
    values = {v for v in values if v}
    state.secrets.update(v for v in values if len(v) >= MIN_SCRUBBED)
    state.short_secrets.update(v for v in values if len(v) < MIN_SCRUBBED)


def took_snapshot(state, text):
    """A fresh aria snapshot as shown and stored: cleaned, redacted; its refs become the current ones."""
    text = redact_snapshot(state, snapshot_text.clean(text))
    state.refs = frozenset(REF_MARKER.findall(text))
    state.refs_page = state.page
    return text


def redact_snapshot(state, text):
    """An aria snapshot with known secrets scrubbed and every secret field's value hidden.

    The fields' values are read only when some textbox in the snapshot shows a value.
    """
    text = scrub_text(text, state.secrets)
    if state.page is None or state.dialog is not None or not has_textbox_values(text):
        return text
    values = secret_values(state.page)
    learn_secrets(state, values)
    return redact_textboxes(text, values)
