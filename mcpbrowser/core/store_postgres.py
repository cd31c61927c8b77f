"""The history on PostgreSQL (`--db postgresql://…`): a connection that speaks the store's SQL. Threads: as store.py.

The store and core/history.py write one dialect, SQLite's; this module is the one place
that knows PostgreSQL's, and turns each statement into it once (cached):
`?` placeholders into `%s`; `INSERT OR IGNORE` / `INSERT OR REPLACE` into `ON CONFLICT`
upserts on the table's primary key; `IS ?` into `IS NOT DISTINCT FROM`; `BEGIN
IMMEDIATE` into `BEGIN`; `temp.` into `pg_temp.`; and in DDL, INTEGER into BIGINT (times
are milliseconds), BLOB into BYTEA, AUTOINCREMENT into an identity. Tables read in
insertion order (`requests`, `diff_cursors`) get an identity column named `rowid`, and
SQLite's `json_set`, `json_remove` and `json` are defined as SQL functions for the
`'$.name'` paths the history uses.

Writes: the store's writer sends a batch at once, in psycopg's pipeline mode (`together`),
so a batch waits for one round trip, not one a statement; a statement's own error aborts
the batch there, and the writer runs it again a statement at a time, each under a savepoint.

Errors: every psycopg error becomes a `StoreError` carrying the store's fault code, so
nothing of psycopg's leaves the store. A connection that broke is opened again on its
next statement (the writer takes its instance lock again first).

The instance registry (issue 41) is an advisory lock: each server holds
`pg_advisory_lock(key of its instance)` on its writer's connection, and PostgreSQL
releases it when that connection ends, however the server ended (`kill -9`, a lost
machine: once the database notices the connection is gone). A server is alive while
its lock is held; no clock, no heartbeat, no table to sweep. Advisory locks are per
database, so servers share a registry exactly when they share a history.
"""

import contextlib
import functools
import hashlib
import re
import threading
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

from mcpbrowser.config import POSTGRES_INSTALL
from mcpbrowser.logs import log
from mcpbrowser.redaction import scrub_urls, shown_url

CONNECT_TIMEOUT_S = 5  # unless the URL says otherwise: a database that is away is said within this
# Which columns identify a row: where INSERT OR REPLACE / OR IGNORE meet a conflict.
KEYS = {"sessions": "session_id", "requests": "ref_id", "responses": "ref_id", "diff_cursors": "ref_id",
        "session_state": "session_id", "named_states": "owner, name", "snapshots": "hash", "files": "path",
        "kept_sessions": "session_id"}
ORDERED = ("requests", "diff_cursors")  # read in insertion order (ORDER BY rowid)
MIGRATION_LOCK = 0x6D6370627277  # "mcpbrw": one server migrates at a time
FUNCTIONS = [
    "CREATE OR REPLACE FUNCTION json_set(doc text, path text, value text) RETURNS text LANGUAGE sql IMMUTABLE "
    "AS $$ SELECT jsonb_set(doc::jsonb, ARRAY[substr(path, 3)], to_jsonb(value))::text $$",
    "CREATE OR REPLACE FUNCTION json_set(doc text, path text, value json) RETURNS text LANGUAGE sql IMMUTABLE "
    "AS $$ SELECT jsonb_set(doc::jsonb, ARRAY[substr(path, 3)], value::jsonb)::text $$",
    "CREATE OR REPLACE FUNCTION json_remove(doc text, path text) RETURNS text LANGUAGE sql IMMUTABLE "
    "AS $$ SELECT (doc::jsonb - substr(path, 3))::text $$",
    "CREATE OR REPLACE FUNCTION json(doc text) RETURNS json LANGUAGE sql IMMUTABLE AS $$ SELECT doc::json $$",
]
def is_url(target):
    return target.startswith(("postgresql://", "postgres://"))


class StoreError(Exception):
    """A PostgreSQL error as the store sees it: its fault code, and whether the statement itself was wrong."""

    def __init__(self, code, statement, text):
        super().__init__(text)
        self.code, self.statement = code, statement


def _fault(exc):
    """(fault code, statement's own) of a psycopg error, from its SQLSTATE."""
    state = getattr(exc, "sqlstate", None) or ""
    if not state and not _on_the_wire(exc):
        return "HISTORY_ERROR", True  # refused on this side (a value it cannot send): the statement's own
    if not state or state[:2] == "08" or state[:3] == "57P":
        return "HISTORY_UNREACHABLE", False  # no connection, or the server shutting down
    if state == "53100":
        return "DISK_FULL", False
    if state[:2] in ("53", "58", "XX"):
        return "HISTORY_IO_ERROR", False
    if state in ("25006", "42501"):
        return "HISTORY_READ_ONLY", False  # a read-only server or transaction, a role without rights
    if state in ("40001", "40P01", "55P03", "57014"):
        return "HISTORY_BUSY", False
    if state[:2] in ("22", "23", "42"):
        return "HISTORY_ERROR", True
    return "HISTORY_ERROR", False


