"""End to end: the SQLite history, get_content diff cursors, crash safety and resume."""

import hashlib
import json
import os
import signal
import sqlite3
import time
import zlib

import pytest
from support import HttpServer, McpClient, RawServer, SdkClient, stored_text, tool_payload, wait_for

pytestmark = pytest.mark.e2e


ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"


def rows(db, sql, params=()):
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "history.db")


@pytest.fixture(scope="module")
def shared_db(tmp_path_factory):
    """One history file for the module's server on it (`server_with("--db", shared_db)`): for the tests that
    read back only their own calls' rows (by refId or session), each with sessions of its own."""
    return str(tmp_path_factory.mktemp("history") / "history.db")


def test_every_result_has_ref_id_and_meta_and_rows_are_stored(server_with, pages, shared_db):
    c, db = server_with("--db", shared_db), shared_db
    created = c.tool("create_session")
    sid = created["sessionId"]
    assert created["meta"] == {"tool": "create_session", "hasSnapshot": False, "hasConsoleLogs": False,
                               "consoleErrorCount": 0}
    nav_result = c.call("navigate", {"sessionId": sid, "url": pages.url("/logs")})
    nav = json.loads(nav_result.content[0].text)
    assert nav["meta"]["hasSnapshot"] is True and nav["meta"]["hasConsoleLogs"] is True
    assert nav["meta"]["consoleErrorCount"] >= 1 and "snapshot" not in nav  # compact by default
    err = c.error("click", sessionId=sid, selector="#nope", timeout=200)
    # The model reads no meta of a call that logged nothing, nor the sessionId it sent, nor the
    # selector the message quotes (core/answer.agent_error); the history keeps the whole error.
    assert err["refId"] and not {"meta", "sessionId"} & err.keys() and "#nope" in err["message"], err
    assert "details" not in err and "waited 200 ms" in err["message"], err
    c.tool("get_content", ref_id=nav["refId"])  # waits for the capture, so the rows are written
    stored = dict(rows(db, "SELECT ref_id, tool_name FROM requests"))
    assert stored[created["refId"]] == "create_session" and stored[err["refId"]] == "click"
    (whole,) = rows(db, "SELECT error_message FROM responses WHERE ref_id = ?", (err["refId"],))[0]
    whole = json.loads(whole)
    assert whole["meta"]["tool"] == "click" and whole["meta"]["hasSnapshot"] is False
    assert whole["sessionId"] == sid and whole["details"]["target"] == "#nope"
    status, result, packed, console = rows(db, "SELECT status, result, p.data, console_logs FROM responses s "
                                               "JOIN snapshots p ON p.hash = s.snapshot_hash WHERE ref_id = ?",
                                           (nav["refId"],))[0]
    snapshot = zlib.decompress(packed)  # stored once by hash, compressed
    assert status == "ok"
    # The blob is the whole answer; the model's text is the same less what it need not read again.
    assert json.loads(result) == nav_result.structured_content
    assert nav == {k: v for k, v in nav_result.structured_content.items() if k != "expiresAt"}
    assert b'button "More"' in snapshot and b"hello log" in console
    assert rows(db, "SELECT status, error_message FROM responses WHERE ref_id = ?",
                (err["refId"],))[0][0] == "error"
    levels = [r[0] for r in rows(db, "SELECT level FROM console_logs WHERE ref_id = ?", (nav["refId"],))]
    assert "log" in levels and "error" in levels
    version = rows(db, "SELECT MAX(version) FROM schema_version")[0][0]
    assert version >= 2
    c.tool("close_session", sessionId=sid)


def test_request_row_is_written_before_the_call_runs(session_on, pages, shared_db):
    c, sid = session_on("--db", shared_db)
    import threading

    done = threading.Event()
    threading.Thread(target=lambda: (c.tool("navigate", sessionId=sid, url=pages.url("/slow?ms=1500")),
                                     done.set()), daemon=True).start()
    deadline = time.monotonic() + 10
    while "/slow?ms=1500" not in pages.hits and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # the writer commits within a batch; the call is still running
    pending = rows(shared_db, "SELECT r.ref_id, s.status FROM requests r LEFT JOIN responses s "
                              "ON s.ref_id = r.ref_id WHERE r.tool_name = 'navigate' AND r.session_id = ?", (sid,))
    assert len(pending) == 1 and pending[0][1] is None and not done.is_set()
    assert done.wait(10)


