"""One MCP client's connection, whatever carries its messages: the protocol, not the transport.

It takes parsed JSON-RPC lines and gives answers through a `send(message)` that
its transport provides (stdio today; an HTTP transport is another user of it).
It answers initialize, ping, tools/list and logging/setLevel, hands tools/call to
the core, handles cancellation and progress, and asks the client for input
(elicitation) on the core's behalf.

Threads:
- the transport's reader thread calls `handle_line`; it answers cheap requests
  inline and hands tools/call to the core (a session thread or the core pool);
- whichever thread completes a call's Future sends its answer: the session
  thread or a core pool thread;
- the core's threads call `elicit` and `notify` (the connection is `core.client`).
`send` must be safe to call from any thread; the transport makes it so.
"""

import base64
import logging
import threading
from concurrent.futures import Future
from typing import Any

from mcpbrowser import __version__
from mcpbrowser.errors import BrowserError, BrowserServerError, as_server_error
from mcpbrowser.logs import log
from mcpbrowser.schema import compact_json
from mcpbrowser.transports import protocol
from mcpbrowser.transports.protocol import ProtocolError

INSTRUCTIONS = (
    "Browser automation. Call create_session first and pass its sessionId to every "
    "browser tool; each session has its own cookies and storage and expires after a "
    "while. Use navigate to load a page, then click and type with CSS or XPath "
    "selectors. Close sessions you no longer need with close_session. Failed calls "
    "return isError with a JSON {errorCode, message}."
)

# MCP log levels (syslog names) onto Python's, and back.
_PY_LEVEL = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO + 5,
             "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL,
             "alert": logging.CRITICAL + 5, "emergency": logging.CRITICAL + 9}
_LOG_FIELDS = ("event", "session", "tool", "outcome", "duration_ms", "error")


class ClientLogHandler(logging.Handler):
    """Forwards log records to the client as notifications/message, once it asked with logging/setLevel."""

    def __init__(self, connection):
        # Silent until the client sets a level: unasked-for log traffic costs an agent tokens.
        super().__init__(logging.CRITICAL + 10)
        self.connection = connection

    def set_client_level(self, level):
        self.setLevel(_PY_LEVEL[level])

    def emit(self, record):
        level = next((name for name, num in reversed(_PY_LEVEL.items()) if record.levelno >= num), "debug")
        data = {"message": record.getMessage()}
        data.update({k: getattr(record, k) for k in _LOG_FIELDS if hasattr(record, k)})
        self.connection.send(protocol.notification(
            "notifications/message", {"level": level, "logger": record.name, "data": data}))


