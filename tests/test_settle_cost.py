"""End to end: on a plain page, an action with nothing to wait for pays at most one round trip to settle; a key's
action answers before its short timers, which the next read waits for (issue 75).

The messages the session's Playwright sends are recorded (Transport.serialize_message, every message
on its way to the driver) with the time each left; the click's own answer marks where its call ends,
so the history's capture, which runs after it, is not counted.
"""

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from playwright._impl.transport import Transport
from support import PAGES, stored_page

import mcpbrowser
from mcpbrowser.config import Config
from mcpbrowser.session import settle as settle_module

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[1]

PLAIN = """<!doctype html><title>Plain</title><p>Nothing happens here.</p>
<button id=b onclick="document.title = 'clicked'">Press</button>"""
BUSY = """<!doctype html><title>Busy</title><p id=t>before</p>
<button id=b onclick="setTimeout(() => { document.getElementById('t').textContent = 'after' }, 200)">Later</button>"""


@pytest.fixture
def sent(monkeypatch):
    """[(monotonic time, thread name, method)] of the messages sent from session threads while the test runs."""
    out = []
    original = Transport.serialize_message

    def serialize_message(self, message):
        name = threading.current_thread().name
        if name.startswith("session-"):
            out.append((time.monotonic(), name, message.get("method")))
        return original(self, message)

    monkeypatch.setattr(Transport, "serialize_message", serialize_message)
    return out


def clicked(browser, session, sent, selector="#b"):
    """The methods sent from the click's action on until its answer."""
    done = []
    del sent[:]
    fut = browser.submit("click", {"sessionId": session.id, "selector": selector})
    fut.add_done_callback(lambda _: done.append(time.monotonic()))  # on the session thread, as it answers
    fut.result(timeout=30)
    ours = f"session-{session.id[:8]}"  # the warm pool opens others meanwhile
    methods = [method for at, thread, method in sent if at < done[0] and thread == ours]
    return methods[methods.index("click"):]


@pytest.fixture(scope="module")
def browser(pages):
    PAGES["/plain"], PAGES["/busy"] = PLAIN, BUSY
    with mcpbrowser.Browser(Config(headless=True, db=":memory:", allow_evaluate=True)) as b:
        yield b
    del PAGES["/plain"], PAGES["/busy"]


def test_a_click_on_a_plain_page_settles_in_one_round_trip(browser, pages, sent):
    with browser.create_session() as session:
        session.navigate(pages.url("/plain"))
        after = clicked(browser, session, sent)
        # The click, then one evaluation that settles and reads the title and the element count.
        assert after == ["click", "send"], after
        assert session.snapshot()["title"] == "clicked"


def test_the_settle_sends_no_script_to_a_page_that_has_it_and_sets_it_up_where_it_is_missing(browser, pages,
                                                                                             monkeypatch):
    sizes, original = [], Transport.serialize_message

    def serialize_message(self, message):
        if threading.current_thread().name.startswith("session-") and message.get("method") == "send":
            sizes.append(len(json.dumps(message.get("params"))))
        return original(self, message)

    monkeypatch.setattr(Transport, "serialize_message", serialize_message)
    with browser.create_session() as session:
        # A new tab's first about:blank was made before the session's init script: the first settle sets it up.
        assert session.call("evaluate", expression="typeof window.__mcpbSettle")["result"] == "undefined"
        session.call("press_key", key="a")
        assert session.call("evaluate", expression="typeof window.__mcpbSettle")["result"] == "function"
        session.navigate(pages.url("/plain"))
        del sizes[:]
        session.click("#b")
        # The settle's expression leaves the script (20 KB, compiled anew each time) to the page's init script.
        assert sizes and max(sizes) < 2000, sizes


def test_a_click_whose_page_reacts_later_is_waited_for_in_the_same_round_trip(browser, pages, sent):
    with browser.create_session() as session:
        session.navigate(pages.url("/busy"))
        after = clicked(browser, session, sent)
        assert after == ["click", "send"], after  # the settle waits in the page, not in round trips
        assert "after" in session.snapshot()["snapshot"]


