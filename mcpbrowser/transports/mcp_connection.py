"""One MCP client's connection, whatever carries its messages: the protocol, not the transport.

It takes JSON-RPC messages and answers through its transport's `send(message, related)`
(stdio: one pipe; HTTP: the stream of the request `related` names, else the client's own).
It keeps the client's state (era, capabilities, requests in flight and their cancellation),
answers initialize, server/discover and ping, and carries the core's answers, notices and
questions out. Its other requests are in a method table (methods.py) that also gives the
capabilities: tool_methods.py's, resource_methods.py's and log_methods.py's.

Eras: handshake (2024-11-05 .. 2025-11-25), where `initialize` fixes the version and the
user is asked with elicitation/create; per-request (2026-07-28), where each request carries
its version, capabilities and client info in `_meta`, and the user is asked by answering a
call with an InputRequiredResult (tool_methods.py's `RequestStates`).

Threads: the transport's reader thread calls `handle_line` (cheap requests are answered inline,
tools/call handed to the core); whichever thread completes a call's Future sends its answer;
the core's threads call `elicit` and `notify`. `send` must be safe from any thread."""

import threading
from concurrent.futures import Future
from typing import Any

from mcpbrowser import __version__
from mcpbrowser.core.face import CoreFace
from mcpbrowser.logs import log
from mcpbrowser.transports import protocol
from mcpbrowser.transports.log_methods import LogMethods
from mcpbrowser.transports.mcp_caller import McpCaller
from mcpbrowser.transports.methods import MethodTable
from mcpbrowser.transports.protocol import ProtocolError
from mcpbrowser.transports.resource_methods import ResourceMethods
from mcpbrowser.transports.tool_methods import ToolMethods

# What initialize tells the model once: the cheap reads that tool descriptions alone did not teach agents.
INSTRUCTIONS = (
    "Browser automation. Call create_session first: browser tools act on your one session, or on the sessionId "
    "you pass (needed once you have several); "
    "each session has its own cookies and storage. Read only what you need: snapshot with query "
    "(a regex; each match comes with its table row, its list or the heading above it) or section "
    "(what a heading or landmark titles) before a whole snapshot. Act on its [ref=e12] marks "
    "(ref), or on CSS or XPath selectors; fill_form fills a whole form in one call. Every timeout is in "
    "ms. Answers carry a refId: get_content with it as ref_id (and search_for) reads more of that page "
    "later. Close sessions you no longer need with close_session. Failed calls return isError with a "
    "JSON {errorCode, message}."
)

SERVER_INFO = {"name": "mcpbrowser", "title": "mcpbrowser", "version": __version__}


