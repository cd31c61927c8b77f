"""A session's console and network logs as MCP resources, read a page at a time (any thread).

Each entry is numbered as it arrives (a request when it ends: a reader meets it once, with its
status); a read returns the entries after its cursor, shown and redacted exactly as the
console_logs and network_logs tools show them (their formatting, the session's known secrets).
"""

from typing import Any

from mcpbrowser.resources.base import SessionResource
from mcpbrowser.tools.monitoring import lean, shown_console

READ_LIMIT = 500  # entries per read at most; `more` says when the reader should read again at once


def _reader(name: str, shown: Any) -> Any:
    def read(events: Any, secrets: Any, after: int) -> dict[str, Any]:
        entries, cursor, skipped, more = events.log_since(name, after, READ_LIMIT, secrets)
        # dropped: entries pushed out of the session's ring (--console-buffer, --network-buffer) before
        # this reader came for them; the page's own flood limit is said in the log itself (events.py).
        return {"entries": shown(entries), "cursor": cursor, "dropped": skipped, "more": more}

    return read


def _position(name: str) -> Any:
    return lambda events: events.log_position(name)


RESOURCES = [
    SessionResource(
        name="console", title="Console log",
        description="The session's console messages and page errors (all tabs), oldest first, as JSON {entries, "
                    "cursor, dropped, more}; read again with ?after=CURSOR for only the new ones.",
        read=_reader("console", shown_console), position=_position("console"),
    ),
    SessionResource(
        name="network", title="Network log",
        description="The session's requests as they end (all tabs), oldest first, as JSON {entries, cursor, "
                    "dropped, more}; read again with ?after=CURSOR for only the new ones.",
        read=_reader("network", lambda entries: [lean(e) for e in entries]), position=_position("network"),
    ),
]
