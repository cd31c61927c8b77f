"""Console and network logs from the session's ring buffers; handlers run on the session thread."""

from mcpbrowser import schema
from mcpbrowser.redaction import redact_headers
from mcpbrowser.tools.base import Tool, session_schema

LOG_RESULT = {
    "type": "object",
    "properties": {"entries": {"type": "array"}, "count": {"type": "integer"}, "dropped": {"type": "integer"}},
    "required": ["entries", "count", "dropped"],
}
LIMIT = schema.integer("Most entries to return, newest last (default 100).", minimum=1, maximum=10_000)


def console_logs(state, args):
    state.flush_events()
    entries = list(state.console)
    if "level" in args:
        entries = [e for e in entries if e["level"] == args["level"]]
    if "since" in args:
        entries = [e for e in entries if e["timestamp"] > args["since"]]
    entries = entries[-args.get("limit", 100):]
    return {"entries": entries, "count": len(entries), "dropped": state.console_dropped}


def _all_headers(source, fallback):
    # Full headers (cookies included) cost a round trip each, so they are read
    # only for the entries returned, and redacted before they leave this thread.
    try:
        return source.all_headers()
    except Exception:
        return fallback


def network_logs(state, args):
    state.flush_events()
    picked = list(state.network)
    if "urlContains" in args:
        picked = [p for p in picked if args["urlContains"] in p[0]["url"]]
    if "method" in args:
        picked = [p for p in picked if p[0]["method"] == args["method"].upper()]
    if "status" in args:
        picked = [p for p in picked if p[0]["status"] == args["status"]]
    sensitive = state.config.redact_headers
    entries = []
    for entry, request in picked[-args.get("limit", 100):]:
        if request is None:  # a blocked WebSocket: there is no request object
            entries.append({**entry, "requestHeaders": {}, "responseHeaders": {}})
            continue
        response = None
        if entry["status"] is not None:
            try:
                response = request.response()
            except Exception:
                response = None
        entries.append({
            **entry,
            "requestHeaders": redact_headers(_all_headers(request, request.headers), sensitive),
            "responseHeaders": redact_headers(_all_headers(response, response.headers), sensitive) if response else {},
        })
    return {"entries": entries, "count": len(entries), "dropped": state.network_dropped}


TOOLS = [
    Tool(
        name="console_logs",
        title="Console messages",
        description="Console messages and page errors of the session, oldest first.",
        input_schema=session_schema({
            "level": schema.string("Only this level.", enum=["log", "debug", "info", "warning", "error"]),
            "limit": LIMIT,
            "since": schema.integer("Only entries after this epoch-ms timestamp.", minimum=0),
        }),
        handler=console_logs,
        read_only=True,
        page_tool=False,
        output_schema=LOG_RESULT,
    ),
    Tool(
        name="network_logs",
        title="Network requests",
        description="Requests of the session with status, duration and headers (secrets redacted).",
        input_schema=session_schema({
            "limit": LIMIT,
            "urlContains": schema.string("Only URLs containing this text."),
            "method": schema.string("Only this HTTP method."),
            "status": schema.integer("Only this response status.", minimum=100, maximum=599),
        }),
        handler=network_logs,
        read_only=True,
        page_tool=False,
        output_schema=LOG_RESULT,
    ),
]
