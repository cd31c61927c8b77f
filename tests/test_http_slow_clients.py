"""Slow and idle clients over real sockets: stalled requests, trickled heads and idle keep-alives
cannot keep a client with a token out, are closed by their deadlines, and leave no thread or
memory behind; one token's client cannot hold every server thread."""

import json
import socket
import time

import httpx2
import pytest
from support import HttpServer, SdkClient, wait_for

pytestmark = pytest.mark.e2e

ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
TOKENS = {"MCPBROWSER_HTTP_TOKENS": f"alice:{ALICE},bob:{BOB}"}
LEGACY_INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}


def address(server):
    host, port = server.base.split("//")[1].split(":")
    return host, int(port)


def stall(server, kind):
    """A connection that stops halfway: in its head, in its body, or before its first byte."""
    sock = socket.create_connection(address(server), timeout=10)
    head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    if kind == "head":
        sock.sendall(head + b"Authoriz")
    elif kind == "body":
        sock.sendall(head + b"Content-Length: 1000\r\n\r\n" + b'{"jsonrpc": "2.0", "id": 1, "method": "pi')
    return sock


def closed_by_server(sock):
    """Whether the server has closed this connection (without blocking)."""
    sock.setblocking(False)
    try:
        return sock.recv(4096) == b""
    except BlockingIOError:
        return False
    except OSError:  # reset
        return True
    finally:
        sock.setblocking(True)


def status(pid):
    """(threads, resident KB) of a process."""
    fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status"))
    return int(fields["Threads"]), int(fields["VmRSS"].split()[0])


def browse(server, url):
    """What a client does: initialize, open a session, navigate, close it. Returns the page's title."""
    client = SdkClient(server.url, token=ALICE, mode="legacy")
    try:
        sid = client.tool("create_session")["sessionId"]
        title = client.tool("navigate", sessionId=sid, url=url)["title"]
        client.tool("close_session", sessionId=sid)
        return title
    finally:
        client.close()


def test_three_hundred_stalled_connections_do_not_keep_a_client_out(pages):
    """300 sockets without a token (heads cut halfway, bodies cut halfway, silent), held open past
    the test (their deadlines are a minute here): a client with a token still initializes and
    navigates, and once they close the server's threads and memory are back where they were."""
    server = HttpServer("--http-header-timeout", "60", "--http-body-timeout", "60", "--http-idle-timeout", "60",
                        env=TOKENS)
    stalled = []
    try:
        assert browse(server, pages.url("/title/warm")) == "warm"  # the pool, the page, the threads: warm
        started = time.monotonic()
        assert browse(server, pages.url("/title/calm")) == "calm"
        calm = time.monotonic() - started
        time.sleep(1)
        threads, rss = status(server.proc.pid)

        stalled = [stall(server, kind) for _ in range(100) for kind in ("head", "body", "silent")]
        time.sleep(0.5)  # all accepted: the last ones evicted the first
        started = time.monotonic()
        assert browse(server, pages.url("/title/in")) == "in"
        took = time.monotonic() - started
        still_open = sum(not closed_by_server(s) for s in stalled)
        # Stalled sockets crowd each other out, never the client: as many stay as the cap allows.
        assert 100 <= still_open <= 128, still_open
        print(f"initialize, create_session, navigate, close: {calm:.2f} s alone, "
              f"{took:.2f} s with {still_open} stalled sockets open")
        assert closed_by_server(stalled[-1]) is False  # the newest stalled ones are the ones kept

        for sock in stalled:
            sock.close()
        stalled = []
        assert wait_for(lambda: status(server.proc.pid)[0] <= threads, seconds=30), (status(server.proc.pid), threads)
        after = status(server.proc.pid)[1]
        print(f"threads {threads}; resident memory {rss} KB before, {after} KB after")
        assert after < rss + 20_000, (rss, after)  # a connection costs about 1 KB; the rest is the allocator's
    finally:
        for sock in stalled:
            sock.close()
        server.close()


