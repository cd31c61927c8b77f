"""Tool errors with stable codes; raised on any thread, carried across queues inside Futures."""

import contextlib
import errno
import os

FULL_BELOW = 1 << 20  # bytes free under which a failed write is the disk's being full


class BrowserServerError(Exception):
    """Base class: a tool failure the caller can act on, identified by `code`."""

    code = "BROWSER_ERROR"
    default_message = "The browser failed to carry out the request."
    # True when the call gave up because its own timeout passed (a wait, a page load): one
    # of the two facts the login cooldown decides from (guards.wall_hit). Never on the wire.
    timed_out = False

    def __init__(self, message=None, *, session_id=None, details=None):
        self.message = message or self.default_message
        self.session_id, self.details = session_id, details
        self.ref_id = None  # set when the call is recorded in the history
        self.meta = None
        super().__init__(self.message)

    def to_dict(self):
        """The whole error object of a failed call, as the history keeps it (what the agent reads of it:
        core/answer.agent_error)."""
        given = {"errorCode": self.code, "message": self.message, "sessionId": self.session_id, "details": self.details}
        out = {key: value for key, value in given.items() if value is not None}
        return out if self.ref_id is None else {**out, "refId": self.ref_id, "meta": self.meta}


# Groups an embedder can catch; the wire codes are the classes' own.
class SessionError(BrowserServerError):
    """The session is not there (never was, expired, lost with its browser) or cannot be opened."""


class ElementError(BrowserServerError):
    """The target element is missing or cannot take the action."""


class PolicyError(BrowserServerError):
    """A safety rule refused the call: the domain policy, a rate limit, the login cooldown."""


class BrowserFailure(BrowserServerError):
    """The browser or its page failed under the call."""


class Retryable(BrowserServerError):
    """Worth trying again later: `retry_after_ms` says when (None when unknown)."""

    @property
    def retry_after_ms(self):
        details = self.details or {}
        value = details.get("retryAfterMs", details.get("remainingMs"))
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class SessionNotFound(SessionError):
    code = "SESSION_NOT_FOUND"
    default_message = "No session has this id. Call create_session to get one."


class SessionExpired(SessionError):
    code = "SESSION_EXPIRED"
    default_message = ("This session expired and was closed. Call resume_session with its id to bring it back "
                       "with its cookies and last URL, if they were saved; otherwise call create_session.")


class MaxSessionsReached(SessionError):
    code = "MAX_SESSIONS_REACHED"
    default_message = "The session limit is reached. Close a session with close_session first."


class NavigationFailed(BrowserFailure):
    code = "NAVIGATION_FAILED"
    default_message = "Navigation failed."


class ElementNotFound(ElementError):
    code = "ELEMENT_NOT_FOUND"
    default_message = "No element matches the selector."


class ElementNotClickable(ElementError):
    code = "ELEMENT_NOT_CLICKABLE"
    default_message = "The element exists but cannot be clicked."


class ElementNotEditable(ElementError):
    code = "ELEMENT_NOT_EDITABLE"
    default_message = "The element exists but cannot be typed into."


class BrowserError(BrowserFailure):
    code = "BROWSER_ERROR"


class InternalError(BrowserServerError):
    """A bug of ours (a KeyError, a TypeError in the server's own code): no fault of the browser, the page or
    the caller. Its traceback is logged where the call ends (core/dispatch.py), and the circuit breaker,
    which counts the browser's failures, leaves it out: one bug must not shut every session out."""

    code = "INTERNAL_ERROR"
    default_message = ("The server failed on a bug in its own code (its log has the traceback). Retrying the same "
                       "call will likely fail the same way: try another way to reach the goal.")

    def __init__(self, message=None, *, bug=None, session_id=None, details=None):
        super().__init__(message, session_id=session_id, details=details)
        self.bug = bug  # the exception our code raised, its traceback with it: for the log, never on the wire


class InvalidParameters(BrowserServerError):
    code = "INVALID_PARAMETERS"
    default_message = "The arguments are not valid for this tool."


