"""SQLite history of every tool call: one writer thread, readers on any thread.

Threads: `write` and `flush` may be called from any thread; the store-writer
thread owns the only write connection and commits queued statements in
batches, so a session thread never waits on the disk. Readers call `query`
from any thread on their own connection; it first waits for queued writes, so
a read sees every write enqueued before it (read-your-writes).
Blobs are stored exactly as produced; parsing happens only on read.
"""

import json
import os
import queue
import sqlite3
import sys
import threading
import uuid
from concurrent.futures import Future
from typing import Any

from mcpbrowser.logs import log
from mcpbrowser.sealing import load_key, seal, unseal
from mcpbrowser.timers import now_ms

# Forward migrations: version -> statements. A database is brought from its
# recorded version to the newest in one transaction per step; never edit a
# released step, add a new one.
MIGRATIONS = {
    1: [
        """CREATE TABLE sessions (session_id TEXT PRIMARY KEY, created_at INTEGER NOT NULL,
           last_activity INTEGER NOT NULL, state TEXT NOT NULL, metadata TEXT NOT NULL DEFAULT '{}')""",
        """CREATE TABLE requests (ref_id TEXT PRIMARY KEY, session_id TEXT, tool_name TEXT NOT NULL,
           params TEXT NOT NULL, timestamp INTEGER NOT NULL)""",
        """CREATE TABLE responses (ref_id TEXT PRIMARY KEY, status TEXT NOT NULL, result BLOB,
           page_snapshot BLOB, console_logs BLOB, error_message TEXT, timestamp INTEGER NOT NULL)""",
        """CREATE TABLE console_logs (id INTEGER PRIMARY KEY AUTOINCREMENT, ref_id TEXT NOT NULL,
           level TEXT NOT NULL, message TEXT NOT NULL, timestamp INTEGER NOT NULL, location TEXT)""",
        """CREATE TABLE diff_cursors (ref_id TEXT PRIMARY KEY, cursor_position INTEGER NOT NULL,
           last_snapshot_hash TEXT NOT NULL, last_read INTEGER NOT NULL)""",
        "CREATE INDEX requests_by_session ON requests (session_id, timestamp)",
        "CREATE INDEX requests_by_time ON requests (timestamp)",
        "CREATE INDEX console_by_ref ON console_logs (ref_id)",
    ],
    2: [
        # Beyond the seed: what resume_session needs to bring a session back.
        """CREATE TABLE session_state (session_id TEXT PRIMARY KEY, storage_state BLOB NOT NULL,
           url TEXT NOT NULL, updated_at INTEGER NOT NULL)""",
    ],
    3: [
        # Logins saved by name (save_state), per client: owner '' is the server's own.
        """CREATE TABLE named_states (owner TEXT NOT NULL, name TEXT NOT NULL, storage_state BLOB NOT NULL,
           summary TEXT NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (owner, name))""",
    ],
}
SCHEMA_VERSION = max(MIGRATIONS)
BATCH = 200  # statements per commit at most: bounds how long a flush waits


def default_path():
    """history.db under the user's data directory."""
    if sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Application Support")
    elif sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~")
    else:
        base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return os.path.join(base, "mcpbrowser", "history.db")


