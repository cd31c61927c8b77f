"""Pages that misbehave as real pages do, each beside a quiet session of the same server that must go on.

Every test runs its misbehaving page in one session while a second session of the same
server clicks a button every half second (`Quiet`); each of those clicks must succeed
within 5 s.
"""

import json
import threading
import time

import pytest
from support import PAGES, McpClient, server_pid, wait_for

# Its pages hang, loop and flood, and most tests bound how soon the server answers: alone.
pytestmark = [pytest.mark.e2e, pytest.mark.alone]

QUIET_LIMIT_S = 5.0

# The misbehaving pages, served by the shared page server (tests/support.py) like its own.
PAGES.update({
    # A "still there?" prompt: an alert 200 ms after the click, while the agent thinks.
    "/later-alert": """<!doctype html><title>Later alert</title>
<button id="arm" onclick="setTimeout(() => alert('still there?'),
  +(new URLSearchParams(location.search).get('ms') || 200))">Arm</button>""",
    # An alert loop: a timer's alert after alert, or one synchronous loop of them.
    "/alert-loop": """<!doctype html><title>Alert loop</title>
<button id="timer" onclick="let n = 0; setInterval(() => alert('again ' + ++n), 10)">Timer</button>
<button id="spin" onclick="setTimeout(() => { for (let n = 1; ; n++) alert('spin ' + n) })">Spin</button>""",
    # A script that never yields, 500 ms after the click that starts it.
    "/hang": """<!doctype html><title>Hang</title>
<button id="hang" onclick="setTimeout(() => { for (;;) {} }, 500)">Hang</button>""",
    # 200,000 console lines in a few seconds, and one line of 10 MB.
    "/console-flood": """<!doctype html><title>Flood</title>
<button id="flood" onclick="setTimeout(() => {
  for (let i = 0; i < 200000; i++) console.log('flood line ' + i, {i});
  console.log('x'.repeat(10000000));
})">Flood</button>""",
    # A page that sets a 200,000-character title and a 100,000-character query, and raises an alert as long.
    "/huge-strings": """<!doctype html><title>Huge</title>
<button id="grow" onclick="document.title = 'T'.repeat(200000);
  history.replaceState(null, '', '?q=' + 'u'.repeat(100000))">Grow</button>
<button id="say" onclick="alert('A'.repeat(100000))">Say</button>
<a id="file" download="%s.txt" href="data:text/plain,hello">File</a>""" % ("n" * 2000),
    # 2,000 requests as fast as the page can make them, 20 at a time.
    "/network-flood": """<!doctype html><title>Net flood</title>
<button id="flood" onclick="(async () => { let done = 0; for (let i = 0; i < 100; i++) {
  await Promise.all(Array.from({length: 20}, (_, j) => fetch('/counter?n=' + (i * 20 + j)).then(() => done++))); }
  document.title = 'done ' + done; })()">Flood</button>""",
    # window.print(), which would open a print dialog in a headed browser.
    "/print": """<!doctype html><title>Print</title>
<button id="print" onclick="print(); document.title = 'Printed'">Print</button>""",
    # A page that asks before it lets the tab go (once the user has interacted with it).
    "/ask-before-leaving": """<!doctype html><title>Unsaved</title>
<script>onbeforeunload = e => { e.preventDefault(); e.returnValue = ''; }</script>
<input id="draft"><button id="touch" onclick="document.title = 'Touched'">Touch</button>
<a id="away" href="/title/away">Away</a>""",
    # A click that opens 40 windows, and a button on the page that opened them.
    "/storm": """<!doctype html><title>Storm</title>
<button id="storm" onclick="for (let i = 0; i < 40; i++) window.open('/title/W' + i)">Storm</button>
<button id="after" onclick="document.title = 'Still here'">After</button>
<button id="spin" onclick="for (;;) {}">Spin</button>""",
})


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(line.split()[1] for line in f if line.startswith("VmRSS:"))) / 1024


