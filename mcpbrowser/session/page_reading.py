"""Reading a session's page without changing it: its title, whether it asks for a login,
Chromium's error page, whether the browser is still there, what resume needs.

SESSION THREAD ONLY: each function takes the session's SessionState.
"""

from contextlib import suppress

from mcpbrowser.logs import log

ERROR_PAGE_WAIT_MS = 2000  # see await_error_page
# What makes a page a login, verification or captcha wall, for the cooldown's rule (guards.py): what the page shows a
# person at that moment, in any of its frames. A password or one-time-code field, or a captcha widget, that is rendered
# (not display:none, not visibility:hidden: many pages keep a hidden login dialog in every page). reCAPTCHA's invisible
# badge sits on ordinary forms and is not a wall. The page's URL and its words are not enough (an /author page, a blog
# post about logins), except a title naming one of --login-keywords: custom walls (a slider captcha) have no standard
# field or frame, and their title is the page's own text, not ours.
WALL_PROBE = """(keywords) => {
  const shown = el => el.checkVisibility ? el.checkVisibility({visibilityProperty: true})
                                         : el.getClientRects().length > 0;
  const any = css => [...document.querySelectorAll(css)].some(shown);
  if (any('input[type=password i]')) return 'password';
  if (any('input[autocomplete~="one-time-code" i]')) return 'one-time-code';
  if (any('iframe[src*=captcha i]:not([src*="size=invisible"]), iframe[title*=captcha i], ' +
          'iframe[src*=challenge i], iframe[src*=turnstile i], .g-recaptcha:not([data-size=invisible]), ' +
          '.h-captcha, .cf-turnstile')) return 'captcha';
  const title = document.title.toLowerCase();
  return keywords.some(word => title.includes(word)) ? 'title' : null;
}"""
WALL_FRAMES = 20  # frames probed at most (ads can bring dozens; a login widget is near the top)


def history_read(tab):
    """The read of the tab's navigation history (CDP's Page.getNavigationHistory: the browser's own title of the
    current entry, no script in the page), to send with other reads in one round trip (Together)."""
    return tab.cdp(), "send", {"method": "Page.getNavigationHistory"}


def current_title(history):
    """The current entry's title in history_read's answer; None for anything else (a read that failed)."""
    return history["entries"][history["currentIndex"]]["title"] if isinstance(history, dict) else None


def loaded_title(state, count=False, also=None):
    """The current tab's title, right after a page loaded.

    On Chromium it comes from the browser's own record of the tab (history_read): one round trip that runs no
    JavaScript, so it also works behind a dialog, where page.title() would first set up Playwright's utility world on a
    fresh document. The browser learns the title as the document is parsed, so it is current once a load finished (""
    when a dialog that opened meanwhile held it back). Other browsers, or a CDP failure: page.title() ("" behind a
    dialog). `count`: the page will be captured after the answer, which decides on its element count
    (snapshots.too_large): read with the title, in one evaluation. `also`: another read ((target, method, kwargs): the
    tools the page offers) sent in the same round trip; then (title, its answer, an exception for one that failed).
    """
    tab, answer = state.tab, _NOT_SENT
    title = None
    if state.chromium:
        if count and state.blocker is None:
            title, answer = _title_and_count(state, tab, also)
        if title is None:
            try:
                history, read = _with(state, history_read(tab), also if answer is _NOT_SENT else None)
                answer = read if answer is _NOT_SENT else answer
                title = history["entries"][history["currentIndex"]]["title"]  # a failed read raises here
            except Exception as exc:
                tab.cdp_session = None
                log.debug("title through CDP failed", extra={"session": state.session_id, "error": str(exc)})
    if title is None:
        title = tab.page.title() if state.blocker is None else ""
    if also is None:
        return title
    if answer is _NOT_SENT:  # the title's round trip failed before it: the read goes alone
        answer = _with(state, also, None)[0]
    return title, answer


_NOT_SENT = object()


