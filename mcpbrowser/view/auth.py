"""Who is looking at the view: sign-in with a bearer token (or a one-time key), cookies, CSRF, Origin.

ANY THREAD (the WSGI server's request threads): the sign-ins live in a dict under a lock.
The bearer token is read from a POSTed form only: never from a URL, never written to a
page or a log. A cookie names a server-side sign-in, which sign-out deletes.
"""

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import urlsplit

from mcpbrowser.domains import is_loopback

COOKIE = "mcpbrowser_view"
# On every answer of the view (its pages, their JSON, the live picture): what a browser is told to keep them safe.
HEADERS = [
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "same-origin"),  # no-referrer would make a form's Origin "null"
    ("X-Frame-Options", "DENY"),
    # Titles, URLs and logs come from the pages the agents visit: whatever they hold, no script
    # but ours runs here (the page fills itself with textContent, never innerHTML). blob: images are the
    # live picture's frames: only a script of this origin can make a blob: URL, and only ours runs.
    ("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; "
                                "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'self'"),
]
SIGN_IN_HOURS = 12  # a sign-in lasts this long, then the person signs in again
SIGN_INS_KEPT = 32  # per name: each lives SIGN_IN_HOURS, so a script signing in again and again grew memory unbounded


@dataclass(frozen=True)
class Viewer:
    """A person looking at the view: `owner` is the client whose sessions they see (None: every one)."""

    name: str
    owner: str | None
    operator: bool = False

    def may_see(self, owner: str | None) -> bool:
        return self.owner is None or owner == self.owner


# An embedder's hook: given the request's WSGI environ, the person it shows, or None (not signed in).
WhoMaySee = Callable[[dict[str, Any]], "Viewer | None"]


def scheme(environ: dict[str, Any], trust_proxy: bool) -> str:
    """http or https, as the person's browser sees it: the forwarded one only from a trusted proxy."""
    if trust_proxy:
        forwarded = (environ.get("HTTP_X_FORWARDED_PROTO") or "").split(",")[0].strip().lower()
        if forwarded in ("http", "https"):
            return forwarded
    return environ.get("wsgi.url_scheme", "http")


def same_origin(environ: dict[str, Any], trust_proxy: bool) -> bool:
    """Whether a state-changing request may be from the view's own pages: Origin, else Referer, else Fetch metadata."""
    # As OWASP's CSRF cheat sheet has it: verify the source origin when the request names one (Origin,
    # else Referer), and refuse one that is not ours. When it names none, accept, and let the CSRF token
    # decide (the caller checks it on every change): that token is the primary defence, and it is read
    # only from a page of the view served to a signed-in cookie. Every browser sends Origin on a POST
    # (same-origin fetches and forms too), so a request without Origin or Referer is not a browser's page
    # acting with a person's cookie but a script (curl, a monitor) that holds its own cookie and token,
    # which docs/view.md tells operators to use. Refusing it would protect nothing and lock scripts out.
    # Plain ==: an origin is no secret, and hmac.compare_digest raised (a 500) on a header of non-ASCII text.
    own = f"{scheme(environ, trust_proxy)}://{(environ.get('HTTP_HOST') or '').lower()}"
    origin = environ.get("HTTP_ORIGIN")
    if origin is not None:
        return origin.rstrip("/").lower() == own
    referer = environ.get("HTTP_REFERER")
    if referer is not None:
        parts = urlsplit(referer)
        return f"{parts.scheme}://{parts.netloc}".lower() == own
    return environ.get("HTTP_SEC_FETCH_SITE", "same-origin") in ("same-origin", "none")


def plain_http_exposed(environ: dict[str, Any], trust_proxy: bool) -> bool:
    """A non-loopback name reached without TLS: the token and cookie cross the network in clear."""
    host = (environ.get("HTTP_HOST") or "").rsplit(":", 1)[0].strip("[]")
    return scheme(environ, trust_proxy) != "https" and not is_loopback(host)


