"""The shared browser's lifecycle: launch it, watch it, restart it with backoff, stop it.

Threads: the browser-supervisor thread runs `_run` (launch, watch, restart); `attach` runs on a session
thread; the rest may be called from any thread, under this object's lock (`RestartBackoff` too). Remote
browsers are never launched or restarted: the fleet (fleet.py) places sessions on them."""

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from typing import Any

from mcpbrowser.config import Config
from mcpbrowser.core.browser_process import (
    Endpoint,
    SharedBrowser,
    effective_headless,
    find_executable,
    is_headless_shell,
)
from mcpbrowser.core.policy_proxy import every_session_proxied
from mcpbrowser.errors import BrowserError, BrowserUnavailable
from mcpbrowser.logs import log
from mcpbrowser.session.attach import attach

CRASH_NOTICE_S = 2.0        # how long a failure waits to learn whether the browser died under it
BROWSER_STOP_GRACE_S = 2.0  # at shutdown the browser is sent SIGTERM, and SIGKILL this long after
PING_TIMEOUT_S = 10.0       # a browser that cannot open a context in this long is hung
# The wait before a restart (RestartBackoff): each crash counts 1, and what the crashes before it count
# halves with every BACKOFF_HALF_LIFE_S the browser ran since; the wait is BACKOFF_BASE_S * (2 ** (count - 1) - 1),
# at most BACKOFF_MAX_S. So the first crash, or one after a run of seconds, restarts at once; a browser that
# keeps dying within a second of its start waits 0.25, 0.75, 1.75 s, then 4 s.
BACKOFF_BASE_S = 0.25
BACKOFF_HALF_LIFE_S = 1.0
BACKOFF_MAX_S = 4.0