class McpConnection:
    """The MCP state and methods of one client: its protocol version, capabilities, calls in flight.

    name: the client's name for rate limits (HTTP sets its credential's; stdio takes
    clientInfo's). owner: the client whose sessions it may see (HTTP); None sees all."""

    def __init__(self, core: "CoreFace | Future[CoreFace]", send, name=None, owner=None):
        # `core` may be a Future: initialize is answered before the core exists; requests that need it wait.
        self._given, self.send = core, send
        self._state_lock = threading.Lock()
        self._inflight: dict[Any, Future | None] = {}  # request id -> Future of a running or queued tools/call
        self._suppressed: set[Any] = set()  # ids the client cancelled: their answers are dropped
        self.version = protocol.LATEST_VERSION
        self.client_capabilities: dict[str, Any] = {}
        self.name = name
        self._fixed_name = name is not None
        self.owner = owner
        self._pending: dict[Any, Future] = {}  # id of a request we sent the client -> Future of its answer
        self._next_request = 0
        self.logs = LogMethods(self)
        self.tools = ToolMethods(self)
        self.resources = ResourceMethods(self)
        self.methods = self._method_table()

    def _method_table(self):
        """Every request this connection answers, with what each adds to the advertised capabilities."""
        table = MethodTable()
        table.add("initialize", self._initialize)
        table.add("server/discover", self._discover)
        table.add("ping", lambda msg, caller: {})
        self.tools.register(table)
        self.logs.register(table)
        self.resources.register(table)
        return table

    @property
    def core(self) -> CoreFace:
        """The core, once built (the typed face every method of this connection reaches it through)."""
        return self._given.result() if isinstance(self._given, Future) else self._given

    def open(self):
        """Start forwarding log records to the client (once it sets a level)."""
        self.logs.open()
        return self

    def close(self):
        self.logs.close()
        self.resources.close()

    # -- the client, as the core sees it (called from session or timer threads) ------------

    @property
    def can_elicit(self):
        return isinstance(self.client_capabilities.get("elicitation"), dict)

    def elicit(self, message, timeout, key=None, related=None, version=None):
        """Ask the user (elicitation/create, handshake era); returns accept, decline or cancel."""
        params = protocol.elicitation_params(message, version or self.version)
        try:
            answer = self.request_client("elicitation/create", params, timeout, related)
        except Exception as exc:
            log.warning("elicitation failed", extra={"event": "elicitation_failed", "error": str(exc)})
            return "cancel"
        action = answer.get("action") if isinstance(answer, dict) else None
        return action if action in ("accept", "decline", "cancel") else "cancel"

    def request_client(self, method, params, timeout, related=None):
        """Send a request to the client and wait for its answer (never call on the reader thread)."""
        fut: Future[Any] = Future()
        with self._state_lock:
            self._next_request += 1
            request_id = f"mcpbrowser-{self._next_request}"
            self._pending[request_id] = fut
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, related)
        try:
            return fut.result(timeout)
        finally:
            with self._state_lock:
                self._pending.pop(request_id, None)

    def notify(self, level, data, related=None):
        """A log message the client should see whatever level it asked for (cooldown start and end)."""
        self.send(protocol.notification("notifications/message",
                                        {"level": level, "logger": "mcpbrowser", "data": data}), related)

    def notify_owner(self, owner, level, data):
        """A notice about one client's own affairs: this one client hears it when it is that owner."""
        if owner == self.owner:
            self.notify(level, data)

    # -- THE TRANSPORT'S READER THREAD (stdio's reader, or an HTTP request's thread) -----

    def handle_line(self, line):
        """One JSON-RPC message as bytes; answers go through `send`."""
        try:
            msg = protocol.parse(line)
        except ProtocolError as exc:
            self.send(protocol.error(exc.request_id, exc.code, exc.message, exc.data), exc.request_id)
            return
        self.handle_message(msg)

    def handle_message(self, msg):
        """One parsed message (see protocol.parse)."""
        try:
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
            self.send(protocol.error(exc.request_id, exc.code, exc.message, exc.data), msg.id)
        except Exception as exc:  # a bug of ours must not cost the client its answer
            log.exception("request failed", extra={"event": "internal_error"})
            if msg.kind == "request":  # a notification is never answered, even then
                self.send(protocol.error(msg.id, protocol.INTERNAL_ERROR, f"Internal error: {exc}"), msg.id)

    def caller(self, msg):
        """The McpCaller of a request: its era from its own `_meta` (2026-07-28) or from initialize."""
        meta = msg.params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if isinstance(token, bool) or not isinstance(token, (str, int)):
            token = None
        if not protocol.carries_envelope(msg):  # a handshake-era request
            return McpCaller(self, msg.id, self.version, self.client_capabilities, token)
        protocol.check_envelope(msg)
        version = meta[protocol.PROTOCOL_VERSION_KEY]
        if not self._fixed_name:
            info = meta.get(protocol.CLIENT_INFO_KEY)
            self.name = info.get("name") if isinstance(info, dict) else self.name
        return McpCaller(self, msg.id, version, meta[protocol.CLIENT_CAPABILITIES_KEY], token)

    def _request(self, msg):
        caller = self.caller(msg)
        method = self.methods.find(msg.method, caller.version)
        if method is None:
            raise ProtocolError(protocol.METHOD_NOT_FOUND, f"Method not found: {msg.method}", msg.id)
        value = method.handler(msg, caller)
        if value is not None:  # None: it answers later (tools/call, tasks/result of a running task, resources/read)
            self.answer(msg.id, value, caller)

    def answer(self, request_id, value, caller):
        """Send a request's result, with the fields its era asks for: every result leaves here."""
        if caller.modern:
            value.setdefault("resultType", "complete")
        self.send(protocol.result(request_id, value), request_id)

    def _notification(self, msg):
        if msg.method == "notifications/cancelled":
            request_id = msg.params.get("requestId")
            if protocol.valid_request_id(request_id):
                self.cancel(request_id)
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

    def _initialize(self, msg, caller):
        self.version = protocol.negotiate(msg.params, msg.id)
        self.client_capabilities = msg.params.get("capabilities") or {}
        info = msg.params.get("clientInfo")
        if not self._fixed_name:
            self.name = info.get("name") if isinstance(info, dict) else None
        return {"protocolVersion": self.version, "capabilities": self.methods.capabilities(self.version),
                "serverInfo": SERVER_INFO, "instructions": INSTRUCTIONS}

    def _discover(self, msg, caller):
        """server/discover: what a 2026-07-28 client needs instead of initialize (any era may ask)."""
        if not caller.modern:
            protocol.check_envelope(msg)  # a discover names the version it proposes
        capabilities = self.methods.capabilities(protocol.MODERN_VERSIONS[-1])
        return {"supportedVersions": list(protocol.SUPPORTED_VERSIONS), "capabilities": capabilities,
                "instructions": INSTRUCTIONS, "cacheScope": "public", "ttlMs": protocol.DISCOVER_TTL_MS,
                "_meta": {protocol.SERVER_INFO_KEY: SERVER_INFO}}

    def reserve(self, request_id):
        """Hold the id of a request answered later, before it starts; refused while the id is in use."""
        with self._state_lock:
            if request_id in self._inflight:
                raise ProtocolError(protocol.INVALID_REQUEST,
                                    f"Request id {request_id!r} is already in use by a running request", request_id)
            self._inflight[request_id] = None  # reserved: its Future comes with track

    def track(self, request_id, fut):
        """The reserved request started: its Future, which the client may cancel (notifications/cancelled,
        a closed stream), even between the reserve and now."""
        with self._state_lock:
            self._inflight[request_id] = fut
            cancelled = request_id in self._suppressed
        if cancelled:
            fut.cancel()
        return fut

    def untrack(self, request_id):
        """Forget a tracked request as it ends; False when the client cancelled it (no answer may go out)."""
        with self._state_lock:
            self._inflight.pop(request_id, None)
            if request_id in self._suppressed:
                self._suppressed.discard(request_id)
                return False
        return True

    def cancel(self, request_id):
        """The client gave up on a call (notifications/cancelled, or its HTTP stream closed)."""
        with self._state_lock:
            if request_id not in self._inflight:
                return  # unknown or already answered: nothing to do
            fut = self._inflight[request_id]  # None: reserved, not started yet (track cancels it)
            # Whether it is still queued or already running, no answer may go out.
            self._suppressed.add(request_id)
        # Outside the lock: cancel() runs the done-callback, which takes it. A running call finishes unheard.
        if fut is not None:
            fut.cancel()
        log.info("call cancelled", extra={"event": "cancelled", "request": request_id})
