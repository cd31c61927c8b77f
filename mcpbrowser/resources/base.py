"""A per-session MCP resource, declared the way a tool is; and its URIs. Pure data, any thread.

A resource lives at `mcpbrowser://sessions/{sessionId}/{name}`; a read may add `?after=N`, the
cursor a previous read returned, to get only the entries numbered after N.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

SCHEME = "mcpbrowser"


@dataclass(frozen=True)
class SessionResource:
    name: str         # the last part of its URI
    title: str
    description: str
    # read(events, secrets, after) -> plain data; position(events): the number of its newest entry.
    # ANY THREAD: they read the session's EventBuffers' numbered logs, under their lock.
    read: Callable[[Any, Any, int], dict[str, Any]]
    position: Callable[[Any], int]
    mime_type: str = "application/json"

    def uri(self, session_id: str) -> str:
        return f"{SCHEME}://sessions/{session_id}/{self.name}"

    def describe(self, session_id: str, page_title: str = "") -> dict[str, Any]:
        """Its entry in resources/list."""
        title = f"{self.title} of session {session_id}" + (f" ({page_title})" if page_title else "")
        return {"uri": self.uri(session_id), "name": f"{self.name}-{session_id}", "title": title,
                "description": self.description, "mimeType": self.mime_type}

    def template(self) -> dict[str, Any]:
        """Its entry in resources/templates/list."""
        return {"uriTemplate": f"{SCHEME}://sessions/{{sessionId}}/{self.name}{{?after}}", "name": self.name,
                "title": self.title, "description": self.description, "mimeType": self.mime_type}


def parse_uri(uri: str) -> tuple[str, str, int] | None:
    """(session id, resource name, after) of a session resource URI, or None when it names none."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return None
    segments = parts.path.split("/")
    if parts.scheme != SCHEME or parts.netloc != "sessions" or len(segments) != 3 or not segments[1]:
        return None
    after = parse_after(parts.query)
    return None if after is None else (segments[1], segments[2], after)


def parse_after(query: str) -> int | None:
    """The `after` cursor of a URI's query (0 when absent), or None when it is no cursor."""
    after = parse_qs(query).get("after", ["0"])[-1]
    return int(after) if after.isdigit() and len(after) <= 18 else None