# A page whose background never stops: a status poll every 50 ms that writes what it got into the page, and
# a long-poll begun at load that asks again as soon as it is answered (a kernel's status, a chat's feed).
POLLING = """<!doctype html><title>Polling</title><p id=status>idle</p><p id=feed></p><main id=view></main>
<button id=nothing onclick="">Nothing</button>
<button id=tick onclick="setTimeout(() => {}, 10)">Tick</button>
<button id=load onclick="fetch('/slow?ms=300').then(r => r.text()).then(() => {
  document.getElementById('view').innerHTML = '<h2>Loaded view</h2><button>Act on it</button>' })">Load</button>
<script>
  setInterval(() => fetch('/title/status').then(r => r.text())
    .then(() => { document.getElementById('status').textContent = 'polled ' + Date.now() }), 50);
  (function poll(n) { fetch('/slow?ms=400').then(r => r.text())
    .then(() => { document.getElementById('feed').textContent = 'event ' + n; poll(n + 1) }) })(0)
</script>"""


@pytest.fixture
def waits(monkeypatch):
    """The ms each settle waited in the page, as the session logs them."""
    out = []
    original = settle_module.log.debug

    def debug(message, *args, extra=None, **kwargs):
        if message == "settled":
            out.append(extra["waited"])
        return original(message, *args, extra=extra, **kwargs)

    monkeypatch.setattr(settle_module.log, "debug", debug)
    return out


@pytest.mark.alone
def test_a_background_that_polls_for_ever_holds_no_action_and_hides_no_render(browser, pages, sent, waits):
    # The poll's requests and timers began in the page's own loop, not in the click's event: before the settle
    # told them apart, a click that did nothing waited for the poll's requests and then for a quiet DOM that
    # never came (300-2,000 ms, each click).
    PAGES["/polling"] = POLLING
    try:
        with browser.create_session() as session:
            session.navigate(pages.url("/polling"))
            time.sleep(0.3)  # the poll and the long-poll are running
            for _ in range(3):
                del waits[:]
                assert clicked(browser, session, sent, "#nothing") == ["click", "send"]
                assert waits and waits[0] < 60, waits  # nothing follows the click: answered at once
            # A click whose own 10 ms timer changes nothing: the DOM's quiet after it is the action's, not the
            # poll's writes, which made every such click wait the whole 300 ms linger.
            del waits[:]
            clicked(browser, session, sent, "#tick")
            assert waits and waits[0] < 250, waits
            del waits[:]
            clicked(browser, session, sent, "#load")
            # What the click's own request rendered is there, read at once (no half-rendered read).
            assert "Loaded view" in session.snapshot()["snapshot"]
    finally:
        del PAGES["/polling"]


# Pages styled by a scroller's state, the query wherever a page may put it: the browser applies such a rule only at
# its next rendering frame, after an action's scroll or overflow (test_capture_edit's scrolls-box and overflows).
QUERY = "@container scroll-state(scrollable: top) { .up { display: block } }"
SCROLL_STYLED = {
    "style": f"<style>.up {{ display: none }} {QUERY}</style>",
    "media": f"<style>@media screen {{ @layer base {{ {QUERY} }} }}</style>",
    "nested": f"<style>main {{ {QUERY} }}</style>",
    "import": "<style>@import url(/scroll-styled.css);</style>",
    "adopted": f"<script>const s = new CSSStyleSheet(); s.replaceSync({QUERY!r}); document.adoptedStyleSheets = [s]"
               "</script>",
}
BUTTON = "<main><button id=b onclick=\"document.title = 'clicked'\">Press</button><p class=up>Back to top</p></main>"


