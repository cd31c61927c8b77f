"""One session's event buffers: its tabs' console entries and network requests, in bounded rings.

SESSION THREAD: Playwright dispatches these handlers on the session's thread while a call is in progress. Entries are
plain dicts; a request's entry is filled in as its response and end arrive. ANY THREAD: `log_since` and `log_position`,
the numbered logs the log resources read (under their lock), so that a read need not wait for a running call.
"""

import threading
import time
from collections import deque
from collections.abc import Callable
from itertools import count, islice
from typing import Any
from urllib.parse import urlsplit

from mcpbrowser.domains import BLOCKED_HEADER
from mcpbrowser.redaction import redact_headers, scrub_text, scrub_value
from mcpbrowser.session.network_policy import NetworkPolicy
from mcpbrowser.timers import now_ms

BLOCKED_FAILURE = "blocked by the domain policy"

# A flooding page is bounded where its events start (what a flood cost before: docs/reliability.md). The console,
# in the page (every frame, from an init script): a token bucket lets CONSOLE_BURST lines through at once and
# CONSOLE_RATE a second after that, what it drops is said in one warning a second, and a string argument keeps its
# first CONSOLE_CHARS characters. Nothing is defined on the page; the console methods become wrappers, the top of
# every console call's stack, where the browser takes a message's location from: so each passes its caller's
# place as a last argument after WHERE_MARK, which _on_console takes off again.
# The network: Playwright sends a context's request events only while someone listens. A page that makes more than
# NETWORK_BURST requests at once and NETWORK_RATE a second after that (a token bucket) stops being listened to for
# NETWORK_PAUSE_S, said in one entry of the ring; the next call after the pause listens again.
NETWORK_BURST = 300
NETWORK_RATE = 100
NETWORK_PAUSE_S = 1.0
CONSOLE_BURST = 200
CONSOLE_RATE = 50
CONSOLE_CHARS = 10_000
WHERE_MARK = "\u2063@"
CONSOLE_GUARD = """(() => {
  const c = globalThis.console;
  if (!c) return;
  const burst = BURST, rate = RATE, chars = CHARS, mark = 'MARK', own = 'mcpbrowser-console-guard';
  let tokens = burst, last = Date.now(), dropped = 0, pending = false;
  const warn = c.warn, later = globalThis.setTimeout.bind(globalThis);
  const tell = () => {
    pending = false;
    if (dropped) {
      warn.call(c, `[mcpbrowser] dropped ${dropped} console messages: the page logs more than ${rate} a second`, mark);
    }
    dropped = 0;
  };
  const where = () => {
    for (const line of String(new Error().stack).split('\\n').slice(1)) {
      if (line.includes(own)) continue;
      const m = /([^\\s()@]+:\\d+:\\d+)\\)?\\s*$/.exec(line);
      if (m) return m[1];
    }
    return '';
  };
  const cut = a => typeof a === 'string' && a.length > chars
    ? a.slice(0, chars) + `… [${a.length - chars} more characters]` : a;
  for (const name of ['log', 'info', 'warn', 'error', 'debug', 'trace']) {
    const original = c[name];
    if (typeof original !== 'function') continue;
    c[name] = function (...args) {
      const now = Date.now();
      tokens = Math.min(burst, tokens + (now - last) * rate / 1000);
      last = now;
      if (tokens < 1) {
        dropped++;
        if (!pending) { pending = true; later(tell, 1000); }
        return;
      }
      tokens--;
      return original.apply(this, [...args.map(cut), mark + where()]);
    };
  }
})();
//# sourceURL=mcpbrowser-console-guard""".replace("BURST", str(CONSOLE_BURST)).replace("RATE", str(CONSOLE_RATE)) \
    .replace("CHARS", str(CONSOLE_CHARS)).replace("MARK", WHERE_MARK)


def headers_shown(source: Any, sensitive: Any) -> dict[str, str]:
    """A buffered request's (or its response's) headers as they leave: the full ones (cookies included: a round
    trip each, so read only for the entries returned), the values of the `sensitive` names [REDACTED]."""
    try:
        headers = source.all_headers()
    except Exception:
        headers = source.headers
    return redact_headers(headers, sensitive)


def page_shown(url: str, title: str, secrets: Any) -> dict[str, str]:
    """The page a session is on as it leaves for other threads (list_sessions while the session is busy, the log
    resources' titles): without the values of its secret book (a GET form's password in the URL, a title that
    echoes a field; a page may put what is being typed into its URL, key by key)."""
    return scrub_value({"url": url, "title": title}, secrets)


