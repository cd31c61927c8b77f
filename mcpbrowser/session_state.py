"""One session's browser state: tabs, dialogs, snapshot refs, console and network ring buffers.

SESSION THREAD ONLY. Every Playwright object here was created on the session's
own thread and is used only there; event handlers also run on that thread,
dispatched by Playwright while a call is in progress. What other threads may
read is copied out as plain data into `worker.info`.
"""

import re
import time
from collections import deque
from typing import Any

from mcpbrowser import snapshot_text
from mcpbrowser.errors import DialogOpen, DomainNotAllowed, ElementNotFound, InvalidParameters, PageCrashed
from mcpbrowser.guards import DomainPolicy, host_of
from mcpbrowser.logs import log
from mcpbrowser.playwright_internals import event_loop, run_coroutine, take_coroutine
from mcpbrowser.policy_proxy import BLOCKED_HEADER
from mcpbrowser.redaction import has_textbox_values, redact_textboxes, scrub_text, scrub_value, secret_values

REF_MARKER = re.compile(r"\[ref=([A-Za-z0-9_-]+)\]")
INTERRUPTED = object()  # act() result: the call opened a dialog before it finished
MIN_SCRUBBED = 4  # see mark_secret
ERROR_PAGE_WAIT_MS = 2000  # see await_error_page
BLOCKED_FAILURE = "blocked by the domain policy"
# What makes a page a login or verification page (for the cooldown rule, see core._login_failure).
LOGIN_WORDS = ("login", "log-in", "log in", "signin", "sign-in", "sign in", "auth", "verify", "verification",
               "captcha", "登录", "验证")
LOGIN_PROBE = """() => !!document.querySelector('input[type=password]') ||
  [...document.querySelectorAll('iframe')].some(
    f => /captcha|recaptcha|hcaptcha|turnstile|challenge/i.test(f.src + ' ' + f.title))"""


def now_ms():
    """Wall-clock epoch milliseconds, for timestamps shown to clients (never for deadlines)."""
    return time.time_ns() // 1_000_000


def _newest(buffer, count):
    """The last `count` entries of a ring buffer (fewer when it dropped some)."""
    count = min(count, len(buffer))
    return list(buffer)[len(buffer) - count:] if count else []


def _retrieve(task):
    # An action left running behind an open dialog finishes later; its outcome is
    # no longer anyone's answer, but must be read so asyncio does not warn about it.
    if not task.cancelled():
        task.exception()


