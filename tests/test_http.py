"""Streamable HTTP end to end: the official MCP client, several at once, in both protocol eras;
and the attacks: no token, a foreign Origin or Host, another client's sessions, big bodies, floods."""

import functools
import json
import os
import socket
import subprocess
import threading
import time

import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from support import SERVER_CMD, HttpServer, SdkClient, server_args, wait_for

pytestmark = pytest.mark.e2e

ALICE, BOB, MALLORY = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef", "mallory-token-0123456789ab"
TOKENS = f"alice:{ALICE},bob:{BOB},mallory:{MALLORY}"
MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}}


# httpx2.post() builds a client, and its TLS context, for every request: 0.15 s of a core each (the flood's 130
# requests took 21 s in the parallel run). No keep-alive, so each request still has a connection of its own.
@functools.cache
def http():
    """The one client for the module's raw requests."""
    return httpx2.Client(limits=httpx2.Limits(max_keepalive_connections=0))


@pytest.fixture(scope="module")
def server():
    s = HttpServer("--http-rate-limit", "120", env={"MCPBROWSER_HTTP_TOKENS": TOKENS})
    yield s
    s.close()


def post(server, body, token=ALICE, **headers):
    """One raw POST, as an attacker (or a careless client) would send it."""
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if isinstance(body, dict):  # a 2026-07-28 request names its version and method in headers too
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": body["method"], **headers}
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return http().post(server.url, content=data, timeout=30,
                       headers={"Content-Type": "application/json",
                                "Accept": "application/json, text/event-stream", **headers})


def ping(request_id=1):
    return {"jsonrpc": "2.0", "id": request_id, "method": "ping", "params": {"_meta": MODERN}}


