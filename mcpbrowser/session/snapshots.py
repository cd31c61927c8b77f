"""A session's snapshots as shown and stored: cleaned, secrets redacted, refs remembered.

SESSION THREAD ONLY: each function takes the session's SessionState, whose
`refs` (of `refs_page`) say which refs the agent may use, and whose `secrets`
are scrubbed from all output.
"""

import re

from mcpbrowser import snapshot_text
from mcpbrowser.logs import log
from mcpbrowser.redaction import has_textbox_values, redact_textboxes, scrub_text, secret_values

REF_MARKER = re.compile(r"\[ref=([A-Za-z0-9_-]+)\]")
MIN_SCRUBBED = 4  # see mark_secret


def capture_snapshot(state):
    """The page as YAML with refs, for the history; None when a dialog or failure prevents it."""
    if state.dialog is not None or state.page is None:
        return None
    try:
        text = state.page.aria_snapshot(mode="ai", timeout=2000)
    except Exception as exc:
        log.debug("snapshot capture failed", extra={"session": state.session_id, "error": str(exc)})
        return None
    return took_snapshot(state, text)


def mark_secret(state, text):
    """The running call's text is a secret: recorded as [REDACTED], and scrubbed from all output.

    Values shorter than MIN_SCRUBBED are not scrubbed from everything (a one-letter
    secret would blank every "a" of a page); the field still never shows them.
    """
    if state.call is not None:
        state.call.secret = True
    if len(text) >= MIN_SCRUBBED:
        state.secrets.add(text)


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
    state.secrets.update(v for v in values if len(v) >= MIN_SCRUBBED)
    return redact_textboxes(text, values)