def test_get_content_full_then_diffs_then_empty_then_reset(session_on, pages, shared_db):
    c, sid = session_on("--db", shared_db)
    first = c.tool("navigate", sessionId=sid, url=pages.url("/counter?n=1"))["refId"]
    second = c.tool("navigate", sessionId=sid, url=pages.url("/counter?n=2"))["refId"]
    full = c.tool("get_content", ref_id=first)
    assert full["mode"] == "full" and 'heading "Count 1"' in full["content"] and "item 19" in full["content"]
    assert full["hash"] == hashlib.sha256(full["content"].encode()).hexdigest()
    diff = c.tool("get_content", ref_id=second)
    assert diff["mode"] == "diff"
    changed = diff["content"].splitlines()
    assert any(line.startswith("+") and 'heading "Count 2"' in line for line in changed)
    assert any(line.startswith("-") and 'heading "Count 1"' in line for line in changed)
    assert "item 5" not in diff["content"]  # unchanged lines stay out
    again = c.tool("get_content", ref_id=second)
    assert again["mode"] == "diff" and again["content"] == ""  # empty diff is "", not an error
    reset = c.tool("get_content", ref_id=second, reset_cursor=True)
    assert reset["mode"] == "full" and 'heading "Count 2"' in reset["content"]
    found = c.tool("get_content", ref_id=second, search_for="item 7")
    assert found["mode"] == "search" and found["matches"] == 1
    assert "item 7" in found["content"] and "item 5" in found["content"] and "item 12" not in found["content"]
    missing = c.error("get_content", ref_id="nope")
    assert missing["errorCode"] == "CONTENT_NOT_FOUND"
    no_snapshot = c.error("get_content", ref_id=c.tool("list_sessions")["refId"])
    assert no_snapshot["errorCode"] == "CONTENT_NOT_FOUND"


def _listing(*items):
    return "data:text/html,<title>List</title><ul>" + "".join(f"<li>{item}</li>" for item in items) + "</ul>"


def test_the_diff_cursor_is_each_sessions_a_search_leaves_it_and_a_long_diff_is_the_page(session_on, shared_db):
    """history.md: a read is a diff against what that session last read; `search_for` (in any case) leaves the cursor
    alone; added lines keep their refs; a diff longer than half the page is the page itself (`mode: full`)."""
    from mcpbrowser.core.content_tools import _diff

    c, sid = session_on("--db", shared_db)
    other = c.tool("create_session")["sessionId"]
    try:
        items = [f"entry {n} of the list" for n in range(10)]
        first = c.tool("navigate", sessionId=sid, url=_listing(*items))["refId"]
        second = c.tool("navigate", sessionId=sid, url=_listing(*items[:9], "the new last entry"))["refId"]
        assert c.tool("get_content", ref_id=first)["mode"] == "full"
        found = c.tool("get_content", ref_id=second, search_for="THE NEW LAST")
        assert found["mode"] == "search" and found["matches"] == 1 and "the new last entry" in found["content"]
        diff = c.tool("get_content", ref_id=second)  # still against the first: the search moved nothing
        assert diff["mode"] == "diff", diff
        added = [line for line in diff["content"].splitlines() if line.startswith("+")]
        assert len(added) == 1 and "the new last entry" in added[0] and "[ref=" in added[0], diff
        # Another session's first read is whole, whatever this one read.
        third = c.tool("navigate", sessionId=other, url=_listing(*items[:9], "the new last entry"))["refId"]
        assert c.tool("get_content", ref_id=third)["mode"] == "full"
        # Four of ten lines changed: a diff longer than half the page, shorter than all of it.
        fourth = c.tool("navigate", sessionId=sid, url=_listing(*items[:6], *(f"changed {n} here" for n in range(4))))
        whole = c.tool("get_content", ref_id=fourth["refId"], reset_cursor=True)["content"]
        before = c.tool("get_content", ref_id=second, reset_cursor=True)["content"]
        text = _diff(before.splitlines(), whole.splitlines())
        assert len(whole) / 2 < len(text) < len(whole), (len(text), len(whole))  # the control: the case is the one
        assert c.tool("get_content", ref_id=fourth["refId"])["mode"] == "full"
    finally:
        c.call("close_session", {"sessionId": other})


