"""Navigation tools; handlers run on the session's own thread."""

from urllib.parse import urlsplit

from mcpbrowser import schema
from mcpbrowser.errors import InvalidParameters, NavigationFailed
from mcpbrowser.tools.base import TIMEOUT, Tool, session_schema

WAIT_UNTIL = ("load", "domcontentloaded", "networkidle", "commit")


def _check_url(url):
    parts = urlsplit(url)
    if not parts.scheme or (parts.scheme in ("http", "https") and not parts.netloc):
        raise InvalidParameters(
            f"url must be absolute, with a scheme such as https:// (got {url!r})",
            details={"url": url})


def navigate(state, args):
    url = args["url"]
    _check_url(url)
    try:
        response = state.page.goto(
            url,
            wait_until=args.get("waitUntil", "load"),
            timeout=args.get("timeout", state.config.navigation_timeout),
        )
    except Exception as exc:
        reason = str(exc).split("\n", 1)[0]
        raise NavigationFailed(f"Could not load {url}: {reason}",
                               session_id=state.session_id,
                               details={"url": url, "reason": reason}) from None
    title = state.page.title()
    state.remember_page(title)
    return {"success": True, "title": title, "url": state.page.url,
            "status": response.status if response is not None else None}


TOOLS = [
    Tool(
        name="navigate",
        title="Navigate to URL",
        description="Load a URL in the session's page and wait for the load state. "
                    "Returns final URL, title and HTTP status.",
        input_schema=session_schema({
            "url": schema.string("Absolute URL to load.", minLength=1),
            "waitUntil": schema.string("Load state to wait for (default load).", enum=list(WAIT_UNTIL)),
            "timeout": TIMEOUT,
        }, required=("url",)),
        handler=navigate,
        output_schema={
            "type": "object",
            "properties": {"success": {"type": "boolean"}, "title": {"type": "string"},
                           "url": {"type": "string"}, "status": {"type": ["integer", "null"]}},
            "required": ["success", "title", "url", "status"],
        },
    ),
]