def test_clients_at_once_each_with_their_own_sessions(server, pages):
    """Alice on 2026-07-28 and Bob on 2025-11-25, side by side: neither can see or touch the other's."""
    alice = SdkClient(server.url, token=ALICE)
    bob = SdkClient(server.url, token=BOB, mode="legacy")
    alice_again = SdkClient(server.url, token=ALICE, mode="legacy")  # the same client, a second connection
    try:
        assert alice.version == "2026-07-28" and bob.version == "2025-11-25"
        bob.run("set_logging_level", "debug")  # the server's log records: only about Bob's own sessions
        found = {}

        def work(name, client):
            sid = client.tool("create_session")["sessionId"]
            page = client.tool("navigate", sessionId=sid, url=pages.url(f"/title/{name}"))
            found[name] = sid, page["refId"], page["title"]

        threads = [threading.Thread(target=work, args=(n, c)) for n, c in (("alice", alice), ("bob", bob))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert found["alice"][2] == "alice" and found["bob"][2] == "bob"
        alice_sid, alice_ref, _ = found["alice"]
        bob_sid, _, _ = found["bob"]

        assert [s["sessionId"] for s in bob.tool("list_sessions")["sessions"]] == [bob_sid]
        assert [s["sessionId"] for s in alice.tool("list_sessions")["sessions"]] == [alice_sid]
        # Every way Bob could reach Alice's session answers as if it did not exist.
        for tool, args in (("navigate", {"url": pages.url("/title/bob")}), ("snapshot", {}),
                           ("close_session", {}), ("resume_session", {}), ("console_logs", {})):
            assert bob.error(tool, sessionId=alice_sid, **args)["errorCode"] == "SESSION_NOT_FOUND", tool
        for tool in ("get_content", "get_console_content"):
            assert bob.error(tool, ref_id=alice_ref)["errorCode"] == "CONTENT_NOT_FOUND", tool
        # Alice, on another connection and the other era, is still Alice.
        assert alice_again.tool("get_content", ref_id=alice_ref)["mode"] == "full"
        assert alice_again.tool("snapshot", sessionId=alice_sid)["title"] == "alice"
        for sid, client in ((alice_sid, alice), (bob_sid, bob)):
            client.tool("close_session", sessionId=sid)
        heard = [m.model_dump()["data"] for m in bob.log_messages]
        assert bob_sid in json.dumps(heard)
        # Alice's id reaches Bob only in the records of his own refused calls, which he named it in.
        about_alice = [d for d in heard if alice_sid in json.dumps(d)]
        assert {(d["tool"], d["outcome"]) for d in about_alice} == \
            {(t, "SESSION_NOT_FOUND") for t in ("navigate", "snapshot", "close_session", "resume_session",
                                                 "console_logs")}
    finally:
        for c in (alice, bob, alice_again):
            c.close()


def test_a_saved_login_belongs_to_the_client_that_saved_it(server, pages):
    """Bob cannot start a session with, list, or delete Alice's saved login, even knowing its name."""
    alice, bob = SdkClient(server.url, token=ALICE), SdkClient(server.url, token=BOB, mode="legacy")
    try:
        sid = alice.tool("create_session", url=pages.url("/login?user=alice"))["sessionId"]
        alice.tool("save_state", sessionId=sid, name="work")
        assert bob.tool("saved_states")["count"] == 0
        assert bob.error("create_session", storageState="work")["errorCode"] == "INVALID_PARAMETERS"
        assert bob.error("save_state", sessionId=sid, name="work")["errorCode"] == "SESSION_NOT_FOUND"
        assert bob.tool("saved_states", delete="work")["deleted"] is False
        again = alice.tool("create_session", storageState="work", url=pages.url("/whoami"))
        assert again["title"] == "Logged in as alice"
        for s in (sid, again["sessionId"]):
            alice.tool("close_session", sessionId=s)
    finally:
        alice.close()
        bob.close()


def test_without_a_valid_token_401(server):
    for token in (None, "alice", ALICE[:-1], BOB + "x", ALICE.upper()):
        answer = post(server, ping(), token=token)
        assert answer.status_code == 401, (token, answer.text)
        assert answer.headers["www-authenticate"].startswith("Bearer")
    answer = post(server, ping(), token=None, Authorization=f"Basic {ALICE}")
    assert answer.status_code == 401
    assert post(server, ping()).status_code == 200
    with open(server.stderr.name) as f:
        logged = f.read()
    assert "http_client" in logged or "serving" in logged  # the log is there to search
    assert not any(token in logged for token in (ALICE, BOB, MALLORY, ALICE[:-1]))  # no token, right or wrong


def test_a_foreign_origin_is_403(server):
    port = server.url.split(":")[2].split("/")[0]
    for origin in ("http://evil.example", f"http://evil.example:{port}", "null", f"http://127.0.0.1.evil.example:{port}"):
        answer = post(server, ping(), Origin=origin)
        assert answer.status_code == 403, (origin, answer.text)
    assert post(server, ping(), Origin=f"http://127.0.0.1:{port}").status_code == 200
    assert post(server, ping(), Origin=f"http://localhost:{port}").status_code == 200


def test_other_routes_and_methods(server):
    assert http().get(server.base + "/", headers={"Authorization": f"Bearer {ALICE}"}).status_code == 404
    assert http().put(server.url, headers={"Authorization": f"Bearer {ALICE}"}).status_code == 405
    # A GET names a handshake-era client's stream; a stateless client has none.
    assert http().get(server.url, headers={"Authorization": f"Bearer {ALICE}"}).status_code == 405
    assert post(server, b"not json").json()["error"]["code"] == -32700
    answer = http().post(server.url, content=json.dumps(ping()), headers={"Authorization": f"Bearer {ALICE}",
                                                                          "Content-Type": "text/plain"})
    assert answer.status_code == 415
    # Routing headers must agree with the body (2026-07-28).
    answer = post(server, ping(), **{"MCP-Protocol-Version": "2025-11-25"})
    assert answer.status_code == 400 and answer.json()["error"]["code"] == -32020
    # Handshake-era requests need the Mcp-Session-Id initialize gave; a made-up one is 404.
    legacy = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    assert post(server, legacy).status_code == 400
    assert post(server, legacy, **{"Mcp-Session-Id": "made-up"}).status_code == 404


def test_a_body_over_the_limit_is_413_and_nothing_is_lost():
    s = HttpServer("--max-message-bytes", "2048", env={"MCPBROWSER_HTTP_TOKENS": TOKENS})
    try:
        big = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": MODERN, "pad": "x" * 4096}}
        assert post(s, big).status_code == 413
        # Without a Content-Length (chunked), the same limit.
        answer = http().post(s.url, content=iter([json.dumps(big).encode()]),
                             headers={"Authorization": f"Bearer {ALICE}", "Content-Type": "application/json"})
        assert answer.status_code == 413
        assert post(s, ping()).json()["result"]["resultType"] == "complete"
    finally:
        s.close()


@pytest.fixture(scope="module")
def megabyte_server():
    """A server with a 1 MB body limit for both eras of the test below (each its own client, no session)."""
    s = HttpServer("--max-message-bytes", "1000000", env={"MCPBROWSER_HTTP_TOKENS": TOKENS})
    yield s
    s.close()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_official_client_hears_that_its_body_was_too_long(megabyte_server, mode):
    """A huge argument (a long text to type) fails the call at once with the limit: the server answered
    413 and closed while the client still sent, the reset threw the answer away, and the call hung."""
    client = SdkClient(megabyte_server.url, token=ALICE, mode=mode)
    try:
        started = time.monotonic()
        with pytest.raises(MCPError) as refused:  # 3.5 MB: the server reads at most 4 MB (4 x the limit) away
            client.call("type", {"sessionId": "x", "selector": "#q", "text": "y" * 3_500_000}, read_timeout_seconds=20)
        assert refused.value.error.code == -32600, refused.value.error
        assert "--max-message-bytes" in refused.value.error.message
        assert time.monotonic() - started < 10
        assert client.tool("list_sessions")["count"] == 0  # the positive control: the client goes on
    finally:
        client.close()


def test_a_flood_is_429_for_that_client_alone(server):
    answers = [post(server, ping(i), token=MALLORY) for i in range(130)]
    refused = [a for a in answers if a.status_code == 429]
    assert refused and all(a.status_code in (200, 429) for a in answers)
    assert int(refused[0].headers["retry-after"]) >= 1
    assert post(server, ping(), token=BOB).status_code == 200


def test_forged_request_state_is_refused(server):
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"_meta": MODERN, "name": "list_sessions", "arguments": {},
                       "requestState": "eyJvIjoiYWxpY2UifQ.00", "inputResponses": {}}}
    answer = post(server, call, **{"Mcp-Name": "list_sessions"})
    assert answer.json()["error"]["code"] == -32602
    assert "requestState" in answer.json()["error"]["message"]


