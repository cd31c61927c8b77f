"""The core's typed face: what the transports (transports/) and the live view (view/) may use of it. Any thread.

Verbs (submit a call, list tools, sessions, a timeline, take over, hand back, watch, announce), implemented by
`core/browser.Browser` (mypy checks it). A transport or the view is handed a `CoreFace`, never the `Browser` nor
any of the core's parts (tests/test_face_rules.py): only plain data, Futures, the declared tools, the log
resources and a session's live picture come back."""

from collections.abc import Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mcpbrowser.core.answer import Outcome
    from mcpbrowser.core.call import Caller, ServerClient
    from mcpbrowser.session.screencast import Cast as Picture  # a session's live picture: JPEG frames, numbered
    from mcpbrowser.tools.base import Tool


class LogResources(Protocol):
    """The logs as MCP resources (resources/hub.py's `ResourceHub`), as its verbs only."""

    def listed(self, owner: str | None) -> list[dict[str, Any]]: ...

    def templates(self) -> list[dict[str, Any]]: ...

    def visible(self, uri: str, owner: str | None) -> bool: ...

    def read(self, uri: str, owner: str | None) -> "Future[Any]": ...

    def subscribe(self, uri: str, owner: str | None, listener: Any) -> tuple[object, str]: ...

    def unsubscribe(self, token: object) -> None: ...


class CoreFace(Protocol):
    """The server's core as a transport or the view sees it: verbs, and read-only views."""

    @property
    def tools(self) -> "Mapping[str, Tool]":
        """Every tool this configuration offers, by name, a person's own included (person_input): the same
        table whether or not a view is built. Read-only here: nothing that holds the face adds a tool."""

    def list_tools(self, owner: str | None) -> "tuple[list[Tool], Any, bool, bool]":
        """(tools, groups, shared, several): what `owner` sees in tools/list, its groups, whether every client sees
        the same, whether `owner` has several sessions open (its session tools then list sessionId)."""

    @property
    def client(self) -> "ServerClient | None":
        """The transport's own client: asked and told what no call asks (a session opening, a cooldown's end)."""

    @client.setter
    def client(self, connection: "ServerClient | None") -> None: ...

    @property
    def resources(self) -> LogResources:
        """The logs as MCP resources: listed, read, subscribed to."""

    @property
    def max_sessions(self) -> int:
        """Sessions open at once at most (--max-sessions)."""

    def call_tool(self, name: str, args: Any, caller: "Caller") -> "Future[Outcome]":
        """Start one tool call: a Future of its Outcome (core/answer.py), which the transport renders for its agent
        (answer.for_agent via answer.outcome_of). Raises UnknownTool at once for a name that is no tool's."""

    def owner_of(self, session_id: str) -> str | None:
        """The client a session belongs to, open or ended; None for the server's own."""

    def sessions(self, owner: str | None) -> list[dict[str, Any]]:
        """The open sessions of `owner` (None: all), as list_sessions shows them."""

    def session(self, session_id: str) -> dict[str, Any] | None:
        """An open session's plain state ({owner, heldBy, running, crashed, cooldownS, cooldownMessage}), or None."""

    def timeline(self, session_id: str, after: int = 0, newest: bool = False) -> list[dict[str, Any]]:
        """A session's calls as recorded, secrets scrubbed."""

    def stored_page(self, ref_id: str) -> "tuple[str | None, Any] | None":
        """(session id, the page a call stored or None), or None when no call has that refId."""

    def take_over(self, session_id: str, person: str, timeout: float) -> dict[str, Any]:
        """A person holds the session (their call, tools/person.py); {heldBy}, or the error of another holding it."""

    def hand_back(self, session_id: str, person: str, timeout: float) -> dict[str, Any]:
        """The person hands the session back (their call): the agent acts again, a cooldown it started ends."""

    def act(self, session_id: str, person: str, action: dict[str, Any]) -> "Future[Any]":
        """A person's click, scroll, key or text on the page (their call, its text a secret)."""

    def watch(self, session_id: str, person: str) -> "Picture | None":
        """The session's live picture (its start the person's call); None when it is not open here."""

    def close_sessions_of(self, owner: str) -> None:
        """Close every open session of a client gone for good."""

    def announce(self, address: str) -> None:
        """Where this server listens (host:port), for the servers sharing its history."""

    def close(self) -> None:
        """Close every session and the browser; idempotent."""
