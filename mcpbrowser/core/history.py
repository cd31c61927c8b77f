"""The history of every call, as rows: the one place that writes and reads its tables. Any thread.

Writes are queued to the store's writer thread (`Store.write`); reads wait for what was queued before them.
Every statement here runs as written on SQLite and PostgreSQL; the schema and the few statements that differ
by database are the backends' (`self.sql.CLOSE_SESSION`, ...)."""

import json
import os
from urllib.parse import urlsplit

from mcpbrowser.core.store import Snapshot, WriteNotStored, dumps, unpack_snapshot
from mcpbrowser.errors import not_stored
from mcpbrowser.page_strings import utf8
from mcpbrowser.schema import compact_json
from mcpbrowser.timers import now_ms

# A response's page: in the snapshots table (by hash, compressed), or inline in rows of earlier versions.
PAGE = "s.page_snapshot, p.data, b.data"
STORED = "LEFT JOIN snapshots p ON p.hash = s.snapshot_hash LEFT JOIN snapshots b ON b.hash = p.base"
UNRECORDED = "not recorded whole: "  # a response row's error_message, then why (response_unrecorded)
# A call's response row, replacing one written before whole (an inline page of an earlier version goes too).
RESPONSE = ("INSERT INTO responses (ref_id, status, result, console_logs, error_message, timestamp, snapshot_hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (ref_id) DO UPDATE SET status = excluded.status, "
            "result = excluded.result, page_snapshot = NULL, console_logs = excluded.console_logs, "
            "error_message = excluded.error_message, timestamp = excluded.timestamp, "
            "snapshot_hash = excluded.snapshot_hash")


def _page(inline, packed, base):
    return unpack_snapshot(packed, base) if packed is not None else inline


def _error(error):
    """A response row's error as its answer gave it ({errorCode, message, details?}); None without one (an error
    that was not ours, its text; a row not recorded whole)."""
    try:
        decoded = json.loads(error) if error else None
    except ValueError:
        return None
    return decoded if isinstance(decoded, dict) else None


def _code(error):
    """A response row's errorCode; None without one."""
    return (_error(error) or {}).get("errorCode")