def test_console_content_is_formatted_filtered_and_never_diffed(session_on, pages, shared_db):
    c, sid = session_on("--db", shared_db)
    ref = c.tool("navigate", sessionId=sid, url=pages.url("/logs"))["refId"]
    one = c.tool("get_console_content", ref_id=ref)
    two = c.tool("get_console_content", ref_id=ref)
    assert one["content"] == two["content"] and one["count"] >= 3  # a second read is full again
    assert "LOG hello log" in one["content"] and "WARNING careful" in one["content"]
    errors = c.tool("get_console_content", ref_id=ref, level="error")
    assert errors["count"] >= 1 and all("ERROR" in line for line in errors["content"].splitlines())


def test_response_mode_full_inlines_the_snapshot(make_client, pages):
    c = make_client("--response-mode", "full")
    sid = c.tool("create_session")["sessionId"]
    nav = c.tool("navigate", sessionId=sid, url=pages.url("/counter?n=3"))
    assert 'heading "Count 3"' in nav["snapshot"]
    assert c.tool("get_content", ref_id=nav["refId"])["content"] == nav["snapshot"]


def test_get_content_returns_the_page_as_each_call_left_it(client, session, pages):
    """The page changes after a call, by the next call and by itself: each call's stored page stays its own."""
    nav = client.tool("navigate", sessionId=session, url=pages.url("/docs"))
    grow = client.tool("click", sessionId=session, selector="#grow")  # at once: no pause after the navigate
    assert wait_for(lambda: "Shown late" in client.tool("snapshot", sessionId=session)["snapshot"], 5)
    first, second = (client.tool("get_content", ref_id=call["refId"], reset_cursor=True)["content"]
                     for call in (nav, grow))  # each whole, not as a diff from the one read before
    assert "]: short" in first and "grown" not in first and "Shown late" not in first
    assert "grown" in second and ": short" not in second


def test_response_mode_lean_stores_only_what_snapshot_and_wait_for_read(make_client, pages):
    c = make_client("--response-mode", "lean")
    sid = c.tool("create_session")["sessionId"]
    nav = c.tool("navigate", sessionId=sid, url=pages.url("/counter?n=4"))
    assert nav["meta"]["hasSnapshot"] is False and "snapshot" not in nav
    missing = c.error("get_content", ref_id=nav["refId"])
    assert missing["errorCode"] == "CONTENT_NOT_FOUND" and "lean" in missing["message"]
    snap = c.tool("snapshot", sessionId=sid, query="Count")
    assert snap["meta"]["hasSnapshot"] is True
    assert 'heading "Count 4"' in c.tool("get_content", ref_id=snap["refId"])["content"]
    # No capture after a call reads the page's secret fields here: the tools themselves mark what they typed.
    c.tool("navigate", sessionId=sid, url="data:text/html,<input id=code autocomplete=one-time-code>"
                                          "<button id=go onclick='document.title = code.value'>Go</button>")
    c.tool("fill_form", sessionId=sid, fields=[{"selector": "#code", "value": "otp-Zq81-secret"}])
    assert c.tool("click", sessionId=sid, selector="#go")["title"] == "[REDACTED]"


def test_secrets_never_reach_the_database(make_client, pages, db):
    c = make_client("--db", db)
    sid = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=sid, url=pages.url("/counter?n=1"))
    c.tool("type", sessionId=sid, selector="#secret-box", text="hunter2-SECRET", secret=True)
    ref = c.tool("click", sessionId=sid, selector="h1")["refId"]
    c.tool("navigate", sessionId=sid, url=pages.url("/logs"))
    logs_ref = c.tool("network_logs", sessionId=sid, urlContains="/api/data")["refId"]
    assert "hunter2-SECRET" not in c.tool("get_content", ref_id=ref, reset_cursor=True)["content"]
    assert logs_ref
    c.close()
    stored = stored_text(db)
    # The search sees page text: a word of the page's body, in the snapshots decompressed.
    assert "item 19" in stored["pages"]
    for secret in ("hunter2-SECRET", "SECRET-TOKEN-123", "SECRET-KEY-456", "SECRET-COOKIE-789"):
        assert secret not in stored["rows"] and secret not in stored["pages"], secret
    assert "[REDACTED]" in stored["rows"]


