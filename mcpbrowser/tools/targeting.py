"""Element targeting: run an action on the first match and map Playwright's failures to our codes (session thread)."""

import re
import time

from mcpbrowser.errors import BrowserError, BrowserServerError, ElementNotEditable, ElementNotFound, InvalidParameters
from mcpbrowser.logs import log
from mcpbrowser.page_strings import clip
from mcpbrowser.session import playwright_internals
from mcpbrowser.session.acting import INTERRUPTED, PROBE_S, TIMED_OUT

# Playwright's wording, matched in one place. Each marker is exercised by test_tools.py.
_BAD_SELECTOR = ("is not a valid selector", "Unexpected token", "Unknown engine", "SyntaxError")
_NOT_EDITABLE = ("is not an <input>", "not editable", "Cannot type", "is not a <select>",
                 "Node is not an HTMLInputElement", "Non-multiple file input")
# What the agent can do about an element it cannot use yet, by Playwright's reason.
_NEXT_STEPS = (("element is not visible", ". Hidden: wait_for it, or open what holds it."),
               ("element is not enabled", ". Disabled until the page enables it."),
               ("intercepts pointer events", ". Something covers it: close that first."))
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
    if isinstance(exc, BrowserServerError) or playwright_internals.target_closed(exc):
        return exc  # its page closed itself: the call's end says so (OnSession._what_failed)
    text = str(exc)
    why = reason(exc)
    details = {"target": label, "reason": why}
    if any(marker in text for marker in _BAD_SELECTOR):
        return InvalidParameters(f"Invalid selector {label!r}: {why}", session_id=state.session_id, details=details)
    if "Unknown key" in text:
        return InvalidParameters(why, session_id=state.session_id, details=details)
    if "did not find some options" in text:  # the ones it has are what the agent needs next, not the wait
        return InvalidParameters(f"{label} has no such option{_options(state, matches)} (a list still filling "
                                 "takes a longer timeout).",
                                 session_id=state.session_id, details={"target": label})
    count = _counted(state, matches, 0 if label.startswith("ref ") and any(m in text for m in _STALE_REF) else None)
    if count == 0:
        return not_found(state, label, why=why)
    if any(marker in text for marker in _NOT_EDITABLE):
        not_usable = ElementNotEditable
    if count is None:
        return BrowserError(why, session_id=state.session_id, details=details)
    # The wrong kind of element: what to do instead, not Playwright's list of the right kinds.
    if "is not an <input>" in text:
        return ElementNotEditable(f"{label} is not a field to type into: take a snapshot (query narrows it) "
                                  "and use a textbox's ref.", session_id=state.session_id, details={"target": label})
    if "is not a <select>" in text:
        return ElementNotEditable(f"{label} is not a <select>: choose from a list of another kind by clicking it, "
                                  "then its option.", session_id=state.session_id, details={"target": label})
    then = next((step for marker, step in _NEXT_STEPS if marker in why), "")
    return not_usable(f"{label} matched {count} element(s) but the first is not usable: {why}{then}",
                      session_id=state.session_id, details=details)


OPTIONS_SHOWN = 20  # a select's options named by the error of one it does not have


def _options(state, matches):
    """"; it has: Apple, Banana" (the first select's option labels), or "" when they cannot be read."""
    try:
        labels = state.act(matches.first, "evaluate", deadline_s=PROBE_S, timeout=PROBE_S * 1000,
                           expression="s => Array.from(s.options || [], o => o.label)")
    except Exception:
        return ""
    if not isinstance(labels, list) or not labels:  # TIMED_OUT, INTERRUPTED, or none at all
        return ""
    more = f", and {len(labels) - OPTIONS_SHOWN} more" if len(labels) > OPTIONS_SHOWN else ""
    return "; it has: " + ", ".join(clip(str(name), 40) for name in labels[:OPTIONS_SHOWN]) + more


# Without a `timeout` argument, an element that is not there is reported after this long, not after the
# whole action timeout: a page still rendering gets this grace; `timeout` extends it.
FIND_GRACE_MS = 1000


def _timed_out(exc):
    return type(exc).__name__ == "TimeoutError"


def playwright_selector(args):
    """The Playwright selector of the element the agent named by `ref` or `selector` (checked by locate)."""
    if args.get("ref") is not None:
        return f"aria-ref={args['ref']}"
    selector = args["selector"]
    return "xpath=" + selector if selector.startswith("(//") else selector  # Playwright finds // but not (//…)[n]


def locate(state, args, required=True):
    """(label, Locator) for the `selector` or `ref` in args; (None, None) when neither is given."""
    selector, ref = args.get("selector"), args.get("ref")
    if selector is not None and ref is not None:
        raise InvalidParameters("Give selector or ref, not both.", session_id=state.session_id)
    if ref is not None:
        if ref not in state.tab.refs:
            raise ElementNotFound(f"Ref {ref} is not in the latest snapshot of this tab: the page changed or no "
                                  "snapshot was taken. Take a new snapshot and use its refs.",
                                  session_id=state.session_id, details={"ref": ref})
        return f"ref {ref}", state.tab.page.locator(playwright_selector(args))
    if selector is not None:
        return args["selector"], state.tab.page.locator(playwright_selector(args))
    if required:
        raise InvalidParameters("Give a selector, or a ref from the latest snapshot.", session_id=state.session_id)
    return None, None