class History:
    """Calls, sessions, saved session states and diff cursors, over one Store."""

    def __init__(self, store):
        self.store = store
        self.sql = store.backend  # the statements whose SQL is the backend's own

    # -- sessions ---------------------------------------------------------------

    def session_opened(self, session_id, created_at, metadata):
        self.store.write("INSERT INTO sessions (session_id, created_at, last_activity, state, metadata, instance) "
                         "VALUES (?, ?, ?, 'active', ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
                         "created_at = excluded.created_at, last_activity = excluded.last_activity, "
                         "state = excluded.state, metadata = excluded.metadata, instance = excluded.instance",
                         (session_id, created_at, created_at, json.dumps({**metadata, "server": self.store.server}),
                          self.store.instance))

    def session_metadata(self, session_id):
        """What was recorded when the session opened (owner, emulation, ...); {} for no such session."""
        rows = self.store.query("SELECT metadata FROM sessions WHERE session_id = ?", (session_id,))
        return json.loads(rows[0][0]) if rows else {}

    def session_holder(self, session_id):
        """Who holds a recorded session, or None: {state, instance, server (its name), alive, closeReason}."""
        rows = self.store.query("SELECT state, instance, metadata FROM sessions WHERE session_id = ?", (session_id,))
        if not rows:
            return None
        state, instance, metadata = rows[0]
        metadata = json.loads(metadata)
        return {"state": state, "instance": instance, "server": metadata.get("server") or instance,
                "alive": bool(instance) and self.store.alive(instance), "closeReason": metadata.get("closeReason")}

    def claim_session(self, session_id, holder):
        """Take a session for this server if its row is still as `holder` read it (one conditional UPDATE: of two
        resuming it at once, one wins); whether it was taken. `release_claim` if the session fails to open."""
        return self.store.swap(self.sql.CLAIM_SESSION, (self.store.instance, now_ms(), self.store.server, session_id,
                                                        holder["state"], holder["instance"])) == 1

    def release_claim(self, session_id):
        """A claimed session could not be opened here: closed again, for any server to resume."""
        self.store.write("UPDATE sessions SET state = 'closed' WHERE session_id = ? AND state = 'active' "
                         "AND instance = ?", (session_id, self.store.instance))

    def sessions_elsewhere(self, owner):
        """The owner's sessions that other servers sharing the history opened and have not closed:
        [{sessionId, server}], and `resumable` on those whose server is gone (whether a state was saved)."""
        if not self.store.backend.shared:
            return []  # no other server can open it (and its shared cache locks a reader out while the writer writes)
        # Without waiting for this server's queued writes: the rows read are other servers'.
        rows = self.store.query("SELECT s.session_id, s.instance, s.metadata, st.session_id IS NOT NULL "
                                "FROM sessions s LEFT JOIN session_state st ON st.session_id = s.session_id "
                                "WHERE s.state = 'active' AND s.instance IS NOT NULL AND s.instance != ? "
                                "ORDER BY s.created_at", (self.store.instance,), flush=False)
        alive: dict[str, bool] = {}
        out = []
        for session_id, instance, metadata, saved in rows:
            metadata = json.loads(metadata)
            if metadata.get("owner") != owner:
                continue
            if instance not in alive:
                alive[instance] = self.store.alive(instance)
            entry = {"sessionId": session_id, "server": metadata.get("server") or instance}
            if not alive[instance]:
                entry["resumable"] = bool(saved)
            out.append(entry)
        return out

    def session_closed(self, session_id, reason, throttle=None):
        """The session ended for `reason`; `throttle`: its throttling then, which resume_session restores."""
        self.store.write(self.sql.CLOSE_SESSION, (now_ms(), reason, session_id))
        if throttle:
            self.store.write(self.sql.KEEP_THROTTLE, (json.dumps(throttle), session_id))

    def save_state(self, session_id, storage_state, url):
        """Keep what resume_session needs, sealed: the storage state holds cookies, the URL (kept unscrubbed, to
        go back to) may hold a secret. Rows of earlier versions hold the URL as text."""
        self.store.write("INSERT INTO session_state (session_id, storage_state, url, updated_at) VALUES (?, ?, ?, ?) "
                         "ON CONFLICT (session_id) DO UPDATE SET storage_state = excluded.storage_state, "
                         "url = excluded.url, updated_at = excluded.updated_at",
                         (session_id, self.store.seal(dumps(storage_state)), self.store.seal(url.encode()),
                          now_ms()))

    def has_saved_state(self, session_id):
        return bool(self.store.query("SELECT 1 FROM session_state WHERE session_id = ?", (session_id,)))

    def saved_state(self, session_id):
        """(storage state, url) last saved for resume, or None (nothing saved, or another key file); a state
        sealed by an earlier version, or with a key rotated out of first place, is sealed again."""
        rows = self.store.query("SELECT storage_state, url FROM session_state WHERE session_id = ?", (session_id,))
        if not rows:
            return None
        blob, url = rows[0]
        try:
            plain, stale = self.store.unseal(blob)
            if isinstance(url, bytes):
                url, url_stale = self.store.unseal(url)
                url, stale = url.decode(), stale or url_stale
        except ValueError:
            return None
        if stale:
            self.store.write("UPDATE session_state SET storage_state = ?, url = ? WHERE session_id = ?",
                             (self.store.seal(plain), self.store.seal(url.encode()), session_id))
        return json.loads(plain), url

    # -- logins saved by name (save_state) ----------------------------------------------

    def save_named_state(self, owner, name, storage_state):
        """Keep a session's cookies and storages under a name of its client's, sealed; its plain summary."""
        cookies, origins = storage_state.get("cookies", []), storage_state.get("origins", [])
        domains = {c.get("domain", "").lstrip(".") for c in cookies} | {urlsplit(o["origin"]).hostname for o in origins}
        summary = {"cookies": len(cookies), "domains": sorted(d for d in domains if d), "savedAt": now_ms()}
        # Its answer says "saved": so it waits for the row, and says why when it could not be stored.
        try:
            self.store.write_now("INSERT INTO named_states (owner, name, storage_state, summary, updated_at) "
                                 "VALUES (?, ?, ?, ?, ?) ON CONFLICT (owner, name) DO UPDATE SET "
                                 "storage_state = excluded.storage_state, summary = excluded.summary, "
                                 "updated_at = excluded.updated_at",
                                 (owner or "", name, self.store.seal(dumps(storage_state)), json.dumps(summary),
                                  summary["savedAt"]))
        except WriteNotStored as exc:
            raise not_stored(exc.fault["errorCode"], f"The login was not saved: "
                             f"{exc.fault['message'].split(' (')[0]}.") from None
        return summary

    def named_state(self, owner, name):
        """The storage state saved under name by this owner, or None (none, or sealed with another key)."""
        rows = self.store.query("SELECT storage_state FROM named_states WHERE owner = ? AND name = ?",
                                (owner or "", name))
        if not rows:
            return None
        try:
            plain, stale = self.store.unseal(rows[0][0])
        except ValueError:
            return None
        if stale:
            self.store.write("UPDATE named_states SET storage_state = ? WHERE owner = ? AND name = ?",
                             (self.store.seal(plain), owner or "", name))
        return json.loads(plain)

    def named_states(self, owner):
        """[{name, cookies, domains, savedAt}] this owner saved, by name."""
        rows = self.store.query("SELECT name, summary FROM named_states WHERE owner = ? ORDER BY name", (owner or "",))
        return [{"name": name, **json.loads(summary)} for name, summary in rows]

    def delete_named_state(self, owner, name):
        """Forget a saved state; False when this owner had none by that name."""
        found = bool(self.store.query("SELECT 1 FROM named_states WHERE owner = ? AND name = ?", (owner or "", name)))
        self.store.write("DELETE FROM named_states WHERE owner = ? AND name = ?", (owner or "", name))
        return found

    # -- calls ------------------------------------------------------------------

    def request(self, ref_id, session_id, tool, params, owner=None):
        """The request row, written before the call runs (`params` as answer.history_request keeps them); owner:
        the client whose alone its refId is (HTTP's), None for the server's own, written first."""
        at = now_ms()
        if owner is not None:
            self.store.write("INSERT INTO call_owners (ref_id, owner) VALUES (?, ?)", (ref_id, owner), ref=ref_id)
        self.store.write("INSERT INTO requests VALUES (?, ?, ?, ?, ?)",
                         (ref_id, session_id, tool, json.dumps(params, default=str), at), ref=ref_id)
        if session_id:
            self.store.write("UPDATE sessions SET last_activity = ? WHERE session_id = ?", (at, session_id))

    def response(self, ref_id, row, session_id=None):
        """The response row of a finished call, with its page snapshot and console entries: `row` as core/answer.py's
        answer.for_history renders them, (status, result, error, page, console)."""
        status, value, error, page, console = row
        result = None if value is None else utf8(compact_json(value))
        for path in files_named(value or {}):
            # The first answer that named it owns the row (a later listing, such as downloads', does not).
            self.store.write("INSERT INTO files (path, ref_id, session_id, created_at) VALUES (?, ?, ?, ?) "
                             "ON CONFLICT (path) DO NOTHING", (path, ref_id, session_id, now_ms()), ref=ref_id)
        # Stored once by its hash, compressed, on the writer thread (store.Snapshot).
        page = Snapshot(page, session_id) if page is not None else None
        self.store.write(RESPONSE, (ref_id, status, result, json.dumps(console).encode() if console else None, error,
                                    now_ms(), page), ref=ref_id)
        for entry in console:
            self.store.write("INSERT INTO console_logs (ref_id, level, message, timestamp, location) "
                             "VALUES (?, ?, ?, ?, ?)", (ref_id, entry["level"], entry["message"],
                                                        entry["timestamp"], entry["location"]), ref=ref_id)

    def response_unrecorded(self, ref_id, outcome, why):
        """A finished call's response row without its result, snapshot or console: what could not be stored."""
        status = "cancelled" if outcome.cancelled else "error" if outcome.error is not None else "ok"
        self.store.write(RESPONSE, (ref_id, status, None, None, f"{UNRECORDED}{why}", now_ms(), None), ref=ref_id)

    # -- reading it back ---------------------------------------------------------

    def stored_page(self, ref_id):
        """(session_id, page snapshot bytes or None) of a call, or None when no call has that refId."""
        rows = self.store.query(f"SELECT r.session_id, {PAGE} FROM requests r LEFT JOIN responses s "
                                f"ON s.ref_id = r.ref_id {STORED} WHERE r.ref_id = ?", (ref_id,))
        return (rows[0][0], _page(*rows[0][1:])) if rows else None

    def pages_before(self, tool, ref_id, limit):
        """[(ref_id, session_id, page bytes)] of a tool's successful calls made before call `ref_id`, with the
        page each stored, newest first (compare_performance's earlier measurements)."""
        rows = self.store.query(
            f"SELECT r.ref_id, r.session_id, {PAGE} FROM requests r JOIN responses s ON s.ref_id = r.ref_id "
            f"{STORED} WHERE r.tool_name = ? AND s.status = 'ok' AND r.ref_id != ? "
            "AND r.timestamp <= (SELECT timestamp FROM requests WHERE ref_id = ?) "
            "ORDER BY r.timestamp DESC, r.rowid DESC LIMIT ?", (tool, ref_id, ref_id, limit))
        return [(ref, session_id, _page(*page)) for ref, session_id, *page in rows]

    def stored_call(self, ref_id):
        """{sessionId, owner, tool, status, errorCode, unrecorded, page} of a call, or None when no call has that
        refId. owner None: the server's own call, or an older row; status None: no answer recorded yet;
        unrecorded: why its answer was not recorded whole; page: the snapshot's bytes."""
        rows = self.store.query(f"SELECT r.session_id, o.owner, r.tool_name, s.status, s.error_message, {PAGE} "
                                "FROM requests r LEFT JOIN call_owners o ON o.ref_id = r.ref_id "
                                f"LEFT JOIN responses s ON s.ref_id = r.ref_id {STORED} WHERE r.ref_id = ?", (ref_id,))
        if not rows:
            return None
        session_id, owner, tool, status, error, *page = rows[0]
        return {"sessionId": session_id, "owner": owner, "tool": tool, "status": status, "errorCode": _code(error),
                "unrecorded": error[len(UNRECORDED):] if error and error.startswith(UNRECORDED) else None,
                "page": _page(*page)}

    def session_calls(self, session_id):
        """[(ref_id, tool, params, status, result, page)] of a session's calls, oldest first, as recorded (secrets
        scrubbed): params and result decoded (result: the answer of a call that succeeded, the error of one that
        failed, {errorCode, message, details?}, else None), page as bytes or None."""
        rows = self.store.query(f"SELECT r.ref_id, r.tool_name, r.params, s.status, s.result, s.error_message, "
                                f"{PAGE} FROM requests r LEFT JOIN responses s ON s.ref_id = r.ref_id {STORED} "
                                "WHERE r.session_id = ? ORDER BY r.timestamp, r.rowid", (session_id,))
        return [(ref_id, tool, json.loads(params), status,
                 (json.loads(result) if result else None) if status == "ok" else
                 _error(error) if status == "error" else None, _page(*page))
                for ref_id, tool, params, status, result, error, *page in rows]

    def timeline(self, session_id, after=0, limit=200, newest=False):
        """The live view's rows of a session's calls after request rowid `after`, oldest first (newest:
        the agent's last call alone, a person's own calls passed over): [{seq, refId, tool, params, status,
        error, at, endedAt, hasPage}], as recorded (secrets scrubbed)."""
        agents = "AND substr(r.tool_name, 1, 7) <> 'person_' " if newest else ""
        rows = self.store.query(
            "SELECT r.rowid, r.ref_id, r.tool_name, r.params, r.timestamp, s.status, s.error_message, s.timestamp, "
            "s.snapshot_hash IS NOT NULL OR s.page_snapshot IS NOT NULL FROM requests r "
            f"LEFT JOIN responses s ON s.ref_id = r.ref_id WHERE r.session_id = ? AND r.rowid > ? {agents}"
            f"ORDER BY r.rowid {'DESC' if newest else ''} LIMIT ?", (session_id, after, 1 if newest else limit))
        return [{"seq": seq, "refId": ref_id, "tool": tool, "params": json.loads(params), "status": status,
                 "error": (_code(error) or "BROWSER_ERROR") if status == "error" else None, "at": at,
                 "endedAt": ended, "hasPage": bool(has_page)}
                for seq, ref_id, tool, params, at, status, error, ended, has_page in rows]

    def last_read(self, session_id):
        """(hash, page snapshot bytes) that this session's reader last read, or None."""
        rows = self.store.query(
            f"SELECT c.last_snapshot_hash, {PAGE} FROM diff_cursors c "
            f"JOIN requests r ON r.ref_id = c.ref_id LEFT JOIN responses s ON s.ref_id = c.ref_id {STORED} "
            f"WHERE {'r.session_id IS NULL' if session_id is None else 'r.session_id = ?'} "
            "ORDER BY c.last_read DESC, c.rowid DESC LIMIT 1", () if session_id is None else (session_id,))
        return (rows[0][0], _page(*rows[0][1:])) if rows else None

    def mark_read(self, ref_id, lines, digest):
        self.store.write(self.sql.MARK_READ, (ref_id, lines, digest, now_ms()))

    # -- files the answers named (core/file_keeper.py removes them) ------------------------

    def saved_files(self, folder):
        """The paths under folder of the files the server's answers named and that were not removed since."""
        prefix = os.path.join(folder, "")
        rows = self.store.query("SELECT path FROM files WHERE removed_at IS NULL AND substr(path, 1, ?) = ?",
                                (len(prefix), prefix))
        return {path for (path,) in rows}

    def files_removed(self, removed, reason):
        """Mark the rows of files that were deleted: removedAt and why."""
        at = now_ms()
        for path in removed:
            self.store.write("UPDATE files SET removed_at = ?, removed_reason = ? WHERE path = ?", (at, reason, path))

    def removed_files(self, ref_id):
        """[{path, removedAt, reason}] of the files this call's answer named that were removed since."""
        rows = self.store.query("SELECT path, removed_at, removed_reason FROM files WHERE ref_id = ? "
                                "AND removed_at IS NOT NULL ORDER BY path", (ref_id,))
        return [{"path": path, "removedAt": at, "reason": reason} for path, at, reason in rows]

    def console_entries(self, ref_id, level=None):
        """[(timestamp, level, message, location)] a call recorded, oldest first."""
        sql = "SELECT timestamp, level, message, location FROM console_logs WHERE ref_id = ?"
        params = [ref_id]
        if level is not None:
            sql += " AND level = ?"
            params.append(level)
        return self.store.query(sql + " ORDER BY id", params)


def files_named(answer):
    """The paths of files an answer says the server saved: path (pdf, trace), savedTo (screenshot), downloads."""
    paths = [answer.get("path"), answer.get("savedTo")]
    paths += [entry.get("path") for entry in answer.get("downloads") or () if isinstance(entry, dict)]
    return [path for path in paths if isinstance(path, str) and path]