class Quiet:
    """A second session on the same server clicking a counter every half second, timing each click."""

    def __init__(self, client, pages):
        self.client = client
        self.session = client.tool("create_session", url=pages.url("/form"))["sessionId"]
        self.clicks = []    # (seconds, errorCode or None)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(0.5):
            started = time.monotonic()
            result = self.client.call("click", {"sessionId": self.session, "selector": "#count"})
            code = None
            if result.is_error:
                code = json.loads(result.content[0].text).get("errorCode")
            self.clicks.append((time.monotonic() - started, code))

    def __exit__(self, failed, *exc):
        # A fast test body may end before the first click (0.5 s in): the quiet session must
        # have clicked at least once while the misbehaving page was open, so wait for it.
        deadline = time.monotonic() + 30
        while not self.clicks and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        self._stop.set()
        self._thread.join(60)
        self.client.call("close_session", {"sessionId": self.session})
        if failed:
            return  # the test's own failure says more
        assert self.clicks, "the quiet session never clicked"
        slowest = max(seconds for seconds, _ in self.clicks)
        print(f"quiet session: {len(self.clicks)} clicks, slowest {slowest:.2f} s")  # shown with -s
        bad = [(round(s, 1), code) for s, code in self.clicks if code is not None or s > QUIET_LIMIT_S]
        assert not bad, f"quiet session's clicks failed or were slow: {bad} of {len(self.clicks)}"


@pytest.fixture(scope="module")
def client():
    c = McpClient()
    yield c
    c.close()


@pytest.mark.parametrize("delay_ms", [200, 1600])
def test_dialog_while_the_agent_thinks_is_reported_at_once_and_the_page_kept(client, pages, delay_ms):
    # The idle collection (1 s after a call), the capture after the call and the storage save
    # all ran into the alert; the next call waited for the watchdog (38-58 s) and lost the page.
    # At 1.6 s the alert comes after the idle collection: the next call must still hear of it
    # first, not start its click and meet the dialog halfway.
    url = pages.url(f"/later-alert?ms={delay_ms}")
    session = client.tool("create_session", url=url)["sessionId"]
    with Quiet(client, pages):
        client.tool("click", sessionId=session, selector="#arm")
        time.sleep(2.5)  # the agent thinks; the alert opens, the idle collection comes due
        started = time.monotonic()
        error = client.error("click", sessionId=session, selector="#arm")
        took = time.monotonic() - started
        assert error["errorCode"] == "DIALOG_OPEN", error
        assert "('still there?')" in error["message"], error
        assert took < 2.0, took
        assert "collect_garbage" not in str(error)
        answered = client.tool("handle_dialog", sessionId=session, accept=True)
        assert "still there?" in answered["message"]
        listed = client.tool("tabs", sessionId=session)
        assert listed["tabs"][0]["url"] == url  # the same page, not a fresh one
    client.call("close_session", {"sessionId": session})


@pytest.mark.parametrize("button", ["timer", "spin"])
def test_an_alert_loop_is_answered_by_the_server_and_handle_dialog_never_fails(client, pages, button):
    # handle_dialog answered BROWSER_ERROR (a protocol error: the next alert had replaced the
    # one it answered), navigate DIALOG_OPEN or NAVIGATION_FAILED: no way out in 4 calls.
    session = client.tool("create_session", url=pages.url("/alert-loop"))["sessionId"]
    with Quiet(client, pages):
        client.tool("click", sessionId=session, selector=f"#{button}")
        # The first alert is open before the agent answers (on a loaded machine the first handle_dialog came
        # before it, and three answers were too few for the loop rule: a flaky test, not a lockout).
        assert wait_for(lambda: "dialog" in client.tool("tabs", sessionId=session)["tabs"][0], 10), "no alert came"
        answers = [client.call("handle_dialog", {"sessionId": session, "accept": True}) for _ in range(4)]
        shown = [json.loads(a.content[0].text) for a in answers]
        errors = [s.get("errorCode") for a, s in zip(answers, shown, strict=True) if a.is_error]
        assert set(errors) <= {"NO_DIALOG_OPEN"}, shown
        # The server took over after a few: the answers say so.
        assert any(s.get("dialogsDismissed") or s.get("details", {}).get("dialogsDismissed") for s in shown), shown
        # Out in one call.
        left = client.tool("navigate", sessionId=session, url=pages.url("/title/out"))
        assert left["title"] == "out" and left["url"] == pages.url("/title/out")
        assert client.tool("click", sessionId=session, selector="h1")["success"]
    client.call("close_session", {"sessionId": session})


