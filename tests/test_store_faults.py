"""The history's writer under SQLite faults: a full disk, an I/O error, a lock held too long, a read-only file.

The writer's connection raises the fault SQLite would (its result code on the exception)
while a fault is on; calls go through the real core, with fake pages. Whatever the
order of faults, no call fails because of them, and what each answer said about its
recording is what the database holds once the fault is gone.
"""

import contextlib
import os
import sqlite3
import time

import pytest
from fakes import fake_core
from hypothesis import HealthCheck, given, settings
from strategies import store_fault_plans

from mcpbrowser.core import store as store_module
from mcpbrowser.core import store_postgres
from mcpbrowser.core.store import Snapshot, Store
from mcpbrowser.core.store_sqlite import SqliteBackend
from mcpbrowser.timers import now_ms

pytestmark = pytest.mark.unit

# kind -> (SQLite primary result code, the statements it hits)
FAULTS = {
    "full": (13, ("INSERT", "UPDATE", "COMMIT")),
    "ioerr": (10 | (3 << 8), ("COMMIT", "INSERT")),  # SQLITE_IOERR_WRITE
    "busy": (5, ("BEGIN",)),
    "readonly": (8, ("INSERT", "UPDATE", "DELETE")),
}


class Faults:
    """The fault now injected into the writer's statements, if any."""

    kind = None


class FaultyConnection(sqlite3.Connection):
    def execute(self, sql, *args):
        kind = Faults.kind
        if kind is not None and sql.lstrip().upper().startswith(FAULTS[kind][1]):
            exc = sqlite3.OperationalError(f"injected {kind}")
            exc.sqlite_errorcode = FAULTS[kind][0]
            raise exc
        return super().execute(sql, *args)


