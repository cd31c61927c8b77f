"""A filtering HTTP proxy per restricted session: the domain policy on every request the browser sends.

Threads: one accept thread per proxy, and one per browser connection (two for a tunnel). They use sockets
and the session's DomainPolicy (thread-safe), never a Playwright object; the session thread reads the
refusals, plain data written here.

A proxy, not Playwright's routing: a route sees only the first request of a redirect chain, and fetching the
chain ahead is a second request a server may answer differently. Through the context's proxy (loopback
included) every request the browser really sends passes a check here, each hop, WebSocket and preload. The
proxy resolves the names, so --block-private-networks checks the address it then connects to."""

import contextlib
import socket
import threading
from urllib.parse import urlsplit

from mcpbrowser.domains import (
    BLOCKED_HEADER,
    METADATA_NAMES,
    DomainPolicy,
    canonical_host,
    is_metadata_address,
    is_private_address,
)
from mcpbrowser.logs import log

HEAD_LIMIT = 64 * 1024                    # a request or response head larger than this is refused
CONNECT_TIMEOUT_S = 30.0
CHUNK = 65536
# Hop-by-hop headers of the browser's request that must not reach the origin server.
_HOP_HEADERS = {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"}


def every_session_proxied(config):
    """True when the server's own rules put every session behind a policy proxy (a host rule, --ask-new-domains),
    whatever a session's own allowedDomains: the warm pool then proxies every context, and the supervisor's
    browser resolves no name."""
    server = DomainPolicy(config.allowed_domains, config.blocked_domains, block_private=config.block_private_networks)
    return server.restricts_hosts or config.ask_new_domains


class Refused(Exception):
    """The policy refuses this host; the message says why."""


def _read_head(sock):
    """(head bytes without the blank line, bytes read past it), or (None, b"") if the peer closed first."""
    data = b""
    while True:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            return data[:end], data[end + 4:]
        if len(data) > HEAD_LIMIT:
            raise ValueError("head too large")
        chunk = sock.recv(CHUNK)
        if not chunk:
            return None, b""
        data += chunk


def _without_hop_headers(lines):
    return [line for line in lines if line.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS]


def _pump(src, dst):
    """Copy src to dst until src ends, then end dst's writing side."""
    with contextlib.suppress(OSError):
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            dst.sendall(data)
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


class PolicyProxy:
    """One listening port on 127.0.0.1 for one browser context, checking each request against `policy`."""

    def __init__(self, policy, session_id=""):
        self.policy, self.session_id = policy, session_id
        self._refused = set()      # canonical hosts refused so far
        self.last_refused = None   # the most recent of them
        self.refusals = 0          # how many requests were refused
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open = set()  # sockets of live connections, closed by close()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name=f"proxy-{session_id[:8]}", daemon=True).start()

    @property
    def settings(self):
        """Playwright's context `proxy` option; `<-loopback>` undoes Chromium's rule that loopback uses no proxy."""
        return {"server": f"http://127.0.0.1:{self.port}", "bypass": "<-loopback>"}

    def was_refused(self, host):
        """Whether a request to this canonical host was refused (any thread)."""
        with self._lock:
            return host in self._refused

    def close(self):
        """Stop listening and cut every open connection. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            live, self._open = list(self._open), set()
        for sock in [self._listener, *live]:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    # -- ACCEPT THREAD ---------------------------------------------------------------

    def _accept(self):
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            if not self._track(conn):
                conn.close()
                return
            threading.Thread(target=self._serve, args=(conn,), name="proxy-conn", daemon=True).start()

    def _track(self, sock, add=True):
        with self._lock:
            if add:
                if self._closed:
                    return False
                self._open.add(sock)
            else:
                self._open.discard(sock)
        return True

    # -- CONNECTION THREADS ----------------------------------------------------------

    def check(self, host, port):
        """The address to connect to for host:port, or raise Refused; records refusals."""
        host = canonical_host(host)
        try:
            if not host or not self.policy.host_allowed(host):
                raise Refused(f"{host or 'a request without a host'} is not allowed by the domain policy")
            if host in METADATA_NAMES:  # refused before any DNS query for it leaves
                raise Refused(f"{host} is a cloud metadata service, which no session may reach")
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            metadata = [info[4][0] for info in infos if is_metadata_address(info[4][0])]
            if metadata:  # whatever names it: see METADATA_NAMES
                raise Refused(f"{host} resolves to the link-local or cloud metadata address {metadata[0]}, "
                              "which no session may reach")
            if self.policy.block_private and not self.policy.names(host):
                private = [info[4][0] for info in infos if is_private_address(info[4][0])]
                if private:
                    raise Refused(f"{host} resolves to the private address {private[0]}, and "
                                  "--block-private-networks is on (name the host in an allow list to reach it)")
            return infos[0][4]
        except Refused:
            with self._lock:
                self._refused.add(host)
                self.last_refused = host
                self.refusals += 1
            log.info("request refused by the domain policy",
                     extra={"event": "request_blocked", "session": self.session_id, "host": host})
            raise

    def _serve(self, conn):
        upstream = None
        try:
            conn.settimeout(CONNECT_TIMEOUT_S)
            head, rest = _read_head(conn)
            if head is None:
                return
            request_line, *header_lines = head.split(b"\r\n")
            method, target, version = request_line.split(b" ", 2)
            if method == b"CONNECT":
                host, _, port = target.decode("latin-1").rpartition(":")
                upstream = self._connect(conn, host, int(port), tunnel=True)
                if upstream is None:
                    return
                conn.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
                self._splice(conn, upstream)
                return
            url = urlsplit(target.decode("latin-1"))
            if url.scheme != "http" or not url.hostname:
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            upstream = self._connect(conn, url.hostname, url.port or 80, tunnel=False)
            if upstream is None:
                return
            # One request per connection: the browser's next may go to another host, checked on its own.
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            lines = [method + b" " + path.encode("latin-1") + b" " + version,
                     *_without_hop_headers(header_lines), b"Connection: close"]
            upstream.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + rest)
            threading.Thread(target=_pump, args=(conn, upstream), name="proxy-up", daemon=True).start()
            response, body = _read_head(upstream)
            if response is None:
                return
            status, *response_headers = response.split(b"\r\n")
            conn.sendall(b"\r\n".join([status, *_without_hop_headers(response_headers),
                                       b"Connection: close", b"Proxy-Connection: close"]) + b"\r\n\r\n" + body)
            _pump(upstream, conn)
        except (OSError, ValueError) as exc:
            log.debug("proxy connection ended", extra={"session": self.session_id, "error": str(exc)})
        finally:
            for sock in (conn, upstream):
                if sock is not None:
                    self._track(sock, add=False)
                    sock.close()

    def _connect(self, conn, host, port, tunnel):
        """A connected upstream socket, or None after answering the browser with the refusal."""
        try:
            address = self.check(host, port)
        except Refused as exc:
            body = f"Blocked by mcpbrowser: {exc}.".encode()
            conn.sendall(b"HTTP/1.1 403 Forbidden\r\n" + f"{BLOCKED_HEADER}: {canonical_host(host)}\r\n".encode()
                         + b"Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
                         + f"Content-Length: {0 if tunnel else len(body)}\r\n\r\n".encode()
                         + (b"" if tunnel else body))
            return None
        except OSError:  # the name does not resolve
            address = None
        try:
            upstream = socket.create_connection(address[:2], timeout=CONNECT_TIMEOUT_S) if address else None
        except OSError:
            upstream = None
        if upstream is None:
            # A tunnel's 502 fails the request; for plain HTTP closing does (a 502 would be shown as the page).
            if tunnel:
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return None
        upstream.settimeout(None)
        conn.settimeout(None)
        if not self._track(upstream):
            upstream.close()
            return None
        return upstream

    def _splice(self, conn, upstream):
        other = threading.Thread(target=_pump, args=(conn, upstream), name="proxy-up", daemon=True)
        other.start()
        _pump(upstream, conn)
        other.join()
