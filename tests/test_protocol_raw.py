"""Raw pipes: version negotiation, malformed messages, cancellation, ordering, and clean shutdown."""

import json
import os
import signal
import time

import pytest
from support import RawServer, tool_payload

from mcpbrowser.process_tree import alive, comm, descendants

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def raw():
    server = RawServer()
    server.initialize()
    yield server
    server.close()


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_supported_version_is_echoed(version):
    server = RawServer()
    try:
        answer = server.initialize(version)
        result = answer["result"]
        assert answer["id"] == 0 and result["protocolVersion"] == version
        assert result["serverInfo"]["name"] == "mcpbrowser" and result["serverInfo"]["version"]
        assert set(result["capabilities"]) == {"tools", "logging", "resources"} | \
            ({"tasks"} if version >= "2025-11-25" else set())
        assert result["capabilities"]["resources"] == {"subscribe": True}  # the sessions' logs (issue 36)
        assert "create_session" in result["instructions"]
        listed = server.request(1, "tools/list")["result"]["tools"]
        structured = version >= "2025-06-18"
        assert all(("outputSchema" in tool) == structured for tool in listed)
        answer = server.call(2, "list_sessions")["result"]
        assert ("structuredContent" in answer) == structured
        listed = json.loads(answer["content"][0]["text"])
        assert (listed["sessions"], listed["count"], len(listed["refId"])) == ([], 0, 32)
        assert "meta" not in listed  # the model reads meta only when the call logged to the console
        if structured:
            assert answer["structuredContent"]["meta"]["tool"] == "list_sessions"
    finally:
        server.close()


def test_unsupported_version_gets_the_latest(raw):
    answer = raw.request(1, "initialize", {"protocolVersion": "1999-01-01", "capabilities": {},
                                           "clientInfo": {"name": "old", "version": "0"}})
    assert answer["result"]["protocolVersion"] == "2025-11-25"


def _readable_id(line):
    """JSON-RPC echoes the id when it can be read, and answers null when it cannot."""
    try:
        body = json.loads(line)
    except ValueError:
        return None
    ident = body.get("id") if isinstance(body, dict) else None
    return ident if isinstance(ident, (str, int)) and not isinstance(ident, bool) else None


@pytest.mark.parametrize("line, code", [
    (b"not json", -32700),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', -32700),
    (b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}', -32700),
    (b"[]", -32600),
    (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600),
    (b"42", -32600),
    (b'"text"', -32600),
    (b"null", -32600),
    (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', -32600),
    (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600),
    (b'{"jsonrpc":"2.0","id":{},"method":"ping"}', -32600),
    (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', -32600),
    (b'{"id":1,"method":"ping"}', -32600),
    (b'{"jsonrpc":"2.0","id":1}', -32600),
    (b'{"jsonrpc":"2.0","id":1,"method":7}', -32600),
    (b'{"jsonrpc":"2.0","id":1,"method":"no/such"}', -32601),
    # server/discover names the version it proposes in _meta; a handshake-era one is -32022.
    (b'{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}', -32602),
    (b'{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{'
     b'"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}',
     -32022),
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{'
     b'"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}', -32602),
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}', -32602),
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}', -32602),
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}', -32602),
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"click","arguments":[]}}', -32602),
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}', -32602),
    (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":3}}', -32602),
    (b'{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"loud"}}', -32602),
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":5}}', -32602),
])
def test_malformed_messages_get_the_right_error(raw, line, code):
    raw.send(line)
    answer = raw.recv()
    assert answer["jsonrpc"] == "2.0" and answer["error"]["code"] == code
    assert isinstance(answer["error"]["message"], str) and answer["error"]["message"]
    assert answer["id"] == _readable_id(line)
    assert raw.request(99, "ping") == {"jsonrpc": "2.0", "id": 99, "result": {}}


def test_notifications_and_stray_responses_get_no_answer(raw):
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    raw.send({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}})
    raw.send({"jsonrpc": "2.0", "id": 5, "result": {}})
    raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 12345}})
    assert raw.request("after", "ping")["id"] == "after"


@pytest.mark.parametrize("message", [
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 5},
    {"jsonrpc": "2.0", "method": "notifications/progress", "params": [1]},
    {"jsonrpc": "2.0", "method": "no/such/method"},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": []}},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"a": 1}}},
    {"jsonrpc": "1.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "method": 7, "params": "bar"},
])
def test_malformed_notifications_are_logged_not_answered(raw, message):
    raw.send(message)
    assert raw.request("after-bad-notification", "ping") == {"jsonrpc": "2.0", "id": "after-bad-notification",
                                                              "result": {}}
    assert raw.proc.poll() is None


def test_string_and_integer_ids_are_matched(raw):
    assert raw.request("abc", "ping")["id"] == "abc"
    assert raw.request(2**40, "ping")["id"] == 2**40