def test_a_page_styled_by_a_scrollers_state_is_looked_at_after_a_frame_and_no_other(browser, pages, waits):
    # The frame costs such a page a few ms on each action (its settle waits in the page: no round trip); a page without
    # such a query (a size query, no style at all) answers at the first look, as before (0 ms waited).
    PAGES["/scroll-styled.css"] = QUERY
    for name, head in {**SCROLL_STYLED, "size": "<style>@container (width > 10px) { .up { color: red } }</style>",
                       "plain": ""}.items():
        PAGES[f"/scroll-styled-{name}"] = f"<!doctype html><title>{name}</title>{head}{BUTTON}"
    PAGES["/scroll-styled-later.css"] = ".up { color: red }"
    PAGES["/scroll-styled-later"] = ("<!doctype html><title>later</title><style>@media screen { .up { color: red } }"
                                     "</style><style>@import url(/scroll-styled-later.css);</style><script>"
                                     "const s = new CSSStyleSheet(); s.replaceSync('.up { color: red }'); "
                                     f"document.adoptedStyleSheets = [s]</script>{BUTTON}")
    try:
        with browser.create_session() as session:
            for name in [*SCROLL_STYLED, "size", "plain"]:
                session.navigate(pages.url(f"/scroll-styled-{name}"))
                del waits[:]
                session.click("#b")
                assert len(waits) == 1 and (waits[0] >= 1) == (name in SCROLL_STYLED), (name, waits)
            # A query that comes later into a sheet read before (its rule count changed) is found at the next action.
            session.call("evaluate", expression="document.head.append(document.createElement('style'))")
            del waits[:]
            session.click("#b")
            session.call("evaluate", expression=f"document.styleSheets[0].insertRule({QUERY!r})")
            session.click("#b")
            assert len(waits) == 3 and waits[0] == 0 and waits[2] >= 1, waits
            # Changes that leave a read sheet's rule count as it was: a query put inside its @media rule, inside the
            # style rule in that, into the sheet an @import brought, or with its name escaped (the browser reads
            # `scroll-st\61 te(` as `scroll-state(`); a rule removed and the query added by the legacy names; an
            # adopted sheet's one rule replaced by the query (at once, and when a replace() promise settles).
            for change in ("document.styleSheets[0].cssRules[0].insertRule(query)",
                           "document.styleSheets[0].cssRules[0].cssRules[0].insertRule(query)",
                           "document.styleSheets[1].cssRules[0].styleSheet.insertRule(query)",
                           "document.styleSheets[0].cssRules[0].insertRule(query.replace('state', 'st\\\\61 te'))",
                           "(document.styleSheets[0].removeRule(0), document.styleSheets[0].addRule("
                           "query.slice(0, query.indexOf('{')), query.slice(query.indexOf('{') + 1, -1)))",
                           "document.adoptedStyleSheets[0].replaceSync(query)",
                           "document.adoptedStyleSheets[0].replace(query)"):
                session.navigate(pages.url("/scroll-styled-later"))
                del waits[:]
                session.click("#b")
                session.call("evaluate", expression=f"(query => {change})({QUERY!r})")
                session.click("#b")
                assert len(waits) == 3 and waits[0] == 0 and waits[2] >= 1, (change, waits)
    finally:
        del PAGES["/scroll-styled.css"], PAGES["/scroll-styled-later"], PAGES["/scroll-styled-later.css"]
        for name in [*SCROLL_STYLED, "size", "plain"]:
            del PAGES[f"/scroll-styled-{name}"]