def _on_the_wire(exc):
    """Whether an error without an SQLSTATE came from the connection (not from psycopg refusing a value)."""
    import psycopg

    return isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError))


def _ddl(sql):
    sql = sql.replace("INTEGER PRIMARY KEY AUTOINCREMENT", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
    sql = re.sub(r"\bINTEGER\b", "BIGINT", sql).replace("BLOB", "BYTEA")
    table = re.match(r"\s*CREATE TABLE (\w+)", sql)
    if table and table.group(1) == "session_state":
        sql = sql.replace("url TEXT", "url BYTEA")  # sealed bytes (SQLite keeps bytes in a TEXT column as they are)
    if table and table.group(1) in ORDERED:
        sql = sql.rstrip()[:-1] + ", rowid BIGINT GENERATED ALWAYS AS IDENTITY)"
    return sql


class Connection:
    """One PostgreSQL connection with sqlite3.Connection's few methods the store uses, in SQLite's dialect."""

    def __init__(self, url, instance=None):
        self.url, self.instance = url, instance  # instance: this connection holds the server's lock
        self._conn: Any = None
        self._together = False  # in together(): statements are queued, their errors raised at its end
        self._columns: dict[str, list[str]] = {}

    def _open(self):
        import psycopg

        kwargs: dict[str, Any] = {} if "connect_timeout" in self.url else {"connect_timeout": CONNECT_TIMEOUT_S}
        self._conn = psycopg.connect(self.url, autocommit=True, **kwargs)
        if self.instance is not None:
            got = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (instance_key(self.instance),)).fetchone()
            if not got[0]:  # its old connection, cut off, is not yet gone on the server's side: later
                self._conn.close()
                raise RuntimeError("this server's instance lock is still held by its previous connection")

    def _ready(self):
        if self._conn is None or self._conn.closed:
            self._conn = None
            try:
                self._open()
            except Exception as exc:
                raise _store_error(exc, self.url) from None

    @property
    def is_open(self):
        return self._conn is not None and not self._conn.closed

    @contextlib.contextmanager
    def together(self):
        """Statements run within go out at once, their results read at its end (psycopg's pipeline):
        one round trip. Any error, a statement's own or the database's, is raised by then, as a StoreError."""
        self._ready()
        self._together = True
        try:
            with self._conn.pipeline():
                yield
        except StoreError:
            raise
        except Exception as exc:
            raise _store_error(exc, self.url) from None
        finally:
            self._together = False

    @property
    def in_transaction(self):
        from psycopg.pq import TransactionStatus

        return self._conn is not None and not self._conn.closed and \
            self._conn.info.transaction_status != TransactionStatus.IDLE

    def execute(self, sql, params=()):
        """Run one statement: a cursor with fetchone, fetchall and rowcount. Raises StoreError."""
        if self._together:
            return self._execute(sql, params)
        stale = self._conn is not None and not self.in_transaction
        try:
            return self._execute(sql, params)
        except StoreError as exc:
            # A connection idle across a database restart learns it is gone only now: open another
            # and try once more (outside a transaction, the statement did not run).
            if not (stale and exc.code == "HISTORY_UNREACHABLE"):
                raise
            self.close()
            self._conn = None
            return self._execute(sql, params)

    def _execute(self, sql, params):
        self._ready()
        text = self._translate(sql)
        savepoint = not self._together and self.in_transaction and \
            not text.lstrip().upper().startswith(("COMMIT", "ROLLBACK", "SELECT"))
        try:
            if not savepoint:
                return self._conn.execute(text, tuple(params))
            # A failed statement ends PostgreSQL's whole transaction: a savepoint lets the store skip
            # one bad statement and commit the rest of its batch, as on SQLite. The three go as one
            # message, bound on this side (psycopg quotes each value), so a write costs one round
            # trip, not three: 1.0 ms instead of 3.0 on this loaded machine.
            import psycopg

            cursor = psycopg.ClientCursor(self._conn)
            cursor.execute(f"SAVEPOINT one; {text}; RELEASE SAVEPOINT one", tuple(params))
            cursor.nextset()  # the statement's own result: its rowcount
            return cursor
        except UnicodeEncodeError:
            raise  # a lone surrogate, refused before sending: the store sends it again as U+FFFD
        except Exception as exc:
            error = _store_error(exc, self.url)
            if savepoint and error.statement and getattr(exc, "sqlstate", None):  # the savepoint was sent
                try:
                    self._conn.execute("ROLLBACK TO SAVEPOINT one")
                except Exception:
                    pass  # the connection is gone too: the next statement says so
            raise error from None

    def executemany(self, sql, rows):
        for row in rows:
            self.execute(sql, row)

    def close(self):
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                pass  # closing a broken connection

    # -- the dialect -------------------------------------------------------------------

    def _translate(self, sql):
        if sql.lstrip().upper().startswith(("CREATE TABLE", "ALTER TABLE")):
            return _placeholders(_ddl(sql))
        upsert = re.match(r"\s*INSERT OR (IGNORE|REPLACE) INTO ([\w.]+)\s*(?:\(([^)]*)\))?\s*VALUES", sql)
        if upsert:
            sql = self._upsert(sql, upsert.group(1), upsert.group(2), upsert.group(3), upsert.end())
        return _translated(sql)

    def _upsert(self, sql, kind, table, listed, end):
        name = table.split(".")[-1]
        columns = [c.strip() for c in listed.split(",")] if listed else None
        if columns is None:  # VALUES (?, ?, NULL): as many columns as values, in the table's order
            columns = self.columns(name)[:sql[end:].strip()[1:-1].count(",") + 1]
        head = f"INSERT INTO {table} ({', '.join(columns)}) VALUES{sql[end:]} ON CONFLICT ({KEYS[name]}) "
        if kind == "IGNORE":
            return head + "DO NOTHING"
        keys = {k.strip() for k in KEYS[name].split(",")}
        # REPLACE: the row is as if new, so columns not given go back to their defaults.
        sets = [f"{c} = EXCLUDED.{c}" if c in columns else f"{c} = DEFAULT" for c in self.columns(name)
                if c not in keys]
        if name in ORDERED:
            sets.append("rowid = DEFAULT")
        return head + "DO UPDATE SET " + ", ".join(sets)

    def columns(self, table):
        """The table's columns in order, but rowid."""
        if table not in self._columns:
            rows = self._conn.execute("SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                                      "AND table_schema = ANY (current_schemas(true)) ORDER BY ordinal_position",
                                      (table,)).fetchall()
            self._columns[table] = [c for (c,) in rows if c != "rowid"]
        return self._columns[table]

    # -- the store's other needs ---------------------------------------------------------

    def size_mb(self):
        """The history's data in MB: rows' bytes as stored (deleted rows' room is the vacuum's to give back)."""
        total = 0
        for table in ("requests", "responses", "console_logs", "snapshots", "session_state", "diff_cursors",
                      "files", "sessions", "named_states"):
            total += self.execute(f"SELECT COALESCE(SUM(pg_column_size(t.*)), 0) FROM {table} t").fetchone()[0]
        return total / 1_048_576


