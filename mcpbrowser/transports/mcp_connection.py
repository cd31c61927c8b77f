"""One MCP client's connection, whatever carries its messages: the protocol, not the transport.

It takes JSON-RPC messages and gives answers through a `send(message, related)`
that its transport provides: stdio writes every message on one pipe; HTTP puts a
message on the stream of the request it is `related` to (a request id), or on
the client's own stream when it is None. It answers server/discover, initialize,
ping, tools/list and logging/setLevel, hands tools/call to the core, handles
cancellation and progress, and asks the client's user for input on the core's behalf.
Its requests are a method table (methods.py), from which the capabilities each version is
offered are derived; the resource requests are resource_methods.py's.

Both protocol eras, on every transport:
- handshake (2024-11-05 .. 2025-11-25): `initialize` fixes the version for the
  connection; the server asks the user with an elicitation/create request;
- per-request (2026-07-28): each request carries its version, capabilities and
  client info in `_meta`, every result has a `resultType`, and the server asks by
  answering a call with an InputRequiredResult; the client retries the call with
  the answers and our sealed `requestState` (see `RequestStates`).

Threads:
- the transport's reader thread calls `handle_line`; it answers cheap requests
  inline and hands tools/call to the core (a session thread or the core pool);
- whichever thread completes a call's Future sends its answer: the session
  thread or a core pool thread;
- the core's threads call `elicit` and `notify` (the connection is `core.client`).
`send` must be safe to call from any thread; the transport makes it so.
"""

import base64
import hashlib
import hmac
import json
import logging
import os
import threading
import time
from concurrent.futures import Future
from typing import Any

from mcpbrowser import __version__
from mcpbrowser.errors import BrowserError, BrowserServerError, InputRequired, UnknownTool, as_server_error
from mcpbrowser.logs import MCP_LEVELS, client_view, log, record_owner
from mcpbrowser.page_strings import clip_answer
from mcpbrowser.schema import compact_json
from mcpbrowser.transports import protocol
from mcpbrowser.transports.methods import MethodTable
from mcpbrowser.transports.protocol import ProtocolError
from mcpbrowser.transports.resource_methods import ResourceMethods
from mcpbrowser.transports.tasks import TaskTable

INSTRUCTIONS = (
    "Browser automation. Call create_session first and pass its sessionId to every "
    "browser tool; each session has its own cookies and storage and expires after a "
    "while. Use navigate to load a page, then click and type with CSS or XPath "
    "selectors. Close sessions you no longer need with close_session. Failed calls "
    "return isError with a JSON {errorCode, message}."
)

SERVER_INFO = {"name": "mcpbrowser", "title": "mcpbrowser", "version": __version__}
TOOLS_CAPABILITY = {"tools": {"listChanged": True}}  # enable_tools changes a client's list
TASKS_SINCE = "2025-11-25"  # tools/call as a task; the handshake era's form (2026-07-28 has its own)
TASK_CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
DISCOVER_TTL_MS = 300_000  # the tool list changes only with the server's flags: clients may cache it this long
STATE_TTL_S = 600          # a requestState is honoured this long after the question was asked



class ClientLogHandler(logging.Handler):
    """Forwards log records to the client as notifications/message, once it asked with logging/setLevel."""

    def __init__(self, connection):
        # Silent until the client sets a level: unasked-for log traffic costs an agent tokens.
        super().__init__(logging.CRITICAL + 10)
        self.connection = connection

    def set_client_level(self, level):
        self.setLevel(MCP_LEVELS[level])

    def emit(self, record):
        owner = self.connection.owner
        if owner is not None:
            # One client of many (HTTP): only records about its own sessions. Others' would
            # tell it their session ids, pages and timings.
            about, whose = record_owner(record, self.connection.core.registry.owner_of)
            if not about or whose != owner:
                return
        level, data = client_view(record)
        self.connection.send(protocol.notification(
            "notifications/message", {"level": level, "logger": record.name, "data": data}))


