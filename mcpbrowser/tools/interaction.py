"""Element interaction tools; handlers run on the session's own thread."""

from mcpbrowser import schema
from mcpbrowser.errors import (
    BrowserError, BrowserServerError, ElementNotClickable, ElementNotEditable, ElementNotFound,
    InvalidParameters,
)
from mcpbrowser.tools.base import SELECTOR, SUCCESS_MESSAGE, TIMEOUT, Tool, session_schema

# Playwright's wording, matched in one place. Tested end to end in test_tools.py.
_BAD_SELECTOR = ("is not a valid selector", "Unexpected token", "Unknown engine", "SyntaxError")
_NOT_EDITABLE = ("is not an <input>", "not editable", "Cannot type")


def _locator(state, selector):
    if selector.startswith("(//"):
        selector = "xpath=" + selector  # Playwright auto-detects // and .. but not (//…)[n]
    return state.page.locator(selector)


_WHY_MARKERS = ("element is not", "intercepts pointer events", "not stable", "is not an <")


def _reason(exc):
    """Playwright's first line plus the call-log line that says why the element was unusable."""
    lines = [line.strip(" -") for line in str(exc).splitlines()]
    why = next((line for line in reversed(lines) if any(m in line for m in _WHY_MARKERS)), None)
    return lines[0] if not why or why in lines[0] else f"{lines[0]} ({why})"


def _classify(state, matches, selector, exc, not_usable):
    """Turn a Playwright failure into our code; probe the page only on this failure path."""
    if isinstance(exc, BrowserServerError):
        return exc
    text = str(exc)
    reason = _reason(exc)
    details = {"selector": selector, "reason": reason}
    if any(marker in text for marker in _BAD_SELECTOR):
        return InvalidParameters(f"Invalid selector {selector!r}: {reason}",
                                 session_id=state.session_id, details=details)
    try:
        count = matches.count()
    except Exception:
        count = None
    if count == 0:
        return ElementNotFound(f"No element matches {selector!r}.",
                               session_id=state.session_id, details=details)
    if any(marker in text for marker in _NOT_EDITABLE):
        not_usable = ElementNotEditable
    if count is None:
        return BrowserError(reason, session_id=state.session_id, details=details)
    return not_usable(f"{selector!r} matched {count} element(s) but the first is not usable: {reason}",
                      session_id=state.session_id, details=details)


def click(state, args):
    selector = args["selector"]
    matches = _locator(state, selector)
    try:
        matches.first.click(timeout=args.get("timeout", state.config.action_timeout),
                            force=args.get("force", False), click_count=args.get("clickCount", 1))
    except Exception as exc:
        raise _classify(state, matches, selector, exc, ElementNotClickable) from None
    return {"success": True, "message": f"Clicked {selector}"}


def type_text(state, args):
    selector, text = args["selector"], args["text"]
    delay, clear = args.get("delay", 0), args.get("clear", True)
    timeout = args.get("timeout", state.config.action_timeout)
    matches = _locator(state, selector)
    target = matches.first
    try:
        if clear and not delay:
            target.fill(text, timeout=timeout)  # one round trip: the fast path
        else:
            if not target.is_editable(timeout=timeout):
                raise ElementNotEditable(f"{selector!r} is disabled or read-only.",
                                         session_id=state.session_id, details={"selector": selector})
            if clear:
                target.fill("", timeout=timeout)
            else:
                # Key presses go where the caret is; put it after the existing text.
                target.evaluate("e => { if (e.setSelectionRange && e.value !== undefined)"
                                " e.setSelectionRange(e.value.length, e.value.length) }")
            target.press_sequentially(text, delay=delay, timeout=timeout)
    except Exception as exc:
        raise _classify(state, matches, selector, exc, ElementNotEditable) from None
    return {"success": True, "message": f"Typed {len(text)} character(s) into {selector}"}


TOOLS = [
    Tool(
        name="click",
        title="Click element",
        description="Click the first element matching a CSS or XPath selector.",
        input_schema=session_schema({
            "selector": SELECTOR,
            "timeout": TIMEOUT,
            "force": schema.boolean("Skip actionability checks (visible, enabled, not covered)."),
            "clickCount": schema.integer("Number of clicks, 2 for a double click.", minimum=1, maximum=3),
        }, required=("selector",)),
        handler=click,
        output_schema=SUCCESS_MESSAGE,
    ),
    Tool(
        name="type",
        title="Type text",
        description="Type text into an input, textarea or contenteditable element. "
                    "Replaces its content unless clear is false.",
        input_schema=session_schema({
            "selector": SELECTOR,
            "text": schema.string("Text to enter."),
            "delay": schema.integer("Milliseconds between key presses; 0 fills at once.",
                                    minimum=0, maximum=1000),
            "timeout": TIMEOUT,
            "clear": schema.boolean("Replace the current content (default true); false appends."),
        }, required=("selector", "text")),
        handler=type_text,
        output_schema=SUCCESS_MESSAGE,
    ),
]
