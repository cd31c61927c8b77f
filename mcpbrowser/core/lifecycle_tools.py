"""Session lifecycle tools; handlers run on the core's worker pool (the page-tools offer: on a session thread)."""

from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from mcpbrowser import errors, schema
from mcpbrowser.errors import BrowserError, BrowserServerError, InvalidParameters, SessionNotFound
from mcpbrowser.page_strings import a_, clip
from mcpbrowser.session import page_reading, throttling
from mcpbrowser.tools.base import SESSION_ID, SUCCESS_MESSAGE, CoreTool, session_schema

STATE_NAME = schema.string("A saved login's name.", pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
STATE_TIMEOUT_S = 30.0  # reading a session's storage: one round trip, unless its thread is busy


def create_session(core, args, call):
    context = {}
    emulation = {key: args[key] for key in EMULATION if key in args and key != "throttle"}
    if emulation:
        context["emulation"] = emulation
    throttle = throttling.settings(args.get("throttle") or {})
    if throttle:
        context["throttle"] = throttle
    if "storageState" in args:
        saved = core.history.named_state(call.owner, args["storageState"])
        if saved is None:
            raise InvalidParameters(f"arguments.storageState: no login is saved as {args['storageState']!r}; "
                                    "saved_states lists them.", details={"field": "storageState"})
        context["storage_state"] = saved
        context["login"] = args["storageState"]  # its name, in the session's metadata: export_script says it
    record = core.warm_pool.create_session(allowed_domains=args.get("allowedDomains"), owner=call.owner,
                                           context=context)
    record.worker.offering_page_tools(_page_tools_for(core, call.owner))
    sessions_changed(core, call, opened=True)
    out = {
        "sessionId": record.session_id,
        "expiresAt": record.expires_at,
        "message": f"Expires {core.config.session_timeout // 1000} s after its last call; "
                   "close it with close_session.",
    }
    if "url" not in args:
        return out
    # The navigation is a call of its own in the history, so get_content(pageRefId) reads the page.
    try:
        page = core.submit("navigate", {"sessionId": record.session_id, "url": args["url"]},
                           caller=call.caller).result()
    except BrowserServerError as exc:
        out["navigationError"] = exc.to_dict()
        return out
    out.update(url=page["url"], title=page["title"], status=page["status"], pageRefId=page["refId"],
               expiresAt=page["expiresAt"], **{k: page[k] for k in ("pageTools", "downloads") if k in page})
    if "message" in page:  # the address was a file: it downloads, and the tab stays blank
        out["message"] += " " + page["message"]
    return out


def _page_tools_for(core, owner):
    """What a session of `owner` does when a page of it offers tools of its own: the webmcp group turns on for
    `owner`, as enable_tools would, and its client hears its list grew (off until then: most pages offer none)."""
    def offer(caller):
        if core.groups.enable(owner, ["webmcp"]):
            caller.tools_changed()
    return offer


def sessions_changed(core, call, opened):
    """A session of the caller's opened or closed: its client hears its list changed when its session tools'
    sessionId may have come or gone from it (listed while two or more are open: tools/base.py, Tool._published)."""
    # An opening says so at any count past one (two at once may both see the count past two); a list read again
    # costs the client a request, not the model a character. A closing says so at one left.
    count = len(core.registry.open_ids(call.owner))
    if (count >= 2) if opened else (count == 1):
        call.caller.tools_changed()


def resume_session(core, args, call):
    session_id = args["sessionId"]
    if session_id in core.registry.ids():
        raise InvalidParameters("That session is open; there is nothing to resume.", session_id=session_id)
    # A session another live server sharing the history runs is its own; one whose server is gone may be resumed.
    holder = core.history.session_holder(session_id)
    if holder is not None and holder["state"] == "active" and holder["alive"]:
        raise core.registry.in_use_error(session_id, holder)
    saved = core.history.saved_state(session_id)
    if saved is None and core.history.has_saved_state(session_id):
        raise SessionNotFound("This session's state was saved with another sealing key, so this server cannot "
                              "resume it (give every server the same --db-key-file). Call create_session.",
                              session_id=session_id)
    if saved is None or holder is None:
        raise SessionNotFound("Nothing is stored for this session, so it cannot be resumed. "
                              "Call create_session.", session_id=session_id)
    # The history decides who resumes it, in one step, before any context opens.
    if not core.history.claim_session(session_id, holder):
        raise core.registry.in_use_error(session_id, core.history.session_holder(session_id) or holder)
    metadata = core.history.session_metadata(session_id)
    context = {key: metadata[key] for key in ("emulation", "login", "throttle") if metadata.get(key)}
    try:
        record = core.warm_pool.create_session(resume={"sessionId": session_id, "storageState": saved[0],
                                                       "url": saved[1]}, owner=call.owner, context=context or None)
    except BaseException:
        core.history.release_claim(session_id)
        raise
    record.worker.offering_page_tools(_page_tools_for(core, call.owner))
    sessions_changed(core, call, opened=True)
    out = {
        "sessionId": session_id,
        "expiresAt": record.expires_at,
        "url": record.worker.info["url"],
        "message": "Session resumed in a fresh context with its cookies and local storage; "
                   "session storage and open tabs are not restored.",
    }
    failed = record.worker.options.get("url_failed")
    if failed:  # as create_session's navigationError: the session is open, its last page is not
        out["navigationError"] = {"errorCode": "NAVIGATION_FAILED", "message": f"Its last page did not load: {failed}"}
        out["message"] += " Its last page did not load (see navigationError): navigate to it again."
    return out


def save_state(core, args, call):
    worker, expires_at = core.registry.renewed(args["sessionId"])
    try:
        storage = worker.submit(page_reading.storage_state).result(STATE_TIMEOUT_S)
    except FutureTimeout:
        raise BrowserError(f"The session was busy for {STATE_TIMEOUT_S:.0f} s; save it when its call is done.",
                           session_id=args["sessionId"]) from None
    if storage is None:
        raise BrowserError("The session's storage cannot be read now (a dialog is open, or its tab closed).",
                           session_id=args["sessionId"])
    summary = core.history.save_named_state(call.owner, args["name"], storage[0])
    return {"name": args["name"], **summary, "expiresAt": expires_at,
            "message": f"Saved; start a session with it: create_session(storageState={args['name']!r})."}


def saved_states(core, args, call):
    deleted = core.history.delete_named_state(call.owner, args["delete"]) if "delete" in args else None
    states = core.history.named_states(call.owner)
    out = {"states": states, "count": len(states)}
    if deleted is not None:
        out["deleted"] = deleted
    return out


def close_session(core, args, call):
    left = core.registry.close_session(args["sessionId"])
    sessions_changed(core, call, opened=False)
    result: dict[str, Any] = {"success": True, "message": f"Session {args['sessionId']} closed."}
    if left.get("dialog"):  # an agent that asks to leave means to leave: say what went with the page
        result["dialogDismissed"] = {**left["dialog"], "message": clip(left["dialog"]["message"])}
        result["message"] += (f" {a_(left['dialog']['type']).capitalize()} dialog "
                              f"({clip(left['dialog']['message'])!r}) was open; it went with the page.")
    if left.get("dismissed"):
        result["dialogsDismissed"] = left["dismissed"]
        result["message"] += f" The server had dismissed {left['dismissed']} dialog(s) itself (a dialog loop)."
    return result


def list_sessions(core, args, call):
    sessions = core.registry.list_sessions(call.owner, core.session_memory.probe)
    open_ids = core.registry.ids()  # the probe closes a session over --session-memory-mb
    sessions = [session for session in sessions if session["sessionId"] in open_ids]
    fleet = core.supervisor.fleet
    # A session's share of the browser: its pages' memory over its processes' PSS (none for a remote browser).
    browser_mb = core.memory.used_mb() if fleet is None else 0
    for session in sessions:
        if browser_mb and "memoryMb" in session:
            session["memoryShare"] = round(min(1.0, session["memoryMb"] / browser_mb), 3)
    out = {"sessions": sessions, "count": len(sessions), **({"endpoints": fleet.health()} if fleet else {})}
    # Servers sharing the history: the caller's sessions that others hold, or held until they went.
    try:
        elsewhere = [s for s in core.history.sessions_elsewhere(call.owner) if s["sessionId"] not in open_ids]
    except errors.HistoryUnavailable:
        elsewhere = []  # the database is away: this server's own sessions are still known
    if elsewhere:
        out["elsewhere"] = elsewhere
    return out


# Emulation: each option goes to the session's own browser context (so no pooled one).
EMULATION = {
    "device": schema.string("Playwright device (iPhone 13, Pixel 7); the options below override it.", minLength=1),
    "viewport": {**schema.obj({"width": schema.integer("", 1, 10_000), "height": schema.integer("", 1, 10_000)},
                              ("width", "height")), "description": "CSS px."},
    "userAgent": schema.string("User-Agent.", minLength=1),
    "locale": schema.string("e.g. de-DE.", minLength=1),
    "timezoneId": schema.string("e.g. Asia/Tokyo.", minLength=1),
    "geolocation": {**schema.obj({"latitude": schema.number("", -90, 90), "longitude": schema.number("", -180, 180),
                                  "accuracy": schema.number("", 0)}, ("latitude", "longitude")),
                    "description": "Granted to the page."},
    "colorScheme": schema.string("prefers-color-scheme.", enum=["light", "dark", "no-preference"]),
    "deviceScaleFactor": schema.number("devicePixelRatio.", 0.1, 10),
    "isMobile": schema.boolean("Mobile viewport."),
    "hasTouch": schema.boolean("Touch events."),
    "throttle": {**schema.obj(throttling.SCHEMA), "description": "CPU and network slow-down (see throttle)."},
}

TOOLS = [
    CoreTool(
        name="create_session", title="Create browser session", description="An isolated browser session; url: load it.",
        input_schema=schema.obj({
            "allowedDomains": {"type": "array", "items": {"type": "string", "minLength": 1},
                               "description": "Narrows the server's (*.example.com: subdomains)."},
            "url": {"type": "string", "minLength": 1},
            "storageState": STATE_NAME,
            **EMULATION,
        }),
        option_groups={"storageState": "logins", **{name: "emulation" for name in EMULATION}},
        handler=create_session, shows_expiry=True,
        output_schema=schema.result({"sessionId": {"type": "string"}, "expiresAt": {"type": "integer"},
                                     "message": {"type": "string"}, "url": {"type": "string"},
                                     "title": {"type": "string"}, "status": {"type": ["integer", "null"]},
                                     "pageRefId": {"type": "string"}, "pageTools": {"type": "string"},
                                     "navigationError": {"type": "object"}}, ("sessionId", "expiresAt", "message")),
    ),
    CoreTool(
        name="resume_session", title="Resume browser session",
        description="Reopen a closed, expired or lost session: cookies, storage, last URL.",
        input_schema=session_schema(), handler=resume_session, shows_expiry=True,
        output_schema=schema.result({"sessionId": {"type": "string"}, "expiresAt": {"type": "integer"},
                                     "url": {"type": "string"}, "message": {"type": "string"}},
                                    ("sessionId", "expiresAt", "url", "message")),
    ),
    CoreTool(
        name="save_state", group="logins", title="Save login",
        description="Save the session's cookies and storages (sealed, never shown) under a name, for "
                    "create_session(storageState).",
        input_schema=session_schema({"name": STATE_NAME}, ("name",)), handler=save_state,
        output_schema=schema.result({"name": {"type": "string"}, "cookies": {"type": "integer"}}, ("name", "cookies")),
    ),
    CoreTool(
        name="saved_states", group="logins", title="Saved logins",
        description="Logins saved with save_state; delete: forget one.",
        input_schema=schema.obj({"delete": STATE_NAME}), handler=saved_states, destructive=True,
        output_schema=schema.result({"states": {"type": "array"}}, ("states",)),
    ),
    CoreTool(
        name="close_session", title="Close browser session",
        description="Discards the session's pages, cookies and storage.",
        input_schema=session_schema(), handler=close_session, destructive=True,
        during_cooldown=True,  # ending a session attempts nothing
        output_schema=SUCCESS_MESSAGE,
    ),
    CoreTool(
        name="list_sessions", title="List browser sessions", description="Open sessions: URL, title, expiry.",
        input_schema=schema.obj({}), handler=list_sessions, read_only=True, idempotent=True,
        output_schema=schema.result({
            "sessions": {"type": "array", "items": schema.result({
                "sessionId": SESSION_ID, "createdAt": {"type": "integer"},
                "expiresAt": {"type": "integer"}, "url": {"type": "string"},
                "title": {"type": "string"}, "busy": {"type": "boolean"}, "endpoint": {"type": "string"},
                "throttle": {"type": "object"}, "memoryMb": {"type": "number"},
                "memoryShare": {"type": "number"},
            }, ("sessionId", "createdAt", "expiresAt", "url", "title", "busy"))},
            "count": {"type": "integer"},
            "endpoints": {"type": "array", "items": {"type": "object"}},
            "elsewhere": {"type": "array", "items": {"type": "object"}},
        }, ("sessions", "count")),
    ),
]
