"""The core's facade: `Browser` wires the parts of core/ and is the public entry point.

ANY THREAD: every public method; the parts name their own threads in their modules. Plain data, Futures and
a call's record (written only by the call's function: see ARCHITECTURE.md) cross threads."""

import atexit
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal, NamedTuple

from mcpbrowser import resources
from mcpbrowser.config import Config
from mcpbrowser.core import answer
from mcpbrowser.core.browser_supervisor import BrowserSupervisor
from mcpbrowser.core.call import Caller, Embedder, ServerClient
from mcpbrowser.core.dispatch import Dispatcher
from mcpbrowser.core.download_watch import DownloadWatch
from mcpbrowser.core.file_keeper import FileKeeper
from mcpbrowser.core.history import History
from mcpbrowser.core.recorder import Recorder
from mcpbrowser.core.session_memory import SessionMemory
from mcpbrowser.core.sessions import SessionRegistry
from mcpbrowser.core.store import Store
from mcpbrowser.core.tool_groups import ToolGroups
from mcpbrowser.core.tool_registry import configured
from mcpbrowser.core.user_channel import UserChannel
from mcpbrowser.core.warm_pool import WarmPool
from mcpbrowser.core.watchdog import Watchdog
from mcpbrowser.domains import DomainPolicy
from mcpbrowser.errors import BrowserError, ServerStopping
from mcpbrowser.guards import MemoryGuard
from mcpbrowser.library import Session, arguments
from mcpbrowser.logs import log
from mcpbrowser.redaction import SecretBook
from mcpbrowser.resources.hub import ResourceHub
from mcpbrowser.resources.server_log import ServerLog
from mcpbrowser.session import screencast
from mcpbrowser.session.opener import SessionOpener
from mcpbrowser.tools.person import HAND_BACK, PERSON_INPUT, TAKE_OVER, WATCH
from mcpbrowser.trace_scrub import artifact_roots

SHUTDOWN_BUDGET_S = 5.0  # sessions get at most this long to close at shutdown, then the browser stops
STOPPED_ANSWER_S = 2.0  # then what still ran gets this long to answer SERVER_STOPPING
CLOSE_WAIT_S = 60.0  # a second close() waits this long at most for the first (whose waits are bounded well within)


class Person(Embedder):
    """A person's caller in the live view: their name, for the limits; the session's owner, so the owner check
    holds; `person`, past the hold and ahead of the queue."""

    person = True

    def __init__(self, person: str, owner: str | None) -> None:
        super().__init__(lambda: None)
        self.owner, self._name = owner, f"person:{person}"

    @property
    def name(self) -> str:
        return self._name


class ToolContext(NamedTuple):
    """What a session-less tool's handler(core, args, call) may use of the core, on the core pool."""

    config: Config
    groups: ToolGroups
    history: History
    recorder: Recorder
    registry: SessionRegistry
    warm_pool: WarmPool
    session_memory: SessionMemory
    supervisor: BrowserSupervisor
    memory: MemoryGuard
    submit: Callable[..., Future]


