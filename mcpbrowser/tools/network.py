"""Network routes of a session (answer, abort or change requests a URL pattern matches); handlers run on the
session thread, through session/routes.py, where the domain policy decides first."""

from mcpbrowser import schema
from mcpbrowser.errors import InvalidParameters
from mcpbrowser.page_strings import clip
from mcpbrowser.session import snapshots
from mcpbrowser.tools.base import SessionTool, result_schema, session_schema

URL = {"type": "string", "minLength": 1, "description": "Glob, as Playwright's: **/api/*"}
ROUTES = result_schema(routes="array")


def route(state, args, response):
    if "url" not in args:
        if set(args) - {"sessionId"}:
            raise InvalidParameters("arguments.url is required to set a route (without url, route lists them).",
                                    details={"field": "url"})
        response.answer({"routes": state.routes.listed()})
        return
    # One of three things, said outright: an agent's `abort: false` made a route answering 200 with nothing, and an
    # answer with requestHeaders dropped the one or the other unsaid.
    does = [what for what, given in (("answer (status, headers, body)", {"status", "headers", "body"} & set(args)),
                                     ("abort: true", args.get("abort") is True),
                                     ("send on with requestHeaders", "requestHeaders" in args)) if given]
    if len(does) != 1:
        raise InvalidParameters("A route does one of: answer (status, headers, body), abort: true, or send on with "
                                f"requestHeaders; {'this asks for ' + ' and '.join(does) if does else 'none given'}.",
                                details={"field": "abort" if not does else "requestHeaders"})
    if "*" not in args["url"] and "://" not in args["url"]:
        raise InvalidParameters(f"url {clip(args['url'])!r} is a glob matched against whole URLs, so it matches none: "
                                f"'**/{clip(args['url'].lstrip('/'))}' matches it on any site.",
                                details={"field": "url"})
    # A credential a route sends or answers with (an Authorization header) is a secret like a typed password.
    sensitive = state.config.redact_headers
    secrets = [value for headers in (args.get("headers") or {}, args.get("requestHeaders") or {})
               for name, value in headers.items() if name.lower() in sensitive and isinstance(value, str)]
    for value in secrets:
        snapshots.mark_secret(state, response, value)
    response.text_is_plain()
    state.routes.add(args)
    response.answer({"routes": state.routes.listed()})


def unroute(state, args, response):
    response.answer({"removed": state.routes.remove(args.get("url")), "routes": state.routes.listed()})


TOOLS = [
    SessionTool(
        name="route", group="site", title="Route requests",
        description="Answer requests matching url with status, headers and body; or abort them; or send them "
                    "on with requestHeaders changed (null removes one). No url: list the routes.",
        input_schema=session_schema({
            "url": URL,
            "status": schema.integer(None, minimum=100, maximum=599),
            "headers": {"type": "object"},
            "body": {"type": "string", "maxLength": 5_000_000},
            "abort": {"type": "boolean"},
            "requestHeaders": {"type": "object"},
        }),
        handler=route, page_tool=False, may_carry_secret=True, output_schema=ROUTES,
    ),
    SessionTool(
        name="unroute", group="site", title="Remove routes",
        description="Remove the route of url, or all.",
        input_schema=session_schema({"url": URL}),
        handler=unroute, idempotent=True, page_tool=False,
        output_schema=result_schema(removed="array", routes="array"),
    ),
]
