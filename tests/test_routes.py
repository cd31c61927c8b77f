"""Network routes in a real Chromium on pages of our own: answered, aborted and changed requests, and the domain
policy first (a route never opens a forbidden host), through the official MCP client over stdio.

One server for the module allows only 127.0.0.1; 127.0.0.2 is the forbidden host, where a small server counts
what reaches it. Its history is a SQLite file, read raw.
"""

import json
import sqlite3
import threading
from http.server import ThreadingHTTPServer

import pytest
from support import HtmlHandler, McpClient, stored_text, wait_for

pytestmark = pytest.mark.e2e

LEAK = "<title>LEAKED</title>routed answer for a forbidden host"


class Site(HtmlHandler):
    """The module's pages; `hits` counts each path asked."""

    def do_GET(self):
        path = self.path.split("?")[0]
        self.server.hits[path] = self.server.hits.get(path, 0) + 1
        forbidden = self.server.forbidden
        if path == "/app":  # shows its API's error state
            return self._send(200, """<title>App</title><p id=state>loading</p><script>
fetch('/api/items').then(async r => {
  document.getElementById('state').textContent = r.ok ? 'items: ' + (await r.json()).length : 'Error ' + r.status;
});</script>""")
        if path == "/api/items":
            return self._send(200, "[1, 2, 3]", [("Content-Type", "application/json")])
        if path == "/img":
            return self._send(200, "<title>Img</title><p id=s>waiting</p><img src='/pic.png' onload=\"s.textContent="
                                   "'image: loaded'\" onerror=\"s.textContent='image: failed'\">")
        if path == "/pic.png":
            return self._send(200, "not really a png", [("Content-Type", "image/png")])
        if path == "/echo":
            return self._send(200, f"<title>Echo</title><p>x-added={self.headers.get('X-Added')}</p>"
                                   f"<p>accept={self.headers.get('Accept') is not None}</p>")
        if path == "/leak":  # a page that reaches for the forbidden host every way a route could answer
            return self._send(200, f"""<title>Leak</title><p id=a>a pending</p><p id=b>b pending</p>
<a id=go href="{forbidden}/secret">go</a><iframe src="{forbidden}/secret-frame"></iframe><script>
const show = (id, p) => p.then(r => r.text()).then(t => t, e => 'failed').then(t => {{
  document.getElementById(id).textContent = id + ' done: ' + t; }});
show('a', fetch('/secret-here'));
show('b', fetch('{forbidden}/secret'));
</script>""")
        return self._send(404, "<title>Not found</title>")


class Counter(HtmlHandler):
    def do_GET(self):
        self.server.asked.append(self.path)
        self._send(200, LEAK)