def test_stdout_carries_only_json_rpc(raw):
    """Through calls that log (a session opened and closed, a page that writes to its console, a navigation that
    fails) stdout carries JSON-RPC lines only, and the log lines went to stderr, as JSON."""
    sid = tool_payload(raw.call("s1", "create_session"))["sessionId"]
    page = "data:text/html,<script>console.log('to the console');console.error('an error')</script>"
    raw.call("s2", "navigate", sessionId=sid, url=page)
    raw.call("s3", "navigate", sessionId=sid, url="http://127.0.0.1:9/")  # refused: nothing listens on port 9
    raw.call("s4", "close_session", sessionId=sid)
    raw.request("s5", "ping")
    events = [(entry.get("event"), entry.get("session")) for entry in raw.server_log()]
    assert ("session_created", sid) in events and ("session_closed", sid) in events  # the control: it logged
    assert len(raw.raw_stdout) >= 5
    for line in raw.raw_stdout:
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_responses_leave_out_of_order_and_match_their_ids(raw, pages):
    slow = tool_payload(raw.call(10, "create_session"))["sessionId"]
    fast = tool_payload(raw.call(11, "create_session"))["sessionId"]
    raw.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
              "params": {"name": "navigate", "arguments": {"sessionId": slow, "url": pages.url("/slow?ms=1500")}}})
    raw.send({"jsonrpc": "2.0", "id": "fast", "method": "tools/call",
              "params": {"name": "navigate", "arguments": {"sessionId": fast, "url": pages.url("/title/quick")}}})
    first, second = raw.recv(), raw.recv()
    assert (first["id"], second["id"]) == ("fast", "slow")
    assert tool_payload(first)["title"] == "quick" and tool_payload(second)["title"] == "Slow"


def test_cancelled_queued_call_never_runs(raw, pages):
    sid = tool_payload(raw.call(20, "create_session"))["sessionId"]
    raw.send({"jsonrpc": "2.0", "id": 21, "method": "tools/call",
              "params": {"name": "navigate", "arguments": {"sessionId": sid, "url": pages.url("/slow?ms=1000")}}})
    raw.send({"jsonrpc": "2.0", "id": 22, "method": "tools/call",
              "params": {"name": "navigate", "arguments": {"sessionId": sid, "url": pages.url("/hit?k=cancelled")}}})
    raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 22, "reason": "test"}})
    assert raw.recv()["id"] == 21
    after = raw.call(23, "navigate", sessionId=sid, url=pages.url("/hit?k=after"))
    assert after["id"] == 23, "the cancelled call must get no answer"
    assert "/hit?k=after" in pages.hits and "/hit?k=cancelled" not in pages.hits


def test_cancelled_running_call_gets_no_answer(raw, pages):
    sid = tool_payload(raw.call(30, "create_session"))["sessionId"]
    raw.send({"jsonrpc": "2.0", "id": 31, "method": "tools/call",
              "params": {"name": "navigate", "arguments": {"sessionId": sid, "url": pages.url("/slow?ms=1200")}}})
    deadline = time.monotonic() + 10
    while "/slow?ms=1200" not in pages.hits and time.monotonic() < deadline:
        time.sleep(0.02)
    raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 31}})
    time.sleep(1.5)  # the navigation finishes meanwhile; its answer must be dropped
    answer = raw.call(32, "navigate", sessionId=sid, url=pages.url("/title/next"))
    assert answer["id"] == 32 and tool_payload(answer)["title"] == "next"


def test_duplicate_inflight_id_is_refused(raw, pages):
    sid = tool_payload(raw.call(40, "create_session"))["sessionId"]
    call = {"jsonrpc": "2.0", "id": 41, "method": "tools/call",
            "params": {"name": "navigate", "arguments": {"sessionId": sid, "url": pages.url("/slow?ms=800")}}}
    raw.send(call)
    raw.send(call)
    first, second = raw.recv(), raw.recv()
    assert first["id"] == 41 and first["error"]["code"] == -32600
    assert second["id"] == 41 and tool_payload(second)["title"] == "Slow"


@pytest.mark.alone
@pytest.mark.parametrize("how", ["eof", "SIGTERM", "SIGINT"])
def test_shutdown_within_two_seconds_leaves_no_processes(how):
    server = RawServer()
    server.initialize()
    for i in range(2):
        assert not server.call(i + 1, "create_session")["result"]["isError"]
    children = descendants(server.proc.pid)
    names = {comm(pid) for pid in children}
    assert any(n.startswith("node") for n in names) and any(n.startswith("chromium") for n in names), names
    started = time.monotonic()
    if how == "eof":
        server.proc.stdin.close()
    else:
        server.proc.send_signal(getattr(signal, how))
    server.proc.wait(10)
    assert time.monotonic() - started < 2.0
    assert server.proc.returncode == 0
    deadline = time.monotonic() + 2
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in children if alive(pid)] == []
    server.close()
    assert os.path.exists(f"/proc/{server.proc.pid}") is False or not alive(server.proc.pid)