@pytest.mark.parametrize("button", ["timer", "spin"])
def test_navigate_and_close_session_get_out_of_an_alert_loop(client, pages, button):
    session = client.tool("create_session", url=pages.url("/alert-loop"))["sessionId"]
    with Quiet(client, pages):
        client.tool("click", sessionId=session, selector=f"#{button}")
        left = client.tool("navigate", sessionId=session, url=pages.url("/title/away"))
        assert left["title"] == "away", left
        assert left["dialogsDismissed"] >= 1, left  # what stood in the way, said
        other = client.tool("create_session", url=pages.url("/alert-loop"))["sessionId"]
        client.tool("click", sessionId=other, selector=f"#{button}")
        closed = client.tool("close_session", sessionId=other)
        assert closed["success"], closed
        assert client.error("tabs", sessionId=other)["errorCode"] == "SESSION_NOT_FOUND"
    client.call("close_session", {"sessionId": session})


@pytest.mark.parametrize("think_s", [1.0, 3.0])
def test_a_hung_page_is_named_within_its_timeout_and_the_session_goes_on(client, pages, think_s):
    # A click on it was answered after 40 s, COMMAND_TIMEOUT, though its own timeout is 5 s, and the
    # session thread was replaced. At 1 s the click meets the hang itself (or the idle collection
    # does, just before); at 3 s the idle collection meets it first.
    session = client.tool("create_session", url=pages.url("/hang"))["sessionId"]
    with Quiet(client, pages):
        client.tool("click", sessionId=session, selector="#hang")
        time.sleep(think_s)
        started = time.monotonic()
        error = client.error("click", sessionId=session, selector="#hang", timeout=5000)
        took = time.monotonic() - started
        assert error["errorCode"] == "PAGE_UNRESPONSIVE", error
        assert error["details"]["url"] == pages.url("/hang")
        assert took < 5 + 5, took
        # Listing the tabs does not wait for it either.
        assert client.tool("tabs", sessionId=session)["tabs"][0]["url"] == pages.url("/hang")
        # Navigating elsewhere gets out, in the same session.
        left = client.tool("navigate", sessionId=session, url=pages.url("/title/out"))
        assert left["title"] == "out" and left["tabReplaced"] is True
        assert client.tool("click", sessionId=session, selector="h1")["success"]
    assert not [e for e in client.server_log() if e.get("event") == "session_thread_replaced"]
    client.call("close_session", {"sessionId": session})


def test_a_console_flood_costs_bounded_memory_and_starves_no_one(client, pages):
    # 200,000 lines grew the server by 370 MB (the ring keeps 1,000), a click on that page took
    # 25 s, and the quiet session stalled for up to 12 s.
    session = client.tool("create_session", url=pages.url("/console-flood"))["sessionId"]
    pid = server_pid()
    client.tool("console_logs", sessionId=session)
    before = rss_mb(pid)
    with Quiet(client, pages):
        client.tool("click", sessionId=session, selector="#flood")
        time.sleep(5)  # the page floods while the agent thinks
        assert client.tool("click", sessionId=session, selector="#flood")["success"]
        logs = client.tool("console_logs", sessionId=session, limit=1000)
        grown = rss_mb(pid) - before
    assert grown < 100, f"the server grew by {grown:.0f} MB"
    # What was dropped is said, and no entry is larger than the cap.
    assert any("dropped" in e["message"] for e in logs["entries"]), logs["entries"][-3:]
    assert max(len(e["message"]) for e in logs["entries"]) < 20_000
    client.call("close_session", {"sessionId": session})


def test_a_network_flood_is_not_listened_to_for_a_while_and_starves_no_one(client, pages):
    # Every request cost the server three events and a Request object (5,000 requests: 30-60 MB).
    session = client.tool("create_session", url=pages.url("/network-flood"))["sessionId"]
    with Quiet(client, pages):
        client.tool("click", sessionId=session, selector="#flood")
        assert wait_for(lambda: client.tool("tabs", sessionId=session)["tabs"][0]["title"] == "done 2000", 60)
        logs = client.tool("network_logs", sessionId=session, failed=True, allPages=True, limit=1000)
        notes = [e for e in logs["entries"] if e.get("resourceType") == "mcpbrowser"]
        # One note a pause (each call while the page still floods listens again, for a while).
        assert notes and all("requests a second" in note["failure"] for note in notes), logs["entries"][-3:]
        # The next call after the pause listens again: a new page's document is logged.
        time.sleep(1.1)
        client.tool("navigate", sessionId=session, url=pages.url("/title/after"))
        assert any(e["url"].endswith("/title/after") for e in client.tool("network_logs", sessionId=session)["entries"])
    client.call("close_session", {"sessionId": session})


