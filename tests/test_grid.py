"""Sessions on a real Selenium Grid 4 on loopback (Java 17, the Selenium server jar, Debian's chromedriver).

scripts/install_grid.sh installs what is missing; when it cannot, these tests skip and
say why in the summary. Nothing else in the suite needs a Grid.
"""

import pytest
from backends import Grid, grid_jar
from support import wait_for
from test_security import FORBIDDEN_HOST, base, forbidden  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow

# The JVM's first tier of compilation only, and one GC thread: a Grid starts on 40% less CPU (standalone 2.5 s ->
# 1.6 s, hub and node 5.4 s -> 3.2 s) and is ready sooner; its few sessions here need no faster steady state.
QUICK_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


@pytest.fixture(scope="module")
def jar():
    path, why = grid_jar()
    if path is None:
        pytest.skip(f"no Selenium Grid here: {why}")
    return path


@pytest.fixture(scope="module")
def grid(jar, tmp_path_factory):
    g = Grid(jar, tmp_path_factory.mktemp("grid"), java_options=QUICK_JVM).start()
    yield g
    g.stop()


def test_sessions_run_on_a_selenium_grid_and_leave_nothing_behind(grid, pages, make_client):
    client = make_client("--selenium-grid", grid.url, "--selenium-capabilities", '{"se:name": "mcpbrowser-test"}')
    a = client.tool("create_session")["sessionId"]
    b = client.tool("create_session")["sessionId"]
    assert len(grid.sessions()) == 2  # a Grid browser each; the pool holds none of the Grid's slots
    assert {s["capabilities"].get("se:name") for s in grid.sessions()} == {"mcpbrowser-test"}
    for sid in (a, b):
        client.tool("navigate", sessionId=sid, url=pages.url("/storage"))
    client.tool("type", sessionId=a, selector="#v", text="grid")
    client.tool("click", sessionId=a, selector="#save")
    client.tool("click", sessionId=b, selector="#show")
    assert client.tool("snapshot", sessionId=a)["title"] == "cookie=k=grid;local=grid;session=grid"
    assert client.tool("snapshot", sessionId=b)["title"] == "cookie=;local=;session="  # isolated
    listed = client.tool("list_sessions")
    assert {s["endpoint"] for s in listed["sessions"]} == {grid.url}
    assert listed["endpoints"][0]["kind"] == "grid" and listed["endpoints"][0]["sessions"] == 2
    client.tool("close_session", sessionId=a)
    assert wait_for(lambda: len(grid.sessions()) == 1, seconds=10), grid.sessions()
    client.close()  # the server's shutdown closes the other
    assert wait_for(lambda: grid.sessions() == [], seconds=10), grid.sessions()


def test_the_domain_policy_holds_on_a_grid_browser(grid, pages, forbidden, make_client):  # noqa: F811
    """The Grid's Chromium reaches the network through the session's policy proxy on our loopback."""
    client = make_client("--selenium-grid", grid.url, "--allowed-domains", "127.0.0.1")
    sid = client.tool("create_session")["sessionId"]
    to = base(forbidden)
    redirected = client.error("navigate", sessionId=sid, url=pages.url(f"/redirect?to={to}/redirected"))
    assert redirected["errorCode"] == "DOMAIN_NOT_ALLOWED" and redirected["details"]["domain"] == FORBIDDEN_HOST
    client.tool("navigate", sessionId=sid, url=pages.url(f"/attack?to={to}"))
    # Its iframe, image, script, fetch, XHR and WebSocket try now: each is refused on its way.
    tried = {"/iframe", "/img.png", "/script.js", "/fetch", "/xhr", "/ws"}

    def blocked():
        entries = client.tool("network_logs", sessionId=sid, urlContains=f"{FORBIDDEN_HOST}:{forbidden.server_port}/",
                              limit=100, allPages=True)["entries"]
        paths = {"/" + e["url"].split("/", 3)[3] for e in entries if e.get("blocked")}
        return paths if paths >= tried else None

    assert tried <= (wait_for(blocked, seconds=15) or set()), client.tool("network_logs", sessionId=sid, limit=100)
    assert forbidden.hits == []


def test_a_grid_as_hub_and_node(jar, short_tmp, pages, make_client):
    grid = Grid(jar, short_tmp, mode="hub", java_options=QUICK_JVM).start()
    try:
        client = make_client("--selenium-grid", grid.url)
        sid = client.tool("create_session", url=pages.url("/title/hub"))["sessionId"]
        assert client.tool("snapshot", sessionId=sid)["title"] == "hub"
        client.tool("close_session", sessionId=sid)
        assert wait_for(lambda: grid.sessions() == [], seconds=10), grid.sessions()
    finally:
        grid.stop()
