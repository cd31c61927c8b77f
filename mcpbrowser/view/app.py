"""The live view as a WSGI app: pages, their JSON, the live picture, and a person's hands on a session.

ANY THREAD (the WSGI server's request threads). Who may see what is decided here, once per request, before any route
runs: a viewer (auth.Viewer) from the sign-in cookie or the embedder's hook; every session id in a URL is then checked
against it, and one the viewer may not see answers exactly as one that does not exist.
"""

import html
import json
import os
import secrets
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import parse_qs

from mcpbrowser.config import VIEW_PATH
from mcpbrowser.core.face import CoreFace
from mcpbrowser.domains import is_loopback
from mcpbrowser.logs import log
from mcpbrowser.view import auth
from mcpbrowser.view.auth import HEADERS, SignIns, Viewer, WhoMaySee
from mcpbrowser.view.data import Looking
from mcpbrowser.view.hands import Hands
from mcpbrowser.view.screencast import Screencasts

STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
ASSETS = {"view.js": "text/javascript; charset=utf-8", "view.css": "text/css; charset=utf-8"}
MAX_FORM_BYTES = 4096
PLAIN_HTTP_WARNING = ("This view is reached over plain HTTP from another machine: the sign-in token and the "
                      "cookie cross the network in clear. Put it behind a TLS-terminating proxy.")