def test_fill_form_stores_no_value_not_even_a_plain_fields(make_client, db):
    """A field may turn out to be a password only once it is reached, and a call that fails before it is
    recorded first: fill_form's request row keeps the selectors, never a value."""
    c = make_client("--db", db)
    sid = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=sid, url="data:text/html,<input id=name aria-label=Name>")
    c.tool("fill_form", sessionId=sid, fields=[{"selector": "#name", "value": "plain-Vq3-value"}])
    c.close()
    stored = stored_text(db)
    assert "#name" in stored["rows"] and "plain-Vq3-value" in stored["pages"]  # the call's row; the field filled
    assert "plain-Vq3-value" not in stored["rows"]


def test_crash_keeps_committed_rows_and_restart_marks_sessions(pages, db):
    server = RawServer("--db", db)
    server.initialize()
    sid = tool_payload(server.call(1, "create_session"))["sessionId"]
    refs = [tool_payload(server.call(2 + i, "navigate", sessionId=sid, url=pages.url(f"/counter?n={i}")))["refId"]
            for i in range(3)]
    for i in range(3):  # calls in flight at the moment of the kill
        slow = {"sessionId": sid, "url": pages.url("/slow?ms=3000")}
        server.send({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call",
                     "params": {"name": "navigate", "arguments": slow}})
    time.sleep(0.5)
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait(10)
    committed = rows(db, "SELECT ref_id, status, result FROM responses")
    assert committed and all(status == "ok" and json.loads(result) for _, status, result in committed
                             if status == "ok")
    assert {r for r, _, _ in committed} >= set(refs[:2])
    c = McpClient("--db", db)
    try:
        c.tool("list_sessions")  # answered once the core, and so the store, is up
        assert rows(db, "SELECT state, json_extract(metadata, '$.closeReason') FROM sessions "
                        "WHERE session_id = ?", (sid,)) == [("closed", "server_restart")]
        for ref in refs:
            if ref in {r for r, _, _ in committed}:
                content = c.tool("get_content", ref_id=ref, reset_cursor=True)["content"]
                assert "Count" in content
        gone = c.error("navigate", sessionId=sid, url=pages.url("/"))  # its server died: the way back is named
        assert gone["errorCode"] == "SESSION_LOST" and gone["details"]["reason"] == "server_gone", gone
        assert ("resume_session" in gone["message"]) == gone["details"]["resumable"], gone
    finally:
        c.close()


def test_cursors_survive_a_restart(pages, db_target):
    db = db_target
    c = McpClient("--db", db)
    sid = c.tool("create_session")["sessionId"]
    ref = c.tool("navigate", sessionId=sid, url=pages.url("/counter?n=7"))["refId"]
    assert c.tool("get_content", ref_id=ref)["mode"] == "full"
    c.close()
    c = McpClient("--db", db)
    try:
        again = c.tool("get_content", ref_id=ref)
        assert again["mode"] == "diff" and again["content"] == ""  # the cursor was remembered
    finally:
        c.close()


