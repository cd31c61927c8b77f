"""End to end on PostgreSQL (`--db postgresql://…`): servers over stdio and HTTP with the official MCP client.

What one server records, another reads, for the same client only; the database going away
mid-run pauses recording (answers say notRecorded, and nothing said stored is missing) and
its return resumes it; the URL's password is never in a log line, an answer or --help.
"""

import json
import os
import signal
import subprocess
import time

import pytest
from support import SERVER_CMD, HttpServer, McpClient, SdkClient, server_pid, wait_for

from mcpbrowser.redaction import shown_url

pytestmark = pytest.mark.e2e

ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
TOKENS = f"alice:{ALICE},bob:{BOB}"


def rows(url, sql):
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()


def stderr(client):
    """All a server wrote to stderr, JSON or not."""
    client.stderr.flush()
    with open(client.stderr.name) as f:
        return f.read()


def test_two_servers_on_one_postgresql_read_each_others_calls_and_never_show_its_password(postgres, pages):
    url = postgres.new_database()
    a = McpClient("--db", url)
    b = None
    answers = []
    try:
        sid = a.tool("create_session")["sessionId"]
        nav = a.tool("navigate", sessionId=sid, url=pages.url("/counter?n=41"))
        snap = a.tool("snapshot", sessionId=sid)
        first = a.tool("get_content", ref_id=nav["refId"])
        assert 'heading "Count 41"' in first["content"] and first["mode"] == "full"
        answers += [nav, snap, first]
        b = McpClient("--db", url)  # a second server process on the same database
        read = b.tool("get_content", ref_id=nav["refId"], reset_cursor=True)
        assert read["content"] == first["content"] and read["hash"] == first["hash"]
        answers.append(read)
        assert b.error("resume_session", sessionId=sid)["errorCode"] == "SESSION_IN_USE"  # a's, alive
        stored = dict(rows(url, "SELECT ref_id, tool_name FROM requests"))
        assert stored[nav["refId"]] == "navigate" and stored[snap["refId"]] == "snapshot"
        logs = stderr(a) + stderr(b)
    finally:
        if b is not None:
            b.close()
        a.close()
    assert '"tool call"' in logs and postgres.password not in logs and postgres.password not in json.dumps(answers)
    env = {"MCPBROWSER_DB": url}
    shown = subprocess.run([*SERVER_CMD, "--print-config"], env={**os.environ, **env},
                           capture_output=True, text=True, timeout=60)
    assert json.loads(shown.stdout)["db"] == shown_url(url) and "@" not in shown_url(url)
    helped = subprocess.run([*SERVER_CMD, "--help"], env={**os.environ, **env},
                            capture_output=True, text=True, timeout=60)
    assert "postgresql://" in helped.stdout and postgres.password not in helped.stdout + helped.stderr


def test_a_client_reads_its_calls_from_any_server_and_another_client_from_none(postgres, pages):
    url = postgres.new_database()
    one = HttpServer("--db", url, env={"MCPBROWSER_HTTP_TOKENS": TOKENS})
    two = HttpServer("--db", url, env={"MCPBROWSER_HTTP_TOKENS": TOKENS})
    clients = []
    try:
        alice_one, alice_two, bob_two = (SdkClient(s.url, token=t) for s, t in ((one, ALICE), (two, ALICE),
                                                                                  (two, BOB)))
        clients += [alice_one, alice_two, bob_two]
        sid = alice_one.tool("create_session")["sessionId"]
        ref = alice_one.tool("navigate", sessionId=sid, url=pages.url("/counter?n=7"))["refId"]
        here = alice_one.tool("get_content", ref_id=ref)  # waits for the capture on its server
        there = alice_two.tool("get_content", ref_id=ref, reset_cursor=True)
        assert there["content"] == here["content"] and 'heading "Count 7"' in there["content"]
        assert bob_two.error("get_content", ref_id=ref)["errorCode"] == "CONTENT_NOT_FOUND"
        assert bob_two.error("get_console_content", ref_id=ref)["errorCode"] == "CONTENT_NOT_FOUND"
    finally:
        for c in clients:
            c.close()
        one.close()
        two.close()


def test_the_database_stopped_mid_run_pauses_recording_and_its_return_resumes_it(postgres, pages):
    url = postgres.new_database()
    c = McpClient("--db", url)
    answers = {}

    def navigate(tag):
        nav = c.tool("navigate", sessionId=sid, url=pages.url(f"/counter?n={tag}{time.monotonic()}"))
        answers[nav["refId"]] = "notRecorded" not in nav
        return nav

    try:
        sid = c.tool("create_session")["sessionId"]
        kept = navigate("up")
        assert "notRecorded" not in kept
        c.tool("get_content", ref_id=kept["refId"])
        postgres.stop()
        try:
            said, deadline = set(), time.monotonic() + 60
            while not said:
                nav = navigate("down")
                if "notRecorded" in nav:
                    said.add(nav["notRecorded"]["errorCode"])
                    assert nav["meta"]["recorded"] is False
                assert time.monotonic() < deadline, "the database's absence was never said"
                time.sleep(0.3)
            assert said == {"HISTORY_UNREACHABLE"}
            lost = nav["refId"]
            assert c.tool("list_sessions")["sessions"]  # the calls themselves go on
            unread = c.error("get_content", ref_id=kept["refId"], reset_cursor=True)  # a read fails, and says so
            assert unread["errorCode"] == "HISTORY_UNAVAILABLE" and unread["details"]["cause"] == "HISTORY_UNREACHABLE"
            assert "127.0.0.1" in unread["message"] and postgres.password not in json.dumps(unread)
        finally:
            postgres.start()
        deadline = time.monotonic() + 60
        while "notRecorded" in nav:
            assert time.monotonic() < deadline, "recording did not resume"
            time.sleep(0.5)
            nav = navigate("back")
        back = c.tool("get_content", ref_id=nav["refId"])  # waits for its capture and the rows before it
        assert "Count back" in back["content"]
        assert c.error("get_content", ref_id=lost)["errorCode"] == "CONTENT_NOT_FOUND"
        assert "Count up" in c.tool("get_content", ref_id=kept["refId"], reset_cursor=True)["content"]
        log = stderr(c)
    finally:
        c.close()
    kept_rows = {ref for (ref,) in rows(url, "SELECT ref_id FROM responses")}
    for ref_id, recorded in answers.items():
        assert recorded == (ref_id in kept_rows), ref_id
    assert '"store_fault"' in log and '"store_recovered"' in log and "127.0.0.1" in log  # the URL, shown
    assert postgres.password not in log


