"""One tool call as plain data (`Call`), and who made it (`Caller`): what a call may ask of its client.

ANY THREAD: a `Call` is made on the thread that submits it and filled in by the thread that runs it. A
`Caller` is the MCP layer's `McpCaller`, the library's `Embedder` or the live view's `browser.Person`; a
`ServerClient` the transport's (`McpConnection`, `http._Everyone`)."""

import threading
import uuid
from collections.abc import Callable
from typing import Any, Protocol


class Caller(Protocol):
    """Who made a call, as the core sees it. `elicit`, `notify` and `progress` run on the session
    thread of the call; the rest is read on whichever thread submits it."""

    @property
    def name(self) -> str | None:
        """The client's name: rate limits are per client."""

    @property
    def owner(self) -> str | None:
        """The client whose sessions it may see and touch; None sees all (stdio, the library)."""

    @property
    def modern(self) -> bool:
        """Its protocol era is 2026-07-28: it asks its user between calls (InputRequired), not during one."""

    @property
    def can_elicit(self) -> bool:
        """Its client declared the elicitation capability: its user can be asked."""

    @property
    def person(self) -> bool:
        """A person's own hands in the live view: past a person's hold, ahead of the queue."""

    @property
    def lists_tools(self) -> bool:
        """It reads tools/list, so the tool groups it enabled bound what it may call (an MCP client)."""

    def elicit(self, message: str, timeout: float, key: str) -> str:
        """The user's answer to `message`: accept, decline or cancel (or raises InputRequired)."""

    def notify(self, level: str, data: dict[str, Any]) -> None:
        """A notice its user should see whatever log level it asked for."""

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        """How a long call is going, when the client asked (an MCP progressToken)."""

    def tools_changed(self) -> None:
        """Its tool list grew (enable_tools)."""


class ServerClient(Protocol):
    """The server's own client, for what no call asks (a session opening, a cooldown's end). Any thread."""

    @property
    def name(self) -> str | None:
        """The client's name (stdio's clientInfo), or None."""

    @property
    def can_elicit(self) -> bool:
        """Its user can be asked (elicitation/create)."""

    def elicit(self, message: str, timeout: float, key: str) -> str:
        """The user's answer to `message`: accept, decline or cancel."""

    def notify(self, level: str, data: dict[str, Any]) -> None:
        """A notice to every client it stands for."""

    def notify_owner(self, owner: str | None, level: str, data: dict[str, Any]) -> None:
        """A notice about one client's own affairs (its cooldown's end): to that client alone."""


class Embedder:
    """The caller of a library call: it lists no tools and sees every session. A transport serving the same
    core lends its client (`server_client()`) to be asked and told; progress(done, total, message) hears how
    a long call is going, on the session thread."""

    owner: str | None = None
    modern = False
    person = False
    lists_tools = False

    def __init__(self, server_client: Callable[[], ServerClient | None],
                 progress: Callable[[float, float | None, str | None], None] | None = None) -> None:
        self._server_client, self._progress = server_client, progress

    @property
    def name(self) -> str:
        client = self._server_client()
        return (client.name if client is not None else None) or "library"

    @property
    def can_elicit(self) -> bool:
        client = self._server_client()
        return client is not None and client.can_elicit

    def elicit(self, message: str, timeout: float, key: str) -> str:
        client = self._server_client()
        return "cancel" if client is None else client.elicit(message, timeout, key)

    def notify(self, level: str, data: dict[str, Any]) -> None:
        client = self._server_client()
        if client is not None:
            client.notify(level, data)

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        if self._progress is not None:
            self._progress(done, total, message)

    def tools_changed(self) -> None:
        """Nothing to tell: the library calls every tool."""


class Call:
    """Plain data about one tool call, filled in by whichever thread runs it."""

    def __init__(self, tool: str, session_id: str | None, caller: Caller, secret: bool = False) -> None:
        self.ref_id = uuid.uuid4().hex
        self.tool, self.session_id, self.caller = tool, session_id, caller
        self.capture = False  # the page it leaves is stored: decided by OnSession.run (core/on_session.py)
        self.inline = False   # --response-mode full: the snapshot goes into the answer too (decided there too)
        self.capture_after = False  # the page is captured after the answer went out (decided with capture)
        self.console: list[dict[str, Any]] | None = None
        self.snapshot: str | None = None
        self.expires_at: int | None = None  # the session's expiry after this call renewed it (epoch ms)
        self.ran = False        # set on the session thread when the call starts there
        self.secret = secret    # its text is (or may be) a secret: stored withheld (decided by OnSession.run)
        # Its session's one secret book (SessionRegistry.book): its answer, error and rows are scrubbed of it.
        self.secrets: Any = ()
        self.snapshot_reused = False  # a snapshot answered from the page's last one (see page_watch)
        # (selector, value): one plain field filled, so the capture may be the last page with that line changed
        self.field_edit: tuple[str, str | None] | None = None
        self.same_page = False  # a read of the page the agent's last answer named (url, title): see answer.agent_view
        self.record_request: Callable[[], None] | None = None  # the deferred request row, see Dispatcher.dispatch
        self.recorded = threading.Event()
        self.claim: Callable[[str], dict[str, Any] | None] | None = None  # the store's, see not_recorded
        self._not_recorded: dict[str, Any] | None = None
        self._claimed = False

    @property
    def owner(self) -> str | None:
        """The client whose sessions this call may see and touch; None sees all (stdio, the library)."""
        return self.caller.owner

    def flush_request(self) -> None:
        """Write the deferred request row, once (the session thread, or whoever ends an unrun call)."""
        record, self.record_request = self.record_request, None
        if record is not None:
            record()

    def not_recorded(self) -> dict[str, Any] | None:
        """Decided once, as the answer is written: None when this call is (or will be) in the history,
        else why not ({errorCode, message}); its refId then reads nothing back, and the answer says so."""
        if not self._claimed:
            self._claimed = True
            if self.claim is not None:
                self._not_recorded = self.claim(self.ref_id)
        return self._not_recorded
