"""End to end: the domain allowlist on the network, schemes, elicitation, rate limits, redaction."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from mcp import types
from support import McpClient, stored_text, wait_for

pytestmark = pytest.mark.e2e

FORBIDDEN_HOST = "127.0.0.2"  # loopback too, but another host as far as the policy is concerned
BLOCKED_HOST = "127.0.0.3"  # in the asking server's --blocked-domains


class _Counter(BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.hits.append(self.path)
        body = b"<title>Forbidden page</title>forbidden"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def forbidden():
    """A server that must never be reached; it counts every request, WebSocket upgrades included."""
    yield from _counting(FORBIDDEN_HOST)


@pytest.fixture
def blocked():
    """The same, on the host the asking server blocks."""
    yield from _counting(BLOCKED_HOST)


def _counting(host):
    httpd = ThreadingHTTPServer((host, 0), _Counter)
    httpd.daemon_threads = True
    httpd.hits = []
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def base(httpd):
    return f"http://{httpd.server_address[0]}:{httpd.server_port}"


def test_allowlist_is_enforced_on_every_route(session_on, pages, forbidden):
    c, sid = session_on("--allowed-domains", "127.0.0.1")
    to = base(forbidden)
    direct = c.error("navigate", sessionId=sid, url=f"{to}/direct")
    assert direct["errorCode"] == "DOMAIN_NOT_ALLOWED" and FORBIDDEN_HOST in direct["message"]
    redirected = c.error("navigate", sessionId=sid, url=pages.url(f"/redirect?to={to}/redirected"))
    assert redirected["errorCode"] == "DOMAIN_NOT_ALLOWED" and redirected["details"]["domain"] == FORBIDDEN_HOST
    # A hop to https: the proxy refuses its tunnel, which fails the navigation (no page of the proxy's to read): the
    # proxy's count of refusals is what makes it DOMAIN_NOT_ALLOWED, naming the hop, not NAVIGATION_FAILED.
    tunnelled = c.error("navigate", sessionId=sid, url=pages.url(f"/redirect?to=https://{FORBIDDEN_HOST}:"
                                                                 f"{forbidden.server_port}/tunnelled"))
    assert tunnelled["errorCode"] == "DOMAIN_NOT_ALLOWED" and tunnelled["details"]["domain"] == FORBIDDEN_HOST, \
        tunnelled
    for page in ("/meta-refresh", "/js-location"):
        c.call("navigate", {"sessionId": sid, "url": pages.url(f"{page}?to={to}")})
        time.sleep(0.5)  # give the refresh or script time to try
    c.tool("navigate", sessionId=sid, url=pages.url(f"/attack?to={to}"))
    c.tool("click", sessionId=sid, selector="#popup")
    time.sleep(1.5)  # iframe, image, script, fetch, XHR, WebSocket and the popup all try now
    assert forbidden.hits == []
    deadline = time.monotonic() + 10
    while True:  # a request's failure event may still be on its way
        logs = c.tool("network_logs", sessionId=sid, urlContains=FORBIDDEN_HOST, limit=100, allPages=True)["entries"]
        towards = [e for e in logs if urlsplit(e["url"]).hostname == FORBIDDEN_HOST]
        if all(e.get("failure") for e in towards) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert all(e.get("blocked") for e in towards), towards
    blocked = {e["url"].rsplit("/", 1)[1] for e in towards}
    assert {"redirected", "meta", "location", "iframe", "img.png", "script.js", "fetch", "xhr", "ws"} <= blocked, \
        towards
    # The popup's request is its tab's.
    c.tool("tabs", sessionId=sid, action="select", index=1)
    assert wait_for(lambda: [e for e in c.tool("network_logs", sessionId=sid, urlContains=FORBIDDEN_HOST)["entries"]
                             if e["url"].endswith("/popup") and e.get("blocked")], 10)
    # A click that sends the tab there answers DOMAIN_NOT_ALLOWED, as navigate does: it answered success,
    # navigated: true, with the forbidden URL and an empty title (the tab shows the proxy's refusal).
    c.tool("navigate", sessionId=sid, url=pages.url(f"/attack?to={to}"))
    clicked = c.error("click", sessionId=sid, selector="#away")
    assert clicked["errorCode"] == "DOMAIN_NOT_ALLOWED" and clicked["details"]["domain"] == FORBIDDEN_HOST, clicked
    assert "click" in clicked["message"] and forbidden.hits == []
    # A broken link (a closed port of an allowed host) is no refusal: the tab shows the browser's error page.
    c.tool("navigate", sessionId=sid, url=pages.url(f"/attack?to={to}"))
    broken = c.tool("click", sessionId=sid, selector="#broken")
    assert broken["navigated"] is True and broken["url"].startswith("chrome-error:"), broken


def test_session_narrows_but_never_widens(make_client, session_on, pages, forbidden):
    c = make_client("--allowed-domains", f"127.0.0.1,{FORBIDDEN_HOST}")
    narrow = c.tool("create_session", allowedDomains=["127.0.0.1"])["sessionId"]
    wide = c.tool("create_session")["sessionId"]
    assert c.error("navigate", sessionId=narrow, url=f"{base(forbidden)}/x")["errorCode"] == "DOMAIN_NOT_ALLOWED"
    assert c.tool("navigate", sessionId=wide, url=f"{base(forbidden)}/x")["title"] == "Forbidden page"
    d, widen = session_on("--allowed-domains", "127.0.0.1", allowedDomains=[FORBIDDEN_HOST, "127.0.0.1"])
    assert d.error("navigate", sessionId=widen, url=f"{base(forbidden)}/y")["errorCode"] == "DOMAIN_NOT_ALLOWED"
    # Only the wide session's visit (and the browser's favicon fetch for that page) arrived.
    assert [hit for hit in forbidden.hits if hit != "/favicon.ico"] == ["/x"]


def test_blocked_domains_win(make_client, pages, forbidden):
    c = make_client("--blocked-domains", FORBIDDEN_HOST)
    sid = c.tool("create_session")["sessionId"]
    assert c.tool("navigate", sessionId=sid, url=pages.url("/title/ok"))["title"] == "ok"
    assert c.error("navigate", sessionId=sid, url=f"{base(forbidden)}/z")["errorCode"] == "DOMAIN_NOT_ALLOWED"
    # A block list alone gives the session its filtering proxy: the page's own requests (iframe, image,
    # script, fetch, XHR, WebSocket) are refused too, not only the navigations.
    c.tool("navigate", sessionId=sid, url=pages.url(f"/attack?to={base(forbidden)}"))
    time.sleep(1.5)
    assert forbidden.hits == []


def test_schemes_need_an_explicit_flag(make_client, tmp_path):
    page = tmp_path / "local.html"
    page.write_text("<title>Local file</title>")
    c = make_client()
    sid = c.tool("create_session")["sessionId"]
    err = c.error("navigate", sessionId=sid, url=page.as_uri())
    assert err["errorCode"] == "INVALID_PARAMETERS" and "--url-schemes" in err["message"]
    assert c.error("navigate", sessionId=sid, url="chrome://version")["errorCode"] == "INVALID_PARAMETERS"
    assert c.tool("navigate", sessionId=sid, url="data:text/html,<title>Data</title>")["title"] == "Data"
    d = make_client("--url-schemes", "http,https,about,data,file")
    sid = d.tool("create_session")["sessionId"]
    assert d.tool("navigate", sessionId=sid, url=page.as_uri())["title"] == "Local file"


@pytest.fixture(scope="module")
def asking():
    """One server that asks about new domains, for every answer a user may give: its client answers with
    `asking.action` and keeps what it was asked in `asking.asked` (the grant is the session's alone)."""
    async def answer(context, params):
        c.asked.append(params.message)
        return types.ElicitResult(action=c.action)

    c = McpClient("--allowed-domains", "127.0.0.1", "--ask-new-domains", "--blocked-domains", BLOCKED_HOST,
                  elicitation_callback=answer)
    yield c
    c.close()


@pytest.mark.parametrize("action", ["accept", "decline", "cancel"])
def test_new_domains_are_asked_through_elicitation(asking, pages, forbidden, action):
    c = asking
    c.action, c.asked = action, []
    sid = c.tool("create_session")["sessionId"]
    try:
        url = f"{base(forbidden)}/asked"
        if action == "accept":
            assert c.tool("navigate", sessionId=sid, url=url)["title"] == "Forbidden page"
            assert [hit for hit in forbidden.hits if hit != "/favicon.ico"] == ["/asked"]
        else:
            err = c.error("navigate", sessionId=sid, url=url)
            assert err["errorCode"] == "DOMAIN_NOT_ALLOWED" and err["details"]["userAction"] == action
            assert forbidden.hits == []
        assert len(c.asked) == 1 and FORBIDDEN_HOST in c.asked[0]
    finally:
        c.call("close_session", {"sessionId": sid})


def test_a_blocked_host_is_refused_without_asking_the_person(asking, forbidden, blocked):
    """--blocked-domains wins over a person's yes (the proxy refuses the host whatever was granted): a navigation
    to it is refused at once, naming the block, and no one is asked a question whose answer changes nothing.
    The control: the same server asks about a host that is only missing from the allowlist."""
    c = asking
    c.action, c.asked = "accept", []
    sid = c.tool("create_session")["sessionId"]
    try:
        err = c.error("navigate", sessionId=sid, url=f"{base(blocked)}/blocked")
        assert err["errorCode"] == "DOMAIN_NOT_ALLOWED" and "blocked domains" in err["message"], err
        assert err["details"]["domain"] == BLOCKED_HOST
        assert c.asked == [] and blocked.hits == []
        assert c.tool("navigate", sessionId=sid, url=f"{base(forbidden)}/asked")["title"] == "Forbidden page"
        assert len(c.asked) == 1 and FORBIDDEN_HOST in c.asked[0]
    finally:
        c.call("close_session", {"sessionId": sid})


def test_without_elicitation_the_answer_says_why(make_client, forbidden):
    c = make_client("--allowed-domains", "127.0.0.1", "--ask-new-domains")
    sid = c.tool("create_session")["sessionId"]
    err = c.error("navigate", sessionId=sid, url=f"{base(forbidden)}/nope")
    assert err["errorCode"] == "DOMAIN_NOT_ALLOWED" and "elicitation" in err["message"]
    assert forbidden.hits == []


def test_rate_limit_boundary(make_client):
    c = make_client("--rate-limit", "3")
    for _ in range(3):
        c.tool("list_sessions")
    err = c.error("list_sessions")
    assert err["errorCode"] == "RATE_LIMITED" and 0 < err["details"]["retryAfterMs"] <= 60_000
    assert c.tool("create_session")["sessionId"]  # another operation has its own budget


def test_planted_secrets_appear_nowhere(tmp_path, pages):
    db = str(tmp_path / "h.db")
    c = McpClient("--db", db)
    outputs = []
    try:
        def call(name, **arguments):
            result = c.call(name, arguments)
            outputs.append(json.dumps([block.model_dump() for block in result.content]))
            return json.loads(result.content[0].text)

        sid = call("create_session")["sessionId"]
        call("navigate", sessionId=sid, url=pages.url("/logs"))  # sends Authorization and X-Api-Key
        call("wait_for", sessionId=sid, selector="#more")
        call("network_logs", sessionId=sid, headers=True)  # the headers as --redact-headers shows them
        call("navigate", sessionId=sid, url=pages.url("/counter?n=1"))
        ref = call("type", sessionId=sid, selector="#secret-box", text="PLANTED-PASSWORD", secret=True)["refId"]
        call("get_content", ref_id=ref)
        call("console_logs", sessionId=sid)
        # A page that shows what was typed in its own text: its snapshots keep it, and no answer here shows them.
        call("navigate", sessionId=sid, url="data:text/html,<input id=box oninput=\"echo.textContent = "
                                            "'typed ' + this.value\"><p id=echo></p>")
        call("type", sessionId=sid, selector="#box", text="PLANTED-PASSWORD", secret=True)
        call("close_session", sessionId=sid)
        stderr = "\n".join(json.dumps(entry) for entry in c.server_log())
    finally:
        c.close()
    stored = stored_text(db)
    # The search sees page text: a word of the page's body, in the snapshots decompressed.
    assert "item 19" in stored["pages"] and "typed [REDACTED]" in stored["pages"]
    for secret in ("SECRET-TOKEN-123", "SECRET-KEY-456", "SECRET-COOKIE-789", "PLANTED-PASSWORD"):
        for where, text in (("tool output", "".join(outputs)), ("stderr", stderr), ("database", stored["rows"]),
                            ("database's pages", stored["pages"])):
            assert secret not in text, f"{secret} leaked into the {where}"
    assert "[REDACTED]" in "".join(outputs)


def test_page_requests_are_served_while_no_call_runs(session_on, pages):
    # Route handlers run on the session thread; an idle session must still serve them.
    c, sid = session_on("--allowed-domains", "127.0.0.1")  # the allowlist test's server
    c.tool("navigate", sessionId=sid, url=pages.url("/delayed-fetch"))
    deadline = time.monotonic() + 10
    while "/hit?k=idle" not in pages.hits and time.monotonic() < deadline:
        time.sleep(0.05)  # no tool call runs meanwhile
    assert "/hit?k=idle" in pages.hits
