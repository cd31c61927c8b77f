"""The live view (issue 53): a person signs in, sees their client's sessions, and nobody else's.

A real server (`--http --view http`) with a token file, real MCP clients over HTTP, a real
Chromium driven by Playwright on the view's pages, and raw HTTP for the attacks.
"""

import http.cookiejar
import json
import os
import re
import threading
import time
import urllib.error
import urllib.request

import pytest
from mcp.shared.exceptions import MCPError
from playwright.sync_api import sync_playwright
from support import HtmlHandler, HtmlSite, HttpServer, SdkClient, wait_for

from mcpbrowser.core.browser_process import find_executable

pytestmark = pytest.mark.e2e

ALICE, BOB, OPS = "alice-" + "a" * 24, "bob-" + "b" * 24, "ops-" + "o" * 24
# More people who may see every session: the take-over race needs people of different names.
OPERATORS = {f"op{n}": f"op{n}-" + "pqrstuvwxy"[n] * 24 for n in range(9)}
# The manual's pictures of the view are this test's screenshots, written there only when asked
# (TEST_DOC_IMAGES=1; not MCPBROWSER_DOC_IMAGES: the servers the tests start refuse an MCPBROWSER_ variable
# that is no setting): a plain test run must leave the checkout as it found it.
IMAGES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "images")



class Web:
    """A person's browser as raw HTTP: its own cookie jar, answers of any status."""

    def __init__(self, base):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), _NoRedirect)

    def request(self, path, data=None, headers=None, method=None):
        req = urllib.request.Request(self.base + path, data=data, headers=headers or {}, method=method)
        try:
            with self.opener.open(req, timeout=30) as answer:
                if answer.headers.get_content_type() == "multipart/x-mixed-replace":
                    return answer.status, dict(answer.headers), b""  # the live picture never ends: not read
                return answer.status, dict(answer.headers), answer.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def sign_in(self, token):
        status, headers, _ = self.request("/view/signin", f"token={token}".encode(), {"Origin": self.origin})
        assert status == 303, status
        return headers

    @property
    def origin(self):
        return self.base

    def csrf(self):
        _, _, body = self.request("/view/")
        marker = b'<meta name="csrf" content="'
        return body.split(marker, 1)[1].split(b'"', 1)[0].decode()

    def cookie(self):
        return next(c.value for c in self.jar if c.name == "mcpbrowser_view")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tokens = tmp_path_factory.mktemp("view") / "tokens"
    tokens.write_text(f"alice {ALICE}\nbob {BOB}\nops {OPS} operator\n"
                      + "".join(f"{name} {token} operator\n" for name, token in OPERATORS.items()))
    server = HttpServer("--http-token-file", str(tokens), "--view", "http")
    yield server
    server.close()


@pytest.fixture(autouse=True)
def pictures_left(request):
    """After a test on the module's server, the server counts none of its live pictures open any more: it
    notices a viewer who left at its next writes (2-6 s), and the people of one token may open ten at once.
    Without this the ten-pictures test, run after the first one in file order, met a 429."""
    yield
    if "served" not in request.fixturenames:
        return
    ops = Web(request.getfixturevalue("served").base)
    ops.sign_in(OPS)

    def watched():
        sessions = json.loads(ops.request("/view/api/sessions")[2])["sessions"]
        return [s["sessionId"] for s in sessions
                if json.loads(ops.request(f"/view/api/s/{s['sessionId']}")[2])["screencast"]["viewers"]]

    assert wait_for(lambda: not watched(), seconds=15, step=0.25), watched()


@pytest.fixture(scope="module")
def person_chromium():
    """One Chromium for the module's people, who use the view in a real browser: each test opens its own
    contexts through `person`, so no cookie or page of one test reaches another."""
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=find_executable("chromium"))
        yield chromium
        chromium.close()


@pytest.fixture
def person(person_chromium):
    """Open a page in a fresh context of the module's Chromium (`new_context`'s options); a context the test
    left open is closed after it, before `pictures_left` counts the live pictures."""
    opened = []

    def open_page(**options):
        opened.append(person_chromium.new_context(**options))
        return opened[-1].new_page()

    yield open_page
    for context in opened:
        context.close()


@pytest.fixture(scope="module")
def alice(served, pages):
    """Alice's agent: one session on the form page, with a console line and a stored page."""
    client = SdkClient(served.url, token=ALICE)
    sid = client.tool("create_session")["sessionId"]
    client.tool("navigate", sessionId=sid, url=pages.url("/form"))
    client.tool("type", sessionId=sid, selector="#name", text="view")
    client.tool("click", sessionId=sid, selector="#go")
    yield client, sid
    client.close()