def test_the_rule_methods_the_settle_follows_look_and_act_as_the_browsers_own(browser, pages):
    # Each has the browser's name and length, no prototype, and converts its rule to text once: a page's object whose
    # toString counts its calls sees what it would without the settle (its sheet read by a settle before).
    methods = ("CSSStyleSheet.prototype.insertRule", "CSSStyleSheet.prototype.deleteRule",
               "CSSStyleSheet.prototype.addRule", "CSSStyleSheet.prototype.replace",
               "CSSStyleSheet.prototype.replaceSync", "CSSGroupingRule.prototype.insertRule",
               "CSSStyleRule.prototype.insertRule")
    with browser.create_session() as session:
        session.navigate(pages.url("/plain"))
        session.call("evaluate", expression="document.head.append(Object.assign(document.createElement('style'),"
                                            " {textContent: '@media screen { .a { color: red } }'}))")
        session.click("#b")
        seen = session.call("evaluate", expression="""(() => {
            const s = document.styleSheets[0]; let calls = 0;
            const text = {toString() { calls++; return '.b { color: red }'; }};
            return [s.insertRule(text, 1), s.cssRules[0].insertRule(text), calls,
                    ...[""" + ", ".join(methods) + """].map((f) => `${f.name}/${f.length}/${'prototype' in f}`)];
        })()""")["result"]
        # A page that redefined what the wrappers read (its sheets' cssRules) still has its insertRule work.
        odd = session.call("evaluate", expression="""() => { const s = document.styleSheets[0];
            Object.defineProperty(CSSStyleSheet.prototype, 'cssRules', {get() { return null }, configurable: true});
            try { return 'inserted at ' + s.insertRule('@media print { .c { color: red } }', 0) }
            catch (e) { return 'threw ' + e } }""")["result"]
    assert seen == [1, 0, 2, "insertRule/1/false", "deleteRule/1/false", "addRule/0/false", "replace/1/false",
                    "replaceSync/1/false", "insertRule/1/false", "insertRule/1/false"], seen
    assert odd == "inserted at 0", odd


FORM = """<!doctype html><title>Form</title><label>Name <input id=name></label><label>City <input id=city></label>
<label>Size <select id=size><option>S</option><option>M</option></select></label>
<button id=go onclick="document.getElementById('out').textContent = 'clicked'">Go</button><p id=out></p>"""


@pytest.fixture
def trips(monkeypatch):
    """The session thread's round trips: each a list of the methods sent before the next answer came."""
    wire, session = [], []
    send, receive = Transport.serialize_message, Transport.deserialize_message

    def serialize_message(self, message):
        if session and threading.current_thread().name == session[0]:
            wire.append(message.get("method"))
        return send(self, message)

    def deserialize_message(self, data):
        parsed = receive(self, data)
        if session and threading.current_thread().name == session[0] and "id" in parsed:
            wire.append(None)  # an answer
        return parsed

    monkeypatch.setattr(Transport, "serialize_message", serialize_message)
    monkeypatch.setattr(Transport, "deserialize_message", deserialize_message)

    def after(browser, s, tool, method, **args):
        """The round trips of one call after its act (Playwright's `method`), its capture after the answer included."""
        session[:] = [f"session-{s.id[:8]}"]
        del wire[:]
        browser.submit(tool, {"sessionId": s.id, **args}).result(timeout=30)
        time.sleep(0.3)  # the capture after the answer; the next call, after a quiet spell, would ask for news first
        sent, out, current = wire[wire.index(method) + 1:], [], []
        for name in sent:
            if name is not None:
                current.append(name)
            elif current:
                out, current = [*out, current], []
        return out + ([current] if current else [])

    return after


def test_after_a_type_or_a_select_one_round_trip_and_no_capture_of_its_own(browser, pages, trips):
    # Issue 75. Before: a type's secret field check, its settle, then (after the answer) the capture's proof, one
    # after another; a select's settle, then the proof. Now each is answered in the settle's round trip, and the
    # capture is the proved edit.
    # A page of its own: support.PAGES' "/form" is every module's in this worker process (changed, then deleted
    # here, it was gone for the modules that ran after).
    PAGES["/round-trip-form"] = FORM
    try:
        with browser.create_session() as session:
            session.navigate(pages.url("/round-trip-form"))
            session.call("wait_for", selector="#go")  # the navigate's capture is held
            typed = trips(browser, session, "type", "fill", selector="#name", text="Ada")
            assert len(typed) == 1, typed
            chosen = trips(browser, session, "select", "selectOption", selector="#size", values=["M"])
            assert len(chosen) == 1, chosen
            # fill_form, from its first fill on: that field's look; the next field's kind (its counts together); its
            # fill; its look with the settle; the capture's walk (fill_form may send input the watch cannot see).
            filled = trips(browser, session, "fill_form", "fill", fields=[{"selector": "#name", "value": "Bo"},
                                                                          {"selector": "#city", "value": "Oslo"}])
            assert len(filled) == 5 and "send" in filled[3] and "ariaSnapshot" in filled[4], filled
            # The click's capture walks (it may have sent the page input the watch cannot see): the settle, then it.
            clicked_trips = trips(browser, session, "click", "click", selector="#go")
            assert len(clicked_trips) == 2 and "ariaSnapshot" in clicked_trips[1], clicked_trips
            page = session.snapshot()["snapshot"]
            assert 'textbox "Name" [ref=e3]: Bo' in page and 'option "M" [selected]' in page, page
            assert "clicked" in page, page
    finally:
        del PAGES["/round-trip-form"]