class RestartBackoff:
    """When to restart a crashed browser: at once, unless it keeps dying soon after it starts.

    Past max_restarts within window seconds the budget is spent, and the wait is until the oldest
    restart leaves the window. Not thread-safe: the supervisor calls it under its lock."""

    def __init__(self, max_restarts: int, window: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_restarts, self.window, self._clock = max_restarts, window, clock
        self._restarts: deque[float] = deque()  # when the restarts within the window are (or were) due
        self._count = 0.0  # recent crashes, each worth less the longer the browser ran after it

    def crashed(self, ran_s: float) -> tuple[float, bool]:
        """A browser that ran ran_s seconds died: (seconds until its restart, whether the budget is spent)."""
        now = self._clock()
        self._count = self._count * 0.5 ** (max(0.0, ran_s) / BACKOFF_HALF_LIFE_S) + 1
        while self._restarts and self._restarts[0] <= now - self.window:
            self._restarts.popleft()
        if len(self._restarts) < self.max_restarts:
            delay = min(BACKOFF_MAX_S, BACKOFF_BASE_S * (2 ** min(self._count - 1, 16) - 1))
            spent = False
        else:  # with --max-restarts 0, a restart once a window
            delay = (self._restarts[0] if self._restarts else now) + self.window - now
            spent = True
        self._restarts.append(now + delay)
        return delay, spent


class BrowserCrashed(Exception):
    """Internal: the shared browser died; the retry loop restarts it."""


class BrowserSupervisor:
    """Owns the shared browser's current life: its endpoint, its generation number, its restarts.

    on_lost(cause, generation) runs when life `generation` ended (the supervisor thread); on_restart(cause)
    when a new life began after a crash. `bind` sets them later, for a supervisor the CLI started first
    thing, so that the browser launches while the rest of the server is built."""

    def __init__(self, config: Config, on_lost: Callable[[str, int], None] = lambda cause, generation: None,
                 on_restart: Callable[[str | None], None] = lambda cause: None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        endpoints = config.remote_endpoints()
        self.remote = bool(endpoints)
        self._on_lost, self._on_restart = on_lost, on_restart
        self._lock = threading.Lock()
        # The current life: Future of (generation, Endpoint). A crash replaces it with
        # a pending one, which the restart resolves.
        self._endpoint: Future[tuple[int, Endpoint]] = Future()
        self._generation = 0
        self._thread: threading.Thread | None = None
        self._headless: bool | None = None
        self.stopping = threading.Event()
        self._wake = threading.Event()          # stop asked, or the browser exited
        self._clock = clock
        self._backoff = RestartBackoff(config.max_restarts, config.restart_window, clock)
        self._degraded_until: float | None = None  # monotonic time of the next restart while degraded
        self._next_wait: tuple[float, bool] | None = None  # a noticed crash's (wait, budget spent), for the retry
        # The supervisor thread's own: the launcher (alive, or kept for the next browser after a
        # crash), whether its browser is published and serving, since when, and how long the last ran.
        self._shared: SharedBrowser | None = None
        self._serving, self._up_since, self._ran_s = False, 0.0, 0.0
        self._published: Endpoint | None = None  # the serving browser's endpoint
        # Under the lock: while the next browser starts on the launcher that ran the dead one,
        # that launcher's endpoint (its sessions' socket waits for the next browser); else None.
        self._kept: Endpoint | None = None
        self.crash_cause: str | None = None
        self.fleet = None
        if endpoints:
            from mcpbrowser.core.fleet import Fleet  # here: a local browser's launch does not wait for its imports

            self.fleet = Fleet(endpoints, config.browser_ping, self.stopping)

    # -- ANY THREAD ----------------------------------------------------------------

    def bind(self, on_lost: Callable[[str, int], None], on_restart: Callable[[str | None], None]) -> None:
        self._on_lost, self._on_restart = on_lost, on_restart

    @property
    def generation(self) -> int:
        with self._lock:
            return self._generation

    @property
    def degraded(self) -> bool:
        with self._lock:
            return self._degraded_until is not None

    def start(self) -> bool:
        """Start the supervisor thread once; False when it had started already."""
        with self._lock:
            if self._thread is not None or self.stopping.is_set():
                return False
            self._headless = effective_headless(self.config)
            self._thread = threading.Thread(target=self._run, name="browser-supervisor", daemon=True)
        self._thread.start()
        return True

    def stop(self, error: BaseException) -> None:
        """Stop the browser; a session thread still waiting for one gets `error`."""
        self.stopping.set()
        self._wake.set()
        if self.fleet is not None:
            self.fleet.stop()
        with self._lock:
            waiting = self._endpoint
        if not waiting.done():
            with contextlib.suppress(InvalidStateError):
                waiting.set_exception(error)
        if self._thread is not None:
            self._thread.join(BROWSER_STOP_GRACE_S + 2.0)

    def check_available(self) -> None:
        """While degraded (restarts used up), refuse at once rather than wait minutes."""
        with self._lock:
            until = self._degraded_until
        if until is not None:
            retry = max(1, round((until - self._clock()) * 1000))
            raise BrowserUnavailable(
                f"The browser crashed {self.config.max_restarts} times within {self.config.restart_window} s "
                f"({self.crash_cause}); the next restart is in {retry / 1000:.0f} s. Retry then.",
                details={"retryAfterMs": retry, "cause": self.crash_cause})

    def crash_noticed(self, generation: int, within_s: float = CRASH_NOTICE_S) -> bool:
        """True once browser life `generation` is over, waiting up to within_s for this supervisor to see it."""
        deadline = time.monotonic() + within_s
        while True:
            if self.generation != generation:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def browser_gone(self, worker: Any, error: str) -> None:
        """A session found its browser disconnected: on a fleet, its endpoint is probed before it gets more."""
        if self.fleet is not None:
            self.fleet.suspect(worker, error.splitlines()[0][:300] if error else "disconnected")

    # -- SESSION THREAD ------------------------------------------------------------

    def attach(self, worker: Any) -> tuple[Any, Any, Any, bool]:
        """Start Playwright on the current browser (if it died just now, the restarted one; remote: the fleet's)."""
        if self.fleet is not None:
            self._endpoint.result()  # started (and not stopped meanwhile)
            return self.fleet.attach(worker, lambda spec: attach(self.config, spec, self._headless))
        while True:
            with self._lock:
                life = self._endpoint
                kept = None if life.done() else self._kept
            if kept is not None:
                attached = self._attach_early(worker, life, kept)
                if attached is not None:
                    return attached
            generation, endpoint = life.result()
            worker.on_browser(generation=generation)
            try:
                return attach(self.config, endpoint)
            except Exception:
                if not self.crash_noticed(generation):
                    raise  # the browser is fine: this is our error

    def _attach_early(self, worker: Any, life: Future, kept: Endpoint) -> tuple[Any, Any, Any, bool] | None:
        """Start Playwright through the restarting launcher's socket, which holds the connection until its next
        browser is up, so the two starts overlap. None when that launcher went meanwhile: wait for the next life."""
        try:
            attached = attach(self.config, kept)
        except Exception:
            return None
        try:
            generation, endpoint = life.result()
        except BaseException:
            attached[1].stop()
            raise
        if endpoint.pipe != kept.pipe:  # a new launcher: this connection went nowhere
            attached[1].stop()
            return None
        worker.on_browser(generation=generation)  # a socket is bridged to the first browser up after it connected
        return attached

    # -- BROWSER-SUPERVISOR THREAD ---------------------------------------------------
    # It forks Chromium and lives until stop(), so the browser's parent-death signal
    # fires only if the whole server dies.

    def _say_which(self, executable: str | None, shell: bool) -> None:
        """A notice when the browser is not what the mode calls for: a headless shell asked to show a window (it
        opens none, and says nothing), or a headless server without a shell (the whole browser, about twice the CPU)."""
        if not self._headless and is_headless_shell(executable):
            log.warning("--executable-path names Chromium's headless shell, which opens no window: nobody sees the "
                        "browser (the live view still shows its pages); name the whole browser for a window",
                        extra={"event": "headless_shell_headed", "executable": executable})
        elif shell and self.config.browser == "chromium" and not self.config.executable_path \
                and not is_headless_shell(executable):
            log.info("no headless shell is installed: headless, the whole Chromium runs, at about twice the CPU "
                     "(python -m playwright install chromium-headless-shell, or Debian's chromium-headless-shell)",
                     extra={"event": "no_headless_shell", "executable": executable})

    def _run(self) -> None:
        if self.fleet is not None:
            self.fleet.start()
            self._endpoint.set_result((0, Endpoint(None, None, None)))
            return
        try:  # a browser that never started is not restarted: the error says how to install one
            # Headless, the shell (as Playwright's own headless launch): about half the CPU. Not for a spare
            # renderer, which the shell never keeps (tests/test_footprint.py), so the option would do nothing.
            shell = bool(self._headless) and not self.config.spare_renderer
            executable = find_executable(self.config.browser, self.config.executable_path, shell=shell)
            self._say_which(executable, shell)
            self._launch(executable)
        except BaseException as exc:
            if not self.stopping.is_set():
                log.error("browser unavailable", extra={"event": "browser_unavailable", "error": str(exc)})
            with contextlib.suppress(InvalidStateError):
                self._endpoint.set_exception(exc)
            return
        # tenacity runs the restart loop; _restart_wait decides each wait (RestartBackoff's, degraded when spent).
        from tenacity import Retrying, retry_if_exception_type  # after the launch, which does not wait for it

        retrying = Retrying(retry=retry_if_exception_type((BrowserCrashed, BrowserError)),
                            wait=self._restart_wait, sleep=self._restart_sleep,
                            stop=lambda _: self.stopping.is_set(), reraise=True)
        try:
            retrying(self._life, executable)
        except (BrowserCrashed, BrowserError):
            pass  # stopping while the browser was down
        finally:
            self._release(BROWSER_STOP_GRACE_S)

    def _release(self, grace: float) -> None:
        """Stop the launcher and whatever browser it runs (SIGKILL after `grace`), if there is one."""
        self._keep(None)
        shared, self._shared, self._serving = self._shared, None, False
        if shared is not None:
            shared.stop(grace)

    def _keep(self, endpoint: Endpoint | None) -> None:
        with self._lock:
            self._kept = endpoint

    def _launch(self, executable: str) -> SharedBrowser:
        """Start a browser (on the dead one's launcher if it still runs) as the current life; raises BrowserError."""
        previous, self._shared, self._serving, self._ran_s = self._shared, None, False, 0.0
        if previous is not None and previous.can_relaunch():
            shared = previous
            try:
                endpoint = shared.relaunch(abort=self.stopping)  # stopped if it fails: the next try starts afresh
            finally:
                self._keep(None)
        else:
            self._keep(None)
            if previous is not None:
                previous.stop(0)
            shared = SharedBrowser(self.config.browser, executable, self._headless, on_exit=self._wake.set,
                                   spare_renderer=self.config.spare_renderer, webmcp=self.config.webmcp,
                                   proxied=every_session_proxied(self.config))
            endpoint = shared.start(abort=self.stopping)
        with self._lock:
            stopped = self.stopping.is_set()
            if not stopped:
                self._generation += 1
                generation = self._generation
                if self._endpoint.done():
                    self._endpoint = Future()
                waiting = self._endpoint
                self._degraded_until = None
        if not stopped:
            try:
                waiting.set_result((generation, endpoint))
            except InvalidStateError:  # stop() failed it just now
                stopped = True
        if stopped:
            # stop() ran while this browser came up: it gets the grace any other would, not an
            # instant SIGKILL, and is not published (a stopped supervisor's future stays failed).
            shared.stop(BROWSER_STOP_GRACE_S)
            raise BrowserError("The server is shutting down.") from None
        self._shared, self._serving, self._up_since, self._published = shared, True, self._clock(), endpoint
        if generation > 1:
            log.warning("browser restarted", extra={"event": "browser_restarted", "cause": self.crash_cause,
                                                    "generation": generation,
                                                    "relaunched": shared is previous})
            self._on_restart(self.crash_cause)
        return shared

    def _life(self, executable: str) -> None:
        """One life of the shared browser: serve until stop (return) or a crash (raise BrowserCrashed)."""
        if self.stopping.is_set():  # launched and published (or down), and stop() came before this life began
            self._release(BROWSER_STOP_GRACE_S)
            return
        shared = self._shared if self._serving and self._shared is not None else self._launch(executable)
        ping = self.config.browser_ping or None
        cause = None
        while cause is None:
            self._wake.wait(ping)
            if self.stopping.is_set():
                self._release(BROWSER_STOP_GRACE_S)
                return
            self._wake.clear()
            if shared.ended.is_set():
                cause = shared.exit_cause()
            elif ping:  # a short interval asks for quick detection: wait 2 intervals, 2 to 10 s
                cause = shared.ping(min(PING_TIMEOUT_S, max(2.0, 2.0 * ping)))
        # The life is retired first: a session opening now waits for the next browser rather than
        # attach to the dead one's endpoint. Then the sessions go; then what is left of the browser.
        relaunchable = shared.can_relaunch()
        self._serving, self._ran_s = False, self._clock() - self._up_since
        with self._lock:
            self.crash_cause = cause
            if self._endpoint.done():
                self._endpoint = Future()
            ended = self._generation
            self._generation += 1  # retire the dead life's number: sessions still opening on it are stale
            self._kept = self._published if relaunchable and self._published and self._published.pipe else None
            # The restart's wait is decided now, before anyone hears of the crash: a create_session that
            # comes right after a crash that spent the budget is refused at once (check_available), not
            # held for a browser that comes back only when the window allows.
            self._next_wait = self._backoff.crashed(self._ran_s)
            if self._next_wait[1]:
                self._degraded_until = self._clock() + self._next_wait[0]
        self._on_lost(cause, ended)
        if not relaunchable:  # hung, or its launcher died: all of it goes
            self._release(0)
        raise BrowserCrashed(cause)

    def _restart_sleep(self, seconds: float) -> None:
        self.stopping.wait(seconds)  # a stop wakes the wait early

    def _restart_wait(self, retry_state: Any) -> float:
        """Seconds before the next restart (RestartBackoff's), degraded while the budget is spent."""
        with self._lock:
            # A crash's wait was decided as it was noticed (_life); a launch that failed is decided here.
            decided, self._next_wait = self._next_wait, None
            delay, spent = decided if decided is not None else self._backoff.crashed(self._ran_s)
            if spent:
                self._degraded_until = self._clock() + delay
            degraded = self._degraded_until is not None
        log.warning("browser restart scheduled", extra={
            "event": "browser_restart_scheduled", "in_s": round(delay, 2), "cause": self.crash_cause,
            "ran_s": round(self._ran_s, 2), "degraded": degraded, "attempt": retry_state.attempt_number})
        return delay
