"""Two real servers on one history file: each owns its sessions, a restart closes only a gone server's,
and a session of a server killed with kill -9 is resumed from the other."""

import json
import os
import signal
import sqlite3
import time

import pytest
from support import McpClient, server_pid, wait_for

pytestmark = pytest.mark.e2e


def state_of(db, session_id):
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT state, json_extract(metadata, '$.closeReason') FROM sessions "
                            "WHERE session_id = ?", (session_id,)).fetchone()


def test_two_servers_share_one_history(tmp_path, pages):
    db = str(tmp_path / "history.db")
    a = McpClient("--db", db)
    a_pid = server_pid()
    b = McpClient("--db", db)
    refs = []
    try:
        sa = a.tool("create_session")["sessionId"]
        sb = b.tool("create_session")["sessionId"]
        for n in range(2):
            refs.append(a.tool("navigate", sessionId=sa, url=pages.url(f"/counter?n=a{n}"))["refId"])
            refs.append(b.tool("navigate", sessionId=sb, url=pages.url(f"/counter?n=b{n}"))["refId"])
        # Neither server can take the other's live session.
        assert b.error("resume_session", sessionId=sa)["errorCode"] == "SESSION_IN_USE"

        for ref_id in refs[1::2]:  # b's calls are captured after their answers: wait for them before b stops
            b.tool("get_content", ref_id=ref_id)
        b.close()  # one restarts: the other's session stays open, in the history and in fact
        b = McpClient("--db", db)
        assert state_of(db, sa) == ("active", None)
        assert state_of(db, sb) == ("closed", "shutdown")
        refs.append(a.tool("navigate", sessionId=sa, url=pages.url("/counter?n=a-after"))["refId"])
        for ref_id in refs:  # every refId of both reads back, from either server (a's first: it waits
            # for its own call's capture; another server sees it once committed)
            assert "Count" in a.tool("get_content", ref_id=ref_id, reset_cursor=True)["content"]
            assert "Count" in b.tool("get_content", ref_id=ref_id, reset_cursor=True)["content"]

        os.kill(a_pid, signal.SIGKILL)  # its lock goes with it, once the last of its threads has exited
        # (the process shows as a zombie a moment before): so resume may say SESSION_IN_USE briefly.
        def resume():
            result = b.call("resume_session", {"sessionId": sa})
            in_use = result.is_error and json.loads(result.content[0].text)["errorCode"] == "SESSION_IN_USE"
            return None if in_use else result

        result = wait_for(resume, 15, 0.2)
        assert result is not None and not result.is_error, result
        resumed = result.structured_content
        assert resumed["url"].endswith("/counter?n=a-after")
        page = b.tool("navigate", sessionId=sa, url=pages.url("/counter?n=resumed"))
        assert page["title"] == "Counter" and state_of(db, sa) == ("active", None)
    finally:
        b.close()
        try:
            a.close()
        except Exception:
            pass  # its server was killed


def test_a_person_reading_the_history_blocks_nothing_and_one_locking_it_pauses_recording(tmp_path, pages):
    db = str(tmp_path / "history.db")
    c = McpClient("--db", db)
    answers = {}
    person = sqlite3.connect(db, isolation_level=None)
    try:
        sid = c.tool("create_session")["sessionId"]
        person.execute("BEGIN")  # a long read, as `sqlite3 history.db` with a query running
        person.execute("SELECT COUNT(*) FROM requests").fetchone()
        for n in range(3):
            nav = c.tool("navigate", sessionId=sid, url=pages.url(f"/counter?n=read{n}"))
            assert "notRecorded" not in nav  # WAL: a reader never blocks the writer
            answers[nav["refId"]] = True
        c.tool("get_content", ref_id=nav["refId"])
        person.execute("COMMIT")
        person.execute("BEGIN IMMEDIATE")  # now the person holds the write lock, past the 5 s busy timeout
        said = set()
        deadline = time.monotonic() + 40
        while not said:
            nav = c.tool("navigate", sessionId=sid, url=pages.url(f"/counter?n=locked{time.monotonic()}"))
            answers[nav["refId"]] = "notRecorded" not in nav
            if "notRecorded" in nav:
                said.add(nav["notRecorded"]["errorCode"])
            assert time.monotonic() < deadline, "the lock was never reported"
            time.sleep(0.5)
        assert said == {"HISTORY_BUSY"}
        person.execute("ROLLBACK")
        deadline = time.monotonic() + 40
        while "notRecorded" in nav:
            assert time.monotonic() < deadline, "recording did not resume"
            time.sleep(0.5)
            nav = c.tool("navigate", sessionId=sid, url=pages.url(f"/counter?n=free{time.monotonic()}"))
            answers[nav["refId"]] = "notRecorded" not in nav
        c.tool("get_content", ref_id=nav["refId"])  # waits for its capture and the rows before it
    finally:
        person.close()
        c.close()
    with sqlite3.connect(db) as conn:
        kept = {ref for (ref,) in conn.execute("SELECT ref_id FROM responses")}
    for ref_id, recorded in answers.items():
        assert recorded == (ref_id in kept), ref_id
