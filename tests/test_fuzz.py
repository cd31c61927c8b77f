"""Protocol fuzzing against the real stdio loop: every request gets exactly one well-formed answer.

The oracle: after each fuzzed line we send a ping and read until its answer.
In between, a line that is a request with a valid id must get exactly one
answer with that id; a notification or a response gets none; anything else gets
exactly one error with a null or readable id. Every line on stdout must be
well-formed JSON-RPC, and the server must stay up.
"""

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from mcp.shared.exceptions import MCPError
from strategies import notifications, raw_lines
from support import RawServer

pytestmark = pytest.mark.e2e

LIMIT = 100_000  # bytes; some generated lines are longer, to exercise the size limit


@pytest.fixture(scope="module")
def server():
    s = RawServer("--max-message-bytes", str(LIMIT))
    s.initialize()
    yield s
    s.close()


def well_formed(message):
    if message.get("jsonrpc") != "2.0":
        return False
    if "method" in message:  # a notification from the server (a log message)
        return "id" not in message and isinstance(message["method"], str)
    if "id" not in message or ("result" in message) == ("error" in message):
        return False
    if "error" in message:
        error = message["error"]
        return isinstance(error.get("code"), int) and isinstance(error.get("message"), str)
    return True


def classify(line):
    """('request', id) | ('silent', None) | ('error', None)"""
    try:
        body = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "error", None
    if len(line) > LIMIT or not isinstance(body, dict):
        return "error", None
    ident = body.get("id")
    valid_id = isinstance(ident, (str, int)) and not isinstance(ident, bool)
    if "method" in body and valid_id:
        return "request", ident
    if "method" not in body and ("result" in body or "error" in body):
        return "silent", None  # response-shaped: never answered, even when malformed
    if "method" in body and "id" not in body:
        return "silent", None  # a notification, well-formed or not, is never answered
    return "error", None


counter = itertools.count()


def exchange(server, line):
    """Send the line, then a ping; return the responses that came before the ping's answer."""
    ping = f"fuzz-ping-{next(counter)}"
    server.send(line)
    server.send({"jsonrpc": "2.0", "id": ping, "method": "ping"})
    answers = []
    while True:
        message = server.recv(timeout=30)
        assert well_formed(message), message
        if message.get("id") == ping:
            assert message["result"] == {}
            return [m for m in answers if "method" not in m]
        answers.append(message)


def check_line(server, line):
    """The oracle for one line (shared with scripts/fuzz.py)."""
    kind, ident = classify(line)
    answers = exchange(server, line)
    if kind == "request":
        assert [a["id"] for a in answers] == [ident], (line[:200], answers)
    elif kind == "silent":
        assert answers == [], (line[:200], answers)
    else:
        assert len(answers) == 1 and "error" in answers[0], (line[:200], answers)
    assert server.proc.poll() is None
    return kind


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(line=raw_lines)
def test_every_line_gets_the_right_answers(server, line):
    check_line(server, line)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(message=notifications)
def test_notifications_are_never_answered(server, message):
    assert exchange(server, json.dumps(message).encode()) == []
    assert server.proc.poll() is None


def test_oversized_line_is_refused_and_the_next_one_served(server):
    answers = exchange(server, b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":"' + b"y" * (LIMIT * 3) + b'"}}')
    assert len(answers) == 1 and answers[0]["id"] == 7 and answers[0]["error"]["code"] == -32600
    assert "longer than" in answers[0]["error"]["message"]


def test_an_oversized_request_is_answered_with_its_own_id_wherever_the_id_is(server):
    """The client waits for its id: an answer with a null id left the official client waiting for ever."""
    huge = b'"params":{"id":5,"x":"' + b"y" * (LIMIT * 2) + b'"}'
    # The TypeScript SDK writes the id last, after the params (the tail of the line tells it).
    ts_order = b'{"method":"tools/call",' + huge + b',"jsonrpc":"2.0","id":"ts-1"}'
    assert [a["id"] for a in exchange(server, ts_order)] == ["ts-1"]
    # No id of the message's own: a nested one (params.id) is not taken for it.
    notification = b'{"jsonrpc":"2.0","method":"notifications/message",' + huge + b"}"
    answers = exchange(server, notification)
    assert len(answers) == 1 and answers[0]["id"] is None and answers[0]["error"]["code"] == -32600
    # A response (the client's answer to a question of ours) is never answered with its id:
    # that id is the server's own request's, and the client would take the error for another of its calls.
    response = b'{"jsonrpc":"2.0","id":9,"result":{"x":"' + b"y" * (LIMIT * 2) + b'"}}'
    answers = exchange(server, response)
    assert len(answers) == 1 and answers[0]["id"] is None


def test_the_official_client_hears_that_its_call_was_too_long(make_client):
    """A huge argument (a long text to type) fails the call at once with the limit, instead of a hang."""
    client = make_client("--max-message-bytes", "20000")
    with pytest.raises(MCPError) as refused:
        client.call("type", {"sessionId": "x", "selector": "#q", "text": "y" * 30000}, read_timeout_seconds=20)
    assert refused.value.error.code == -32600, refused.value.error
    assert "--max-message-bytes" in refused.value.error.message
    assert client.tool("list_sessions")["count"] == 0  # the positive control: the server reads on
