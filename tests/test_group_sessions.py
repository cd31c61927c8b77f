"""list_sessions across servers that share one history (a SQLite file, or PostgreSQL): real `--http` servers,
the official MCP client. A client sees its own sessions on the other servers, which server holds each, and
that one whose server was killed can be resumed; another token sees none of them; a lone server's answer
is as before."""

import json

import pytest
from support import HttpServer, SdkClient, wait_for

pytestmark = pytest.mark.e2e

ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
ENV = {"MCPBROWSER_HTTP_TOKENS": f"alice:{ALICE},bob:{BOB}"}


def address(server):
    return server.base.split("//", 1)[1]  # http://127.0.0.1:PORT -> 127.0.0.1:PORT


def test_a_client_sees_its_sessions_on_every_server_and_which_can_be_resumed(db_target, pages):
    one = HttpServer("--db", db_target, env=ENV)
    two = HttpServer("--db", db_target, env=ENV)
    clients = []
    try:
        alice_one, alice_two, bob_one, bob_two = (SdkClient(s.url, token=t) for s, t in
                                                  ((one, ALICE), (two, ALICE), (one, BOB), (two, BOB)))
        clients += [alice_one, alice_two, bob_one, bob_two]
        there = alice_one.tool("create_session", url=pages.url("/counter?n=1"))["sessionId"]
        here = alice_two.tool("create_session")["sessionId"]
        bobs = bob_one.tool("create_session")["sessionId"]

        listed = alice_two.tool("list_sessions")
        assert [s["sessionId"] for s in listed["sessions"]] == [here] and listed["count"] == 1
        assert listed["elsewhere"] == [{"sessionId": there, "server": address(one)}]
        assert bob_two.tool("list_sessions")["elsewhere"] == [{"sessionId": bobs, "server": address(one)}]
        mirrored = alice_one.tool("list_sessions")  # a session with no call yet is listed too
        assert [s["sessionId"] for s in mirrored["sessions"]] == [there]
        assert mirrored["elsewhere"] == [{"sessionId": here, "server": address(two)}]

        one.proc.kill()  # SIGKILL: its sessions stay 'active' in the history, their server gone
        one.proc.wait(10)

        def gone():
            answer = alice_two.tool("list_sessions")
            return answer if answer.get("elsewhere", [{}])[0].get("resumable") else None

        answer = wait_for(gone, 20, 0.2)
        assert answer is not None, alice_two.tool("list_sessions")
        assert answer["elsewhere"] == [{"sessionId": there, "server": address(one), "resumable": True}]
        # bob's session there never made a call: nothing of it was saved, so nothing to resume
        assert bob_two.tool("list_sessions")["elsewhere"] == [{"sessionId": bobs, "server": address(one),
                                                              "resumable": False}]
        # Another token, first: told the session does not exist, as for an id never made (issue 63's break (b):
        # an owner check on open sessions only let bob resume alice's with her cookies), and nothing is opened.
        refused = bob_two.error("resume_session", sessionId=there)
        assert refused["errorCode"] == "SESSION_NOT_FOUND" and refused["message"] == bob_two.error(
            "resume_session", sessionId="00000000-0000-4000-8000-000000000000")["message"], refused
        assert bob_two.tool("list_sessions")["count"] == 0
        resumed = alice_two.tool("resume_session", sessionId=there)
        assert resumed["url"] == pages.url("/counter?n=1")
        after = alice_two.tool("list_sessions")
        assert sorted(s["sessionId"] for s in after["sessions"]) == sorted([here, there]) and "elsewhere" not in after
        assert json.dumps(bob_two.tool("list_sessions")).count(there) == 0
    finally:
        for c in clients:
            try:
                c.close()
            except Exception:
                pass  # alice_one and bob_one: their server was killed
        one.close()
        two.close()


def test_a_lone_servers_answer_carries_nothing_of_the_group(tmp_path, pages):
    server = HttpServer("--db", str(tmp_path / "h.db"), env=ENV)
    alice = SdkClient(server.url, token=ALICE)
    try:
        sid = alice.tool("create_session", url=pages.url("/counter?n=2"))["sessionId"]
        listed = alice.tool("list_sessions")
        assert set(listed) - {"meta", "refId"} == {"sessions", "count"}
        assert [s["sessionId"] for s in listed["sessions"]] == [sid]
    finally:
        alice.close()
        server.close()
