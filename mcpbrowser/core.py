"""The thread-safe synchronous core: the shared browser, sessions, and every tool as a call.

Threads:
- ANY THREAD: `Browser` and `Session` public methods (embedders and the MCP server).
- browser-supervisor thread: launches the shared Chromium and, on close, stops it.
- core pool threads: session-less tool handlers (create/close/list sessions).
- session threads: `SessionState` and every Playwright object (see session_worker).
- timer threads: expiry callbacks; they only flag and enqueue, never touch Playwright.
Only plain data (dicts, str, bytes) and Futures cross between them.
"""

import threading
import time
import uuid
from collections import OrderedDict, deque
from concurrent.futures import Future, ThreadPoolExecutor

from mcpbrowser import tools
from mcpbrowser.browser_process import SharedBrowser, attach, effective_headless, find_executable
from mcpbrowser.config import Config
from mcpbrowser.errors import (
    BrowserError, BrowserServerError, InvalidParameters, MaxSessionsReached, SessionExpired,
    SessionNotFound,
)
from mcpbrowser.logs import log
from mcpbrowser.schema import validate
from mcpbrowser.session_state import SessionState, now_ms
from mcpbrowser.session_worker import SessionWorker
from mcpbrowser.supervisor import Supervisor

SESSION_START_TIMEOUT_S = 60.0  # a cold driver start is ~1 s; far beyond that something is wrong
CLOSE_JOIN_S = 5.0              # close_session waits this long for the page and context to close
SHUTDOWN_BUDGET_S = 1.0         # sessions get 1 s of the 2 s shutdown promise...
BROWSER_STOP_GRACE_S = 0.8      # ...and the browser its SIGTERM grace before SIGKILL
DESCRIBE_WAIT_S = 0.5           # list_sessions falls back to cached url/title for busy sessions
ENDED_MEMORY = 10_000           # ended ids remembered so late calls get SESSION_EXPIRED, bounded


class SessionRecord:
    """Plain data about one open session, owned by the core under its lock."""

    __slots__ = ("session_id", "worker", "created_at", "expires_at")

    def __init__(self, session_id, worker, created_at, expires_at):
        self.session_id = session_id
        self.worker = worker
        self.created_at = created_at
        self.expires_at = expires_at


def _failed(exc):
    fut = Future()
    fut.set_exception(exc)
    return fut