def test_a_killed_servers_session_is_resumed_by_another_and_a_live_ones_is_not(postgres, pages):
    url = postgres.new_database()
    a = McpClient("--db", url)
    a_pid = server_pid()
    b = McpClient("--db", url)
    try:
        sa = a.tool("create_session")["sessionId"]
        last = a.tool("navigate", sessionId=sa, url=pages.url("/login?user=ada"))
        assert last["title"] == "Logged in as ada"
        a.tool("get_content", ref_id=last["refId"])  # the after-call save has run
        assert b.error("resume_session", sessionId=sa)["errorCode"] == "SESSION_IN_USE"
        assert b.error("snapshot", sessionId=sa)["errorCode"] == "SESSION_IN_USE"  # a call here: it is a's
        os.kill(a_pid, signal.SIGKILL)  # its connection, and with it its advisory lock, goes with it
        gone = wait_for(lambda: (lambda e: e if e["errorCode"] != "SESSION_IN_USE" else None)(
            b.error("snapshot", sessionId=sa)), 20, 0.2)
        assert gone["errorCode"] == "SESSION_LOST" and gone["details"] == {"reason": "server_gone", "resumable": True}
        assert "resume_session" in gone["message"]

        def resume():
            result = b.call("resume_session", {"sessionId": sa})
            in_use = result.is_error and json.loads(result.content[0].text)["errorCode"] == "SESSION_IN_USE"
            return None if in_use else result

        result = wait_for(resume, 20, 0.2)
        assert result is not None and not result.is_error, result
        assert result.structured_content["url"] == pages.url("/whoami")
        assert b.tool("navigate", sessionId=sa, url=pages.url("/whoami"))["title"] == "Logged in as ada"
    finally:
        b.close()
        try:
            a.close()
        except Exception:
            pass  # its server was killed


def test_servers_on_two_machines_sharing_a_key_file_open_what_either_sealed_and_never_show_the_key(
        postgres, pages, tmp_path):
    from mcpbrowser.sealing import key_id

    url = postgres.new_database()
    key = os.urandom(32)
    key_file = tmp_path / "db.key"
    key_file.write_text(key.hex() + "\n")
    key_file.chmod(0o600)
    # Two machines: each its own data directory, where a server keeps the key it would make itself.
    machines = [{"XDG_DATA_HOME": str(tmp_path / name)} for name in ("one", "two")]
    a = McpClient("--db", url, "--db-key-file", str(key_file), env=machines[0])
    a_pid = server_pid()
    b = McpClient("--db", url, "--db-key-file", str(key_file), env=machines[1])
    answers = []
    try:
        sa = a.tool("create_session")["sessionId"]
        answers.append(a.tool("navigate", sessionId=sa, url=pages.url("/login?user=ada")))
        answers.append(a.tool("save_state", sessionId=sa, name="ada"))  # a saved login, sealed
        answers.append(a.tool("get_content", ref_id=answers[0]["refId"]))  # the after-call save has run
        os.kill(a_pid, signal.SIGKILL)

        def resume():
            result = b.call("resume_session", {"sessionId": sa})
            in_use = result.is_error and json.loads(result.content[0].text)["errorCode"] == "SESSION_IN_USE"
            return None if in_use else result

        result = wait_for(resume, 20, 0.2)
        assert result is not None and not result.is_error, result.content[0].text
        answers.append(result.structured_content)
        assert result.structured_content["url"] == pages.url("/whoami")  # a's resume state, opened by b
        assert b.tool("navigate", sessionId=sa, url=pages.url("/whoami"))["title"] == "Logged in as ada"
        login = b.tool("create_session", storageState="ada")  # a's saved login, opened by b
        answers.append(login)
        assert b.tool("navigate", sessionId=login["sessionId"], url=pages.url("/whoami"))["title"] == \
            "Logged in as ada"
        logs = stderr(a) + stderr(b)
    finally:
        b.close()
        try:
            a.close()
        except Exception:
            pass  # its server was killed
    # The positive control: both servers read the file, and say which key they seal with by its id.
    ids = [json.loads(line)["keyId"] for line in logs.splitlines() if '"sealing_key"' in line]
    assert ids == [key_id(key)] * 2, ids
    helped = subprocess.run([*SERVER_CMD, "--help"], env={**os.environ, "MCPBROWSER_DB_KEY_FILE": str(key_file)},
                            capture_output=True, text=True, timeout=60)
    key_file.chmod(0o644)
    refused = subprocess.run([*SERVER_CMD, "--db", url, "--db-key-file", str(key_file)], stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "--db-key-file" in refused.stderr and "chmod 600" in refused.stderr
    shown = logs + json.dumps(answers) + helped.stdout + helped.stderr + refused.stderr
    for form in (key.hex(), key.hex().upper(), key.hex()[:16], repr(key)[2:-1]):
        assert form not in shown