class SignIns:
    """The view's own sign-in: tokens of --http-token-file (operators marked), or a one-time key."""

    def __init__(self, credentials: dict[str, str], operators: set[str]) -> None:
        self.credentials = dict(credentials)
        self.operators = set(operators)
        self._lock = threading.Lock()
        self._signed: dict[str, tuple[Viewer, str, float]] = {}  # cookie value -> (viewer, csrf, deadline)
        # Without tokens (stdio, an open loopback server), one key, good once, printed to stderr.
        self.one_time_key = None if credentials else secrets.token_urlsafe(24)

    def by_token(self, token: str) -> Viewer | None:
        """The person a bearer token names (every token compared, in constant time each)."""
        found = None
        for known, name in self.credentials.items():
            if hmac.compare_digest(token.strip().encode(), known.encode()):
                found = Viewer(name, None, True) if name in self.operators else Viewer(name, name)
        return found

    def by_key(self, key: str) -> Viewer | None:
        """The one-time key's person (every session: whoever reads the server's stderr runs it), once."""
        with self._lock:
            known = self.one_time_key
            if known is None or not hmac.compare_digest(key.encode(), known.encode()):
                return None
            self.one_time_key = None
        return Viewer("local", None, True)

    def start(self, viewer: Viewer) -> str:
        """A new sign-in; its cookie value. Past SIGN_INS_KEPT of the same name, their oldest ends."""
        cookie = secrets.token_urlsafe(32)
        with self._lock:
            mine = [c for c, (v, _, _) in self._signed.items() if v.name == viewer.name]  # oldest first
            for old in mine[:max(0, len(mine) + 1 - SIGN_INS_KEPT)]:
                del self._signed[old]
            self._signed[cookie] = (viewer, secrets.token_urlsafe(24), time.monotonic() + SIGN_IN_HOURS * 3600)
        return cookie

    def end(self, cookie: str) -> None:
        with self._lock:
            self._signed.pop(cookie, None)

    def lookup(self, environ: dict[str, Any]) -> tuple[Viewer, str] | None:
        """(viewer, csrf token) of the request's cookie, or None."""
        cookie = cookie_of(environ)
        if cookie is None:
            return None
        with self._lock:
            found = self._signed.get(cookie)
            if found is not None and found[2] < time.monotonic():
                del self._signed[cookie]
                found = None
        return None if found is None else (found[0], found[1])


# Guessing tokens at the sign-in: after GUESSES refused sign-ins from one address within GUESS_WINDOW_S,
# every sign-in from that address waits out the window, the right token's too (a guess that is right must
# not pass). Behind a proxy every person shares its address: they wait together while someone guesses.
GUESSES = 10
GUESS_WINDOW_S = 60.0
GUESSERS_KEPT = 10_000  # addresses remembered; past it, those whose failures are all old are forgotten


class Guesses:
    """Refused sign-ins by address, over the last window (ANY THREAD, under a lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failed: dict[str, list[float]] = {}

    def wait_s(self, address: str) -> float:
        """Seconds this address must wait before its next sign-in is read (0: read it now)."""
        now = time.monotonic()
        with self._lock:
            recent = [t for t in self._failed.get(address, ()) if t > now - GUESS_WINDOW_S]
            if recent:
                self._failed[address] = recent
            else:
                self._failed.pop(address, None)
            return recent[0] + GUESS_WINDOW_S - now if len(recent) >= GUESSES else 0.0

    def failed(self, address: str) -> None:
        now = time.monotonic()
        with self._lock:
            if len(self._failed) >= GUESSERS_KEPT:
                self._failed = {a: ts for a, ts in self._failed.items() if ts[-1] > now - GUESS_WINDOW_S}
            self._failed.setdefault(address, []).append(now)


def cookie_of(environ: dict[str, Any]) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(environ.get("HTTP_COOKIE") or "")
    except Exception:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else None


def set_cookie(value: str, path: str, secure: bool, max_age: int | None = None) -> tuple[str, str]:
    parts = [f"{COOKIE}={value}", f"Path={path}", "HttpOnly", "SameSite=Strict"]
    if secure:
        parts.append("Secure")
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    return "Set-Cookie", "; ".join(parts)


def hook_csrf(secret: bytes, viewer: Viewer) -> str:
    """An embedder's person's CSRF token: bound to who they are, by a key this app alone knows."""
    return hmac.new(secret, f"{viewer.name}\0{viewer.owner}".encode(), hashlib.sha256).hexdigest()
