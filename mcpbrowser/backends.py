"""The kinds of remote browser a session may run on, a class each, chosen by kind in one place (`BACKENDS`).

Each says which URLs it takes (config.py checks --ws-endpoint, --cdp-endpoint and
--selenium-grid with it: any thread), how its endpoint is probed (core/fleet.py's
watcher threads), and how a session reaches its browser, in which the session then
opens its context (session/attach.py, on the SESSION THREAD, with its own Playwright).
Our own browser behind its browser server is no remote kind: attach.py reaches it."""

import json
from typing import Any

CONNECT_TIMEOUT_MS = 15_000  # a remote endpoint that has not answered in this long is taken as down
GRID_LAUNCH_TIMEOUT_MS = 55_000  # a Grid may queue a new session until a node slot frees (a session opens in 60 s)


class Backend:
    """A kind of remote endpoint: the URLs it takes, its probe, and how a session reaches its browser."""

    kind = ""
    schemes: tuple[str, ...] = ()

    def probe_path(self, path: str) -> str:
        """The HTTP path its probe asks (the endpoint URL's path given), on a fleet watcher thread."""
        return path or "/"

    def probe_fault(self, status: int, body: bytes) -> str | None:
        """Why the probe's answer says the endpoint is not usable, or None: any answer will do."""
        return None

    def driver_env(self, config: Any, endpoint: Any) -> dict[str, str] | None:
        """The variables the session's own Playwright driver needs to reach it, or None (no driver of its own)."""
        return None

    def connect(self, playwright: Any, config: Any, endpoint: Any, headless: bool) -> Any:
        """SESSION THREAD: the browser this session opens its context in."""
        raise NotImplementedError


class BrowserServer(Backend):
    """A Playwright browser server (`launchServer`'s ws:// endpoint): --ws-endpoint."""

    kind = "ws"
    schemes = ("ws", "wss")

    def connect(self, playwright, config, endpoint, headless):
        return getattr(playwright, config.browser).connect(endpoint.url, headers=dict(endpoint.headers) or None,
                                                           timeout=CONNECT_TIMEOUT_MS)


class CdpBrowser(Backend):
    """A Chromium's DevTools endpoint: --cdp-endpoint."""

    kind = "cdp"
    schemes = ("http", "https", "ws", "wss")

    def probe_path(self, path):
        return "/json/version"

    def probe_fault(self, status, body):
        return None if status == 200 else f"HTTP {status} from /json/version"

    def connect(self, playwright, config, endpoint, headless):
        # CDP shows every context of the browser to every client: with other clients on
        # the same browser, their drivers can dismiss our dialogs. --ws-endpoint has no such gap.
        return playwright.chromium.connect_over_cdp(endpoint.url, headers=dict(endpoint.headers) or None,
                                                    timeout=CONNECT_TIMEOUT_MS)


class SeleniumGrid(Backend):
    """A Selenium Grid, which starts a Chrome per session: --selenium-grid."""

    kind = "grid"
    schemes = ("http", "https")

    def probe_path(self, path):
        return path.rstrip("/") + "/status"

    def probe_fault(self, status, body):
        try:
            ready = json.loads(body)["value"]["ready"]
        except (ValueError, KeyError, TypeError):
            return f"HTTP {status}: not a Selenium Grid status"
        return None if ready else "the Grid says it is not ready"

    def driver_env(self, config, endpoint):
        """The variables Playwright's Selenium support reads in the driver: the Grid, its capabilities and headers."""
        env = {"SELENIUM_REMOTE_URL": endpoint.url}
        if config.selenium_capabilities:
            env["SELENIUM_REMOTE_CAPABILITIES"] = json.dumps(config.selenium_capabilities)
        if endpoint.headers:
            env["SELENIUM_REMOTE_HEADERS"] = json.dumps(dict(endpoint.headers))
        return env

    def connect(self, playwright, config, endpoint, headless):
        # Playwright asks the Grid for a Chrome session and drives it over the Grid's CDP
        # proxy (se:cdp); closing the browser ends the Grid session.
        return playwright.chromium.launch(headless=headless, timeout=GRID_LAUNCH_TIMEOUT_MS)


BACKENDS: dict[str, Backend] = {backend.kind: backend for backend in (BrowserServer(), CdpBrowser(), SeleniumGrid())}
