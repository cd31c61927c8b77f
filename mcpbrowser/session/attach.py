"""Attaching a session thread's Playwright to the shared browser (ours, or a remote one).

SESSION THREAD ONLY: `attach` returns a Playwright Browser bound to the calling
thread. Sessions of our own browser do not run Playwright's Node.js driver: the
launcher takes sessions on a Unix socket, and each session's sync_playwright()
starts children/pipe_relay.py in the driver's place (~65 MB less per session).
Playwright has no option for that, so `relay_hook` swaps the function its pipe
transport asks for the driver's command line, for the calling thread only;
remote browsers, and a Playwright where that function moved, keep the real driver.
"""

import json
import os
import threading

from mcpbrowser.logs import log
from mcpbrowser.session import playwright_internals

_relay = threading.local()  # .command: (relay script, socket path) for the next driver this thread starts
_hook_lock = threading.Lock()
_hooked = None


def relay_hook():
    """Make Playwright start our relay on threads that ask for it; False if Playwright moved the function."""
    global _hooked
    with _hook_lock:
        if _hooked is None:
            try:
                playwright_internals.hook_driver_command(lambda: getattr(_relay, "command", None))
            except (ImportError, AttributeError):
                log.warning("cannot start sessions through the pipe relay in this Playwright: each "
                            "session runs its own Node.js driver", extra={"event": "relay_unavailable"})
                _hooked = False
            else:
                _hooked = True
        return _hooked


def attach(config, endpoint):
    """Start this session thread's Playwright and reach the shared browser (ours or a remote one).

    Returns (manager, playwright, browser, driven); the manager is sync_playwright()'s, for
    its driver pid. driven: the browser is reached through a Node.js driver of this thread's
    own (a remote browser, or no relay), whose connection the session must close itself.
    """
    from playwright.sync_api import sync_playwright

    piped = bool(endpoint.pipe) and relay_hook()
    manager = sync_playwright()
    _relay.command = (endpoint.relay, endpoint.pipe) if piped else None
    try:
        playwright = manager.start()
    finally:
        _relay.command = None
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
        elif config.cdp_endpoint:
            # CDP shows every context of the browser to every client: with other clients on
            # the same browser, their drivers can dismiss our dialogs. --ws-endpoint has no such gap.
            browser = playwright.chromium.connect_over_cdp(config.cdp_endpoint, headers=config.headers() or None)
        else:
            browser = getattr(playwright, config.browser).connect(endpoint.ws, headers=config.headers() or None)
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

    A relay ends with its browser (a crash, or the server stopping it), unlike a
    Node.js driver; the transport then fails a Future that only its start-up
    awaited, and asyncio would print "Future exception was never retrieved" on
    stderr for every such session. The session learns of the loss on its next call.
    """
    try:
        future = playwright_internals.transport_error_future(manager)
    except AttributeError:
        return
    future.add_done_callback(lambda done: done.cancelled() or done.exception())