def test_page_controlled_strings_are_shortened_in_answers_and_whole_in_the_history(pages, tmp_path):
    # Every action answer repeated a 200,000-character title (about 4,200 characters of it) and a
    # 100,000-character URL (100,251 characters for one navigate).
    db = tmp_path / "history.db"
    client = McpClient("--db", str(db))
    try:
        session = client.tool("create_session", url=pages.url("/huge-strings"))["sessionId"]
        with Quiet(client, pages):
            answers = [client.call("click", {"sessionId": session, "selector": "#grow"})]
            answers.append(client.call("navigate", {"sessionId": session,
                                                    "url": pages.url("/huge-strings?q=" + "v" * 50_000)}))
            answers.append(client.call("click", {"sessionId": session, "selector": "#grow"}))
            answers.append(client.call("click", {"sessionId": session, "selector": "#say"}))
            answers.append(client.call("snapshot", {"sessionId": session}))  # DIALOG_OPEN, with the text
            answers.append(client.call("handle_dialog", {"sessionId": session, "accept": True}))
            answers.append(client.call("tabs", {"sessionId": session}))
            answers.append(client.call("click", {"sessionId": session, "selector": "#file"}))
            answers.append(client.call("downloads", {"sessionId": session}))
        sizes = [len(a.content[0].text) for a in answers]
        assert max(sizes) <= 2000, sizes
        shown = json.loads(answers[2].content[0].text)
        assert shown["title"].startswith("T" * 500) and shown["title"].endswith("more characters]")
        assert "more characters]" in shown["url"]
        client.call("close_session", {"sessionId": session})
    finally:
        client.close()
    import sqlite3
    with sqlite3.connect(db) as conn:
        results = [row[0] for row in conn.execute("SELECT result FROM responses WHERE result IS NOT NULL")]
    assert any(b"T" * 200_000 in r for r in results)  # the history has it whole


def test_navigate_and_close_session_get_past_a_beforeunload_prompt(client, pages):
    session = client.tool("create_session", url=pages.url("/ask-before-leaving"))["sessionId"]
    with Quiet(client, pages):
        client.tool("click", sessionId=session, selector="#touch")  # the user activation a prompt needs
        left = client.tool("navigate", sessionId=session, url=pages.url("/title/away"))
        assert left["title"] == "away", left
        client.tool("navigate", sessionId=session, url=pages.url("/ask-before-leaving"))
        client.tool("click", sessionId=session, selector="#touch")
        # A link: the prompt is the agent's to answer, and accepting it says where the tab went (it
        # answered the page that was left, navigated false).
        clicked = client.tool("click", sessionId=session, selector="#away")
        assert clicked["dialog"]["type"] == "beforeunload", clicked
        accepted = client.tool("handle_dialog", sessionId=session, accept=True)
        assert accepted["navigated"] is True and accepted["url"] == pages.url("/title/away"), accepted
        client.tool("navigate", sessionId=session, url=pages.url("/ask-before-leaving"))
        client.tool("click", sessionId=session, selector="#touch")
        assert client.tool("close_session", sessionId=session)["success"]
        assert client.error("tabs", sessionId=session)["errorCode"] == "SESSION_NOT_FOUND"


def test_close_session_says_which_dialog_went_with_the_page(client, pages):
    session = client.tool("create_session", url=pages.url("/later-alert?ms=200"))["sessionId"]
    with Quiet(client, pages):
        client.tool("click", sessionId=session, selector="#arm")
        time.sleep(1.0)  # the agent thinks; the alert opens meanwhile
        closed = client.tool("close_session", sessionId=session)
    assert closed["success"] and closed["dialogDismissed"]["message"] == "still there?", closed
    assert "still there?" in closed["message"] and "went with the page" in closed["message"]