def test_signed_in_person_sees_their_session_its_calls_page_and_logs(served, alice, pages, tmp_path, person):
    _, sid = alice
    images = IMAGES if os.environ.get("TEST_DOC_IMAGES") == "1" else str(tmp_path)
    page = person(viewport={"width": 1280, "height": 900})
    page.goto(served.base + "/view/")
    assert page.locator("input[name=token]").is_visible()  # no cookie: the sign-in page
    page.fill("input[name=token]", ALICE)
    page.click("button[type=submit]")
    row = page.locator(f"tr[data-session='{sid}']")
    row.wait_for()
    assert "Hello view" in row.inner_text() and pages.url("/form") in row.inner_text()
    assert "click" in row.inner_text()  # the last call
    page.screenshot(path=os.path.join(images, "view-list.png"))
    row.locator("a").click()
    calls = page.locator("#calls tr.call")
    wait_for(lambda: calls.count() >= 4, seconds=10)  # the agent's three, and the person's picture started
    assert "person_watch" in [calls.nth(i).locator("td.tool").inner_text() for i in range(calls.count())]
    calls = agents_calls(page)
    assert [calls.nth(i).locator("td.tool").inner_text() for i in range(3)] == ["click", "type", "navigate"]
    calls.filter(has_text="navigate").first.click()
    page.locator("#stored-page", has_text="Go").wait_for(timeout=10_000)
    page.locator("#network-log", has_text="/form").wait_for(timeout=10_000)
    picture = page.locator("#live-picture")
    assert wait_for(lambda: picture.evaluate("img => img.naturalWidth") > 100, seconds=15)
    cookies = {c["name"]: c for c in page.context.cookies()}
    view_cookie = cookies["mcpbrowser_view"]
    assert view_cookie["httpOnly"] and view_cookie["sameSite"] == "Strict" and not view_cookie["secure"]
    assert ALICE not in page.content()
    page.context.close()


def agents_calls(page):
    """The session page's rows of the agent's calls: the person's own (their picture started) passed over."""
    return page.locator("#calls tr.call").filter(has_not=page.locator("td.tool", has_text=re.compile("^person_")))


# A shop's page that logs at three levels (one line a hostile page's markup), asks an API and misses a file.
SHOP = ("<!doctype html><title>Basket</title><h1>Your basket</h1><p>3 items</p><script>"
        "console.log('basket loaded: 3 items'); console.warn('coupon SPRING expires today');"
        "console.error('<img src=x onerror=\"document.title=1\"> price missing for item 42');"
        "fetch('/api/data'); fetch('/missing.json');</script>")
CLOCK = r"^\d\d:\d\d:\d\d$"


