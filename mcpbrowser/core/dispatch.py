"""One tool call from request to answer: validate, check the guards, route, record.

`Dispatcher.submit` runs on the caller's thread (any thread). A session tool then
runs on its session's thread (`_run_on_session`), a core tool on the core pool
(`_run_on_pool`); outcomes are counted and logged by Future callbacks on
whichever thread finishes the call.
"""

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

from mcpbrowser.config import Config
from mcpbrowser.core.recorder import Recorder
from mcpbrowser.core.registry import SessionRegistry
from mcpbrowser.core.user_channel import USER_ANSWER_S, UserChannel
from mcpbrowser.errors import (
    BrowserError,
    BrowserServerError,
    CircuitOpen,
    CooldownActive,
    InvalidParameters,
    RateLimited,
    SessionHeldByPerson,
    SessionNotFound,
    as_server_error,
)
from mcpbrowser.guards import CircuitBreaker, RateLimiter
from mcpbrowser.logs import log
from mcpbrowser.schema import validate
from mcpbrowser.session import page_reading
from mcpbrowser.session.state import SessionState


class Call:
    """Plain data about one tool call, filled in by whichever thread runs it."""

    def __init__(self, tool: str, session_id: str | None, capture: bool, inline: bool) -> None:
        self.ref_id = uuid.uuid4().hex
        self.tool = tool
        self.session_id = session_id
        self.capture = capture  # a page-changing tool: the page it leaves is stored
        self.inline = inline    # --response-mode full: the snapshot goes into the answer too
        self.console: list[dict[str, Any]] | None = None
        self.snapshot: str | None = None
        self.expires_at: int | None = None  # the session's expiry after this call renewed it (epoch ms)
        self.progress: Callable[..., Any] | None = None  # progress(done, total, message) from the caller
        self.caller: Any = None  # who made the call (a transport's; see UserChannel), or None: the library
        self.ran = False        # set on the session thread when the call starts there
        self.secret = False     # its text is (or may be) a secret: stored withheld (see Dispatcher.submit)
        self.snapshot_reused = False  # a snapshot answered from the page's last one (see page_watch)
        self.same_page = False  # a read of the page the agent's last answer named (url, title): see agent_view
        self.record_request: Callable[[], None] | None = None  # the deferred request row, see Dispatcher.submit
        self.recorded = threading.Event()
        self.claim: Callable[[str], dict[str, Any] | None] | None = None  # the store's, see not_recorded
        self._not_recorded: dict[str, Any] | None = None
        self._claimed = False

    @property
    def owner(self) -> str | None:
        """The client whose sessions this call may see and touch; None sees all (stdio, the library)."""
        return getattr(self.caller, "owner", None)

    def flush_request(self) -> None:
        """Write the deferred request row, once (the session thread, or whoever ends an unrun call)."""
        record, self.record_request = self.record_request, None
        if record is not None:
            record()

    def not_recorded(self) -> dict[str, Any] | None:
        """Decided once, as the answer is written: None when this call is (or will be) in the history,
        else why not ({errorCode, message}); its refId then reads nothing back, and the answer says so."""
        if not self._claimed:
            self._claimed = True
            if self.claim is not None:
                self._not_recorded = self.claim(self.ref_id)
        return self._not_recorded

    def meta(self, succeeded: bool = True) -> dict[str, Any]:
        console = self.console or []
        out = {"tool": self.tool, "hasSnapshot": self.capture and succeeded,
               "hasConsoleLogs": bool(console),
               "consoleErrorCount": sum(1 for e in console if e["level"] == "error")}
        if self.same_page:
            out["samePage"] = True
        fault = self.not_recorded()
        if fault is not None:
            out.update(hasSnapshot=False, recorded=False, notRecorded=fault)
        return out

    def annotate(self, result: dict[str, Any]) -> dict[str, Any]:
        if self.expires_at is not None:
            result["expiresAt"] = self.expires_at
        result["refId"] = self.ref_id
        result["meta"] = self.meta()
        if self._not_recorded is not None:
            result["notRecorded"] = self._not_recorded  # meta is not always shown to the model: this is
        return result

    def annotate_error(self, exc: BaseException) -> BrowserServerError:
        """The error as the client sees it: a BrowserServerError with this call's refId and meta."""
        exc = as_server_error(exc)
        exc.ref_id = self.ref_id
        exc.meta = self.meta(succeeded=False)
        return exc


def _failed(exc: BaseException) -> Future:
    fut: Future[Any] = Future()
    fut.set_exception(exc)
    return fut