class Browser:
    """The core API: `with Browser(config) as b: s = b.create_session(); s.navigate(url)`.

    Every method may be called from any thread. Failures raise BrowserServerError subclasses (`code`)."""

    def __init__(self, config: Config | None = None, *, opener: Callable[[Any], Any] | None = None,
                 timer_factory: Callable[..., Any] = threading.Timer,
                 clock: Callable[[], float] = time.monotonic, supervisor: BrowserSupervisor | None = None) -> None:
        self.config = config = config or Config()
        # Tools that depend on a setting (evaluate, upload_file) exist only when it is set.
        self.tools = {tool.name: tool for tool in configured(config)}
        self.groups = ToolGroups(config, self.tools)  # which of them each MCP client sees
        self.store = Store(config.db, retention_days=config.retention_days, max_mb=config.db_max_mb,
                           keys=config.db_keys())
        self.history = History(self.store)
        self.secrets = SecretBook(config.named_secrets())
        self.recorder = Recorder(self.history, self.tools)
        self.user = UserChannel(config)
        self._executor = ThreadPoolExecutor(config.max_sessions + 2, thread_name_prefix="core")
        # supervisor: one the CLI started already, so that the browser launches while this is built (same config).
        self.supervisor = supervisor or BrowserSupervisor(config)
        self.supervisor.bind(on_lost=self._browser_lost, on_restart=self._browser_restarted)
        self._pid: int | None = None  # the process start() ran in (None: not started): its threads live there only
        self._start_lock = threading.Lock()
        self._closed = threading.Event()  # set once close() has done its work
        self.registry = SessionRegistry(config, self.history, clock=clock, timer_factory=timer_factory,
                                        final_save=self.recorder.final_save, on_change=lambda: self.warm_pool.refill(),
                                        secrets=self.secrets)
        self.session_memory = SessionMemory(config, self.registry)
        self.files = FileKeeper(config, self.history, self._executor, self.registry.ids)
        self.memory = MemoryGuard(config.max_memory_mb)
        # The sessions' logs and the server's, as MCP resources.
        self._server_log = ServerLog(lambda sid: getattr(self.registry.open_record(sid), "owner", None))
        log.addHandler(self._server_log)
        self.resources = ResourceHub(self.registry, resources.RESOURCES, self._server_log)
        self.registry.on_ended = self.resources.session_ended
        self._opener = opener or SessionOpener(
            config, self._connect, self.user.ask_about_domain, self.user.hand_over,
            quiet_budget=self._quiet_budget)
        self.warm_pool = WarmPool(config, self.registry, self.supervisor, self.memory,
                                  self._executor, self._opener, self.policy, timer_factory=timer_factory)
        # A session-less tool's handler gets the parts it reads and calls, never this Browser (its close, its client).
        tools_see = ToolContext(config, self.groups, self.history, self.recorder, self.registry, self.warm_pool,
                                self.session_memory, self.supervisor, self.memory, self.submit)
        self.dispatcher = Dispatcher(config, self.tools, self.registry, self.recorder, self.user,
                                     self._executor, tools_see, self.files)
        self._watchdog = (Watchdog(self.registry, self.history, self._opener, self.warm_pool.options,
                                   self.supervisor.stopping) if config.watchdog_grace else None)
        self._download_watch = (DownloadWatch(artifact_roots, self._wake_sessions, self.supervisor.stopping)
                                if config.max_download_mb else None)

    # -- ANY THREAD: lifecycle -------------------------------------------------

    @property
    def client(self) -> ServerClient | None:
        """The MCP connection that asks the person and hears notices (a transport sets it), or None."""
        return self.user.client

    @client.setter
    def client(self, connection: ServerClient | None) -> None:
        self.user.client = connection

    @property
    def cooldown(self):
        return self.user.cooldown

    def start(self) -> "Browser":
        """Start the shared browser in the background; calls wait for it only when they need it."""
        with self._start_lock:
            if self.registry.closed or self._pid is not None:
                return self
            self._pid = os.getpid()
        # An embedder that exits without close() would leave the browser's runtime folder (downloads, traces) in /tmp.
        atexit.register(self.close)
        self.supervisor.start()
        if self._watchdog is not None:
            self._watchdog.start()
        if self._download_watch is not None:
            self._download_watch.start()
        self.warm_pool.refill()
        self._executor.submit(self._tidy_files)
        return self

    def close(self) -> None:
        """Close every session, then the browser. Idempotent; nothing in a forked child (see forked())."""
        if self.forked():  # the browser, the sessions and their threads are the parent's to close
            return
        workers = self.registry.close_all()
        if workers is None:
            # Another thread is closing: return once it is done, not while the browser and its files are there.
            self._closed.wait(CLOSE_WAIT_S)
            return
        try:
            self._shut_down(workers)
        finally:
            self._closed.set()

    def _shut_down(self, workers: list[Any]) -> None:
        """The first close() caller's thread: stop the sessions, the pool, the browser, the store."""
        atexit.unregister(self.close)
        workers += self.warm_pool.drain()
        self.user.cooldown.cancel_all()
        shutting_down = ServerStopping()
        for worker in workers:
            worker.stop(shutting_down)
        deadline = time.monotonic() + SHUTDOWN_BUDGET_S
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        # A pool refill may be opening a session right now: let it finish and close it, within the budget.
        self._executor.shutdown(wait=False, cancel_futures=True)
        drained = threading.Thread(target=self._executor.shutdown, name="core-drain", daemon=True)
        try:
            drained.start()
            drained.join(max(0.0, deadline - time.monotonic()))
        except RuntimeError:  # Python 3.12.0-1 at exit (our atexit hook) starts no thread: the exit joined the pool
            pass
        self.supervisor.stop(shutting_down)
        # A call still running fails now that its browser is gone: let its answer and rows out before the exit.
        deadline = time.monotonic() + STOPPED_ANSWER_S
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        self.store.close()
        log.info("core closed", extra={"event": "core_closed", "workers": len(workers)})
        log.removeHandler(self._server_log)

    def forked(self) -> bool:
        """Whether this process is a fork of the one start() ran in (a prefork WSGI server's worker)."""
        return self._pid is not None and self._pid != os.getpid()

    def __enter__(self) -> "Browser":
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- ANY THREAD: tools -----------------------------------------------------

    def submit(self, name: str, args: Any = None,
               progress: Callable[[float, float | None, str | None], None] | None = None,
               caller: Caller | None = None) -> Future:
        """Validate, record and dispatch one tool call; a Future of its result dict, or of its error (a
        BrowserServerError). Raises UnknownTool (INVALID_PARAMETERS) at once for a name that is no tool's.
        caller: the live view's person; None is the library, whose progress(done, total, message) hears how it goes."""
        return answer.library_future(self.call_tool(name, args, caller or Embedder(lambda: self.user.client, progress)))

    def call_tool(self, name: str, args: Any, caller: Caller) -> Future:
        if self.forked():
            failed: Future = Future()
            failed.set_exception(BrowserError(
                f"This Browser was started in process {self._pid}, and this process is a fork of it, where its "
                "threads did not follow: start the Browser in the process that calls it (after the fork; "
                "gunicorn without --preload, uWSGI with lazy-apps)."))
            return failed
        return self.dispatcher.dispatch(name, args, caller)

    # -- ANY THREAD: the face's verbs (core/face.py says what each does), for the transports and the view ----

    def list_tools(self, owner: str | None) -> tuple[list[Any], Any, bool, bool]:
        tools, groups = self.groups.listed(owner)
        several = len(self.registry.open_ids(owner)) > 1
        return tools, groups, self.groups.is_default(groups) and not several, several

    def owner_of(self, session_id: str) -> str | None:
        return self.registry.owner_of(session_id)

    def sessions(self, owner: str | None) -> list[dict[str, Any]]:
        return self.registry.list_sessions(owner, self.session_memory.probe)

    def session(self, session_id: str) -> dict[str, Any] | None:
        record = self.registry.open_record(session_id)
        if record is None:
            return None
        running = record.worker.running
        tag = running[2] if running is not None else None
        call = tag[0] if isinstance(tag, tuple) and tag else None
        left = self.user.cooldown.remaining_s(session_id, record.owner)
        return {"owner": record.owner, "heldBy": record.worker.held_by, "running": getattr(call, "tool", None),
                "crashed": record.worker.page_crashed, "cooldownS": left,
                "cooldownMessage": self.user.cooldown.message(session_id, record.owner) if left > 0 else None}

    def timeline(self, session_id: str, after: int = 0, newest: bool = False) -> list[dict[str, Any]]:
        return self.history.timeline(session_id, after, newest=newest)

    def stored_page(self, ref_id: str) -> tuple[str | None, Any] | None:
        return self.history.stored_page(ref_id)

    def close_sessions_of(self, owner: str) -> None:
        for record in self.registry.records():
            if record.owner == owner:
                try:
                    self.registry.close_session(record.session_id)
                except Exception:  # closed meanwhile
                    pass

    def announce(self, address: str) -> None:
        self.store.server = address

    @property
    def max_sessions(self) -> int:
        return self.config.max_sessions

    # A person's calls (the live view's): each logged and recorded as theirs, under the limits of every call.
    def take_over(self, session_id: str, person: str, timeout: float) -> dict[str, Any]:
        return {"heldBy": self._as_person(TAKE_OVER.name, session_id, person).result(timeout)["heldBy"]}

    def hand_back(self, session_id: str, person: str, timeout: float) -> dict[str, Any]:
        self._as_person(HAND_BACK.name, session_id, person).result(timeout)
        # The person solved the wall: a cooldown it started ends, as wait_for_user's success ends it.
        self.user.cooldown.finish(session_id, self.registry.owner_of(session_id))
        return {"heldBy": None}

    def act(self, session_id: str, person: str, action: dict[str, Any]) -> Future:
        return self._as_person(PERSON_INPUT.name, session_id, person,
                               {k: v for k, v in action.items() if k != "sessionId"})

    def watch(self, session_id: str, person: str) -> screencast.Cast | None:
        if self.registry.open_record(session_id) is None:
            return None
        cast = screencast.cast_of(session_id)
        self._as_person(WATCH.name, session_id, person).add_done_callback(lambda f: _end_if_failed(f, cast))
        return cast

    def _as_person(self, tool: str, session_id: str, person: str, args: dict[str, Any] | None = None) -> Future:
        named = {} if tool == PERSON_INPUT.name else {"person": person}
        return self.submit(tool, {**(args or {}), **named, "sessionId": session_id},
                           caller=Person(person, self.registry.owner_of(session_id)))

    def call(self, name: str, args: Any = None) -> dict[str, Any]:
        """Run one tool call and return its result dict; raises BrowserServerError."""
        return self.submit(name, args).result()

    def create_session(self, url: str | None = None, allowed_domains: list[str] | None = None,
                       storage_state: str | None = None, device: str | None = None,
                       viewport: dict[str, int] | None = None, user_agent: str | None = None,
                       locale: str | None = None, timezone_id: str | None = None,
                       geolocation: dict[str, float] | None = None,
                       color_scheme: Literal["light", "dark", "no-preference"] | None = None,
                       device_scale_factor: float | None = None, is_mobile: bool | None = None,
                       has_touch: bool | None = None, throttle: dict[str, Any] | None = None) -> Session:
        """Open a session (and, with url, a page in it); a `Session` handle on it. A url that fails to load raises
        nothing: its error is in `session.created["navigationError"]`.

        storage_state: a login saved with save_state; the rest emulate a device, as create_session's schema says;
        throttle: {"cpuRate": 4, "network": "Slow 3G", ...}, as Session.throttle takes it."""
        result = self.call("create_session", arguments(locals()))
        return Session(self, result["sessionId"], result["expiresAt"], result)

    def save_state(self, session_id: str, name: str) -> dict[str, Any]:
        """Save a session's cookies and storages under a name, sealed; {name, cookies, domains, savedAt}."""
        return self.call("save_state", {"sessionId": session_id, "name": name})

    def saved_states(self, delete: str | None = None) -> dict[str, Any]:
        """{states: [{name, cookies, domains, savedAt}], count}; delete: forget that one first."""
        return self.call("saved_states", arguments(locals()))

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

    def compare_performance(self, ref_id: str, baseline: str | None = None) -> dict[str, Any]:
        """What moved between two measure_performance runs, or two measure_memory runs (baseline: by default the
        last earlier one of the same URL); {baseline, summary}."""
        return self.call("compare_performance", arguments(locals(), spell=str))

    def export_script(self, session_id: str, storage_state_path: str | None = None) -> dict[str, Any]:
        """Write a session's page actions as a pytest test under the output directory; {path, steps, secrets, message}.
        storage_state_path: the storage state file the test logs in with, for a session begun from a saved login."""
        return self.call("export_script", {"sessionId": session_id,
                                           **arguments({"storage_state_path": storage_state_path})})

    def session_ids(self) -> set[str]:
        return self.registry.ids()

    def policy(self, session_allowed: list[str] | None = None) -> DomainPolicy:
        """The domain policy of a session: the server's, narrowed by the session's allowedDomains."""
        c = self.config
        return DomainPolicy(c.allowed_domains, c.blocked_domains, c.url_schemes, session_allowed,
                            block_private=c.block_private_networks)

    # -- wiring --------------------------------------------------------------------

    def _tidy_files(self) -> None:
        """CORE POOL: start-up's care of the files folder: what a killed server left, then the limits."""
        try:
            self.files.remove_leftovers()
            self.files.warn_foreign()
            self.files.sweep()
        except Exception:
            log.exception("files folder not tidied")

    def _connect(self, worker: Any) -> tuple[Any, Any, Any, bool]:
        """SESSION THREAD: the opener's way to the shared browser, started on first use."""
        self.start()
        return self.supervisor.attach(worker)

    def _wake_sessions(self) -> None:
        """The download watch's (its thread): each open session dispatches what the browser sent, a download's start."""
        for record in self.registry.records():
            record.worker.submit(lambda state: state.flush_events())

    def _quiet_budget(self, session_id: str) -> tuple[Any, Any]:
        """The watchdog's budget for a session's idle garbage collection; its tag names no call (see watchdog)."""
        budget = self.dispatcher.budget_s({})
        return budget, (None, budget)

    # BROWSER-SUPERVISOR THREAD
    def _browser_lost(self, cause: str, generation: int) -> None:
        """The shared browser died: its sessions and pooled workers go; a restart will follow."""
        lost = self.registry.take_generation(generation)
        idle = self.warm_pool.drain()
        log.error("browser crashed", extra={"event": "browser_crashed", "cause": cause, "sessions_lost": len(lost)})
        self.user.notify("error", {"event": "browser_crashed", "cause": cause, "sessionsLost": len(lost)})
        self.registry.drop_lost(lost)
        for worker in idle:
            worker.stop()

    # BROWSER-SUPERVISOR THREAD
    def _browser_restarted(self, cause: str | None) -> None:
        self.user.notify("notice", {"event": "browser_restarted", "cause": cause})
        self.warm_pool.refill()


def _end_if_failed(started: Future, cast: screencast.Cast) -> None:
    """A picture whose start failed (the session closed, a limit) ends: its viewers' streams end with it."""
    if started.cancelled() or started.exception() is not None:
        cast.end()
