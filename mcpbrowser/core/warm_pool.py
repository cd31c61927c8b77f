"""Where sessions come from: the warm pool when it can, else a cold start or a resume.

Runs on the core pool threads (opening a session, refilling the pool); `refill` may be called from any
thread. A pooled worker is a started, never-used session thread whose context has never seen a page."""

import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any
from urllib.parse import urlsplit

from mcpbrowser.config import Config
from mcpbrowser.core.browser_supervisor import BrowserSupervisor
from mcpbrowser.core.policy_proxy import PolicyProxy, every_session_proxied
from mcpbrowser.core.sessions import SessionRecord, SessionRegistry
from mcpbrowser.domains import DomainPolicy, is_loopback
from mcpbrowser.errors import BrowserError, BrowserFailure, BrowserServerError, BrowserUnavailable
from mcpbrowser.guards import MemoryGuard
from mcpbrowser.logs import log
from mcpbrowser.session.state import SessionState
from mcpbrowser.session.worker import SessionWorker

SESSION_START_TIMEOUT_S = 60.0  # a cold start is ~1 s; far beyond that something is wrong
# The refill after a create_session waits for the session's first call (a renderer's start, which a second
# one beside it slows), yet leaves the worker ready for a create_session a second later.
REFILL_DELAY_S = 0.5