class Dispatcher:
    """Routes each call and feeds the guards: cooldown, circuit breaker, rate limit, watchdog budget."""

    def __init__(self, config: Config, tools: dict[str, Any], registry: SessionRegistry, recorder: Recorder,
                 user: UserChannel, pool: Executor, core: Any) -> None:
        self.config = config
        self.tools = tools
        self._registry, self._recorder, self._user, self._pool = registry, recorder, user, pool
        self._core = core  # what a core tool's handler gets
        self.rate = RateLimiter(config.rate_limit)
        self.breaker = CircuitBreaker(config.breaker_threshold, config.breaker_reset)

    def submit(self, name: str, args: Any = None, progress: Callable[..., Any] | None = None,
               caller: Any = None) -> Future:
        """Validate, record and dispatch one tool call; returns a Future of its result dict.

        Every failure, validation included, arrives through the Future. The request
        row is queued before the call runs, the response row after. progress(done,
        total, message), if given, hears how a long call is going; it is called on
        the session thread. caller: the transport's view of who calls (its `name` for
        rate limits, its `owner` for which sessions it may touch, how to ask its user).
        """
        started = time.monotonic()
        args = {} if args is None else args
        tool = self.tools.get(name)
        session_id = args.get("sessionId") if isinstance(args, dict) else None
        mode = self.config.response_mode
        call = Call(name, session_id, inline=mode == "full",
                    capture=tool is not None and (tool.stores_page or (tool.changes_page and mode != "lean")))
        call.progress, call.caller, call.claim = progress, caller, self._recorder.claim
        if tool is not None and tool.may_carry_secret:
            # Whether its text is a secret is known only once the target field was looked at,
            # on the session thread: the row is written then, so a password typed without
            # `secret` never reaches the database (or its WAL) in clear. Until a handler looked
            # at the field and found it plain, the text counts as secret: a call that fails
            # before (no such element, a detached one, a dialog in the way, a refused call)
            # is stored with its text withheld.
            call.secret = True
            call.record_request = lambda: self._recorder.request(call, args)
        else:
            self._recorder.request(call, args)
        self._recorder.pending(call)
        try:
            if tool is None:
                raise InvalidParameters(f"Unknown tool {name!r}.", details={"known": list(self.tools)})
            person = getattr(caller, "person", False)  # the live view's person (view/hands.py)
            if caller is not None and not person:  # an MCP client: the library's caller reads no tool list
                self._core.groups.check(tool, args, call.owner)
            self._check_guards(tool, session_id, caller)
            validate(tool.input_schema, args)
            if call.owner is not None and session_id is not None and self._registry.owner_of(session_id) != call.owner:
                raise SessionNotFound(session_id=session_id)  # another client's: as if it did not exist
            if tool.needs_session:
                budget = self.budget_s(args)
                worker, call.expires_at = self._registry.renewed(args["sessionId"])  # validated: present
                if worker.held_by is not None and not (person or tool.read_only or tool.during_cooldown):
                    raise SessionHeldByPerson(session_id=session_id, details={"heldBy": worker.held_by})
                fut = worker.submit(self._run_on_session, tool, args, call,
                                    after=lambda state, f: self._after_call(state, f, call),
                                    budget_s=budget, tag=(call, budget), urgent=person)
            else:
                fut = self._pool.submit(self._run_on_pool, tool, args, call)
        except BrowserServerError as exc:
            fut = _failed(call.annotate_error(exc))
        except RuntimeError:  # the pool refuses work once the core closed
            fut = _failed(call.annotate_error(BrowserError("The server is shutting down.")))
        fut.add_done_callback(lambda f: self._finished(f, call, started))
        return fut

    def _after_call(self, state: Any, fut: Future, call: Call) -> None:
        """SESSION THREAD, once the answer went out: record it, keep the files it named, check the session's memory."""
        self._recorder.after_call(state, fut, call)
        if not fut.cancelled() and fut.exception() is None:
            self._core.files.remember(call.session_id, call.tool, fut.result())
        self._core.session_memory.after_call(state)

    def budget_s(self, args: dict[str, Any]) -> float | None:
        """Seconds a session command may run before the watchdog calls it stuck, or None (off).

        Its own timeout (the `timeout` argument, else the longer default), plus
        --watchdog-grace, plus the time a person has to answer a domain question.
        """
        grace = self.config.watchdog_grace
        if not grace:
            return None
        own = args.get("timeout")
        own = own if isinstance(own, (int, float)) and not isinstance(own, bool) else 0
        own = max(own, self.config.action_timeout, self.config.navigation_timeout) / 1000
        return own + grace + (USER_ANSWER_S if self.config.ask_new_domains else 0)

    def _check_guards(self, tool: Any, session_id: str | None, caller: Any) -> None:
        """Cooldown first (no browser action while it runs), then the breaker and the rate limit."""
        name, cooldown, owner = tool.name, self._user.cooldown, getattr(caller, "owner", None)
        # During a cooldown, reading goes on: a tool declared read_only (snapshot, screenshot,
        # the logs, get_content, list_sessions, wait_for) attempts nothing against the wall, and
        # an agent that can look at the page can tell its person what it shows. So do the tools
        # declared during_cooldown: wait_for_user, the handover the cooldown asks for (seeing
        # the person done ends it), and close_session. Everything that acts or opens
        # (create_session) waits.
        runs = tool.read_only or tool.during_cooldown
        waiting = None if runs else cooldown.message(session_id, owner)
        if waiting is not None:
            raise CooldownActive(waiting, session_id=session_id,
                                 details={"remainingMs": round(cooldown.remaining_s(session_id, owner) * 1000)})
        retry = self.breaker.check(name)
        if retry is not None:
            raise CircuitOpen(f"{name} failed with BROWSER_ERROR {self.config.breaker_threshold} times in a row, "
                              f"so it is paused; retry in {retry} ms.", session_id=session_id,
                              details={"retryAfterMs": retry, "tool": name})
        # Per client, session and tool: eight sessions of one agent each get their own budget.
        retry = self.rate.check((self._user.client_name(caller), session_id or "-", name))
        if retry is not None:
            raise RateLimited(f"More than {self.config.rate_limit} {name} calls in a minute; retry in {retry} ms.",
                              session_id=session_id, details={"retryAfterMs": retry})

    # SESSION THREAD
    def _run_on_session(self, state: SessionState, tool: Any, args: dict[str, Any], call: Call) -> dict[str, Any]:
        """The call on its session: a failure may mean the browser is gone, or a login timed out."""
        held = state.worker.held_by
        if held is not None and not (tool.read_only or tool.during_cooldown):
            # Queued before a person took the session over (the view), its turn came after: it must not act.
            raise call.annotate_error(SessionHeldByPerson(session_id=state.session_id, details={"heldBy": held}))
        try:
            result = state.run_call(tool, args, call)
        except BrowserServerError as error:  # run_call annotated it
            if self._registry.closed:
                # The server is stopping and takes the browser down with it: that is no
                # crash, and no resume_session can reach this server any more.
                raise call.annotate_error(self._registry.stopping_error(state.session_id)) from None
            if page_reading.browser_gone(state):
                self._core.supervisor.browser_gone(state.worker, str(error))
                raise call.annotate_error(self._registry.session_lost(state)) from None
            failure = self._user.login_failure(state, tool.name, error, call)
            raise call.annotate_error(self._user.with_view(tool.name, state.session_id, failure)) from None
        if tool.name == "wait_for_user":
            self._user.user_finished(state, call)
        return self._user.with_view(tool.name, state.session_id, result)

    # CORE POOL THREAD
    def _run_on_pool(self, tool: Any, args: dict[str, Any], call: Call) -> dict[str, Any]:
        """A session-less tool, with refId and meta added."""
        try:
            return call.annotate(tool.handler(self._core, args, call))
        except BrowserServerError as exc:
            raise call.annotate_error(exc) from None

    # THE THREAD THAT FINISHED THE CALL
    def _finished(self, fut: Future, call: Call, started: float) -> None:
        """Log the call, feed the circuit breaker, and record any call its session thread did not."""
        if fut.cancelled():
            outcome = "cancelled"
        else:
            exc = fut.exception()
            outcome = "ok" if exc is None else getattr(exc, "code", "BROWSER_ERROR")
            if exc is None:
                self.breaker.succeeded(call.tool)
            elif getattr(exc, "code", None) == "BROWSER_ERROR" and self.breaker.failed(call.tool):
                log.warning("circuit breaker opened", extra={"event": "breaker_opened", "tool": call.tool,
                                                             "error": str(exc)[:200]})
        # owner: the caller's record, wherever its session id points (logs.record_owner).
        log.info("tool call", extra={"event": "tool_call", "tool": call.tool, "session": call.session_id,
                                     "owner": call.owner,
                                     "duration_ms": round((time.monotonic() - started) * 1000, 2),
                                     "outcome": outcome, **({"snapshot_reused": True} if call.snapshot_reused else {})})
        # A call that ran on its session thread is recorded there, after its capture;
        # any other (refused, cancelled while queued, failed at close) is recorded here.
        if not call.ran:
            call.flush_request()
            self._recorder.response(call, fut)
