"""What a history database is to the store: the interface its backends implement.

The store does what is the same on every database; a backend, chosen by the --db target in
store.open_backend, does what differs: connecting, its schema in its own dialect, the statements whose SQL
differs, the size, which servers are alive, what its errors mean. Every other statement is written once, with
`?` placeholders, in SQL both databases run (upserts as `INSERT ... ON CONFLICT`, SQLite 3.24 on).

Threads: the store's constructor calls `own_keys` and `open`; the store-writer thread uses the connection
`open` returns and calls `size_mb`, `vacuum` and `sweep`; any thread calls `connect` and `alive`."""

SCHEMA_VERSION = 6  # the newest schema: each backend's MIGRATIONS states every step up to it


class StoreError(Exception):
    """A database error as the store sees it: its fault code (DISK_FULL, HISTORY_BUSY, ...) and whether the
    statement itself was wrong (a driver's exception never leaves the store)."""

    def __init__(self, code, statement, text):
        super().__init__(text)
        self.code, self.statement = code, statement


class Backend:
    """A database the history lives in: a subclass states its SQL and says what its errors mean."""

    label: str  # the database as logs and messages show it (never a password)
    shared = True  # whether other servers may open it too (an in-memory history: no)
    pipelined = False  # whether a batch may go out at once, in `conn.together()`, its errors raised at the end
    errors: tuple[type[Exception], ...] = ()  # what its statements raise

    # Its DDL, version -> statements, one transaction per step; never edit a released step, add a new one.
    MIGRATIONS: dict[int, list[str]] = {}
    SCHEMA_TABLE = ""  # creates the table that records the version, if it is not there
    BEGIN = "BEGIN"  # opens a transaction that writes

    # The statements whose SQL differs by dialect (JSON in a TEXT column, a row replaced whole):
    CLAIM_SESSION = ""  # (instance, last_activity, server, session_id, state read, instance read: NULL matches NULL)
    CLOSE_SESSION = ""  # (last_activity, reason, session_id): closed, metadata's throttle dropped, its closeReason set
    KEEP_THROTTLE = ""  # (throttle as JSON text, session_id): into metadata's throttle
    CLOSE_ORPHAN = ""  # (session_id): closed, metadata's closeReason server_restart
    MARK_READ = ""  # (ref_id, lines, hash, last_read): a diff cursor, as the newest row (rowid) when marked again

    def own_keys(self):
        """The sealing keys when --db-key-file gives none: [the key that seals]."""
        raise NotImplementedError

    def open(self, instance):
        """The writer's connection, on a database with the current schema, this server registered as `instance`."""
        raise NotImplementedError

    def connect(self):
        """A connection of a reader's own (autocommit: the writer opens and commits its own transactions)."""
        raise NotImplementedError

    def migrate(self, conn):
        """Bring the schema to SCHEMA_VERSION; returns the version found."""
        conn.execute(self.SCHEMA_TABLE)
        # The version is read inside the transaction that migrates, which writes from its start (SQLite's BEGIN
        # IMMEDIATE): servers starting together on a new file migrate one after the other, the later finding the
        # schema current. Read before it, both found none and the second's CREATE TABLE failed its start.
        conn.execute(self.BEGIN)
        try:
            row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
            found = row[0] or 0
            if found > SCHEMA_VERSION:
                raise RuntimeError(f"the database has schema version {found}, newer than this "
                                   f"mcpbrowser understands ({SCHEMA_VERSION}); upgrade mcpbrowser")
            for version in range(found + 1, SCHEMA_VERSION + 1):
                for statement in self.MIGRATIONS[version]:
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return found

    def alive(self, instance):
        """Whether the server process registered as `instance` still runs (unknown: alive)."""
        raise NotImplementedError

    def sweep(self):
        """Forget the registrations of servers that are gone, if the registry keeps any."""

    def release(self):
        """This server's registration given up at a clean close."""

    def reconnects(self, conn):
        """Whether `conn` opens again by itself on its next statement (after HISTORY_UNREACHABLE)."""
        return False

    def size_mb(self, conn):
        """The history's size in MB, as --db-max-mb counts it; None when it is not measured."""
        return None

    def vacuum(self, conn):
        """Give the room of deleted rows back, where the database does not do it by itself."""

    def fault_code(self, exc):
        """The store's fault code of one of its errors (DISK_FULL, HISTORY_BUSY, HISTORY_ERROR, ...)."""
        raise NotImplementedError

    def statement_error(self, exc):
        """Whether one of its errors is the statement's own (wrong SQL, a constraint), not the database's."""
        raise NotImplementedError

    def free_text(self):
        """The free space where it writes, as a log or an answer says it."""
        return "free space unknown"

    def cannot_open(self, cause, exc):
        """Start-up's message when the database cannot be opened for `cause` (a FAULT_TEXT or an OS error)."""
        return f"the history database {self.label} cannot be opened: {cause} ({exc})"
