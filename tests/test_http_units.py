"""The HTTP transport's pure parts: sealed request states, routing-header checks, the --http settings."""

import json
import time

import pytest
from support import wait_for

from mcpbrowser.config import Config, ConfigError
from mcpbrowser.transports import protocol, tool_methods
from mcpbrowser.transports.compression import accepts_gzip
from mcpbrowser.transports.http import McpWsgiApp, _header_mismatch
from mcpbrowser.transports.tool_methods import RequestStates

pytestmark = pytest.mark.unit


def test_a_request_state_opens_only_for_its_client_and_tool_and_unaltered():
    states = RequestStates(b"k" * 32)
    state = states.seal("alice", "navigate", {"domain:a.test"}, {"domain:b.test": "accept"})
    assert states.open(state, "alice", "navigate") == ({"domain:a.test"}, {"domain:b.test": "accept"})
    assert states.open(state, "bob", "navigate") is None
    assert states.open(state, "alice", "click") is None
    assert RequestStates(b"j" * 32).open(state, "alice", "navigate") is None  # another process's key
    body, mac = state.split(".")
    forged = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1]
    assert states.open(f"{forged}.{mac}", "alice", "navigate") is None
    for junk in (None, 5, "", "a.b.c", "nodot", f"{body}.{'0' * 64}"):
        assert states.open(junk, "alice", "navigate") is None


def test_a_request_state_expires(monkeypatch):
    states = RequestStates(b"k" * 32)
    state = states.seal(None, "navigate", {"domain:a.test"}, {})
    later = time.time() + tool_methods.STATE_TTL_S + 1
    monkeypatch.setattr(tool_methods.time, "time", lambda: later)
    assert states.open(state, None, "navigate") is None


@pytest.mark.parametrize("header, gzip", [
    (None, False), ("", False), ("identity", False), ("br, zstd", False), ("gzip", True), ("x-gzip", True),
    ("gzip, deflate, br, zstd", True), ("GZip;Q=0.3", True), ("gzip;q=0", False), ("gzip;q=0.000", False),
    ("gzip;q=nope", False), ("*", True), ("*;q=0", False), ("gzip;q=0, *", False), ("br, *;q=0.1", True),
    ("gzip;q=0.5, identity", False), ("gzip, identity;q=0.5", True), ("identity;q=0, gzip;q=0.1", True),
    ("*;q=0.5, identity", False), (" gzip ; q=1 ", True),
])
def test_accept_encoding_is_read_as_rfc_9110_says(header, gzip):
    assert accepts_gzip(header) is gzip


def test_routing_headers_must_match_the_body():
    msg = protocol.parse(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"navigate",'
                         b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}')
    good = {"HTTP_MCP_PROTOCOL_VERSION": "2026-07-28", "HTTP_MCP_METHOD": "tools/call", "HTTP_MCP_NAME": "navigate"}
    assert _header_mismatch(good, msg) is None
    assert _header_mismatch({**good, "HTTP_MCP_NAME": "=?base64?bmF2aWdhdGU=?="}, msg) is None
    for bad in ({"HTTP_MCP_PROTOCOL_VERSION": "2025-11-25"}, {"HTTP_MCP_METHOD": "tools/list"},
                {"HTTP_MCP_NAME": "click"}, {"HTTP_MCP_NAME": "=?base64?!!?="}):
        assert _header_mismatch({**good, **bad}, msg) is not None, bad


def test_http_settings(tmp_path):
    assert Config(http=":8931").http == "127.0.0.1:8931"
    with pytest.raises(ConfigError, match="HOST:PORT"):
        Config(http="8931x")
    with pytest.raises(ConfigError, match="token"):
        Config(http="0.0.0.0:8931")  # reachable from other machines, and open to all
    assert Config(http="0.0.0.0:8931", http_tokens="a:" + "t" * 20).http == "0.0.0.0:8931"
    tokens = tmp_path / "tokens"
    tokens.write_text("# clients\nalice " + "a" * 20 + "\n" + "b" * 20 + "\n")
    assert Config(http_token_file=str(tokens)).http_credentials() == {"a" * 20: "alice", "b" * 20: "client2"}
    tokens.write_text("alice short\n")
    with pytest.raises(ConfigError, match="16 characters"):
        Config(http_token_file=str(tokens)).http_credentials()
    with pytest.raises(ConfigError, match="name:token"):
        Config(http_tokens="justatoken")
    with pytest.raises(ConfigError, match="16 characters"):
        Config(http_tokens="alice:short")
    assert Config(http_tokens="a:" + "t" * 20).public()["http_tokens"] == ["a:***"]