class RequestStates:
    """Seals what a 2026-07-28 call asked its user into the opaque `requestState`, and checks it on the retry.

    The client echoes the state with its answers; an answer counts only for a question
    this server asked, of this client, for this tool, in the last STATE_TTL_S seconds.
    HMAC-SHA256 under a key of this process: a state outlives neither the key nor a restart.
    """

    def __init__(self, key=None):
        self._key = key or os.urandom(32)

    def seal(self, owner, tool, asked, answers):
        """asked: the keys of the questions now put to the user; answers: earlier rounds' (the client
        sends only the latest round's answers, so the state carries the rest)."""
        body = base64.urlsafe_b64encode(json.dumps(
            {"o": owner, "t": tool, "k": sorted(asked), "a": answers, "e": int(time.time()) + STATE_TTL_S},
            separators=(",", ":")).encode()).decode()
        return f"{body}.{self._sign(body)}"

    def open(self, state, owner, tool):
        """(asked keys, earlier answers) of a valid state, else None (altered, expired, another client's or tool's)."""
        if not isinstance(state, str) or state.count(".") != 1:
            return None
        body, mac = state.split(".")
        if not hmac.compare_digest(mac, self._sign(body)):
            return None
        try:
            data = json.loads(base64.urlsafe_b64decode(body.encode()))
        except ValueError:
            return None
        if data.get("o") != owner or data.get("t") != tool or data.get("e", 0) < time.time():
            return None
        return set(data.get("k") or ()), dict(data.get("a") or {})

    def _sign(self, body):
        return hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()


_STATES = RequestStates()  # one per process: a state from one connection is good on another of the same client


class McpCaller:
    """Who made one request, as the core sees it (core/call.py's `Caller`): the client's name and owner,
    its era, how to ask its user and how to tell it a long call's progress.

    Made on the transport's thread for each request; used on the session thread
    that runs the call (`elicit`, `notify`, `progress`) and by the dispatcher (`name`, `owner`).
    """

    person = False
    lists_tools = True

    def __init__(self, connection, request_id, version, capabilities, progress_token=None):
        self.connection = connection
        self.request_id = request_id
        self.version = version
        self.capabilities = capabilities if isinstance(capabilities, dict) else {}
        self.progress_token = progress_token  # the request's progressToken: progress is sent only then
        self.answers = {}  # question key -> the user's action, from a 2026-07-28 retry
        self.asked = set()  # question keys raised as InputRequired by this call

    @property
    def modern(self):
        return self.version in protocol.MODERN_VERSIONS

    @property
    def name(self):
        return self.connection.name

    @property
    def owner(self):
        return self.connection.owner

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