def test_an_endless_redirect_chain_and_window_print_get_clear_answers(client, pages):
    session = client.tool("create_session")["sessionId"]
    with Quiet(client, pages):
        error = client.error("navigate", sessionId=session, url=pages.url("/redirect-loop"))
        assert error["errorCode"] == "NAVIGATION_FAILED" and "ERR_TOO_MANY_REDIRECTS" in error["message"], error
        client.tool("navigate", sessionId=session, url=pages.url("/print"))
        printed = client.tool("click", sessionId=session, selector="#print")  # headless: no print dialog to hang on
        assert printed["title"] == "Printed", printed
    client.call("close_session", {"sessionId": session})


PAGES.update({
    # A page that will not let go: its unload and pagehide handlers loop for 20 s each.
    "/hold-unload": """<!doctype html><title>Hold</title>
<script>for (const name of ["unload", "pagehide"]) addEventListener(name, () => {
  const until = Date.now() + 20000; while (Date.now() < until); });</script>
<a id="away" href="/form">Away</a>""",
    # A page whose inline script never yields while it loads.
    "/hang-while-loading": "<!doctype html><title>Loading</title><p>before<script>for (;;) {}</script><p>after",
    # A page that takes the focus back to its own field (#mine) whenever it moves elsewhere.
    "/refocus": """<!doctype html><title>Refocus</title><input id="mine"><input id="other" aria-label="Other">
<script>const mine = document.getElementById("mine");
document.getElementById("other").addEventListener("focus", () => mine.focus());
setInterval(() => { if (document.activeElement !== mine) mine.focus(); }, 50);</script>""",
    # 30,000 rows with a link each: 60,000 elements, a page an aria snapshot walks for ~6 s here.
    "/huge-dom": "<!doctype html><title>Rows</title><button id=\"go\" onclick=\"document.title = 'Went'\">Go</button>"
                 + "".join(f"<div>row {i} <a href='#{i}'>link</a></div>" for i in range(30000)),
    # A page that takes the focus back half-way through typing (on the third key), and one whose field
    # upper-cases what it gets and then moves the focus on to a field that already holds the same text.
    "/refocus-later": """<!doctype html><title>Later</title><input id="mine"><input id="other">
<input id="up" oninput="this.value = this.value.toUpperCase(); if (this.value.length >= 5) q.focus()"><input id="q">
<script>let keys = 0; other.addEventListener("input", () => { if (++keys === 3) mine.focus() });</script>""",
    # Fields that move the focus on by themselves (one-time-code boxes) or reformat what is typed (a mask).
    "/focus-moves-on": """<!doctype html><title>Code</title>
<input id="d1" maxlength="1"><input id="d2" maxlength="1"><input id="phone">
<script>const boxes = [d1, d2]; boxes.forEach((b, i) => b.addEventListener("input", () => boxes[i + 1]?.focus()));
phone.addEventListener("input", () => { const d = phone.value.replace(/\\D/g, "");
  phone.value = "(" + d.slice(0, 3) + ") " + d.slice(3); });</script>""",
})


def test_a_page_that_holds_its_own_unload_lets_the_agent_leave_in_seconds(client, pages):
    # Its unload looped for 20 s: navigate waited out its 30 s timeout and answered NAVIGATION_FAILED
    # after 40 s; a click on its link answered after 5 s that the page was "Loading".
    session = client.tool("create_session", url=pages.url("/hold-unload"))["sessionId"]
    with Quiet(client, pages):
        started = time.monotonic()
        result = client.tool("navigate", sessionId=session, url=pages.url("/form"))
        assert time.monotonic() - started < 8, time.monotonic() - started
        assert result["tabReplaced"] is True and result["url"] == pages.url("/form")
        client.tool("navigate", sessionId=session, url=pages.url("/hold-unload"))
        started = time.monotonic()
        error = client.error("reload", sessionId=session)
        assert time.monotonic() - started < 8 and error["errorCode"] == "PAGE_UNRESPONSIVE", error
        client.tool("navigate", sessionId=session, url=pages.url("/hold-unload"))
        started = time.monotonic()
        clicked = client.tool("click", sessionId=session, selector="#away", timeout=2000)  # waited out, then named
        assert time.monotonic() - started < 2 + 5
        assert clicked["pageUnresponsive"] is True and "navigate elsewhere" in clicked["message"], clicked
        assert client.tool("navigate", sessionId=session, url=pages.url("/form"))["title"] == "Form"
    client.tool("close_session", sessionId=session)