class Browser:
    """The core API: `with Browser(config) as b: s = b.create_session(); s.navigate(url)`.

    Every method may be called from any thread. Failures raise BrowserServerError
    subclasses whose `code` is the stable error code.
    """

    def __init__(self, config=None, *, opener=None, timer_factory=threading.Timer):
        self.config = config or Config()
        # Tools that depend on a setting (evaluate, upload_file) exist only when it is set.
        self.tools = {tool.name: tool for tool in tools.ALL if tool.enabled(self.config)}
        self._opener = opener or self._open_playwright_session
        self._supervisor = Supervisor(timer_factory)
        self._lock = threading.Lock()
        self._sessions = {}
        self._ended = OrderedDict()
        self._starting = 0
        # Warm pool: started, never-used workers. A pooled context has never seen a
        # page, so handing one out keeps isolation; it becomes a session only then.
        self._idle = deque()
        self._filling = 0
        self._closed = False
        self._pool = ThreadPoolExecutor(self.config.max_sessions + 2, thread_name_prefix="core")
        self._endpoint = Future()
        self._browser_thread = None
        self._browser_stop = threading.Event()
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
        self._browser_thread.start()
        self._refill()
        return self

    def close(self):
        """Close every session, then the browser. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            workers = [record.worker for record in self._sessions.values()] + list(self._idle)
            self._sessions.clear()
            self._idle.clear()
        self._supervisor.cancel_all()
        shutting_down = BrowserError("The server is shutting down.")
        for worker in workers:
            worker.stop(shutting_down)
        deadline = time.monotonic() + SHUTDOWN_BUDGET_S
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        self._browser_stop.set()
        if not self._endpoint.done():
            try:  # a session thread may be waiting for a browser that will never start
                self._endpoint.set_exception(shutting_down)
            except Exception:
                pass
        if self._browser_thread is not None:
            self._browser_thread.join(3.0)
        self._pool.shutdown(wait=False, cancel_futures=True)
        log.info("core closed", extra={"event": "core_closed", "workers": len(workers)})

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.close()

    # -- ANY THREAD: tools -----------------------------------------------------

    def submit(self, name, args=None):
        """Validate and dispatch one tool call; returns a Future of its result dict.

        Session tools run on their session's thread, the rest on the core pool.
        Every failure, validation included, arrives through the Future.
        """
        started = time.monotonic()
        args = {} if args is None else args
        tool = self.tools.get(name)
        session_id = args.get("sessionId") if isinstance(args, dict) else None
        try:
            if tool is None:
                raise InvalidParameters(f"Unknown tool {name!r}.", details={"known": list(self.tools)})
            validate(tool.input_schema, args)
            if tool.needs_session:
                fut = self._worker(session_id).submit(SessionState.run_tool, tool, args)
            else:
                fut = self._pool.submit(tool.handler, self, args)
        except BrowserServerError as exc:
            fut = _failed(exc)
        except RuntimeError:  # the pool refuses work once close() has run
            fut = _failed(BrowserError("The server is shutting down."))
        fut.add_done_callback(lambda f: _log_call(f, name, session_id, started))
        return fut

    def call(self, name, args=None):
        """Run one tool call and return its result dict; raises BrowserServerError."""
        return self.submit(name, args).result()

    def create_session(self):
        """Open a session and return a `Session` handle on it."""
        result = self.call("create_session")
        return Session(self, result["sessionId"], result["expiresAt"])

    def list_sessions(self):
        return self.call("list_sessions")["sessions"]

    def close_session(self, session_id):
        return self.call("close_session", {"sessionId": session_id})

    # -- CORE POOL THREADS: primitives behind the session tools ---------------------

    def open_session(self):
        """Hand out a warm worker, or start one, and register it as a session."""
        with self._lock:
            if self._closed:
                raise BrowserError("The server is shutting down.")
            if len(self._sessions) + self._starting >= self.config.max_sessions:
                raise MaxSessionsReached(
                    f"{self.config.max_sessions} sessions are open, the most allowed. "
                    "Close one with close_session first.",
                    details={"maxSessions": self.config.max_sessions})
            self._starting += 1
            worker = self._take_idle()
        source = "pool" if worker is not None else "cold"
        try:
            if worker is None:
                worker = self._start_worker()
        except BaseException:
            with self._lock:
                self._starting -= 1
            raise
        created = now_ms()
        record = SessionRecord(worker.session_id, worker, created, created + self.config.session_timeout)
        with self._lock:
            self._starting -= 1
            closed = self._closed
            if not closed:
                self._sessions[worker.session_id] = record
        if closed:
            worker.stop()
            raise BrowserError("The server is shutting down.")
        self._supervisor.schedule_expiry(worker.session_id, self.config.session_timeout / 1000, self._expire)
        log.info("session created", extra={"event": "session_created", "session": worker.session_id,
                                           "source": source})
        self._refill()
        return record

    def _start_worker(self):
        """Start a session thread and wait until its page is open (CORE POOL THREAD)."""
        worker = SessionWorker(str(uuid.uuid4()), self._opener)
        try:
            worker.start().result(SESSION_START_TIMEOUT_S)
        except BaseException as exc:
            worker.stop()
            if isinstance(exc, BrowserServerError):
                raise
            raise BrowserError(f"Could not open a browser session: {exc}") from None
        return worker

    def _take_idle(self):
        """A live pooled worker, or None (caller holds the lock)."""
        while self._idle:
            worker = self._idle.popleft()
            if worker.alive:
                return worker
            worker.stop()
        return None

    def _refill(self):
        """Top the warm pool up in the background, never past --max-sessions."""
        with self._lock:
            room = self.config.max_sessions - len(self._sessions) - self._starting
            wanted = min(self.config.pool_size, room) - len(self._idle) - self._filling
            if self._closed or wanted <= 0:
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
            log.warning("warm pool refill failed", extra={"event": "pool_refill_failed", "error": str(exc)})
        with self._lock:
            self._filling -= 1
            keep = worker is not None and not self._closed
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
        record.worker.stop()
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
        with self._lock:
            record = self._sessions.get(session_id)
            if record is None:
                raise self._missing(session_id)
            return record.worker

    def _missing(self, session_id):
        """The error for an id that is not open (caller holds the lock)."""
        if self._ended.get(session_id) == "expired":
            return SessionExpired(session_id=session_id)
        return SessionNotFound(session_id=session_id)

    def _remember_ended(self, session_id, how):
        self._ended[session_id] = how
        while len(self._ended) > ENDED_MEMORY:
            self._ended.popitem(last=False)

    # TIMER THREAD
    def _expire(self, session_id):
        with self._lock:
            record = self._sessions.pop(session_id, None)
            if record is None:
                return
            self._remember_ended(session_id, "expired")
        self._supervisor.forget(session_id)
        record.worker.stop(SessionExpired(session_id=session_id))
        log.info("session expired", extra={"event": "session_expired", "session": session_id})
        self._refill()

    # BROWSER-SUPERVISOR THREAD: it forks Chromium and lives until close(), so the
    # browser's parent-death signal fires only if the whole server dies.
    def _run_shared_browser(self):
        try:
            executable = find_executable(self.config.browser, self.config.executable_path)
            shared = SharedBrowser(self.config.browser, executable, self._headless)
            self._endpoint.set_result(shared.start())
        except BaseException as exc:
            log.error("browser unavailable", extra={"event": "browser_unavailable", "error": str(exc)})
            self._endpoint.set_exception(exc)
            return
        self._browser_stop.wait()
        shared.stop(BROWSER_STOP_GRACE_S)

    # SESSION THREAD
    def _open_playwright_session(self, worker):
        self.start()
        endpoint = self._endpoint.result()
        from playwright.sync_api import sync_playwright

        playwright = sync_playwright().start()
        try:
            browser = attach(playwright, self.config, endpoint)
            context = browser.new_context()
            context.set_default_timeout(self.config.action_timeout)
            context.set_default_navigation_timeout(self.config.navigation_timeout)
            page = context.new_page()
            state = SessionState(worker, self.config, playwright, browser, context, page)
            state.listen()
        except BaseException:
            playwright.stop()
            raise
        return state


def _log_call(fut, name, session_id, started):
    if fut.cancelled():
        outcome = "cancelled"
    else:
        exc = fut.exception()
        outcome = "ok" if exc is None else getattr(exc, "code", "BROWSER_ERROR")
    log.info("tool call", extra={"event": "tool_call", "tool": name, "session": session_id,
                                 "duration_ms": round((time.monotonic() - started) * 1000, 2),
                                 "outcome": outcome})


class Session:
    """A library handle on one session; every session tool is a method.

    `session.navigate("https://example.com")` maps positional arguments to the
    tool's required parameters in order, keywords to any parameter.
    """

    def __init__(self, browser, session_id, expires_at):
        self.browser = browser
        self.id = session_id
        self.expires_at = expires_at

    def call(self, tool, **args):
        return self.browser.call(tool, {"sessionId": self.id, **args})

    def __getattr__(self, name):
        tool = self.browser.tools.get(name)
        if tool is None or not tool.needs_session:
            raise AttributeError(name)
        positional = [p for p in tool.input_schema["required"] if p != "sessionId"]

        def method(*args, **kwargs):
            if len(args) > len(positional):
                raise TypeError(f"{name}() takes at most {len(positional)} positional arguments")
            kwargs.update(zip(positional, args))
            return self.call(name, **kwargs)

        method.__name__ = name
        method.__doc__ = tool.description
        return method

    def close(self):
        """Close the session; closing it again does nothing."""
        if self.id in self.browser.session_ids():
            self.browser.close_session(self.id)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
