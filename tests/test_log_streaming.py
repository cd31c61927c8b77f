"""End to end, through the official client, on both protocol eras and both transports: a session's console
and network logs as resources a client lists, reads with a cursor and subscribes to (issue 36).

2025-11-25 subscribes with resources/subscribe; 2026-07-28 with subscriptions/listen. Either way the
notifications are counted as they arrive on the wire (the client's message handler)."""

import json
import re
import threading
import time

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from support import PAGES, HttpServer, SdkClient, wait_for

pytestmark = pytest.mark.e2e

ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
SECRET = "hunter2-very-secret"
FLOOD = 10_000
COALESCE_S = 0.25  # resources/watch.py: a resource's subscribers hear of it at most this often

PAGES["/stream"] = """<!doctype html><title>Stream</title>
<input type="password" id="pw">
<button id="show" onclick="console.log('pw=' + document.getElementById('pw').value)">Show</button>
<button id="later" onclick="setTimeout(() => { console.log('late line'); fetch('/api/data?late=1'); }, 300)">
Later</button>
<button id="ticker" onclick="let n = 0; const t = setInterval(() => { console.log('tick ' + n++);
  if (n === 10) { clearInterval(t); document.body.append('all done'); } }, 200)">Ticker</button>
<button id="flood" onclick="setTimeout(() => { for (let i = 0; i < 10000; i++) console.log('flood ' + i); }, 50)">
Flood</button>
"""


@pytest.fixture(scope="module")
def http():
    s = HttpServer(env={"MCPBROWSER_HTTP_TOKENS": f"alice:{ALICE},bob:{BOB}"})
    yield s
    s.close()


class Heard:
    """notifications/resources/updated as they reach the client: (monotonic time, uri)."""

    def __init__(self):
        self.items = []

    async def __call__(self, message):
        if isinstance(message, types.ResourceUpdatedNotification):
            self.items.append((time.monotonic(), message.params.uri))

    def of(self, uri, since=0.0):
        return [t for t, u in self.items if u == uri and t >= since]


def connect(transport, era, http, token=ALICE):
    heard = Heard()
    mode = "legacy" if era == "2025-11-25" else "auto"
    client = SdkClient(http.url if transport == "http" else [], mode=mode, token=token, message_handler=heard)
    assert client.version == era
    return client, heard


def subscribe(client, uris):
    """Subscribe in the client's era; for 2026-07-28, (the listen's future, the URIs it honored)."""
    if client.version == "2025-11-25":
        for uri in uris:
            client.run("subscribe_resource", uri)
        return None, list(uris)
    ready, box = threading.Event(), {}

    async def listen():
        async with client.session.listen(resource_subscriptions=uris) as sub:
            box["honored"] = list(sub.honored.resource_subscriptions or [])
            ready.set()
            async for _ in sub:
                pass
        return "ended"

    fut = client.portal.start_task_soon(listen)
    assert ready.wait(20) or fut.result(0), "no acknowledgement"
    return fut, box["honored"]


def read(client, uri):
    result = client.run("read_resource", uri)
    (content,) = result.contents
    assert content.uri == uri and content.mime_type == "application/json"
    return json.loads(content.text)


LEGACY_SUBSCRIBE = "ignore:resources/subscribe is removed as of 2026-07-28"  # the SDK says so; we test that era


