"""The core's typed face: what the transports (transports/) and the live view (view/) may use of it. Any thread.

`core/browser.Browser` implements it (mypy checks that it does: `tox -e type`); a transport or
the view is handed a `CoreFace`, never an untyped `core`, so that a reader (or a checker, or an
IDE's jump-to-definition) follows a call from the transport to the session through `submit`.
Each attribute is the core's own part, named by its class: the face adds no behaviour.
"""

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mcpbrowser.config import Config
    from mcpbrowser.core.call import Caller, ServerClient
    from mcpbrowser.core.history import History
    from mcpbrowser.core.session_memory import SessionMemory
    from mcpbrowser.core.sessions import SessionRegistry
    from mcpbrowser.core.store import Store
    from mcpbrowser.core.tool_groups import ToolGroups
    from mcpbrowser.guards import Cooldown
    from mcpbrowser.resources.hub import ResourceHub
    from mcpbrowser.session.screencast import Cast
    from mcpbrowser.tools.base import Tool


class CoreFace(Protocol):
    """The server's core as a transport or the view sees it."""

    config: "Config"
    groups: "ToolGroups"                # which of them each MCP client sees (tools/list)
    registry: "SessionRegistry"         # the open sessions: owners, records, closing
    history: "History"                  # every call's rows, read by the view
    store: "Store"                      # the history's database (its server name, for list_sessions)
    resources: "ResourceHub"            # the sessions' log resources
    session_memory: "SessionMemory"     # each session's renderer memory (the view's list)

    @property
    def tools(self) -> "Mapping[str, Tool]":
        """Every tool this configuration offers, by name, a person's own included (person_input): the same
        table whether or not a view is built. Read-only here: nothing that holds the face adds a tool."""

    @property
    def client(self) -> "ServerClient | None":
        """The transport's own client: asked and told what no call asks (a session opening, a cooldown's end)."""

    @client.setter
    def client(self, connection: "ServerClient | None") -> None: ...

    @property
    def cooldown(self) -> "Cooldown":
        """The login cooldown: the view shows it and a person's hand-back ends it."""

    def submit(self, name: str, args: Any = None,
               progress: Callable[[float, float | None, str | None], None] | None = None,
               caller: "Caller | None" = None) -> "Future[Any]":
        """Start one tool call: a Future of its result, or of the error it raised (a BrowserServerError)."""

    def take_over(self, session_id: str, person: str, timeout: float) -> dict[str, Any]:
        """A person holds the session (their call, tools/person.py); {heldBy}, or the error of another holding it."""

    def hand_back(self, session_id: str, person: str, timeout: float) -> dict[str, Any]:
        """The person hands the session back (their call): the agent acts again, a cooldown it started ends."""

    def act(self, session_id: str, person: str, action: dict[str, Any]) -> "Future[Any]":
        """A person's click, scroll, key or text on the page (their call, its text a secret)."""

    def watch(self, session_id: str, person: str) -> "Cast | None":
        """The session's live picture (its start the person's call); None when it is not open here."""

    def held_by(self, session_id: str) -> str | None:
        """The person who holds an open session, or None."""

    def close(self) -> None:
        """Close every session and the browser; idempotent."""