class McpConnection:
    """The MCP state and methods of one client: its protocol version, capabilities, calls in flight."""

    def __init__(self, core, send):
        # `core` may be a Future: initialize is answered before the core (store, thread
        # pools, browser start) exists. Requests that need it wait.
        self._core = core
        self.send = send
        self._state_lock = threading.Lock()
        self._inflight = {}      # request id -> Future of a running or queued tools/call
        self._suppressed = set()  # ids the client cancelled: their answers are dropped
        self.version = protocol.LATEST_VERSION
        self.client_capabilities = {}
        self.name = None          # the client's name from initialize (rate limits are per client)
        self._pending = {}        # id of a request we sent the client -> Future of its answer
        self._next_request = 0
        self._log_handler = ClientLogHandler(self)
        self._handlers = {
            "initialize": self._initialize,
            "ping": lambda msg: {},
            "tools/list": self._tools_list,
            "logging/setLevel": self._set_level,
        }

    @property
    def core(self):
        return self._core.result() if isinstance(self._core, Future) else self._core

    def open(self):
        """Start forwarding log records to the client (once it sets a level)."""
        log.addHandler(self._log_handler)
        return self

    def close(self):
        log.removeHandler(self._log_handler)

    # -- the client, as the core sees it (called from session or timer threads) ------------

    @property
    def can_elicit(self):
        return isinstance(self.client_capabilities.get("elicitation"), dict)

    def elicit(self, message, timeout):
        """Ask the user (elicitation/create); returns accept, decline or cancel."""
        params = {"message": message,
                  "requestedSchema": {"type": "object", "properties": {}}}
        if self.version >= "2025-11-25":
            params["mode"] = "form"
        try:
            answer = self.request_client("elicitation/create", params, timeout)
        except Exception as exc:
            log.warning("elicitation failed", extra={"event": "elicitation_failed", "error": str(exc)})
            return "cancel"
        action = answer.get("action") if isinstance(answer, dict) else None
        return action if action in ("accept", "decline", "cancel") else "cancel"

    def request_client(self, method, params, timeout):
        """Send a request to the client and wait for its answer (never call on the reader thread)."""
        fut: Future[Any] = Future()
        with self._state_lock:
            self._next_request += 1
            request_id = f"mcpbrowser-{self._next_request}"
            self._pending[request_id] = fut
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        try:
            return fut.result(timeout)
        finally:
            with self._state_lock:
                self._pending.pop(request_id, None)

    def notify(self, level, data):
        """A log message the client should see whatever level it asked for (cooldown start and end)."""
        self.send(protocol.notification("notifications/message",
                                        {"level": level, "logger": "mcpbrowser", "data": data}))

    # -- THE TRANSPORT'S READER THREAD ----------------------------------------------

    def handle_line(self, line):
        msg = None
        try:
            msg = protocol.parse(line)
            if msg.kind == "request":
                self._request(msg)
            elif msg.kind == "notification":
                self._notification(msg)
            elif msg.kind == "malformed":
                log.warning("malformed notification ignored", extra={"event": "bad_notification",
                                                                     "error": repr(msg.body)[:200]})
            else:
                self._response(msg)
        except ProtocolError as exc:
            self.send(protocol.error(exc.request_id, exc.code, exc.message, exc.data))
        except Exception as exc:  # a bug of ours must not cost the client its answer
            log.exception("request failed", extra={"event": "internal_error"})
            if msg is None or msg.kind == "request":  # a notification is never answered, even then
                self.send(protocol.error(getattr(msg, "id", None), protocol.INTERNAL_ERROR, f"Internal error: {exc}"))

    def _request(self, msg):
        if msg.method == "tools/call":
            self._call_tool(msg)
            return
        handler = self._handlers.get(msg.method)
        if handler is None:
            # server/discover lands here too: the 2.x client in auto mode then falls back to initialize.
            raise ProtocolError(protocol.METHOD_NOT_FOUND, f"Method not found: {msg.method}", msg.id)
        self.send(protocol.result(msg.id, handler(msg)))

    def _notification(self, msg):
        if msg.method == "notifications/cancelled":
            request_id = msg.params.get("requestId")
            if protocol.valid_request_id(request_id):
                self._cancel(request_id)
            else:
                log.warning("malformed notification ignored", extra={
                    "event": "bad_notification", "error": f"requestId {request_id!r} cannot name a request"})
        # notifications/initialized and unknown notifications need no action.

    def _response(self, msg):
        """An answer to a request we sent the client (elicitation); unknown ids are ignored."""
        with self._state_lock:
            fut = self._pending.pop(msg.id, None)
        if fut is not None and not fut.done():
            if "error" in msg.body:
                fut.set_exception(RuntimeError(str(msg.body["error"])))
            else:
                fut.set_result(msg.body.get("result"))

    def _initialize(self, msg):
        self.version = protocol.negotiate(msg.params, msg.id)
        self.client_capabilities = msg.params.get("capabilities") or {}
        info = msg.params.get("clientInfo")
        self.name = info.get("name") if isinstance(info, dict) else None
        return {
            "protocolVersion": self.version,
            "capabilities": {"tools": {"listChanged": False}, "logging": {}},
            "serverInfo": {"name": "mcpbrowser", "title": "mcpbrowser", "version": __version__},
            "instructions": INSTRUCTIONS,
        }

    def _structured(self):
        return self.version >= protocol.STRUCTURED_OUTPUT_SINCE

    def _tools_list(self, msg):
        protocol.check_paginated(msg.params, msg.id)
        structured = self._structured()
        return {"tools": [tool.describe(structured) for tool in self.core.tools.values()]}

    def _set_level(self, msg):
        params = protocol.validated("SetLevelRequestParams", msg.params, msg.id)
        self._log_handler.set_client_level(params.level)
        return {}

    def _call_tool(self, msg):
        params = protocol.validated("CallToolRequestParams", msg.params, msg.id)
        tool = self.core.tools.get(params.name)
        if tool is None:
            raise ProtocolError(protocol.INVALID_PARAMS, f"Unknown tool: {params.name}", msg.id,
                                {"known": list(self.core.tools)})
        with self._state_lock:
            if msg.id in self._inflight:
                raise ProtocolError(protocol.INVALID_REQUEST,
                                    f"Request id {msg.id!r} is already in use by a running call", msg.id)
            fut = self.core.submit(tool.name, params.arguments or {}, progress=self._progress(msg))
            self._inflight[msg.id] = fut
        fut.add_done_callback(lambda f: self._answer(msg.id, tool, f))

    def _progress(self, msg):
        """A reporter that sends notifications/progress, when the client sent a progressToken."""
        meta = msg.params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if token is None or isinstance(token, bool) or not isinstance(token, (str, int)):
            return None

        def report(progress, total=None, message=None):
            params = {"progressToken": token, "progress": progress}
            if total is not None:
                params["total"] = total
            if message is not None:
                params["message"] = message
            self.send(protocol.notification("notifications/progress", params))

        return report

    def _cancel(self, request_id):
        with self._state_lock:
            fut = self._inflight.get(request_id)
            if fut is None:
                return  # unknown or already answered: nothing to do
            # Whether it is still queued or already running, no answer may go out.
            self._suppressed.add(request_id)
        # Outside the lock: cancel() runs the done-callback, which takes the lock.
        # A queued call is dropped here; a running one finishes and its answer is discarded.
        fut.cancel()
        log.info("call cancelled", extra={"event": "cancelled", "request": request_id})

    # -- SESSION THREAD or CORE POOL THREAD (whoever completes the Future) -------------

    def _answer(self, request_id, tool, fut):
        with self._state_lock:
            self._inflight.pop(request_id, None)
            if request_id in self._suppressed:
                self._suppressed.discard(request_id)
                return
        self.send(protocol.result(request_id, self.tool_result(tool, fut)))

    def tool_result(self, tool, fut):
        if fut.cancelled():  # only shutdown cancels a call the client did not cancel
            return _error_result(BrowserError("The server is shutting down."))
        try:
            value = fut.result()
        except Exception as exc:
            if not isinstance(exc, BrowserServerError):
                log.exception("tool raised", extra={"event": "tool_bug", "tool": tool.name})
            return _error_result(as_server_error(exc))
        content = []
        if tool.returns_image:
            image = value["image"]
            value = {k: v for k, v in value.items() if k != "image"}
            content.append({"type": "image", "data": base64.b64encode(image).decode("ascii"),
                            "mimeType": f"image/{value['format']}"})
        shown = agent_view(value)
        field = tool.text_field
        if field is not None and isinstance(shown.get(field), str) and shown[field]:
            # Page text goes as it is, in a block of its own: inside JSON every line
            # break and quote would cost the agent an escape (about 9% of a snapshot).
            content[0:0] = [{"type": "text", "text": compact_json({k: v for k, v in shown.items() if k != field})},
                            {"type": "text", "text": shown[field]}]
        else:
            content.insert(0, {"type": "text", "text": compact_json(shown)})
        out = {"content": content, "isError": False}
        if tool.output_schema is not None and self._structured():
            out["structuredContent"] = value
        return out


def agent_view(value):
    """What the model reads of an answer (it pays for every character).

    `meta` is there only when the call logged to the console (its counts are then
    worth a look with get_console_content); a content hash is for machines. Both
    stay in structuredContent, and in the history, whole.
    """
    meta = value.get("meta")
    if (meta is None or meta.get("hasConsoleLogs")) and "hash" not in value:
        return value
    return {k: v for k, v in value.items() if k != "hash" and (k != "meta" or meta.get("hasConsoleLogs"))}


def _error_result(exc):
    return {"content": [{"type": "text", "text": compact_json(exc.to_dict())}], "isError": True}