def test_the_registry_entry_names_this_package_and_version():
    """server.json (the MCP registry's entry) follows mcpbrowser.__version__, the one version number."""
    import json
    import pathlib

    import mcpbrowser

    root = pathlib.Path(__file__).resolve().parents[1]
    entry = json.loads((root / "server.json").read_text())
    assert entry["version"] == mcpbrowser.__version__
    assert [p["version"] for p in entry["packages"]] == [mcpbrowser.__version__]
    assert entry["packages"][0]["identifier"] == "mcpbrowser"
    assert "name = mcpbrowser" in (root / "setup.cfg").read_text()
    assert len(entry["description"]) <= 100 and entry["name"].count("/") == 1
    assert f"mcp-name: {entry['name']}" in (root / "README.md").read_text()  # the registry's PyPI ownership check


def test_allowed_origins_are_exact_and_loopback_always():
    app = McpWsgiApp(None, allowed_origins=["https://app.example.com"])
    for origin in ("https://app.example.com", "https://app.example.com/", "http://localhost:9", "http://[::1]:80"):
        assert app._origin_allowed(origin), origin
    for origin in ("http://app.example.com", "https://app.example.com:444", "https://app.example.com.evil.test",
                   "null", "file://", "http://127.0.0.1.evil.test", "http://[::1"):
        assert not app._origin_allowed(origin), origin


def test_a_token_file_without_tokens_is_no_token(tmp_path):
    """Empty, blank, commented-out or unreadable: a reachable bind is refused as with no file at all."""
    tokens = tmp_path / "tokens"
    for text in ("", " \n\t\n", "# alice " + "a" * 20 + "\n", "   # indented " + "a" * 20 + "\n"):
        tokens.write_text(text)
        assert Config(http_token_file=str(tokens)).http_credentials() == {}
        with pytest.raises(ConfigError, match="--http 0.0.0.0:8931 is reachable"):
            Config(http="0.0.0.0:8931", http_token_file=str(tokens))
        assert Config(http="127.0.0.1:8931", http_token_file=str(tokens)).http == "127.0.0.1:8931"
    with pytest.raises(ConfigError, match="cannot read it") as raised:
        Config(http="0.0.0.0:8931", http_token_file=str(tmp_path / "missing"))
    assert "is reachable" in str(raised.value)  # the refusal, and why no token was read
    tokens.write_bytes(b"\xff\xfe not text")
    with pytest.raises(ConfigError, match="is reachable"):
        Config(http="0.0.0.0:8931", http_token_file=str(tokens))
    with pytest.raises(ConfigError, match="is reachable"):
        Config(http="0.0.0.0:8931", http_tokens=" , ")
    tokens.write_text("alice short\n")  # a malformed file says what is wrong with it
    with pytest.raises(ConfigError, match="line 1"):
        Config(http="0.0.0.0:8931", http_token_file=str(tokens))


def test_unauthenticated_connections_leave_room_for_clients():
    assert Config(http_max_connections=64, http_max_unauthenticated=16).http_max_unauthenticated == 16
    with pytest.raises(ConfigError, match="--http-max-unauthenticated"):
        Config(http_max_connections=64, http_max_unauthenticated=64)


def test_serve_refuses_a_reachable_bind_for_an_app_without_tokens():
    """Config refuses it first; serve() refuses again, before binding, whatever built the app."""
    import threading

    from mcpbrowser.transports.http import serve
    from mcpbrowser.transports.http_server import Limits

    limits = Limits(5, 30, 5, 512, 128)
    with pytest.raises(PermissionError):
        serve(McpWsgiApp(None), "0.0.0.0:0", threading.Event(), 4, limits)
    tokened = McpWsgiApp(None, credentials={"t" * 20: "alice"})
    assert tokened.vouches({"AUTHORIZATION": "Bearer " + "t" * 20})
    assert not tokened.vouches({"AUTHORIZATION": "Bearer " + "u" * 20}) and not tokened.vouches({})
    assert McpWsgiApp(None).vouches({})  # an open server: any whole head