@functools.lru_cache(maxsize=512)
def _translated(sql):
    sql = re.sub(r"\bIS \?", "IS NOT DISTINCT FROM ?", sql).replace("BEGIN IMMEDIATE", "BEGIN")
    return _placeholders(sql.replace("temp.", "pg_temp."))


def _placeholders(sql):
    return sql.replace("%", "%%").replace("?", "%s")


def _store_error(exc, url):
    if isinstance(exc, StoreError):
        return exc
    code, statement = _fault(exc)
    return StoreError(code, statement, scrub_urls(str(exc).strip(), url))


def instance_key(instance):
    """The advisory lock's 64-bit key of a server instance."""
    return int.from_bytes(hashlib.sha256(b"mcpbrowser instance " + instance.encode()).digest()[:8], "big",
                          signed=True)


def open_writer(url, instance, migrate):
    """The writer's connection, holding this server's instance lock, on a schema brought current by `migrate`."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise RuntimeError(f"--db {shown_url(url)} needs psycopg: {POSTGRES_INSTALL}") from None
    conn = Connection(url, instance)
    conn._ready()
    # Servers starting together: one creates and migrates, the others wait and find it current.
    conn.execute("SELECT pg_advisory_lock(?)", (MIGRATION_LOCK,))
    try:
        migrate(conn)
        for statement in FUNCTIONS:
            conn._conn.execute(statement)
    finally:
        conn.execute("SELECT pg_advisory_unlock(?)", (MIGRATION_LOCK,))
    return conn


class Registry:
    """Which servers share this database: alive while their lock is held. Any thread, each on its own connection."""

    def __init__(self, url):
        self.url = url
        self._local = threading.local()

    def alive(self, instance):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = Connection(self.url)
        key = instance_key(instance)
        try:
            # Shared: two servers probing the same gone server at once both find it free (an exclusive
            # probe held by one made the other see it alive, and name a dead server as the holder).
            got = conn.execute("SELECT pg_try_advisory_lock_shared(?)", (key,)).fetchone()[0]
            if got:
                conn.execute("SELECT pg_advisory_unlock_shared(?)", (key,))
        except StoreError as exc:
            # Unknown is alive: closing a live server's sessions is the harm to avoid.
            log.warning("instance check failed", extra={"event": "store_instance_unknown", "error": str(exc)})
            return True
        return not got