class McpConnection:
    """The MCP state and methods of one client: its protocol version, capabilities, calls in flight.

    name: the client's name for rate limits (HTTP sets its credential's; stdio takes
    clientInfo's). owner: the client whose sessions it may see (HTTP); None sees all.
    """

    def __init__(self, core, send, name=None, owner=None):
        # `core` may be a Future: initialize is answered before the core (store, thread
        # pools, browser start) exists. Requests that need it wait.
        self._core = core
        self.send = send
        self._state_lock = threading.Lock()
        self._inflight = {}      # request id -> Future of a running or queued tools/call
        self._suppressed = set()  # ids the client cancelled: their answers are dropped
        self.version = protocol.LATEST_VERSION
        self.client_capabilities = {}
        self.name = name
        self._fixed_name = name is not None
        self.owner = owner
        self._pending = {}        # id of a request we sent the client -> Future of its answer
        self._tasks = TaskTable()  # tools/call run as tasks (2025-11-25)
        self._next_request = 0
        self._log_handler = ClientLogHandler(self)
        self.resources = ResourceMethods(self)
        self.methods = self._method_table()

    def _method_table(self):
        """Every request this connection answers, with what each adds to the advertised capabilities."""
        table = MethodTable()
        table.add("initialize", self._initialize)
        table.add("server/discover", self._discover)
        table.add("ping", lambda msg, caller: {})
        table.add("tools/list", self._tools_list, capability=TOOLS_CAPABILITY)
        table.add("tools/call", self._call_tool)
        # SEP-2577: 2026-07-28 deprecates logging; its clients are offered the log resources instead
        # (see resources/), and a request that still asks is answered as before.
        table.add("logging/setLevel", self._set_level,
                  capability=lambda version: None if version in protocol.MODERN_VERSIONS else {"logging": {}})
        table.add("tasks/get", lambda msg, caller: self._tasks.get(msg.params, msg.id).describe(),
                  capability=lambda version: {"tasks": TASK_CAPABILITY} if _tasks_on(version) else None)
        table.add("tasks/list", lambda msg, caller: {"tasks": self._tasks.list()})
        table.add("tasks/cancel", lambda msg, caller: self._tasks.cancel(self._tasks.get(msg.params, msg.id), msg.id))
        table.add("tasks/result", self._task_result)
        self.resources.register(table)
        return table

    @property
    def core(self):
        return self._core.result() if isinstance(self._core, Future) else self._core

    def open(self):
        """Start forwarding log records to the client (once it sets a level)."""
        log.addHandler(self._log_handler)
        return self

    def close(self):
        log.removeHandler(self._log_handler)
        self.resources.close()

    # -- the client, as the core sees it (called from session or timer threads) ------------

    @property
    def can_elicit(self):
        return isinstance(self.client_capabilities.get("elicitation"), dict)

    def elicit(self, message, timeout, key=None, related=None, version=None):
        """Ask the user (elicitation/create, handshake era); returns accept, decline or cancel."""
        params = elicitation_params(message, version or self.version)
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
        version = protocol.request_version(msg)
        if version is None:
            return McpCaller(self, msg.id, self.version, self.client_capabilities, token)
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
        if value is None:
            return  # the handler answers later (tools/call, tasks/result of a running task, resources/read)
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
                "instructions": INSTRUCTIONS, "cacheScope": "public", "ttlMs": DISCOVER_TTL_MS,
                "_meta": {protocol.SERVER_INFO_KEY: SERVER_INFO}}

    def _tools_list(self, msg, caller):
        protocol.check_paginated(msg.params, msg.id)
        structured = caller.version >= protocol.STRUCTURED_OUTPUT_SINCE
        tools, groups = self.core.groups.listed(caller.owner)
        out: dict[str, Any] = {"tools": [tool.describe(structured, groups) for tool in tools]}
        if _tasks_on(caller.version):
            for tool, entry in zip(tools, out["tools"], strict=True):
                if tool.task_support:  # worth running as a task: it can wait for minutes
                    entry["execution"] = {"taskSupport": "optional"}
        if caller.modern:  # the same for every client until one calls enable_tools
            out.update(cacheScope="public" if self.core.groups.is_default(groups) else "private",
                       ttlMs=DISCOVER_TTL_MS)
        return out

    def _set_level(self, msg, caller):
        params = protocol.validated("SetLevelRequestParams", msg.params, msg.id)
        self._log_handler.set_client_level(params.level)
        return {}

    def _call_tool(self, msg, caller):
        params = protocol.validated("CallToolRequestParams", msg.params, msg.id)
        if caller.modern and "requestState" in msg.params:
            caller.answers = self._answers(msg, params.name)
        as_task = isinstance(msg.params.get("task"), dict) and _tasks_on(caller.version)
        with self._state_lock:
            if not as_task and msg.id in self._inflight:
                raise ProtocolError(protocol.INVALID_REQUEST,
                                    f"Request id {msg.id!r} is already in use by a running call", msg.id)
            fut = self.core.submit(params.name, params.arguments or {}, caller=caller)
            unknown = fut.exception() if fut.done() and not fut.cancelled() else None
            if isinstance(unknown, UnknownTool):  # the dispatcher's decision, in MCP's words
                raise ProtocolError(protocol.INVALID_PARAMS, unknown.message, msg.id, unknown.details)
            if not as_task:
                self._inflight[msg.id] = fut
        tool = self.core.tools[params.name]
        if as_task:
            task = self._tasks.create(msg.params["task"], fut)
            fut.add_done_callback(lambda f: self._tasks.finish(task, self.tool_result(tool, f, caller)))
            self.send(protocol.result(msg.id, {"task": task.describe()}), msg.id)
            return
        fut.add_done_callback(lambda f: self._answer(msg.id, tool, f, caller))

    def _task_result(self, msg, caller):
        """tasks/result: the task's answer, now if it is finished, else as soon as it is."""
        task = self._tasks.get(msg.params, msg.id)
        return self._tasks.result_or_wait(task, lambda result: self.send(protocol.result(msg.id, result), msg.id))

    def _answers(self, msg, tool_name):
        """The user's answers a 2026-07-28 retry carries, for the questions its requestState names."""
        opened = _STATES.open(msg.params.get("requestState"), self.owner, tool_name)
        if opened is None:
            raise ProtocolError(protocol.INVALID_PARAMS, "Invalid params: requestState is not one this "
                                "server gave this client for this tool, or it expired; call the tool again "
                                "without it.", msg.id)
        asked, answers = opened
        responses = msg.params.get("inputResponses")
        responses = responses if isinstance(responses, dict) else {}
        for key in asked:
            response = responses.get(key)
            action = response.get("action") if isinstance(response, dict) else None
            answers[key] = action if action in ("accept", "decline", "cancel") else "cancel"
        return answers

    def track(self, request_id, fut):
        """A request answered later, whose Future the client may cancel (notifications/cancelled, a closed stream)."""
        with self._state_lock:
            if request_id in self._inflight:
                raise ProtocolError(protocol.INVALID_REQUEST,
                                    f"Request id {request_id!r} is already in use by a running request", request_id)
            self._inflight[request_id] = fut

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

    def _answer(self, request_id, tool, fut, caller):
        with self._state_lock:
            self._inflight.pop(request_id, None)
            if request_id in self._suppressed:
                self._suppressed.discard(request_id)
                return
        self.answer(request_id, self.tool_result(tool, fut, caller), caller)

    def tool_result(self, tool, fut, caller=None):
        if fut.cancelled():  # only shutdown cancels a call the client did not cancel
            return _error_result(BrowserError("The server is shutting down."))
        try:
            value = fut.result()
        except InputRequired as exc:
            if caller is not None and caller.modern:
                return self._input_required(exc, tool, caller)
            return _error_result(exc)
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
        value = clip_answer(value, tool.text_field)  # the history keeps the call's own result whole
        shown = agent_view(value, tool.shows_expiry)
        field = tool.text_field
        if field is not None and isinstance(shown.get(field), str) and shown[field]:
            # Page text goes as it is, in a block of its own: inside JSON every line
            # break and quote would cost the agent an escape (about 9% of a snapshot).
            content[0:0] = [{"type": "text", "text": compact_json({k: v for k, v in shown.items() if k != field})},
                            {"type": "text", "text": shown[field]}]
        else:
            content.insert(0, {"type": "text", "text": compact_json(shown)})
        out = {"content": content, "isError": False}
        version = caller.version if caller is not None else self.version
        if tool.output_schema is not None and version >= protocol.STRUCTURED_OUTPUT_SINCE:
            out["structuredContent"] = value
        return out

    def _input_required(self, exc, tool, caller):
        """Ask the user between calls (2026-07-28): the client answers and calls again with our state."""
        request = {"method": "elicitation/create", "params": elicitation_params(exc.message, caller.version)}
        return {"resultType": "input_required", "inputRequests": {exc.key: request},
                "requestState": _STATES.seal(self.owner, tool.name, caller.asked, caller.answers)}