# Pairwise, not all 8: every transport meets every era, and each of them sees both answers
# (each case starts a server: the whole product cost the suite's time budget).
@pytest.mark.parametrize("transport, mode, action", [
    ("http", "auto", "accept"), ("http", "legacy", "decline"),
    ("stdio", "auto", "decline"), ("stdio", "legacy", "accept"),
])
def test_new_domain_approval_in_both_eras(pages, transport, mode, action):
    """2026-07-28 asks with an InputRequiredResult, the handshake era with elicitation/create."""
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action=action)

    flags = ["--allowed-domains", "example.com", "--ask-new-domains"]
    server = HttpServer(*flags) if transport == "http" else None
    client = SdkClient(server.url if server else flags, mode=mode, elicitation_callback=elicit)
    try:
        assert client.version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        sid = client.tool("create_session")["sessionId"]
        if action == "accept":
            assert client.tool("navigate", sessionId=sid, url=pages.url("/title/yes"))["title"] == "yes"
            assert client.tool("navigate", sessionId=sid, url=pages.url("/title/again"))["title"] == "again"
            assert len(asked) == 1 and "127.0.0.1" in asked[0]  # once per session and host
        else:
            error = client.error("navigate", sessionId=sid, url=pages.url("/title/no"))
            assert error["errorCode"] == "DOMAIN_NOT_ALLOWED" and error["details"]["userAction"] == "decline"
            assert "/title/no" not in pages.hits
    finally:
        client.close()
        if server:
            server.close()


def test_an_open_loopback_server_tells_clients_apart_by_their_mcp_session(pages):
    """No tokens: only 127.0.0.1 may bind, a rebinding Host is refused, and DELETE ends a client's sessions."""
    s = HttpServer()
    first, second = SdkClient(s.url, mode="legacy"), SdkClient(s.url, mode="legacy")
    try:
        sid = first.tool("create_session")["sessionId"]
        assert second.error("snapshot", sessionId=sid)["errorCode"] == "SESSION_NOT_FOUND"
        assert second.tool("list_sessions")["count"] == 0
        answer = http().post(s.url, content=json.dumps(ping()),
                             headers={"Host": "rebound.evil.example", "Content-Type": "application/json"})
        assert answer.status_code == 403
        first.close()  # the SDK sends DELETE: the client's state, and its sessions, end
        assert wait_for(lambda: '"http_client_end"' in open(s.stderr.name).read(), seconds=10)
        third = SdkClient(s.url)
        try:
            assert third.tool("list_sessions")["count"] == 0
        finally:
            third.close()
    finally:
        first.close()
        second.close()
        s.close()


