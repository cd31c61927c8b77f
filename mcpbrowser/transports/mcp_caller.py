"""Who made one MCP request, as the core sees it: core/call.py's `Caller`, for an MCP client.

Made on the transport's reader thread for each request (`McpConnection.caller`), read there and by the
dispatcher; its `elicit`, `notify` and `progress` run on the session thread of the call it made."""

from mcpbrowser.errors import InputRequired
from mcpbrowser.transports import protocol


class McpCaller:
    """The client's name and owner, its era, how to ask its user and how to tell it a long call's progress."""

    person = False
    lists_tools = True

    def __init__(self, connection, request_id, version, capabilities, progress_token=None):
        self.connection, self.request_id, self.version = connection, request_id, version
        self.name, self.owner = connection.name, connection.owner
        self.modern = version in protocol.MODERN_VERSIONS
        self.capabilities = capabilities if isinstance(capabilities, dict) else {}
        self.progress_token = progress_token  # the request's progressToken: progress is sent only then
        self.answers = {}  # question key -> the user's action, from a 2026-07-28 retry
        self.asked = set()  # question keys raised as InputRequired by this call

    @property
    def can_elicit(self):
        return isinstance(self.capabilities.get("elicitation"), dict)

    def tools_changed(self):
        """enable_tools turned groups on: a handshake-era client hears it and lists tools again
        (a 2026-07-28 client reads the new tools in the answer, and its next tools/list has them)."""
        if not self.modern:
            self.connection.send(protocol.notification("notifications/tools/list_changed", {}), self.request_id)

    def elicit(self, message, timeout, key):
        """The user's answer to `message`: accept, decline or cancel. On 2026-07-28 the answer
        comes with the retried call, so a question not answered yet raises InputRequired."""
        if not self.modern:
            return self.connection.elicit(message, timeout, related=self.request_id, version=self.version)
        if key in self.answers:
            return self.answers[key]
        self.asked.add(key)
        raise InputRequired(message, key=key)

    def notify(self, level, data):
        self.connection.notify(level, data, related=self.request_id)

    def progress(self, done, total, message):
        """notifications/progress, when the client sent a progressToken."""
        if self.progress_token is None:
            return
        params = {"progressToken": self.progress_token, "progress": done}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self.connection.send(protocol.notification("notifications/progress", params), self.request_id)
