"""JSON logging to stderr; configured once on the main thread, then used from every thread.

stdout is the JSON-RPC channel, so no handler here ever writes to it."""

import logging
import sys

LOGGER_NAME = "mcpbrowser"
log = logging.getLogger(LOGGER_NAME)


class _ScrubSecrets(logging.Filter):
    """Every known secret value (any client's) out of a record: its message, arguments and extra fields.

    A record is scrubbed before it is formatted, so a value never reaches the stream,
    whatever the level; the JSON formatter then escapes what is left."""

    def filter(self, record):
        from mcpbrowser.redaction import EVERY, scrub_value

        if len(EVERY):
            # A message that is no string (an exception logged as is) becomes text only in the formatter,
            # after this: it is made text here. A dict stays one (the JSON formatter spreads its fields).
            record.msg = scrub_value(record.msg if isinstance(record.msg, (str, dict)) else str(record.msg), EVERY)
            if record.args:
                record.args = tuple(scrub_value(a, EVERY) for a in record.args) \
                    if isinstance(record.args, tuple) else scrub_value(record.args, EVERY)
            for key, value in list(vars(record).items()):
                if key not in _STANDARD and isinstance(value, (str, dict, list, tuple)):
                    setattr(record, key, scrub_value(value, EVERY))
            # A traceback (a bug of ours, logged with exc_info) quotes its exception's message and its
            # frames' source lines, which may hold a secret the code was handling: it is formatted here,
            # scrubbed, and kept as the record's text, in place of the exception a formatter would format again.
            if record.exc_info and record.exc_info[0] is not None:
                text = _FORMAT.formatException(record.exc_info)
                scrubbed = scrub_value(text, EVERY)
                if scrubbed != text:
                    record.exc_text, record.exc_info = scrubbed, None
            if record.stack_info:
                record.stack_info = scrub_value(record.stack_info, EVERY)
        return True


_FORMAT = logging.Formatter()


_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}
# On the logger, not a handler: every handler gets the scrubbed record (stderr, the clients'
# notifications/message, an embedder's own), whether or not setup() ran.
log.addFilter(_ScrubSecrets())


# MCP log levels (syslog names) onto Python's, and back.
MCP_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO + 5,
              "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL,
              "alert": logging.CRITICAL + 5, "emergency": logging.CRITICAL + 9}
CLIENT_FIELDS = ("event", "session", "tool", "outcome", "duration_ms", "error")


def client_view(record):
    """(MCP level, data) of a record as a client is shown it: in notifications/message (handshake
    eras) and in the server log resource (resources/server_log.py)."""
    level = next((name for name, num in reversed(MCP_LEVELS.items()) if record.levelno >= num), "debug")
    data = {"message": record.getMessage()}
    data.update({k: getattr(record, k) for k in CLIENT_FIELDS if hasattr(record, k)})
    return level, data


def record_owner(record, owner_of):
    """(whether a record is a client's, which client's): its `owner`, the caller's, when it names one (a
    call with another client's session id is the caller's record), else the owner of the session it is
    about (owner_of(session id)); (False, None) for the server's own records."""
    owner = getattr(record, "owner", None)
    if owner is not None:
        return True, owner
    session = getattr(record, "session", None)
    return (True, owner_of(session)) if isinstance(session, str) else (False, None)


def setup(level="info", stream=None):
    """Send the package's records to stderr as one JSON object per line."""
    from pythonjsonlogger.core import RESERVED_ATTRS
    from pythonjsonlogger.json import JsonFormatter

    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter(
        "%(asctime)s %(levelname)s %(name)s %(message)s %(threadName)s",
        rename_fields={"levelname": "level", "asctime": "time", "threadName": "thread"},
        # A record's owner (record_owner) is for routing only: an anonymous HTTP client's is its Mcp-Session-Id.
        reserved_attrs=[*RESERVED_ATTRS, "owner"],
    ))
    log.handlers[:] = [handler]
    log.setLevel(level.upper())
    log.propagate = False
    return handler