def _with(state, read, also, deadline_s=None):
    """(read's answer, also's answer or an exception, or _NOT_SENT without also): one round trip for both. Raises
    what the read raised; a read that did not answer in time (or behind a dialog) is TIMED_OUT (INTERRUPTED)."""
    from mcpbrowser.session.acting import INTERRUPTED, TIMED_OUT
    from mcpbrowser.session.playwright_internals import Together

    if also is None:
        target, method, kwargs = read
        if deadline_s is None:
            return getattr(target, method)(**kwargs), _NOT_SENT
        return state.act(target, method, deadline_s=deadline_s, **kwargs), _NOT_SENT
    try:
        answers = state.act(Together(read, also), "run", deadline_s=deadline_s)
    except Exception as exc:
        return exc, exc
    if answers is TIMED_OUT or answers is INTERRUPTED:
        return answers, _NOT_SENT
    if isinstance(answers[0], Exception):
        raise answers[0]
    return answers[0], answers[1]


def _title_and_count(state, tab, also):
    """(the title, also's answer): the title with the element count that decides whether the history captures the
    page (left in state.elements_counted: see snapshots.too_large) in the same round trip; the title None when
    the page did not answer within COUNT_BEFORE_ANSWER_S (the count then NO_ANSWER) or the read failed."""
    from mcpbrowser.session.acting import COUNT_BEFORE_ANSWER_S, TIMED_OUT

    try:
        answer, read = _with(state, (tab.cdp(), "send", {"method": "Runtime.evaluate", "params": {
            "expression": TITLE_AND_COUNT, "returnByValue": True}}), also, deadline_s=COUNT_BEFORE_ANSWER_S)
        if isinstance(answer, Exception):
            raise answer
    except Exception as exc:  # navigating again, closed: the title through the tab's record
        tab.cdp_session = None
        log.debug("title and count failed", extra={"session": state.session_id, "error": str(exc)})
        return None, _NOT_SENT
    if answer is TIMED_OUT:
        state.elements_counted = NO_ANSWER
        return None, read
    if not isinstance(answer, dict) or "exceptionDetails" in answer:
        return None, read
    title, state.elements_counted = answer["result"]["value"]
    return title, read


def element_count(state, deadline_s=None):
    """How many elements the current page's document holds, or None when it cannot say (a dialog, a page
    that does not answer within the server's own INTERNAL_S, which is then probed as any such page, a
    page that is navigating). One cheap evaluation, which tells a walk that will take seconds before it
    starts: a walk cannot be stopped once the page runs it.
    """
    from mcpbrowser.session.acting import TIMED_OUT

    tab = state.tab
    try:
        if state.chromium:
            target, name, kwargs = tab.cdp(), "send", {"method": "Runtime.evaluate", "params": {
                "expression": COUNT_ELEMENTS, "returnByValue": True}}
        else:
            target, name, kwargs = tab.page, "evaluate", {"expression": COUNT_ELEMENTS}
        # deadline_s: a count an answer waits for, given that long and no probe (NO_ANSWER when the page did
        # not answer in time); else the server's own work's (state.background).
        if deadline_s is None:
            found = state.background(tab, target, name, **kwargs)
        elif tab.unresponsive:
            found = None
        else:
            found = state.act(target, name, deadline_s=deadline_s, **kwargs)
            if found is TIMED_OUT:
                return NO_ANSWER
            found = found if isinstance(found, (dict, int)) else None
        if state.chromium:
            return found["result"].get("value") if found and "exceptionDetails" not in found else None
        return found
    except Exception as exc:  # navigating, closed: the walk that follows says what it finds
        tab.cdp_session = None
        log.debug("element count failed", extra={"session": state.session_id, "error": str(exc)})
        return None


COUNT_ELEMENTS = "document.getElementsByTagName('*').length"
TITLE_AND_COUNT = f"[document.title, {COUNT_ELEMENTS}]"
NO_ANSWER = -1  # element_count's answer when the page did not answer within its deadline_s


