"""Seed 004's compression over Streamable HTTP (issue 48): answers gzip-compressed for a client that accepts
it and plain for one that does not; an event stream compressed event by event and flushed, so that a live
notification is not held back; a compressed request body refused. Raw requests through http.client, which
shows the bytes and headers as they travel, and the official client end to end."""

import gzip
import http.client
import json
import threading
import time
import zlib
from urllib.parse import urlsplit

import pytest
from support import PAGES, HttpServer, SdkClient, wait_for

pytestmark = pytest.mark.e2e

# A page whose snapshot is large (a long list), and a button that logs a line every 200 ms, ten times.
PAGES["/compressible"] = ("<!doctype html><title>Long list</title><button id=ticker onclick=\"let n = 0; "
                          "const t = setInterval(() => { console.log('tick ' + n++); if (n === 10) clearInterval(t) }"
                          ", 200)\">Ticker</button><ul>"
                          + "".join(f"<li><a href='/title/item{i}'>Item number {i}</a></li>" for i in range(400))
                          + "</ul>")


@pytest.fixture(scope="module")
def server():
    s = HttpServer()  # loopback, no tokens: raw requests need no header but the protocol's
    yield s
    s.close()


class Raw:
    """A handshake-era client of raw requests: each answer as (response, the body's bytes as they came)."""

    def __init__(self, url):
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname, parts.port, parts.path
        self.session_id = None
        self.next_id = 0
        answer, _ = self.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                            "clientInfo": {"name": "raw", "version": "1"}})
        self.session_id = answer.getheader("Mcp-Session-Id")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def connect(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=60)

    def send(self, body, encoding=None, **headers):
        """POST one message; http.client asks for identity unless `encoding` names an Accept-Encoding."""
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if encoding is not None:
            headers["Accept-Encoding"] = encoding
        conn = self.connect()
        try:
            conn.request("POST", self.path, body if isinstance(body, bytes) else json.dumps(body), headers)
            answer = conn.getresponse()
            return answer, answer.read()
        finally:
            conn.close()

    def rpc(self, method, params, encoding=None):
        self.next_id += 1
        return self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}, encoding)

    def tool(self, name, encoding=None, **arguments):
        answer, raw = self.rpc("tools/call", {"name": name, "arguments": arguments}, encoding)
        return decoded(answer, raw)["result"]["structuredContent"]


def decoded(answer, raw):
    """The JSON-RPC answer in a response: gunzipped when it says gzip, the last event of an event stream."""
    if answer.getheader("Content-Encoding") == "gzip":
        raw = gzip.decompress(raw)
    if answer.getheader("Content-Type") == "text/event-stream":
        raw = [line for line in raw.split(b"\n") if line.startswith(b"data: ")][-1][6:]
    return json.loads(raw)


def test_large_answers_arrive_gzipped_when_accepted_and_plain_otherwise(server, pages):
    raw = Raw(server.url)
    sid = raw.tool("create_session", url=pages.url("/compressible"))["sessionId"]
    sizes = {}
    for what, method, params in (("tools/list", "tools/list", {}),
                                 ("snapshot", "tools/call", {"name": "snapshot", "arguments": {"sessionId": sid}})):
        plain, plain_bytes = raw.rpc(method, params)  # http.client's own Accept-Encoding: identity
        packed, packed_bytes = raw.rpc(method, params, encoding="gzip, deflate, br, zstd")  # the official client's
        assert plain.status == packed.status == 200
        assert plain.getheader("Content-Encoding") is None and packed.getheader("Content-Encoding") == "gzip"
        assert plain.getheader("Vary") == packed.getheader("Vary") == "Accept-Encoding"
        assert int(packed.getheader("Content-Length")) == len(packed_bytes)
        one, other = decoded(plain, plain_bytes), decoded(packed, packed_bytes)
        if what == "snapshot":  # each call is a call of its own: its refId, timings and the session's expiry differ
            for answer in (one, other):
                content = answer["result"]["structuredContent"]
                answer["result"] = {k: v for k, v in content.items() if k not in ("refId", "meta", "expiresAt")}
            assert "Item number 399" in json.dumps(one)
        one.pop("id"), other.pop("id")
        assert one == other
        sizes[what] = (len(plain_bytes), len(packed_bytes))
        assert len(packed_bytes) * 3 < len(plain_bytes), sizes
    print("plain and gzip bytes:", sizes)  # noqa: T201  # the figures the CHANGELOG quotes
    # Accept-Encoding read as RFC 9110 says: a q of 0 refuses, identity preferred wins, * offers gzip.
    for header, wanted in (("gzip;q=0", None), ("identity", None), ("gzip;q=0.5, identity", None),
                           ("br", None), ("*", "gzip"), ("*;q=0", None), ("x-gzip", "gzip"),
                           ("GZIP ; Q=0.8, identity;q=0.2", "gzip"), ("gzip;q=zero", None)):
        answer, body = raw.rpc("tools/list", {}, encoding=header)
        assert answer.getheader("Content-Encoding") == wanted, header
        assert decoded(answer, body)["result"]["tools"]
    # A small answer goes as it is: compressing it would save nothing.
    answer, body = raw.rpc("ping", {}, encoding="gzip")
    assert answer.getheader("Content-Encoding") is None and json.loads(body)["result"] == {}
    raw.tool("close_session", sessionId=sid)


