"""Cookies and localStorage/sessionStorage entries of a session, one by one; handlers run on the session thread.

A value is a secret when HttpOnly or named like a token (redaction.SECRET_NAME): it enters the session's
secret book as typed text does, shown masked unless the agent asks for it by name.
"""

from urllib.parse import urlsplit

from mcpbrowser.errors import DomainNotAllowed, InvalidParameters
from mcpbrowser.page_strings import clip
from mcpbrowser.redaction import REDACTED, SECRET_NAME
from mcpbrowser.session import snapshots
from mcpbrowser.tools.base import SessionTool, session_schema

ACTION = {"type": "string", "enum": ["list", "set", "delete"]}
NAME = {"type": "string", "minLength": 1}
VALUE_CHARS = 500  # a value (or a name) as a list shows it; asked for by name, whole
MAX_ENTRIES = 200  # storage entries a list shows (a page may keep thousands)
COOKIE_FIELDS = ("name", "value", "domain", "path", "expires", "httpOnly", "secure", "sameSite")
# What a listed cookie leaves out when it is so (an agent pays for each of five cookies' eight fields): the root path,
# a session cookie (expires -1), not HttpOnly, not Secure, SameSite Lax.
COOKIE_DEFAULTS = {"path": "/", "expires": -1, "httpOnly": False, "secure": False, "sameSite": "Lax"}


def _is_secret(name, http_only=False):
    return bool(http_only) or SECRET_NAME.search(name) is not None


def _needs(args, *names):
    for name in names:
        if name not in args:
            raise InvalidParameters(f"arguments.{name} is required to {args.get('action', 'list')} one.",
                                    details={"field": name})


def _shown(state, response, entry, secret, asked):
    """`entry` as the answer shows it: a secret value masked (and known to the book) unless asked for by name; a
    plain one listed at most VALUE_CHARS long (an app's state in one entry: 300,000 characters), whole by name."""
    value = entry["value"]
    if not secret or not value:
        return entry if asked else {**entry, "value": clip(value, VALUE_CHARS)}
    if asked:
        response.reveal(value)
        return {**entry, "secret": True}
    snapshots.learn_secrets(state, (value,))
    return {**entry, "value": REDACTED, "secret": True}


def _plain_or_secret(state, response, value, secret):
    """The value the call sets: a secret (request row and all output scrubbed of it) or plain, as typed text."""
    if secret:
        snapshots.mark_secret(state, response, value)
    else:
        response.text_is_plain()


def cookies(state, args, response):
    action = args.get("action", "list")
    if action == "set":
        _needs(args, "name", "value")
        cookie = {k: args[k] for k in COOKIE_FIELDS if k in args}
        if "domain" in args:
            cookie.setdefault("path", "/")
            host = args["domain"].lstrip(".")
        else:
            url = args.get("url") or state.tab.page.url
            if urlsplit(url).scheme not in ("http", "https"):
                raise InvalidParameters("Give url or domain: the current page has no site to set a cookie for.",
                                        details={"field": "url"})
            host = urlsplit(url).hostname or ""
            if "path" in cookie:  # the browser takes a url, or a domain with a path: not a url with a path
                cookie["domain"] = host
            else:
                cookie["url"] = url
        if args.get("expires", 0) > 1e11:  # after the year 5138 in seconds: milliseconds, as JavaScript counts
            raise InvalidParameters(f"expires is seconds since 1970; {args['expires']} looks like milliseconds "
                                    "(divide by 1000).", details={"field": "expires"})
        _plain_or_secret(state, response, args["value"], _is_secret(args["name"], args.get("httpOnly")))
        if not state.network_policy.allows_host(host):
            raise DomainNotAllowed(f"{host} is not allowed: no cookie is set for it.", session_id=state.session_id,
                                   details={"domain": host})
        try:
            state.context.add_cookies([cookie])
        except Exception as exc:  # the browser refused its fields (SameSite=None without secure, say)
            raise InvalidParameters(f"The browser refused the cookie: {str(exc).splitlines()[0]}",
                                    session_id=state.session_id) from None
        kept = state.context.cookies()
        if not any(c["name"] == args["name"] and host.endswith(c["domain"].lstrip(".")) for c in kept):
            raise InvalidParameters("The browser did not keep the cookie (SameSite=None needs secure: true; an "
                                    "expires in the past deletes it).", session_id=state.session_id)
        response.answer({"set": {k: v for k, v in cookie.items() if k != "value"}})
        return
    response.text_is_plain()
    if action == "delete":
        _needs(args, "name")
        wanted = {k: args[k] for k in ("name", "domain", "path") if k in args}
        before = len(state.context.cookies())
        state.context.clear_cookies(**wanted)
        response.answer({"deleted": before - len(state.context.cookies())})
        return
    found = [c for c in state.context.cookies()
             if all(c[k] == args[k] for k in ("name", "domain", "path") if k in args)]
    shown = [_shown(state, response, {k: c[k] for k in COOKIE_FIELDS if k in c and COOKIE_DEFAULTS.get(k, ...) != c[k]},
                    _is_secret(c["name"], c.get("httpOnly")), "name" in args) for c in found]
    response.answer({"cookies": shown, "count": len(shown)})