class Act:
    """One Playwright method called on the element on_element found: `Act(state, "click", force=True)`.
    `result` is the method's return (INTERRUPTED when a dialog opened), `target` the element it ran on
    (None until the method returned)."""

    def __init__(self, state, method, **kwargs):
        self.state, self.method, self.kwargs = state, method, kwargs
        self.result = self.target = None

    def __call__(self, target, timeout):
        self.result = self.state.act(target, self.method, timeout=timeout, **self.kwargs)
        self.target = target  # once the method returned: None means it never did
        return self.result


def on_element(state, args, not_usable, action, repeatable=True):
    """Locate the target and run action(first_match, timeout_ms) (an `Act`, or a tool's own function of
    several steps); map failures to codes. Fail fast: the first attempt waits at most FIND_GRACE_MS (unless
    the call gave its own timeout); then nothing matching is ELEMENT_NOT_FOUND at once, and an element not
    actionable yet (hidden, covered, animating) is tried again for the rest of the timeout. An action that
    must not run twice (`repeatable` False: typing key by key, pressing a key) is not retried: the element
    is awaited for the grace first, at the cost of one round trip, then acted on once."""
    label, matches = locate(state, args)
    before = state.tab.page.url
    full = args.get("timeout", state.config.action_timeout)
    grace = full if "timeout" in args else min(full, FIND_GRACE_MS)
    started = time.monotonic()

    def left():
        return max(1, full - round((time.monotonic() - started) * 1000))

    if not repeatable:
        if grace < full:
            try:
                matches.first.wait_for(state="attached", timeout=grace)
            except Exception as exc:
                raise (not_found(state, label, grace, reason(exc)) if _timed_out(exc)
                       else classify(state, label, matches, exc, not_usable)) from None
        try:
            action(matches.first, left())
        except Exception as exc:
            raise classify(state, label, matches, exc, not_usable) from None
        return label
    try:
        action(matches.first, grace)
        return label
    except Exception as exc:
        if _timed_out(exc) and "action done" in str(exc):
            # The action happened; Playwright was waiting for the navigation it started. Never repeat it
            # nor call it a failure: an agent told "not clickable" clicks again, and submits twice.
            _await_navigation(state, before, left())
            return label
        if _timed_out(exc) and _input_sent(exc):
            _await_handler(state, left())
            return label
        if grace >= full or not _timed_out(exc) or "did not find some options" in str(exc):
            # A missing option is told after the grace, as a missing element is.
            raise classify(state, label, matches, exc, not_usable) from None
        if _counted(state, matches) == 0:
            raise not_found(state, label, grace, reason(exc)) from None
    try:
        action(matches.first, left())
    except Exception as exc:
        if not (_timed_out(exc) and _input_sent(exc)):
            raise classify(state, label, matches, exc, not_usable) from None
    return label


def _input_sent(exc):
    """Playwright's call log ends in "performing <click|hover|...> action": the mouse's events went to the
    page, whose handler of them was still running when the time ran out."""
    steps = [line.strip(" -") for line in str(exc).splitlines()]
    steps = [step for step in steps if step.startswith(("attempting ", "retrying ", "performing "))]
    return bool(steps) and steps[-1].startswith("performing ") and steps[-1].endswith(" action")


def _await_handler(state, timeout_ms):
    """After a pointer action whose handler outlasted the grace: until the page answers again, within
    timeout_ms (then run_tool's probe names a page that hangs). Trying the action again, or calling it
    not clickable, would have it done twice."""
    try:
        state.act(state.tab.page, "evaluate", deadline_s=timeout_ms / 1000, expression="1")
    except Exception as exc:  # the handler navigated or closed the page: the answer says where it went
        log.debug("page left while its handler ran", extra={"session": state.session_id, "error": str(exc)})


def _counted(state, matches, failed=None):
    """How many elements match (None behind a dialog that just opened), or `failed` when counting fails
    otherwise than with our own error. After an action timed out, the page may be one whose script never
    yields: given PROBE_S, then a probe, such a page raises PAGE_UNRESPONSIVE."""
    try:
        count = state.act(matches, "count", deadline_s=PROBE_S)
        if count is TIMED_OUT and not state.responsive():
            raise state.unresponsive_error()
    except BrowserServerError:
        raise
    except Exception:
        return failed
    return None if count is TIMED_OUT or count is INTERRUPTED else count


def _await_navigation(state, before, timeout_ms):
    """After an action that started a navigation: until the page leaves `before`, within timeout_ms (past
    that the answer still says the action was done; its url and title say where the page is)."""
    try:
        state.tab.page.wait_for_url(lambda url: url != before, timeout=timeout_ms)
    except Exception as exc:
        log.debug("the navigation an action started did not commit in time",
                  extra={"session": state.session_id, "error": str(exc).splitlines()[0]})


def not_found(state, label, waited_ms=None, why=None):
    timeout = re.fullmatch(r"Timeout (\d+)ms exceeded\.", why or "")
    if waited_ms is None and timeout:  # the call's own timeout ran out: the message says how long it waited
        waited_ms = int(timeout[1])
    waited = f" (waited {waited_ms} ms; pass timeout to wait longer)" if waited_ms else ""
    hint = "the page changed since that snapshot; take a new one" if label.startswith("ref ") else \
        "take a snapshot (query narrows it) to see what the page has"
    # Playwright's line for the miss (the grace's timeout, or its locator matching nothing) says the
    # message again, on the agent's commonest mistake; another one (the element went away) is news.
    said = why is None or why == f"Timeout {waited_ms}ms exceeded." or "does not match any element" in why
    return ElementNotFound(f"No element matches {label}{waited}: {hint}.", session_id=state.session_id,
                           details={"target": label} if said else {"target": label, "reason": why})


