"""waitress, guarded against slow and idle clients: read deadlines, and a cap on connections without a token.

waitress hands a request to a worker thread only once it is whole, so a stalled sender costs
no thread but a connection: enough of them fill its connection_limit, and every other client
waits in the kernel's backlog (docs/http.md). Its channel_timeout closes idle connections;
the rest is here:

- a request must arrive whole by a deadline counted from its first byte (the head within
  `header_timeout`, head and body within `body_timeout`): a byte every few seconds is never idle;
- connections that have not shown a valid token yet (or, with no tokens, a whole request head)
  are counted apart, and past `max_unauthenticated` the oldest idle one is closed as a new one
  arrives: a real client shows its token at once, so stalled sockets only take each other's place.

Subclasses of waitress's server, channel and parser, built as waitress's create_server builds
them. Everything runs on waitress's socket thread (the main loop); whoever stops the server may
close a connection too, so the table of unvouched connections has a lock."""

import socket
import threading
import time

from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.server import MultiSocketServer, TcpWSGIServer
from waitress.task import ErrorTask, ThreadedTaskDispatcher
from waitress.utilities import RequestEntityTooLarge


class _Parser(HTTPRequestParser):
    """One request as it arrives: when its first byte came, and a hook for its complete head."""

    def __init__(self, adj, on_head):
        super().__init__(adj)
        self.started = time.monotonic()
        self._on_head = on_head

    def received(self, data):
        had_head = self.headers_finished
        consumed = super().received(data)
        if self.headers_finished and not had_head:
            self._on_head(self)
        return consumed


class _RefusalTask(ErrorTask):
    """waitress's answer to a request it refused (a WORKER THREAD runs it); a body too large to read
    is answered with the server's own body for it (`too_large`: the client's JSON-RPC error)."""

    def execute(self):
        too_large = self.channel.server.too_large
        if not isinstance(self.request.error, RequestEntityTooLarge):
            return super().execute()
        self.channel.refused_unread = True
        if too_large is None:
            return super().execute()
        self.status = "413 Content Too Large"
        self.response_headers.append(("Content-Type", "application/json"))
        self.set_close_on_finish()
        self.content_length = len(too_large)
        self.write(too_large)


class _Channel(HTTPChannel):
    """A connection that is unvouched for until a request head shows a valid token."""

    error_task_class = _RefusalTask
    refused_unread = False  # a refusal went out while the client was still sending its body
    lingering = False
    linger_bytes = 0  # what lingering may still read away

    def __init__(self, server, sock, addr, adj, map=None):
        self.vouched = False
        super().__init__(server, sock, addr, adj, map)
        self.parser_class = lambda adj: _Parser(adj, self._head)

    def handle_close(self):
        # A body refused unread is still coming: closing now makes the kernel reset the connection,
        # which throws our answer away before the client reads it. So our side is shut and the rest
        # read away until the client closes, for at most four times the largest body; the idle
        # timeout (--http-idle-timeout: this reading is no activity) closes a client that never does.
        if not (self.refused_unread and not self.lingering and self.connected):
            return super().handle_close()
        try:
            self.socket.shutdown(socket.SHUT_WR)
        except OSError:
            return super().handle_close()
        self.lingering = True
        self.will_close = False
        self.linger_bytes = 4 * self.adj.max_request_body_size

    def close_now(self):
        """Close without lingering: the connection makes room for another."""
        super().handle_close()

    def readable(self):
        return self.lingering or super().readable()

    def handle_read(self):
        if not self.lingering:
            return super().handle_read()
        try:
            self.linger_bytes -= len(self.recv(self.adj.recv_bytes))  # at the client's end, recv closes it
        except OSError:
            return super().handle_close()
        if self.linger_bytes < 0:
            super().handle_close()

    def _head(self, request):
        if not self.vouched and self.server.vouch(request.headers):
            self.vouched = True
            self.server.unvouched_gone(self)

    def add_channel(self, map=None):
        super().add_channel(map)
        self.server.unvouched_new(self)

    def del_channel(self, map=None):
        super().del_channel(map)
        self.server.unvouched_gone(self)


class _Server(TcpWSGIServer):
    """TcpWSGIServer with the read deadlines and the unvouched cap; `vouch(headers)` says whether a
    request head shows a client's credentials (waitress's header names: AUTHORIZATION)."""

    channel_class = _Channel

    def __init__(self, application, map, *, limits, vouch, unvouched, lock, too_large, **kw):
        self.limits, self.vouch, self.too_large = limits, vouch, too_large
        self._unvouched, self._unvouched_lock = unvouched, lock  # shared by every listening socket
        super().__init__(application, map, **kw)

    def unvouched_new(self, channel):
        with self._unvouched_lock:
            self._unvouched[channel] = None  # a dict keeps its order: the oldest first

    def unvouched_gone(self, channel):
        with self._unvouched_lock:
            self._unvouched.pop(channel, None)

    def handle_accept(self):
        super().handle_accept()
        with self._unvouched_lock:
            excess = len(self._unvouched) - self.limits.max_unauthenticated
            idle = [c for c in self._unvouched if not c.requests][:max(excess, 0)]
        for channel in idle:
            channel.close_now()  # on this thread, between its reads: no worker has it

    def maintenance(self, now):
        """waitress's (close connections idle past channel_timeout), and the read deadlines."""
        super().maintenance(now)
        mono = time.monotonic()
        for channel in list(self.active_channels.values()):
            request = channel.request
            if request is None or channel.requests:
                continue
            limit = self.limits.body_timeout if request.headers_finished else self.limits.header_timeout
            if mono - request.started > limit:
                channel.will_close = True


class Limits:
    """The guard's numbers (seconds, connections); see Config's http_* fields for why each."""

    def __init__(self, header_timeout, body_timeout, idle_timeout, max_connections, max_unauthenticated):
        self.header_timeout, self.body_timeout, self.idle_timeout = header_timeout, body_timeout, idle_timeout
        self.max_connections, self.max_unauthenticated = max_connections, max_unauthenticated


def create_server(app, host, port, threads, limits, vouch, too_large=None, **kw):
    """(runner, listeners): waitress for `app` on host:port (every address the host resolves to), with the
    guards. `runner.run()` serves; closing the listeners stops taking connections (its worker threads are not
    waited for). `too_large`: the JSON body of the 413 to a request over max_request_body_size (None: waitress's)."""
    adj = Adjustments(host=host, port=port, threads=threads, channel_timeout=limits.idle_timeout,
                      connection_limit=limits.max_connections,
                      # Deadlines are checked this often (the check walks the open connections).
                      cleanup_interval=1,
                      # select() cannot watch a descriptor above 1023, and the browser's pipes
                      # share this process's descriptors: poll() has no such ceiling.
                      asyncore_use_poll=True, **kw)
    sockets: dict[int, object] = {}  # waitress's socket map: every listener and connection, by descriptor
    dispatcher = ThreadedTaskDispatcher()
    dispatcher.set_thread_count(adj.threads)
    shared = {"limits": limits, "vouch": vouch, "unvouched": {}, "lock": threading.Lock(), "too_large": too_large}
    servers = [_Server(app, sockets, dispatcher=dispatcher, adj=adj, sockinfo=info, **shared) for info in adj.listen]
    runner = MultiSocketServer(sockets, adj, [(s.effective_host, s.effective_port) for s in servers], dispatcher)
    return runner, servers