def migrate(conn):
    """Bring the schema to SCHEMA_VERSION; returns the version found."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    found = row[0] or 0
    if found > SCHEMA_VERSION:
        raise RuntimeError(f"the database has schema version {found}, newer than this "
                           f"mcpbrowser understands ({SCHEMA_VERSION}); upgrade mcpbrowser")
    for version in range(found + 1, SCHEMA_VERSION + 1):
        conn.execute("BEGIN")
        for statement in MIGRATIONS[version]:
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
        conn.execute("COMMIT")
    return found


class Store:
    """The history database."""

    def __init__(self, path, *, retention_days=0, max_mb=0):
        if path == ":memory:":
            # Several connections must see one in-memory database: a named shared cache.
            self._target, self._uri = f"file:mcpbrowser-{uuid.uuid4().hex}?mode=memory&cache=shared", True
            self._key = os.urandom(32)
        else:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self._target, self._uri = path, False
            self._key = load_key(path + ".key")
            if not os.path.exists(path):
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))  # history is private
        self.path = path
        self.retention_days = retention_days
        self.max_mb = max_mb
        self._local = threading.local()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        writer = self._connect()
        writer.execute("PRAGMA auto_vacuum = INCREMENTAL")  # takes effect on a new database only
        if path != ":memory:":
            writer.execute("PRAGMA journal_mode=WAL")
            writer.execute("PRAGMA synchronous=NORMAL")  # durable across a process crash, fast
        migrate(writer)
        self.restarted = writer.execute(
            "SELECT COUNT(*) FROM sessions WHERE state = 'active'").fetchone()[0]
        writer.execute("UPDATE sessions SET state = 'closed', metadata = json_set(metadata, "
                       "'$.closeReason', 'server_restart') WHERE state = 'active'")
        self._prune(writer)
        self._writer = threading.Thread(target=self._write_loop, args=(writer,),
                                        name="store-writer", daemon=True)
        self._writer.start()

    def _connect(self):
        # Autocommit mode: the writer opens and commits its own batches explicitly.
        conn = sqlite3.connect(self._target, uri=self._uri, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 5000")
        return conn

    # -- ANY THREAD ------------------------------------------------------------

    def write(self, sql, params=()):
        """Queue one statement for the writer thread."""
        if not self._closed:
            self._queue.put((sql, params))

    def flush(self, timeout=10.0):
        """Wait until every statement queued so far is committed."""
        if self._closed:
            return
        done: Future[None] = Future()
        self._queue.put(done)
        done.result(timeout)

    def query(self, sql, params=()):
        """Rows for a SELECT, after queued writes are committed."""
        self.flush()
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn.execute(sql, params).fetchall()

    def seal(self, data):
        return seal(self._key, data)

    def unseal(self, blob):
        return unseal(self._key, blob)

    def close(self):
        """Commit what is queued and stop the writer. Idempotent."""
        if self._closed:
            return
        self.flush()
        self._closed = True
        self._queue.put(None)
        self._writer.join(5)

    # -- STORE-WRITER THREAD ---------------------------------------------------

    def _write_loop(self, conn):
        writes, stop = 0, False
        while not stop:
            batch = [self._queue.get()]
            while len(batch) < BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            barriers = []
            conn.execute("BEGIN")
            for item in batch:
                if item is None:
                    stop = True
                elif isinstance(item, Future):
                    barriers.append(item)
                else:
                    try:
                        conn.execute(*item)
                        writes += 1
                    except sqlite3.Error as exc:  # one bad row must not lose the batch
                        log.error("history write failed", extra={"event": "store_error", "error": str(exc)})
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                log.error("history commit failed", extra={"event": "store_error", "error": str(exc)})
            for barrier in barriers:
                barrier.set_result(True)
            if writes >= 1000:
                writes = 0
                self._prune(conn)
        conn.close()

    def _prune(self, conn):
        """Drop the oldest history past --retention-days or --db-max-mb."""
        if self.retention_days:
            cutoff = now_ms() - self.retention_days * 86_400_000
            self._drop_before(conn, cutoff)
        if self.max_mb and self.path != ":memory:":
            while self._size_mb(conn) > self.max_mb:
                row = conn.execute("SELECT timestamp FROM requests ORDER BY timestamp "
                                   "LIMIT 1 OFFSET (SELECT COUNT(*) / 10 FROM requests)").fetchone()
                if row is None:
                    break
                self._drop_before(conn, row[0] + 1)
                conn.execute("PRAGMA incremental_vacuum")

    @staticmethod
    def _size_mb(conn):
        pages = conn.execute("PRAGMA page_count").fetchone()[0] - conn.execute("PRAGMA freelist_count").fetchone()[0]
        return pages * conn.execute("PRAGMA page_size").fetchone()[0] / 1_048_576

    @staticmethod
    def _drop_before(conn, cutoff):
        old = "SELECT ref_id FROM requests WHERE timestamp < ?"
        conn.execute("BEGIN")
        for table in ("responses", "console_logs", "diff_cursors"):
            conn.execute(f"DELETE FROM {table} WHERE ref_id IN ({old})", (cutoff,))
        conn.execute("DELETE FROM requests WHERE timestamp < ?", (cutoff,))
        conn.execute("COMMIT")


def dumps(value):
    """The exact bytes we store for a JSON value."""
    return json.dumps(value, separators=(",", ":")).encode()
