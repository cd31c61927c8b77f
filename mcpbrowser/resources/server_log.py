"""The server's log records as a resource, `mcpbrowser://server/log`: on 2026-07-28, where the logging
capability is deprecated (SEP-2577), what notifications/message carries on the handshake eras.

A client reads its own records (one that sees every session, stdio's, reads them all, the server's own included), shown
as notifications/message shows them (logs.client_view): its own calls, and what happened in its own sessions
(logs.record_owner: a call naming another client's session id is the caller's record, not that session owner's). Each
client's records are numbered in a sequence of its own, so its cursor moves with its own records alone and tells it
nothing of others' work (one that sees all counts all): `?after=N` gives the newer ones. The last RING records are kept.

ANY THREAD: `emit` runs on whichever thread logs (the logger's filter has scrubbed the record of
secrets already, logs.py); everything else takes the lock.
"""

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from mcpbrowser.logs import client_view, record_owner
from mcpbrowser.resources.base import SCHEME, parse_after

URI = f"{SCHEME}://server/log"
RING = 1000     # records kept, of every client
OWNERS = 1000   # sessions whose owner is remembered after they closed (their last records name them)
COUNTED = 10_000  # clients whose record count is kept (the least recent forgotten: an open server's come and go)


class OwnerView:
    """One client's view of the server log, for its subscriptions' watch (the shape of a session's EventBuffers)."""

    def __init__(self, server_log: "ServerLog", owner: str | None) -> None:
        self._log, self.owner = server_log, owner
        self.on_log: Callable[[str], None] | None = None

    def log_position(self, name: str) -> int:
        return self._log.position(self.owner)


class ServerLog(logging.Handler):
    """A ring of the server's records (INFO and up), each with the client whose session it is about."""

    def __init__(self, owner_of_open: Callable[[str], str | None], size: int = RING) -> None:
        super().__init__(logging.INFO)
        self._owner_of_open = owner_of_open  # the registry's, for open sessions: no database read here
        self._guard = threading.Lock()
        # (number, whether it is a client's, that client, its number among that client's records, the entry)
        self._ring: deque[tuple[int, bool, str | None, int, dict[str, Any]]] = deque(maxlen=size)
        self._total = 0
        self._counts: dict[str | None, int] = {}   # owner -> how many records it has had (least recent first)
        self._owners: dict[str, str | None] = {}    # session id -> its owner, remembered (oldest first)
        self._views: dict[str | None, OwnerView] = {}

    def emit(self, record: logging.LogRecord) -> None:
        about, owner = record_owner(record, self._owner)
        level, data = client_view(record)
        entry = {"timestamp": int(record.created * 1000), "level": level, "logger": record.name, "data": data}
        with self._guard:
            self._total += 1
            own = 0
            if about:
                own = self._counts.pop(owner, 0) + 1
                self._counts[owner] = own
                while len(self._counts) > COUNTED:
                    del self._counts[next(iter(self._counts))]
            self._ring.append((self._total, about, owner, own, entry))
            views = [v for o, v in self._views.items() if o is None or (about and o == owner)]
        for view in views:
            if view.on_log is not None:
                view.on_log("log")

    def _owner(self, session: str) -> str | None:
        owner = self._owner_of_open(session)
        with self._guard:
            if owner is None:
                return self._owners.get(session)
            self._owners[session] = owner
            while len(self._owners) > OWNERS:
                del self._owners[next(iter(self._owners))]
        return owner

    def position(self, owner: str | None) -> int:
        """The number of the newest record this client may read."""
        with self._guard:
            return self._total if owner is None else self._counts.get(owner, 0)

    def since(self, owner: str | None, after: int, limit: int) -> dict[str, Any]:
        """A read: {entries, cursor, more} of the records this client may read, numbered after `after`
        (in its own sequence)."""
        with self._guard:
            if owner is None:
                picked = [(n, entry) for n, _, _, _, entry in self._ring if n > after]
            else:
                picked = [(own, entry) for _, about, who, own, entry in self._ring
                          if about and who == owner and own > after]
            position = self._total if owner is None else self._counts.get(owner, 0)
        page = picked[:limit]
        cursor = page[-1][0] if page else max(min(after, position), 0)
        return {"entries": [entry for _, entry in page], "cursor": cursor, "more": len(picked) > limit}

    def view(self, owner: str | None) -> OwnerView:
        with self._guard:
            return self._views.setdefault(owner, OwnerView(self, owner))

    def unview(self, owner: str | None) -> None:
        with self._guard:
            self._views.pop(owner, None)


class ServerLogResource:
    """The server log as the hub lists it and its watch sees it."""

    name = "log"
    listed = {"uri": URI, "name": "server-log", "title": "Server log",
              "description": "The server's log records about your sessions (what notifications/message carries "
                             "before 2026-07-28), oldest first, as JSON {entries, cursor, more}; read again with "
                             "?after=CURSOR for only the new ones.", "mimeType": "application/json"}

    @staticmethod
    def position(view: OwnerView) -> int:
        return view.log_position("log")

    @staticmethod
    def uri(session_id: str) -> str:
        return URI

    @staticmethod
    def after(uri: str) -> int | None:
        """The cursor of a server log URI, or None when the URI is not the server log's."""
        base, _, query = uri.partition("?")
        return parse_after(query) if base == URI else None