def wall(state, keywords=()):
    """What login, verification or captcha wall the current page shows: password, one-time-code,
    captcha or title (a title naming one of `keywords`); None for none, or when it cannot be read."""
    tab = state.tab
    # Nothing runs behind a dialog. A page whose navigation is pending is leaving (the person
    # submitted, say, to a slow server), and reading it would wait for that server; one whose
    # script never yields (tab.unresponsive) would hold the probe for ever.
    if tab is None or state.blocker is not None or state.events.navigation_pending(tab.page) or tab.unresponsive:
        return None
    page = tab.page
    words = [word.lower() for word in keywords if word]
    for frame in page.frames[:WALL_FRAMES]:  # the main frame first: it also checks the page's title
        try:  # given the server's own INTERNAL_S: a page that hangs while it loads held this for ever
            found = state.background(tab, frame, "evaluate", expression=WALL_PROBE,
                                     arg=words if frame is page.main_frame else [])
        except Exception:  # detached, or navigating: that frame shows nothing now
            continue
        if found is None and tab.unresponsive:  # it does not answer: nothing more to read
            return None
        if found:
            return found
    return None


def await_error_page(state, navigations):
    """After a navigation failed with a network error, wait until Chromium's error page commits
    (session thread); `navigations`: the current tab's navigations before the load.

    Chromium commits chrome-error://chromewebdata/ some 100 ms after the failure is reported, and that commit interrupts
    whatever navigation started meanwhile, again and again ("interrupted by another navigation"; raw Playwright does the
    same). Waiting here, on the failure path only, lets the agent's next navigation just work.
    """
    tab = state.tab
    if not state.chromium or tab is None or state.blocker is not None:
        return
    page = tab.page
    # This failure's own error page: after a failure before it, the tab shows that one's already,
    # and its address is the same. No event is dispatched between this test and the wait.
    if tab.navigations != navigations and page.url.startswith("chrome-error:"):
        return
    with suppress(Exception):  # no error page (a download, an aborted load): nothing to wait for
        page.wait_for_event("framenavigated", timeout=ERROR_PAGE_WAIT_MS, predicate=lambda frame: (
            frame is page.main_frame and frame.url.startswith("chrome-error:")))


def browser_gone(state):
    """True when this session's connection to the browser is closed (the browser died).

    Called after a failure. The disconnect may not be dispatched yet, so a cheap
    round trip on the context (which only we close) settles it.
    """
    try:
        if not state.browser.is_connected():
            return True
        state.context.cookies("http://localhost")
        return False
    except Exception:
        return True


def storage_state(state):
    """(storage state JSON, url) for resume_session; None when it cannot be read.

    Reading local storage runs in the pages, so it goes through state.act: a dialog that opens meanwhile (a page's own
    timer, while the agent thinks) would hold it for ever, and with it the session thread.
    """
    if state.blocker is not None or state.tab is None:
        return None
    url = state.tab.page.url
    try:
        saved = state.background(state.tab, state.context, "storage_state")
    except Exception:
        return None
    return None if saved is None else (saved, url)


def collect_garbage(state):
    """Have every open page's JavaScript engine collect its garbage now.

    A renderer keeps what each navigation and snapshot left behind until memory pressure makes it collect.
    The core runs this once a session has gone quiet (--idle-gc). A page may raise a dialog at any time,
    behind which its renderer answers nothing: each request goes through state.act, so that the dialog
    ends the collection and waits for the agent's next call, which is told of it.
    """
    for tab in list(state.tabs):
        if state.blocker is not None:
            return
        if not tab.page.is_closed():
            state.background(tab, tab.page, "request_gc")


def heap_bytes(state):
    """Bytes the session's tabs hold in their renderers' JavaScript engines; None off Chromium.

    Per tab, CDP Runtime.getHeapUsage of its main frame's isolate: the V8 heap in use, the embedder's
    objects on it, and ArrayBuffer backing stores, outside the heap (Performance.getMetrics' JSHeapUsedSize
    misses those). What it counts and misses: docs/tools.md. A tab that does not answer within INTERNAL_S
    is skipped; None when no tab answered (a dialog is open).
    """
    if not state.chromium:
        return None
    total, read = 0, False
    for tab in list(state.tabs):
        if tab.page.is_closed() or tab.unresponsive:
            continue
        try:
            usage = state.background(tab, tab.cdp(), "send", method="Runtime.getHeapUsage")
        except Exception as exc:  # closed or navigating meanwhile
            log.debug("heap usage not read", extra={"session": state.session_id, "error": str(exc)})
            continue
        if usage:
            read = True
            total += usage["usedSize"] + usage.get("embedderHeapUsedSize", 0) + usage.get("backingStorageSize", 0)
    return total if read else None