def storage(state, args, response):
    action = args.get("action", "list")
    origin = urlsplit(state.tab.page.url)
    if origin.scheme not in ("http", "https"):
        raise InvalidParameters(f"The current page ({state.tab.page.url[:40]}) has no origin with storage: navigate "
                                "to the site first.", details={"url": state.tab.page.url[:200]})
    if state.network_policy.forbids_page(state.tab.page.url):  # a click sent the tab there: it shows the refusal
        raise DomainNotAllowed(f"{origin.hostname} is not allowed: its storage is neither read nor written.",
                               session_id=state.session_id, details={"domain": origin.hostname})
    kind = args.get("kind", "local")
    store = state.tab.page.local_storage if kind == "local" else state.tab.page.session_storage
    where = f"{origin.scheme}://{origin.netloc}"
    if action == "set":
        _needs(args, "name", "value")
        _plain_or_secret(state, response, args["value"], _is_secret(args["name"]))
        store.set_item(args["name"], args["value"])
        response.answer({"set": args["name"], "kind": kind, "origin": where})
        return
    response.text_is_plain()
    if action == "delete":
        _needs(args, "name")
        present = store.get_item(args["name"]) is not None
        store.remove_item(args["name"])
        response.answer({"deleted": int(present), "kind": kind, "origin": where})
        return
    items = [item for item in store.items() if "name" not in args or item["name"] == args["name"]]
    named = "name" in args
    shown = [_shown(state, response, {"name": i["name"] if named else clip(i["name"], VALUE_CHARS),
                                      "value": i["value"]}, _is_secret(i["name"]), named) for i in items[:MAX_ENTRIES]]
    # A page's flood of entries: the first MAX_ENTRIES listed; the rest's secrets still known to the book.
    snapshots.learn_secrets(state, tuple(i["value"] for i in items[MAX_ENTRIES:]
                                         if i["value"] and _is_secret(i["name"])))
    out = {"entries": shown, "count": len(items), "kind": kind, "origin": where}
    if len(items) > MAX_ENTRIES:
        out["truncated"] = f"{len(items) - MAX_ENTRIES} more entries: storage with a name reads one"
    response.answer(out)


TOOLS = [
    SessionTool(
        name="cookies", group="site", title="Cookies",
        description="List (filter: name, domain, path), set or delete the session's cookies. HttpOnly ones and "
                    "names like a session's or a token's are secrets: masked unless named.",
        input_schema=session_schema({
            "action": ACTION,
            "name": NAME,
            "value": {"type": "string"},
            "domain": NAME,
            "path": NAME,
            "url": NAME,
            "expires": {"type": "number", "description": "epoch s"},
            "httpOnly": {"type": "boolean"},
            "secure": {"type": "boolean"},
            "sameSite": {"type": "string", "enum": ["Strict", "Lax", "None"]},
        }),
        handler=cookies, page_tool=False, may_carry_secret=True, output_schema={"type": "object"},
    ),
    SessionTool(
        name="storage", group="site", title="Web storage",
        description="List, set or delete localStorage (kind: session, sessionStorage) entries of the current "
                    "page's origin. Names like a token's are secrets: masked unless named.",
        input_schema=session_schema({
            "action": ACTION,
            "kind": {"type": "string", "enum": ["local", "session"]},
            "name": NAME,
            "value": {"type": "string"},
        }),
        handler=storage, may_carry_secret=True, output_schema={"type": "object"},
    ),
]