def _newest(buffer: deque, count: int) -> list:
    """The last `count` entries of a ring buffer (fewer when it dropped some)."""
    count = min(count, len(buffer))
    return list(buffer)[len(buffer) - count:] if count else []


class EventBuffers:
    """Console and network rings of the session's tabs, with per-call, per-tab and per-page slices.

    tab_of(page) is the session's Tab of a page: a navigation of its main frame starts the page that
    network_logs shows by default in that tab.
    """

    # An entry is its tab's: the tools show the current tab's, as @playwright/mcp's do, and count the other tabs'.
    # Each is kept with its page's number (key: a Tab's `log_pages`; the log streams read the ring on other threads,
    # so not the Page; a request's page is looked up as it is read, since a popup's first request comes before its
    # page is known), in one ring per session: the buffer flags bound its memory however many tabs a page opens. A
    # closed tab's entries stay until pushed out: the log streams and the history's console of each call are the
    # session's record, every tab's. An entry of no page (a service worker's) is shown in every tab.
    def __init__(self, console_size: int, network_size: int, policy: NetworkPolicy,
                 tab_of: Callable[[Any], Any]) -> None:
        self._policy, self._tab_of = policy, tab_of
        self.console: deque[tuple[Any, dict]] = deque(maxlen=console_size)  # (its page's key or None, entry)
        self.console_dropped = 0
        self._console_total = 0   # console entries ever seen, for per-call slices
        self._console_mark = 0    # ...of which earlier calls already took this many
        self.network: deque[tuple] = deque(maxlen=network_size)  # (entry, Request or None, page's key or None)
        self._keys: dict = {}  # page: its number (key)
        self._numbers = count(1)
        self.network_dropped = 0
        self.network_total = 0    # requests ever seen (a Tab's page_mark: when its page's document was requested)
        self._requests: dict[Any, dict] = {}
        self._context: Any = None
        self._tokens, self._refilled = float(NETWORK_BURST), time.monotonic()
        self.network_paused_at: float | None = None  # monotonic time network events stopped (a flood)
        self.network_pauses = 0
        # Requests in the order they ended (WebSockets as they open): the network log resource's
        # numbering, so that a reader meets each request once, with its status and duration.
        self.finished: deque[dict] = deque(maxlen=network_size)
        self._finished_total = 0
        self._log_lock = threading.Lock()  # the console ring and `finished`, against readers on other threads
        # on_log(name), when set: called on the session thread after an entry joined the "console" or "network" log
        # (resources/watch.py tells its subscribers).
        self.on_log: Callable[[str], None] | None = None
        # Prefixes of a secret being typed key by key (snapshots.typing_key_by_key): scrubbed from each entry as it
        # arrives, until a call starts HIDDEN_FOR_S after the typing ended (state.running).
        self.hidden: tuple[str, ...] = ()
        self.hidden_until = 0.0  # time.monotonic()

    def listen(self, context: Any) -> None:
        context.add_init_script(script=CONSOLE_GUARD)
        context.on("console", self._on_console)
        context.on("weberror", self._on_web_error)
        self._context = context
        self._listen_network(True)

    def _listen_network(self, on: bool) -> None:
        handlers = {"request": self._on_request, "response": self._on_response,
                    "requestfinished": self._on_request_done, "requestfailed": self._on_request_done}
        for event, handler in handlers.items():
            (self._context.on if on else self._context.remove_listener)(event, handler)

    def resume_network(self) -> None:
        """Listen to the network again once a flood's pause is over (the session thread, as a call starts)."""
        if self.network_paused_at is not None and time.monotonic() - self.network_paused_at >= NETWORK_PAUSE_S:
            self.network_paused_at = None
            self._listen_network(True)

    def _flooded(self) -> bool:
        """Take a token for a request; False (and the network not listened to for a while) when there is none."""
        now = time.monotonic()
        self._tokens = min(NETWORK_BURST, self._tokens + (now - self._refilled) * NETWORK_RATE)
        self._refilled = now
        if self._tokens >= 1:
            self._tokens -= 1
            return False
        self.network_paused_at, self.network_pauses = now, self.network_pauses + 1
        self._listen_network(False)
        self._requests.clear()  # their ends will not come: the entries stay as they are
        note = {"method": "", "url": "", "resourceType": "mcpbrowser", "status": None, "durationMs": None,
                "failure": f"[mcpbrowser] the page made over {NETWORK_RATE} requests a second: requests are not "
                           f"logged for {NETWORK_PAUSE_S:g} s, then until the next call", "blocked": False,
                "timestamp": now_ms()}
        self._keep_network(note, None, None)
        self._keep_finished(note)  # the network log resource's readers learn it too
        return True

    def take_console(self) -> list[dict]:
        """Console entries that arrived since the previous call took its share."""
        fresh, self._console_mark = self._console_total - self._console_mark, self._console_total
        return [entry for _, entry in _newest(self.console, fresh)]

    def key(self, page: Any) -> int | None:
        """The page's number in the rings (SESSION THREAD: the Page is never handed to another thread)."""
        if page is None:
            return None
        if page not in self._keys:
            self._keys[page] = next(self._numbers)
        return self._keys[page]

    def console_of(self, tab: Any, shared: bool = True) -> list[dict]:
        """A tab's console entries (with `shared`, those of no page too)."""
        return [entry for page, entry in self.console if page in tab.log_pages or (shared and page is None)]

    def requests_of(self, tab: Any, all_pages: bool, shared: bool = True) -> list[tuple]:
        """A tab's (entry, Request or None): of its current page (since its document was requested), or all its
        pages'; with `shared`, those of no page too."""
        ring = self.network if all_pages else _newest(self.network, self.network_total - tab.page_mark)
        out = []
        for entry, request, page in ring:
            if page is None and request is not None:
                try:
                    page = self.key(request.frame.page)
                except Exception:  # a service worker's: no frame
                    page = None
            if page in tab.log_pages or (shared and page is None):
                out.append((entry, request))
        return out

    def hand_over(self, old: Any, new: Any) -> None:
        """`new` replaces the crashed or trapped tab `old`: what the old page logged stays readable there (what an
        agent reads next, to learn why), and its current page starts now."""
        new.log_pages |= old.log_pages
        new.page_mark = self.network_total

    def log_position(self, name: str) -> int:
        """How many entries the "console" or "network" (ended requests) log has had: the newest one's number."""
        with self._log_lock:
            return self._console_total if name == "console" else self._finished_total

    def log_since(self, name: str, after: int, limit: int, secrets: Any = ()) -> tuple[list[dict], int, int, bool]:
        """(entries, cursor, skipped, more): up to `limit` entries of a log numbered after `after` (1 is the
        first), without the values of the session's secret book (they leave for the log streams), the newest
        one's number, how many were pushed out of the ring before anyone read them, and whether newer ones wait."""
        with self._log_lock:
            ring: deque = self.console if name == "console" else self.finished
            total = self._console_total if name == "console" else self._finished_total
            after = min(max(after, 0), total)
            first = total - len(ring) + 1  # the number of the oldest entry the ring still holds
            start = max(after + 1, first)
            picked = list(islice(ring, start - first, start - first + limit))
        if name == "console":
            picked = [entry for _, entry in picked]
        cursor = start - 1 + len(picked)
        return scrub_value(picked, secrets), cursor, start - (after + 1), cursor < total

    def request_for(self, url: str) -> Any:
        """The newest Request to this URL still in the ring, or None (a download looks up its response)."""
        for entry, request, _ in reversed(self.network):
            if request is not None and entry["url"] == url:
                return request
        return None

    def navigation_pending(self, page: Any) -> bool:
        """A document request of the page's main frame still awaits its answer.

        Until that navigation commits, Chromium runs no script in the page (not even
        through CDP): a read would wait for the server, for as long as it takes.
        """
        for request, entry in list(self._requests.items()):
            if entry["status"] is None and request.is_navigation_request():
                try:
                    frame = request.frame
                except Exception:
                    continue
                if frame.parent_frame is None and frame.page is page:
                    return True
        return False

    def routed(self, request: Any, how: str) -> None:
        """A route of the session's (routes.py) took this request: its entry says how."""
        entry = self._requests.get(request)
        if entry is not None:
            entry["routed"] = how

    def on_websocket(self, ws: Any, page: Any) -> None:
        """The page opened a WebSocket (a page event, so the state subscribes it per page)."""
        entry = {"method": "GET", "url": ws.url, "resourceType": "websocket", "status": None,
                 "durationMs": None, "failure": None, "blocked": False, "timestamp": now_ms()}
        self._keep_network(entry, None, page)

        def closed(_):
            if self._policy.refused(ws.url):
                entry["failure"], entry["blocked"] = BLOCKED_FAILURE, True

        ws.on("close", closed)
        self._keep_finished(entry)

    # -- event handlers ---------------------------------------------------------------

    def _hide(self, entry: dict) -> None:
        for key, value in entry.items():
            if isinstance(value, str):
                entry[key] = scrub_text(value, self.hidden)

    def _keep_console(self, entry: dict, page: Any = None) -> None:
        if self.hidden:
            self._hide(entry)
        with self._log_lock:
            self._console_total += 1
            if len(self.console) == self.console.maxlen:
                self.console_dropped += 1
            self.console.append((self.key(page), entry))
        if self.on_log is not None:
            self.on_log("console")

    def _keep_finished(self, entry: dict) -> None:
        with self._log_lock:
            self._finished_total += 1
            self.finished.append(entry)
        if self.on_log is not None:
            self.on_log("network")

    def _keep_network(self, entry: dict, request: Any, page: Any) -> None:
        if self.hidden:
            self._hide(entry)
        self.network_total += 1
        if len(self.network) == self.network.maxlen:
            self.network_dropped += 1
        self.network.append((entry, request, self.key(page)))

    def _on_console(self, message: Any) -> None:
        loc = message.location or {}
        # Chromium asks a site for /favicon.ico by itself, and logs its 404 as the page's error after
        # the load's answer: the agent's next call then reported a console error the page never made.
        if message.text.startswith("Failed to load resource") and urlsplit(loc.get("url", "")).path == "/favicon.ico":
            return
        # Chromium's own advice to developers ("[DOM] Input elements should have autocomplete attributes" on every
        # login page) comes at the level `verbose`, which no console call of a page has: DevTools hides it, so do we.
        if message.type == "verbose":
            return
        text, where = message.text, f"{loc.get('url', '')}:{loc.get('lineNumber', 0)}:{loc.get('columnNumber', 0)}"
        head, marked, caller = text.rpartition(WHERE_MARK)
        if marked:  # passed through the console guard, which names the caller last
            text, where = head[:-1] if head.endswith(" ") else head, caller
        self._keep_console({"timestamp": int(message.timestamp) if message.timestamp else now_ms(),
                            "level": message.type, "message": text, "location": where}, message.page)

    def _on_web_error(self, web_error: Any) -> None:
        page = web_error.page
        self._keep_console({"timestamp": now_ms(), "level": "error", "message": str(web_error.error),
                            "location": page.url if page is not None else ""}, page)

    def _on_request(self, request: Any) -> None:
        if self._flooded():
            return
        try:
            frame = request.frame
        except Exception:  # a popup's first request comes before its page (requests_of looks it up), a worker's
            frame = None
        if frame is not None and request.is_navigation_request() and frame.parent_frame is None:
            tab = self._tab_of(frame.page)
            if tab is not None:
                tab.document_request = request  # a redirect's next hop too: in flight until it commits or ends
                if request.redirected_from is None:  # a tab made later starts at its first request (page_mark 0)
                    tab.page_mark = self.network_total
        entry = {"method": request.method, "url": request.url, "resourceType": request.resource_type,
                 "status": None, "durationMs": None, "failure": None, "blocked": False, "timestamp": now_ms()}
        self._requests[request] = entry
        self._keep_network(entry, request, frame and frame.page)

    def _on_response(self, response: Any) -> None:
        entry = self._requests.get(response.request)
        if entry is not None:
            entry["status"] = response.status
            if BLOCKED_HEADER.lower() in response.headers:  # the policy proxy's refusal of plain HTTP
                entry["failure"], entry["blocked"] = BLOCKED_FAILURE, True

    def _on_request_done(self, request: Any) -> None:
        if request.is_navigation_request():  # a tab's document that ended without a new document (a download, a 204)
            try:
                tab = self._tab_of(request.frame.page)
            except Exception:  # its frame is gone
                tab = None
            if tab is not None and tab.document_request is request:
                tab.document_request = None
        entry = self._requests.pop(request, None)
        if entry is None:
            return
        timing = request.timing
        if timing and timing.get("responseEnd", -1) >= 0:
            entry["durationMs"] = round(timing["responseEnd"], 1)
        if not entry["blocked"]:
            entry["failure"] = request.failure
            entry["blocked"] = self._policy.refused(request.url) and request.failure is not None
        self._keep_finished(entry)
