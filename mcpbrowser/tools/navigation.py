"""Navigation, history, tabs and waiting; handlers run on the session's own thread."""

import time
from contextlib import suppress
from urllib.parse import urlsplit

from playwright.sync_api import Error as PlaywrightError

from mcpbrowser import schema
from mcpbrowser.domains import BLOCKED_HEADER
from mcpbrowser.errors import InvalidParameters, NavigationFailed, PageUnresponsive, WaitTimeout
from mcpbrowser.page_strings import a_, clip
from mcpbrowser.session import page_reading, page_tools, playwright_internals, throttling
from mcpbrowser.session.acting import INTERRUPTED, TIMED_OUT
from mcpbrowser.tools.base import TARGET, TIMEOUT, WAIT_UNTIL, SessionTool, result_schema, session_schema
from mcpbrowser.tools.targeting import locate

TABS_LISTED = 10  # a list shows the first tabs and the current one; "more" counts the rest
# Playwright's goto when the address is a file (an attachment; on the headless shell, which has no PDF viewer, any
# PDF): the file downloads and the tab stays. Not a failure: the answer says so, and its `downloads` name the file.
DOWNLOAD_STARTING = "Download is starting"
DOWNLOADING = object()  # _load's result then
HOLD_CHECK_S = 2.0  # a load still going after this long asks its page whether it answers, and again after as long
PAGE_TOOLS_MS = 1_000  # how long a loaded page may take to say which tools it offers (a round trip, where it answers)
PAGE_RESULT = result_schema(("pageTools",), success="boolean", title="string", url="string",
                            status=["integer", "null"], pageTools="string")


def _check_url(url):
    parts = urlsplit(url)
    if not parts.scheme or (parts.scheme in ("http", "https") and not parts.netloc) or \
            (len(parts.scheme) == 1 and parts.scheme.isalpha()):  # C:\path is a drive, not a scheme
        raise InvalidParameters(f"url must be absolute, with a scheme such as https:// (got {url!r})",
                                details={"url": url})


def _load(state, what, method, **kwargs):
    """Run a page-loading call and shape its result; failures are NAVIGATION_FAILED."""
    kwargs["wait_until"] = kwargs.pop("waitUntil", None) or "load"
    kwargs["timeout"] = kwargs.get("timeout", state.config.navigation_timeout)
    refusals = state.network_policy.refusals()
    tab, navigations = state.tab, state.tab.navigations
    try:
        # A page that holds its own unload (a script looping in unload or pagehide) keeps a same-site navigation
        # from committing: asked every HOLD_CHECK_S whether it still answers, it is named within seconds
        # (navigate then goes on in a fresh tab). Once the new document has committed, it is not asked.
        response = state.act(tab.page, method, watch=(
            HOLD_CHECK_S, lambda: tab.navigations != navigations or state.responsive(tab)), **kwargs)
        if response is TIMED_OUT:  # the page it leaves holds it
            held = state.unresponsive_error()
            held.left_unfinished = True
            raise held
    except Exception as exc:
        if isinstance(exc, PageUnresponsive):
            raise
        if state.network_policy.refusals() > refusals:  # a hop of this navigation (a redirect, say) hit the policy
            raise state.network_policy.blocked_error(kwargs.get("url", state.tab.page.url)) from None
        reason = str(exc).split("\n", 1)[0]
        if reason.startswith(DOWNLOAD_STARTING):  # the address is a file: it downloads, the tab stays
            return DOWNLOADING
        if "net::ERR_" in reason:
            page_reading.await_error_page(state, navigations)
        url = kwargs.get("url") or (state.tab.page.url if state.tab is not None else "")
        reason = reason.removesuffix(f" at {url}")  # Playwright's, naming the address the message names
        offline = throttling.offline(state)
        aborted = "ERR_BLOCKED_BY_CLIENT" in reason and any(r["action"] == "abort" for r in state.routes.listed())
        failed = NavigationFailed(f"Could not load {what}: {reason}" + (
            ". The session is offline (throttle network 'offline'); throttle with network 'none' "
            "brings it back online." if offline else "") + (
            ". A route of this session aborts it (route lists them; unroute removes one)." if aborted else ""),
            session_id=state.session_id,
            details={"url": url, "reason": reason, **({"offline": True} if offline else {})})
        failed.timed_out = type(exc).__name__ == "TimeoutError"  # Playwright's, by its class
        if failed.timed_out and tab.navigations != navigations and not state.responsive(tab):
            raise state.unresponsive_error() from None  # it loaded, and its own script never yields
        raise failed from None
    if response not in (None, INTERRUPTED) and BLOCKED_HEADER.lower() in response.headers:
        raise state.network_policy.blocked_error(response.url)  # the policy proxy answered a hop of plain HTTP
    return response


