"""The history of every tool call: one writer thread, readers on any thread, on a backend of its --db.

Threads: `write` and `flush` may be called from any thread; the store-writer thread owns the only write
connection and commits queued statements in batches, so a session thread never waits on the disk. `query`
runs on any thread on its own connection, after the writes queued before it (read-your-writes).
What differs between databases is the backend's (core/store_backend.py), asked, never switched on."""

import contextlib
import difflib
import hashlib
import json
import os
import queue
import socket
import threading
import time
import uuid
import zlib
from collections import namedtuple
from concurrent.futures import Future
from typing import Any

from mcpbrowser.core.store_backend import SCHEMA_VERSION, StoreError  # noqa: F401 (SCHEMA_VERSION: the store's)
from mcpbrowser.core.store_postgres import PostgresBackend, is_url
from mcpbrowser.core.store_sqlite import SqliteBackend
from mcpbrowser.errors import HistoryUnavailable
from mcpbrowser.logs import log
from mcpbrowser.page_strings import valid_text
from mcpbrowser.sealing import is_legacy, key_id, seal, unseal_any
from mcpbrowser.timers import now_ms

BATCH = 200  # statements per commit at most: bounds how long a flush waits
# What a fault code says, in the answer of a call that could not be recorded and in the log.
FAULT_TEXT = {
    "DISK_FULL": "the disk under the history database is full",
    "HISTORY_IO_ERROR": "the history database cannot be written (an I/O error)",
    "HISTORY_READ_ONLY": "the history database is read-only",
    "HISTORY_BUSY": "another process holds the history database locked",
    "HISTORY_UNREACHABLE": "the history database server cannot be reached",
    "HISTORY_ERROR": "the history database refused a write",
}
RETRY_S = 2.0  # while writes fail, how often the writer tries again (the queue's wait)
PENDING_MAX = 5000  # writes kept for a retry that no answer depended on (session rows, cursors); oldest go first
DROPPED_MEMORY = 20_000  # refIds answered "not recorded" that the writer still skips
BASES_KEPT = 64  # sessions whose last whole snapshot the writer keeps, for deltas
ZLIB_LEVEL = 6  # docs/history.md weighs the levels


# A page stored once by its hash (a second time, nothing happens): the same SQL on every backend.
STORE_PAGE = "INSERT INTO snapshots (hash, data, size, base) VALUES (?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING"


def open_backend(target):
    """The backend of a --db target: PostgreSQL's for a postgresql:// URL, else SQLite's (a file, or :memory:)."""
    return PostgresBackend(target) if is_url(target) else SqliteBackend(target)


class Snapshot:
    """A page snapshot as a statement's parameter: the writer stores it once by hash, compressed, and
    the statement gets the hash in its place (so compressing never runs on a call's path)."""

    __slots__ = ("text", "session", "hash", "whole", "delta")

    def __init__(self, text, session=None):
        self.text, self.session = text, session
        self.hash = None
        self.whole = None  # zlib of the text
        self.delta = None  # (zlib of its changes, the base's hash), when that is much smaller


# difflib's matcher (no junk heuristic) costs the product of the lines it compares: a huge or hostile page
# held the writer thread for minutes. The lines both snapshots share at the start and end are copied without
# it; what lies between goes to it only under this bound, else it is stored as new text.
DIFF_CELLS_MAX = 1_000_000


def snapshot_delta(base, text):
    """The text as changes of base: JSON ops, [start, end] copies base's lines, a string is new text."""
    old, new = base.splitlines(keepends=True), text.splitlines(keepends=True)
    shorter, head, tail = min(len(old), len(new)), 0, 0
    while head < shorter and old[head] == new[head]:
        head += 1
    while tail < shorter - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    old_mid, new_mid = old[head:len(old) - tail], new[head:len(new) - tail]
    ops: list[Any] = [[0, head]] if head else []
    if len(old_mid) * len(new_mid) <= DIFF_CELLS_MAX:
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old_mid, new_mid, autojunk=False).get_opcodes():
            if tag == "equal":
                ops.append([head + i1, head + i2])
            elif j2 > j1:
                ops.append("".join(new_mid[j1:j2]))
    elif new_mid:
        ops.append("".join(new_mid))
    if tail:
        ops.append([len(old) - tail, len(old)])
    return json.dumps(ops, separators=(",", ":")).encode()


