"""MCP over Streamable HTTP as a WSGI application (PEP 3333), for many clients on one core.

A thin adapter over `McpConnection` (mcp_connection.py), which does the protocol.
POST carries one JSON-RPC message, answered as JSON, or as an event stream once a
notice comes first or the call runs past HEARTBEAT_S; GET opens a handshake-era
client's own event stream; DELETE ends that client. Before any of it: the Host and
Origin checks (against DNS rebinding), the bearer token, the rate and the body's size.

Who a client is (`owner`): with tokens, the token's name, in both eras and across
restarts; an Mcp-Session-Id serves only the token that opened it. Without tokens (a
loopback server), a handshake-era client is its Mcp-Session-Id, and every 2026-07-28
client is one "anonymous" client.

Threads: the WSGI server's request threads run `__call__` and wait on a request's
queue; session threads and core pool threads `send` into those queues."""

import hmac
import queue
import secrets
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from mcpbrowser.core.face import CoreFace
from mcpbrowser.domains import is_loopback
from mcpbrowser.guards import RateLimiter
from mcpbrowser.logs import log
from mcpbrowser.transports import compression, protocol
from mcpbrowser.transports.mcp_connection import McpConnection
from mcpbrowser.transports.protocol import ProtocolError

HEARTBEAT_S = 10.0        # a silent call turns its answer into an event stream with a comment this often
CLIENT_IDLE_S = 3600.0    # a handshake-era client unheard of this long is forgotten
SESSION_HEADER = "Mcp-Session-Id"
HEALTH_PATH = "/healthz"  # 200 "ok" to anyone, without a token (see __call__)
_END = object()           # closes a stream's queue
EVENT_STREAM = (("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no"))


class _Stream:
    """The messages bound for one HTTP response, in order; `final` is the request's own answer."""

    def __init__(self, request_id):
        self.request_id = request_id
        self.messages: queue.Queue[Any] = queue.Queue()

    def is_final(self, message):
        return message.get("id") == self.request_id and ("result" in message or "error" in message)


class _Client:
    """A handshake-era client (one Mcp-Session-Id): its connection, open POST streams and GET stream."""

    def __init__(self, app, session_id, name):
        self.session_id = session_id
        self.token_client = name  # the token's client that initialized it (None: no tokens); only it may use it
        self.owner_is_own = name is None  # its sessions die with it: nobody else could reach them
        self.streams: dict[Any, _Stream] = {}
        self.own_stream: _Stream | None = None
        self.lock = threading.Lock()
        self.seen = time.monotonic()
        self.connection = McpConnection(app.core, self.send, name=name or session_id,
                                        owner=name or f"mcp-session:{session_id}")

    # ANY THREAD
    def send(self, message, related=None):
        """A request's messages go on its own response; nothing else may (the spec). When that
        response is gone (the client left), they are dropped. Notices go on the client's GET stream."""
        with self.lock:
            stream = self.streams.get(related) if related is not None else self.own_stream
        if stream is not None:
            stream.messages.put(message)


class _Everyone:
    """The core's `client` on HTTP (core/call.py's `ServerClient`): notices to every handshake-era client's stream."""

    name = None
    can_elicit = False

    def __init__(self, app):
        self._app = app

    def elicit(self, message, timeout, key):
        """Nobody in particular can be asked (can_elicit is False): a call's own caller asks its user."""
        return "cancel"

    def notify(self, level, data):
        for client in self._app.clients():
            client.connection.notify(level, data)

    def notify_owner(self, owner, level, data):
        """A notice about one client's own affairs (its cooldown's end): to its streams alone."""
        for client in self._app.clients():
            client.connection.notify_owner(owner, level, data)


def _json_response(start_response, status, body, headers=()):
    data = protocol.dumps(body) if body is not None else b""
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data))), *headers])
    return [data]


def _refuse(start_response, status, message, headers=()):
    """A refusal before any JSON-RPC was read: a JSON-RPC error object without an id."""
    return _json_response(start_response, status, protocol.error(None, protocol.INVALID_REQUEST, message), headers)