def _tasks_on(version):
    """Whether a request of this version may run tools/call as a task (2025-11-25's form)."""
    return version >= TASKS_SINCE and version not in protocol.MODERN_VERSIONS


def elicitation_params(message, version):
    """An elicitation that asks yes or no (accept or decline) about `message`."""
    params = {"message": message, "requestedSchema": {"type": "object", "properties": {}}}
    if version >= "2025-11-25":
        params["mode"] = "form"
    return params


def agent_view(value, shows_expiry=False):
    """What the model reads of an answer (it pays for every character).

    `meta` is there only when the call logged to the console (its counts are then
    worth a look with get_console_content); a content hash is for machines;
    `expiresAt` only when the tool `shows_expiry`; a snapshot's url and title not
    when the agent's previous answer on the session named the same (`meta.samePage`).
    All stay in structuredContent, and in the history, whole.
    """
    meta = value.get("meta")
    if meta is None:
        return {k: v for k, v in value.items() if k != "hash"} if "hash" in value else value
    drop = {"hash"}
    if not meta.get("hasConsoleLogs"):
        drop.add("meta")
    if not shows_expiry:
        drop.add("expiresAt")
    if meta.get("samePage"):
        drop.update(("url", "title"))
    return {k: v for k, v in value.items() if k not in drop}


def _error_result(exc):
    return {"content": [{"type": "text", "text": compact_json(clip_answer(exc.to_dict()))}], "isError": True}