class WarmPool:
    """Started, unused session threads, and the way every session opens."""

    def __init__(self, config: Config, registry: SessionRegistry, supervisor: BrowserSupervisor,
                 memory: MemoryGuard, executor: Executor, opener: Callable[[SessionWorker], Any],
                 policy: Callable[[list[str] | None], DomainPolicy],
                 timer_factory: Callable[..., Any] = threading.Timer) -> None:
        self.config, self._timer_factory = config, timer_factory
        self._registry, self._supervisor, self._memory = registry, supervisor, memory
        self._executor, self._opener, self._policy = executor, opener, policy
        self._lock = threading.Lock()
        self._filled = threading.Condition(self._lock)  # notified when a refill ends, with a worker or without
        self._fills_running = 0  # refills past the executor's queue, opening a worker now
        self._waiting = 0        # callers of _take_idle waiting for one of them
        self.idle: deque[SessionWorker] = deque()
        self.filling = 0
        # Every context has a policy proxy: then a pooled one can take on a session's own allowedDomains.
        self._proxied = every_session_proxied(config)
        # Remote browsers on other machines, which our loopback policy proxy cannot serve.
        self._far_hosts = [host for host in (urlsplit(e.url).hostname for e in config.remote_endpoints())
                           if host is not None and not is_loopback(host)]

    # -- CORE POOL THREAD ------------------------------------------------------------

    def create_session(self, resume: dict[str, Any] | None = None, allowed_domains: list[str] | None = None,
                       owner: str | None = None, context: dict[str, Any] | None = None) -> SessionRecord:
        """Hand out a warm worker, or start one, and register it as a session (opened again, once, when the
        browser crashed under it). resume: {"sessionId", "storageState", "url"} under its old id; context: the
        opener's options for a context of its own ({"emulation", "storage_state"}): both never from the pool."""
        record = (self._open_once(resume, allowed_domains, owner, context, final_try=False)
                  or self._open_once(resume, allowed_domains, owner, context, final_try=True))
        assert record is not None  # the last attempt raises rather than give up
        return record

    def _open_once(self, resume, allowed_domains, owner, context, final_try) -> SessionRecord | None:
        """A registered session; None when the browser died under it (and `final_try` is False)."""
        self._supervisor.check_available()
        self._memory.check()
        self._registry.reserve(resume["sessionId"] if resume else None)
        generation = self._supervisor.generation
        poolable = resume is None and not context and (not allowed_domains or self._proxied)
        worker = self._take_idle() if poolable else None
        source = "pool" if worker is not None else ("resume" if resume else "cold")
        crashed = BrowserUnavailable("The browser crashed while the session was opening; retry.",
                                     details={"retryAfterMs": 1000})
        try:
            if worker is None:
                worker = self.start_worker(resume, allowed_domains, context)
            elif allowed_domains:
                worker.submit(SessionState.narrow, allowed_domains).result(SESSION_START_TIMEOUT_S)
        except BrowserServerError as exc:
            self._registry.release()
            # It may fail on a browser that just died before the supervisor saw it: give it the time to.
            # A caller's mistake (an emulation option refused) is no crash: answered at once.
            if not isinstance(exc, BrowserFailure) or self._supervisor.remote \
                    or not self._supervisor.crash_noticed(generation):
                raise
            if final_try:
                raise crashed from None
            return None
        except BaseException:
            self._registry.release()
            raise
        record = self._registry.register(worker, self._current, source, owner)
        if record is None and final_try:
            raise crashed
        if record is not None:
            self.refill(REFILL_DELAY_S)
        return record

    def start_worker(self, resume: dict[str, Any] | None = None, allowed_domains: list[str] | None = None,
                     context: dict[str, Any] | None = None) -> SessionWorker:
        """Start a session thread and wait until its page is open."""
        session_id = resume["sessionId"] if resume else str(uuid.uuid4())
        options = {**self.options(allowed_domains, session_id), **(context or {})}
        if resume is not None:
            options.update(storage_state=resume["storageState"], url=resume["url"])
        worker = SessionWorker(session_id, self._opener, options)
        try:
            worker.start().result(SESSION_START_TIMEOUT_S)
        except BaseException as exc:
            worker.stop()
            if isinstance(exc, BrowserServerError):
                raise
            raise BrowserError(f"Could not open a browser session: {exc}") from None
        return worker

    def options(self, allowed_domains: list[str] | None, session_id: str) -> dict[str, Any]:
        """The opener's plain data: the session's policy, and the proxy that enforces it when a host rule applies
        (on loopback only: for a browser on another machine, a clear refusal rather than a policy that fails)."""
        policy = self._policy(allowed_domains)
        if not (policy.restricts_hosts or self.config.ask_new_domains):
            return {"allowed_domains": allowed_domains, "policy": policy, "proxy": None}
        if self._far_hosts:
            raise BrowserError(
                "The domain policy (allowed or blocked domains, --block-private-networks, --ask-new-domains) "
                "is enforced by a filtering proxy on this machine's loopback, which a browser on another "
                f"machine ({self._far_hosts[0]}) cannot reach. Run mcpbrowser on the browser's machine, "
                "or leave the policy off for remote endpoints.")
        # ice_by_ip: the browser resolves names for sessions without a proxy, so this one's pages may name no ICE server
        # (session/network_policy.py's ICE_NAMES_GUARD); with every session proxied the browser resolves none.
        return {"allowed_domains": allowed_domains, "policy": policy, "proxy": PolicyProxy(policy, session_id),
                "ice_by_ip": not self._proxied}

    def _current(self, worker: SessionWorker) -> bool:
        """Opened on the current browser life (a remote browser has only one)."""
        return self._supervisor.remote or worker.generation == self._supervisor.generation

    def _take_idle(self) -> SessionWorker | None:
        """A live pooled worker on the current browser, or None. While a refill is under way and none is ready,
        wait for it: it started earlier than a cold start would, and two opening at once each take longer."""
        deadline = time.monotonic() + SESSION_START_TIMEOUT_S
        with self._lock:
            waiting = False
            try:
                while True:
                    while self.idle:
                        worker = self.idle.popleft()
                        if worker.alive and self._current(worker):
                            return worker
                        worker.stop()
                    # Only for a refill already running, and one caller per running refill.
                    left = deadline - time.monotonic()
                    if left <= 0 or self._fills_running <= 0:
                        return None
                    if not waiting:
                        if self._waiting >= self._fills_running:
                            return None
                        waiting, self._waiting = True, self._waiting + 1
                    self._filled.wait(left)
            finally:
                if waiting:
                    self._waiting -= 1

    # -- ANY THREAD --------------------------------------------------------------------

    def refill(self, delay: float = 0.0) -> None:
        """Top the pool up in the background (after `delay` s), never past --max-sessions or the memory limit."""
        if delay > 0:
            timer = self._timer_factory(delay, self.refill)
            timer.daemon = True
            timer.start()
            return
        # Not on a Selenium Grid: a pooled session would hold a slot others queue for, ended at the Grid's timeout.
        if self._memory.over() is not None or self._registry.closed or self._supervisor.degraded \
                or self.config.selenium_grid:
            return
        room = self.config.max_sessions - self._registry.occupied()
        with self._lock:
            wanted = min(self.config.pool_size, room) - len(self.idle) - self.filling
            if wanted <= 0:
                return
            self.filling += wanted
        for _ in range(wanted):
            try:
                self._executor.submit(self._fill_one)
            except RuntimeError:  # closed meanwhile
                return

    def drain(self) -> list[SessionWorker]:
        """Empty the pool (its browser died, or the server closes); the workers, for the caller to stop."""
        with self._lock:
            idle, self.idle = list(self.idle), deque()
        return idle

    def _fill_one(self) -> None:
        with self._lock:
            self._fills_running += 1
        try:
            worker: SessionWorker | None = self.start_worker()
        except BaseException as exc:
            worker = None
            if not self._registry.closed:  # failing because we are shutting down is no news
                log.warning("warm pool refill failed", extra={"event": "pool_refill_failed", "error": str(exc)})
        with self._lock:
            self.filling -= 1
            self._fills_running -= 1
            keep = worker is not None and not self._registry.closed and self._current(worker)
            if worker is not None and keep:
                self.idle.append(worker)
            self._filled.notify_all()
        if keep:
            log.info("pool worker ready", extra={"event": "pool_worker_ready"})
        elif worker is not None:  # opened as the server closed (or on a dead browser): close it here
            worker.stop()
            worker.join(SESSION_START_TIMEOUT_S)
