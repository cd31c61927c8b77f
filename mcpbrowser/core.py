"""The thread-safe synchronous core: the shared browser, sessions, and every tool as a call.

Threads:
- ANY THREAD: `Browser` and `Session` public methods (embedders and the MCP server).
- browser-supervisor thread: launches the shared Chromium, watches it (exit at once, a ping
  every --browser-ping s), restarts it with backoff when it dies, and stops it on close.
- watchdog thread: finds commands running far past their timeout and replaces their session thread.
- core pool threads: session-less tool handlers (create/close/list sessions).
- session threads: `SessionState` and every Playwright object (see session_worker).
- timer threads: expiry callbacks; they only flag and enqueue, never touch Playwright.
Only plain data (dicts, str, bytes) and Futures cross between them.
"""

import ipaddress
import os
import signal
import threading
import time
import uuid
from collections import OrderedDict, deque
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

from tenacity import Retrying, retry_if_exception_type

from mcpbrowser import playwright_internals, tools
from mcpbrowser.browser_process import Endpoint, SharedBrowser, attach, effective_headless, find_executable
from mcpbrowser.config import Config
from mcpbrowser.errors import (
    BrowserError,
    BrowserServerError,
    BrowserUnavailable,
    CircuitOpen,
    CommandTimeout,
    CooldownActive,
    DomainNotAllowed,
    InvalidParameters,
    LoginTimeout,
    MaxSessionsReached,
    RateLimited,
    ResourceExhausted,
    SessionExpired,
    SessionLost,
    SessionNotFound,
)
from mcpbrowser.guards import CircuitBreaker, Cooldown, DomainPolicy, RateLimiter, canonical_host, is_login_timeout
from mcpbrowser.history import History
from mcpbrowser.library import Session, arguments
from mcpbrowser.logs import log
from mcpbrowser.policy_proxy import PolicyProxy
from mcpbrowser.process_tree import browser_pss_kb
from mcpbrowser.schema import validate
from mcpbrowser.session_state import SessionState, now_ms
from mcpbrowser.session_worker import SessionWorker
from mcpbrowser.store import Store
from mcpbrowser.supervisor import Supervisor

CRASH_NOTICE_S = 2.0  # how long a failure waits to learn whether the browser died under it
SESSION_START_TIMEOUT_S = 60.0  # a cold driver start is ~1 s; far beyond that something is wrong
CLOSE_JOIN_S = 5.0              # close_session waits this long for the page and context to close
SHUTDOWN_BUDGET_S = 5.0         # sessions get at most 5 s to close at shutdown...
BROWSER_STOP_GRACE_S = 2.0      # ...then the browser is sent SIGTERM, and SIGKILL 2 s later
PING_TIMEOUT_S = 10.0           # a browser that cannot open a context in this long is hung
WATCHDOG_TICK_S = 1.0           # how often the watchdog looks for stuck commands
MEMORY_SAMPLE_S = 1.0           # the memory guard re-reads /proc at most this often
USER_ANSWER_S = 300.0           # an elicitation waits this long for the person (McpConnection.elicit)
STORAGE_SAVE_INTERVAL_S = 5.0   # see _save_storage
DESCRIBE_WAIT_S = 0.5           # list_sessions falls back to cached url/title for busy sessions
ENDED_MEMORY = 10_000           # ended ids remembered so late calls get SESSION_EXPIRED, bounded


class SessionRecord:
    """Plain data about one open session, owned by the core under its lock."""

    __slots__ = ("session_id", "worker", "created_at", "deadline", "last_deadline", "clock", "_opened")

    def __init__(self, session_id, worker, created_at, timeout_ms, max_age_ms, clock):
        self.session_id = session_id
        self.worker = worker
        self.created_at = created_at
        self.clock = clock
        self._opened = clock()  # the monotonic instant of created_at
        # A hard cap on the session's age (--session-max-age), or None.
        self.last_deadline = self._opened + max_age_ms / 1000 if max_age_ms else None
        self.renew(timeout_ms)

    @property
    def expires_at(self):
        """The deadline in epoch ms, as clients see it."""
        return self.created_at + round((self.deadline - self._opened) * 1000)

    def renew(self, timeout_ms):
        """A call came in (caller holds the core's lock): the session lives timeout_ms from now, within its cap."""
        deadline = self.clock() + timeout_ms / 1000
        self.deadline = deadline if self.last_deadline is None else min(deadline, self.last_deadline)


class Call:
    """Plain data about one tool call, filled in by whichever thread runs it."""

    def __init__(self, tool, session_id, capture, inline):
        self.ref_id = uuid.uuid4().hex
        self.tool = tool
        self.session_id = session_id
        self.capture = capture  # a page-changing tool: the page it leaves is stored
        self.inline = inline    # --response-mode full: the snapshot goes into the answer too
        self.console = None
        self.snapshot = None
        self.expires_at = None  # the session's expiry after this call renewed it (epoch ms)
        self.progress = None    # progress(done, total, message) from the caller, or None
        self.ran = False        # set on the session thread when the call starts there
        self.secret = False     # its text turned out to be a secret (set on the session thread)
        self.record_request = None  # the deferred request row's writer, for tools that may carry a secret
        self.recorded = threading.Event()

    def flush_request(self):
        """Write the deferred request row, once (the session thread, or whoever ends an unrun call)."""
        record, self.record_request = self.record_request, None
        if record is not None:
            record()

    def meta(self, succeeded=True):
        console = self.console or []
        return {"tool": self.tool, "hasSnapshot": self.capture and succeeded,
                "hasConsoleLogs": bool(console),
                "consoleErrorCount": sum(1 for e in console if e["level"] == "error")}

    def annotate(self, result):
        if self.expires_at is not None:
            result["expiresAt"] = self.expires_at
        result["refId"] = self.ref_id
        result["meta"] = self.meta()
        return result

    def annotate_error(self, exc):
        if not isinstance(exc, BrowserServerError):
            exc = BrowserError(f"{type(exc).__name__}: {exc}")
        exc.ref_id = self.ref_id
        exc.meta = self.meta(succeeded=False)
        return exc