def test_a_type_whose_page_reacts_for_a_second_is_not_probed_after_its_settle(browser, pages, trips):
    # The settle sent with the look waited for the request the typing started (over a second): the page answered
    # it, so no probe of a page that may hang follows (run_tool's, after a slow handler); the capture walks.
    PAGES["/saving"] = ("<!doctype html><title>Saving</title><input id=f aria-label=Note><p id=o></p><script>"
                        "f.oninput = () => fetch('/slow?ms=1100').then(r => r.text())"
                        ".then(() => { o.textContent = 'Saved' })</script>")
    try:
        with browser.create_session() as session:
            session.navigate(pages.url("/saving"))
            session.call("wait_for", selector="#f")
            typed = trips(browser, session, "type", "fill", selector="#f", text="Ada")
            assert len(typed) == 2 and "ariaSnapshot" in typed[1], typed
            assert "Saved" in session.snapshot()["snapshot"]
    finally:
        del PAGES["/saving"]

# Issue 75: a search box that asks for its results 250 ms after the last key (a debounce), and a field whose Enter
# shows its result after a short timer. A key's or a field's action answers without waiting for those timers; the
# next read finishes its settle first.
DEBOUNCED = """<!doctype html><title>Search</title><label>Search <input id=q></label>
<label>Note <input id=note></label><button id=b onclick="document.title = 'clicked'">Press</button>
<ul id=results></ul><p id=out>nothing yet</p><script>
  let due;
  q.oninput = () => { clearTimeout(due); due = setTimeout(() => {
    results.innerHTML = '<li>Result for ' + q.value + '</li>' }, 250) };
  note.onkeydown = (e) => { if (e.key === 'Enter') setTimeout(() => { out.textContent = 'noted ' + note.value }, 150) };
</script>"""


@pytest.fixture
def debounced(browser, pages):
    PAGES["/debounced"] = DEBOUNCED
    with browser.create_session() as session:
        session.navigate(pages.url("/debounced"))
        session.call("wait_for", selector="#q")
        yield session
    del PAGES["/debounced"]


@pytest.fixture
def finishes(monkeypatch):
    """(before what, ms waited) of each settle.finish that waited in the page, as the session logs them."""
    out = []
    original = settle_module.log.debug

    def debug(message, *args, extra=None, **kwargs):
        if message == "settle finished":
            out.append((extra["before"], extra["waited"]))
        return original(message, *args, extra=extra, **kwargs)

    monkeypatch.setattr(settle_module.log, "debug", debug)
    return out


def back_to_back(browser, session, *calls):
    """The answers of calls queued all at once, as a fast agent's come: each finds the one before answered."""
    futures = [browser.submit(tool, {"sessionId": session.id, **args}) for tool, args in calls]
    return [f.result(timeout=30) for f in futures]


