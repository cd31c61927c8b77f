"""End to end: the history's capture after a call walks the page only when it changed since the last whole
snapshot (page_watch), and every refId still reads back the page as it was when its call answered.

The calls are queued on the session thread all at once (the library's `submit`), so each one waits for the
previous call's capture, as back-to-back calls from a fast agent do. Whether a capture was reused or walked is
read from the server's log (`capture_reused`), so each test also shows that the reuse it guards happened.
"""

import time

import pytest
from support import PAGES, logged_events, stored_page

import mcpbrowser
from mcpbrowser.config import Config

pytestmark = pytest.mark.e2e

PAGE = """<!doctype html><title>Capture</title>
<label>Query <input id=q></label>
<p id=t>start</p>
<button id=b>Nothing</button>"""

# A search box whose results come 150 ms after the last key (a debounce, which a key's answer does not wait for).
DEBOUNCED = """<!doctype html><title>Search</title>
<label>Search <input id=s></label><p id=r>no results</p>
<script>
  let timer;
  document.getElementById('s').addEventListener('input', (e) => {
    clearTimeout(timer);
    timer = setTimeout(() => { document.getElementById('r').textContent = 'results for ' + e.target.value }, 150);
  });
</script>"""

# A clock that changes the page every 20 ms: no count through the watch can prove it unchanged.
TICKING = """<!doctype html><title>Clock</title>
<label>Name <input id=n></label><p id=c>0</p>
<script>let n = 0; setInterval(() => { document.getElementById('c').textContent = ++n }, 20);</script>"""

# A key's timer (50 ms) loads a page the test server answers the typed number of ms later (<title>Slow</title>).
NAV_SLOW = """<!doctype html><title>Before</title>
<label>Go <input id=g></label><p>before page</p>
<script>
  document.getElementById('g').addEventListener('input', (e) => {
    setTimeout(() => { location.href = '/slow?ms=' + e.target.value }, 50) });
</script>"""

# A field beside a frame, whose own document the page watch does not watch.
FRAMED = """<!doctype html><title>Framed</title><label>Name <input id=n></label>
<iframe srcdoc="<p>inside the frame</p>"></iframe>"""

CODE = """<!doctype html><title>Code</title>
<label>Code <input id=c autocomplete=one-time-code></label><label>Note <input id=n></label>"""

# A page that tries to make the watch miss what it does: a forged watch in its own world, the DOM APIs the
# watch calls replaced there, every event stopped before any listener added later sees it, and a menu that CSS
# alone shows under the pointer.
HOSTILE = """<!doctype html><title>Hostile</title>
<style>#menu { display: none } #hover:hover + #menu { display: block }</style>
<script>
  for (const type of ['input', 'change', 'focusin', 'focusout', 'pointerover', 'pointerout', 'pointerdown',
                      'pointerup', 'mouseover', 'mouseout', 'mousedown', 'mouseup', 'click', 'keydown', 'keyup',
                      'toggle', 'resize'])
    addEventListener(type, (e) => e.stopImmediatePropagation(), true);
  const quiet = {armed: true, dirty: false, token: '1', url: location.href, roots: 1, forms: ''};
  for (let n = 0; n < 1000; n++) quiet.token = String(n);
  Object.defineProperty(globalThis, Symbol.for('mcpbrowser.watch'), {value: Object.freeze(quiet)});
  window.MutationObserver = class { observe() {} disconnect() {} takeRecords() { return []; } };
  EventTarget.prototype.addEventListener = function () {};
  Document.prototype.querySelector = () => null;
  Document.prototype.querySelectorAll = () => [];
</script>
<p id=t>start</p>
<button id=hover>Menu</button><p id=menu>Delete everything</p>"""


@pytest.fixture(scope="module")
def browser(pages):
    PAGES["/capture"], PAGES["/hostile"], PAGES["/code"] = PAGE, HOSTILE, CODE
    PAGES["/debounced"], PAGES["/ticking"], PAGES["/navslow"] = DEBOUNCED, TICKING, NAV_SLOW
    PAGES["/framed-field"] = FRAMED
    with mcpbrowser.Browser(Config(headless=True, db=":memory:", allow_evaluate=True)) as b:
        yield b
    for path in ("/capture", "/hostile", "/code", "/debounced", "/ticking", "/navslow", "/framed-field"):
        del PAGES[path]


