"""Console and network logs of the current tab, from the session's ring buffers; handlers run on the session thread."""

import os
from contextlib import suppress

from mcpbrowser import schema
from mcpbrowser.session.events import headers_shown
from mcpbrowser.tools.base import SessionTool, result_schema, session_schema

LOG_RESULT = result_schema(entries="array", count="integer", dropped="integer")
DEFAULT_LIMIT = 50
# The newest `limit` shown; an answer that left older ones out says how many (`older`), so tools/list need not.
LIMIT = {"type": "integer", "minimum": 1, "maximum": 10_000}


def newest(entries, args):
    """(the newest `limit`, default 50, of `entries`; {older: how many it left out}, or {} when none)."""
    shown = entries[-args.get("limit", DEFAULT_LIMIT):]
    return shown, ({"older": len(entries) - len(shown)} if len(shown) < len(entries) else {})


# Resource types that a page loads by the dozen and that rarely matter while they load fine.
STATIC = frozenset({"stylesheet", "script", "image", "font", "media", "manifest", "texttrack"})
RESOURCE_TYPES = ["document", "stylesheet", "image", "media", "font", "script", "texttrack", "xhr", "fetch",
                  "eventsource", "websocket", "manifest", "other"]


def downloads(state, args, response):
    state.flush_events()  # a download that finished while the session was idle is saved now
    state.downloads.news()  # this answer tells of them all
    entries = [dict(e) for e in state.downloads.entries]
    for entry in entries:  # removed since by the file retention (--files-max-mb, --retention-days)
        if entry["status"] == "saved" and not os.path.exists(entry["path"]):
            entry["status"] = "removed"
    response.answer({"downloads": entries, "count": len(entries)})


def _elsewhere(state, read):
    """{otherTabs: how many entries `read(tab)` finds in the session's other open tabs}, or {} when none: an agent
    told of them selects a tab (tabs) to read them."""
    count = sum(len(read(tab)) for tab in state.tabs if tab is not state.tab)
    return {"otherTabs": count} if count else {}


def console_logs(state, args, response):
    state.flush_events()

    def picked(entries):
        if "level" in args:
            entries = [e for e in entries if e["level"] == args["level"]]
        return [e for e in entries if e["timestamp"] > args["since"]] if "since" in args else entries

    entries, older = newest(picked(state.events.console_of(state.tab)), args)
    entries = shown_console(entries, args.get("locations", False))
    response.answer({"entries": entries, "count": len(entries), "dropped": state.events.console_dropped, **older,
                     **_elsewhere(state, lambda tab: picked(state.events.console_of(tab, shared=False)))})


def shown_console(entries, locations=False):
    """Console entries as an answer shows them (this tool's, and the console log resource's): where a
    line came from only for errors and warnings, unless `locations`."""
    return list(entries) if locations else [
        e if e["level"] in ("error", "warning") else {k: v for k, v in e.items() if k != "location"} for e in entries]


def _failed(entry):
    return entry["failure"] is not None or entry["blocked"] or (entry["status"] or 0) >= 400


def lean(entry):
    """A request as an answer shows it (network_logs', and the network log resource's), without what
    is empty: no null status, no false `blocked`, no timestamp."""
    return {k: v for k, v in entry.items() if v is not None and v is not False and k != "timestamp"}


def _requests(picked, args):
    """(the requests network_logs' filters keep, how many static ones it left out)."""
    if "urlContains" in args:
        picked = [p for p in picked if args["urlContains"] in p[0]["url"]]
    if "method" in args:
        picked = [p for p in picked if p[0]["method"] == args["method"].upper()]
    if "status" in args:
        picked = [p for p in picked if p[0]["status"] == args["status"]]
    if "resourceType" in args:
        wanted = set(args["resourceType"])
        picked = [p for p in picked if p[0]["resourceType"] in wanted]
    if args.get("failed"):
        picked = [p for p in picked if _failed(p[0])]
    hidden = 0
    if not args.get("includeStatic") and "resourceType" not in args:
        # By default documents, API calls and failures; static files that loaded fine are counted, not listed.
        kept = [p for p in picked if p[0]["resourceType"] not in STATIC or _failed(p[0]) or "routed" in p[0]]
        hidden, picked = len(picked) - len(kept), kept
    return picked, hidden


def network_logs(state, args, response):
    state.flush_events()
    all_pages = args.get("allPages", False)
    picked, hidden = _requests(state.events.requests_of(state.tab, all_pages), args)
    picked, older = newest(picked, args)
    out = {"entries": [], "count": len(picked), "dropped": state.events.network_dropped, **older,
           **_elsewhere(state, lambda tab: _requests(state.events.requests_of(tab, all_pages, shared=False), args)[0])}
    if hidden:
        out["hiddenStatic"] = hidden
    if not args.get("headers"):
        out["entries"] = [lean(entry) for entry, _ in picked]
        response.answer(out)
        return
    sensitive = state.config.redact_headers
    for entry, request in picked:
        if request is None:  # a blocked WebSocket: there is no request object
            out["entries"].append({**entry, "requestHeaders": {}, "responseHeaders": {}})
            continue
        got = None  # the request's response
        if entry["status"] is not None:
            with suppress(Exception):
                got = request.response()
        out["entries"].append({**entry, "requestHeaders": headers_shown(request, sensitive),
                               "responseHeaders": headers_shown(got, sensitive) if got else {}})
    response.answer(out)


TOOLS = [
    SessionTool(
        name="console_logs", title="Console messages",
        description="Console messages and page errors, oldest first; since: epoch ms.",
        input_schema=session_schema({
            "level": {"type": "string", "enum": ["log", "debug", "info", "warning", "error"]},
            "limit": LIMIT,
            "since": {"type": "integer", "minimum": 0},
            "locations": {"type": "boolean"},
        }),
        handler=console_logs, read_only=True, page_tool=False, output_schema=LOG_RESULT,
    ),
    SessionTool(
        name="network_logs", title="Network requests",
        description="Requests of the current page (allPages: of the tab). Static files that loaded "
                    "fine only with includeStatic; failed: errors, blocked, status >= 400.",
        input_schema=session_schema({
            "limit": LIMIT,
            "urlContains": {"type": "string"},
            "method": {"type": "string"},
            "status": {"type": "integer", "minimum": 100, "maximum": 599},
            "failed": {"type": "boolean"},
            # Its enum unlisted: 150 characters a turn.
            "resourceType": {"type": "array", "minItems": 1, "items": schema.unlisted_enum(RESOURCE_TYPES)},
            "includeStatic": {"type": "boolean"},
            "headers": {"type": "boolean"},
            "allPages": {"type": "boolean"},
        }),
        handler=network_logs, read_only=True, page_tool=False, output_schema=LOG_RESULT,
    ),
    SessionTool(
        name="downloads", group="extra", title="Downloads",
        description="The session's downloads: file, size, type, URL, path, or why refused.",
        input_schema=session_schema(),
        handler=downloads, read_only=True, page_tool=False, output_schema=result_schema(downloads="array"),
    ),
]