def test_the_wsgi_app_mounted_next_to_other_routes(tmp_path, pages):
    """An embedder's own WSGI application, with the MCP app at /mcp beside its /hello view."""
    from waitress import create_server

    from mcpbrowser.config import Config
    from mcpbrowser.wsgi import create_app

    mcp_app = create_app(Config(headless=True, db=str(tmp_path / "h.db")), path="/")

    def site(environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path.startswith("/mcp"):
            environ["SCRIPT_NAME"], environ["PATH_INFO"] = "/mcp", path[len("/mcp"):] or "/"
            return mcp_app(environ, start_response)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"hello from the host application"]

    httpd = create_server(site, host="127.0.0.1", port=0, threads=8)
    threading.Thread(target=httpd.run, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.effective_port}"
    try:
        assert http().get(base + "/hello").text == "hello from the host application"
        client = SdkClient(base + "/mcp")
        try:
            sid = client.tool("create_session")["sessionId"]
            assert client.tool("navigate", sessionId=sid, url=pages.url("/title/mounted"))["title"] == "mounted"
        finally:
            client.close()
    finally:
        httpd.close()
        mcp_app.close()
        time.sleep(0.1)


@pytest.mark.parametrize("mode, action", [("auto", "accept"), ("auto", "decline"), ("legacy", "accept")])
def test_wait_for_user_hands_over_in_both_eras(pages, mode, action):
    """On 2026-07-28 the person is asked (an InputRequiredResult) and the retried call checks the
    sign; the handshake era sends a notice and waits, as before."""
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action=action)

    client = SdkClient([], mode=mode, elicitation_callback=elicit)
    try:
        sid = client.tool("create_session", url=pages.url("/title/signed-in"))["sessionId"]
        args = {"sessionId": sid, "message": "Solve the captcha, login required", "urlContains": "signed-in",
                "timeout": 5000}
        if action == "decline":
            error = client.error("wait_for_user", **args)
            assert error["errorCode"] == "WAIT_TIMEOUT" and error["details"]["userAction"] == "decline"
            # and no cooldown (the person is there and said no): the next action runs
            assert client.tool("navigate", sessionId=sid, url=pages.url("/title/next"))["title"] == "next"
        else:
            assert client.tool("wait_for_user", **args)["success"] is True
        if mode == "auto":
            assert len(asked) == 1 and "Solve the captcha" in asked[0]
        else:
            assert asked == []
    finally:
        client.close()


def test_progress_flows_as_an_event_stream_over_http(server, pages):
    """A call that reports progress answers as an event stream: the notices come before the answer."""
    client = SdkClient(server.url, token=BOB, mode="legacy")
    heard = []

    async def progress(done, total, message):
        heard.append(message)

    try:
        sid = client.tool("create_session")["sessionId"]
        result = client.call("navigate", {"sessionId": sid, "url": pages.url("/slow?ms=300")},
                             progress_callback=progress)
        assert not result.is_error
        assert len(heard) >= 3, heard  # navigating, DOM content loaded, page loaded, done
        client.tool("close_session", sessionId=sid)
    finally:
        client.close()


LEGACY = "2025-11-25"


def legacy_post(server, body, token, session_id=None):
    """One raw handshake-era POST: `body` a JSON-RPC message, with the client's Mcp-Session-Id."""
    headers = {"Mcp-Session-Id": session_id} if session_id else {}
    return post(server, json.dumps(body).encode(), token=token, **headers)


def legacy_initialize(server, token):
    answer = legacy_post(server, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {"elicitation": {}}, "clientInfo": {"name": "raw", "version": "1"}}},
        token)
    assert answer.status_code == 200, answer.text
    return answer.headers["mcp-session-id"]


