"""Session lifecycle tools; handlers run on the core's worker pool, never on a session thread."""

from mcpbrowser import schema
from mcpbrowser.errors import BrowserServerError, SessionNotFound
from mcpbrowser.tools.base import SESSION_ID, SUCCESS_MESSAGE, CoreTool, session_schema


def create_session(core, args, call):
    record = core.warm_pool.create_session(allowed_domains=args.get("allowedDomains"), owner=call.owner)
    out = {
        "sessionId": record.session_id,
        "expiresAt": record.expires_at,
        "message": f"Expires {core.config.session_timeout // 1000} s after its last call; "
                   "close it with close_session.",
    }
    if "url" not in args:
        return out
    # One call instead of two for the commonest start. The navigation is a
    # call of its own in the history, so get_content(pageRefId) reads the page.
    try:
        page = core.submit("navigate", {"sessionId": record.session_id, "url": args["url"]},
                           caller=call.caller).result()
    except BrowserServerError as exc:
        out["navigationError"] = exc.to_dict()
        return out
    out.update(url=page["url"], title=page["title"], status=page["status"], pageRefId=page["refId"],
               expiresAt=page["expiresAt"])
    return out


def resume_session(core, args, call):
    session_id = args["sessionId"]
    saved = core.history.saved_state(session_id)
    if saved is None:
        raise SessionNotFound("Nothing is stored for this session, so it cannot be resumed. "
                              "Call create_session.", session_id=session_id)
    record = core.warm_pool.create_session(resume={"sessionId": session_id, "storageState": saved[0], "url": saved[1]},
                                           owner=call.owner)
    return {
        "sessionId": session_id,
        "expiresAt": record.expires_at,
        "url": record.worker.info["url"],
        "message": "Session resumed in a fresh context with its cookies and local storage; "
                   "session storage and open tabs are not restored.",
    }


def close_session(core, args, call):
    core.registry.close_session(args["sessionId"])
    return {"success": True, "message": f"Session {args['sessionId']} closed."}


def list_sessions(core, args, call):
    sessions = core.registry.list_sessions(call.owner)
    return {"sessions": sessions, "count": len(sessions)}


TOOLS = [
    CoreTool(
        name="create_session",
        title="Create browser session",
        description="Open an isolated browser session (own cookies and storage). Returns sessionId.",
        input_schema=schema.obj({
            "allowedDomains": {"type": "array", "items": {"type": "string", "minLength": 1},
                               "description": "Narrow the server's allowed domains for this session "
                                              "(`*.example.com` for subdomains); never widens them."},
            "url": schema.string("Navigate there at once; the answer has the page's url, title, "
                                 "status and pageRefId (the navigation's refId).", minLength=1),
        }),
        handler=create_session,
        output_schema={
            "type": "object",
            "properties": {"sessionId": {"type": "string"}, "expiresAt": {"type": "integer"},
                           "message": {"type": "string"}, "url": {"type": "string"}, "title": {"type": "string"},
                           "status": {"type": ["integer", "null"]}, "pageRefId": {"type": "string"},
                           "navigationError": {"type": "object"}},
            "required": ["sessionId", "expiresAt", "message"],
        },
    ),
    CoreTool(
        name="resume_session",
        title="Resume browser session",
        description="Bring back a closed or expired session (even from before a restart) under the "
                    "same id, with its cookies, local storage and last URL.",
        input_schema=session_schema(),
        handler=resume_session,
        output_schema={
            "type": "object",
            "properties": {"sessionId": {"type": "string"}, "expiresAt": {"type": "integer"},
                           "url": {"type": "string"}, "message": {"type": "string"}},
            "required": ["sessionId", "expiresAt", "url", "message"],
        },
    ),
    CoreTool(
        name="close_session",
        title="Close browser session",
        description="Close a session and discard its pages, cookies and storage.",
        input_schema=session_schema(),
        handler=close_session,
        destructive=True,
        output_schema=SUCCESS_MESSAGE,
    ),
    CoreTool(
        name="list_sessions",
        title="List browser sessions",
        description="List open sessions with their current URL, title and expiry.",
        input_schema=schema.obj({}),
        handler=list_sessions,
        read_only=True,
        idempotent=True,
        output_schema={
            "type": "object",
            "properties": {
                "sessions": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "sessionId": SESSION_ID, "createdAt": {"type": "integer"},
                        "expiresAt": {"type": "integer"}, "url": {"type": "string"},
                        "title": {"type": "string"}, "busy": {"type": "boolean"},
                    },
                    "required": ["sessionId", "createdAt", "expiresAt", "url", "title", "busy"],
                }},
                "count": {"type": "integer"},
            },
            "required": ["sessions", "count"],
        },
    ),
]