# Alone: the 250 ms timer is waited for at most the settle's cap (1.5 s) after the type's start.
@pytest.mark.alone
def test_a_typed_search_answers_before_its_debounce_and_the_next_snapshot_shows_the_results(browser, debounced,
                                                                                            waits, finishes):
    typed, read = back_to_back(browser, debounced, ("type", {"selector": "#q", "text": "ada"}), ("snapshot", {}))
    assert waits == [0], waits  # the type's settle did not wait for the debounce (before issue 75: 250 ms and more)
    assert "Result for ada" in read["snapshot"], read
    # The snapshot waiting would finish the type's settle first: the type's capture finished it instead, and walked
    # once, for both (settle.WALKS_FIRST). A click waiting is not waited for (test_an_action_after_a_key_...).
    assert [before for before, _ in finishes] == ["capture"], finishes  # (its wait: 0 ms on a loaded machine)
    # The history: each refId reads back its page as the call left it, the type's settled.
    assert "]: ada" in stored_page(browser, typed) and "Result for ada" in stored_page(browser, typed)
    assert "Result for ada" in stored_page(browser, read)


@pytest.mark.alone
def test_a_typed_search_left_alone_is_stored_with_its_results(browser, debounced, waits, finishes):
    typed = debounced.call("type", selector="#q", text="eve")
    assert waits == [0], waits
    # No call came: the capture finished the type's settle, then stored the page; the read after has nothing to wait.
    assert "Result for eve" in stored_page(browser, typed)
    assert [before for before, _ in finishes] == ["capture"], finishes
    assert "Result for eve" in debounced.snapshot()["snapshot"] and len(finishes) == 1, finishes


@pytest.mark.alone
@pytest.mark.parametrize("read", ["evaluate", "dom_snapshot", "screenshot"])
def test_a_key_whose_short_timer_renders_is_seen_by_the_next_read(browser, debounced, waits, finishes, read):
    debounced.call("type", selector="#note", text="milk")
    args = {"expression": "() => out.textContent"} if read == "evaluate" else {}
    pressed, got = back_to_back(browser, debounced, ("press_key", {"key": "Enter"}), (read, args))
    assert waits[:2] == [0, 0], waits  # (an evaluate settles after itself too: it may act)
    assert ("read", finishes[-1][1]) == finishes[-1] and finishes[-1][1] > 0, finishes  # it waited for the timer
    if read == "screenshot":  # its picture is not read here: what the page shows now
        got = debounced.call("evaluate", expression="() => out.textContent")
    assert "noted milk" in json.dumps(got), got


@pytest.mark.alone
def test_an_action_after_a_key_does_not_wait_for_the_keys_timers(browser, debounced, waits, finishes):
    back_to_back(browser, debounced, ("type", {"selector": "#q", "text": "bob"}), ("click", {"selector": "#b"}))
    # The click settled at once on its own, and no read finished the type's settle before it; nor did the click's
    # capture (the page as the click left it: only a key's own capture waits for its timers); the read after both
    # still shows what the type's debounce rendered.
    assert waits == [0, 0] and "read" not in [before for before, _ in finishes], (waits, finishes)
    assert "Result for bob" in debounced.snapshot()["snapshot"]
    assert "capture" not in [before for before, _ in finishes], finishes


def test_the_round_trip_script_counts_each_action():
    # scripts/round_trips.py (the table in docs/performance.md): it runs, and says what this module asserts.
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "round_trips.py"), "--json"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    counts = json.loads(done.stdout)
    assert set(counts) == {"click", "type", "select", "press_key", "fill_form", "loop"}
    assert len(counts["type"]["after"]) == 1 and counts["type"]["capture"] == [], counts["type"]
    assert len(counts["click"]["after"]) == 1, counts["click"]
    # The benchmark's loop back to back: type waits for the navigate's capture (a walk); the snapshot after a click
    # waits for the click's (a walk), and is answered from it with one count of its own, not a second walk.
    loop = dict(counts["loop"])
    walks = {tool: sum(trip.count("ariaSnapshot") for trip in trips) for tool, trips in loop.items()}
    assert walks == {"navigate": 0, "type": 1, "click": 0, "snapshot": 1}, loop
    assert loop["snapshot"][-1] == ["queryCount", "send"], loop["snapshot"]  # the watch's count, the title