class BrowserCrashed(Exception):
    """Internal: the shared browser died; the supervisor's retry loop restarts it."""


def _failed(exc):
    fut: Future[Any] = Future()
    fut.set_exception(exc)
    return fut


class Browser:
    """The core API: `with Browser(config) as b: s = b.create_session(); s.navigate(url)`.

    Every method may be called from any thread. Failures raise BrowserServerError
    subclasses whose `code` is the stable error code.
    """

    def __init__(self, config=None, *, opener=None, timer_factory=threading.Timer, clock=time.monotonic):
        self.config = config or Config()
        # Tools that depend on a setting (evaluate, upload_file) exist only when it is set.
        self.tools = {tool.name: tool for tool in tools.ALL if tool.enabled(self.config)}
        self._opener = opener or self._open_playwright_session
        self._supervisor = Supervisor(timer_factory)
        self._clock = clock  # session expiry deadlines (injectable, like the timers, for tests)
        self._lock = threading.Lock()
        self._sessions = {}
        self._ended = OrderedDict()
        self._starting = 0
        self._calls = {}  # ref_id -> Call not yet recorded, so get_content can wait for it
        self.rate = RateLimiter(self.config.rate_limit)
        self.breaker = CircuitBreaker(self.config.breaker_threshold, self.config.breaker_reset)
        self.cooldown = Cooldown(self.config.login_cooldown, self.config.cooldown_scope, self.config.locale,
                                 on_end=self._cooldown_ended)
        # The MCP connection (cli sets it): .name (the client's), .can_elicit, .elicit(), .notify().
        # Embedders may leave it None: then no one can be asked about new domains.
        self.client = None
        self.store = Store(self.config.db, retention_days=self.config.retention_days,
                           max_mb=self.config.db_max_mb)
        self.history = History(self.store)
        # Warm pool: started, never-used workers. A pooled context has never seen a
        # page, so handing one out keeps isolation; it becomes a session only then.
        self._idle: deque[SessionWorker] = deque()
        self._filling = 0
        self._closed = False
        self._pool = ThreadPoolExecutor(self.config.max_sessions + 2, thread_name_prefix="core")
        # The shared browser's current life: Future of (generation, Endpoint). A crash
        # replaces it with a pending one, which the restart resolves.
        self._endpoint: Future[tuple[int, Endpoint]] = Future()
        self._generation = 0
        self._browser_thread = None
        self._watchdog_thread = None
        self._browser_stop = threading.Event()
        self._browser_wake = threading.Event()  # stop asked, or the browser server exited
        self._restarts: deque[float] = deque()      # monotonic times of restarts, within --restart-window
        self._degraded_until = None   # monotonic time of the next restart while degraded
        self._crash_cause = None
        self._remote = bool(self.config.ws_endpoint or self.config.cdp_endpoint)
        self._proxied = self.policy().restricts_hosts or self.config.ask_new_domains  # every context has a proxy
        self._memory = (0.0, 0.0)     # (monotonic time sampled, MB) for the memory guard
        self._headless = None

    # -- ANY THREAD: lifecycle -------------------------------------------------

    def start(self):
        """Start the shared browser in the background; calls wait for it only when they need it."""
        with self._lock:
            if self._browser_thread is not None or self._closed:
                return self
            self._headless = effective_headless(self.config)
            self._browser_thread = threading.Thread(
                target=self._run_shared_browser, name="browser-supervisor", daemon=True)
            if self.config.watchdog_grace:
                self._watchdog_thread = threading.Thread(target=self._watch, name="watchdog", daemon=True)
        self._browser_thread.start()
        if self._watchdog_thread is not None:
            self._watchdog_thread.start()
        self._refill()
        return self

    def close(self):
        """Close every session, then the browser. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            workers = [record.worker for record in self._sessions.values()] + list(self._idle)
            for session_id in self._sessions:
                self._record_closed(session_id, "shutdown")
            self._sessions.clear()
            self._idle.clear()
        self._supervisor.cancel_all()
        self.cooldown.cancel_all()
        shutting_down = BrowserError("The server is shutting down.")
        for worker in workers:
            worker.stop(shutting_down)
        deadline = time.monotonic() + SHUTDOWN_BUDGET_S
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        self._browser_stop.set()
        self._browser_wake.set()
        if not self._endpoint.done():
            try:  # a session thread may be waiting for a browser that will never start
                self._endpoint.set_exception(shutting_down)
            except InvalidStateError:
                pass
        if self._browser_thread is not None:
            self._browser_thread.join(BROWSER_STOP_GRACE_S + 2.0)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.store.close()
        log.info("core closed", extra={"event": "core_closed", "workers": len(workers)})

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.close()

    # -- ANY THREAD: tools -----------------------------------------------------

    def submit(self, name, args=None, progress=None):
        """Validate, record and dispatch one tool call; returns a Future of its result dict.

        Session tools run on their session's thread, the rest on the core pool.
        Every failure, validation included, arrives through the Future. The
        request row is queued before the call runs, the response row after.
        progress(done, total, message), if given, hears how a long call is going;
        it is called on the session thread.
        """
        started = time.monotonic()
        args = {} if args is None else args
        tool = self.tools.get(name)
        session_id = args.get("sessionId") if isinstance(args, dict) else None
        call = Call(name, session_id, capture=tool is not None and (tool.changes_page or tool.stores_page),
                    inline=self.config.response_mode == "full")
        call.progress = progress
        if tool is not None and tool.may_carry_secret:
            # Whether its text is a secret is known only once the target field was looked at,
            # on the session thread: the row is written then, so a password typed without
            # `secret` never reaches the database (or its WAL) in clear.
            call.record_request = lambda: self._record_request(call, args)
        else:
            self._record_request(call, args)
        try:
            if tool is None:
                raise InvalidParameters(f"Unknown tool {name!r}.", details={"known": list(self.tools)})
            self._check_guards(name, session_id)
            validate(tool.input_schema, args)
            if tool.needs_session:
                budget = self._budget_s(args)
                worker, call.expires_at = self._renewed(session_id)
                fut = worker.submit(SessionState.run_call, tool, args, call,
                                                      after=lambda state, f: self._after_call(state, f, call),
                                                      budget_s=budget, tag=(call, budget))
            else:
                fut = self._pool.submit(self._run_pool_call, tool, args, call)
        except BrowserServerError as exc:
            call.annotate_error(exc)
            fut = _failed(exc)
        except RuntimeError:  # the pool refuses work once close() has run
            fut = _failed(call.annotate_error(BrowserError("The server is shutting down.")))
        with self._lock:
            self._calls[call.ref_id] = call
        fut.add_done_callback(lambda f: _log_call(f, name, session_id, started))
        fut.add_done_callback(lambda f: self._count_outcome(name, f))
        # A call that ran on its session thread is recorded there, after its capture;
        # any other (refused, cancelled while queued, failed at close) is recorded here.
        fut.add_done_callback(lambda f: None if call.ran else (call.flush_request(), self._record_response(call, f)))
        return fut

    def _check_guards(self, name, session_id):
        """Cooldown first (no browser work at all while it runs), then the rate limit."""
        waiting = self.cooldown.message(session_id)
        if waiting is not None:
            raise CooldownActive(waiting, session_id=session_id,
                                 details={"remainingMs": round(self.cooldown.remaining_s(session_id) * 1000)})
        retry = self.breaker.check(name)
        if retry is not None:
            raise CircuitOpen(f"{name} failed with BROWSER_ERROR {self.config.breaker_threshold} times in a row, "
                              f"so it is paused; retry in {retry} ms.", session_id=session_id,
                              details={"retryAfterMs": retry, "tool": name})
        client = getattr(self.client, "name", None) or "library"
        # Per client, session and tool: eight sessions of one agent each get their own budget.
        retry = self.rate.check((client, session_id or "-", name))
        if retry is not None:
            raise RateLimited(f"More than {self.config.rate_limit} {name} calls in a minute; retry in {retry} ms.",
                              session_id=session_id, details={"retryAfterMs": retry})

    def _count_outcome(self, name, fut):
        """Feed the circuit breaker: BROWSER_ERROR counts against the tool, a success clears it."""
        if fut.cancelled():
            return
        exc = fut.exception()
        if exc is None:
            self.breaker.succeeded(name)
        elif getattr(exc, "code", None) == "BROWSER_ERROR" and self.breaker.failed(name):
            log.warning("circuit breaker opened", extra={"event": "breaker_opened", "tool": name,
                                                         "error": str(exc)[:200]})

    def _budget_s(self, args):
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

    def call(self, name, args=None):
        """Run one tool call and return its result dict; raises BrowserServerError."""
        return self.submit(name, args).result()

    def create_session(self, url: str | None = None, allowed_domains: list[str] | None = None) -> Session:
        """Open a session (and, with url, a page in it); a `Session` handle on it."""
        result = self.call("create_session", arguments(locals()))
        return Session(self, result["sessionId"], result["expiresAt"], result)

    def resume_session(self, session_id: str) -> Session:
        """Bring back a closed or expired session with its cookies, local storage and last URL."""
        result = self.call("resume_session", {"sessionId": session_id})
        return Session(self, session_id, result["expiresAt"], result)

    def list_sessions(self) -> list[dict[str, Any]]:
        """[{sessionId, createdAt, expiresAt, url, title, busy}] of the open sessions."""
        return self.call("list_sessions")["sessions"]

    def close_session(self, session_id: str) -> dict[str, Any]:
        """Close a session now."""
        return self.call("close_session", {"sessionId": session_id})

    def get_content(self, ref_id: str, search_for: str | None = None,
                    reset_cursor: bool | None = None) -> dict[str, Any]:
        """The page a call stored: full, a diff since the last read, or the lines matching search_for."""
        return self.call("get_content", arguments(locals(), spell=str))  # this tool spells them snake_case

    def get_console_content(self, ref_id: str, level: str | None = None) -> dict[str, Any]:
        """The console entries a call recorded, one per line."""
        return self.call("get_console_content", arguments(locals(), spell=str))

    # -- recording ------------------------------------------------------------------

    def _run_pool_call(self, tool, args, call):
        """CORE POOL THREAD: a session-less tool, with refId and meta added."""
        try:
            return call.annotate(tool.handler(self, args))
        except BrowserServerError as exc:
            raise call.annotate_error(exc) from None

    def _after_call(self, state, fut, call):
        """SESSION THREAD, after the answer went out: capture the page the call left, then record it."""
        succeeded = not fut.cancelled() and fut.exception() is None
        if succeeded and call.capture and not call.inline and call.snapshot is None:
            call.snapshot = state.capture_snapshot()
        if succeeded and self.tools[call.tool].changes_page:
            self._save_storage(state)
        self._record_response(call, fut, state.secrets)

    def _save_storage(self, state, force=False):
        """SESSION THREAD: keep what resume_session needs (cookies, localStorage, URL).

        Reading the storage state costs a round trip (~4 ms) that the session's next
        command would wait for, so it is saved when the URL changed or
        STORAGE_SAVE_INTERVAL_S passed, and always when the session closes. A crash
        can lose at most that interval's cookie changes.
        """
        url = state.page.url if state.page is not None else None
        due = time.monotonic() - state.storage_saved_at >= STORAGE_SAVE_INTERVAL_S
        if not (force or due or url != state.storage_saved_url):
            return
        saved = state.storage_state()
        if saved is None:
            return
        state.storage_saved_at, state.storage_saved_url = time.monotonic(), saved[1]
        # Sealed: the storage state holds cookies, which must not sit in the database in clear.
        self.history.save_state(state.session_id, saved[0], saved[1])

    def _final_save(self, state):
        """SESSION THREAD: the last storage save, run just before the session closes."""
        if state.storage_saved_at or state.storage_saved_url:
            self._save_storage(state, force=True)

    def _record_request(self, call, args):
        self.history.request(call.ref_id, call.session_id, call.tool, args, secret=call.secret)

    def _record_response(self, call, fut, secrets=()):
        self.history.response(call.ref_id, fut, call.snapshot, call.console or [], secrets)
        with self._lock:
            self._calls.pop(call.ref_id, None)
        call.recorded.set()

    def _record_closed(self, session_id, reason):
        self.history.session_closed(session_id, reason)

    # -- safety: domains and the login-timeout cooldown --------------------------------

    def policy(self, session_allowed=None):
        c = self.config
        return DomainPolicy(c.allowed_domains, c.blocked_domains, c.url_schemes, session_allowed,
                            block_private=c.block_private_networks)

    def _proxy_for(self, policy, session_id):
        """SESSION THREAD: the filtering proxy a context with host rules goes through, or None without rules."""
        if not (policy.restricts_hosts or self.config.ask_new_domains):
            return None
        # The browser must reach the proxy, which listens on this machine's loopback only.
        # A browser on another machine could not, and a policy that silently stopped holding
        # there would be worse than a clear refusal.
        endpoint = self.config.ws_endpoint or self.config.cdp_endpoint
        if endpoint and not _is_loopback(urlsplit(endpoint).hostname):
            raise BrowserError(
                "The domain policy (allowed or blocked domains, --block-private-networks, --ask-new-domains) "
                "is enforced by a filtering proxy on this machine's loopback, which a browser on another "
                f"machine ({urlsplit(endpoint).hostname}) cannot reach. Run mcpbrowser on the browser's machine, "
                "or leave the policy off for this endpoint.")
        return PolicyProxy(policy, session_id)

    def ask_about_domain(self, session_id, host):
        """SESSION THREAD: ask the user whether this session may visit `host` (MCP elicitation)."""
        if not self.config.ask_new_domains:
            raise DomainNotAllowed(f"{host} is not in the server's allowed domains.", session_id=session_id,
                                   details={"domain": host})
        client = self.client
        if client is None or not client.can_elicit:
            raise DomainNotAllowed(
                f"{host} is not in the allowed domains, and the user cannot be asked: the client did not "
                "declare the elicitation capability.", session_id=session_id, details={"domain": host})
        answer = client.elicit(f"The agent wants to open {host}, which is not in the allowed domains. "
                               "Allow it for this session?", timeout=USER_ANSWER_S)
        if answer != "accept":
            raise DomainNotAllowed(f"The user did not allow {host} ({answer}).", session_id=session_id,
                                   details={"domain": host, "userAction": answer})
        log.info("domain allowed by the user", extra={"event": "domain_granted", "session": session_id})

    def _login_failure(self, state, tool, exc):
        """SESSION THREAD: turn a login or verification timeout into the cooldown.

        Only where it cannot punish an ordinary mistake: failures of wait_for_user,
        or failures on a page that itself asks for a login or verification.
        """
        reason = (exc.details or {}).get("reason", "") if isinstance(exc.details, dict) else ""
        if not self.config.login_cooldown or not is_login_timeout(f"{exc.message} {reason}",
                                                                  self.config.login_keywords):
            return exc
        if tool.name != "wait_for_user" and not state.looks_like_login():
            return exc
        text = self.cooldown.trigger(state.session_id, f"{tool.name}: {exc.message[:120]}")
        log.warning("login timeout: cooldown started", extra={"event": "cooldown_started",
                                                               "session": state.session_id})
        self._tell_client("warning", {"event": "cooldown_started", "message": text})
        return LoginTimeout(text, session_id=state.session_id,
                            details={"cause": exc.code, "cooldownSeconds": self.config.login_cooldown})

    # TIMER THREAD
    def _cooldown_ended(self, key, text):
        log.info(text, extra={"event": "cooldown_ended"})
        self._tell_client("notice", {"event": "cooldown_ended", "message": text})

    def _tell_client(self, level, data):
        if self.client is not None:
            self.client.notify(level, data)

    def wait_recorded(self, ref_id, timeout=10.0):
        """Block until the call's response row is queued (its snapshot may still be in capture)."""
        with self._lock:
            call = self._calls.get(ref_id)
        if call is not None:
            call.recorded.wait(timeout)

    # -- CORE POOL THREADS: primitives behind the session tools ---------------------

    def open_session(self, resume=None, allowed_domains=None):
        """Hand out a warm worker, or start one, and register it as a session.

        resume: {"sessionId", "storageState", "url"} to bring a closed session back
        under its old id; it needs a fresh context built from that state, so never
        comes from the pool. A session that was opening when the browser crashed is
        opened again on the restarted browser, once.
        """
        record = self._open_once(resume, allowed_domains, last=False)
        return record or self._open_once(resume, allowed_domains, last=True)

    def _open_once(self, resume, allowed_domains, last):
        """A registered session; None when the browser died under it (and `last` is False)."""
        self._check_browser_available()
        self._check_memory()
        with self._lock:
            if self._closed:
                raise BrowserError("The server is shutting down.")
            if len(self._sessions) + self._starting >= self.config.max_sessions:
                raise MaxSessionsReached(
                    f"{self.config.max_sessions} sessions are open, the most allowed. "
                    "Close one with close_session first.",
                    details={"maxSessions": self.config.max_sessions})
            if resume is not None and resume["sessionId"] in self._sessions:
                raise InvalidParameters("That session is open; there is nothing to resume.",
                                        session_id=resume["sessionId"])
            self._starting += 1
            generation = self._generation
            # A pooled context got its proxy (or none) when it opened: one without a proxy
            # cannot take on a session's own allowedDomains.
            pooled_ok = resume is None and (not allowed_domains or self._proxied)
            worker = self._take_idle() if pooled_ok else None
        source = "pool" if worker is not None else ("resume" if resume else "cold")
        crashed = BrowserUnavailable("The browser crashed while the session was opening; retry.",
                                     details={"retryAfterMs": 1000})
        try:
            if worker is None:
                worker = self._start_worker(resume, allowed_domains)
            elif allowed_domains:
                worker.submit(SessionState.narrow, allowed_domains).result(SESSION_START_TIMEOUT_S)
        except BrowserServerError:
            with self._lock:
                self._starting -= 1
            # A session attaches in ~30 ms, so it can fail on a browser that just died
            # before the supervisor has seen the crash: give it the time to.
            died = not self._remote and self._crash_noticed(generation)
            if not died:
                raise
            if last:
                raise crashed from None
            return None
        except BaseException:
            with self._lock:
                self._starting -= 1
            raise
        created = now_ms()
        record = SessionRecord(worker.session_id, worker, created, self.config.session_timeout,
                               self.config.session_max_age, self._clock)
        with self._lock:
            self._starting -= 1
            closed = self._closed
            # Opened on a browser that died meanwhile: _browser_lost did not see it, so drop it here.
            stale = worker.generation != self._generation and not self._remote
            if not closed and not stale:
                self._sessions[worker.session_id] = record
                self._ended.pop(worker.session_id, None)
        if closed or stale:
            worker.stop()
        if closed:
            raise BrowserError("The server is shutting down.")
        if stale:
            if last:
                raise crashed
            return None
        self._supervisor.schedule_expiry(worker.session_id, record.deadline - self._clock(), self._expire)
        self.history.session_opened(worker.session_id, created, {"browser": self.config.browser, "source": source})
        log.info("session created", extra={"event": "session_created", "session": worker.session_id,
                                           "source": source})
        self._refill()
        return record

    def _start_worker(self, resume=None, allowed_domains=None):
        """Start a session thread and wait until its page is open (CORE POOL THREAD)."""
        options = {"allowed_domains": allowed_domains}
        if resume is None:
            worker = SessionWorker(str(uuid.uuid4()), self._opener, options)
        else:
            options.update(storage_state=resume["storageState"], url=resume["url"])
            worker = SessionWorker(resume["sessionId"], self._opener, options)
        try:
            worker.start().result(SESSION_START_TIMEOUT_S)
        except BaseException as exc:
            worker.stop()
            if isinstance(exc, BrowserServerError):
                raise
            raise BrowserError(f"Could not open a browser session: {exc}") from None
        return worker

    def _take_idle(self):
        """A live pooled worker on the current browser, or None (caller holds the lock)."""
        while self._idle:
            worker = self._idle.popleft()
            if worker.alive and worker.generation == self._generation:
                return worker
            worker.stop()
        return None

    def _refill(self):
        """Top the warm pool up in the background, never past --max-sessions or the memory limit."""
        if self._over_memory():
            return
        with self._lock:
            room = self.config.max_sessions - len(self._sessions) - self._starting
            wanted = min(self.config.pool_size, room) - len(self._idle) - self._filling
            if self._closed or self._degraded_until is not None or wanted <= 0:
                return
            self._filling += wanted
        for _ in range(wanted):
            try:
                self._pool.submit(self._fill_one)
            except RuntimeError:  # closed meanwhile
                return

    def _fill_one(self):
        try:
            worker = self._start_worker()
        except BaseException as exc:
            worker = None
            if not self._closed:  # failing because we are shutting down is no news
                log.warning("warm pool refill failed", extra={"event": "pool_refill_failed", "error": str(exc)})
        with self._lock:
            self._filling -= 1
            keep = worker is not None and not self._closed and worker.generation == self._generation
            if keep:
                self._idle.append(worker)
        if keep:
            log.info("pool worker ready", extra={"event": "pool_worker_ready"})
        elif worker is not None:
            worker.stop()

    def end_session(self, session_id):
        """Close a session now: cancel its timer, close its page and context, forget its id."""
        with self._lock:
            record = self._sessions.pop(session_id, None)
            if record is None:
                raise self._missing(session_id)
            self._remember_ended(session_id, "closed")
        self._supervisor.cancel_expiry(session_id)
        self._record_closed(session_id, "closed")
        record.worker.stop(last=self._final_save)
        record.worker.join(CLOSE_JOIN_S)
        log.info("session closed", extra={"event": "session_closed", "session": session_id})
        self._refill()

    def describe_sessions(self):
        """Id, times, url and title of each session; a busy session shows its last known page."""
        with self._lock:
            records = list(self._sessions.values())
        asked = [(record, record.worker.submit(SessionState.describe)) for record in records]
        deadline = time.monotonic() + DESCRIBE_WAIT_S
        out = []
        for record, fut in asked:
            try:
                info, busy = fut.result(max(0.0, deadline - time.monotonic())), False
            except Exception:
                fut.cancel()
                info, busy = dict(record.worker.info), True
            out.append({"sessionId": record.session_id, "createdAt": record.created_at,
                        "expiresAt": record.expires_at, "url": info["url"], "title": info["title"],
                        "busy": busy})
        return out

    def session_ids(self):
        with self._lock:
            return set(self._sessions)

    # -- internals -------------------------------------------------------------

    def _worker(self, session_id):
        return self._renewed(session_id, renew=False)[0]

    def _renewed(self, session_id, renew=True):
        """(worker, expiresAt) of an open session, its expiry renewed by this call; raises if not open."""
        with self._lock:
            record = self._sessions.get(session_id)
            error = self._missing(session_id) if record is None else None
            if renew and record is not None:
                record.renew(self.config.session_timeout)
        if isinstance(error, SessionLost):
            error = self._lost_error(session_id)
        elif isinstance(error, SessionExpired):
            error = self._expired_error(session_id)
        if error is not None or record is None:
            raise error or SessionNotFound(session_id=session_id)
        return record.worker, record.expires_at

    def _missing(self, session_id):
        """The error for an id that is not open (caller holds the lock)."""
        how = self._ended.get(session_id)
        if how == "expired":
            return SessionExpired(session_id=session_id)
        if how == "lost":
            return SessionLost(session_id=session_id)  # _worker adds the resume hint, outside the lock
        return SessionNotFound(session_id=session_id)

    def _remember_ended(self, session_id, how):
        self._ended[session_id] = how
        while len(self._ended) > ENDED_MEMORY:
            self._ended.popitem(last=False)

    # TIMER THREAD. Calls only move the record's deadline (a float, under the lock): the
    # timer, when it fires, sleeps again for what is left rather than each call
    # replacing a Timer thread.
    def _expire(self, session_id):
        with self._lock:
            record = self._sessions.get(session_id)
            if record is None:
                return
            left = record.deadline - self._clock()
            if left > 0.001:
                self._supervisor.schedule_expiry(session_id, left, self._expire)
                return
            del self._sessions[session_id]
            self._remember_ended(session_id, "expired")
        self._supervisor.forget(session_id)
        self._record_closed(session_id, "expired")
        record.worker.stop(SessionExpired(session_id=session_id), last=self._final_save)
        log.info("session expired", extra={"event": "session_expired", "session": session_id})
        self._refill()

    # -- reliability: a supervised browser, lost sessions, the watchdog, memory ------------

    def _check_browser_available(self):
        """While degraded (restarts used up), refuse at once rather than wait minutes."""
        with self._lock:
            until = self._degraded_until
        if until is not None:
            retry = max(1, round((until - time.monotonic()) * 1000))
            raise BrowserUnavailable(
                f"The browser crashed {self.config.max_restarts} times within {self.config.restart_window} s "
                f"({self._crash_cause}); the next restart is in {retry / 1000:.0f} s. Retry then.",
                details={"retryAfterMs": retry, "cause": self._crash_cause})

    def _over_memory(self):
        """MB used by the browser's processes when over --max-memory-mb, else None."""
        limit = self.config.max_memory_mb
        if not limit:
            return None
        sampled, used = self._memory
        if time.monotonic() - sampled > MEMORY_SAMPLE_S:
            used = browser_pss_kb(os.getpid()) / 1024
            self._memory = (time.monotonic(), used)
        return used if used > limit else None

    def _check_memory(self):
        used = self._over_memory()
        if used is not None:
            raise ResourceExhausted(
                f"The browser's processes use {used:.0f} MB, over the {self.config.max_memory_mb} MB limit "
                "(--max-memory-mb); close a session before creating another.",
                details={"usedMb": round(used), "limitMb": self.config.max_memory_mb})

    def _resume_hint(self, session_id):
        """(hint, resumable): whether resume_session can bring a closed session back."""
        if self.history.has_saved_state(session_id):
            return ("Call resume_session with this sessionId to reopen it in a fresh context with its "
                    "cookies, local storage and last URL.", True)
        return "Nothing was saved for it, so it cannot be resumed: call create_session.", False

    def _expired_error(self, session_id):
        hint, resumable = self._resume_hint(session_id)
        return SessionExpired(f"This session expired (no call for {self.config.session_timeout // 1000} s"
                              + (f", or older than {self.config.session_max_age // 1000} s"
                                 if self.config.session_max_age else "") + f") and was closed. {hint}",
                              session_id=session_id, details={"resumable": resumable})

    def _lost_error(self, session_id):
        """SESSION_LOST, telling whether resume_session can bring the session back."""
        hint, resumable = self._resume_hint(session_id)
        return SessionLost(f"The browser under this session crashed, so the session was closed. {hint}",
                           session_id=session_id, details={"reason": "browser_crash", "resumable": resumable})

    def _drop_lost(self, records):
        """Close sessions whose browser died: the history says why, their threads wind down."""
        for record in records:
            self._supervisor.cancel_expiry(record.session_id)
            self._record_closed(record.session_id, "browser_crash")
            record.worker.stop(self._lost_error(record.session_id))
            log.warning("session lost", extra={"event": "session_lost", "session": record.session_id})

    # SESSION THREAD: a call found its browser disconnected (a remote one, or ours before
    # the supervisor noticed). Returns the error that call answers.
    def _session_lost(self, state):
        with self._lock:
            record = self._sessions.get(state.session_id)
            if record is None or record.worker is not state.worker:
                record = None
            else:
                del self._sessions[state.session_id]
                self._remember_ended(state.session_id, "lost")
        if record is not None:
            self._drop_lost([record])
        return self._lost_error(state.session_id)

    # BROWSER-SUPERVISOR THREAD: it forks Chromium and lives until close(), so the
    # browser's parent-death signal fires only if the whole server dies.
    def _run_shared_browser(self):
        if self._remote:
            # A remote browser (a grid): nothing to launch or restart; sessions attach to it
            # directly and find out on their own when it goes away (see _session_lost).
            self._endpoint.set_result((0, Endpoint(self.config.ws_endpoint, None, None)))
            log.info("using a remote browser", extra={"event": "remote_browser",
                                                      "cdp": bool(self.config.cdp_endpoint)})
            return
        try:  # a browser that never started is not restarted: the error says how to install one
            executable = find_executable(self.config.browser, self.config.executable_path)
            shared = self._launch(executable)
        except BaseException as exc:
            log.error("browser unavailable", extra={"event": "browser_unavailable", "error": str(exc)})
            try:
                self._endpoint.set_exception(exc)
            except InvalidStateError:
                pass
            return
        # The restart lifecycle: each crash is followed by a restart after 1, 2, then 4 s;
        # past --max-restarts in --restart-window the server is degraded until the
        # oldest restart leaves the window. tenacity runs the loop; our wait decides.
        retrying = Retrying(retry=retry_if_exception_type((BrowserCrashed, BrowserError)),
                            wait=self._restart_wait, sleep=self._restart_sleep,
                            stop=lambda _: self._browser_stop.is_set(), reraise=True)
        try:
            retrying(self._browser_life, executable, [shared])
        except (BrowserCrashed, BrowserError):
            pass  # closing while the browser was down

    def _launch(self, executable):
        """Start the browser server and make it the current life; raises BrowserError."""
        shared = SharedBrowser(self.config.browser, executable, self._headless, on_exit=self._browser_wake.set,
                               spare_renderer=self.config.spare_renderer)
        endpoint = shared.start(abort=self._browser_stop)
        with self._lock:
            self._generation += 1
            generation = self._generation
            if self._endpoint.done():
                self._endpoint = Future()
            waiting = self._endpoint
            self._degraded_until = None
        try:
            waiting.set_result((generation, endpoint))
        except InvalidStateError:  # close() ran meanwhile
            shared.stop(0)
            raise BrowserError("The server is shutting down.") from None
        if generation > 1:
            log.warning("browser restarted", extra={"event": "browser_restarted", "cause": self._crash_cause,
                                                    "generation": generation})
            self._tell_client("notice", {"event": "browser_restarted", "cause": self._crash_cause})
            self._refill()
        return shared

    def _browser_life(self, executable, first):
        """One life of the shared browser: serve until close (return) or a crash (raise BrowserCrashed)."""
        if self._browser_stop.is_set():
            return
        shared = first.pop() if first else self._launch(executable)
        ping = self.config.browser_ping or None
        cause = None
        while cause is None:
            self._browser_wake.wait(ping)
            if self._browser_stop.is_set():
                shared.stop(BROWSER_STOP_GRACE_S)
                return
            self._browser_wake.clear()
            if shared.ended.is_set():
                cause = shared.exit_cause()
            elif ping:  # a short interval asks for quick detection: wait 2 intervals, 2 to 10 s
                cause = shared.ping(min(PING_TIMEOUT_S, max(2.0, 2.0 * ping)))
        shared.stop(0)  # whatever is left of it
        self._browser_lost(cause)
        raise BrowserCrashed(cause)

    def _browser_lost(self, cause):
        """The shared browser died: its sessions and pooled workers go, a restart will follow."""
        with self._lock:
            self._crash_cause = cause
            if self._endpoint.done():
                self._endpoint = Future()
            lost = [r for r in self._sessions.values() if r.worker.generation == self._generation]
            self._generation += 1  # retire the dead life's number: workers still opening on it are stale
            for record in lost:
                del self._sessions[record.session_id]
                self._remember_ended(record.session_id, "lost")
            idle, self._idle = list(self._idle), deque()
        log.error("browser crashed", extra={"event": "browser_crashed", "cause": cause,
                                            "sessions_lost": len(lost)})
        self._tell_client("error", {"event": "browser_crashed", "cause": cause, "sessionsLost": len(lost)})
        self._drop_lost(lost)
        for worker in idle:
            worker.stop()

    def _restart_sleep(self, seconds: float) -> None:
        self._browser_stop.wait(seconds)  # a stop wakes the wait early

    def _restart_wait(self, retry_state):
        """Seconds before the next restart: 1, 2, 4 while the window allows, else until it does."""
        now, window = time.monotonic(), self.config.restart_window
        with self._lock:
            while self._restarts and self._restarts[0] <= now - window:
                self._restarts.popleft()
            if len(self._restarts) < self.config.max_restarts:
                delay = float(min(4, 2 ** len(self._restarts)))
            else:
                delay = self._restarts[0] + window - now
                self._degraded_until = now + delay
            self._restarts.append(now + delay)
        log.warning("browser restart scheduled", extra={
            "event": "browser_restart_scheduled", "in_s": round(delay, 1), "cause": self._crash_cause,
            "degraded": self._degraded_until is not None, "attempt": retry_state.attempt_number})
        return delay

    # WATCHDOG THREAD
    def _watch(self):
        while not self._browser_stop.wait(WATCHDOG_TICK_S):
            with self._lock:
                records = list(self._sessions.values())
            now = time.monotonic()
            for record in records:
                stuck = record.worker.stuck(now)
                if stuck is not None:
                    self._replace_stuck(record, *stuck)

    def _replace_stuck(self, record: SessionRecord, fut, tag):
        """Answer a stuck command COMMAND_TIMEOUT and give its session a fresh thread.

        Playwright objects cannot be handed to another thread, so the new thread
        opens a new context from the session's last saved state (cookies, local
        storage, URL). The old thread is freed by killing its driver process, which
        also makes the browser server close the old context.
        """
        call, budget = tag
        old, session_id = record.worker, record.session_id
        saved = self.saved_state(session_id)
        options = {"allowed_domains": old.options.get("allowed_domains")}
        if saved is not None:
            options.update(storage_state=saved[0], url=saved[1])
        new = SessionWorker(session_id, self._opener, options)
        with self._lock:
            if self._sessions.get(session_id) is not record or record.worker is not old:
                return
            record.worker = new
        error = call.annotate_error(CommandTimeout(
            f"{call.tool} was still running {budget:.0f} s after it started, far past its own timeout, so its "
            "session thread was replaced. The session goes on in a fresh page"
            + (" at its last saved URL, with its cookies" if saved else "") + "; check the page and retry.",
            session_id=session_id, details={"tool": call.tool, "budgetSeconds": round(budget)}))
        try:
            fut.set_exception(error)
        except InvalidStateError:
            pass  # it finished just now; the session still moves to the fresh thread
        new.start()
        old.stop(error)
        if old.driver_pid:
            try:
                os.kill(old.driver_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.error("command stuck: session thread replaced", extra={
            "event": "session_thread_replaced", "session": session_id, "tool": call.tool,
            "budget_s": round(budget), "driver_killed": bool(old.driver_pid)})

    def saved_state(self, session_id):
        """(storage state, url) last saved for resume, or None."""
        return self.history.saved_state(session_id)

    # SESSION THREAD
    def _attach(self, worker):
        """Start Playwright on the current browser; if it died just now, on the restarted one."""
        while True:
            with self._lock:
                life = self._endpoint
            worker.generation, endpoint = life.result()
            try:
                return attach(self.config, endpoint)
            except Exception:
                if self._remote or not self._crash_noticed(worker.generation):
                    raise  # the browser is fine: this is our error

    # ANY THREAD
    def _crash_noticed(self, generation, within_s=CRASH_NOTICE_S):
        """True once browser life `generation` is over, waiting up to within_s for the supervisor to see it.

        A crash is noticed within milliseconds, when the launcher's pipe closes.
        """
        deadline = time.monotonic() + within_s
        while True:
            with self._lock:
                if self._generation != generation:
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    # SESSION THREAD
    def _open_playwright_session(self, worker):
        self.start()
        manager, playwright, browser, driven = self._attach(worker)
        worker.driver_pid = _driver_pid(manager)
        proxy = None
        try:
            policy = self.policy(worker.options.get("allowed_domains"))
            proxy = self._proxy_for(policy, worker.session_id)
            context = browser.new_context(storage_state=worker.options.get("storage_state"),
                                          proxy=proxy.settings if proxy is not None else None)
            context.set_default_timeout(self.config.action_timeout)
            context.set_default_navigation_timeout(self.config.navigation_timeout)
            page = context.new_page()
            state = SessionState(worker, self.config, playwright, browser, context, page)
            state.disconnect_at_close = driven
            state.policy, state.proxy = policy, proxy
            state.on_failure = self._login_failure
            state.on_lost = self._session_lost
            state.ask_user = self.ask_about_domain
            state.tell_user = lambda message: self._tell_client(
                "alert", {"event": "wait_for_user", "session": worker.session_id, "message": message})
            state.listen()
            if self.config.idle_gc:
                worker.quiet_hook = SessionState.collect_garbage
                worker.quiet_after_s = self.config.idle_gc / 1000
                budget = self._budget_s({})
                worker.quiet_budget = (budget, (Call("collect_garbage", worker.session_id, False, False), budget))
            if worker.options.get("url", "about:blank") != "about:blank":
                try:
                    page.goto(worker.options["url"])
                except Exception as exc:  # the session still opens; the caller sees where it is
                    log.warning("resume navigation failed", extra={"session": worker.session_id,
                                                                    "error": str(exc)})
        except BaseException:
            playwright.stop()
            if proxy is not None:
                proxy.close()
            raise
        return state


def _is_loopback(host):
    host = canonical_host(host)
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _driver_pid(manager):
    """The pid of a sync_playwright() driver process, through Playwright internals; None if they moved.

    Only the watchdog uses it, to free a thread stuck in a call that never returns.
    """
    try:
        return playwright_internals.driver_pid(manager)
    except AttributeError:
        log.warning("cannot find the Playwright driver's pid: a stuck session thread will be abandoned, "
                    "not freed", extra={"event": "driver_pid_unknown"})
        return None


def _log_call(fut, name, session_id, started):
    if fut.cancelled():
        outcome = "cancelled"
    else:
        exc = fut.exception()
        outcome = "ok" if exc is None else getattr(exc, "code", "BROWSER_ERROR")
    log.info("tool call", extra={"event": "tool_call", "tool": name, "session": session_id,
                                 "duration_ms": round((time.monotonic() - started) * 1000, 2),
                                 "outcome": outcome})