def test_the_session_page_reads_as_a_person_reads(served, pages, monkeypatch, tmp_path, person):
    """The console and network logs as rows (time, level, text; method, status, URL, duration), the calls with
    their time of day, long values cut short with the whole on hover and on a click: in a real browser, all put
    in as text under the view's Content-Security-Policy (issue 63, item 5). The manual's picture of a session."""

    monkeypatch.setitem(__import__("support").PAGES, "/shop", SHOP)
    images = IMAGES if os.environ.get("TEST_DOC_IMAGES") == "1" else str(tmp_path)
    client = SdkClient(served.url, token=ALICE)
    try:
        sid = client.tool("create_session")["sessionId"]
        long_url = pages.url("/shop?basket=" + "-".join(f"item{n:03d}" for n in range(60)))
        client.tool("navigate", sessionId=sid, url=long_url)
        client.tool("wait_for", sessionId=sid, text="3 items")
        client.tool("click", sessionId=sid, selector="h1")
        page = person(viewport={"width": 1280, "height": 900})
        page.add_init_script("document.addEventListener('securitypolicyviolation', "
                             "(e) => (window.__refused = window.__refused || []).push(e.violatedDirective))")
        page.goto(served.base + "/view/")
        page.fill("input[name=token]", ALICE)
        page.click("button[type=submit]")
        page.goto(served.base + f"/view/s/{sid}")
        console = page.locator("#console-log tbody tr")
        network = page.locator("#network-log tbody tr")
        assert wait_for(lambda: console.count() >= 3 and page.locator("#network-log", has_text="/missing.json")
                        .count() == 1 and page.locator("#calls tr.call").count() >= 3, seconds=15)

        def cells(row):
            return [cell.strip() for cell in row.locator(":scope > td").all_inner_texts()]

        # the console: a time of day, a level, the text as the page wrote it (markup too, as text)
        rows = [cells(console.nth(i)) for i in range(3)]
        assert [[level, text.split("\n")[0]] for _, level, text in rows] == [
            ["log", "basket loaded: 3 items"], ["warning", "coupon SPRING expires today"],
            ["error", '<img src=x onerror="document.title=1"> price missing for item 42']]
        assert all("\n" + pages.url("/shop?basket=") in text for _, _, text in rows[1:])  # where, for these
        assert all(re.match(CLOCK, r[0]) for r in rows), rows
        assert "level-error" in console.nth(2).get_attribute("class")
        assert page.locator("#console-log img").count() == 0 and page.title() != "1"  # text, never markup
        # the network: method, status, URL, type, duration
        missing = cells(network.filter(has_text="/missing.json"))
        assert missing[:2] == ["GET", "404"] and missing[2] == pages.url("/missing.json")
        assert "failed" in network.filter(has_text="/missing.json").get_attribute("class")
        api = cells(network.filter(has_text="/api/data"))
        assert api[:4] == ["GET", "200", pages.url("/api/data"), "fetch"] and re.match(r"^\d+ ms$", api[4]), api
        # the document's long URL: cut short in its cell, the whole on hover and on a click
        document = network.filter(has_text="/shop?basket=").locator("td.url")
        assert document.inner_text().endswith("…") and len(document.inner_text()) <= 80
        assert document.locator("summary").get_attribute("title") == long_url
        # the calls: a time of day each; the long argument cut short, the whole on a click
        calls = agents_calls(page)
        assert [calls.nth(i).locator("td.tool").inner_text() for i in range(3)] == ["click", "wait_for", "navigate"]
        assert all(re.match(CLOCK, calls.nth(i).locator("td.time").inner_text()) for i in range(3))
        navigate_args = calls.nth(2).locator("td.args")
        assert len(navigate_args.inner_text()) <= 80 and long_url not in navigate_args.inner_text()
        raw = page.evaluate("JSON.stringify(document.querySelector('#console-log').textContent)")
        assert '"timestamp"' not in raw and "{" not in raw  # rows, not JSON lines
        # nothing runs off: the page is no wider than the window, each pane no wider than its box
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        for pane in ("#console-log", "#network-log"):
            assert page.evaluate(f"(e => e.scrollWidth <= e.clientWidth)(document.querySelector('{pane}'))")
        picture = page.locator("#live-picture")
        assert wait_for(lambda: picture.evaluate("img => img.naturalWidth") > 100, seconds=15)
        page.screenshot(path=os.path.join(images, "view-session.png"))
        navigate_args.locator("summary").click()
        assert long_url in navigate_args.inner_text()
        assert calls.nth(2).get_attribute("data-ref") and page.locator("#stored-page").inner_text().startswith(
            "Click a call")  # opening a value is not a click on its call
        document.locator("summary").click()
        assert document.inner_text() == long_url
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        assert page.evaluate("window.__refused || []") == []  # under the view's Content-Security-Policy
        page.context.close()
    finally:
        client.close()


def test_the_views_script_puts_text_in_as_text():
    """What the pages the agents visit write (titles, URLs, logs) goes in with textContent, never as HTML."""
    import mcpbrowser.view

    with open(os.path.join(os.path.dirname(mcpbrowser.view.__file__), "static", "view.js")) as f:
        script = f.read()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in script


def test_no_cookie_gets_the_sign_in_page_and_no_data(served, alice):
    _, sid = alice
    web = Web(served.base)
    status, _, body = web.request("/view/")
    assert status == 200 and b'name="token"' in body and sid.encode() not in body
    for path in ("/view/api/sessions", f"/view/api/s/{sid}", f"/view/api/s/{sid}/logs/console"):
        assert web.request(path)[0] == 401
    status, _, body = web.request(f"/view/s/{sid}")
    assert b'name="token"' in body and sid.encode() not in body
    assert web.request("/view/signin", b"token=" + b"x" * 30, {"Origin": served.base})[0] == 403  # a wrong token


