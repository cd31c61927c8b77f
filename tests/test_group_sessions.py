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


def test_resumes_of_a_killed_servers_sessions_sent_to_two_servers_at_once_have_one_winner_each(db_target, pages):
    """Issue 63: ten sessions of a killed server, each resumed through two other servers at the same moment (20
    resumes at once): exactly one wins each, the other answers SESSION_IN_USE naming the winner, and opens
    nothing (its list_sessions has none of them, and no server but the winner logs the session created again)."""
    import threading

    servers = [HttpServer("--db", db_target, "--max-sessions", "12", env=ENV) for _ in range(3)]
    clients = []
    try:
        alice = [SdkClient(s.url, token=ALICE) for s in servers]
        clients += alice
        made = [alice[0].tool("create_session", url=pages.url(f"/counter?n={n}")) for n in range(10)]
        for answer in made:
            alice[0].tool("get_content", ref_id=answer["pageRefId"])  # the after-call save has run
        sessions = [answer["sessionId"] for answer in made]
        servers[0].proc.kill()  # SIGKILL: its sessions stay 'active' in the history, their server gone
        servers[0].proc.wait(10)
        assert wait_for(lambda: alice[1].error("snapshot", sessionId=sessions[0])["errorCode"] == "SESSION_LOST",
                        20, 0.2)  # its instance lock is gone: the sessions are free to resume
        logs_before = [open(s.stderr.name).read().count('"session_created"') for s in servers[1:]]
        start = threading.Barrier(2 * len(sessions))
        outcomes = {}

        def resume(n, sid):
            start.wait(20)
            result = alice[n].call("resume_session", {"sessionId": sid})
            outcomes[n, sid] = (result.is_error, json.loads(result.content[0].text))

        threads = [threading.Thread(target=resume, args=(n, sid)) for sid in sessions for n in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert len(outcomes) == 2 * len(sessions), outcomes
        won = {1: set(), 2: set()}
        for sid in sessions:
            winners = [n for n in (1, 2) if not outcomes[n, sid][0]]
            assert len(winners) == 1, (outcomes[1, sid], outcomes[2, sid])
            winner, loser = winners[0], 3 - winners[0]
            refusal = outcomes[loser, sid][1]
            assert refusal["errorCode"] == "SESSION_IN_USE", refusal
            assert refusal["details"]["server"] == address(servers[winner]), (refusal, [address(s) for s in servers])
            assert address(servers[winner]) in refusal["message"]
            won[winner].add(sid)
        for n in (1, 2):
            listed = alice[n].tool("list_sessions")
            assert {s["sessionId"] for s in listed["sessions"]} == won[n]
            created = open(servers[n].stderr.name).read().count('"session_created"') - logs_before[n - 1]
            assert created == len(won[n]), (n, created, won[n])
    finally:
        for c in clients:
            try:
                c.close()
            except Exception:
                pass  # the first: its server was killed
        for s in servers:
            s.close()