@pytest.mark.filterwarnings(LEGACY_SUBSCRIBE)
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_a_subscriber_hears_the_page_and_reads_every_entry(transport, era, http, pages):
    client, heard = connect(transport, era, http)
    listen = None
    try:
        sid = client.tool("create_session", url=pages.url("/stream"))["sessionId"]
        console, network = f"mcpbrowser://sessions/{sid}/console", f"mcpbrowser://sessions/{sid}/network"
        listed = {str(r.uri): r for r in client.run("list_resources").resources}
        assert {console, network} <= set(listed) and listed[console].mime_type == "application/json"
        templates = {t.uri_template for t in client.run("list_resource_templates").resource_templates}
        assert "mcpbrowser://sessions/{sessionId}/console{?after}" in templates
        start = {uri: read(client, uri)["cursor"] for uri in (console, network)}
        listen, honored = subscribe(client, [console, network])
        assert honored == [console, network]

        # What the page does while nobody calls a tool reaches the subscriber, and a read from the
        # cursor gives only what is new.
        asked = time.monotonic()  # (before the click: what the page does is told even while the click runs)
        client.tool("click", sessionId=sid, selector="#later")
        assert wait_for(lambda: heard.of(console, asked) and heard.of(network, asked), 10), heard.items
        fresh = read(client, f"{console}?after={start[console]}")
        assert [e["message"] for e in fresh["entries"]][-1:] == ["late line"], fresh
        assert fresh["next"] == f"{console}?after={fresh['cursor']}" and fresh["dropped"] == 0
        assert read(client, fresh["next"])["entries"] == []
        requests = read(client, f"{network}?after={start[network]}")["entries"]
        assert [(e["url"].split("/", 3)[3], e["status"]) for e in requests] == [("api/data?late=1", 200)]

        # While a call runs (a wait_for of about 2 s), what the page logs is told, and read, as it comes.
        cursor, asked, during, ended = fresh["cursor"], time.monotonic(), [], []
        client.tool("click", sessionId=sid, selector="#ticker")

        def wait():
            client.tool("wait_for", sessionId=sid, text="all done")
            ended.append(time.monotonic())

        waiter = threading.Thread(target=wait)
        waiter.start()
        while waiter.is_alive() and time.monotonic() < asked + 20:
            if heard.of(console, asked):
                page = read(client, f"{console}?after={cursor}")
                during, cursor = during + page["entries"], page["cursor"]
            time.sleep(0.3)
        waiter.join(30)
        assert ended, "wait_for did not answer"
        assert len([t for t in heard.of(console, asked) if t < ended[0]]) >= 3, heard.items
        assert any(e["message"].startswith("tick ") for e in during)

        # Secrets are redacted as the console_logs tool redacts them.
        client.tool("type", sessionId=sid, selector="#pw", text=SECRET)
        client.tool("click", sessionId=sid, selector="#show")
        shown = read(client, fresh["next"])["entries"]
        tool_view = client.tool("console_logs", sessionId=sid, limit=1)["entries"]
        assert shown[-1:] == tool_view and tool_view[0]["message"] == "pw=[REDACTED]"

        # A flood of 10,000 lines: a bounded number of notifications, and nothing lost. The page's
        # console guard (events.py) lets a burst through and says how many it dropped in one
        # warning; each line is either read or counted there, and the ring lost none.
        cursor = read(client, console)["cursor"]
        flood_at = time.monotonic()
        client.tool("click", sessionId=sid, selector="#flood")
        read_lines, dropped_by_page, lost = [], None, 0
        deadline = time.monotonic() + 15
        while dropped_by_page is None and time.monotonic() < deadline:
            time.sleep(0.3)
            page = read(client, f"{console}?after={cursor}")
            cursor, lost = page["cursor"], lost + page["dropped"]
            for entry in page["entries"]:
                if entry["message"].startswith("flood "):
                    read_lines.append(int(entry["message"].split()[1]))
                found = re.match(r"\[mcpbrowser\] dropped (\d+) console messages", entry["message"])
                if found:
                    dropped_by_page = int(found.group(1))
        assert dropped_by_page is not None, "the page's flood warning never came"
        assert lost == 0 and len(set(read_lines)) == len(read_lines) >= 100
        assert len(read_lines) + dropped_by_page == FLOOD
        told = heard.of(console, flood_at)
        window = time.monotonic() - flood_at
        assert 1 <= len(told) <= window / COALESCE_S + 2, (len(told), window)
        assert len(told) * 10 < len(read_lines)  # far fewer notifications than lines

        # The subscription ends with the session: a 2026-07-28 listen is answered (a graceful end).
        client.tool("close_session", sessionId=sid)
        if listen is not None:
            assert listen.result(10) == "ended"
        with pytest.raises(MCPError, match="Resource not found"):
            client.run("read_resource", console)
    finally:
        if listen is not None and not listen.done():
            listen.cancel()
        client.close()


def test_a_session_closed_over_its_memory_limit_ends_its_subscriptions():
    """--session-memory-mb closes a session on its own thread's check, not by a client's call: its subscriptions
    end with it all the same (the registry's on_ended), and a 2026-07-28 listen is answered."""
    # 200 MB of doubles, held by the page, when its button is clicked (as test_resource_limits.py's).
    hog = ("data:text/html,<title>hog</title><button id=hog onclick=\"window.hog = []; for (let i = 0; i < 200; i++) "
           "window.hog.push(new Array(131072).fill(i + 0.5)); document.title = 'full'\">Hog</button>")
    client = SdkClient(["--session-memory-mb", "100"])
    listen = None
    try:
        sid = client.tool("create_session", url=hog)["sessionId"]
        listen, honored = subscribe(client, [f"mcpbrowser://sessions/{sid}/console"])
        assert honored == [f"mcpbrowser://sessions/{sid}/console"]
        time.sleep(2.1)  # the limit is checked after a call at most every 2 s (session_memory.CHECK_EVERY_S)
        client.tool("click", sessionId=sid, selector="#hog")
        error = wait_for(lambda: (lambda e: e if e["errorCode"] != "ELEMENT_NOT_FOUND" else None)(
            client.error("click", sessionId=sid, selector="#nothing-here", timeout=100)), 10)
        assert error["errorCode"] == "SESSION_MEMORY_EXCEEDED", error
        assert listen.result(10) == "ended"
    finally:
        if listen is not None and not listen.done():
            listen.cancel()
        client.close()


