"""tools/* and tasks/* for one MCP connection: the protocol face of the core's tool calls (`Browser.submit`).

It lists a client's tools and wraps each call's Future into its answer: the content the core
rendered (core/answer.py), an error result, or, on 2026-07-28, an InputRequiredResult whose sealed
`requestState` the client's retry brings back with its user's answers. Tasks (2025-11-25): tasks.py.

Threads: the reader thread runs the handlers; whichever thread completes a call's Future
(its session thread, or a core pool thread) builds and sends its answer."""

import base64
import hashlib
import hmac
import json
import os
import time
from typing import Any

from mcpbrowser.core import answer
from mcpbrowser.errors import InputRequired, UnknownTool
from mcpbrowser.transports import protocol
from mcpbrowser.transports.protocol import ProtocolError
from mcpbrowser.transports.tasks import TaskTable

TOOLS_CAPABILITY = {"tools": {"listChanged": True}}  # enable_tools changes a client's list
TASKS_SINCE = "2025-11-25"  # tools/call as a task; the handshake era's form (2026-07-28 has its own)
TASK_CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
STATE_TTL_S = 600  # a requestState is honoured this long after the question was asked


class RequestStates:
    """Seals what a 2026-07-28 call asked its user into the opaque `requestState`, and checks it on the retry:
    an answer counts only for a question this server asked, of this client, for this tool, in the last
    STATE_TTL_S seconds. HMAC-SHA256 under a key of this process: a state does not outlive a restart."""

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


class ToolMethods:
    """The tool and task requests of one McpConnection."""

    def __init__(self, connection):
        self.connection = connection
        self._tasks = TaskTable()  # tools/call run as tasks (2025-11-25)

    def register(self, table):
        table.add("tools/list", self._list, capability=TOOLS_CAPABILITY)
        table.add("tools/call", self._call)
        table.add("tasks/get", lambda msg, caller: self._tasks.get(msg.params, msg.id).describe(),
                  capability=lambda version: {"tasks": TASK_CAPABILITY} if _tasks_on(version) else None)
        table.add("tasks/list", lambda msg, caller: {"tasks": self._tasks.list()})
        table.add("tasks/cancel", lambda msg, caller: self._tasks.cancel(self._tasks.get(msg.params, msg.id), msg.id))
        table.add("tasks/result", self._task_result)

    # -- THE READER THREAD ------------------------------------------------------------

    def _list(self, msg, caller):
        protocol.check_paginated(msg.params, msg.id)
        core = self.connection.core
        structured = caller.version >= protocol.STRUCTURED_OUTPUT_SINCE
        tools, groups, shared, several = core.list_tools(caller.owner)
        out: dict[str, Any] = {"tools": [tool.describe(structured, groups, several) for tool in tools]}
        if _tasks_on(caller.version):
            for tool, entry in zip(tools, out["tools"], strict=True):
                if tool.task_support:  # worth running as a task: it can wait for minutes
                    entry["execution"] = {"taskSupport": "optional"}
        if caller.modern:  # the same for every client until one calls enable_tools or opens a second session
            # Not to be kept: a 2026-07-28 client hears no list_changed, and its list changes with its own calls (a
            # second session lists sessionId, enable_tools, a page with tools); a cached list hid sessionId.
            out.update(cacheScope="public" if shared else "private", ttlMs=0)
        return out

    def _call(self, msg, caller):
        params = protocol.validated("CallToolRequestParams", msg.params, msg.id)
        core = self.connection.core
        if caller.modern and "requestState" in msg.params:
            caller.answers = self._user_answers(msg, params.name)

        def submit():
            try:
                return core.call_tool(params.name, params.arguments or {}, caller)
            except UnknownTool as unknown:  # the dispatcher's refusal, in MCP's words
                raise ProtocolError(protocol.INVALID_PARAMS, unknown.message, msg.id, unknown.details) from None

        sent = (params.arguments or {}).get("sessionId")  # the session the agent named
        if isinstance(msg.params.get("task"), dict) and _tasks_on(caller.version):
            fut = submit()
            tool = core.tools[params.name]
            task = self._tasks.create(msg.params["task"], fut)
            fut.add_done_callback(lambda f: self._tasks.finish(task, self.tool_result(tool, f, caller, sent)))
            self.connection.send(protocol.result(msg.id, {"task": task.describe()}), msg.id)
            return
        self.connection.reserve(msg.id)
        try:
            fut = self.connection.track(msg.id, submit())
        except BaseException:
            # Refused before it started (unknown tool): that is the answer, unless the client cancelled meanwhile.
            if self.connection.untrack(msg.id):
                raise
            return
        tool = core.tools[params.name]
        fut.add_done_callback(lambda f: self._call_done(msg.id, tool, f, caller, sent))

    def _task_result(self, msg, caller):
        """tasks/result: the task's answer, now if it is finished, else as soon as it is."""
        task = self._tasks.get(msg.params, msg.id)
        send = self.connection.send
        return self._tasks.result_or_wait(task, lambda result: send(protocol.result(msg.id, result), msg.id))

    def _user_answers(self, msg, tool_name):
        """The user's answers a 2026-07-28 retry carries, for the questions its requestState names."""
        opened = _STATES.open(msg.params.get("requestState"), self.connection.owner, tool_name)
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

    # -- SESSION THREAD or CORE POOL THREAD (whoever completes the Future) -------------

    def _call_done(self, request_id, tool, fut, caller, sent):
        if self.connection.untrack(request_id):  # else the client cancelled it: no answer may go out
            self.connection.answer(request_id, self.tool_result(tool, fut, caller, sent), caller)

    def tool_result(self, tool, fut, caller, sent=None):
        """The MCP result of a finished call (`sent`: the sessionId its arguments named): what the core rendered
        for the agent (core/answer.py) wrapped, with what this protocol era adds (structuredContent), or, on
        2026-07-28, the question a call asks its user between calls."""
        try:
            content, value, failed = answer.for_agent(tool, answer.outcome_of(fut), sent)
        except InputRequired as exc:
            if caller.modern:
                return self._input_required(exc, tool, caller)
            content, value, failed = answer.failed(exc, sent)
        out = {"content": content, "isError": failed}
        if not failed and tool.output_schema is not None and caller.version >= protocol.STRUCTURED_OUTPUT_SINCE:
            out["structuredContent"] = value
        return out

    def _input_required(self, exc, tool, caller):
        """Ask the user between calls (2026-07-28): the client answers and calls again with our state."""
        request = {"method": "elicitation/create", "params": protocol.elicitation_params(exc.message, caller.version)}
        return {"resultType": "input_required", "inputRequests": {exc.key: request},
                "requestState": _STATES.seal(caller.owner, tool.name, caller.asked, caller.answers)}


def _tasks_on(version):
    """Whether a request of this version may run tools/call as a task (2025-11-25's form)."""
    return version >= TASKS_SINCE and version not in protocol.MODERN_VERSIONS
