"""The typed library handle on one session: one method per session tool. Any thread may call it.

Each method sends one tool call through the core, exactly as an MCP client's `tools/call` would (same
validation, guards, history and error codes), and returns the tool's result dict. Parameters are the tools'
own, in snake_case (`wait_until` is `waitUntil`); one left at None is not sent, so the tool's default applies.
tests/test_library_api.py holds these methods to the tool registry: no tool is added without its method."""

import contextlib
from collections.abc import Callable
from typing import Any, Literal

from mcpbrowser.errors import ServerStopping, SessionExpired, SessionLost, SessionNotFound

Result = dict[str, Any]
WaitUntil = Literal["load", "domcontentloaded", "networkidle", "commit"]
Level = Literal["log", "debug", "info", "warning", "error"]


def camel(name: str) -> str:
    """A Python parameter's name as the tool spells it: wait_until -> waitUntil."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def arguments(values: dict[str, Any], spell: Callable[[str], str] = camel) -> dict[str, Any]:
    """A method's locals as tool arguments: names as the tool spells them (camelCase), None left out."""
    return {spell(k): v for k, v in values.items() if k != "self" and v is not None}


class Session:
    """A library handle on one session, from `Browser.create_session()`; a context manager."""

    def __init__(self, browser: Any, session_id: str, expires_at: int, created: Result | None = None) -> None:
        self.browser, self.id, self.expires_at = browser, session_id, expires_at
        self.created = created or {}  # create_session's answer: with url, the page it opened

    def call(self, tool: str, **args: Any) -> Result:
        """Call any session tool by name, with its arguments as the tool spells them."""
        result = self.browser.call(tool, {"sessionId": self.id, **args})
        self.expires_at = result.get("expiresAt", self.expires_at)
        return result

    def _send(self, tool: str, values: dict[str, Any]) -> Result:
        return self.call(tool, **arguments(values))

    # -- navigation --------------------------------------------------------------

    def navigate(self, url: str, wait_until: WaitUntil | None = None, timeout: int | None = None) -> Result:
        """Load a URL in the current tab; {success, title, url, status}."""
        return self._send("navigate", locals())

    def go_back(self, wait_until: WaitUntil | None = None, timeout: int | None = None) -> Result:
        """Go to the previous page of the current tab; {success, title, url, status}."""
        return self._send("go_back", locals())

    def go_forward(self, wait_until: WaitUntil | None = None, timeout: int | None = None) -> Result:
        """Go to the next page of the current tab; {success, title, url, status}."""
        return self._send("go_forward", locals())

    def reload(self, wait_until: WaitUntil | None = None, timeout: int | None = None) -> Result:
        """Reload the current tab; {success, title, url, status}."""
        return self._send("reload", locals())

    def tabs(self, action: Literal["list", "select", "close"] | None = None, index: int | None = None) -> Result:
        """List, select or close tabs; {tabs: [{index, url, title, current}], current}."""
        return self._send("tabs", locals())

    def wait_for(self, selector: str | None = None, ref: str | None = None,
                 state: Literal["attached", "detached", "visible", "hidden"] | None = None,
                 text: str | None = None, text_gone: str | None = None, url: str | None = None,
                 network_idle: bool | None = None, download: bool | None = None,
                 timeout: int | None = None) -> Result:
        """Wait for an element's state, a text to appear or to go, a URL, network idle, or a download to end;
        {success, message, elapsedMs}."""
        return self._send("wait_for", locals())

    def wait_for_user(self, message: str, timeout: int, url_contains: str | None = None,
                      selector: str | None = None, ref: str | None = None) -> Result:
        """Ask the person at the browser to finish something; waits for the URL or element that shows it."""
        return self._send("wait_for_user", locals())

    # -- acting on elements --------------------------------------------------------

    def click(self, selector: str | None = None, ref: str | None = None, timeout: int | None = None,
              force: bool | None = None, click_count: int | None = None) -> Result:
        """Click an element; {success, message, url, title, navigated}."""
        return self._send("click", locals())

    # text is required by the tool; its default None only lets a ref come without a selector.
    def type(self, selector: str | None = None, text: str | None = None, ref: str | None = None,
             delay: int | None = None, timeout: int | None = None, clear: bool | None = None,
             secret: bool | None = None, submit: bool | None = None, secret_name: str | None = None) -> Result:
        """Type into a field (replacing its text unless clear=False; Enter after with submit); secret_name types a
        server secret (Config.secrets) by its name instead of text."""
        return self._send("type", locals())

    def select(self, selector: str | None = None, ref: str | None = None,
               values: list[str] | None = None, labels: list[str] | None = None,
               timeout: int | None = None) -> Result:
        """Choose options of a <select> by value or label; {success, message, selected, …}."""
        return self._send("select", locals())

    def hover(self, selector: str | None = None, ref: str | None = None, timeout: int | None = None,
              force: bool | None = None) -> Result:
        """Move the mouse over an element."""
        return self._send("hover", locals())

    def press_key(self, key: str, selector: str | None = None, ref: str | None = None,
                  timeout: int | None = None) -> Result:
        """Press a key or chord (Enter, Control+a) on an element, or on the page."""
        return self._send("press_key", locals())

    def upload_file(self, selector: str | None = None, paths: list[str] | None = None,
                    ref: str | None = None, timeout: int | None = None) -> Result:
        """Set files (under --upload-dir) on a file input."""
        return self._send("upload_file", locals())

    def handle_dialog(self, accept: bool, prompt_text: str | None = None) -> Result:
        """Accept or dismiss the current tab's open alert, confirm or prompt (or the only one open in another tab)."""
        return self._send("handle_dialog", locals())

    def evaluate(self, expression: str) -> Result:
        """Evaluate JavaScript in the page (only with --allow-evaluate); {result, …}."""
        return self._send("evaluate", locals())

    def drag(self, source: dict[str, str], target: dict[str, str], timeout: int | None = None) -> Result:
        """Drag one element onto another; each given as {"selector": ...} or {"ref": ...}."""
        return self._send("drag", locals())

    def fill_form(self, fields: list[dict[str, Any]], timeout: int | None = None) -> Result:
        """Fill several fields: [{"selector" or "ref", "value": str or bool (or "secretName": a server secret's
        name), "secret": bool}]."""
        return self._send("fill_form", locals())

    def mouse(self, action: Literal["click", "move", "down", "up", "wheel"], x: float | None = None,
              y: float | None = None, button: Literal["left", "right", "middle"] | None = None,
              click_count: int | None = None, delta_x: float | None = None,
              delta_y: float | None = None) -> Result:
        """The mouse at viewport coordinates (only with --caps vision)."""
        return self._send("mouse", locals())

    def resize(self, width: int, height: int) -> Result:
        """Set the viewport's size in CSS pixels."""
        return self._send("resize", locals())

    def throttle(self, cpu_rate: float | None = None,
                 network: Literal["none", "offline", "Slow 3G", "Fast 3G", "Slow 4G", "Fast 4G"] | None = None,
                 latency_ms: float | None = None, download_kbps: float | None = None,
                 upload_kbps: float | None = None) -> Result:
        """Slow the session's tabs down as Chrome DevTools does (Chromium only); {throttle}: what holds now."""
        return self._send("throttle", locals())

    def measure_performance(self, url: str | None = None, load: bool | None = None, selector: str | None = None,
                            ref: str | None = None, key: str | None = None, runs: int | None = None,
                            timeout: int | None = None) -> Result:
        """Load the page (url, else a reload) and measure LCP, CLS, FCP, TTFB and TBT with their causes, and
        INP of a click (selector, ref) or key; {url, summary}; its detail is get_content(refId)'s."""
        return self._send("measure_performance", locals())

    def measure_memory(self, selector: str | None = None, ref: str | None = None, key: str | None = None,
                       repeat: int | None = None, timeout: int | None = None) -> Result:
        """Repeat a click (selector, ref) or key and name what the page's heap kept each time, with what holds
        it; {url, summary}; its detail is get_content(refId)'s."""
        return self._send("measure_memory", locals())

    def route(self, url: str | None = None, status: int | None = None, headers: dict[str, str] | None = None,
              body: str | None = None, abort: bool | None = None,
              request_headers: dict[str, str | None] | None = None) -> Result:
        """Answer, abort, or send on with changed request headers the requests matching url (a glob); {routes}: the
        session's routes (all of them, without url)."""
        return self._send("route", locals())

    def cookies(self, action: Literal["list", "set", "delete"] | None = None, name: str | None = None,
                value: str | None = None, domain: str | None = None, path: str | None = None, url: str | None = None,
                expires: float | None = None, http_only: bool | None = None, secure: bool | None = None,
                same_site: Literal["Strict", "Lax", "None"] | None = None) -> Result:
        """List (filtered by name, domain, path), set or delete the session's cookies; a secret one's value
        masked unless named; {cookies, count}, {set} or {deleted}."""
        return self._send("cookies", locals())

    def storage(self, action: Literal["list", "set", "delete"] | None = None,
                kind: Literal["local", "session"] | None = None, name: str | None = None,
                value: str | None = None) -> Result:
        """List, set or delete localStorage (kind session: sessionStorage) entries of the current page's origin;
        {entries, count, kind, origin}, {set} or {deleted}."""
        return self._send("storage", locals())

    def page_tools(self, name: str | None = None, input: dict[str, Any] | None = None, frame: str | None = None,
                   timeout: int | None = None, secret_names: dict[str, str] | None = None) -> Result:
        """The page's own tools (WebMCP): {tools, count} without name; with name, call one (input, frame: the
        origin of the frame that offers it) as an action: {tool, url, untrustedResult}; secret_names: {input
        field: a server secret's name}."""
        return self._send("page_tools", locals())

    def unroute(self, url: str | None = None) -> Result:
        """Remove the route of url, or all; {removed, routes}."""
        return self._send("unroute", locals())

    # -- reading -----------------------------------------------------------------

    def snapshot(self, selector: str | None = None, ref: str | None = None, query: str | None = None,
                 section: str | None = None, compact: bool | None = None, depth: int | None = None,
                 max_nodes: int | None = None, timeout: int | None = None) -> Result:
        """The accessibility tree as YAML with refs, whole or narrowed (query, section, compact, depth)."""
        return self._send("snapshot", locals())

    def dom_snapshot(self, selector: str | None = None, ref: str | None = None,
                     max_nodes: int | None = None, timeout: int | None = None) -> Result:
        """The DOM as indented HTML; {html, nodes, totalNodes, truncated, url}."""
        return self._send("dom_snapshot", locals())

    def screenshot(self, selector: str | None = None, ref: str | None = None,
                   format: Literal["png", "jpeg"] | None = None, quality: int | None = None,
                   full_page: bool | None = None, timeout: int | None = None) -> Result:
        """A screenshot; the image bytes are under "image"."""
        return self._send("screenshot", locals())

    def pdf(self, landscape: bool | None = None, print_background: bool | None = None) -> Result:
        """Print the page to a PDF file on the server (only with --caps pdf); {path, bytes}."""
        return self._send("pdf", locals())

    def trace_start(self, screenshots: bool | None = None, snapshots: bool | None = None,
                    sources: bool | None = None) -> Result:
        """Start recording a Playwright trace (only with --caps tracing)."""
        return self._send("trace_start", locals())

    def trace_stop(self) -> Result:
        """Stop the trace and save it for `playwright show-trace`; {path, bytes}."""
        return self._send("trace_stop", locals())

    def console_logs(self, level: Level | None = None, limit: int | None = None, since: int | None = None,
                     locations: bool | None = None) -> Result:
        """Console messages and page errors of the session."""
        return self._send("console_logs", locals())

    def network_logs(self, limit: int | None = None, url_contains: str | None = None,
                     method: str | None = None, status: int | None = None, failed: bool | None = None,
                     resource_type: list[str] | None = None, include_static: bool | None = None,
                     headers: bool | None = None, all_pages: bool | None = None) -> Result:
        """The current page's requests (all_pages: the session's), lean unless asked."""
        return self._send("network_logs", locals())

    def downloads(self) -> Result:
        """{downloads: [{name, size, mimeType, url, path, status}], count} of this session."""
        return self._send("downloads", locals())

    # -- lifetime ------------------------------------------------------------------

    def close(self) -> None:
        """Close the session; closing it again, or after it expired, was lost or the browser closed, does nothing."""
        with contextlib.suppress(SessionNotFound, SessionExpired, SessionLost, ServerStopping):
            self.browser.close_session(self.id)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()