def bare(raw, method, body=None, **headers):
    """Send a request with no Accept-Encoding header at all (http.client sends `identity` unless told to skip
    it): (the open connection, the request's bytes as sent). Its socket times out after 20 s, so an answer
    that never comes fails the test instead of hanging it."""
    conn = http.client.HTTPConnection(raw.host, raw.port, timeout=20)
    sent = []
    send = conn.send
    conn.send = lambda data: (sent.append(bytes(data)), send(data))[1]
    data = json.dumps(body).encode() if body is not None else None
    conn.putrequest(method, raw.path, skip_accept_encoding=True)
    for name, value in {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                        "Mcp-Session-Id": raw.session_id, **({"Content-Length": str(len(data))} if data else {}),
                        **headers}.items():
        conn.putheader(name, value)
    conn.endheaders(data)
    return conn, b"".join(sent)


def test_a_client_that_sends_no_accept_encoding_gets_no_gzip(server, pages):
    """Issue 63, 6(c): only a client that asks for gzip gets it. http.client and the official client always
    send an Accept-Encoding; a client that sends none (curl, a bare socket) reads answers as they are."""
    raw = Raw(server.url)
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    conn, sent = bare(raw, "POST", listing)
    try:
        assert b"accept-encoding" not in sent.lower() and b"tools/list" in sent  # the header really is absent
        answer = conn.getresponse()
        body = answer.read()
    finally:
        conn.close()
    assert answer.status == 200 and answer.getheader("Content-Encoding") is None, answer.getheaders()
    assert answer.getheader("Vary") == "Accept-Encoding"
    assert len(body) > 1024 and json.loads(body)["result"]["tools"]  # large enough to be compressed, and plain
    # The control: the same answer, asked for gzip, comes gzipped.
    packed, packed_body = raw.send(listing, encoding="gzip")
    assert packed.getheader("Content-Encoding") == "gzip" and json.loads(gzip.decompress(packed_body))["result"]

    # The client's own event stream too: plain events, the first as it comes.
    sid = raw.tool("create_session", url=pages.url("/compressible"))["sessionId"]
    assert "result" in decoded(*raw.rpc("resources/subscribe", {"uri": f"mcpbrowser://sessions/{sid}/console"}))
    conn, sent = bare(raw, "GET", Accept="text/event-stream")
    try:
        assert b"accept-encoding" not in sent.lower()
        raw.tool("click", sessionId=sid, selector="#ticker")  # ten lines over 2 s: updates on the stream
        stream = conn.getresponse()  # its headers go out with its first event
        assert stream.status == 200 and stream.getheader("Content-Type") == "text/event-stream"
        assert stream.getheader("Content-Encoding") is None, stream.getheaders()
        first = stream.read1(65536)
        assert first.startswith(b"event: message\ndata: {"), first  # text as it was written, not gzip's bytes
    finally:
        conn.close()
        raw.tool("close_session", sessionId=sid)
        ended = raw.connect()
        ended.request("DELETE", raw.path, headers={"Mcp-Session-Id": raw.session_id})
        assert ended.getresponse().status == 204
        ended.close()