def test_typing_that_the_page_diverts_to_another_field_is_not_called_done(client, pages):
    # The page took the focus back to #mine: type answered "Typed 5 character(s) into #other"
    # though #other stayed empty and #mine held the text.
    session = client.tool("create_session", url=pages.url("/refocus"))["sessionId"]
    with Quiet(client, pages):
        for extra in ({}, {"delay": 10}):
            error = client.error("type", sessionId=session, selector="#other", text="hello", **extra)
            assert error["errorCode"] == "ELEMENT_NOT_EDITABLE", error
            assert error["details"]["focusMovedTo"] == "input#mine" and "input#mine" in error["message"], error
        assert "Typed" in client.tool("type", sessionId=session, selector="#mine", text="fine")["message"]
        # fill_form is told the same (it said "Filled 1 field(s): #other").
        error = client.error("fill_form", sessionId=session, fields=[{"selector": "#other", "value": "viaform"}])
        assert error["errorCode"] == "ELEMENT_NOT_EDITABLE" and error["details"]["focusMovedTo"] == "input#mine"
        # Half-way: "hel" in #other, "lo" in #mine, and the answer was "Typed".
        client.tool("navigate", sessionId=session, url=pages.url("/refocus-later"))
        client.tool("type", sessionId=session, selector="#q", text="hello")
        error = client.error("type", sessionId=session, selector="#other", text="hello", delay=20)
        assert error["details"]["focusMovedTo"] == "input#mine", error
        # A field that reformats what it got and moves on did get it: no false alarm.
        assert "Typed" in client.tool("type", sessionId=session, selector="#up", text="hello")["message"]
        # Fields that move the focus on, or reformat, took the text: those are done.
        client.tool("navigate", sessionId=session, url=pages.url("/focus-moves-on"))
        assert "Typed" in client.tool("type", sessionId=session, selector="#d1", text="7")["message"]
        # Boxes that take one character each, filled at once, kept one of two: the answer says so.
        kept = client.tool("type", sessionId=session, selector="#d1", text="12")["message"]
        assert "kept 1 of its 2 character(s) and the page moved the focus to input#d2" in kept, kept
        assert "kept" in client.tool("fill_form", sessionId=session, fields=[{"selector": "#d1", "value": "34"}])[
            "message"]
        client.tool("type", sessionId=session, selector="#d1", text="7")
        assert "Typed" in client.tool("type", sessionId=session, selector="#phone", text="5551234")["message"]
        shown = client.tool("snapshot", sessionId=session)["snapshot"]
        assert "(555) 1234" in shown and ': "7"' in shown, shown
    client.tool("close_session", sessionId=session)


def test_a_page_that_hangs_while_it_loads_is_named_within_its_timeout(client, pages):
    # navigate {timeout: 4000} answered after 60 s, COMMAND_TIMEOUT, its session thread replaced: the
    # login-wall check after the failed load read the hung page with no deadline.
    session = client.tool("create_session", url=pages.url("/form"))["sessionId"]
    with Quiet(client, pages):
        started = time.monotonic()
        error = client.error("navigate", sessionId=session, url=pages.url("/hang-while-loading"), timeout=2000)
        assert time.monotonic() - started < 2 + 5 and error["errorCode"] == "PAGE_UNRESPONSIVE", error
        assert client.tool("navigate", sessionId=session, url=pages.url("/form"))["title"] == "Form"
    client.tool("close_session", sessionId=session)