def test_another_clients_token_sees_none_of_the_first_clients_sessions(served, alice):
    client, sid = alice
    ref = client.tool("snapshot", sessionId=sid)["refId"]
    bob, owner = Web(served.base), Web(served.base)
    bob.sign_in(BOB)
    owner.sign_in(ALICE)
    # a positive control: the same requests with alice's own cookie read her session
    assert sid.encode() in owner.request("/view/api/sessions")[2]
    assert owner.request(f"/view/api/s/{sid}")[0] == 200
    assert owner.request(f"/view/api/page/{ref}")[0] == 200
    assert owner.request(f"/view/api/s/{sid}/logs/network")[0] == 200
    assert owner.request(f"/view/s/{sid}")[0] == 200
    # bob, with the ids copied
    assert sid.encode() not in bob.request("/view/api/sessions")[2]
    for path in (f"/view/api/s/{sid}", f"/view/api/page/{ref}", f"/view/api/s/{sid}/logs/network",
                 f"/view/api/s/{sid}/logs/console", f"/view/s/{sid}"):
        status, _, body = bob.request(path)
        assert status == 404 and sid.encode() not in body and b"view" not in body.lower().replace(b"/view", b"")
    # guessed ids answer as copied ones do
    assert bob.request("/view/api/s/00000000-0000-0000-0000-000000000000")[0] == 404
    # nor frames, nor hands: the live picture, taking over, input
    assert bob.request(f"/view/api/s/{sid}/live")[0] == 404
    post = {"Origin": served.base, "X-CSRF-Token": bob.csrf(), "Content-Type": "application/json"}
    for action in ("takeover", "input", "handback"):
        assert bob.request(f"/view/api/s/{sid}/{action}", b'{"action": "click"}', post)[0] == 404
    assert json.loads(owner.request(f"/view/api/s/{sid}")[2])["heldBy"] is None


def test_operator_token_sees_every_session(served, alice):
    _, sid = alice
    ops = Web(served.base)
    ops.sign_in(OPS)
    assert sid.encode() in ops.request("/view/api/sessions")[2]
    assert ops.request(f"/view/api/s/{sid}")[0] == 200


def test_post_without_csrf_or_from_another_origin_is_refused_and_does_nothing(served, alice):
    web = Web(served.base)
    web.sign_in(ALICE)
    csrf = web.csrf()
    assert web.request("/view/signout", b"", {"Origin": served.base})[0] == 403  # no CSRF token
    assert web.request("/view/signout", f"csrf={csrf}".encode(), {"Origin": "http://evil.example"})[0] == 403
    assert web.request("/view/signout", f"csrf={csrf}".encode(), {"Sec-Fetch-Site": "cross-site"})[0] == 403
    assert web.request("/view/signout", b"csrf=" + b"x" * 32, {"Origin": served.base})[0] == 403
    assert web.request("/view/api/sessions")[0] == 200  # nothing was done: still signed in
    _, sid = alice
    take = f"/view/api/s/{sid}/takeover"
    assert web.request(take, b"{}", {"Origin": served.base})[0] == 403
    assert web.request(take, b"{}", {"Origin": "http://evil.example", "X-CSRF-Token": csrf})[0] == 403
    assert json.loads(web.request(f"/view/api/s/{sid}")[2])["heldBy"] is None  # not taken over
    assert web.request(take, b"{}", {"Origin": served.base, "X-CSRF-Token": csrf})[0] == 200  # positive control
    assert json.loads(web.request(f"/view/api/s/{sid}")[2])["heldBy"] == "alice"
    assert web.request(f"/view/api/s/{sid}/handback", b"{}", {"Origin": served.base, "X-CSRF-Token": csrf})[0] == 200
    assert web.request("/view/signin", f"token={ALICE}".encode(), {"Origin": "http://evil.example"})[0] == 403


def test_people_pressing_take_over_at_once_only_one_holds_the_session(served, pages):
    """Ten people (alice and nine operators) press Take over at the same moment, five rounds: exactly one is
    told they hold it, the others are told who does, and the session says the same (issue 63, item 4)."""
    client = SdkClient(served.url, token=ALICE)
    try:
        sid = client.tool("create_session")["sessionId"]
        people = []
        for name, token in [("alice", ALICE), *OPERATORS.items()]:
            web = Web(served.base)
            web.sign_in(token)
            people.append((name, web, {"Origin": served.base, "X-CSRF-Token": web.csrf()}))
        for _ in range(5):
            start = threading.Barrier(len(people))
            answers = [None] * len(people)

            def press(i, start, answers):
                _, web, post = people[i]
                start.wait(10)
                status, _, body = web.request(f"/view/api/s/{sid}/takeover", b"{}", post)
                answers[i] = status, json.loads(body)

            pressing = [threading.Thread(target=press, args=(i, start, answers)) for i in range(len(people))]
            for thread in pressing:
                thread.start()
            for thread in pressing:
                thread.join(30)
            assert None not in answers
            winners = [i for i, (status, _) in enumerate(answers) if status == 200]
            assert len(winners) == 1, answers
            holder, web, post = people[winners[0]]
            assert answers[winners[0]][1] == {"heldBy": holder}
            for status, body in (a for i, a in enumerate(answers) if i != winners[0]):
                assert status == 409 and body == {"error": f"{holder} holds this session."}
            assert json.loads(web.request(f"/view/api/s/{sid}")[2])["heldBy"] == holder
            assert web.request(f"/view/api/s/{sid}/handback", b"{}", post)[0] == 200
    finally:
        client.close()