class UnknownTool(InvalidParameters):
    """No tool of that name (decided once, by the dispatcher): MCP answers it as its own -32602."""

    default_message = "There is no tool of that name."


class ToolNotEnabled(BrowserServerError):
    code = "TOOL_NOT_ENABLED"
    default_message = "This tool is in a tool group that is off. Call enable_tools to turn it on."


class DialogOpen(BrowserServerError):
    code = "DIALOG_OPEN"
    default_message = "A dialog is open and blocks the page. Answer it with handle_dialog first."


class NoDialogOpen(BrowserServerError):
    code = "NO_DIALOG_OPEN"
    default_message = "No dialog is open in this session."


class WaitTimeout(BrowserServerError):
    code = "WAIT_TIMEOUT"
    default_message = "The condition did not hold before the timeout."
    timed_out = True


class EvaluationFailed(BrowserServerError):
    code = "EVALUATION_FAILED"
    default_message = "The JavaScript expression threw or returned something that is not JSON."


class PageToolFailed(BrowserServerError):
    code = "PAGE_TOOL_FAILED"
    default_message = "The page's tool threw, or the browser runs no page tools (WebMCP is off)."


class TabClosed(BrowserServerError):
    code = "TAB_CLOSED"
    default_message = "The tab closed itself (its page called window.close()): see the tabs with tabs."


class ContentNotFound(BrowserServerError):
    code = "CONTENT_NOT_FOUND"
    default_message = "Nothing is stored under that refId."


class DomainNotAllowed(PolicyError):
    code = "DOMAIN_NOT_ALLOWED"
    default_message = "That domain is not allowed by the server's policy."


class InputRequired(PolicyError):
    """The person must answer first, and this client asks them between calls (MCP 2026-07-28).

    Only a transport's caller raises it; the MCP layer turns it into an InputRequiredResult
    and the client retries the call with the answer under `key`."""

    code = "INPUT_REQUIRED"
    default_message = "The user must answer a question first."

    def __init__(self, message=None, *, key, session_id=None, details=None):
        super().__init__(message, session_id=session_id, details=details)
        self.key = key


class RateLimited(PolicyError, Retryable):
    code = "RATE_LIMITED"
    default_message = "Too many calls of this tool; wait and retry."


class LoginTimeout(PolicyError):
    code = "LOGIN_TIMEOUT"
    default_message = "A login or verification timed out; browser calls now cool down."


class CooldownActive(PolicyError, Retryable):
    code = "COOLDOWN_ACTIVE"
    default_message = "Browser calls are cooling down after a login timeout."


class SessionHeldByPerson(PolicyError, Retryable):
    code = "SESSION_HELD_BY_PERSON"
    default_message = ("A person has taken over this session in the live view: retry after the person hands back, "
                       "or call wait_for_user.")

    def __init__(self, message=None, *, note="", session_id=None, details=None):
        """note: what calling wait_for_user takes first (ToolGroups.off_note), '' when nothing."""
        super().__init__(message or f"{self.default_message[:-1]}{note}.", session_id=session_id, details=details)


class PageCrashed(BrowserFailure):
    code = "PAGE_CRASHED"
    default_message = "The page crashed; the session has a fresh page at about:blank. Navigate again."


class PageUnresponsive(BrowserFailure):
    code = "PAGE_UNRESPONSIVE"
    default_message = ("The page does not respond: a script of its own never yields. Navigate elsewhere "
                       "(to the same URL to reload it); the session is fine.")


class SessionLost(SessionError):
    code = "SESSION_LOST"
    default_message = "The browser under this session crashed and the session was closed."


class BrowserUnavailable(BrowserFailure, Retryable):
    code = "BROWSER_UNAVAILABLE"
    default_message = "The browser is down and is being restarted; retry later."


class HistoryUnavailable(BrowserFailure, Retryable):
    code = "HISTORY_UNAVAILABLE"
    default_message = ("The history database cannot be read now (details.cause says why, details.retryAfterMs "
                       "when to try again); the call's record is not lost.")


class CommandTimeout(BrowserFailure):
    code = "COMMAND_TIMEOUT"
    default_message = "The command ran far past its timeout; the session's thread was replaced."