def navigate(state, args, response):
    url = args["url"]
    _check_url(url)
    state.network_policy.check_navigation(url)
    # An agent that asks to leave means to leave: a dialog in the way is answered, and the answer says so.
    state.clear_the_way()
    try:
        response.answer(_navigate(state, url, args, response))
    finally:
        state.leaving = False


def _navigate(state, url, args, response):
    state.report(0, 3, f"Navigating to {url}")
    page, reporting = state.tab.page, [True]

    def dom_ready(_):
        if reporting[0]:
            state.report(1, 3, "DOM content loaded")

    page.once("domcontentloaded", dom_ready)
    try:
        try:
            loaded = _load(state, url, "goto", url=url, **_options(args))
            held = loaded is INTERRUPTED and state.trapped  # a dialog held the navigation
        except PageUnresponsive as exc:  # its page holds the tab (its unload never ends): leave it anyway
            if not getattr(exc, "left_unfinished", False):
                raise  # the new page loaded and hangs: a fresh tab would meet it again
            held = True
        if held:  # go in a fresh tab
            state.replace_tab()
            loaded = _load(state, url, "goto", url=url, **_options(args))
    finally:
        reporting[0] = False  # a listener left by a failed goto must not speak later
    state.report(2, 3, "Page loaded")
    result = _loaded(state, _response(loaded), response)
    if loaded is DOWNLOADING:
        state.flush_events()  # the download's own event, for the answer's downloads
        result["message"] = (f"{url} is a file: it downloads (downloads lists it), and the tab stays at "
                             f"{result['url']}.")
    state.report(3, 3, "Done")
    return result


def _loaded(state, loaded, response):
    """{success, title, url, status} of the page a tool loaded (`loaded`: Playwright's HTTP response, if any),
    and the tools the page offers (WebMCP), if any: the agent learns of them with no call, and its client may
    call page_tools from now on. The title comes with the element count when the page is captured after."""
    read = page_tools.offered_read(state, PAGE_TOOLS_MS)
    if read is None:  # the browser runs no page tools, or a dialog holds the page's script
        title, registered = page_reading.loaded_title(state, response.stores_after), None
    else:  # one round trip with the title
        title, registered = page_reading.loaded_title(state, response.stores_after, read)
    state.remember_page(title)
    result = {"success": True, "title": title, "url": state.tab.page.url,
              "status": loaded.status if loaded is not None else None}
    offered = page_tools.announced(registered)
    if offered is not None:
        result["pageTools"] = offered
        state.worker.page_offers_tools(response.caller)
    return result


def _history(method, word):
    def handler(state, args, response):
        before = state.tab.page.url
        loaded = _load(state, f"the {word} page", method, **_options(args))
        if loaded is None and state.tab.page.url == before:
            raise NavigationFailed(f"There is no {word} page in this tab's history.",
                                   session_id=state.session_id, details={"url": before})
        response.answer(_loaded(state, _response(loaded), response))

    return handler


def reload(state, args, response):
    loaded = _load(state, "the page again", "reload", **_options(args))
    response.answer(_loaded(state, _response(loaded), response))


def _response(loaded):
    """_load's result as _loaded takes it: the navigation's response, or None (interrupted, or a download)."""
    return None if loaded in (INTERRUPTED, DOWNLOADING) else loaded


def _options(args):
    return {k: args[k] for k in ("waitUntil", "timeout") if k in args}