def _serve(host, handler):
    httpd = ThreadingHTTPServer((host, 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    forbidden = _serve("127.0.0.2", Counter)
    forbidden.asked = []
    site = _serve("127.0.0.1", Site)
    site.hits, site.forbidden = {}, f"http://127.0.0.2:{forbidden.server_port}"
    db = tmp_path_factory.mktemp("routes") / "history.db"
    client = McpClient("--allowed-domains", "127.0.0.1", "--db", str(db))
    yield client, site, forbidden, db
    client.close()
    for httpd in (site, forbidden):
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def sid(world):
    client = world[0]
    session_id = client.tool("create_session")["sessionId"]
    yield session_id
    client.call("close_session", {"sessionId": session_id})


def url(site, path):
    return f"http://127.0.0.1:{site.server_port}{path}"


def test_a_page_whose_api_answers_500_through_a_route_shows_its_error_state(world, sid):
    client, site, _, db = world
    client.tool("navigate", sessionId=sid, url=url(site, "/app"))
    client.tool("wait_for", sessionId=sid, text="items: 3")
    answer = client.tool("route", sessionId=sid, url="**/api/items", status=500, body='{"error": "down"}',
                         headers={"Content-Type": "application/json"})
    assert answer["routes"] == [{"url": "**/api/items", "action": "fulfill", "status": 500,
                                 "headers": {"Content-Type": "application/json"}, "bodyLength": 17}]
    before = site.hits.get("/api/items", 0)
    client.tool("navigate", sessionId=sid, url=url(site, "/app"))
    client.tool("wait_for", sessionId=sid, text="Error 500")
    assert site.hits.get("/api/items", 0) == before  # answered by the route, never asked of the server
    logged = client.tool("network_logs", sessionId=sid, urlContains="/api/items")["entries"]
    assert [(e["status"], e.get("routed")) for e in logged] == [(500, "fulfill")]
    assert client.tool("route", sessionId=sid)["routes"] == answer["routes"]
    assert client.error("route", sessionId=sid, abort=True)["errorCode"] == "INVALID_PARAMETERS"
    removed = client.tool("unroute", sessionId=sid, url="**/api/items")
    assert removed["removed"] == ["**/api/items"] and removed["routes"] == []
    client.tool("navigate", sessionId=sid, url=url(site, "/app"))
    client.tool("wait_for", sessionId=sid, text="items: 3")
    assert wait_for(lambda: "'route'" in stored_text(db)["rows"])
    with sqlite3.connect(db) as conn:  # the route is in the history, as the call that set it
        rows = [json.loads(p) for (p,) in conn.execute(
            "SELECT params FROM requests WHERE session_id = ? AND tool_name = 'route'", (sid,))]
    assert rows and rows[0]["url"] == "**/api/items" and rows[0]["status"] == 500


def test_a_pattern_routed_again_is_replaced_and_unroute_leaves_none_of_it(world, sid):
    """tools.md: a pattern routed again is replaced: its new answer is the one given, and once unrouted the server
    answers again (the first route's handler was not left behind)."""
    client, site, _, _ = world
    client.tool("route", sessionId=sid, url="**/api/items", status=500, body="{}")
    again = client.tool("route", sessionId=sid, url="**/api/items", status=503, body="{}")
    assert [(r["url"], r["status"]) for r in again["routes"]] == [("**/api/items", 503)], again
    client.tool("navigate", sessionId=sid, url=url(site, "/app"))
    client.tool("wait_for", sessionId=sid, text="Error 503")
    assert client.tool("unroute", sessionId=sid, url="**/api/items")["routes"] == []
    client.tool("navigate", sessionId=sid, url=url(site, "/app"))
    client.tool("wait_for", sessionId=sid, text="items: 3")


def test_a_route_that_says_no_one_thing_or_matches_nothing_is_refused_saying_why(world, sid):
    """An agent's mistakes: `abort: false` (it made a route answering 200 with an empty body), an answer and an abort
    or requestHeaders at once (one dropped unsaid), a path that no whole URL matches. Nothing is routed."""
    client, _, _, _ = world
    for args, words in (({"abort": False}, "none given"), ({"abort": True, "body": "x"}, "and abort: true"),
                        ({"body": "x", "requestHeaders": {"x-a": "1"}}, "and send on"),
                        ({"url": "api/data", "status": 204}, "'**/api/data'")):
        refused = client.error("route", sessionId=sid, **{"url": "**/api/items", **args})
        assert refused["errorCode"] == "INVALID_PARAMETERS" and words in refused["message"], (args, refused)
    assert client.tool("route", sessionId=sid)["routes"] == []
    assert client.tool("route", sessionId=sid, url="**/api/items", abort=True)["routes"]  # the control


def test_a_blocked_image_is_not_loaded(world, sid):
    client, site, _, _ = world
    client.tool("route", sessionId=sid, url="**/*.png", abort=True)
    before = site.hits.get("/pic.png", 0)
    client.tool("navigate", sessionId=sid, url=url(site, "/img"))
    client.tool("wait_for", sessionId=sid, text="image: failed")
    assert site.hits.get("/pic.png", 0) == before
    (entry,) = client.tool("network_logs", sessionId=sid, urlContains="/pic.png")["entries"]
    assert entry["routed"] == "abort" and entry["failure"]
    # A page the session's own route aborts: the failure names the route, not only the browser's words.
    failed = client.error("navigate", sessionId=sid, url=url(site, "/pic.png"))
    assert failed["errorCode"] == "NAVIGATION_FAILED" and "A route of this session aborts it" in failed["message"]


def test_a_route_changes_request_headers_but_never_the_host(world, sid):
    client, site, _, _ = world
    client.tool("route", sessionId=sid, url="**/echo", requestHeaders={"X-Added": "yes", "Accept": None})
    answer = client.tool("navigate", sessionId=sid, url=url(site, "/echo"))
    assert answer["title"] == "Echo"
    page = client.tool("snapshot", sessionId=sid)["snapshot"]
    assert "x-added=yes" in page and "accept=False" in page
    for name in ("Host", "host", "Proxy-Authorization"):
        error = client.error("route", sessionId=sid, url="**", requestHeaders={name: "127.0.0.2"})
        assert error["errorCode"] == "INVALID_PARAMETERS" and name in error["message"]
    assert [r["url"] for r in client.tool("route", sessionId=sid)["routes"]] == ["**/echo"]


def test_a_forbidden_host_stays_forbidden_through_a_route(world, sid):
    # The attack: a route that answers every URL (**) would hand the page a body for a host the policy
    # forbids, by a fetch, a frame, a link the page follows itself, or a redirect a route answers with.
    client, site, forbidden, _ = world
    client.tool("route", sessionId=sid, url="**/secret*", body=LEAK, headers={"Access-Control-Allow-Origin": "*"})
    client.tool("navigate", sessionId=sid, url=url(site, "/leak"))
    client.tool("wait_for", sessionId=sid, text="b done")
    page = client.tool("snapshot", sessionId=sid)["snapshot"]
    assert "a done: <title>LEAKED" in page  # the allowed host's request was answered by the route
    assert "b done: failed" in page or "Blocked by mcpbrowser" in page, page
    assert page.count("LEAKED") == 1, page
    frame = client.tool("snapshot", sessionId=sid, selector="iframe")
    assert "LEAKED" not in json.dumps(frame)
    assert client.error("click", sessionId=sid, selector="#go")["errorCode"] == "DOMAIN_NOT_ALLOWED"  # the link's host
    after = client.tool("snapshot", sessionId=sid)
    assert "LEAKED" not in json.dumps(after)
    client.tool("route", sessionId=sid, url="**/hop", status=302, headers={"Location": f"{site.forbidden}/secret"})
    hop = client.call("navigate", {"sessionId": sid, "url": url(site, "/hop")})
    assert "LEAKED" not in json.dumps(hop.structured_content) + hop.content[0].text
    entries = client.tool("network_logs", sessionId=sid, allPages=True, urlContains="127.0.0.2")["entries"]
    assert entries and all(e["blocked"] for e in entries), entries
    assert {e.get("routed") for e in entries} <= {"refused by the domain policy", None}
    assert forbidden.asked == []  # nothing reached the forbidden host either


def test_a_credential_a_route_sends_is_a_secret_in_answers_and_the_history(world, sid):
    client, site, _, db = world
    token = "Bearer route-s3cret-7Qx"
    answer = client.tool("route", sessionId=sid, url="**/echo", requestHeaders={"Authorization": token})
    assert answer["routes"][0]["requestHeaders"] == {"Authorization": "[REDACTED]"}
    assert token not in json.dumps(client.tool("route", sessionId=sid))
    ref = client.tool("navigate", sessionId=sid, url=url(site, "/echo"))["refId"]
    assert wait_for(lambda: ref in stored_text(db)["rows"])  # the route's rows were written before
    stored = stored_text(db)
    assert answer["refId"] in stored["rows"] and "[REDACTED]" in stored["rows"]
    assert "route-s3cret" not in stored["rows"] + stored["pages"]
    assert "route-s3cret" not in "".join(open(client.stderr.name).read())
