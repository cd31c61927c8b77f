"""Opening a session on its own thread: Playwright, a context behind the session's policy proxy, a page.

SESSION THREAD ONLY: `SessionOpener.__call__` is the `opener` a SessionWorker runs
first on its new thread; everything it creates stays on that thread.
"""

from collections.abc import Callable
from typing import Any

from mcpbrowser.config import Config
from mcpbrowser.errors import InvalidParameters
from mcpbrowser.logs import log
from mcpbrowser.session import page_reading, page_watch, playwright_internals, throttling
from mcpbrowser.session.network_policy import ICE_NAMES_GUARD
from mcpbrowser.session.state import SessionState


class SessionOpener:
    """Builds a session's SessionState on its thread.

    connect(worker) -> (manager, playwright, browser, driven) attaches to the shared browser; ask_user(session_id, host,
    call) and tell_user(session_id, message, call) reach the person (call: the session's running call, whose caller is
    asked); quiet_budget(session_id) is the watchdog's (budget_s, tag) for the idle garbage collection.
    """

    def __init__(self, config: Config, connect: Callable[[Any], tuple[Any, Any, Any, bool]],
                 ask_user: Callable[[str, str, Any], None], tell_user: Callable[[str, str, Any], None],
                 quiet_budget: Callable[[str], tuple[Any, Any]]) -> None:
        self.config = config
        self._connect, self._ask_user, self._tell_user = connect, ask_user, tell_user
        self._quiet_budget = quiet_budget

    def __call__(self, worker: Any) -> SessionState:
        options = worker.options
        proxy = options.get("proxy")
        try:
            manager, playwright, browser, driven = self._connect(worker)
        except BaseException:
            if proxy is not None:
                proxy.close()
            raise
        worker.driver_pid = _driver_pid(manager)
        try:
            emulation = options.get("emulation") or {}
            watching = page_watch.register(playwright)  # before the context: it gets the engine
            try:
                context = browser.new_context(storage_state=options.get("storage_state"),
                                              proxy=proxy.settings if proxy is not None else None,
                                              accept_downloads=True, **context_options(playwright, emulation))
                context.set_default_timeout(self.config.action_timeout)
                context.set_default_navigation_timeout(self.config.navigation_timeout)
                page = context.new_page()
            except Exception as exc:
                refused = _emulation_error(exc, emulation)
                if refused is None:
                    raise
                raise refused from None
            state = SessionState(worker, self.config, playwright, browser, context, page)
            state.disconnect_at_close = driven
            state.watching = watching
            state.network_policy.policy, state.network_policy.proxy = options["policy"], proxy
            state.network_policy.ask_user = lambda session_id, host: self._ask_user(session_id, host, state.caller)
            state.tell_user = lambda message: self._tell_user(worker.session_id, message, state.caller)
            state.listen()
            if options.get("ice_by_ip"):
                context.add_init_script(script=ICE_NAMES_GUARD)  # the browser resolves names itself (warm_pool)
            if state.chromium:
                state.tab.cdp()  # for navigate's title (see loaded_title)
            if options.get("throttle"):
                throttling.change(state, options["throttle"])
            if self.config.idle_gc:
                worker.quiet_hook = page_reading.collect_garbage
                worker.quiet_after_s = self.config.idle_gc / 1000
                worker.quiet_budget = self._quiet_budget(worker.session_id)
            if options.get("url", "about:blank") != "about:blank":
                try:
                    page.goto(options["url"])
                except Exception as exc:  # the session still opens; resume_session's answer says why it is not there
                    worker.options["url_failed"] = str(exc).split("\n", 1)[0]
                    log.warning("resume navigation failed", extra={"session": worker.session_id,
                                                                    "error": str(exc)})
        except BaseException:
            playwright.stop()
            if proxy is not None:
                proxy.close()
            raise
        return state


# create_session's emulation options -> browser.new_context's keyword arguments.
EMULATION = {"viewport": "viewport", "userAgent": "user_agent", "locale": "locale", "timezoneId": "timezone_id",
             "geolocation": "geolocation", "colorScheme": "color_scheme", "deviceScaleFactor": "device_scale_factor",
             "isMobile": "is_mobile", "hasTouch": "has_touch"}


def context_options(playwright: Any, emulation: dict[str, Any]) -> dict[str, Any]:
    """new_context's keyword arguments for a session's emulation: its device's, then its own options over them.
    A geolocation comes with the permission to read it, as a person who shares their location would give it."""
    out: dict[str, Any] = {}
    name = emulation.get("device")
    if name is not None:
        device = playwright.devices.get(name)
        if device is None:
            import difflib  # only on this error path: keeps it off the server's start-up

            near = difflib.get_close_matches(name, list(playwright.devices), n=3, cutoff=0.5)
            raise InvalidParameters(f"arguments.device {name!r} is not a Playwright device"
                                    + (f"; did you mean {', '.join(near)}?" if near else "."),
                                    details={"field": "device", "closeMatches": near})
        out.update({k: v for k, v in device.items() if k != "default_browser_type"})
    for key, keyword in EMULATION.items():
        if key in emulation:
            out[keyword] = emulation[key]
    if "geolocation" in emulation:
        out["permissions"] = ["geolocation"]
    return out


def _emulation_error(exc: Exception, emulation: dict[str, Any]) -> InvalidParameters | None:
    """INVALID_PARAMETERS naming the option the browser refused (a time zone, a locale), else None."""
    if isinstance(exc, InvalidParameters):
        return exc
    text = str(exc).lower().replace("_", "")
    for key in emulation:
        words = {"timezoneId": "timezone", "isMobile": "ismobile", "hasTouch": "touch"}.get(key, key.lower())
        if words in text:
            return InvalidParameters(f"arguments.{key} {emulation[key]!r} was refused by the browser: "
                                     f"{str(exc).splitlines()[0]}", details={"field": key})
    return None


def _driver_pid(manager: Any) -> int | None:
    """The pid of a sync_playwright() driver process (the watchdog frees a thread stuck in a call that never
    returns with it); None if Playwright's internals moved."""
    try:
        return playwright_internals.driver_pid(manager)
    except AttributeError:
        log.warning("cannot find the Playwright driver's pid: a stuck session thread will be abandoned, "
                    "not freed", extra={"event": "driver_pid_unknown"})
        return None