def tabs(state, args, response):
    action = args.get("action", "list")
    index = args.get("index")
    gone = None  # the dialog open in the tab it closes, which went with it
    if action in ("select", "close"):
        if index is None and action == "select":
            raise InvalidParameters("tabs select needs an index.", session_id=state.session_id)
        if index is not None and not 0 <= index < len(state.tabs):
            raise InvalidParameters(f"No tab {index}; there are {len(state.tabs)} (0-based).",
                                    session_id=state.session_id, details={"tabs": len(state.tabs)})
        if action == "select":
            state.select_tab(index)
        else:
            closing = state.tab if index is None else state.tabs[index]
            gone = closing.dialog and state.dialog_info(closing.dialog)
            state.close_tab(closing)
            if state.tab is None:
                state._open_blank_tab()
    # The first TABS_LISTED tabs and the current one are listed, the rest counted (a page may open 40 windows).
    # A tab that closes itself while the titles are read moves the others: the listing is of the tabs still open
    # once the titles are in (read again for those that moved in), and the answer's closedTabs tells the rest.
    titles: dict = {}
    for _ in range(3):
        if state.tab is None:
            state._open_blank_tab()
        tabs, current = list(state.tabs), state.tabs.index(state.tab)
        shown = [i for i in range(len(tabs)) if i < TABS_LISTED or i == current]
        for i in shown:
            if tabs[i] not in titles:
                titles[tabs[i]] = _title(state, tabs[i])
        if tabs == state.tabs and tabs[current] is state.tab:
            break
    listing = [{"index": i, "url": tabs[i].page.url, "title": titles[tabs[i]], "current": i == current,
                **_dialog_of(tabs[i]), **({"crashed": True} if tabs[i].crashed else {})} for i in shown]
    if state.blocker is None and not tabs[current].unresponsive and tabs[current] is state.tab:
        state.remember_page(listing[shown.index(current)]["title"])
    more = len(tabs) - len(shown)
    closed = {}
    if gone:  # an agent that closes a tab means to close it: say what went with it, as close_session does
        gone.pop("tab", None)
        closed = {"dialogDismissed": gone, "message": f"The tab closed with {a_(gone['type'])} dialog open "
                  f"({clip(gone['message'])!r}); it went with the tab."}
    response.answer({"tabs": listing, "current": current, **({"more": more} if more else {}), **closed})


def _dialog_of(tab):
    """{dialog: {type, message}} for a tab whose page has a dialog open, else {}."""
    return {"dialog": {"type": tab.dialog.type, "message": tab.dialog.message}} if tab.dialog else {}


def _title(state, tab):
    """A tab's title for the listing: "" behind a dialog, when its page does not answer in time, or closed."""
    try:
        title = state.background(tab, tab.page, "title")
    except PlaywrightError:  # it closed itself as it was read: the next answer tells it
        return ""
    return title if isinstance(title, str) else ""


def wait_for(state, args, response):
    timeout = args.get("timeout", state.config.action_timeout)
    label, locator = locate(state, args, required=False)
    checks = []  # (what, wait(remaining_ms) -> INTERRUPTED or anything)

    hidden_twins = {}  # what -> its locator, to say on a timeout how many matches were there but hidden

    def element(what, target, wanted):
        # Visible and hidden are about what a person sees: any visible match will do, and hidden means none
        # is visible (the first match in the DOM may be a hidden twin of the text in view).
        if wanted in ("visible", "hidden"):
            hidden_twins[what] = target
            target = target.filter(visible=True)
        checks.append((what, lambda remaining: state.act(target.first, "wait_for", timeout=remaining, state=wanted)))

    if locator is not None:
        wanted = args.get("state", "visible")
        element(f"{label} to be {wanted}", locator, wanted)
    if "text" in args:
        element(f"text {args['text']!r} to appear", state.tab.page.get_by_text(args["text"]), "visible")
    if "textGone" in args:
        element(f"text {args['textGone']!r} to disappear", state.tab.page.get_by_text(args["textGone"]), "hidden")
    if "url" in args:
        pattern = args["url"]
        matches = pattern if "*" in pattern else (lambda url: pattern in url)
        checks.append((f"the URL to match {pattern!r}",
                       lambda remaining: state.act(state.tab.page, "wait_for_url", url=matches, timeout=remaining)))
    if args.get("networkIdle"):
        checks.append(("the network to be idle", lambda remaining: state.act(
            state.tab.page, "wait_for_load_state", state="networkidle", timeout=remaining)))
    if args.get("download"):
        checks.append(("a download to finish", lambda remaining: _download_done(state, remaining)))
    if not checks:
        raise InvalidParameters("Give selector or ref, text, textGone, url, networkIdle or download to wait for.",
                                session_id=state.session_id)
    started = time.monotonic()
    for done, (what, wait) in enumerate(checks):
        state.report(done, len(checks), f"Waiting for {what}")
        remaining = max(1, timeout - (time.monotonic() - started) * 1000)
        try:
            if wait(remaining) is INTERRUPTED:
                break
        except Exception as exc:
            if "Timeout" not in str(exc) or playwright_internals.target_closed(exc):
                raise  # a tab that closed itself meanwhile is TAB_CLOSED (core/on_session.py), not a timeout
            page = state.tab.page
            seen = None if state.events.navigation_pending(page) else _matches_seen(page, hidden_twins.get(what))
            note = f" {seen['matched']} element(s) matched, {seen['visible']} of them visible." if seen else ""
            raise WaitTimeout(f"Timeout: waited {timeout} ms for {what}.{note}", session_id=state.session_id,
                              details={"waitedFor": what, "timeoutMs": timeout, **(seen or {})}) from None
    elapsed = round((time.monotonic() - started) * 1000)
    state.report(len(checks), len(checks), "Condition met")
    response.answer({"success": True, "message": f"Waited {elapsed} ms for " + " and ".join(c[0] for c in checks),
                     "elapsedMs": elapsed})