def test_an_mcp_session_id_belongs_to_the_token_that_opened_it(server, pages):
    """Bob holding Alice's Mcp-Session-Id gets what a made-up id gets (404), on POST, GET and DELETE,
    for every kind of message; Alice's state, task and event stream are untouched."""
    alice_sid = legacy_initialize(server, ALICE)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "create_session", "arguments": {}, "task": {"ttl": 60_000}}}
    task = legacy_post(server, call, ALICE, alice_sid).json()["result"]["task"]
    unknown = legacy_post(server, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, BOB, "made-up")
    assert unknown.status_code == 404
    for body in ({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_sessions"}},
                 {"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"taskId": task["taskId"]}},
                 {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
                 {"jsonrpc": "2.0", "id": "mcpbrowser-1", "result": {"action": "accept"}}):  # an answer to her
        answer = legacy_post(server, body, BOB, alice_sid)
        assert (answer.status_code, answer.json()) == (unknown.status_code, unknown.json()), body
    auth = {"Authorization": f"Bearer {BOB}"}
    made_up = http().get(server.url, headers={**auth, "Mcp-Session-Id": "made-up"}, timeout=30)
    foreign = http().get(server.url, headers={**auth, "Mcp-Session-Id": alice_sid}, timeout=30)
    assert made_up.status_code == foreign.status_code == 404 and made_up.json() == foreign.json()
    made_up = http().delete(server.url, headers={**auth, "Mcp-Session-Id": "made-up"}, timeout=30)
    foreign = http().delete(server.url, headers={**auth, "Mcp-Session-Id": alice_sid}, timeout=30)
    assert made_up.status_code == foreign.status_code == 404 and made_up.json() == foreign.json()
    # Alice's connection is whole: her task finished into a session of hers, and her stream opens.
    get = {"jsonrpc": "2.0", "id": 4, "method": "tasks/result", "params": {"taskId": task["taskId"]}}
    result = legacy_post(server, get, ALICE, alice_sid).json()["result"]
    sid = json.loads(result["content"][0]["text"])["sessionId"]
    with http().stream("GET", server.url, timeout=30,
                       headers={"Authorization": f"Bearer {ALICE}", "Mcp-Session-Id": alice_sid}) as stream:
        assert stream.status_code == 200
    close = {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
             "params": {"name": "close_session", "arguments": {"sessionId": sid}}}
    closed = legacy_post(server, close, ALICE, alice_sid)  # an event stream when her tools/list changed with it
    answer = (closed.json() if closed.headers["content-type"].startswith("application/json") else
              json.loads([line for line in closed.text.splitlines() if line.startswith("data: ")][-1][6:]))
    assert answer["id"] == 5 and answer["result"]["isError"] is False
    gone = http().delete(server.url, headers={"Authorization": f"Bearer {ALICE}", "Mcp-Session-Id": alice_sid})
    assert gone.status_code == 204


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("tokens", ["", "\n  \n\t\n", "# alice\n# bob 0123456789abcdef0123\n\n",
                                    "  #0123456789abcdef0123456789\n", None, "directory", "env"])
def test_no_tokens_however_spelled_refuse_a_reachable_bind(tmp_path, tokens):
    """An empty, blank, commented-out or unreadable token file, or an empty variable, is no token:
    --http on every interface refuses to start (status 2) and nothing listens on the port."""
    path = tmp_path / "tokens"
    env = {k: v for k, v in os.environ.items() if k != "MCPBROWSER_HTTP_TOKENS"}
    args = ["--http-token-file", str(path)]
    if tokens == "directory":
        path.mkdir()
    elif tokens == "env":
        args, env["MCPBROWSER_HTTP_TOKENS"] = [], " , "
    elif tokens is not None:  # None: the file does not exist
        path.write_text(tokens)
    port = free_port()
    proc = subprocess.Popen([*SERVER_CMD, *server_args(args), "--http", f"0.0.0.0:{port}"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the server started on every interface without a token")
    assert proc.returncode == 2, err[-2000:]
    assert out == b"" and b"--http" in err
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def test_one_real_token_opens_a_reachable_bind(tmp_path):
    """The same bind, with a token among comments, starts and refuses a caller without the token."""
    path = tmp_path / "tokens"
    path.write_text(f"# clients\n\n  alice {ALICE}\n")
    env = {k: v for k, v in os.environ.items() if k != "MCPBROWSER_HTTP_TOKENS"}
    proc = subprocess.Popen([*SERVER_CMD, *server_args(["--http-token-file", str(path)]), "--http", "0.0.0.0:0"],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        line = proc.stderr.readline()
        while line and b'"http_serving"' not in line:
            line = proc.stderr.readline()
        url = json.loads(line)["url"].replace("0.0.0.0", "127.0.0.1")
        assert http().post(url, json=ping(), timeout=30).status_code == 401
        answer = http().post(url, json=ping(), timeout=30, headers={
            "Authorization": f"Bearer {ALICE}", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "ping"})
        assert answer.status_code == 200
    finally:
        proc.terminate()
        proc.wait(10)
