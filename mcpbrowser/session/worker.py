"""One session's dedicated thread and its command queue.

Thread ownership: everything the opener returns (Playwright, Browser, Context, Page) is created on the session thread
and used only there. Other threads talk to it only through `submit`, which carries plain data in and a Future out,
shaped after `concurrent.futures.thread`: a cancelled command still queued is skipped, and every exception,
BaseException included, lands in its Future, so no command can kill the loop.
"""

import collections
import queue
import threading
import time
from concurrent.futures import Future, InvalidStateError
from contextlib import suppress
from typing import Any

from mcpbrowser.errors import SessionNotFound
from mcpbrowser.logs import log
from mcpbrowser.redaction import KnownSecrets

_STOP = object()
_URGENT = object()  # a person's input waits in _urgent


class SessionWorker:
    """A thread that opens a session's state, runs commands on it in order, then closes it."""

    def __init__(self, session_id, opener, options=None):
        self.session_id = session_id
        self.options = options or {}  # plain data for the opener, e.g. a storage state to restore
        self.ready: Future[bool] = Future()
        self.info = {"url": "about:blank", "title": ""}  # the page: written on the session thread, read anywhere
        self.generation = 0      # which life of the shared browser this session is on (see on_browser)
        self.driver_pid = None   # its Playwright driver process, which the watchdog may kill
        self.endpoint = None     # the remote endpoint it runs on, as shown (see on_browser)
        self.memory_mb = None    # its pages' renderer memory when last measured (see measured)
        self.memory_checked = float("-inf")  # monotonic time of that measurement
        self.running = None  # (future, monotonic deadline, tag) of the command now running, for the watchdog
        # The secret values its client met: the registry gives it its owner's as it hands the session out; any thread.
        self.secrets = KnownSecrets()
        # offer(caller), on the session thread, when a page of the session offers tools of its own: the core's way
        # to turn page_tools on for the session's client (core/lifecycle_tools.py gives it; nothing before).
        self._offer_page_tools = lambda caller: None
        self._opener = opener
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._tags: collections.deque[Any] = collections.deque()  # the tags of the commands in _queue (under _lock)
        self.begun = 0  # commands begun, a person's among them: which one runs now (session thread)
        # A person's input (the live view): run before what waits in _queue, and in a long wait's
        # slices (`between`), so a person can act while the agent's wait_for_user holds the thread.
        self._urgent: queue.SimpleQueue[Any] = queue.SimpleQueue()
        # The live view's hold (plain data): who drives, and whether they handed back since wait_for_user began.
        self.held_by: str | None = None
        self.handed_back = False
        self.page_crashed = False  # its page crashed, and the next call replaces it (read by the live view's list)
        self._lock = threading.Lock()
        self._stopping = False
        self._closed_error = None
        self._last = None
        # quiet_hook(state), when set, runs once on the session thread after a command, when no other has come for
        # quiet_after_s (the pages' garbage collection); quiet_budget: (budget_s, tag) the watchdog watches it with.
        self.quiet_hook: Any = None
        self.quiet_after_s = 1.0
        self.quiet_budget = (None, None)
        # tickers: {name: (interval_s, fn(state))}, each run on the session thread every interval_s while it is idle,
        # and after a command when due: "logs" while anyone subscribes (resources/watch.py), "screencast" while
        # anyone watches (session/screencast.py). Set and removed from any thread; the loop reads them each turn.
        self.tickers: dict[str, Any] = {}
        self._tick_due: dict[str, float] = {}
        self.events: Any = None  # its state's EventBuffers, whose numbered logs any thread reads, during a call too
        self._thread = threading.Thread(target=self._run, name=f"session-{session_id[:8]}", daemon=True)

    # -- ANY THREAD ------------------------------------------------------------

    @property
    def ticker(self):
        """(interval_s, fn(state)) running every ticker when its own interval is due, or None: no ticker."""
        tickers = dict(self.tickers)
        if not tickers:
            return None
        return min(interval for interval, _ in tickers.values()), lambda state: self._tick_all(state, tickers)

    def handed_out(self, secrets):
        """The registry hands the session to its client, before its first call: the client's secrets are its own."""
        self.secrets = secrets

    def offering_page_tools(self, offer):
        """ANY THREAD, before its client's first call: offer(caller) makes page_tools callable for the client."""
        self._offer_page_tools = offer

    def page_offers_tools(self, caller):
        """SESSION THREAD: the page just loaded offers tools of its own (tools/navigation.py)."""
        self._offer_page_tools(caller)

    def succeed(self, old):
        """A fresh thread for the session (the watchdog's): its secrets, its subscribers and watchers, the
        person who holds it and its client's page_tools go on from the old one (under the registry's lock)."""
        self.secrets, self.tickers, self.held_by = old.secrets, dict(old.tickers), old.held_by
        self._offer_page_tools = old._offer_page_tools

    def on_browser(self, generation=None, endpoint=None):
        """SESSION THREAD, as it opens: the shared browser's life it attached to, or the remote endpoint (shown)."""
        if generation is not None:
            self.generation = generation
        if endpoint is not None:
            self.endpoint = endpoint

    def measured(self, memory_mb):
        """SESSION THREAD: its pages' renderer memory was measured now (None: no tab could be read)."""
        self.memory_checked = time.monotonic()
        if memory_mb is not None:
            self.memory_mb = memory_mb

    def tick(self, name, interval_s, fn):
        """Run fn(state) on the session thread every interval_s while it is idle, as the ticker `name`."""
        self.tickers[name] = (interval_s, fn)

    def untick(self, name):
        """The ticker `name` runs no more (nobody listens, or watches)."""
        self.tickers.pop(name, None)

    def start(self):
        self._thread.start()
        return self.ready

    def submit(self, fn, *args, after=None, budget_s=None, tag=None, urgent=False):
        """Queue fn(state, *args) for the session thread; returns its Future.

        after(state, fut), if given, runs on the session thread once the Future is settled (its answer already on its
        way) and before the next command: work the caller need not wait for, such as capturing the page the call left.
        budget_s: seconds the command and its after-work may take before the watchdog may call it stuck (see `stuck`);
        tag travels with it for the watchdog.
        """
        fut: Future[Any] = Future()
        with self._lock:
            if self._stopping:
                fut.set_exception(self._closed_error)
                return fut
            if urgent:
                self._urgent.put((fut, fn, args, after, budget_s, tag))
                self._queue.put(_URGENT)  # wakes an idle loop
            else:
                self._tags.append(tag)
                self._queue.put((fut, fn, args, after, budget_s, tag))
        return fut

    def stuck(self, now=None):
        """(future, tag) of a command running past its deadline, else None."""
        running = self.running
        if running is None or running[1] is None or (time.monotonic() if now is None else now) < running[1]:
            return None
        return running[0], running[2]

    def stop(self, error=None, last=None):
        """Refuse new work, fail what is queued with `error`, and close after the running command.

        last(state), if given, runs on the session thread just before the state
        closes (a final save, say). Idempotent: only the first call counts.
        """
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
            self._last = last
            self._closed_error = error or SessionNotFound(
                "The session was closed.", session_id=self.session_id)
        self._fail_queued()
        self._queue.put(_STOP)

    def join(self, timeout=None):
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def alive(self):
        return self._thread.is_alive()

    def idle(self):
        """Whether no command waits to run (any thread; the session thread asks it in its after-call work)."""
        return self._queue.empty() and self._urgent.empty()

    def next_tag(self):
        """The tag the command to run next was submitted with; None when none waits, or a person's input goes first
        (any thread; the session thread asks it in its after-call work)."""
        with self._lock:
            return self._tags[0] if self._tags and self._urgent.empty() else None

    # -- SESSION THREAD ----------------------------------------------------------

    def _run(self):
        try:
            state = self._opener(self)
        except BaseException as exc:  # the creator waits on `ready`; it must hear why
            self.ready.set_exception(exc)
            self.stop()  # fails what is queued; a stop that came first did, and nothing is queued after one
            return
        self.ready.set_result(True)
        quiet_due = None  # monotonic time the quiet hook is due, after a command
        tick_due = time.monotonic()
        try:
            while True:
                ticker = self.ticker
                due = [t for t in (quiet_due, tick_due if ticker is not None else None) if t is not None]
                timeout = None if not due else max(0.0, min(due) - time.monotonic())
                try:
                    item = self._queue.get(timeout=timeout)
                except queue.Empty:
                    now = time.monotonic()
                    if quiet_due is not None and now >= quiet_due:
                        quiet_due = None
                        self._run_hook(self.quiet_hook, state)
                    if ticker is not None and now >= tick_due:
                        tick_due = now + ticker[0]
                        self._run_hook(ticker[1], state)
                    continue
                if item is _STOP:
                    break
                self._run_urgent(state)  # a person's input, or take-over, queued meanwhile goes first
                if item is _URGENT:
                    continue
                with self._lock:  # only now: it was next while a person's input ran (next_tag); a stop may fail it
                    if self._tags:
                        self._tags.popleft()
                self._execute(state, item)
                self.running = None
                if self.quiet_hook is not None:
                    quiet_due = time.monotonic() + self.quiet_after_s
                ticker = self.ticker
                if ticker is not None and time.monotonic() >= tick_due:  # a busy session ticks between calls
                    tick_due = time.monotonic() + ticker[0]
                    self._run_hook(ticker[1], state)
        finally:
            self._fail_queued()
            if self._last is not None:
                try:
                    self._last(state)
                except Exception:
                    log.exception("last command before close failed", extra={"session": self.session_id})
            try:
                state.close()
            except Exception:
                log.exception("session close failed", extra={"session": self.session_id})

    def between(self, state):
        """SESSION THREAD, in the slices of a long wait: a person's queued input, then the due tickers."""
        self._run_urgent(state, nested=True)
        ticker = self.ticker
        if ticker is not None:
            ticker[1](state)

    def _run_urgent(self, state, nested=False):
        while True:
            try:
                item = self._urgent.get_nowait()
            except queue.Empty:
                return
            running = self.running
            self._execute(state, item, track=not nested)
            self.running = running

    def _execute(self, state, item, track=True):
        """Run one queued command and its after-work; `track`: the watchdog watches it (not when nested)."""
        fut, fn, args, after, budget_s, tag = item
        self.begun += 1
        if not fut.set_running_or_notify_cancel():
            return
        if track:
            self.running = (fut, None if budget_s is None else time.monotonic() + budget_s, tag)
        try:
            result = fn(state, *args)
        except BaseException as exc:
            _set_outcome(fut, exc=exc)
        else:
            _set_outcome(fut, result=result)
        if after is not None:
            try:
                after(state, fut)
            except Exception:
                log.exception("after-call work failed", extra={"session": self.session_id})

    def _tick_all(self, state, tickers):
        now = time.monotonic()
        for name, (interval, fn) in tickers.items():
            if now >= self._tick_due.get(name, 0.0):
                self._tick_due[name] = now + interval
                try:
                    fn(state)
                except Exception as exc:  # one ticker's failure leaves the others ticking
                    log.debug("session ticker failed", extra={"session": self.session_id, "ticker": name,
                                                              "error": str(exc)})

    def _run_hook(self, hook, state):
        """The quiet hook or the ticker, watched by the watchdog like a command (budget: quiet_budget)."""
        if hook is None:
            return
        budget_s, tag = self.quiet_budget
        self.running = (Future(), None if budget_s is None else time.monotonic() + budget_s, tag)
        try:
            hook(state)
        except Exception as exc:
            log.debug("session hook failed", extra={"session": self.session_id, "error": str(exc)})
        finally:
            self.running = None

    def _fail_queued(self):
        for waiting in (self._urgent, self._queue):
            while True:
                try:
                    item = waiting.get_nowait()
                except queue.Empty:
                    break
                if item is not _STOP and item is not _URGENT and item[0].set_running_or_notify_cancel():
                    item[0].set_exception(self._closed_error)
        with self._lock:
            self._tags.clear()  # what waited is failed: none of it runs next


def _set_outcome(fut, result=None, exc=None):
    """Set a Future's outcome unless the watchdog already answered it (see core/watchdog.py)."""
    with suppress(InvalidStateError):
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(result)