def test_a_cookie_from_before_sign_out_is_refused(served, alice):
    web = Web(served.base)
    web.sign_in(ALICE)
    old = web.cookie()
    csrf = web.csrf()
    assert web.request("/view/api/sessions")[0] == 200
    status, headers, _ = web.request("/view/signout", f"csrf={csrf}".encode(), {"Origin": served.base})
    assert status == 303 and "Max-Age=0" in headers["Set-Cookie"]
    replay = Web(served.base)
    status, _, _ = replay.request("/view/api/sessions", headers={"Cookie": f"mcpbrowser_view={old}"})
    assert status == 401


def test_the_token_is_never_in_a_response_a_url_or_the_log(served, alice):
    web = Web(served.base)
    headers = web.sign_in(ALICE)
    assert ALICE not in json.dumps(headers)
    for path in ("/view/", "/view/api/sessions", "/view/static/view.js"):
        assert ALICE.encode() not in web.request(path)[2]
    with open(served.stderr.name) as f:
        log = f.read()
    assert '"view_signed_in"' in log and ALICE not in log  # the sign-in was logged, without its token


def test_embedded_in_an_apps_own_wsgi_server_with_its_own_sign_in(pages, person):
    """A service of our own mounts the view; its hook decides who sees what from its own header."""
    from waitress.server import create_server

    import mcpbrowser
    from mcpbrowser.config import Config
    from mcpbrowser.view import Viewer, create_app

    people = {"ann": Viewer("ann", owner=None, operator=True), "eve": Viewer("eve", owner="eve")}
    with mcpbrowser.Browser(Config(headless=True, db=":memory:")) as browser:
        view = create_app(browser, who_may_see=lambda environ: people.get(environ.get("HTTP_X_USER", "")),
                          path="/ops/view")

        def service(environ, start_response):
            if environ["PATH_INFO"].startswith("/ops/view"):
                return view(environ, start_response)
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"the service's own page"]

        server = create_server(service, host="127.0.0.1", port=0, threads=4)
        threading.Thread(target=server.run, daemon=True).start()
        try:
            with browser.create_session() as session:
                session.navigate(pages.url("/form"))
                base = f"http://127.0.0.1:{server.effective_port}"
                web = Web(base)
                assert web.request("/ops/view/api/sessions")[0] == 401
                ann = json.loads(web.request("/ops/view/api/sessions", headers={"X-User": "ann"})[2])
                assert [s["sessionId"] for s in ann["sessions"]] == [session.id]
                eve = json.loads(web.request("/ops/view/api/sessions", headers={"X-User": "eve"})[2])
                assert eve["sessions"] == []
                assert web.request(f"/ops/view/api/s/{session.id}", headers={"X-User": "eve"})[0] == 404
                page = person(extra_http_headers={"X-User": "ann"})
                page.goto(base + "/ops/view/")
                page.locator(f"tr[data-session='{session.id}']").wait_for()
                page.context.close()
        finally:
            server.close()


# -- the page live ------------------------------------------------------------------------

TICKING = ("<!doctype html><title>Ticking</title><h1 id=t>0</h1>"
           "<script>let n = 0; setInterval(() => { document.getElementById('t').textContent = ++n; }, 30)</script>")


def frames(answer, count, seconds=30):
    """The next `count` JPEG parts of an MJPEG answer, within `seconds` (the stream never ends: a picture
    with no new frame sends a blank line every 2 s, so a read with no bound waited forever)."""
    out, deadline = [], time.monotonic() + seconds
    while len(out) < count:
        assert time.monotonic() < deadline, f"{len(out)} of {count} frames in {seconds} s"
        line = answer.readline()
        assert line, "the stream ended"
        if line.lower().startswith(b"content-length:"):
            size = int(line.split(b":")[1])
            answer.readline()
            out.append(answer.read(size))
    return out


def open_live(web, sid):
    return web.opener.open(web.base + f"/view/api/s/{sid}/live", timeout=30)


def casts_started(served, sid):
    with open(served.stderr.name) as f:
        return sum(1 for line in f if '"screencast_started"' in line and sid in line)


def decoded_size(page, jpeg):
    """(width, height) of a JPEG as Chromium decodes it."""
    import base64

    return tuple(page.evaluate("async (b64) => { const blob = await (await fetch('data:image/jpeg;base64,' + b64))"
                               ".blob(); const bmp = await createImageBitmap(blob); return [bmp.width, bmp.height]; }",
                               base64.b64encode(jpeg).decode()))