class McpWsgiApp:
    """The WSGI application: `app(environ, start_response)`.

    core: the Browser (or a Future of it); credentials: {token: client name}, empty
    for an open (loopback) server; allowed_origins: origins browsers may call from
    (empty: loopback origins only); path: the endpoint's path; max_body_bytes: the
    largest POST body; rate_limit: requests per minute per client (0: no limit);
    client_requests: requests one token's client may hold open at once."""

    def __init__(self, core: CoreFace, *, credentials=None, allowed_origins=(), path="/mcp",
                 max_body_bytes=4 * 1024 * 1024, rate_limit=600, client_requests=16, on_close=None):
        self.core, self._on_close = core, on_close
        self.credentials = dict(credentials or {})
        self.allowed_origins = {o.rstrip("/").lower() for o in allowed_origins}
        self.path, self.max_body_bytes = path, max_body_bytes
        self.too_large = f"A message may be at most {max_body_bytes} bytes (--max-message-bytes): send less in one call"
        self.rate = RateLimiter(rate_limit)
        self.client_requests = client_requests
        self._held: dict[str, int] = {}  # token client -> requests it has open now
        self._clients: dict[str, _Client] = {}
        self._lock = threading.Lock()
        self.everyone = _Everyone(self)
        self.view: Any = None  # the live view (view.ViewApp) mounted beside the endpoint, or None

    def clients(self):
        with self._lock:
            return list(self._clients.values())

    def close(self):
        """Run `on_close` (wsgi.create_app's: close the Browser it built), once."""
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()

    # -- A REQUEST THREAD OF THE WSGI SERVER ------------------------------------------

    def __call__(self, environ, start_response):
        view = self.view
        if view is not None and view.owns(environ.get("PATH_INFO") or "/"):
            return view(environ, start_response)  # its own sign-in, and a picture that streams unzipped
        return compression.respond(self._serve, environ, start_response)

    def _serve(self, environ, start_response):
        path = environ.get("PATH_INFO") or "/"
        if path.rstrip("/") != self.path.rstrip("/"):
            if path == HEALTH_PATH and environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
                # For a HEALTHCHECK or load balancer, with no token: before the caller checks; it says only "ok".
                start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "3")])
                return [b"ok\n"]
            return _refuse(start_response, "404 Not Found", f"Not found: the MCP endpoint is {self.path}")
        refusal = self._check_caller(environ)
        if refusal is not None:
            return _refuse(start_response, *refusal)
        name = environ["mcpbrowser.client"]
        retry_ms = self.rate.check(name or environ.get("REMOTE_ADDR", "-"))
        if retry_ms is not None:
            return _refuse(start_response, "429 Too Many Requests",
                           f"More than {self.rate.per_minute} requests a minute from this client; retry later.",
                           [("Retry-After", str(-(-retry_ms // 1000)))])
        if name is None:  # no tokens: clients cannot be told apart, only the server's threads bound them
            return self._route(environ, start_response, name)
        # Each request holds a server thread until it is answered: one client must not take every thread.
        with self._lock:
            held = self._held.get(name, 0)
            if held < self.client_requests:
                self._held[name] = held + 1
        if held >= self.client_requests:
            return _refuse(start_response, "429 Too Many Requests",
                           f"This client already has {self.client_requests} requests open (--http-client-requests); "
                           "close an event stream or wait for a call's answer.", [("Retry-After", "1")])
        try:
            return _Held(self._route(environ, start_response, name), lambda: self._release(name))
        except BaseException:
            self._release(name)
            raise

    def _release(self, name):
        with self._lock:
            self._held[name] -= 1
            if not self._held[name]:
                del self._held[name]

    def _route(self, environ, start_response, name):
        method = environ.get("REQUEST_METHOD", "GET")
        handler = {"POST": self._post, "GET": self._get, "DELETE": self._delete}.get(method)
        if handler is not None:
            return handler(environ, start_response, name)
        return _refuse(start_response, "405 Method Not Allowed", f"{method} is not used by MCP here",
                       [("Allow", "GET, POST, DELETE")])

    def _check_caller(self, environ):
        """(status, message, headers) refusing the request, or None; sets environ["mcpbrowser.client"]."""
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None and not self._origin_allowed(origin):
            return "403 Forbidden", f"Origin {origin[:100]} may not call this server (see --http-allowed-origins)", ()
        host = _host_name(environ.get("HTTP_HOST") or "")
        if not self.credentials and not is_loopback(host):
            # Without tokens, only this machine: DNS rebinding reaches loopback under a foreign name; GET lacks Origin.
            return "403 Forbidden", f"Host {host[:100]} is not a loopback name, and this server has no tokens", ()
        environ["mcpbrowser.client"] = None
        if not self.credentials:
            return None
        name = self.token_client(environ.get("HTTP_AUTHORIZATION"))
        if name is None:
            return "401 Unauthorized", "A valid bearer token is required", [("WWW-Authenticate", 'Bearer realm="mcp"')]
        environ["mcpbrowser.client"] = name
        return None

    def token_client(self, authorization):
        """The client a `Bearer TOKEN` header value names, or None (ANY THREAD)."""
        scheme, _, token = (authorization or "").partition(" ")
        name = None
        for known, who in self.credentials.items():  # every token compared, in constant time each
            if hmac.compare_digest(token.strip().encode(), known.encode()) and scheme.lower() == "bearer":
                name = who
        return name

    def vouches(self, headers):
        """Whether a request head (waitress's header names) shows a client: its valid token, or,
        on an open server, that it is a whole head at all (the socket thread's connection guard)."""
        return not self.credentials or self.token_client(headers.get("AUTHORIZATION")) is not None

    def _origin_allowed(self, origin):
        """A loopback origin, or one listed in --http-allowed-origins (exactly: scheme, host and port)."""
        origin = origin.rstrip("/").lower()
        if origin in self.allowed_origins:
            return True
        try:
            parts = urlsplit(origin)
            return parts.scheme in ("http", "https") and is_loopback(parts.hostname or "")
        except ValueError:  # a malformed port, say
            return False

    def _read_body(self, environ):
        """The request body, or an int HTTP status refusing it (413 too large, 400 unreadable)."""
        try:
            length = int(environ.get("CONTENT_LENGTH") or -1)
        except ValueError:
            return 400
        if length > self.max_body_bytes:
            return 413
        stream = environ["wsgi.input"]
        body = stream.read(length) if length >= 0 else stream.read(self.max_body_bytes + 1)
        return 413 if len(body) > self.max_body_bytes else body

    def _post(self, environ, start_response, name):
        if (environ.get("CONTENT_TYPE") or "").split(";")[0].strip().lower() != "application/json":
            return _refuse(start_response, "415 Unsupported Media Type", "POST a JSON-RPC message as application/json")
        if (environ.get("HTTP_CONTENT_ENCODING") or "identity").strip().lower() != "identity":
            # Not decompressed: a few KB of gzip can expand into gigabytes past --max-message-bytes.
            return _refuse(start_response, "415 Unsupported Media Type", "Send the message uncompressed "
                           "(no Content-Encoding)", [("Accept-Encoding", "identity")])
        body = self._read_body(environ)
        if body == 413:
            return _refuse(start_response, "413 Content Too Large", self.too_large)
        if isinstance(body, int):
            return _refuse(start_response, "400 Bad Request", "Unreadable Content-Length")
        try:
            msg = protocol.parse(body)
        except ProtocolError as exc:
            return _json_response(start_response, "400 Bad Request",
                                  protocol.error(exc.request_id, exc.code, exc.message, exc.data))
        session_id = environ.get("HTTP_MCP_SESSION_ID")
        modern = msg.kind == "request" and (msg.method == "server/discover" or protocol.carries_envelope(msg))
        if modern:
            mismatch = _header_mismatch(environ, msg)
            if mismatch is not None:
                return _json_response(start_response, "400 Bad Request",
                                      protocol.error(msg.id, protocol.HEADER_MISMATCH, mismatch))
            # Stateless: a connection for this request alone, whose every message goes on its answer.
            stream = _Stream(msg.id)
            connection = McpConnection(self.core, lambda m, related=None: stream.messages.put(m), name=name,
                                       owner=name or "anonymous")
            connection.handle_message(msg)
            return self._answer(start_response, stream, connection, cancel_on_close=True)
        if msg.kind == "request" and msg.method == "initialize":
            return self._initialize(start_response, msg, name)
        client = self._client(session_id, name)
        if client is None:
            status = "400 Bad Request" if session_id is None else "404 Not Found"
            return _refuse(start_response, status, "Unknown or missing Mcp-Session-Id: initialize first"
                           if session_id else "Mcp-Session-Id is required after initialize")
        if msg.kind != "request":
            client.connection.handle_message(msg)
            start_response("202 Accepted", [("Content-Length", "0")])
            return [b""]
        stream = _Stream(msg.id)
        with client.lock:
            taken = msg.id in client.streams
            if not taken:
                client.streams[msg.id] = stream
        if taken:
            return _json_response(start_response, "409 Conflict", protocol.error(
                msg.id, protocol.INVALID_REQUEST, f"Request id {msg.id!r} is already in use by a running request"))
        try:
            client.connection.handle_message(msg)
        except BaseException:
            _forget_stream(client, msg.id)
            raise
        return self._answer(start_response, stream, client.connection, cancel_on_close=False,
                            done=lambda: _forget_stream(client, msg.id))

    def _initialize(self, start_response, msg, name):
        session_id = secrets.token_urlsafe(24)
        client = _Client(self, session_id, name)
        self._forget_idle()
        with self._lock:
            self._clients[session_id] = client
        stream = _Stream(msg.id)
        client.streams[msg.id] = stream
        client.connection.open()
        client.connection.handle_message(msg)
        answer = stream.messages.get()
        client.streams.pop(msg.id, None)
        log.info("http client connected", extra={"event": "http_client", "client": name})
        return _json_response(start_response, "200 OK", answer, [(SESSION_HEADER, session_id)])

    def _answer(self, start_response, stream, connection, cancel_on_close, done=None):
        """JSON when the answer comes first and soon; else an event stream until the answer."""
        try:
            first = stream.messages.get(timeout=HEARTBEAT_S)
        except queue.Empty:
            first = None
        if first is not None and stream.is_final(first):
            if done is not None:
                done()
            return _json_response(start_response, "200 OK", first)
        start_response("200 OK", list(EVENT_STREAM))
        return _EventStream(stream, first, connection, cancel_on_close, done)

    def _get(self, environ, start_response, name):
        session_id = environ.get("HTTP_MCP_SESSION_ID")
        client = self._client(session_id, name)
        if client is None and session_id:
            return _refuse(start_response, "404 Not Found", "Unknown or missing Mcp-Session-Id")
        if client is None:
            return _refuse(start_response, "405 Method Not Allowed",
                           "GET opens a handshake-era client's own stream: send Mcp-Session-Id",
                           [("Allow", "POST, DELETE")])
        with client.lock:
            if client.own_stream is not None:
                return _refuse(start_response, "409 Conflict", "This client's stream is open already")
            stream = client.own_stream = _Stream(None)
        start_response("200 OK", list(EVENT_STREAM))

        def closed():
            with client.lock:
                if client.own_stream is stream:
                    client.own_stream = None

        return _EventStream(stream, None, client.connection, False, closed)

    def _delete(self, environ, start_response, name):
        session_id = environ.get("HTTP_MCP_SESSION_ID")
        with self._lock:
            client = self._clients.get(session_id) if session_id else None
            if client is not None and client.token_client == name:
                del self._clients[session_id]
            else:
                client = None
        if client is None:
            return _refuse(start_response, "404 Not Found", "Unknown or missing Mcp-Session-Id")
        self._end(client)
        start_response("204 No Content", [])
        return [b""]

    def _client(self, session_id, name):
        """The handshake-era client `session_id` names, if the token's client `name` opened it; else None. An
        Mcp-Session-Id is a handle that travels in logs and proxies, not a credential: another token learns nothing."""
        if not session_id:
            return None
        with self._lock:
            client = self._clients.get(session_id)
        if client is None or client.token_client != name:
            return None
        client.seen = time.monotonic()
        return client

    def _forget_idle(self):
        cutoff = time.monotonic() - CLIENT_IDLE_S
        with self._lock:
            idle = [c for c in self._clients.values() if c.seen < cutoff and not c.streams and c.own_stream is None]
            for client in idle:
                del self._clients[client.session_id]
        for client in idle:
            self._end(client)

    def _end(self, client):
        """A handshake-era client is gone: stop its log forwarding, and close its browser sessions if nobody
        can reach them again (no token); a token's sessions stay for its next connection, until they expire."""
        client.connection.close()
        with client.lock:
            if client.own_stream is not None:
                client.own_stream.messages.put(_END)
        if client.owner_is_own:
            client.connection.core.close_sessions_of(client.connection.owner)
        log.info("http client ended", extra={"event": "http_client_end", "client": client.connection.name})


def _host_name(host):
    """The name in a Host header, without its port: `[::1]:80` -> `::1`, `localhost` -> `localhost`."""
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.partition(":")[0]


def _forget_stream(client, request_id):
    with client.lock:
        client.streams.pop(request_id, None)


class _Held:
    """A response body that runs `release` once the server is done with it (WSGI calls close())."""

    def __init__(self, body, release):
        self._body, self._release = body, release

    def __iter__(self):
        return iter(self._body)

    def close(self):
        try:
            if hasattr(self._body, "close"):
                self._body.close()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


class _EventStream:
    """A WSGI response body of server-sent events until the request's answer (or forever for GET). Closed as the
    client goes away: a 2026-07-28 call is then cancelled (that era's cancellation); a handshake-era call runs
    on, as the spec asks, unheard."""

    def __init__(self, stream, first, connection, cancel_on_close, done):
        self._stream, self._first, self._connection = stream, first, connection
        self._cancel_on_close, self._done = cancel_on_close, done
        self._finished = False

    def __iter__(self):
        message = self._first
        while message is not _END:
            if message is not None:
                yield _event(message)
                if self._stream.is_final(message):
                    self._finished = True
                    return
            try:
                message = self._stream.messages.get(timeout=HEARTBEAT_S)
            except queue.Empty:
                message = None
                yield b": keep-alive\n\n"  # also how a vanished client is noticed

    def close(self):
        if self._done is not None:
            self._done()
        if not self._finished and self._cancel_on_close and self._stream.request_id is not None:
            self._connection.cancel(self._stream.request_id)


def _event(message):
    return b"event: message\ndata: " + protocol.dumps(message) + b"\n\n"


def _header_mismatch(environ, msg):
    """Why a 2026-07-28 request's routing headers disagree with its body, or None (the spec's header rung)."""
    version = msg.params["_meta"].get(protocol.PROTOCOL_VERSION_KEY) if protocol.carries_envelope(msg) else None
    if version is not None and environ.get("HTTP_MCP_PROTOCOL_VERSION") != version:
        return "MCP-Protocol-Version header does not match the request's protocol version"
    if environ.get("HTTP_MCP_METHOD") not in (None, msg.method):
        return "Mcp-Method header does not match the request's method"
    name = msg.params.get("name")
    header = environ.get("HTTP_MCP_NAME")
    if msg.method == "tools/call" and header is not None and isinstance(name, str) and \
            protocol.decode_header_value(header) != name:
        return "Mcp-Name header does not match the request's tool name"
    return None


def serve(app, address, done, threads, limits):
    """Serve `app` on HOST:PORT with waitress until `done` is set (MAIN THREAD): pure Python, each event reaches
    the client as it is yielded, a client that left is noticed at the next write (docs/http.md). Every open call
    and event stream holds one of its `threads`; `limits` (http_server.Limits) guard against slow clients."""
    from mcpbrowser.transports.http_server import create_server

    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    if not app.credentials and not is_loopback(host):
        # Config refuses this already; the tokens are read again when the app is built, and an
        # open server on every interface must not follow from a file emptied in between.
        raise PermissionError(f"{host} is reachable from other machines, and no token was read")
    runner, listeners = create_server(app, host, int(port), threads, limits, app.vouches,
                                      max_request_body_size=app.max_body_bytes + 1,
                                      too_large=protocol.dumps(protocol.error(None, protocol.INVALID_REQUEST,
                                                                              app.too_large)),
                                      ident="mcpbrowser", clear_untrusted_proxy_headers=True,
                                      **_view_proxy(app))
    bound = listeners[0].effective_host, listeners[0].effective_port
    # Servers sharing a history name each other to their clients (list_sessions) by where they listen.
    shown_host = socket.gethostname() if bound[0] in ("0.0.0.0", "::") else bound[0]
    app.core.announce(f"[{shown_host}]:{bound[1]}" if ":" in shown_host else f"{shown_host}:{bound[1]}")
    log.info("serving MCP over HTTP", extra={"event": "http_serving", "url": f"http://{bound[0]}:{bound[1]}{app.path}"})
    if app.view is not None:
        app.view.announce(f"http://{bound[0]}:{bound[1]}{app.view.path}/")
    threading.Thread(target=runner.run, name="http-server", daemon=True).start()
    while not done.wait(0.1):  # wake up now and then, so a signal's handler runs
        pass
    for listener in listeners:
        listener.close()


def _view_proxy(app):
    """waitress's proxy settings: X-Forwarded-Proto believed (it sets the URL scheme) only under
    --view-trusted-proxy, where the view's cookie must be Secure behind a TLS proxy; else dropped."""
    if app.view is None or not app.view.trust_proxy:
        return {}
    return {"trusted_proxy": "*", "trusted_proxy_headers": {"x-forwarded-proto"}}