def apply_delta(base, delta):
    old = base.splitlines(keepends=True)
    return "".join("".join(old[op[0]:op[1]]) if isinstance(op, list) else op for op in json.loads(delta))


def unpack_snapshot(data, base_data):
    """A stored snapshot's bytes: zlib whole, or zlib of a delta on its (whole) base."""
    if base_data is None:
        return zlib.decompress(data)
    return apply_delta(zlib.decompress(base_data).decode(), zlib.decompress(data)).encode()


_Write = namedtuple("_Write", "sql params ref")


class _Swap:
    """A conditional UPDATE whose caller waits for the number of rows it changed."""
    __slots__ = ("sql", "params", "done")

    def __init__(self, sql, params):
        self.sql, self.params = sql, params
        self.done: Future[int] = Future()


class Store:
    """The history database, on the backend its --db target names (`backend`)."""

    def __init__(self, path, *, retention_days=0, max_mb=0, keys=None):
        """keys: the sealing keys of --db-key-file (the first seals, every one opens); None: the backend's own."""
        self.instance = uuid.uuid4().hex  # this server process, as the sessions it opens record it
        # This server as a person knows it (list_sessions shows it to others): --http sets host:port once it listens.
        self.server = f"{socket.gethostname()} pid {os.getpid()}"
        self.path = path
        self.backend = open_backend(path)
        self.label = self.backend.label  # the database as logs and messages show it (a URL without its password)
        self.retention_days, self.max_mb = retention_days, max_mb
        self._local = threading.local()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        self.fault: dict[str, Any] | None = None  # why writes fail now ({errorCode, message}), or None
        self._dropped: dict[str, None] = {}  # refIds whose answers said "not recorded" (insertion-ordered)
        self._dropped_lock = threading.Lock()
        self._bases: dict[str, tuple[str, str]] = {}  # writer thread: session -> its last whole snapshot
        # The database must open with its schema current, else start-up fails saying where and how much is free
        # (a server without its history would hand out refIds no restart reads back). Once open, a full disk
        # only pauses recording (see _write_loop).
        try:
            self._keys = keys if keys is not None else self.backend.own_keys()
            if self.backend.shared:
                # Which key seals, by a hash of it: servers that must open each other's logins show one id.
                log.info("sealing key", extra={"event": "sealing_key", "keyId": key_id(self._keys[0]),
                                               "keys": len(self._keys)})
            writer = self.backend.open(self.instance)
        except (*self.backend.errors, OSError) as exc:
            cause = FAULT_TEXT[self.backend.fault_code(exc)] if isinstance(exc, self.backend.errors) \
                else exc.strerror or str(exc)
            raise RuntimeError(self.backend.cannot_open(cause, exc)) from None
        try:
            self._close_orphans(writer)
            self._prune(writer)
        except self.backend.errors as exc:
            self._faulted(exc)
        if self.fault is None:
            self._commit(writer, [])  # a probe: a full disk is said now, not at the first call
        self._writer = threading.Thread(target=self._write_loop, args=(writer,), name="store-writer", daemon=True)
        self._writer.start()

    # -- ANY THREAD ------------------------------------------------------------

    def write(self, sql, params=(), ref=None):
        """Queue one statement for the writer thread; ref: the refId of the call it records, if any."""
        if not self._closed:
            self._queue.put(_Write(sql, params, ref))

    def claim(self, ref):
        """Decide, as a call is answered, whether it is recorded: None (its rows are, or will be once a
        failing disk recovers) or the fault ({errorCode, message}) for which its rows are dropped."""
        fault = self.fault
        if fault is None:
            return None
        with self._dropped_lock:
            self._dropped[ref] = None
            while len(self._dropped) > DROPPED_MEMORY:
                del self._dropped[next(iter(self._dropped))]
        # Its request row may be in already: take it out, so no row says the call happened.
        self.write("DELETE FROM requests WHERE ref_id = ?", (ref,))
        self.write("DELETE FROM call_owners WHERE ref_id = ?", (ref,))
        return fault

    def flush(self, timeout=10.0):
        """Wait until every statement queued so far is committed (or failed: see `fault`)."""
        if self._closed:
            return True
        done: Future[bool] = Future()
        self._queue.put(done)
        return done.result(timeout)

    def write_now(self, sql, params=()):
        """Queue one statement and wait for it; raises WriteNotStored when it could not be stored."""
        self.write(sql, params)
        if not self.flush() or self.fault is not None:
            fault = self.fault or {"errorCode": "HISTORY_ERROR", "message": FAULT_TEXT["HISTORY_ERROR"]}
            raise WriteNotStored(fault)

    def swap(self, sql, params=(), timeout=10.0):
        """Run one conditional UPDATE on the writer's connection, in a transaction of its own after everything
        queued before it; the number of rows it changed. Raises errors.HistoryUnavailable when the database
        cannot decide now. Of two servers that read the same row and try, only the first finds it as read."""
        item = _Swap(sql, params)
        if not self._closed:
            self._queue.put(item)
        try:
            return item.done.result(timeout) if not self._closed else 0
        except Exception as exc:
            code = self.backend.fault_code(exc) if isinstance(exc, self.backend.errors) else "HISTORY_ERROR"
            raise self._unavailable("decide this", code) from None

    def query(self, sql, params=(), flush=True):
        """Rows for a SELECT, after queued writes are committed (flush=False: without waiting for them)."""
        if flush:
            self.flush()
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self.backend.connect()
        try:
            return conn.execute(sql, params).fetchall()
        except self.backend.errors as exc:  # the database away or locked, say: a tool answers it, retryable
            code = self.backend.fault_code(exc)
            if self.backend.statement_error(exc):  # the statement's own: the caller's to fix
                raise StoreError(code, True, str(exc)) from None
            raise self._unavailable("be read", code) from None

    def _unavailable(self, what, code):
        """HISTORY_UNAVAILABLE (retryable) for a read or a decision the database cannot give now."""
        return HistoryUnavailable(f"The history cannot {what} now: {FAULT_TEXT.get(code, FAULT_TEXT['HISTORY_ERROR'])} "
                                  f"({self.label}).", details={"cause": code, "retryAfterMs": int(RETRY_S * 1000)})

    def seal(self, data):
        return seal(self._keys[0], data)

    def unseal(self, blob):
        """(plaintext, stale: an older format or key, to seal again); ValueError when no key opens it."""
        plain, index = unseal_any(self._keys, blob)
        return plain, index > 0 or is_legacy(blob)

    def alive(self, instance):
        """Whether the server process that recorded `instance` still runs."""
        return instance == self.instance or self.backend.alive(instance)

    def close(self):
        """Commit what is queued and stop the writer. Idempotent."""
        if self._closed:
            return
        self.flush()
        self._closed = True
        self._queue.put(None)
        self._writer.join(5)
        self.backend.release()

    # -- STORE-WRITER THREAD ---------------------------------------------------

    def _write_loop(self, conn):
        # A failed write (full disk, I/O error, read-only, a lock held too long) never reaches a call: `fault`
        # goes on and the writes stay `pending`, tried again every RETRY_S in order. A call answered meanwhile
        # was told it is not recorded (claim), so its rows are dropped: the history holds what answers said.
        pending, writes, stop, tried = [], 0, False, 0.0
        while not stop:
            try:
                batch = [self._queue.get(timeout=RETRY_S if self.fault else None)]
            except queue.Empty:
                batch = []
            while len(batch) < BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            barriers, swaps = [], []
            for item in batch:
                if item is None:
                    stop = True
                elif isinstance(item, Future):
                    barriers.append(item)
                elif isinstance(item, _Swap):
                    swaps.append(item)
                else:
                    pending.append(item)
            with self._dropped_lock:
                pending = [w for w in pending if w.ref is None or w.ref not in self._dropped]
            # While faulted, try every RETRY_S (a probe when nothing waits), at the end, and when a reader waits;
            # not for another process's lock: each try waits out the busy timeout, and a reader must not wait twice.
            busy = self.fault is not None and self.fault["errorCode"] == "HISTORY_BUSY"
            due = self.fault is None or stop or (barriers and not busy) or time.monotonic() - tried >= RETRY_S
            if due and (pending or self.fault is not None):
                tried = time.monotonic()
                committed = self._commit(conn, pending)
                if committed:
                    writes += len(pending)
                    pending = []
                else:
                    pending = self._trim(pending)
            for barrier in barriers:
                barrier.set_result(self.fault is None)
            for swap in swaps:  # after the writes queued before it (the rows it may test)
                self._swap(conn, swap)
            if writes >= 1000 and self.fault is None:
                writes = 0
                try:
                    self._prune(conn)
                except self.backend.errors as exc:
                    self._faulted(exc)
        if pending:
            log.error("history writes lost at shutdown", extra={
                "event": "store_lost", "writes": len(pending), "calls": len({w.ref for w in pending if w.ref})})
        conn.close()

    def _commit(self, conn, writes):
        """Run writes in one transaction; True when committed. A statement that is itself wrong
        (a constraint, say) is logged and skipped; a fault of the database rolls back and keeps them."""
        # A pipelined backend (PostgreSQL) sends the batch at once, one round trip; a statement's own error
        # aborts it all, so it runs again a statement at a time, to skip that one. A connection found gone at
        # the first try is opened again once (nothing of it ran).
        backend = self.backend
        together = backend.pipelined
        reopen = backend.reconnects(conn)
        while True:
            try:
                self._run(conn, writes, together)
                break
            except backend.errors as exc:
                if conn.in_transaction:
                    with contextlib.suppress(*backend.errors):  # the transaction is gone with the failure
                        conn.execute("ROLLBACK")
                if together and backend.statement_error(exc):
                    together = False
                elif reopen and backend.fault_code(exc) == "HISTORY_UNREACHABLE":
                    reopen = False
                else:
                    self._faulted(exc)
                    return False
        if self.fault is not None:
            log.warning("history recording resumed", extra={"event": "store_recovered", "was": self.fault["errorCode"]})
            self.fault = None
        return True

    def _swap(self, conn, item):
        try:
            conn.execute(self.backend.BEGIN)
            changed = conn.execute(item.sql, item.params).rowcount
            conn.execute("COMMIT")
        except self.backend.errors as exc:
            if conn.in_transaction:
                with contextlib.suppress(*self.backend.errors):  # the transaction is gone with the failure
                    conn.execute("ROLLBACK")
            item.done.set_exception(exc)
        else:
            item.done.set_result(changed)

    def _run(self, conn, writes, together):
        """The writes in one transaction (together: sent at once); raises the database's error."""
        with conn.together() if together else contextlib.nullcontext():
            conn.execute(self.backend.BEGIN)
            # In the transaction (on SQLite, under its write lock), so no other server prunes a page between this
            # read and the rows that name it.
            known = self._stored(conn, writes)
            for item in writes:
                try:
                    self._execute(conn, item, known)
                except self.backend.errors as exc:
                    if together or not self.backend.statement_error(exc):
                        raise
                    # A statement that is itself wrong: one bad row must not lose the batch.
                    log.error("history write failed", extra={"event": "store_error", "error": str(exc)})
                except Exception as exc:  # nor a parameter it cannot take: raised, it would end this thread
                    log.error("history write failed", extra={"event": "store_error", "error": repr(exc)})
            if not writes:  # a probe: does a write go through now?
                conn.execute("INSERT INTO schema_version (version) VALUES (0)")
                conn.execute("DELETE FROM schema_version WHERE version = 0")
            conn.execute("COMMIT")

    def _execute(self, conn, item, known):
        try:
            conn.execute(item.sql, self._params(conn, item.params, known))
        except UnicodeEncodeError:
            # A lone surrogate in page text that reached us uncleaned: stored as U+FFFD, not lost.
            conn.execute(item.sql, self._params(conn, valid_text(item.params), known))

    def _params(self, conn, params, known):
        return tuple(self._snapshot(conn, p, known) if isinstance(p, Snapshot) else p for p in params)

    @staticmethod
    def _hash(snap):
        if snap.hash is None:
            try:
                raw = snap.text.encode()
            except UnicodeEncodeError:  # as _execute: a lone surrogate is stored as U+FFFD
                snap.text = valid_text(snap.text)
                raw = snap.text.encode()
            snap.hash = hashlib.sha256(raw).hexdigest()
        return snap.hash

    def _stored(self, conn, writes):
        """{hash: stored whole} of the batch's pages and of the bases a change would use: one read for the batch."""
        hashes = set()
        for snap in (p for w in writes for p in w.params if isinstance(p, Snapshot)):
            try:
                hashes.add(self._hash(snap))
            except Exception:
                continue  # its write fails when run, and is skipped there
            base = self._bases.get(snap.session) if snap.session else None
            if base is not None:
                hashes.add(base[0])
        if not hashes:
            return {}
        rows = conn.execute(f"SELECT hash, base IS NULL FROM snapshots WHERE hash IN ({', '.join('?' * len(hashes))})",
                            tuple(hashes)).fetchall()
        return {digest: bool(whole) for digest, whole in rows}

    def _snapshot(self, conn, snap, known):
        """Store a page snapshot once by hash, compressed; the hash names it in the row. As its changes against
        the session's last snapshot stored whole when that takes under half the room (never a change of a
        change: a read needs two rows at most). `known`: {hash: whole} of the stored pages (_stored)."""
        self._hash(snap)
        if snap.whole is None and snap.hash not in known:
            snap.whole = zlib.compress(snap.text.encode(), ZLIB_LEVEL)
            base = self._bases.get(snap.session) if snap.session else None
            if base is not None:
                delta = zlib.compress(snapshot_delta(base[1], snap.text), ZLIB_LEVEL)
                if len(delta) * 2 < len(snap.whole):
                    snap.delta = (delta, base[0])
        if snap.whole is None:
            return snap.hash
        size = len(snap.text.encode())
        if snap.delta is not None and known.get(snap.delta[1]):
            conn.execute(STORE_PAGE, (snap.hash, snap.delta[0], size, snap.delta[1]))
            known[snap.hash] = False
        else:
            conn.execute(STORE_PAGE, (snap.hash, snap.whole, size, None))
            known[snap.hash] = True
            if snap.session:
                self._bases[snap.session] = (snap.hash, snap.text)
                while len(self._bases) > BASES_KEPT:
                    del self._bases[next(iter(self._bases))]
        return snap.hash

    def _trim(self, pending):
        """Keep every write an answer depends on; of the rest, the newest PENDING_MAX."""
        loose = [w for w in pending if w.ref is None]
        if len(loose) <= PENDING_MAX:
            return pending
        drop = {id(w) for w in loose[:len(loose) - PENDING_MAX]}
        return [w for w in pending if id(w) not in drop]

    def _faulted(self, exc):
        """Writes fail: log it once (with its cause and the free space), answer calls 'not recorded'."""
        code = self.backend.fault_code(exc)
        if self.fault is not None and self.fault["errorCode"] == code:
            return
        self.fault = {"errorCode": code, "message": f"{FAULT_TEXT[code]} ({self.backend.free_text()}), so this call "
                      "was not recorded: its refId will not read back. Recording resumes by itself."}
        log.error("history writes fail; calls are answered but not recorded until they succeed again", extra={
            "event": "store_fault", "code": code, "error": str(exc), "path": self.label,
            "free": self.backend.free_text()})

    def _close_orphans(self, conn):
        """Close the sessions whose server is gone (all but those of live instances)."""
        rows = conn.execute("SELECT session_id, instance FROM sessions WHERE state = 'active'").fetchall()
        gone = [sid for sid, instance in rows if not (instance and self.alive(instance))]
        self.backend.sweep()
        if gone:
            conn.execute(self.backend.BEGIN)
            conn.executemany(self.backend.CLOSE_ORPHAN, [(s,) for s in gone])
            conn.execute("COMMIT")

    def _prune(self, conn):
        """Drop the oldest history past --retention-days or --db-max-mb, never another live server's open sessions."""
        if not (self.retention_days or self.max_mb):
            return
        rows = conn.execute("SELECT session_id, instance FROM sessions WHERE state = 'active' "
                            "AND instance IS NOT NULL AND instance != ?", (self.instance,)).fetchall()
        kept = [sid for sid, instance in rows if self.alive(instance)]
        if self.retention_days:
            cutoff = now_ms() - self.retention_days * 86_400_000
            self._drop_before(conn, cutoff, kept)
        # A backend that does not measure its size (an in-memory history) is not pruned by it.
        while self.max_mb and (self.backend.size_mb(conn) or 0) > self.max_mb:
            row = conn.execute("SELECT timestamp FROM requests ORDER BY timestamp "
                               "LIMIT 1 OFFSET (SELECT COUNT(*) / 10 FROM requests)").fetchone()
            if row is None or not self._drop_before(conn, row[0] + 1, kept):
                break
            self.backend.vacuum(conn)

    def _drop_before(self, conn, cutoff, kept=()):
        """Delete calls older than cutoff, except those of the sessions in kept; how many."""
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS kept_sessions (session_id TEXT PRIMARY KEY)")
        conn.execute("DELETE FROM kept_sessions")
        conn.executemany("INSERT INTO kept_sessions (session_id) VALUES (?) ON CONFLICT (session_id) DO NOTHING",
                         [(s,) for s in kept])
        old = ("SELECT ref_id FROM requests WHERE timestamp < ? AND (session_id IS NULL OR "
               "session_id NOT IN (SELECT session_id FROM kept_sessions))")
        conn.execute(self.backend.BEGIN)
        for table in ("responses", "console_logs", "diff_cursors", "call_owners"):
            conn.execute(f"DELETE FROM {table} WHERE ref_id IN ({old})", (cutoff,))
        dropped = conn.execute(f"DELETE FROM requests WHERE ref_id IN ({old})", (cutoff,)).rowcount
        # A file's row goes only once the file is gone: the row is how file_keeper.py knows the file is ours.
        conn.execute("DELETE FROM files WHERE removed_at IS NOT NULL AND ref_id NOT IN (SELECT ref_id FROM requests)")
        conn.execute("DELETE FROM snapshots WHERE hash NOT IN "
                     "(SELECT snapshot_hash FROM responses WHERE snapshot_hash IS NOT NULL) "
                     "AND hash NOT IN (SELECT base FROM snapshots WHERE base IS NOT NULL)")
        conn.execute("COMMIT")
        return dropped


class WriteNotStored(Exception):
    """A write that the caller waits for could not be stored; `fault` says why."""

    def __init__(self, fault):
        self.fault = fault
        super().__init__(fault["message"])


def dumps(value):
    """The exact bytes we store for a JSON value."""
    return json.dumps(value, separators=(",", ":")).encode()