def test_the_page_live_changes_when_the_agent_navigates_and_runs_only_while_watched(served, pages, person):
    import gc

    client = SdkClient(served.url, token=ALICE)
    try:
        sid = client.tool("create_session")["sessionId"]
        client.tool("navigate", sessionId=sid, url=pages.url("/form"))
        web = Web(served.base)
        web.sign_in(ALICE)
        time.sleep(1.5)
        state = json.loads(web.request(f"/view/api/s/{sid}")[2])["screencast"]
        assert state["viewers"] == 0 and casts_started(served, sid) == 0  # nobody watches: no screencast
        live = open_live(web, sid)
        assert live.headers["Content-Type"] == "multipart/x-mixed-replace; boundary=frame"
        before = frames(live, 1)[0]
        client.tool("navigate", sessionId=sid, url=pages.url("/untitled"))
        after = before
        for _ in range(20):  # the stream sends its last frame again every 2 s while nothing changes
            after = frames(live, 1)[0]
            if after != before:
                break
        assert after != before
        page = person()
        assert decoded_size(page, before)[0] > 100 and decoded_size(page, after)[0] > 100
        page.context.close()
        # ten viewers, one screencast
        others = [open_live(web, sid) for _ in range(9)]
        for other in others:
            frames(other, 1)
        state = json.loads(web.request(f"/view/api/s/{sid}")[2])["screencast"]
        assert state["viewers"] == 10 and casts_started(served, sid) == 1
        for answer in [live, *others]:
            answer.close()
        del live, others, answer
        gc.collect()  # urllib keeps the sockets until their objects go
        assert wait_for(lambda: json.loads(web.request(f"/view/api/s/{sid}")[2])["screencast"]["viewers"] == 0,
                        seconds=15)
        assert wait_for(lambda: any('"screencast_stopped"' in line and sid in line
                                    for line in open(served.stderr.name)))
    finally:
        client.close()


def test_one_viewers_cost_at_the_capped_frame_rate(served, pages, monkeypatch):
    """CPU time of the server's process tree (server, driver, browser) over 10 s: nobody watching a
    page that changes 33 times a second, then one viewer. Stated in docs/view.md."""
    from mcpbrowser import process_tree

    monkeypatch.setitem(__import__("support").PAGES, "/ticking", TICKING)
    client = SdkClient(served.url, token=ALICE)
    try:
        sid = client.tool("create_session")["sessionId"]
        client.tool("navigate", sessionId=sid, url=pages.url("/ticking"))
        web = Web(served.base)
        web.sign_in(ALICE)

        def tree_cpu():
            pids = [served.proc.pid, *process_tree.descendants(served.proc.pid)]
            return sum(process_tree.cpu_s(pid) for pid in pids)

        def over_10_s(live):
            start, count, began = tree_cpu(), 0, time.monotonic()
            while time.monotonic() - began < 10:
                if live is None:
                    time.sleep(0.5)
                else:
                    frames(live, 1)
                    count += 1
            return (tree_cpu() - start) / (time.monotonic() - began), count / (time.monotonic() - began)

        idle, _ = over_10_s(None)
        live = open_live(web, sid)
        watched, rate = over_10_s(live)
        live.close()
        print(f"\nCPU share of one core: nobody watching {idle:.1%}, one viewer {watched:.1%} at {rate:.1f} frames/s")
        assert rate <= 5.5  # the cap (screencast.FPS), with a frame of slack
        assert rate >= 2  # and frames do flow on a page that changes
    finally:
        client.close()


# -- a person takes over a login wall ------------------------------------------------------

LOGIN = """<!doctype html><title>Sign in</title><style>body{margin:0} input,button{position:absolute;left:100px;
width:300px;height:40px;font-size:20px}</style><form method=post action=/login>
<input id=user name=user style="top:100px" autocomplete=off><input id=pass name=pass type=password style="top:200px">
<button style="top:300px">Sign in</button></form>"""


class LoginSite(HtmlSite):
    """A small site on 127.0.0.1: /login's form POSTs to itself and leads to /welcome, which greets by cookie."""

    def __init__(self):
        from urllib.parse import parse_qs

        site = self
        self.posted = []

        class Handler(HtmlHandler):
            def do_GET(self):
                if self.path.startswith("/welcome"):
                    user = (self.headers.get("Cookie") or "").partition("user=")[2]
                    return self._send(200, f"<!doctype html><title>Welcome</title><h1>Signed in as {user}</h1>"
                                      if user else "<title>Nope</title>")
                self._send(200, LOGIN)

            def do_POST(self):
                form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
                site.posted.append(form)
                self._send(303, "", [("Location", "/welcome"), ("Set-Cookie", f"user={form['user'][0]}")])

        super().__init__(handler=Handler)


