"""The live view (issue 53): a person signs in, sees their client's sessions, and nobody else's.

A real server (`--http --view http`) with a token file, real MCP clients over HTTP, a real
Chromium driven by Playwright on the view's pages, and raw HTTP for the attacks.
"""

import http.cookiejar
import json
import os
import threading
import urllib.error
import urllib.request

import pytest
from playwright.sync_api import sync_playwright
from support import HttpServer, SdkClient, wait_for

from mcpbrowser.core.browser_process import find_executable

pytestmark = pytest.mark.e2e

ALICE, BOB, OPS = "alice-" + "a" * 24, "bob-" + "b" * 24, "ops-" + "o" * 24
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
    tokens.write_text(f"alice {ALICE}\nbob {BOB}\nops {OPS} operator\n")
    server = HttpServer("--http-token-file", str(tokens), "--view", "http")
    yield server
    server.close()


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


def test_signed_in_person_sees_their_session_its_calls_page_and_logs(served, alice, pages):
    _, sid = alice
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=find_executable("chromium"))
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(served.base + "/view/")
        assert page.locator("input[name=token]").is_visible()  # no cookie: the sign-in page
        page.fill("input[name=token]", ALICE)
        page.click("button[type=submit]")
        row = page.locator(f"tr[data-session='{sid}']")
        row.wait_for()
        assert "Hello view" in row.inner_text() and pages.url("/form") in row.inner_text()
        assert "click" in row.inner_text()  # the last call
        os.makedirs(IMAGES, exist_ok=True)
        page.screenshot(path=os.path.join(IMAGES, "view-list.png"))
        row.locator("a").click()
        calls = page.locator("#calls tr.call")
        wait_for(lambda: calls.count() >= 3, seconds=10)
        assert [calls.nth(i).locator("td").first.inner_text() for i in range(3)] == ["click", "type", "navigate"]
        calls.filter(has_text="navigate").first.click()
        page.locator("#stored-page", has_text="Go").wait_for(timeout=10_000)
        page.locator("#network-log", has_text="/form").wait_for(timeout=10_000)
        cookies = {c["name"]: c for c in page.context.cookies()}
        view_cookie = cookies["mcpbrowser_view"]
        assert view_cookie["httpOnly"] and view_cookie["sameSite"] == "Strict" and not view_cookie["secure"]
        assert ALICE not in page.content()
        browser.close()


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
    assert web.request("/view/signin", f"token={ALICE}".encode(), {"Origin": "http://evil.example"})[0] == 403


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


def test_embedded_in_an_apps_own_wsgi_server_with_its_own_sign_in(pages):
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
                with sync_playwright() as p:
                    chromium = p.chromium.launch(executable_path=find_executable("chromium"))
                    page = chromium.new_page(extra_http_headers={"X-User": "ann"})
                    page.goto(base + "/ops/view/")
                    page.locator(f"tr[data-session='{session.id}']").wait_for()
                    chromium.close()
        finally:
            server.close()