def test_resume_after_restart_keeps_the_login(pages, db_target):
    db = db_target
    c = McpClient("--db", db)
    sid = c.tool("create_session")["sessionId"]
    landed = c.tool("navigate", sessionId=sid, url=pages.url("/login?user=ada"))
    assert landed["title"] == "Logged in as ada"
    c.tool("get_content", ref_id=landed["refId"])  # the after-call save has run
    c.close()
    from mcpbrowser.process_tree import child_pids

    others = set(child_pids("mcpbrowser"))  # the module's own server, say
    c = McpClient("--db", db)
    (pid,) = set(child_pids("mcpbrowser")) - others
    try:
        # Issue 63: the first call after a restart points to the way back (it said "call create_session").
        gone = c.error("navigate", sessionId=sid, url=pages.url("/whoami"))
        assert gone["errorCode"] == "SESSION_LOST" and "resume_session" in gone["message"], gone
        assert gone["details"] == {"reason": "server_gone", "resumable": True}
        resumed = c.tool("resume_session", sessionId=sid)
        assert resumed["sessionId"] == sid and resumed["url"] == pages.url("/whoami")
        page = c.tool("navigate", sessionId=sid, url=pages.url("/whoami"))
        assert page["title"] == "Logged in as ada"
        again = c.error("resume_session", sessionId=sid)
        assert again["errorCode"] == "INVALID_PARAMETERS"  # it is open
        unknown = c.error("resume_session", sessionId="00000000-0000-4000-8000-000000000000")
        assert unknown["errorCode"] == "SESSION_NOT_FOUND"
        c.tool("get_content", ref_id=page["refId"])  # the after-call save has run
        os.kill(pid, signal.SIGKILL)  # a crash, and a supervisor that starts it again on the same history
    finally:
        c.close()
    c = McpClient("--db", db)
    try:
        gone = c.error("snapshot", sessionId=sid)
        assert gone["errorCode"] == "SESSION_LOST" and "resume_session" in gone["message"], gone
        assert c.tool("resume_session", sessionId=sid)["url"] == pages.url("/whoami")
        closed = c.tool("close_session", sessionId=sid)
        assert closed["success"]
        ended = c.error("snapshot", sessionId=sid)  # closed by its client: still says it can come back
        assert ended["errorCode"] == "SESSION_NOT_FOUND" and "resume_session" in ended["message"], ended
    finally:
        c.close()


def execute(target, sql, params=()):
    """Run one statement on a history, a SQLite file's or a PostgreSQL database's (db_target)."""
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target) as conn:
            conn.execute(sql.replace("?", "%s"), params)
    else:
        with sqlite3.connect(target) as conn:
            conn.execute(sql, params)


def server_log(client, after=None):
    """The server's log as this client may read it (its own records): {entries, cursor}."""
    uri = "mcpbrowser://server/log" + (f"?after={after}" if after is not None else "")
    (content,) = client.run("read_resource", uri).contents
    return json.loads(content.text)


def as_asked(error, ref_id):
    """A read's error as it reads for any refId: its own refId (each call's) left out, the one asked blanked."""
    return json.loads(json.dumps({k: v for k, v in error.items() if k != "refId"}).replace(ref_id, "<refId>"))