def _matches_seen(page, locator):
    """{matched, visible} for a wait that timed out, or None (nothing to count, or the page is busy)."""
    if locator is None:
        return None
    try:
        # A count has no timeout of its own: ask only a page that answers a trivial script in 1 s (one
        # whose script never yields would hold the session forever). A page being left is not asked (the
        # caller sees its navigation pending): it runs no script until the next document commits.
        page.wait_for_function("true", timeout=1000)
        return {"matched": locator.count(), "visible": locator.filter(visible=True).count()}
    except Exception:
        return None  # a dialog, a navigation or a busy page in the way: the timeout says enough


def _download_done(state, timeout_ms):
    """Until a download that started since the last such wait has ended, and none is still going."""
    downloads, deadline = state.downloads, time.monotonic() + timeout_ms / 1000
    while len(downloads.entries) <= downloads.waited or downloads.in_progress():
        if time.monotonic() >= deadline:
            raise WaitTimeout("Timeout")
        state.tab.page.wait_for_timeout(50)  # lets Playwright dispatch the download's events
    downloads.waited = len(downloads.entries)


def wait_for_user(state, args, response):
    """A person finishes a login or captcha in the (headed) browser; we wait for the sign."""
    timeout, wanted = args["timeout"], args.get("urlContains")
    label, matches = locate(state, args, required=False)
    if (wanted is None) == (matches is None):
        raise InvalidParameters("Give urlContains or a selector/ref: the sign that the user is done.",
                                session_id=state.session_id)
    what = f"the URL to contain {wanted!r}" if wanted is not None else f"{label} to appear"
    state.tell_user(args["message"])
    with suppress(Exception):  # a headless page has no window to raise
        state.tab.page.bring_to_front()
    started, reported, worker = time.monotonic(), float("-inf"), state.worker
    worker.handed_back = False  # a hand back before this wait began is no answer to it
    while True:
        elapsed = (time.monotonic() - started) * 1000
        if elapsed - reported >= 1000:  # progress once a second
            reported = elapsed
            state.report(round(elapsed), timeout, f"Waiting for the user: {args['message']}")
        left = timeout - elapsed
        if left <= 0:
            raise WaitTimeout(f"Login timeout: the user did not finish within {timeout} ms "
                              f"(waited for {what}).", session_id=state.session_id,
                              details={"waitedFor": what, "timeoutMs": timeout})
        # Short slices: events are dispatched, and a person in the live view acts between them.
        worker.between(state)
        if worker.handed_back:
            break
        slice_ms = min(100, left)
        try:
            if wanted is not None:
                state.tab.page.wait_for_url(lambda url: wanted in url, timeout=slice_ms)
            else:
                matches.first.wait_for(state="visible", timeout=slice_ms)
            break
        except Exception as exc:
            if "Timeout" not in str(exc):
                raise
    waited = round((time.monotonic() - started) * 1000)
    state.report(timeout, timeout, "The user finished")
    state.remember_page(state.tab.page.title())
    by_person = worker.handed_back  # only `between` runs the person's hand back: not after the loop's last check
    message = (f"The person finished in the live view and handed back after {waited} ms." if by_person
               else f"The user finished: saw {what} after {waited} ms.")
    response.answer({"success": True, "message": message, "waitedMs": waited, "url": state.tab.page.url,
                     **({"finishedBy": "person"} if by_person else {})})