class CircuitOpen(BrowserFailure, Retryable):
    code = "CIRCUIT_OPEN"
    default_message = "This tool keeps failing with BROWSER_ERROR, so it is refused for a short while."


class ResourceExhausted(BrowserFailure):
    code = "RESOURCE_EXHAUSTED"
    default_message = "The server is over its memory limit; close a session first."


class DiskFull(BrowserFailure):
    code = "DISK_FULL"
    default_message = "The disk is full, so nothing was saved; the server keeps working. Free space and retry."


class StorageFailed(BrowserFailure):
    code = "STORAGE_FAILED"
    default_message = "It could not be written to disk (details.cause says why), so nothing was saved."


class SessionInUse(SessionError):
    code = "SESSION_IN_USE"
    default_message = ("This session is open in another mcpbrowser server that shares this history; call it "
                       "through that server, or close it there before resuming it here.")


class ServerStopping(SessionError):
    code = "SERVER_STOPPING"
    default_message = ("The server is stopping (it was told to), so this call was cut short and the session "
                       "closed. Its cookies and last URL stay in the history: once a server runs on the same "
                       "history again, resume_session with this sessionId brings it back.")


class UnsupportedBrowser(BrowserServerError):
    code = "UNSUPPORTED_BROWSER"
    default_message = "This needs Chromium; the server runs another browser engine (--browser)."


class SessionMemoryExceeded(SessionError):
    code = "SESSION_MEMORY_EXCEEDED"
    default_message = ("The session's pages used more memory than --session-memory-mb, so the session was closed "
                       "(the browser and other sessions go on).")


class FileRemoved(ContentNotFound):
    code = "FILE_REMOVED"
    default_message = ("The file this call saved was removed by the server's file retention "
                       "(--retention-days or --files-max-mb).")


def stopped_error(session_id=None):
    """SERVER_STOPPING for a call that came after the core closed (Browser.close(), the server told to stop)."""
    return ServerStopping("The server is stopped (Browser.close() ran, or it was told to stop); no call runs on "
                          "it any more.", session_id=session_id)


def not_stored(fault, message):
    """The error for something that could not be written: DISK_FULL, or STORAGE_FAILED with its cause."""
    if fault == "DISK_FULL":
        return DiskFull(message)
    return StorageFailed(message, details={"cause": fault})


def disk_fault(path, exc):
    """DISK_FULL, an errno's name (an OSError), or None (not a fault of the disk)."""
    if getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT):
        return "DISK_FULL"
    with contextlib.suppress(OSError):
        st = os.statvfs(os.path.dirname(path))
        if st.f_bavail * st.f_frsize < FULL_BELOW:  # the browser's writer reports ENOSPC in its own words
            return "DISK_FULL"
    if isinstance(exc, OSError):
        return errno.errorcode.get(exc.errno or 0, "OS_ERROR")
    return None


GROUPS = (SessionError, ElementError, PolicyError, BrowserFailure, Retryable)
# Every error a tool call may answer, in the order of this file (docs/reference/errors.md's): each class
# with a code of its own (no group has one), but the base and InputRequired (a transport's question to the person).
ALL_ERRORS = tuple(cls for cls in list(globals().values()) if isinstance(cls, type)
                   and issubclass(cls, BrowserServerError) and "code" in vars(cls)
                   and cls not in (BrowserServerError, InputRequired))


def as_server_error(exc: BaseException) -> BrowserServerError:
    """A failure as clients see it: our own errors as they are, Playwright's as BROWSER_ERROR, and any
    other exception (a bug in our code) as INTERNAL_ERROR, which carries it for the log. By the
    exception's class, never its text."""
    if isinstance(exc, BrowserServerError):
        return exc
    # Imported here, not above: importing mcpbrowser loads no Playwright (the server answers initialize first).
    from playwright.sync_api import Error as PlaywrightError  # TimeoutError is one too

    if isinstance(exc, PlaywrightError):
        return BrowserError(f"{type(exc).__name__}: {exc}")
    return InternalError(bug=exc, details={"exception": type(exc).__name__})
