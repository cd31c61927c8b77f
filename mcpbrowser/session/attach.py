"""Attaching a session thread's Playwright to the shared browser (ours, or a remote one).

SESSION THREAD ONLY: `attach` returns a Playwright Browser bound to the calling thread. Sessions of our own browser do
not run Playwright's Node.js driver: each session's sync_playwright() starts children/pipe_relay.py in its place, to the
launcher's Unix socket. Playwright has no option for that, so `driver_hook` swaps the functions its pipe transport asks
for the driver's command line and environment, for the calling thread only (a Selenium Grid session's driver gets its
SELENIUM_REMOTE_* variables the same way); remote browsers, and a Playwright where that function moved, keep the real
driver. Every message any session's Playwright receives passes through `_valid_received` (`text_hook`).
"""

import json
import os
import threading

from mcpbrowser.config import RemoteEndpoint
from mcpbrowser.errors import BrowserError
from mcpbrowser.logs import log
from mcpbrowser.page_strings import valid_text
from mcpbrowser.session import playwright_internals

# For the next driver this thread starts: .command, (relay script, socket path); .env, variables to add.
_relay = threading.local()
_hook_lock = threading.Lock()
_hooked: dict[str, bool] = {}  # a hook, by the event its failure logs -> whether it is in


def _hook_once(event, install, warning):
    """Install a hook into Playwright once for the process; whether it is in (False: Playwright moved its target)."""
    with _hook_lock:
        if event not in _hooked:
            try:
                install()
            except (ImportError, AttributeError):
                log.warning(warning, extra={"event": event})
                _hooked[event] = False
            else:
                _hooked[event] = True
        return _hooked[event]


def driver_hook():
    """Let threads choose their next driver's command and environment; False if Playwright moved the functions."""
    return _hook_once("relay_unavailable", lambda: playwright_internals.hook_driver(
        lambda: getattr(_relay, "command", None), lambda: getattr(_relay, "env", None)),
        "cannot start sessions through the pipe relay in this Playwright: each session runs its own Node.js driver")


def _valid_received(raw, message):
    """A message from the browser with its lone surrogates replaced (U+FFFD): see page_strings.valid_text."""
    # Node's JSON.stringify writes a lone surrogate as an escape (lowercase "\udXXX") and every other character
    # as it is, so a message without that escape has none: the walk costs only the pages that write one. The
    # backslash's search, much the cheaper, answers alone for a screenshot's base64.
    slash, marker = (b"\\", b"\\ud") if isinstance(raw, bytes) else ("\\", "\\ud")
    return valid_text(message) if slash in raw and marker in raw else message


def text_hook():
    """Make what every session's Playwright receives valid text, once; False if Playwright moved the method."""
    # Without it, the answers' and the history's own defences (protocol.encode, the store) still hold.
    return _hook_once("text_hook", lambda: playwright_internals.hook_received(_valid_received),
                      "cannot clean page text as it arrives in this Playwright")


def attach(config, endpoint, headless=True):
    """Start this session thread's Playwright and reach the browser: ours, or a remote endpoint's.

    endpoint: our browser server's Endpoint, or a RemoteEndpoint; headless: how a Grid starts its browser (decided once,
    by the supervisor). Returns (manager, playwright, browser, driven); the manager is sync_playwright()'s, for its
    driver pid. driven: the browser is reached through a Node.js driver of this thread's own (a remote browser, or no
    relay), whose connection the session must close itself.
    """
    from playwright.sync_api import sync_playwright

    text_hook()
    remote = isinstance(endpoint, RemoteEndpoint)
    piped = not remote and bool(endpoint.pipe) and driver_hook()
    env = endpoint.backend.driver_env(config, endpoint) if remote else None
    if env is not None and not driver_hook():
        raise BrowserError("This Playwright cannot start a driver for a Selenium Grid session alone; "
                           "upgrade mcpbrowser or use --ws-endpoint.")
    manager = sync_playwright()
    _relay.command = (endpoint.relay, endpoint.pipe) if piped else None
    _relay.env = env
    try:
        playwright = manager.start()
    finally:
        _relay.command = _relay.env = None
    try:
        if piped:
            _read_late_transport_error(manager)
            # The server treats a relayed client as remote (it refuses local file paths, so
            # uploads must send the files' bytes), as connect() marks its connection.
            playwright_internals.mark_as_remote(playwright)
            # The browser server hands each connection the browser it serves, as it does to connect().
            browser = playwright_internals.pre_launched_browser(playwright)
            if not playwright.devices:
                playwright.devices.update(launcher_devices(os.path.dirname(endpoint.pipe)))
        elif remote:
            browser = endpoint.backend.connect(playwright, config, endpoint, headless)
        else:
            browser = getattr(playwright, config.browser).connect(endpoint.ws)
    except BaseException:
        playwright.stop()
        raise
    return manager, playwright, browser, not piped


_devices: dict[str, dict] = {}  # runtime dir -> device descriptors, read once (the file never changes)


def launcher_devices(runtime_dir):
    """Playwright's device descriptors as the launcher wrote them, spelled as sync_api's `devices` are.

    A relayed client gets none from the browser server; {} if the launcher could not write them.
    """
    found = _devices.get(runtime_dir)
    if found is None:
        try:
            with open(os.path.join(runtime_dir, "devices.json")) as f:
                raw = json.load(f)
        except (OSError, ValueError):
            return {}
        snake = {"userAgent": "user_agent", "deviceScaleFactor": "device_scale_factor", "isMobile": "is_mobile",
                 "hasTouch": "has_touch", "defaultBrowserType": "default_browser_type"}
        found = _devices[runtime_dir] = {name: {snake.get(k, k): v for k, v in d.items()} for name, d in raw.items()}
    return found


def _read_late_transport_error(manager):
    """Mark the transport's error as read, so a relay that exits does not make asyncio complain.

    A relay ends with its browser (a crash, or the server stopping it), unlike a Node.js driver; the transport then
    fails a Future that only its start-up awaited, and asyncio would print "Future exception was never retrieved" on
    stderr for every such session. The session learns of the loss on its next call.
    """
    try:
        future = playwright_internals.transport_error_future(manager)
    except AttributeError:
        return
    future.add_done_callback(lambda done: done.cancelled() or done.exception())