def everything_stored(db_path):
    """Every value of every table (blobs also decompressed), and the raw database and WAL files."""
    import sqlite3
    import zlib

    out = []
    for suffix in ("", "-wal"):
        if os.path.exists(db_path + suffix):
            with open(db_path + suffix, "rb") as f:
                out.append(f.read())
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        for row in db.execute(f"SELECT * FROM {table}"):
            for value in row:
                if isinstance(value, bytes):
                    out.append(value)
                    try:
                        out.append(zlib.decompress(value))
                    except zlib.error:
                        pass
                elif isinstance(value, str):
                    out.append(value.encode())
    db.close()
    return b"\n".join(out)


def test_a_person_takes_over_a_login_wall_and_hands_back(tmp_path, person):
    import secrets as random

    password, user = "Pw-" + random.token_hex(8), "ann" + random.token_hex(4)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {ALICE}\nbob {BOB}\n")
    db = str(tmp_path / "history.db")
    site = LoginSite()
    server = HttpServer("--http-token-file", str(tokens), "--view", "http", "--db", db)
    agent, waiter = SdkClient(server.url, token=ALICE), SdkClient(server.url, token=ALICE)
    answers = []
    try:
        sid = agent.tool("create_session")["sessionId"]
        answers.append(agent.tool("navigate", sessionId=sid, url=site.url + "/login"))
        waited = {}
        wait = threading.Thread(target=lambda: waited.update(answer=waiter.call("wait_for_user", {
            "sessionId": sid, "message": "Please sign in", "urlContains": "/home", "timeout": 120_000})))
        wait.start()
        page = person(viewport={"width": 1280, "height": 1000})
        page.goto(server.base + "/view/")
        page.fill("input[name=token]", ALICE)
        page.click("button[type=submit]")
        page.goto(server.base + f"/view/s/{sid}")
        page.locator("#banner", has_text="waits for a person: Please sign in").wait_for(timeout=20_000)
        picture = page.locator("#live-picture")
        assert wait_for(lambda: picture.evaluate("img => img.naturalWidth") > 100, seconds=15)
        # bob's person may not take it over, nor type into it
        bob = Web(server.base)
        bob.sign_in(BOB)
        refused = bob.request(f"/view/api/s/{sid}/takeover", b"{}", {"Origin": server.base,
                                                                     "X-CSRF-Token": bob.csrf()})
        assert refused[0] == 404
        page.click("#take-over")
        page.locator("#hands-note", has_text="You drive").wait_for()
        # the agent's browser actions wait for the person; its reads go on
        held = agent.error("click", sessionId=sid, selector="#user")
        assert held["errorCode"] == "SESSION_HELD_BY_PERSON"
        assert agent.tool("list_sessions")["sessions"][0]["heldByPerson"] is True
        box = picture.bounding_box()

        def click_at(x, y):  # viewport pixels of the session's 1280x720 page, on the picture
            picture.click(position={"x": x / 1280 * box["width"], "y": y / 720 * box["height"]})

        click_at(250, 120)
        page.keyboard.type(user)
        click_at(250, 220)
        page.keyboard.type(password)
        page.keyboard.press("Enter")
        assert wait_for(lambda: site.posted, seconds=20)  # the form went out: the typing happened
        page.wait_for_timeout(500)
        page.click("#hand-back")
        page.locator("#hands-note", has_text="Handed back").wait_for()
        signed = _signed(server.base, page)
        view_answers = [page.content().encode(), *(signed.request(path)[2] for path in (
            f"/view/api/s/{sid}", "/view/api/sessions", f"/view/api/s/{sid}/logs/network",
            f"/view/api/s/{sid}/logs/console"))]
        page.context.close()
        wait.join(30)
        answer = waited["answer"]
        payload = answer.structured_content
        assert not answer.is_error and payload["success"] and payload["finishedBy"] == "person"
        assert payload["view"] == f"/view/s/{sid}"
        answers.append([c.text for c in answer.content if c.type == "text"])
        after = agent.tool("snapshot", sessionId=sid)
        answers.append(after)
        assert "Signed in as" in json.dumps(after)
        assert site.posted[0]["pass"] == [password] and site.posted[0]["user"] == [user]  # positive control
        # The password is nowhere of ours: answers, the history (rows, decompressed blobs, WAL), the log, the view.
        timeline = json.loads(view_answers[1])["calls"]
        typed = [c for c in timeline if c["tool"] == "person_input" and c["params"]["action"] == "type"]
        assert len(typed) == 2 and all(c["params"]["text"] != password for c in typed)
        # The person's take-over, hand-back and the start of their picture are calls of theirs, as their input is:
        # rows of the history and lines of the call log (issue 71), the password in none (checked below).
        mine = ("person_take_over", "person_hand_back", "person_watch")
        assert {c["tool"] for c in timeline} >= set(mine)
        with open(server.stderr.name) as log_file:
            logged = [json.loads(line) for line in log_file if '"tool_call"' in line]
        assert {line["tool"] for line in logged if line.get("session") == sid and line["outcome"] == "ok"} >= set(mine)
        stored = everything_stored(db)
        assert b"/login" in stored  # the search reads the history (positive control)
        for where in (json.dumps(answers).encode(), stored, open(server.stderr.name, "rb").read(), *view_answers):
            assert password.encode() not in where
    finally:
        agent.close()
        waiter.close()
        server.close()
        site.close()