LOAD_OPTIONS = {"waitUntil": WAIT_UNTIL, "timeout": TIMEOUT}

TOOLS = [
    SessionTool(
        name="navigate", title="Navigate to URL",
        description="Load a URL in the current tab.",
        input_schema=session_schema({
            "url": {"type": "string", "minLength": 1}, **LOAD_OPTIONS,
        }, required=("url",)),
        handler=navigate, changes_page=True, leaves_page=True, task_support=True, output_schema=PAGE_RESULT,
    ),
    SessionTool(
        name="go_back", title="Go back", description="Back in the tab's history.",
        input_schema=session_schema(LOAD_OPTIONS),
        handler=_history("go_back", "previous"), changes_page=True, output_schema=PAGE_RESULT,
    ),
    SessionTool(
        name="go_forward", group="extra", title="Go forward", description="Forward in the tab's history.",
        input_schema=session_schema(LOAD_OPTIONS),
        handler=_history("go_forward", "next"), changes_page=True, output_schema=PAGE_RESULT,
    ),
    SessionTool(
        name="reload", group="extra", title="Reload page", description="Reload the current tab.",
        input_schema=session_schema(LOAD_OPTIONS),
        handler=reload, changes_page=True, output_schema=PAGE_RESULT,
    ),
    SessionTool(
        name="tabs", title="List, select or close tabs",
        description="List (first 10), select (make current) or close tabs, popups included.",
        input_schema=session_schema({
            # Bare, it lists; close without an index closes the current tab: what a model expects, unsaid.
            "action": {"type": "string", "enum": ["list", "select", "close"]},
            "index": schema.integer(None, minimum=0),
        }),
        handler=tabs, changes_page=True, page_tool=False,
        output_schema=result_schema(("more",), tabs={"type": "array", "items": result_schema(
            index="integer", url="string", title="string", current="boolean")}, current="integer", more="integer"),
    ),
    SessionTool(
        name="wait_for_user", group="logins", title="Wait for the user",
        description="Ask the person at the browser to finish something (a login, a captcha) and wait "
                    "until the URL contains urlContains or an element appears. A timeout starts the "
                    "login cooldown.",
        input_schema=session_schema({
            "message": schema.string("What the user should do; shown to them through the client.", minLength=1),
            "urlContains": schema.string("Done when the page URL contains this text."),
            **TARGET,
            "timeout": schema.integer("Milliseconds to wait for the user.", minimum=1, maximum=3_600_000),
        }, required=("message", "timeout")),
        handler=wait_for_user, changes_page=True,
        during_cooldown=True,  # the handover the cooldown asks for; seeing the person done ends it
        waits_for_person=True, task_support=True,
        output_schema=result_schema(success="boolean", message="string", waitedMs="integer", url="string"),
    ),
    SessionTool(
        name="wait_for", title="Wait for element or text",
        description="Until an element's state (default visible), text shows, textGone goes, the URL "
                    "contains url (or matches it as a glob), networkIdle, or a new download ends.",
        input_schema=session_schema({
            **TARGET,
            "state": {"type": "string", "enum": ["attached", "detached", "visible", "hidden"]},
            "text": {"type": "string", "minLength": 1},
            "textGone": {"type": "string", "minLength": 1},
            "url": {"type": "string", "minLength": 1},
            "networkIdle": {"type": "boolean"},
            "download": {"type": "boolean"},
            "timeout": TIMEOUT,
        }),
        handler=wait_for, read_only=True, meant_for_tab=True, stores_page=True, task_support=True,
        output_schema=result_schema(success="boolean", message="string", elapsedMs="integer"),
    ),
]