def test_connections_without_a_token_crowd_out_only_each_other():
    """The guarded waitress alone (no browser): past the cap, the oldest connections without a token
    are closed as new ones arrive; an idle connection that showed a token is kept, however old."""
    import socket
    import threading

    from mcpbrowser.transports.http_server import Limits, create_server

    def app(environ, start_response):  # the worker holds the request a moment after the answer went out
        start_response("200 OK", [("Content-Length", "2")])
        yield b"ok"
        time.sleep(0.3)

    runner, listeners = create_server(app, "127.0.0.1", 0, 2, Limits(60, 60, 60, 64, 4),
                                      lambda headers: headers.get("AUTHORIZATION") == "Bearer good")
    threading.Thread(target=runner.run, daemon=True).start()
    port = listeners[0].effective_port

    def closed(sock):
        sock.settimeout(0.05)
        try:
            return sock.recv(100) == b""
        except TimeoutError:
            return False
        except OSError:
            return True

    try:
        client = socket.create_connection(("127.0.0.1", port))
        client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\n\r\n")
        assert client.recv(100).startswith(b"HTTP/1.1 200")
        refused = socket.create_connection(("127.0.0.1", port))
        refused.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer bad\r\n\r\n")
        assert refused.recv(100).startswith(b"HTTP/1.1 200")  # answered, but no client shown
        # The answer reaches the client before the worker thread lets go of the request, and a connection
        # being answered is never closed: under load that came after the stalled ones (ci-12, 2026-11-27).
        assert wait_for(lambda: not any(c.requests for c in listeners[0]._unvouched), seconds=10)
        stalled = [socket.create_connection(("127.0.0.1", port)) for _ in range(10)]

        def settled():  # the server's socket thread closes them in its own time: a busy machine waits
            return closed(refused) and [closed(s) for s in stalled] == [True] * 6 + [False] * 4  # 4 kept: the newest

        deadline = time.monotonic() + 10
        while not settled() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not closed(client)
        assert closed(refused)
        assert [closed(s) for s in stalled] == [True] * 6 + [False] * 4
        for sock in [client, refused, *stalled]:
            sock.close()
    finally:
        runner.close()


def test_a_handshake_era_client_unheard_of_for_its_idle_time_is_forgotten(monkeypatch):
    """http.md: an Mcp-Session-Id acts as its client until it ends or idles out (CLIENT_IDLE_S): past that, its id
    answers 404 like one never given, and its record is freed. The control: a client heard of lately is kept."""
    import io

    from fakes import fake_core

    from mcpbrowser.transports import http as http_module

    core = fake_core()
    app = McpWsgiApp(core.start())

    def post(body, session_id=None):
        data = json.dumps(body).encode()
        environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/mcp", "HTTP_HOST": "127.0.0.1", "SERVER_NAME": "127.0.0.1",
                   "SERVER_PORT": "80", "REMOTE_ADDR": "127.0.0.1", "CONTENT_TYPE": "application/json",
                   "HTTP_ACCEPT": "application/json, text/event-stream", "CONTENT_LENGTH": str(len(data)),
                   "wsgi.input": io.BytesIO(data), "wsgi.url_scheme": "http"}
        if session_id:
            environ["HTTP_MCP_SESSION_ID"] = session_id
        said = {}
        body_out = b"".join(app(environ, lambda status, headers, *_: said.update(status=status, headers=headers)))
        return said["status"], dict(said["headers"]), body_out

    def initialize():
        status, headers, _ = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        assert status.startswith("200"), status
        return headers[http_module.SESSION_HEADER]

    try:
        old = initialize()
        assert post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, old)[0].startswith("200")
        initialize()  # a new client's arrival forgets the idle ones: none yet
        assert post({"jsonrpc": "2.0", "id": 2, "method": "ping"}, old)[0].startswith("200")
        monkeypatch.setattr(http_module, "CLIENT_IDLE_S", 0.0)
        time.sleep(0.01)
        initialize()
        assert post({"jsonrpc": "2.0", "id": 3, "method": "ping"}, old)[0].startswith("404")
    finally:
        core.close()


def test_a_body_of_exactly_the_limit_is_read_and_one_byte_more_is_413():
    """http.md: a message may be at most --max-message-bytes bytes: that many are read, one more is 413, with a
    Content-Length or without one (a chunked body)."""
    import io

    app = McpWsgiApp(None, max_body_bytes=100)
    for size, expected in ((100, b"x" * 100), (101, 413)):
        body = b"x" * size
        assert app._read_body({"CONTENT_LENGTH": str(size), "wsgi.input": io.BytesIO(body)}) == expected
        assert app._read_body({"wsgi.input": io.BytesIO(body)}) == expected