class SessionState:
    """Playwright objects and per-session buffers; created by the opener, used by tool handlers."""

    def __init__(self, worker, config, playwright, browser, context, page):
        self.worker = worker
        self.config = config
        self.playwright = playwright
        self.browser = browser
        self.context = context
        self.page: Any = page  # the current tab; None only while its last tab closes
        self.pages = [page]
        self.tabs_opened = 0
        self.navigations = 0      # main-frame navigations of the current tab, to tell an action's answer
        self._tabs_reported = 0
        self.dialog: Any = None
        self._dialog_waiter = None
        self.refs: frozenset[str] = frozenset()
        self._refs_page: Any = None
        self.console: deque[dict] = deque(maxlen=config.console_buffer)
        self.console_dropped = 0
        self.network: deque[tuple] = deque(maxlen=config.network_buffer)
        self.network_dropped = 0
        self._network_total = 0   # requests ever seen
        self._page_mark = 0       # ...when the current page's document was requested (see page_requests)
        self._requests = {}
        self.screenshots = 0
        self._console_total = 0   # console entries ever seen, for per-call slices
        self._console_mark = 0    # ...of which earlier calls already took this many
        self.secrets = set()      # secret values seen (typed or in secret fields): scrubbed from all output
        self.call = None          # the Call running now, while a tool runs
        self._progress = None     # the running call's progress reporter, if it asked for one
        self.policy = DomainPolicy()  # what this session may load; the core sets the real one
        self.on_failure = None    # core hook: may turn a failure into a login timeout
        self.on_lost = None       # core hook: the browser went away; closes the session, returns SESSION_LOST
        self.ask_user: Any = None  # core hook: ask the user about a new domain, or raise
        self.tell_user = lambda message: None  # core hook: show the person a message (wait_for_user)
        self.proxy = None         # the opener's PolicyProxy when a host rule applies: it enforces the policy
        self.crashed = set()      # pages whose renderer died (replaced by a fresh page on the next call)
        self.storage_saved_at = 0.0   # monotonic time of the last resume save (0: never)
        self.storage_saved_url = None
        # Chromium only: a CDP session per page, for loaded_title() (see there).
        self._cdp_titles = browser.browser_type.name == "chromium"
        self._cdp = {}
        self.disconnect_at_close = False  # set by the opener: see close()

    @property
    def session_id(self):
        return self.worker.session_id

    # -- setup and teardown ------------------------------------------------------

    def listen(self):
        """Subscribe to the context's events; every page, popups included, belongs to the session."""
        on = self.context.on
        on("page", self._on_page)
        on("dialog", self._on_dialog)
        on("console", self._on_console)
        on("weberror", self._on_web_error)
        on("request", self._on_request)
        on("response", self._on_response)
        on("requestfinished", self._on_request_done)
        on("requestfailed", self._on_request_done)
        self._watch(self.page)

    def narrow(self, allowed_domains):
        """Apply a session's own allowedDomains (a pooled session gets them when handed out).

        The policy proxy holds the same policy object, so this applies to its next request.
        """
        self.policy.narrow(allowed_domains)

    def close(self):
        # Stopping this thread's Playwright ends its connection (the relay or the driver),
        # which is all that is ours: the browser is shared. Through a driver of our own,
        # browser.close() comes first: on a browser reached with connect() or
        # connect_over_cdp() it only disconnects (the browser and other clients' contexts
        # stay), and only then does the driver remove its playwright-artifacts-* folder
        # from /tmp. Through the relay it would close the shared browser itself.
        steps = [self.context.close]
        if self.disconnect_at_close:
            steps.append(self.browser.close)
        steps.append(self.playwright.stop)
        if self.proxy is not None:
            steps.append(self.proxy.close)
        for step in steps:
            try:
                step()
            except Exception as exc:  # the browser may already be gone; keep tearing down
                log.debug("session teardown step failed",
                          extra={"session": self.session_id, "error": str(exc)})

    # -- running tools -----------------------------------------------------------

    def run_tool(self, tool, args):
        """Run one tool's handler with the checks and notes every page tool shares."""
        if tool.page_tool and self.dialog is not None:
            raise DialogOpen(
                f"A {self.dialog.type} dialog is open ({self.dialog.message!r}); it blocks the page. "
                "Answer it with handle_dialog first.",
                session_id=self.session_id, details=self.dialog_info())
        if self.page in self.crashed:  # it crashed between calls: this call meets it
            raise self._replace_crashed_page()
        if self.page is None or self.page.is_closed():
            self._open_blank_tab()
        dialog_before, page_before, navigations_before = self.dialog, self.page, self.navigations
        try:
            result = tool.handler(self, args)
        except Exception:
            if self.page in self.crashed:
                raise self._replace_crashed_page() from None
            raise
        if tool.changes_page and "url" not in result:
            self._add_page_state(result, self.page is not page_before or self.navigations != navigations_before)
        if self.dialog is not None and dialog_before is None:
            result["dialog"] = self.dialog_info()
            if "message" in result:
                result["message"] += (f"; a {self.dialog.type} dialog opened ({self.dialog.message!r}): "
                                      "answer it with handle_dialog")
        # Tabs may open between calls too (events are dispatched during any Playwright
        # call, the after-call capture included): report each one on the next answer.
        if self.tabs_opened > self._tabs_reported:
            result["newTabs"] = self.tabs_opened - self._tabs_reported
            self._tabs_reported = self.tabs_opened
            if "message" in result:
                result["message"] += "; the page opened a new tab: see tabs"
        return result

    def run_call(self, tool, args, call):
        """run_tool, plus what the history needs: this call's console entries, refId and meta."""
        call.ran = True
        if args.get("secret") and isinstance(args.get("text"), str) and args["text"]:
            self.mark_secret(args["text"])
        self._progress, self.call = call.progress, call
        try:
            result = scrub_value(self.run_tool(tool, args), self.secrets)
        except Exception as exc:
            call.console = self.take_console()
            if self.on_lost is not None and self.browser_gone():
                raise call.annotate_error(self.on_lost(self)) from None
            error = call.annotate_error(exc)
            if self.on_failure is not None:
                error = call.annotate_error(self.on_failure(self, tool, error))
            raise error from None
        finally:
            self._progress, self.call = None, None
            call.flush_request()  # a tool that may carry a secret is recorded once that is known
        call.console = self.take_console()
        if call.capture and call.inline and "snapshot" not in result:
            call.snapshot = self.capture_snapshot()
            result["snapshot"] = call.snapshot
        return call.annotate(result)

    def _add_page_state(self, result, navigated):
        """Where an action left the agent: url, title, and whether it navigated, so the agent needs no extra call.

        A navigation the action started has committed by now (Playwright waits for
        that); its load is awaited here (up to the action timeout), so that the title,
        and the snapshot the history captures next, are of the new page. The title
        is one CDP round trip that runs no JavaScript (see loaded_title).
        """
        if navigated and self.dialog is None:
            try:  # at most the action timeout: a slow page's answer says where it is so far
                self.page.wait_for_load_state("load", timeout=self.config.action_timeout)
            except Exception as exc:  # a slow page: answer with what is there
                log.debug("load after action not reached", extra={"session": self.session_id, "error": str(exc)})
        title = self.loaded_title()
        self.remember_page(title)
        result.update(url=self.page.url, title=title, navigated=navigated)

    def await_error_page(self):
        """After a navigation failed with a network error, wait until Chromium's error page commits.

        Chromium commits chrome-error://chromewebdata/ some 100 ms after the failure
        is reported, and that commit interrupts whatever navigation started
        meanwhile, again and again ("interrupted by another navigation"; raw
        Playwright does the same). Waiting here, on the failure path only, lets the
        agent's next navigation just work.
        """
        if not self._cdp_titles or self.page is None or self.dialog is not None:
            return
        try:
            self.page.wait_for_url(lambda url: url.startswith("chrome-error:"), timeout=ERROR_PAGE_WAIT_MS)
        except Exception:
            pass  # no error page (a download, an aborted load): nothing to wait for

    def browser_gone(self):
        """True when this session's connection to the browser is closed (the browser died).

        Called after a failure. The disconnect may not be dispatched yet, so a cheap
        round trip on the context (which only we close) settles it.
        """
        try:
            if not self.browser.is_connected():
                return True
            self.context.cookies("http://localhost")
            return False
        except Exception:
            return True

    def collect_garbage(self):
        """Have every open page's JavaScript engine collect its garbage now.

        A renderer keeps what each navigation and snapshot left behind until
        memory pressure makes it collect: here about 25 MB per active session.
        The core runs this once a session has gone quiet (--idle-gc).
        """
        for page in self.pages:
            if not page.is_closed():
                page.request_gc()

    def report(self, done, total, message):
        """Tell the caller how a long call is going, when it asked (MCP progressToken)."""
        if self._progress is not None:
            try:
                self._progress(done, total, message)
            except Exception:
                log.debug("progress report failed", extra={"session": self.session_id})

    def page_requests(self):
        """The network buffer's entries since the current page's document was requested."""
        return _newest(self.network, self._network_total - self._page_mark)

    def take_console(self):
        """Console entries that arrived since the previous call took its share."""
        fresh, self._console_mark = self._console_total - self._console_mark, self._console_total
        return _newest(self.console, fresh)

    def capture_snapshot(self):
        """The page as YAML with refs, for the history; None when a dialog or failure prevents it."""
        if self.dialog is not None or self.page is None:
            return None
        try:
            text = self.page.aria_snapshot(mode="ai", timeout=2000)
        except Exception as exc:
            log.debug("snapshot capture failed", extra={"session": self.session_id, "error": str(exc)})
            return None
        return self.took_snapshot(text)

    def storage_state(self):
        """(storage state JSON, url) for resume_session; None when it cannot be read."""
        if self.dialog is not None or self.page is None:
            return None
        try:
            return self.context.storage_state(), self.page.url
        except Exception:
            return None

    def mark_secret(self, text):
        """The running call's text is a secret: recorded as [REDACTED], and scrubbed from all output.

        Values shorter than MIN_SCRUBBED are not scrubbed from everything (a one-letter
        secret would blank every "a" of a page); the field still never shows them.
        """
        if self.call is not None:
            self.call.secret = True
        if len(text) >= MIN_SCRUBBED:
            self.secrets.add(text)

    def took_snapshot(self, text):
        """A fresh aria snapshot as shown and stored: cleaned, redacted; its refs become the current ones."""
        text = self.redact_snapshot(snapshot_text.clean(text))
        self.refs = frozenset(REF_MARKER.findall(text))
        self._refs_page = self.page
        return text

    def redact_snapshot(self, text):
        """An aria snapshot with known secrets scrubbed and every secret field's value hidden.

        The fields' values are read only when some textbox in the snapshot shows a value.
        """
        text = scrub_text(text, self.secrets)
        if self.page is None or self.dialog is not None or not has_textbox_values(text):
            return text
        values = secret_values(self.page)
        self.secrets.update(v for v in values if len(v) >= MIN_SCRUBBED)
        return redact_textboxes(text, values)

    def act(self, target, method, **kwargs):
        """Call target.method(**kwargs), but return INTERRUPTED as soon as a dialog opens.

        With a dialog listener installed, an action whose click opens an alert
        would otherwise block until the dialog is answered. The sync method is
        made to hand over its coroutine instead of waiting on it (see
        playwright_internals); we then wait for whichever comes first.
        """
        direct, coroutine = take_coroutine(target, method, kwargs)
        if coroutine is None:
            return direct
        import asyncio  # here, not at module top: keeps it off the path to `initialize`

        task = event_loop(self.page).create_task(coroutine)
        task.add_done_callback(_retrieve)
        waiter = self._waiter()
        run_coroutine(target, asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED))
        return task.result() if task.done() else INTERRUPTED

    def locate(self, args, required=True):
        """(label, Locator) for the `selector` or `ref` in args; (None, None) when neither is given."""
        selector, ref = args.get("selector"), args.get("ref")
        if selector is not None and ref is not None:
            raise InvalidParameters("Give selector or ref, not both.", session_id=self.session_id)
        if ref is not None:
            if ref not in self.refs or self._refs_page is not self.page:
                raise ElementNotFound(
                    f"Ref {ref} is not in the latest snapshot of this tab: the page changed or no "
                    "snapshot was taken. Take a new snapshot and use its refs.",
                    session_id=self.session_id, details={"ref": ref})
            return f"ref {ref}", self.page.locator(f"aria-ref={ref}")
        if selector is not None:
            if selector.startswith("(//"):
                selector = "xpath=" + selector  # Playwright auto-detects // and .. but not (//…)[n]
            return args["selector"], self.page.locator(selector)
        if required:
            raise InvalidParameters("Give a selector, or a ref from the latest snapshot.",
                                    session_id=self.session_id)
        return None, None

    def check_navigation(self, url):
        """Refuse a URL the policy forbids before any request leaves; may ask the user."""
        if not self.policy.scheme_allowed(url):
            scheme = url.split(":", 1)[0]
            raise InvalidParameters(
                f"The {scheme}: scheme is not allowed. Allowed: {', '.join(self.policy.schemes)} "
                f"(start the server with --url-schemes to add {scheme}).", session_id=self.session_id)
        if not self.policy.allows(url):
            host = host_of(url)
            self.ask_user(self.session_id, host)  # raises DomainNotAllowed unless the user accepts
            self.policy.grant(host)

    def refusals(self):
        """How many requests the policy proxy has refused so far (0 without one)."""
        return self.proxy.refusals if self.proxy is not None else 0

    def blocked_error(self, url):
        host = (self.proxy.last_refused if self.proxy is not None else None) or host_of(url)
        return DomainNotAllowed(f"{host} is not allowed: the request to it was blocked.",
                                session_id=self.session_id, details={"domain": host})

    def looks_like_login(self):
        """True when the current page asks for a login or verification."""
        page = self.page
        if page is None:
            return False
        where = page.url.lower()
        try:
            where += " " + page.title().lower()
            return any(w in where for w in LOGIN_WORDS) or bool(page.evaluate(LOGIN_PROBE))
        except Exception:
            return any(w in where for w in LOGIN_WORDS)

    def loaded_title(self):
        """The current tab's title, right after a page loaded.

        On Chromium it comes from the browser's own record of the tab (CDP
        Page.getNavigationHistory): one round trip that runs no JavaScript, so it
        also works while a dialog is open. page.title() evaluates document.title,
        and on a fresh document Playwright must first set up its utility world
        there: 8-10 ms of a 50 ms navigate on our 2-core machine. The
        browser learns the title while the document is parsed, before its load
        event, so it is current when a load has just finished. (A dialog that
        opens while the parser runs can hold that message back: then "".)
        Other browsers, or a CDP failure, fall back to page.title() ("" behind
        a dialog).
        """
        page = self.page
        if self._cdp_titles:
            try:
                cdp = self._cdp.get(page)
                if cdp is None:
                    cdp = self._cdp[page] = self.context.new_cdp_session(page)
                history = cdp.send("Page.getNavigationHistory")
                return history["entries"][history["currentIndex"]]["title"]
            except Exception as exc:
                self._cdp.pop(page, None)
                log.debug("title through CDP failed", extra={"session": self.session_id, "error": str(exc)})
        return page.title() if self.dialog is None else ""

    def remember_page(self, title):
        """Publish url and title as plain data for list_sessions while this thread is busy."""
        self.worker.info = {"url": self.page.url, "title": title}

    def describe(self):
        if self.dialog is None:
            self.remember_page(self.page.title())
        return dict(self.worker.info)

    def flush_events(self):
        """Make one round trip so that events the browser already sent are dispatched."""
        self.context.cookies("about:blank")

    def dialog_info(self):
        d = self.dialog
        return {"type": d.type, "message": d.message, "defaultValue": d.default_value}

    def answer_dialog(self, accept, prompt_text=None):
        dialog, self.dialog = self.dialog, None
        self._dialog_waiter = None
        if accept:
            dialog.accept(prompt_text) if prompt_text is not None else dialog.accept()
        else:
            dialog.dismiss()
        return dialog

    def select_tab(self, index):
        self.page = self.pages[index]
        self.page.bring_to_front()

    # -- event handlers (run on this thread while a Playwright call is in progress) ----

    def _waiter(self):
        if self._dialog_waiter is None or self._dialog_waiter.done():
            self._dialog_waiter = event_loop(self.page).create_future()
        return self._dialog_waiter

    def _open_blank_tab(self):
        """Open a page of our own and make it current; unlike a popup, it is no news for the agent."""
        opened = self.tabs_opened
        page = self.context.new_page()
        if page not in self.pages:  # its "page" event may not have been dispatched yet
            self._on_page(page)
        self._tabs_reported += self.tabs_opened - opened
        self.page = page

    def _replace_crashed_page(self):
        """Give the session a fresh page in the same context; return the PAGE_CRASHED error."""
        dead, url = self.page, self.page.url
        self.crashed.discard(dead)
        if dead in self.pages:
            self.pages.remove(dead)
        try:
            dead.close()
        except Exception:
            pass  # a crashed page may refuse to close cleanly
        self._open_blank_tab()
        self.refs, self.dialog = frozenset(), None
        self.worker.info = {"url": "about:blank", "title": ""}
        log.warning("page crashed: replaced", extra={"event": "page_crashed", "session": self.session_id})
        return PageCrashed(f"The page at {url} crashed. The session has a fresh page at about:blank "
                           "(same cookies and storage); navigate again.", session_id=self.session_id,
                           details={"url": url})

    def _watch(self, page):
        def navigated(frame):
            if frame is page.main_frame:
                if page is self._refs_page:
                    self.refs = frozenset()  # refs belong to the document they were taken from
                if page is self.page:
                    self.navigations += 1
                    self.worker.info = {"url": frame.url, "title": self.worker.info["title"]}

        page.on("framenavigated", navigated)
        page.on("close", lambda _: self._on_page_closed(page))
        page.on("crash", lambda _: self.crashed.add(page))
        page.on("websocket", self._on_websocket)

    def _on_page(self, page):
        if page in self.pages:
            return
        self.pages.append(page)
        self.tabs_opened += 1
        self._watch(page)

    def _on_page_closed(self, page):
        self._cdp.pop(page, None)
        if page in self.pages:
            self.pages.remove(page)
        if page is self.page:
            self.page = self.pages[-1] if self.pages else None

    def _on_dialog(self, dialog):
        self.dialog = dialog
        waiter = self._dialog_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(dialog)

    def _keep(self, buffer, entry, dropped_attr):
        if len(buffer) == buffer.maxlen:
            setattr(self, dropped_attr, getattr(self, dropped_attr) + 1)
        buffer.append(entry)

    def _keep_console(self, entry):
        self._console_total += 1
        self._keep(self.console, entry, "console_dropped")

    def _on_console(self, message):
        loc = message.location or {}
        self._keep_console({
            "timestamp": int(message.timestamp) if message.timestamp else now_ms(),
            "level": message.type,
            "message": message.text,
            "location": f"{loc.get('url', '')}:{loc.get('lineNumber', 0)}:{loc.get('columnNumber', 0)}",
        })

    def _on_web_error(self, web_error):
        page = web_error.page
        self._keep_console({
            "timestamp": now_ms(), "level": "error", "message": str(web_error.error),
            "location": page.url if page is not None else "",
        })

    def _on_request(self, request):
        if request.is_navigation_request() and request.redirected_from is None:
            try:
                frame = request.frame
            except Exception:  # a popup's first request comes before its frame exists: not this page's
                frame = None
            if frame is not None and frame.parent_frame is None and frame.page is self.page:
                self._page_mark = self._network_total
        self._network_total += 1
        entry = {"method": request.method, "url": request.url, "resourceType": request.resource_type,
                 "status": None, "durationMs": None, "failure": None, "blocked": False, "timestamp": now_ms()}
        self._requests[request] = entry
        self._keep(self.network, (entry, request), "network_dropped")

    def _on_response(self, response):
        entry = self._requests.get(response.request)
        if entry is not None:
            entry["status"] = response.status
            if BLOCKED_HEADER.lower() in response.headers:  # the policy proxy's refusal of plain HTTP
                entry["failure"], entry["blocked"] = BLOCKED_FAILURE, True

    def _refused(self, url):
        return self.proxy is not None and self.proxy.was_refused(host_of(url))

    def _on_websocket(self, ws):
        entry = {"method": "GET", "url": ws.url, "resourceType": "websocket", "status": None,
                 "durationMs": None, "failure": None, "blocked": False, "timestamp": now_ms()}
        self._keep(self.network, (entry, None), "network_dropped")

        def closed(_):
            if self._refused(ws.url):
                entry["failure"], entry["blocked"] = BLOCKED_FAILURE, True

        ws.on("close", closed)

    def _on_request_done(self, request):
        entry = self._requests.pop(request, None)
        if entry is None:
            return
        timing = request.timing
        if timing and timing.get("responseEnd", -1) >= 0:
            entry["durationMs"] = round(timing["responseEnd"], 1)
        if not entry["blocked"]:
            entry["failure"] = request.failure
            entry["blocked"] = self._refused(request.url) and request.failure is not None