def test_every_refid_handed_out_reads_back_for_its_client_and_as_never_handed_out_for_another(pages, db_target):
    """Issue 63, item 3. A call without a session (create_session's own, list_sessions, get_content) has a refId
    like every call: its client reads it back, on the server that handed it out and on another sharing the
    history, and is told exactly what it stored (no page) instead of "No call has refId". Another token's client
    asking for the same refIds gets word for word what a refId never handed out gets."""
    tokens = {"MCPBROWSER_HTTP_TOKENS": f"alice:{ALICE},bob:{BOB}"}
    one = HttpServer("--db", db_target, env=tokens)
    two = HttpServer("--db", db_target, env=tokens)
    clients = []
    try:
        alice, alice_two, bob = (SdkClient(s.url, token=t) for s, t in ((one, ALICE), (two, ALICE), (one, BOB)))
        clients += [alice, alice_two, bob]
        created = alice.tool("create_session")
        sid = created["sessionId"]
        nav = alice.tool("navigate", sessionId=sid, url=pages.url("/counter?n=63"))
        listed = alice.tool("list_sessions")
        read = alice.tool("get_content", ref_id=nav["refId"])
        refused = alice.error("click", sessionId="no-such-session", selector="h1")  # no session to run in
        assert refused["errorCode"] == "SESSION_NOT_FOUND" and refused["refId"]
        sessionless = {created["refId"]: "create_session", listed["refId"]: "list_sessions",
                       read["refId"]: "get_content"}
        for reader in (alice, alice_two):  # the server that handed them out, and another on the same history
            for ref_id, tool in sessionless.items():
                said = reader.error("get_content", ref_id=ref_id)
                assert said["errorCode"] == "CONTENT_NOT_FOUND", said
                assert "No call has" not in said["message"] and f"({tool})" in said["message"], said
                assert "without a session" in said["message"] and "no page" in said["message"], said
                assert reader.tool("get_console_content", ref_id=ref_id)["count"] == 0
            said = reader.error("get_content", ref_id=refused["refId"])
            assert "No call has" not in said["message"] and "(click)" in said["message"], said
            assert "SESSION_NOT_FOUND" in said["message"] and "no page" in said["message"], said
            page = reader.tool("get_content", ref_id=nav["refId"], reset_cursor=True)["content"]
            assert 'heading "Count 63"' in page
        # Bob's own refId of a call without a session reads back for him, through the same path (the control).
        own = bob.tool("list_sessions")
        cursor = server_log(bob)["cursor"]
        assert "(list_sessions)" in bob.error("get_content", ref_id=own["refId"])["message"]
        # Another token's client: every one of alice's refIds answers as one never handed out.
        never = "0" * 32
        unknown = {tool: as_asked(bob.error(tool, ref_id=never), never)
                   for tool in ("get_content", "get_console_content")}
        assert unknown["get_content"]["errorCode"] == "CONTENT_NOT_FOUND", unknown
        asked = [*sessionless, refused["refId"], nav["refId"]]
        for ref_id in asked:
            for tool in ("get_content", "get_console_content"):
                assert as_asked(bob.error(tool, ref_id=ref_id), ref_id) == unknown[tool], (tool, ref_id)
        # And alice's client on the other side: bob's refId is as foreign to her.
        assert as_asked(alice.error("get_content", ref_id=own["refId"]), own["refId"]) == unknown["get_content"]
        # The attempts happened: bob's own server log holds each of his reads, run and answered
        # CONTENT_NOT_FOUND by the tool itself (not refused before it).
        bobs = [e["data"] for e in server_log(bob, cursor)["entries"] if e["data"].get("event") == "tool_call"]
        assert sorted((d["tool"], d["outcome"]) for d in bobs) == sorted(
            [("get_content", "CONTENT_NOT_FOUND")] * (2 + len(asked))
            + [("get_console_content", "CONTENT_NOT_FOUND")] * (1 + len(asked))), bobs
        # A call recorded before calls named their client (an upgraded history) is its session's owner's.
        execute(db_target, "DELETE FROM call_owners WHERE ref_id = ?", (nav["refId"],))
        assert 'heading "Count 63"' in alice_two.tool("get_content", ref_id=nav["refId"], reset_cursor=True)["content"]
        assert as_asked(bob.error("get_content", ref_id=nav["refId"]), nav["refId"]) == unknown["get_content"]
    finally:
        for c in clients:
            c.close()
        one.close()
        two.close()


def test_a_call_without_a_session_says_what_it_stored_over_stdio(server_with, shared_db):
    """Over stdio (no tokens: the client sees every call), the same refIds say why they hold no page."""
    c = server_with("--db", shared_db)
    created = c.tool("create_session")
    listed = c.tool("list_sessions")
    for ref_id, tool in ((created["refId"], "create_session"), (listed["refId"], "list_sessions")):
        said = c.error("get_content", ref_id=ref_id)
        assert said["errorCode"] == "CONTENT_NOT_FOUND" and f"({tool})" in said["message"], said
        assert "without a session" in said["message"] and "no page" in said["message"], said
    c.tool("close_session", sessionId=created["sessionId"])


def test_a_resume_whose_last_page_no_longer_loads_says_so(tmp_path):
    """The site of the session's last page is gone: resume_session opens the session (cookies and storage)
    and says its last page did not load, as create_session's navigationError does; it said only "resumed"."""
    from support import HtmlSite

    site = HtmlSite(page=lambda url: "<title>There</title><h1>There</h1>")
    c = McpClient("--db", str(tmp_path / "h.db"))
    try:
        made = c.tool("create_session", url=site.url + "/there")
        assert made["title"] == "There"
        c.tool("get_content", ref_id=made["pageRefId"])  # the after-call save has run
        c.tool("close_session", sessionId=made["sessionId"])
        site.close()  # its last page's server is gone
        back = c.tool("resume_session", sessionId=made["sessionId"])
        assert back["navigationError"]["errorCode"] == "NAVIGATION_FAILED", back
        assert "ERR_CONNECTION_REFUSED" in back["navigationError"]["message"]
        assert "did not load" in back["message"]
        assert c.tool("list_sessions")["count"] == 1  # the session itself is open
    finally:
        c.close()
