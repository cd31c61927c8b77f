"""The history in a SQLite file, the embedded default, or in memory (`--db :memory:`). Threads: as store.py.

A backend of the store (core/store_backend.py) in SQLite's dialect; which servers share the file is an
`flock` each (core/instances.py). Readers open their own connections (WAL: a read never blocks the writer)."""

import os
import sqlite3
import uuid

from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from mcpbrowser.core import instances
from mcpbrowser.core.store_backend import Backend
from mcpbrowser.sealing import load_key

# What a failed statement means, from SQLite's primary result code (the low byte).
FAULTS = {13: "DISK_FULL", 10: "HISTORY_IO_ERROR", 8: "HISTORY_READ_ONLY", 5: "HISTORY_BUSY", 6: "HISTORY_BUSY",
          14: "HISTORY_IO_ERROR"}
STATEMENT_CODES = {1, 12, 19, 20, 25}  # SQLITE_ERROR, NOTFOUND, CONSTRAINT, MISMATCH, RANGE
BUSY_S = 5  # how long a statement waits for another connection's lock
OLDEST = (3, 24)  # ON CONFLICT upserts, which the store's shared statements use


class SqliteBackend(Backend):
    """A SQLite file (WAL, one writer connection) or a named in-memory database that its connections share."""

    errors = (sqlite3.Error,)
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
        4: [
            # Each distinct page snapshot once, zlib-compressed, by the SHA-256 of its text; a response names it
            # in snapshot_hash (older rows keep page_snapshot). `base`: the whole one it is a change of, or NULL.
            "CREATE TABLE snapshots (hash TEXT PRIMARY KEY, data BLOB NOT NULL, size INTEGER NOT NULL, base TEXT)",
            "ALTER TABLE responses ADD COLUMN snapshot_hash TEXT",
            "CREATE INDEX responses_by_snapshot ON responses (snapshot_hash)",
            # The server process that opened the session: each closes or prunes only what no live server owns.
            "ALTER TABLE sessions ADD COLUMN instance TEXT",
        ],
        5: [
            # The files a call's answer named, so the file retention can say on the call's record one was removed.
            """CREATE TABLE files (path TEXT PRIMARY KEY, ref_id TEXT NOT NULL, session_id TEXT, created_at INTEGER
               NOT NULL, removed_at INTEGER, removed_reason TEXT)""",
            "CREATE INDEX files_by_ref ON files (ref_id)",
        ],
        6: [
            # Which client made a call (a call without a session has no session row to tell): HTTP's owners
            # have a row, the server's own calls none.
            "CREATE TABLE call_owners (ref_id TEXT PRIMARY KEY, owner TEXT NOT NULL)",
        ],
    }
    SCHEMA_TABLE = "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"
    # The write lock at once: no other server prunes a page between a batch's read and its rows, nor changes a
    # row a swap tests.
    BEGIN = "BEGIN IMMEDIATE"

    # Metadata is JSON in a TEXT column, changed in place by SQLite's JSON functions; `IS ?` matches NULL to NULL.
    CLAIM_SESSION = ("UPDATE sessions SET state = 'active', instance = ?, last_activity = ?, "
                     "metadata = json_set(metadata, '$.server', ?) "
                     "WHERE session_id = ? AND state = ? AND instance IS ?")
    CLOSE_SESSION = ("UPDATE sessions SET state = 'closed', last_activity = ?, metadata = "
                     "json_set(json_remove(metadata, '$.throttle'), '$.closeReason', ?) WHERE session_id = ?")
    KEEP_THROTTLE = "UPDATE sessions SET metadata = json_set(metadata, '$.throttle', json(?)) WHERE session_id = ?"
    CLOSE_ORPHAN = ("UPDATE sessions SET state = 'closed', metadata = json_set(metadata, '$.closeReason', "
                    "'server_restart') WHERE session_id = ?")
    # REPLACE deletes the row and inserts it again, with the next rowid: the cursor marked last is the newest.
    MARK_READ = "INSERT OR REPLACE INTO diff_cursors VALUES (?, ?, ?, ?)"

    def __init__(self, path):
        self.path = self.label = path
        self.shared = path != ":memory:"
        self._lock_file = None  # this server's flock on the file's instance registry
        if self.shared:
            self._target, self._uri = path, False
        else:
            # Several connections must see one in-memory database: a named shared cache.
            self._target, self._uri = f"file:mcpbrowser-{uuid.uuid4().hex}?mode=memory&cache=shared", True

    def own_keys(self):
        if not self.shared:
            return [os.urandom(32)]  # nothing outlives the process: neither does its key
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        return [load_key(self.path + ".key")]

    def open(self, instance):
        if sqlite3.sqlite_version_info < OLDEST:
            raise RuntimeError(f"the history needs SQLite {'.'.join(map(str, OLDEST))} or newer; this Python's "
                               f"is {sqlite3.sqlite_version}")
        if self.shared:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            if not os.path.exists(self.path):
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))  # history is private
            self._lock_file = instances.claim(self.path, instance)
        writer = self.connect()
        if not writer.execute("PRAGMA page_count").fetchone()[0]:  # a new database (on another, it writes)
            writer.execute("PRAGMA auto_vacuum = INCREMENTAL")
        if self.shared:
            # Switching a new file to WAL takes it whole: a server starting beside another that switches it is told
            # "locked" at once, without the busy timeout's wait (2 of 80 starts in pairs). Asked again for as long.
            for attempt in Retrying(retry=retry_if_exception_type(sqlite3.OperationalError), reraise=True,
                                    stop=stop_after_delay(BUSY_S), wait=wait_fixed(0.05)):
                with attempt:
                    writer.execute("PRAGMA journal_mode=WAL")
            writer.execute("PRAGMA synchronous=NORMAL")  # durable across a process crash, fast
        self.migrate(writer)
        return writer

    def connect(self):
        conn = sqlite3.connect(self._target, uri=self._uri, check_same_thread=False, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_S * 1000}")
        if self._uri:
            # A shared cache's table locks are refused at once, never waited for as busy_timeout waits: a read
            # that met the writer's batch failed, or the batch did. Read uncommitted, a reader takes no lock (it
            # may see a batch not yet committed, which in memory fails only with the process).
            conn.execute("PRAGMA read_uncommitted = 1")
        return conn

    def alive(self, instance):
        return self._lock_file is not None and instances.alive(self.path, instance)

    def sweep(self):
        if self._lock_file is not None:
            instances.sweep(self.path)

    def release(self):
        instances.release(self._lock_file)

    def size_mb(self, conn):
        """The database's pages in use, in MB (a freed page counts once the vacuum gave it back)."""
        if not self.shared:
            return None
        pages = conn.execute("PRAGMA page_count").fetchone()[0] - conn.execute("PRAGMA freelist_count").fetchone()[0]
        return pages * conn.execute("PRAGMA page_size").fetchone()[0] / 1_048_576

    def vacuum(self, conn):
        conn.execute("PRAGMA incremental_vacuum")

    def fault_code(self, exc):
        code = getattr(exc, "sqlite_errorcode", None)
        fault = "HISTORY_ERROR" if code is None else FAULTS.get(code & 0xFF, "HISTORY_ERROR")
        if fault == "HISTORY_IO_ERROR" and (self._free() or 1 << 20) < 1 << 20:
            fault = "DISK_FULL"  # SQLite reports some writes on a full disk as a plain I/O error
        return fault

    def statement_error(self, exc):
        code = getattr(exc, "sqlite_errorcode", None)
        return code is None or code & 0xFF in STATEMENT_CODES

    def _free(self):
        """Bytes free to this user where the file is, or None when unknown (or in memory)."""
        if not self.shared:
            return None
        try:
            st = os.statvfs(os.path.dirname(os.path.abspath(self.path)))
        except (OSError, AttributeError):
            return None
        return st.f_bavail * st.f_frsize

    def free_text(self):
        free = self._free()
        return "free space unknown" if free is None else f"{free // 1024} KB free"

    def cannot_open(self, cause, exc):
        return (f"the history database {self.path} cannot be opened: {cause} ({self.free_text()}); "
                "free space there, or point --db elsewhere")