def _signed(base, page):
    """A Web that carries the Playwright page's view cookie."""
    web = Web(base)
    cookie = next(c for c in page.context.cookies() if c["name"] == "mcpbrowser_view")
    web.opener.addheaders = [("Cookie", f"mcpbrowser_view={cookie['value']}")]
    return web


def test_an_agent_cannot_act_as_the_person(alice):
    client, sid = alice
    assert "person_input" not in [tool.name for tool in client.run("list_tools").tools]
    with pytest.raises(MCPError, match="Unknown tool: person_input") as refused:  # with every group on (--caps all)
        client.call("person_input", {"sessionId": sid, "action": "click", "x": 0.5, "y": 0.5})
    assert "person_input" not in refused.value.error.data["known"] and "click" in refused.value.error.data["known"]


def test_stdio_serves_the_view_alone_with_a_one_time_sign_in_url():
    from support import McpClient

    client = McpClient("--view", "127.0.0.1:0")
    try:
        sid = client.tool("create_session")["sessionId"]

        def sign_in_url():
            client.stderr.flush()
            for line in open(client.stderr.name):
                if "sign-in URL: " in line:
                    return line.split("sign-in URL: ", 1)[1].strip()
            return None

        url = wait_for(sign_in_url, seconds=20)
        assert url and "/view/signin?key=" in url
        base = url.split("/view/", 1)[0]
        web = Web(base)
        assert web.request("/view/api/sessions")[0] == 401
        status, headers, _ = web.request(url[len(base):])
        assert status == 303 and "HttpOnly" in headers["Set-Cookie"]
        assert sid.encode() in web.request("/view/api/sessions")[2]  # the stdio client's session
        assert Web(base).request(url[len(base):])[0] == 403  # the key works once
    finally:
        client.close()


def test_handing_back_ends_the_cooldown_the_wall_started(tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {ALICE}\n")
    site = LoginSite()
    server = HttpServer("--http-token-file", str(tokens), "--view", "http", "--login-cooldown", "300")
    agent = SdkClient(server.url, token=ALICE)
    try:
        sid = agent.tool("create_session")["sessionId"]
        agent.tool("navigate", sessionId=sid, url=site.url + "/login")
        timed_out = agent.error("wait_for_user", sessionId=sid, message="Please sign in", urlContains="/home",
                                timeout=300)
        assert timed_out["details"]["view"] == f"/view/s/{sid}"  # where a person can help
        assert agent.error("navigate", sessionId=sid, url=site.url + "/login")["errorCode"] == "COOLDOWN_ACTIVE"
        web = Web(server.base)
        web.sign_in(ALICE)
        (listed,) = json.loads(web.request("/view/api/sessions")[2])["sessions"]
        assert listed["state"] == "cooldown" and 200_000 < listed["cooldownMs"] <= 300_000
        post = {"Origin": server.base, "X-CSRF-Token": web.csrf()}
        assert web.request(f"/view/api/s/{sid}/takeover", b"{}", post)[0] == 200
        # the person acts during the cooldown: solving the wall is what it waits for
        click = json.dumps({"action": "click", "x": 0.15, "y": 0.17}).encode()
        status, _, body = web.request(f"/view/api/s/{sid}/input", click, {**post, "Content-Type": "application/json"})
        assert status == 200, body
        assert web.request(f"/view/api/s/{sid}/handback", b"{}", post)[0] == 200
        assert json.loads(web.request(f"/view/api/s/{sid}")[2])["state"] != "cooldown"
        assert agent.tool("navigate", sessionId=sid, url=site.url + "/login")["title"] == "Sign in"
    finally:
        agent.close()
        server.close()
        site.close()
