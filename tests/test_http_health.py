"""GET /healthz of the HTTP transport: what a container's HEALTHCHECK asks, with no token."""

import http.client
import threading

import pytest
from waitress import create_server

from mcpbrowser.transports.http import McpWsgiApp

pytestmark = pytest.mark.unit

TOKEN = "t" * 24


@pytest.fixture
def served():
    """The WSGI app with a token, on waitress on 127.0.0.1 (no browser: /healthz never reaches the core)."""
    app = McpWsgiApp(None, credentials={TOKEN: "alice"})
    server = create_server(app, host="127.0.0.1", port=0, threads=2)

    def run():
        try:
            server.run()
        except (OSError, ValueError):  # its socket closed under its select() at teardown
            pass

    threading.Thread(target=run, daemon=True).start()
    yield server.effective_port
    server.close()


def ask(port, method, path, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def test_healthz_answers_without_a_token_and_says_nothing_else(served):
    status, headers, body = ask(served, "GET", "/healthz")
    assert (status, body) == (200, b"ok\n")
    assert headers["Content-Type"] == "text/plain"
    # Nothing about the server beyond that it answers: no session id, no version, no auth challenge.
    assert not {"Mcp-Session-Id", "WWW-Authenticate"} & set(headers)
    status, _, body = ask(served, "HEAD", "/healthz")
    assert (status, body) == (200, b"")
    # Asked under a foreign Host (as after DNS rebinding), it still says only "ok".
    assert ask(served, "GET", "/healthz", {"Host": "attacker.example"})[2] == b"ok\n"


def test_healthz_opens_nothing_else_to_a_caller_without_a_token(served):
    assert ask(served, "GET", "/mcp")[0] == 401
    assert ask(served, "POST", "/healthz")[0] == 404  # only GET and HEAD, and no MCP there
    assert ask(served, "GET", "/healthz/mcp")[0] == 404
    assert ask(served, "GET", "/healthz?x=1")[2] == b"ok\n"  # a query changes nothing
