"""logging/setLevel for one MCP connection, and the log records it then forwards as notifications/message.

2026-07-28 deprecates logging (SEP-2577): its clients are offered the log resources, yet answered if they ask.
Threads: the reader thread sets the level; `ClientLogHandler.emit` runs on whichever thread logs."""

import logging

from mcpbrowser.logs import MCP_LEVELS, client_view, log, record_owner
from mcpbrowser.transports import protocol


class ClientLogHandler(logging.Handler):
    """Forwards log records to the client as notifications/message, once it asked with logging/setLevel."""

    def __init__(self, connection):
        # Silent until the client sets a level: unasked-for log traffic costs an agent tokens.
        super().__init__(logging.CRITICAL + 10)
        self.connection = connection

    def emit(self, record):
        owner = self.connection.owner
        if owner is not None:
            # One client of many (HTTP): only records about its own sessions, not others' ids, pages and timings.
            about, whose = record_owner(record, self.connection.core.owner_of)
            if not about or whose != owner:
                return
        level, data = client_view(record)
        self.connection.send(protocol.notification(
            "notifications/message", {"level": level, "logger": record.name, "data": data}))


class LogMethods:
    """The log level one McpConnection's client asked for, and its handler on the server's log."""

    def __init__(self, connection):
        self._handler = ClientLogHandler(connection)

    def register(self, table):
        table.add("logging/setLevel", self._set_level,
                  capability=lambda version: None if version in protocol.MODERN_VERSIONS else {"logging": {}})

    def open(self):
        log.addHandler(self._handler)

    def close(self):
        log.removeHandler(self._handler)

    def _set_level(self, msg, caller):
        params = protocol.validated("SetLevelRequestParams", msg.params, msg.id)
        self._handler.setLevel(MCP_LEVELS[params.level])
        return {}
