"""SIGTERM while calls are in flight: the server stops, and says so; the browser did not crash."""

import os
import signal
import time

import pytest
from support import McpClient, RawServer, tool_payload

pytestmark = pytest.mark.e2e


def test_a_call_in_flight_at_sigterm_hears_the_server_is_stopping_and_resumes_later(pages, tmp_path):
    db = str(tmp_path / "history.db")
    server = RawServer("--db", db)
    try:
        server.initialize()
        sid = tool_payload(server.call(1, "create_session"))["sessionId"]
        tool_payload(server.call(2, "navigate", sessionId=sid, url=pages.url("/counter?n=kept")))
        server.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                     "params": {"name": "navigate", "arguments": {"sessionId": sid,
                                                                  "url": pages.url("/slow?ms=20000")}}})
        time.sleep(1.0)  # the navigation is under way
        os.kill(server.proc.pid, signal.SIGTERM)
        answer = server.recv(30)
        assert answer["id"] == 3 and answer["result"]["isError"] is True
        error = tool_payload(answer)
        assert error["errorCode"] == "SERVER_STOPPING", error
        assert error["details"]["resumable"] is True
        assert server.proc.wait(30) == 0
    finally:
        server.close()
    c = McpClient("--db", db)  # a server on the same history again: the session comes back
    try:
        resumed = c.tool("resume_session", sessionId=sid)
        assert resumed["url"].endswith("/counter?n=kept")
    finally:
        c.close()