@pytest.mark.filterwarnings(LEGACY_SUBSCRIBE)
def test_another_client_cannot_list_read_or_subscribe(http, pages):
    """Over HTTP, Bob (either era) meets Alice's session resources as if they did not exist, and reads
    nothing of hers in the server log."""
    alice, _ = connect("http", "2026-07-28", http)
    bob_old, bob_heard = connect("http", "2025-11-25", http, token=BOB)
    bob_new, _ = connect("http", "2026-07-28", http, token=BOB)
    listen = None
    try:
        sid = alice.tool("create_session", url=pages.url("/stream"))["sessionId"]
        console = f"mcpbrowser://sessions/{sid}/console"
        assert console in {str(r.uri) for r in alice.run("list_resources").resources}
        for bob in (bob_old, bob_new):
            assert not [r for r in bob.run("list_resources").resources if sid in str(r.uri)]
            for uri in (console, f"{console}?after=0", f"mcpbrowser://sessions/{sid}/network"):
                with pytest.raises(MCPError, match="Resource not found"):
                    bob.run("read_resource", uri)
        with pytest.raises(MCPError, match="Resource not found"):
            bob_old.run("subscribe_resource", console)
        # The server log (what notifications/message carried before 2026-07-28) shows each its own.
        alice_log = json.dumps(read(alice, "mcpbrowser://server/log"))
        assert sid in alice_log and '"tool_call"' in alice_log
        for bob in (bob_old, bob_new):
            assert sid not in json.dumps(read(bob, "mcpbrowser://server/log"))
        listen, honored = subscribe(bob_new, [console])
        assert honored == []  # not acknowledged: nothing will come
        assert listen.result(10) == "ended"  # and the stream, with nothing left to tell, ends
        alice.tool("click", sessionId=sid, selector="#later")
        assert wait_for(lambda: "late line" in json.dumps(read(alice, console)), 10)
        time.sleep(2 * COALESCE_S)
        assert bob_heard.items == []
        alice.tool("close_session", sessionId=sid)
    finally:
        for c in (alice, bob_old, bob_new):
            c.close()


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")  # the era whose records come this way
def test_a_clients_server_log_holds_its_own_calls_and_counts_only_its_own_records(http, pages):
    """Bob's calls with Alice's session id (refused, as if it did not exist) were written into Alice's server
    log as records about her session, and Bob's cursor counted every client's records: it moved while only
    Alice worked, so Bob could measure her activity (issue 49)."""
    alice, _ = connect("http", "2025-11-25", http)  # her records come as notifications/message too
    bob, _ = connect("http", "2026-07-28", http, token=BOB)
    try:
        alice.run("set_logging_level", "info")
        sid = alice.tool("create_session", url=pages.url("/stream"))["sessionId"]
        before = read(alice, "mcpbrowser://server/log")["cursor"]
        bob_cursor = read(bob, "mcpbrowser://server/log")["cursor"]
        tries = {"navigate": {"url": pages.url("/title/bob")}, "close_session": {}, "throttle": {"cpuRate": 2},
                 "export_script": {}, "console_logs": {}, "snapshot": {}}
        for name, extra in tries.items():
            assert bob.error(name, sessionId=sid, **extra)["errorCode"] == "SESSION_NOT_FOUND"
        # Bob's own log holds his attempts (the records were written), Alice's holds none of them.
        bobs = [e["data"] for e in read(bob, f"mcpbrowser://server/log?after={bob_cursor}")["entries"]]
        assert sorted(d["tool"] for d in bobs if d.get("outcome") == "SESSION_NOT_FOUND") == sorted(tries)
        alices = read(alice, f"mcpbrowser://server/log?after={before}")
        assert [e for e in alices["entries"] if e["data"].get("outcome") == "SESSION_NOT_FOUND"] == []
        assert alices["cursor"] == before
        assert [m for m in alice.log_messages if m.data.get("outcome") == "SESSION_NOT_FOUND"] == []
        assert any(m.data.get("tool") == "create_session" for m in alice.log_messages)
        with open(http.stderr.name) as f:  # the stderr log says each call, and not whose (an Mcp-Session-Id)
            calls = [json.loads(line) for line in f if '"tool_call"' in line]
        assert calls and not [c for c in calls if "owner" in c]

        # Between two of Bob's own records, his cursor moves by one, however much Alice does.
        bob_sid = bob.tool("create_session")["sessionId"]
        bob_cursor = read(bob, "mcpbrowser://server/log")["cursor"]
        alice_cursor = read(alice, "mcpbrowser://server/log")["cursor"]
        for _ in range(5):
            alice.tool("snapshot", sessionId=sid)
        assert read(alice, "mcpbrowser://server/log")["cursor"] >= alice_cursor + 5
        assert read(bob, f"mcpbrowser://server/log?after={bob_cursor}") == \
            {"entries": [], "cursor": bob_cursor, "more": False, "next": f"mcpbrowser://server/log?after={bob_cursor}"}
        bob.tool("console_logs", sessionId=bob_sid)
        again = read(bob, f"mcpbrowser://server/log?after={bob_cursor}")
        assert again["cursor"] == bob_cursor + 1
        assert [(e["data"]["tool"], e["data"]["session"]) for e in again["entries"]] == [("console_logs", bob_sid)]
        for client, session in ((alice, sid), (bob, bob_sid)):
            client.tool("close_session", sessionId=session)
    finally:
        for c in (alice, bob):
            c.close()