def test_deadlines_close_slow_and_idle_connections_but_not_event_streams():
    """A trickled head, a body that stops (with a valid token), a silent socket and an idle keep-alive
    are closed by their deadlines; an authenticated event stream outlives them all."""
    server = HttpServer("--http-header-timeout", "2", "--http-body-timeout", "3", "--http-idle-timeout", "2",
                        env=TOKENS)
    socks = []
    try:
        answer = httpx2.post(server.url, content=json.dumps(LEGACY_INIT), timeout=30, headers={
            "Authorization": f"Bearer {ALICE}", "Content-Type": "application/json"})
        session_id = answer.headers["mcp-session-id"]
        stream = socket.create_connection(address(server), timeout=30)
        stream.sendall(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {ALICE}\r\n"
                       f"Mcp-Session-Id: {session_id}\r\nAccept: text/event-stream\r\n\r\n".encode())
        socks.append(stream)

        silent, head = stall(server, "silent"), stall(server, "head")
        body = socket.create_connection(address(server), timeout=10)
        body.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {BOB}\r\n"
                     "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{".encode())
        idle = socket.create_connection(address(server), timeout=10)
        ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
        idle.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {BOB}\r\n"
                     f"Content-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: ping\r\n"
                     f"Content-Length: {len(ping)}\r\n\r\n".encode() + ping)
        assert idle.recv(4096).startswith(b"HTTP/1.1 200")  # answered, then kept alive, then idle
        trickle = socket.create_connection(address(server), timeout=10)
        socks += [silent, head, body, idle, trickle]
        request = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200
        started = time.monotonic()
        for byte in request:  # never idle for a second, never a whole head
            if closed_by_server(trickle):
                break
            try:
                trickle.send(bytes([byte]))
            except OSError:
                break
            time.sleep(0.25)
        assert closed_by_server(trickle) and time.monotonic() - started < 20
        for name, sock in (("silent", silent), ("head", head), ("body", body), ("idle", idle)):
            assert wait_for(lambda s=sock: closed_by_server(s), seconds=10), name
        # The event stream is a request in progress, not an idle connection: past 10 s, its keep-alive.
        stream.settimeout(30)
        assert stream.recv(4096).startswith(b"HTTP/1.1 200")
        assert not closed_by_server(stream)
    finally:
        for sock in socks:
            sock.close()
        server.close()


def test_one_client_cannot_hold_every_thread():
    """Past --http-client-requests open requests (event streams here) a token's client is answered 429;
    another client is served meanwhile, and the first is again once a stream closes."""
    server = HttpServer("--http-client-requests", "2", env=TOKENS)
    socks = []
    # One client for the polls below: httpx2.post() builds one, and its TLS context, per request (0.15 s of a
    # core each, 20 a second while waiting). No keep-alive: each request still has a connection of its own.
    http = httpx2.Client(limits=httpx2.Limits(max_keepalive_connections=0))

    def post(token, body, **headers):
        return http.post(server.url, content=json.dumps(body), timeout=30, headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json", **headers})

    try:
        for _ in range(2):
            session_id = post(ALICE, LEGACY_INIT).headers["mcp-session-id"]
            sock = socket.create_connection(address(server), timeout=30)
            sock.sendall(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {ALICE}\r\n"
                         f"Mcp-Session-Id: {session_id}\r\n\r\n".encode())
            socks.append(sock)
        assert wait_for(lambda: post(ALICE, LEGACY_INIT).status_code == 429, seconds=10)
        refused = post(ALICE, LEGACY_INIT)
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
        assert refused.json()["error"]["code"] == -32600
        assert post(BOB, LEGACY_INIT).status_code == 200
        socks.pop().close()  # noticed at the stream's next keep-alive (10 s)
        assert wait_for(lambda: post(ALICE, LEGACY_INIT).status_code == 200, seconds=30)
    finally:
        for sock in socks:
            sock.close()
        http.close()
        server.close()


def test_a_client_that_sends_on_after_its_413_is_closed_by_the_idle_timeout():
    """Attack: the server reads a refused body away after its 413 (so the answer is not reset away),
    but a client that never stops sending is closed all the same, within --http-idle-timeout."""
    s = HttpServer("--max-message-bytes", "100000", env=TOKENS)
    try:
        sock = socket.create_connection(address(s), timeout=10)
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     + f"Authorization: Bearer {ALICE}\r\nContent-Length: 10000000\r\n\r\n".encode())
        answer = b""
        while not (b"\r\n\r\n" in answer and answer.endswith(b"}")):
            chunk = sock.recv(4096)
            assert chunk, answer
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 413")  # the positive control: refused, and told why
        assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"] == -32600
        started = time.monotonic()
        with pytest.raises(OSError):
            while time.monotonic() - started < 30:
                sock.sendall(b"y" * 1024)  # 10 KB/s: 30 s stays under the 400 KB read away at most
                time.sleep(0.1)
        assert time.monotonic() - started < 10, "5 s idle timeout, checked every second"
    finally:
        s.close()