@pytest.fixture
def reuses():
    """The capture_reused events the server logs while the test runs, as a list that grows."""
    with logged_events("capture_reused") as seen:
        yield seen

content = stored_page


def later(session, script):
    """Have the page run `script` by itself 1.5 s from now (an interval, which no settle waits for).
    The evaluate's own capture walks the page, as every evaluate's does, and arms the watch. 1.5 s, not
    300 ms: the next call and its capture must come before the change, and on a loaded 2-core machine
    (the suite's parallel run) they took longer than 300 ms."""
    session.call("evaluate",
                 expression=f"() => {{ const id = setInterval(() => {{ clearInterval(id); {script} }}, 1500) }}")


def test_back_to_back_calls_each_read_back_their_own_page(browser, pages, reuses):
    with browser.create_session() as session:
        sid = session.id
        same = {"selector": "#t"}  # a wait_for that finds the page as it was: nothing to walk
        calls = [("navigate", {"url": pages.url("/capture")}),
                 ("type", {"selector": "#q", "text": "one"}),
                 ("snapshot", {}),
                 ("wait_for", same),
                 ("wait_for", same),
                 ("type", {"selector": "#q", "text": "two"}),
                 ("wait_for", same),
                 ("evaluate", {"expression": "() => { document.getElementById('t').textContent = 'three' }"}),
                 ("wait_for", same),
                 ("type", {"selector": "#q", "text": "four"}),
                 ("snapshot", {}),
                 ("wait_for", same)]
        # All queued before the first runs: each waits on the session thread for the previous one's capture.
        futures = [browser.submit(tool, {"sessionId": sid, **args}) for tool, args in calls]
        answers = [f.result(timeout=60) for f in futures]
        expected = ["", "one", "one", "one", "one", "two", "two", "two", "two", "four", "four", "four"]
        texts = ["start"] * 7 + ["three"] * 5
        for (tool, _), answer, value, text in zip(calls, answers, expected, texts, strict=True):
            page = content(browser, answer)
            fields = [line for line in page.splitlines() if 'textbox "Query"' in line]
            assert len(fields) == 1 and (fields[0].split("]: ", 1) + [""])[1] == value, (tool, page)
            assert text in page and ({"start", "three"} - {text}).isdisjoint(page.split()), (tool, text, page)
        assert len(reuses) == 5  # every wait_for: none walked the page again


def test_a_snapshot_right_after_a_key_answers_with_the_keys_capture_walked_once_settled(browser, pages):
    # The key answers before its debounce (issue 75); the snapshot queued behind it would finish that settle first.
    # So the key's capture finishes it and walks once, and the snapshot answers with that walk: the call's log says
    # it reused the page, which changed after the key (the results came), and both refIds hold the results.
    with browser.create_session() as session, logged_events("tool_call") as calls:
        session.navigate(pages.url("/debounced"))
        for word in ("one", "two", "three"):
            futures = [browser.submit(tool, {"sessionId": session.id, **args}) for tool, args in
                       (("type", {"selector": "#s", "text": word}), ("snapshot", {}))]
            typed, read = (f.result(timeout=60) for f in futures)
            assert f"results for {word}" in read["snapshot"], read
            assert f"results for {word}" in content(browser, typed) and "no results" not in content(browser, typed)
            assert content(browser, read) == content(browser, typed)
        reads = [r for r in calls if r.tool == "snapshot"]
        assert len(reads) == 3 and all(getattr(r, "snapshot_reused", False) for r in reads), reads


def test_a_snapshot_that_waited_for_the_capture_answers_with_its_walk_on_a_page_that_never_stops(browser, pages):
    # The capture walked the page after the snapshot came: that walk is the page as the snapshot found it, though
    # the clock has moved since (no count could prove it unchanged: without this the read walks again).
    with browser.create_session() as session, logged_events("tool_call") as calls:
        session.navigate(pages.url("/ticking"))
        for word in ("one", "two"):
            futures = [browser.submit(tool, {"sessionId": session.id, **args}) for tool, args in
                       (("type", {"selector": "#n", "text": word}), ("snapshot", {}))]
            typed, read = (f.result(timeout=60) for f in futures)
            assert f'textbox "Name" [active] [ref=e3]: {word}' in read["snapshot"], read
            assert content(browser, read) == content(browser, typed)
        reads = [r for r in calls if r.tool == "snapshot"]
        assert len(reads) == 2 and all(getattr(r, "snapshot_reused", False) for r in reads), reads
        # A snapshot alone, the page's last walk long past: walked again, as the clock moved.
        time.sleep(0.1)
        session.snapshot()
        assert not getattr(calls[-1], "snapshot_reused", False)