def test_a_popup_storm_leaves_a_usable_session(client, pages):
    # The click answered PAGE_UNRESPONSIVE after 7 s (its handler ran past the 1 s grace, so the click
    # was tried again: 80 windows), tabs took 10 s and 6,800 characters, and the next click on the
    # page's own button failed ELEMENT_NOT_CLICKABLE.
    session = client.tool("create_session", url=pages.url("/storm"))["sessionId"]
    with Quiet(client, pages):
        started = time.monotonic()
        result = client.call("click", {"sessionId": session, "selector": "#storm"})
        took, text = time.monotonic() - started, result.content[0].text
        clicked = json.loads(text)
        assert not result.is_error, clicked
        assert took < 8 and len(text) < 400, (took, len(text))
        told = clicked["newTabs"]
        assert told == 40 and f"{told} new tabs: see tabs" in clicked["message"], clicked
        started = time.monotonic()
        result = client.call("tabs", {"sessionId": session})
        took, text = time.monotonic() - started, result.content[0].text
        listing = json.loads(text)
        assert not result.is_error, listing
        assert took < 3 and len(text) < 2500, (took, len(text))
        assert listing["current"] == 0 and listing["tabs"][0]["title"] == "Storm"
        assert len(listing["tabs"]) + listing["more"] == 41, listing  # each window once: the click was not repeated
        started = time.monotonic()
        after = client.tool("click", sessionId=session, selector="#after")
        # 5 s: alone it takes well under a second, but after the module's floods and hangs on a 2-core
        # machine the 40 popups still loading took it to 3.2 s once; before the fix it failed after 5.7 s.
        assert after["title"] == "Still here" and time.monotonic() - started < 5, after
    client.tool("close_session", sessionId=session)


def test_a_click_whose_own_handler_never_yields_is_done_once_and_named_within_its_timeout(client, pages):
    # The click reaches the page, whose handler never ends: the click is done (not tried again, not
    # "not clickable"), and the page is named unresponsive within the click's timeout and about a second.
    session = client.tool("create_session", url=pages.url("/storm"))["sessionId"]
    with Quiet(client, pages):
        started = time.monotonic()
        clicked = client.tool("click", sessionId=session, selector="#spin", timeout=2000)
        assert time.monotonic() - started < 2 + 2.5, time.monotonic() - started
        assert clicked["pageUnresponsive"] is True and clicked["message"].startswith("Clicked #spin"), clicked
        assert client.error("click", sessionId=session, selector="#after")["errorCode"] == "PAGE_UNRESPONSIVE"
        assert client.tool("navigate", sessionId=session, url=pages.url("/title/out"))["tabReplaced"] is True
    client.tool("close_session", sessionId=session)


# Last in the module: the history stores each of this page's snapshots as a difference from the one
# before, and the difference of two 60,000-line snapshots keeps the store's writer busy for minutes;
# every call after it that waits for the history (close_session does) waited 10 s more.
def test_a_huge_page_is_walked_only_when_asked_and_never_called_hung(client, pages):
    # On a page of 60,000 elements, the capture after navigate started a walk that ran on in the
    # page for seconds; the agent's snapshot then timed out behind it, and the probe that followed
    # named the page PAGE_UNRESPONSIVE, and the clicks after it too.
    session = client.tool("create_session", url=pages.url("/huge-dom"))["sessionId"]
    with Quiet(client, pages):
        started = time.monotonic()
        assert client.tool("click", sessionId=session, selector="#go")["title"] == "Went"
        assert time.monotonic() - started < 5
        shown = client.tool("snapshot", sessionId=session)
        assert shown["truncated"] is True and "row 0" in shown["snapshot"], shown.get("message")
        assert client.tool("click", sessionId=session, selector="#go")["success"]
        # A part of it that is nearly all of it (what the refusal below advises): walked, not called hung.
        client.tool("navigate", sessionId=session, url=pages.url("/huge-dom"))
        part = client.tool("snapshot", sessionId=session, selector="body", maxNodes=10)
        assert part["truncated"] is True and "row 0" in part["snapshot"]
        assert client.tool("click", sessionId=session, selector="#go")["success"]
    client.tool("close_session", sessionId=session)
    # A page whose walk would outlast the navigation timeout is not walked: the agent is told what to read.
    strict = McpClient("--navigation-timeout", "5000")
    try:
        session = strict.tool("create_session", url=pages.url("/huge-dom"))["sessionId"]
        started = time.monotonic()
        error = strict.error("snapshot", sessionId=session)
        # Not walked: answered well before a walk of it (15+ s here), whatever the page still lays out.
        assert time.monotonic() - started < 8 and error["errorCode"] == "INVALID_PARAMETERS", error
        assert error["details"]["elements"] > 60000 and "selector" in error["message"], error
        assert strict.tool("snapshot", sessionId=session, selector="#go")["snapshot"] .startswith('- button "Go" [ref=')
    finally:
        strict.close()
