"""One session's network routes: requests a URL pattern matches answered, aborted or sent on with changed headers.

SESSION THREAD ONLY. Each route is a handler on the session's BrowserContext, which Playwright
runs on this thread. The domain policy (network_policy.py) decides first, on every request,
against the policy as it is when the request is made: a route never opens what it closes.
"""

from typing import Any

from mcpbrowser.errors import InvalidParameters
from mcpbrowser.logs import log
from mcpbrowser.redaction import scrub_urls
from mcpbrowser.session.events import EventBuffers
from mcpbrowser.session.network_policy import NetworkPolicy

# Request headers a route may not set: which host a request reaches is the policy's to check (the
# proxy reads the URL, not the Host header, so a changed Host would reach another virtual host of
# an allowed address), and the proxy's own headers are the proxy's.
FORBIDDEN_REQUEST_HEADERS = frozenset({"host", ":authority", "proxy-authorization", "proxy-connection"})


def _headers(value: Any, name: str, nulls: bool) -> dict[str, str | None]:
    """A headers argument checked: names to strings (or None, to remove one, where `nulls`)."""
    bad = [key for key, v in value.items() if not (isinstance(v, str) or (nulls and v is None))]
    if bad:
        kind = "a string or null" if nulls else "a string"
        raise InvalidParameters(f"arguments.{name}.{bad[0]} must be {kind}.", details={"field": f"{name}.{bad[0]}"})
    return dict(value)


class Routes:
    """The routes of one session, newest first as Playwright runs them."""

    def __init__(self, context: Any, policy: NetworkPolicy, events: EventBuffers) -> None:
        self._context, self._policy, self._events = context, policy, events
        self._routes: dict[str, tuple[dict[str, Any], Any]] = {}  # pattern -> (what it does, its handler)

    def add(self, args: dict[str, Any]) -> None:
        """Route `args["url"]` (a glob) as the arguments say; a pattern routed before is replaced."""
        pattern = args["url"]
        if args.get("abort"):
            spec: dict[str, Any] = {"url": pattern, "action": "abort"}
        elif "requestHeaders" in args:
            changed = _headers(args["requestHeaders"], "requestHeaders", nulls=True)
            refused = sorted(k for k in changed if k.lower() in FORBIDDEN_REQUEST_HEADERS)
            if refused:
                raise InvalidParameters(f"A route may not set the {refused[0]} header: which host a request "
                                        "reaches is the domain policy's to decide.", details={"field": refused[0]})
            spec = {"url": pattern, "action": "headers", "requestHeaders": changed}
        else:
            spec = {"url": pattern, "action": "fulfill", "status": args.get("status", 200),
                    "headers": _headers(args.get("headers") or {}, "headers", nulls=False),
                    "body": args.get("body", "")}
        self.remove(pattern)
        handler = self._handler(spec)
        self._context.route(pattern, handler)
        self._routes[pattern] = (spec, handler)

    def remove(self, pattern: str | None) -> list[str]:
        """Remove the route of `pattern`, or every route (None); the patterns removed."""
        gone = [p for p in self._routes if pattern is None or p == pattern]
        for p in gone:
            self._context.unroute(p, self._routes.pop(p)[1])
        return gone

    def listed(self) -> list[dict[str, Any]]:
        """Each route as the agent set it; a body by its length (the call that set it has it)."""
        out = []
        for spec, _ in self._routes.values():
            shown = {k: v for k, v in spec.items() if k != "body"}
            if spec["action"] == "fulfill":
                shown["bodyLength"] = len(spec["body"])
            out.append(shown)
        return out

    def _handler(self, spec: dict[str, Any]) -> Any:
        def handle(route: Any) -> None:
            request = route.request
            try:
                # The policy first, asked now: a pattern like ** matches a forbidden host too, and the
                # policy may have changed since the route was set. A forbidden request goes on to the
                # network unchanged, where the session's policy proxy refuses it as it refuses any other.
                if not self._policy.allows(request.url):
                    self._events.routed(request, "refused by the domain policy")
                    route.fallback()
                    return
                self._events.routed(request, spec["action"])
                if spec["action"] == "abort":
                    route.abort("blockedbyclient")
                elif spec["action"] == "headers":
                    headers = {k: v for k, v in request.headers.items()
                               if k.lower() not in {name.lower() for name in spec["requestHeaders"]}}
                    headers.update({k: v for k, v in spec["requestHeaders"].items() if v is not None})
                    route.continue_(headers=headers)
                else:
                    route.fulfill(status=spec["status"], headers=spec["headers"], body=spec["body"])
            except Exception as exc:
                # Playwright runs this during whatever call is running: a request whose page closed
                # meanwhile must not fail that call, which is not about this request.
                log.debug("a route could not answer", extra={"event": "route_failed", "error": scrub_urls(str(exc))})

        return handle