def test_a_snapshot_after_a_key_that_loads_a_slow_page_names_that_pages_title(browser, pages):
    # An outside try: the key's capture read the title with its walk while the new document was on its way (the
    # history answered the old one's at once, the walk waited for the new one): 'Before' for some of these delays.
    with browser.create_session() as session:
        for ms in (150, 300, 500, 800):
            session.navigate(pages.url("/navslow"))
            futures = [browser.submit(tool, {"sessionId": session.id, **args}) for tool, args in
                       (("type", {"selector": "#g", "text": str(ms)}), ("snapshot", {}),
                        ("evaluate", {"expression": "() => document.title"}))]
            _, read, real = (f.result(timeout=60) for f in futures)
            assert "/slow" in read["url"] and "slow" in read["snapshot"] and real["result"] == "Slow", (read, real)
            assert read["title"] == "Slow", (ms, read)


def test_a_snapshot_waiting_behind_a_key_on_a_page_with_frames_is_read_again(browser, pages):
    # A frame's document is not watched, so such a page is always walked for the read (test_page_watch's rule):
    # not answered with the capture's walk either (a fresh clone's run caught the first version doing so).
    with browser.create_session() as session, logged_events("tool_call") as calls:
        session.navigate(pages.url("/framed-field"))
        for word in ("one", "two"):
            futures = [browser.submit(tool, {"sessionId": session.id, **args}) for tool, args in
                       (("type", {"selector": "#n", "text": word}), ("snapshot", {}))]
            _, read = (f.result(timeout=60) for f in futures)
            assert f": {word}" in read["snapshot"] and "inside the frame" in read["snapshot"], read
        reads = [r for r in calls if r.tool == "snapshot"]
        assert len(reads) == 2 and not any(getattr(r, "snapshot_reused", False) for r in reads), reads


def test_a_page_that_changed_by_itself_is_captured_anew(browser, pages, reuses):
    with browser.create_session() as session:
        session.navigate(pages.url("/capture"))
        later(session, "document.getElementById('t').textContent = 'changed by a timer'")
        quiet = session.wait_for(selector="#t")  # before the timer: the page as it was
        # get_content waits for the call's record, so its capture (after the answer) is counted by then.
        assert "start" in content(browser, quiet) and len(reuses) == 1  # not walked again
        time.sleep(1.8)
        after = session.wait_for(selector="#t")
        assert "changed by a timer" in content(browser, after) and "start" not in content(browser, after)
        assert len(reuses) == 1  # walked again


def test_a_hostile_page_cannot_make_a_change_look_like_none(browser, pages, reuses):
    with browser.create_session() as session:
        session.navigate(pages.url("/hostile"))
        quiet = session.wait_for(selector="#t")
        assert "start" in content(browser, quiet) and len(reuses) == 1  # nothing changed, nothing walked
        # Its own timer changes its text: its world's forged watch and replaced APIs are not the watch's.
        later(session, "document.getElementById('t').textContent = 'changed by a timer'")
        time.sleep(1.8)
        changed = session.wait_for(selector="#t")
        assert "changed by a timer" in content(browser, changed)
        # The pointer over the button shows the menu by CSS alone, and the page stops the pointer's events
        # before the watch's listener: the hover, which sent input, is walked all the same.
        assert "Delete everything" not in content(browser, changed)
        hovered = session.call("hover", selector="#hover")
        assert "Delete everything" in content(browser, hovered)


def test_a_secret_field_filled_since_the_last_read_is_hidden_in_the_capture(browser, pages):
    # The page was read before (it has refs): the capture reads the secret fields' count with its walk.
    with browser.create_session() as session:
        session.navigate(pages.url("/code"))
        filled = session.call("evaluate", expression="() => { document.getElementById('c').value = '918273';"
                                                     " document.getElementById('n').value = 'plain words' }")
        page = content(browser, filled)
        assert "plain words" in page and "918273" not in page and "[REDACTED]" in page, page