def test_a_compressed_stream_brings_each_notification_as_it_comes(server, pages):
    """The client's own event stream, gzipped: each notification decodes as it arrives, not when the stream ends."""
    raw = Raw(server.url)
    sid = raw.tool("create_session", url=pages.url("/compressible"))["sessionId"]
    console = f"mcpbrowser://sessions/{sid}/console"
    assert "result" in decoded(*raw.rpc("resources/subscribe", {"uri": console}))
    heard, opened, ended = [], threading.Event(), threading.Event()
    conn = raw.connect()
    box = {}

    def listen():
        conn.request("GET", raw.path, headers={"Mcp-Session-Id": raw.session_id, "Accept": "text/event-stream",
                                               "Accept-Encoding": "gzip"})
        box["answer"] = answer = conn.getresponse()
        opened.set()
        unpack, text = zlib.decompressobj(16 + zlib.MAX_WBITS), b""
        while chunk := answer.read1(65536):
            text += unpack.decompress(chunk)
            *events, text = text.split(b"\n\n")
            heard.extend((time.monotonic(), json.loads(e.split(b"data: ", 1)[1])) for e in events if b"data: " in e)
        box["whole"] = unpack.eof  # the gzip stream was ended properly
        ended.set()

    reader = threading.Thread(target=listen, daemon=True)
    reader.start()
    try:
        assert opened.wait(20) and box["answer"].getheader("Content-Encoding") == "gzip"
        assert box["answer"].getheader("Vary") == "Accept-Encoding"
        clicked = time.monotonic()
        raw.tool("click", sessionId=sid, selector="#ticker")

        def updates():
            return [t for t, m in heard if m.get("method") == "notifications/resources/updated"
                    and m["params"]["uri"] == console]

        # Ten lines over 2 s: notifications come while the page logs (at most one per 0.25 s,
        # resources/watch.py), each readable on arrival; a stream held back would bring them at its end.
        assert wait_for(lambda: len(updates()) >= 3, 10), heard
        times = updates()
        assert times[0] - clicked < 2.0 and times[2] - times[0] > 0.4, (clicked, times)
        assert not ended.is_set()  # the stream is still open: they came as they were sent
    finally:
        conn_end = raw.connect()
        conn_end.request("DELETE", raw.path, headers={"Mcp-Session-Id": raw.session_id})
        assert conn_end.getresponse().status == 204
        conn_end.close()
    assert ended.wait(20) and box["whole"]
    conn.close()


def test_a_compressed_request_body_is_refused_unread(server):
    """A compression bomb: 50 MB of JSON whitespace in 50 KB of gzip. Refused (415), never inflated."""
    raw = Raw(server.url)
    message = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}).encode()
    bomb = gzip.compress(message + b" " * 50_000_000)
    assert len(bomb) < 100_000
    started = time.monotonic()
    answer, body = raw.send(bomb, **{"Content-Encoding": "gzip"})
    assert answer.status == 415 and "uncompressed" in json.loads(body)["error"]["message"]
    assert answer.getheader("Accept-Encoding") == "identity"
    assert time.monotonic() - started < 5
    answer, body = raw.send(gzip.compress(message), **{"Content-Encoding": "deflate"})
    assert answer.status == 415
    # The same message uncompressed is answered (a positive control), as is an explicit identity.
    for headers in ({}, {"Content-Encoding": "identity"}):
        answer, body = raw.send(message, **headers)
        assert answer.status == 200 and json.loads(body) == {"jsonrpc": "2.0", "id": 7, "result": {}}


def test_the_official_client_reads_compressed_answers(server, pages):
    """The official client's HTTP library asks for gzip by default: it reads every answer as before."""
    client = SdkClient(server.url)
    try:
        names = {t.name for t in client.run("list_tools").tools}
        assert {"create_session", "snapshot", "click"} <= names
        sid = client.tool("create_session", url=pages.url("/compressible"))["sessionId"]
        assert "Item number 399" in json.dumps(client.tool("snapshot", sessionId=sid))
        client.tool("close_session", sessionId=sid)
    finally:
        client.close()
