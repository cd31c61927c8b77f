"""JSON logging to stderr; configured once on the main thread, then used from every thread.

stdout is the JSON-RPC channel, so no handler here ever writes to it.
"""

import logging
import sys

LOGGER_NAME = "mcpbrowser"
log = logging.getLogger(LOGGER_NAME)


def setup(level="info", stream=None):
    """Send the package's records to stderr as one JSON object per line."""
    from pythonjsonlogger.json import JsonFormatter

    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter(
        "%(asctime)s %(levelname)s %(name)s %(message)s %(threadName)s",
        rename_fields={"levelname": "level", "asctime": "time", "threadName": "thread"},
    ))
    log.handlers[:] = [handler]
    log.setLevel(level.upper())
    log.propagate = False
    return handler