@pytest.fixture
def faulty(monkeypatch):
    real = sqlite3.connect

    def connect(*args, **kwargs):
        return real(*args, factory=FaultyConnection, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    monkeypatch.setattr(store_module, "RETRY_S", 0.05)
    Faults.kind = None
    yield Faults
    Faults.kind = None


def _raw(target):
    """A connection to the history outside the Store, in the store's SQL."""
    if store_postgres.is_url(target):
        return contextlib.closing(store_postgres.Connection(target))
    return contextlib.closing(sqlite3.connect(target, isolation_level=None))


def _claim(target, instance):
    """Another server's claim on the history, held until released."""
    if store_postgres.is_url(target):
        conn = store_postgres.Connection(target, instance)
        conn.execute("SELECT 1")  # opens it, taking the instance's lock
        return conn
    from mcpbrowser.core import instances

    return instances.claim(target, instance)


def _recovered(store, seconds=10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        store.flush()
        if store.fault is None:
            store.flush()
            return True
        time.sleep(0.05)
    return False


@settings(max_examples=25,  # it resets Faults per example; generating plans is slow on a loaded machine
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(plan=store_fault_plans(sorted(FAULTS)))
def test_every_answer_says_truly_whether_its_call_is_recorded(faulty, tmp_path_factory, plan):
    faulty.kind = None
    db = str(tmp_path_factory.mktemp("faults") / "h.db")
    core = fake_core(db=db)
    answers = []
    try:
        core.start()
        session = core.call("create_session")["sessionId"]
        for step in plan:
            if isinstance(step, tuple):
                faulty.kind = step[1]
            elif step == "heal":
                faulty.kind = None
            elif step == "settle":
                core.store.flush()
            else:
                args = {"sessionId": session, "url": "http://x.test/"} if step == "navigate" else {}
                if step == "bad_call":
                    args = {"sessionId": "no-such-session", "url": "http://x.test/"}
                # Faults never reach a call: navigate and list_sessions work, the bad call fails for its own reason.
                faulted_before = core.store.fault is not None
                fut = core.submit("list_sessions" if step == "list_sessions" else "navigate", args)
                exc = fut.exception(10)
                faulted_throughout = faulted_before and core.store.fault is not None
                if step == "bad_call":
                    assert exc is not None and exc.code == "SESSION_NOT_FOUND"
                    answer = exc.to_dict()
                else:
                    assert exc is None
                    answer = fut.result()
                    assert ("notRecorded" in answer) == ("notRecorded" in answer["meta"])
                if faulted_throughout:  # the fault was known when it was answered: its rows are not kept
                    assert answer["meta"]["recorded"] is False
                answers.append(answer)
        for answer in answers:  # each call's row is queued after its answer (the capture comes first)
            core.recorder.wait_recorded(answer["refId"])
        faulty.kind = None
        assert _recovered(core.store)
        recorded = {ref for (ref,) in core.store.query("SELECT ref_id FROM responses")}
        requested = {ref for (ref,) in core.store.query("SELECT ref_id FROM requests")}
    finally:
        faulty.kind = None
        core.close()
    for answer in answers:
        said = answer["meta"].get("recorded", True)
        assert said == (answer["refId"] in recorded), answer
        assert said == (answer["refId"] in requested), answer
        if not said:
            assert answer["meta"]["notRecorded"]["errorCode"] in {"DISK_FULL", "HISTORY_IO_ERROR", "HISTORY_BUSY",
                                                                  "HISTORY_READ_ONLY"}
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_call_answered_not_recorded_loses_the_request_row_already_written(faulty, tmp_path):
    """history.md: a call answered while writes fail is not recorded, and no row of it is kept once space returns:
    its request row, written before the fault, goes too (store.claim)."""
    store = Store(str(tmp_path / "h.db"))
    row = "INSERT INTO requests VALUES (?, NULL, 'navigate', '{}', ?)"
    try:
        store.write(row, ("before", now_ms()), ref="before")
        assert store.flush() and store.query("SELECT ref_id FROM requests") == [("before",)]
        faulty.kind = "full"
        store.write(row, ("later", now_ms()), ref="later")
        store.flush()
        assert store.claim("before")["errorCode"] == "DISK_FULL"  # its call is answered "not recorded"
        faulty.kind = None
        assert _recovered(store)
        assert store.query("SELECT ref_id FROM requests") == [("later",)]
    finally:
        store.close()


def test_while_writes_fail_the_newest_writes_no_answer_waits_for_are_kept(faulty, tmp_path, monkeypatch):
    """history.md: while the disk is full the resume state and diff cursors wait for it, the newest PENDING_MAX."""
    monkeypatch.setattr(store_module, "PENDING_MAX", 3)
    store = Store(str(tmp_path / "h.db"))
    try:
        faulty.kind = "full"
        for n in range(6):
            store.write("INSERT INTO sessions (session_id, created_at, last_activity, state) VALUES (?, 0, 0, 'x')",
                        (f"s{n}",))
            store.flush()
        assert store.fault is not None
        faulty.kind = None
        assert _recovered(store)
        assert {r[0] for r in store.query("SELECT session_id FROM sessions")} == {"s3", "s4", "s5"}
    finally:
        store.close()


def test_a_fault_is_logged_once_and_its_recovery_once(faulty, tmp_path, caplog):
    store = Store(str(tmp_path / "h.db"))
    try:
        faulty.kind = "full"
        for i in range(20):
            store.write("INSERT INTO requests VALUES (?, 's', 'navigate', '{}', 1)", (f"r{i}",), ref=f"r{i}")
            store.flush()
        assert store.fault["errorCode"] == "DISK_FULL"
        faulty.kind = None
        assert _recovered(store)
        # Answered while healthy, so kept and written once the disk recovered.
        assert store.query("SELECT COUNT(*) FROM requests")[0][0] == 20
    finally:
        store.close()
    events = [getattr(r, "event", None) for r in caplog.records]
    assert events.count("store_fault") == 1 and events.count("store_recovered") == 1


def test_a_wrong_statement_is_skipped_not_taken_for_a_fault(db_target):
    store = Store(db_target)
    try:
        store.write("INSERT INTO requests VALUES ('first', 's', 'navigate', '{}', 1)")
        store.write("INSERT INTO no_such_table VALUES (1)")
        store.write("INSERT INTO requests VALUES ('first', 's', 'navigate', '{}', 1)")  # a constraint
        store.write("INSERT INTO requests VALUES ('kept', 's', 'navigate', '{}', 1)")
        store.flush()
        assert store.fault is None
        assert store.query("SELECT ref_id FROM requests ORDER BY ref_id") == [("first",), ("kept",)]
    finally:
        store.close()


def test_a_snapshot_is_stored_once_compressed_and_reads_back(db_target):
    from mcpbrowser.core.history import History

    store = Store(db_target)
    history = History(store)
    page = "- heading \"Docs\" [level=1]\n" + "".join(f"- link \"Section {i}\" [ref=e{i}]\n" for i in range(500))
    try:
        for ref in ("a", "b", "c"):
            store.write("INSERT INTO requests VALUES (?, 's', 'click', '{}', 1)", (ref,))
            store.write("INSERT INTO responses (ref_id, status, timestamp, snapshot_hash) VALUES (?, 'ok', 1, ?)",
                        (ref, Snapshot(page)))
        assert store.query("SELECT COUNT(*), SUM(LENGTH(data)) FROM snapshots")[0][0] == 1
        stored = store.query("SELECT LENGTH(data), size FROM snapshots")[0]
        assert stored[1] == len(page.encode()) and stored[0] * 5 < stored[1]
        assert all(history.stored_page(ref) == ("s", page.encode()) for ref in ("a", "b", "c"))
    finally:
        store.close()


def test_a_snapshot_written_inline_by_an_earlier_version_still_reads(tmp_path):
    from mcpbrowser.core.history import History

    path = str(tmp_path / "old.db")
    with sqlite3.connect(path) as conn:  # version 3: snapshots inline in responses
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        for version in (1, 2, 3):
            for statement in SqliteBackend.MIGRATIONS[version]:
                conn.execute(statement)
            conn.execute("INSERT INTO schema_version VALUES (?)", (version,))
        conn.execute("INSERT INTO requests VALUES ('old', 's', 'navigate', '{}', 1)")
        conn.execute("INSERT INTO responses VALUES ('old', 'ok', NULL, ?, NULL, NULL, 1)", (b"- old page",))
    store = Store(path)
    try:
        assert History(store).stored_page("old") == ("s", b"- old page")
    finally:
        store.close()


def test_pruning_and_start_up_leave_a_live_servers_sessions_alone(db_target):
    from mcpbrowser.core import instances
    from mcpbrowser.timers import now_ms

    path = db_target
    Store(path).close()
    old = now_ms() - 30 * 86_400_000
    live = _claim(path, "a" * 32)  # another server, running (its lock is held)
    with _raw(path) as conn:
        for session, instance in (("live", "a" * 32), ("gone", "b" * 32)):
            conn.execute("INSERT INTO sessions (session_id, created_at, last_activity, state, instance) "
                         "VALUES (?, ?, ?, 'active', ?)", (session, old, old, instance))
            conn.execute("INSERT INTO requests VALUES (?, ?, 'navigate', '{}', ?)", (f"{session}-call", session, old))
    try:
        store = Store(path, retention_days=7)
        try:
            states = dict(store.query("SELECT session_id, state FROM sessions"))
            assert states == {"live": "active", "gone": "closed"}
            assert store.query("SELECT ref_id FROM requests") == [("live-call",)]
        finally:
            store.close()
    finally:
        live.close() if store_postgres.is_url(path) else instances.release(live)
    if store_postgres.is_url(path):
        # PostgreSQL frees a closed connection's advisory lock once its backend process has ended, a moment
        # after the client closed it (later under load): wait for that, as a server restarted later would.
        registry, deadline = store_postgres.Registry(path), time.monotonic() + 10
        while registry.alive("a" * 32) and time.monotonic() < deadline:
            time.sleep(0.05)
    store = Store(path, retention_days=7)  # its server is gone now: its session closes and its calls go
    try:
        assert store.query("SELECT state FROM sessions WHERE session_id = 'live'") == [("closed",)]
        assert store.query("SELECT ref_id FROM requests") == []
    finally:
        store.close()


def test_servers_creating_the_key_file_at_once_agree_on_one_whole_key(tmp_path):
    import threading

    from mcpbrowser.sealing import load_key

    # Threads stand for the processes: the race is in the filesystem, and a barrier lines them up.
    for round_ in range(100):
        path = str(tmp_path / f"h{round_}.db.key")
        start, keys = threading.Barrier(8), []

        def open_store(path=path, start=start, keys=keys):
            start.wait()
            keys.append(load_key(path))

        threads = [threading.Thread(target=open_store) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(set(keys)) == 1 and len(keys[0]) == 32, round_
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


def test_an_empty_key_file_left_by_an_interrupted_start_is_replaced(tmp_path):
    from mcpbrowser.sealing import load_key

    path = str(tmp_path / "h.db.key")
    open(path, "wb").close()
    assert len(load_key(path)) == 32 and load_key(path) == load_key(path)


def test_a_snapshot_after_a_small_change_is_stored_as_that_change_and_reads_back_exactly(db_target):
    from mcpbrowser.core.history import History

    store = Store(db_target, retention_days=1)
    history = History(store)
    page = "".join(f"- link \"Section {i} of the library\" [ref=e{i}]\n" for i in range(800))
    after = page.replace("Section 400 ", "Section 400 (hovered) ") + "- text: tail without newline"
    try:
        for ref, text in (("nav", page), ("click", after)):
            store.write("INSERT INTO requests VALUES (?, 's', 'click', '{}', ?)", (ref, now_ms()))
            store.write("INSERT INTO responses (ref_id, status, timestamp, snapshot_hash) VALUES (?, 'ok', 1, ?)",
                        (ref, Snapshot(text, "s")))
        (whole, delta) = [row[0] for row in store.query("SELECT LENGTH(data) FROM snapshots ORDER BY base IS NOT NULL")]
        assert delta * 10 < whole
        assert history.stored_page("nav")[1] == page.encode() and history.stored_page("click")[1] == after.encode()
        store.write("DELETE FROM responses WHERE ref_id = 'nav'")  # the base outlives its own call: a change needs it
        store.flush()
        with _raw(store.path) as conn:
            store._drop_before(conn, 0)  # orphans go, bases stay
        assert history.stored_page("click")[1] == after.encode()
    finally:
        store.close()


def test_a_gone_servers_lock_file_is_swept_at_start_and_a_live_ones_kept(tmp_path):
    from mcpbrowser.core import instances

    path = str(tmp_path / "h.db")
    Store(path).close()
    live = instances.claim(path, "c" * 32)
    dead = instances.claim(path, "d" * 32)
    os.close(dead[0])  # as a crash leaves it: the file stays, the lock is gone
    try:
        store = Store(path)
        try:
            names = sorted(os.listdir(path + ".instances"))
            assert names == sorted(["c" * 32 + ".lock", store.instance + ".lock"])
        finally:
            store.close()
    finally:
        instances.release(live)


def test_a_failure_in_the_after_call_work_still_writes_the_calls_record(tmp_path, monkeypatch):
    # The capture after a call raised (an element count that met a test double): the response row
    # was never written, though the answer had promised it (meta.recorded).
    from mcpbrowser.session import snapshots

    def broken(state, field_edit=None):
        raise RuntimeError("capture broke")

    monkeypatch.setattr(snapshots, "capture_snapshot", broken)
    core = fake_core(db=str(tmp_path / "h.db"))
    try:
        core.start()
        session = core.call("create_session")["sessionId"]
        answer = core.call("navigate", {"sessionId": session, "url": "http://x.test/"})
        assert answer["meta"].get("recorded", True) is True
        core.recorder.wait_recorded(answer["refId"], timeout=5)
        core.store.flush()
        recorded = {ref for (ref,) in core.store.query("SELECT ref_id FROM responses")}
        assert answer["refId"] in recorded
    finally:
        core.close()


def test_a_statement_that_raises_anything_is_skipped_and_the_writer_goes_on(db_target):
    # A parameter the writer cannot take raised out of its loop and ended the writer thread: every
    # later write was lost and every reader waited for a flush that never came (issue 49).
    store = Store(db_target)
    try:
        store.write("INSERT INTO responses (ref_id, status, timestamp, snapshot_hash) VALUES ('bad', 'ok', 1, ?)",
                    (Snapshot(None),))  # its text cannot be encoded: AttributeError, not a sqlite3.Error
        # A value the driver cannot send: psycopg says so without an SQLSTATE, which was taken for a
        # database out of reach, the write kept and tried again forever, recording stopped.
        store.write("INSERT INTO requests VALUES ('odd', 's', 'navigate', ?, 1)", (object(),))
        store.write("INSERT INTO requests VALUES ('kept', 's', 'navigate', '{}', 1)")
        assert store.flush(timeout=5)
        assert store.fault is None
        assert store.query("SELECT ref_id FROM requests") == [("kept",)]
        assert store.query("SELECT ref_id FROM responses") == []
    finally:
        store.close()


def test_a_lone_surrogate_in_a_row_is_stored_as_a_replacement_not_lost(db_target):
    from mcpbrowser.core.history import History

    store = Store(db_target)
    try:
        store.write("INSERT INTO requests VALUES ('r', 's', 'click', ?, 1)", ('{"selector":"x\ud800"}',), ref="r")
        store.write("INSERT INTO responses (ref_id, status, timestamp, snapshot_hash) VALUES ('r', 'ok', 1, ?)",
                    (Snapshot("- paragraph: x\udc00y\n", "s"),), ref="r")
        store.write("INSERT INTO console_logs (ref_id, level, message, timestamp, location) VALUES "
                    "('r', 'log', ?, 1, '')", ("before \ud800 after",), ref="r")
        assert store.flush(timeout=5)
        assert store.query("SELECT params FROM requests") == [('{"selector":"x\ufffd"}',)]
        assert History(store).stored_page("r") == ("s", "- paragraph: x\ufffdy\n".encode())
        assert store.query("SELECT message FROM console_logs") == [("before \ufffd after",)]
    finally:
        store.close()


def test_a_call_whose_record_cannot_be_written_whole_still_gets_its_row(tmp_path, monkeypatch):
    # The response row raised as it was built (a value JSON cannot hold): no row, and a reader of the
    # refId waited 10 s for a record that would never come (issue 49).
    from mcpbrowser.core.history import History

    def broken(self, *args, **kwargs):
        raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")

    monkeypatch.setattr(History, "response", broken)
    core = fake_core(db=str(tmp_path / "h.db"))
    try:
        core.start()
        session = core.call("create_session")["sessionId"]
        answer = core.call("navigate", {"sessionId": session, "url": "http://x.test/"})
        started = time.monotonic()
        core.recorder.wait_recorded(answer["refId"], timeout=5)
        assert time.monotonic() - started < 2
        rows = core.store.query("SELECT status, error_message FROM responses WHERE ref_id = ?", (answer["refId"],))
        assert rows and rows[0][0] == "ok" and "UnicodeEncodeError" in rows[0][1]
    finally:
        core.close()
