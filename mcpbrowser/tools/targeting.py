"""Element targeting: run an action on the first match and map Playwright's failures to our codes.

Runs on the session's own thread, inside tool handlers.
"""

from mcpbrowser.errors import (
    BrowserError, BrowserServerError, ElementNotEditable, ElementNotFound, InvalidParameters,
)

# Playwright's wording, matched in one place. Each marker is exercised by test_tools.py.
_BAD_SELECTOR = ("is not a valid selector", "Unexpected token", "Unknown engine", "SyntaxError")
_NOT_EDITABLE = ("is not an <input>", "not editable", "Cannot type", "is not a <select>",
                 "Node is not an HTMLInputElement", "Non-multiple file input")
_STALE_REF = ("Invalid frame in aria-ref", "aria-ref")
_WHY_MARKERS = ("element is not", "intercepts pointer events", "not stable", "is not an <",
                "did not find some options")


def reason(exc):
    """Playwright's first line plus the call-log line that says why the element was unusable."""
    lines = [line.strip(" -") for line in str(exc).splitlines()]
    why = next((line for line in reversed(lines) if any(m in line for m in _WHY_MARKERS)), None)
    return lines[0] if not why or why in lines[0] else f"{lines[0]} ({why})"


def classify(state, label, matches, exc, not_usable):
    """Turn a Playwright failure into our code; probe the page only on this failure path."""
    if isinstance(exc, BrowserServerError):
        return exc
    text = str(exc)
    why = reason(exc)
    details = {"target": label, "reason": why}
    if any(marker in text for marker in _BAD_SELECTOR):
        return InvalidParameters(f"Invalid selector {label!r}: {why}",
                                 session_id=state.session_id, details=details)
    if "did not find some options" in text:
        return InvalidParameters(f"{label} has no such option: {why}",
                                 session_id=state.session_id, details=details)
    is_ref = label.startswith("ref ")
    try:
        count = matches.count()
    except Exception:
        count = 0 if is_ref and any(m in text for m in _STALE_REF) else None
    if count == 0:
        hint = " Take a new snapshot: the page changed since." if is_ref else ""
        return ElementNotFound(f"No element matches {label}.{hint}", session_id=state.session_id,
                               details=details)
    if any(marker in text for marker in _NOT_EDITABLE):
        not_usable = ElementNotEditable
    if count is None:
        return BrowserError(why, session_id=state.session_id, details=details)
    return not_usable(f"{label} matched {count} element(s) but the first is not usable: {why}",
                      session_id=state.session_id, details=details)


def on_element(state, args, not_usable, action):
    """Locate the target and run action(first_match); map failures to codes."""
    label, matches = state.locate(args)
    try:
        action(matches.first)
    except Exception as exc:
        raise classify(state, label, matches, exc, not_usable) from None
    return label