class ViewApp:
    """`app(environ, start_response)`: the view under `path` (give "" when your router strips the prefix).

    core: the server's core, as its typed face (core/face.py): the view reads it and submits calls through it, and
    writes nothing into it (building a view, or two, leaves the core as it was); sign_ins: the view's own sign-in
    (tokens or a one-time key), or who_may_see: an embedder's hook deciding it from the request (then no sign-in page
    here); trust_proxy: believe X-Forwarded-Proto (the view sits behind a TLS proxy); max_live: live pictures open at
    once (each holds a thread of the WSGI server: keep it well under the server's threads).
    """

    def __init__(self, core: CoreFace, *, sign_ins: SignIns | None = None, who_may_see: WhoMaySee | None = None,
                 path: str = VIEW_PATH, trust_proxy: bool = False, max_live: int | None = None) -> None:
        if (sign_ins is None) == (who_may_see is None):
            raise ValueError("give the view one way to know who looks: sign_ins or who_may_see")
        self.core, self.sign_ins, self.who_may_see, self.trust_proxy = core, sign_ins, who_may_see, trust_proxy
        self.looking = Looking(core)
        self.path = path.rstrip("/")
        self._secret = secrets.token_bytes(32)  # the hook's CSRF tokens are keyed by it
        self.casts = Screencasts(core)
        # A live picture holds a thread per viewer while it is watched: opened many times, it took every thread,
        # the MCP endpoint's too. At most max_live at once (default: two a session), one name's people half of them.
        self.max_live = max_live or max(4, 2 * core.max_sessions)
        self._live_lock = threading.Lock()
        self._watching: dict[str, int] = {}  # viewer name -> live pictures open
        self.sign_in_guesses = auth.Guesses()
        self.routes: dict[tuple[str, str], Callable[..., Any]] = {("GET", "live"): self._live,
                                                                 **Hands(core).routes()}

    # -- A REQUEST THREAD ------------------------------------------------------------

    def announce(self, url: str) -> None:
        """MAIN THREAD: where the view is, and how to sign in (the one-time URL, as Jupyter prints it) on stderr."""
        host = url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[0].strip("[]")
        log.info("serving the live view", extra={"event": "view_serving", "url": url})
        if not is_loopback(host) and not self.trust_proxy:
            log.warning(PLAIN_HTTP_WARNING, extra={"event": "view_plain_http"})
        key = self.sign_ins.one_time_key if self.sign_ins is not None else None
        if key is not None:
            print(f"mcpbrowser: open the live view once with this sign-in URL: {url}signin?key={key}", file=sys.stderr,
                  flush=True)

    def owns(self, path: str) -> bool:
        """Whether a request's path is the view's (the HTTP transport hands those over)."""
        return not self.path or path == self.path or path.startswith(self.path + "/")

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        if not self.owns(path):
            return self._text(start_response, "404 Not Found", "Not found")
        rest = path[len(self.path):].strip("/")
        parts = rest.split("/") if rest else []
        method = environ.get("REQUEST_METHOD", "GET")
        base = (environ.get("SCRIPT_NAME") or "") + self.path + "/"
        if parts[:1] == ["static"] and len(parts) == 2 and parts[1] in ASSETS and method == "GET":
            with open(os.path.join(STATIC, parts[1]), "rb") as f:
                return self._send(start_response, "200 OK", f.read(), ASSETS[parts[1]])
        if parts == ["signin"] and self.sign_ins is not None:
            return self._sign_in(environ, start_response, base)
        signed = self._viewer(environ)
        if signed is None:
            if parts[:1] == ["api"] or method != "GET":
                return self._json(start_response, "401 Unauthorized", {"error": "Sign in first."})
            return self._sign_in_page(environ, start_response, base, "200 OK")
        viewer, csrf = signed
        if method == "POST":
            # Every state-changing request: from our own pages (Origin) and carrying the CSRF token.
            given = environ.get("HTTP_X_CSRF_TOKEN") or ""
            if parts == ["signout"]:
                given = given or _form(environ).get("csrf", "")
            # As bytes: compare_digest refuses str of non-ASCII text, and a header of it answered 500, not 403.
            mine = secrets.compare_digest(given.encode(), csrf.encode())
            if not auth.same_origin(environ, self.trust_proxy) or not mine:
                return self._json(start_response, "403 Forbidden", {"error": "Refused: not from this view's page."})
            if parts == ["signout"] and self.sign_ins is not None:
                self.sign_ins.end(auth.cookie_of(environ) or "")
                return self._redirect(start_response, base, [auth.set_cookie("", base, self._secure(environ), 0)])
        elif method != "GET":
            return self._json(start_response, "405 Method Not Allowed", {"error": f"{method} is not used here"})
        if method == "GET" and not parts:
            return self._page(start_response, base, csrf, viewer, "list", "")
        if method == "GET" and len(parts) == 2 and parts[0] == "s":
            if not self.looking.may_see(viewer, parts[1]):
                return self._text(start_response, "404 Not Found", "No such session")
            return self._page(start_response, base, csrf, viewer, "session", parts[1])
        if parts[:1] == ["api"]:
            return self._api(environ, start_response, viewer, method, parts[1:])
        return self._text(start_response, "404 Not Found", "Not found")

    def _api(self, environ: dict[str, Any], start_response: Callable[..., Any], viewer: Viewer, method: str,
             parts: list[str]) -> Iterable[bytes]:
        query = parse_qs(environ.get("QUERY_STRING") or "")
        after = _int(query.get("after", ["0"])[0])
        if method == "GET" and parts == ["sessions"]:
            return self._json(start_response, "200 OK", {"sessions": self.looking.sessions(viewer)})
        if method == "GET" and len(parts) == 2 and parts[0] == "page":
            page = self.looking.page(viewer, parts[1])
            if page is None:
                return self._text(start_response, "404 Not Found", "No such page")
            return self._send(start_response, "200 OK", page.encode(), "text/plain; charset=utf-8")
        if len(parts) < 2 or parts[0] != "s" or not self.looking.may_see(viewer, parts[1]):
            return self._json(start_response, "404 Not Found", {"error": "No such session."})
        session_id, action = parts[1], parts[2:]
        if method == "GET" and not action:
            return self._json(start_response, "200 OK", {
                "sessionId": session_id, **self.looking.state(session_id),
                "screencast": self.casts.viewers(session_id),
                "calls": self.looking.timeline(session_id, after)})
        if method == "GET" and len(action) == 2 and action[0] == "logs":
            logs = self.looking.logs(viewer, session_id, action[1], after)
            if logs is None:
                return self._json(start_response, "404 Not Found", {"error": "No such log."})
            return self._json(start_response, "200 OK", logs)
        route = self.routes.get((method, "/".join(action)))
        if route is None:
            return self._json(start_response, "404 Not Found", {"error": "Not found."})
        return route(environ, start_response, viewer, session_id)

    def _live(self, environ: dict[str, Any], start_response: Callable[..., Any], viewer: Viewer,
              session_id: str) -> Iterable[bytes]:
        """The page live as MJPEG (an <img> shows it natively), while this request stays open."""
        with self._live_lock:
            mine = self._watching.get(viewer.name, 0)
            if mine >= max(1, self.max_live // 2) or sum(self._watching.values()) >= self.max_live:
                return self._send(start_response, "429 Too Many Requests", b'{"error": "Too many live pictures open."}',
                                  "application/json", [("Retry-After", "5")])
            self._watching[viewer.name] = mine + 1
        cast = self.casts.watch(session_id, viewer.name)
        if cast is None:
            self._unwatch(viewer)
            return self._json(start_response, "404 Not Found", {"error": "No such session."})

        def leave() -> None:
            self.casts.leave(cast)
            self._unwatch(viewer)

        start_response("200 OK", [("Content-Type", f"multipart/x-mixed-replace; boundary={BOUNDARY}"), *HEADERS])
        return _Frames(cast, leave, lambda: self.core.session(session_id))

    def _unwatch(self, viewer: Viewer) -> None:
        with self._live_lock:
            left = self._watching.get(viewer.name, 0) - 1
            if left > 0:
                self._watching[viewer.name] = left
            else:
                self._watching.pop(viewer.name, None)

    # -- who looks -------------------------------------------------------------------

    def _viewer(self, environ: dict[str, Any]) -> tuple[Viewer, str] | None:
        if self.who_may_see is not None:
            viewer = self.who_may_see(environ)
            return None if viewer is None else (viewer, auth.hook_csrf(self._secret, viewer))
        assert self.sign_ins is not None
        return self.sign_ins.lookup(environ)

    def _secure(self, environ: dict[str, Any]) -> bool:
        return auth.scheme(environ, self.trust_proxy) == "https"

    def _sign_in(self, environ: dict[str, Any], start_response: Callable[..., Any], base: str) -> Iterable[bytes]:
        """POST a token (from the form), or GET with the one-time key of stderr: a cookie, then the list."""
        assert self.sign_ins is not None
        method = environ.get("REQUEST_METHOD", "GET")
        address = environ.get("REMOTE_ADDR") or "-"
        wait = self.sign_in_guesses.wait_s(address)
        if wait > 0:
            log.warning("view sign-in refused: too many guesses", extra={"event": "view_sign_in_throttled",
                                                                         "address": address})
            return self._send(start_response, "429 Too Many Requests", b'{"error": "Too many sign-ins refused."}',
                              "application/json", [("Retry-After", str(int(wait) + 1))])
        if method == "POST":
            if not auth.same_origin(environ, self.trust_proxy):
                return self._json(start_response, "403 Forbidden", {"error": "Refused: not from this view's page."})
            key = ""
            viewer = self.sign_ins.by_token(_form(environ).get("token", ""))
        elif method == "GET":
            key = parse_qs(environ.get("QUERY_STRING") or "").get("key", [""])[0]
            viewer = self.sign_ins.by_key(key) if key else None
        else:
            return self._json(start_response, "405 Method Not Allowed", {"error": f"{method} is not used here"})
        if viewer is None:
            if method == "POST" or key:
                self.sign_in_guesses.failed(address)
            log.warning("view sign-in refused", extra={"event": "view_sign_in_refused",
                                                      "address": environ.get("REMOTE_ADDR")})
            return self._sign_in_page(environ, start_response, base, "403 Forbidden", "That did not sign you in.")
        log.info("view sign-in", extra={"event": "view_signed_in", "viewer": viewer.name})
        cookie = self.sign_ins.start(viewer)
        return self._redirect(start_response, base, [auth.set_cookie(cookie, base, self._secure(environ))])

    # -- answers ---------------------------------------------------------------------

    def _sign_in_page(self, environ: dict[str, Any], start_response: Callable[..., Any], base: str, status: str,
                      problem: str = "") -> Iterable[bytes]:
        warning = PLAIN_HTTP_WARNING if auth.plain_http_exposed(environ, self.trust_proxy) else ""
        if self.sign_ins is None:
            body = "<p>Sign in through the service that serves this view.</p>"
        elif self.sign_ins.credentials:
            body = (f'<form method="post" action="{_e(base)}signin"><label>Bearer token '
                    '<input type="password" name="token" autocomplete="off" required autofocus></label> '
                    '<button type="submit">Sign in</button></form>')
        else:
            body = "<p>Open the one-time sign-in URL the server wrote to its stderr.</p>"
        notes = "".join(f'<p class="{c}">{_e(t)}</p>' for c, t in (("warning", warning), ("problem", problem)) if t)
        return self._send(start_response, status, _html(base, "Sign in", "", notes + body), "text/html; charset=utf-8")

    def _page(self, start_response: Callable[..., Any], base: str, csrf: str, viewer: Viewer, kind: str,
              session_id: str) -> Iterable[bytes]:
        who = f"{viewer.name}{' (operator: every session)' if viewer.operator else ''}"
        signout = (f'<form method="post" action="{_e(base)}signout" class="signout">'
                   f'<input type="hidden" name="csrf" value="{_e(csrf)}"><button>Sign out</button></form>'
                   if self.sign_ins is not None else "")
        head = (f'<meta name="csrf" content="{_e(csrf)}"><meta name="view-page" content="{kind}">'
                f'<meta name="session" content="{_e(session_id)}">')
        body = (f'<header><a href="{_e(base)}">Sessions</a> <span class="who">{_e(who)}</span>{signout}</header>'
                '<main id="main"></main>')
        title = "Sessions" if kind == "list" else f"Session {session_id[:8]}"
        return self._send(start_response, "200 OK", _html(base, title, head, body), "text/html; charset=utf-8")

    def _send(self, start_response: Callable[..., Any], status: str, body: bytes, kind: str,
              extra: list[tuple[str, str]] | None = None) -> Iterable[bytes]:
        start_response(status, [("Content-Type", kind), ("Content-Length", str(len(body))), *HEADERS, *(extra or [])])
        return [body]

    def _json(self, start_response: Callable[..., Any], status: str, value: Any) -> Iterable[bytes]:
        return self._send(start_response, status, json.dumps(value, default=str).encode(), "application/json")

    def _text(self, start_response: Callable[..., Any], status: str, text: str) -> Iterable[bytes]:
        return self._send(start_response, status, text.encode(), "text/plain; charset=utf-8")

    def _redirect(self, start_response: Callable[..., Any], to: str, extra: list[tuple[str, str]]) -> Iterable[bytes]:
        start_response("303 See Other", [("Location", to), ("Content-Length", "0"), *HEADERS, *extra])
        return [b""]


BOUNDARY = "frame"
RESEND_S = 2.0  # the last frame again after this long without a new one: a viewer who left is noticed


class _Frames:
    """The MJPEG body: each new frame as a part; closing it (the viewer left) leaves the cast, once."""

    def __init__(self, cast: Any, leave: Callable[[], None], still_open: Callable[[], Any]) -> None:
        self._cast, self._open = cast, still_open
        self._leave: Callable[[], None] | None = leave

    def __iter__(self) -> Iterator[bytes]:
        seen = 0
        while not self._cast.ended and self._open() is not None:
            seen, frame = self._cast.next(seen, RESEND_S)
            if frame is not None:
                yield (f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(frame)}\r\n\r\n"
                       .encode() + frame + b"\r\n")
            else:
                # No frame yet (a crashed page, a session thread busy in a long call): a line of the
                # multipart preamble, which the <img> skips. Writing something is how the server learns
                # that a viewer left; writing nothing kept their thread until the session ended.
                yield b"\r\n"

    def close(self) -> None:
        leave, self._leave = self._leave, None
        if leave is not None:
            leave()


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _html(base: str, title: str, head: str, body: str) -> bytes:
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)} · mcpbrowser</title>'
            f'<meta name="base" content="{_e(base)}"><link rel="stylesheet" href="{_e(base)}static/view.css">{head}'
            f'<script defer src="{_e(base)}static/view.js"></script></head><body>{body}</body></html>').encode()


def _form(environ: dict[str, Any]) -> dict[str, str]:
    """A small urlencoded form's fields (first value each); {} when it is too large or unreadable."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return {}
    if not 0 < length <= MAX_FORM_BYTES:
        return {}
    body = environ["wsgi.input"].read(length).decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(body).items()}


def _int(text: str) -> int:
    try:
        return max(0, int(text))
    except ValueError:
        return 0
