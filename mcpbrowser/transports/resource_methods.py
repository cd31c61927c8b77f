"""resources/* and subscriptions/listen for one MCP connection: the protocol face of the core's ResourceHub.

Handshake era: resources/subscribe and unsubscribe; updates go on the client's own channel (stdio's
pipe, HTTP's GET stream) until it unsubscribes, the session ends, or the connection closes.
2026-07-28: subscriptions/listen, whose answer is the stream: an acknowledgement of the URIs this
client may see, then the updates stamped with the listen's id, until the client cancels or every
session it names has ended (then the listen's result).

Threads: the reader thread runs the handlers; session threads send the notifications (watch.py),
and whichever thread ends a session ends its subscriptions."""

import json
import threading
from concurrent.futures import Future

from mcpbrowser.resources.hub import ResourceNotFound
from mcpbrowser.transports import protocol
from mcpbrowser.transports.methods import HANDSHAKE, MODERN
from mcpbrowser.transports.protocol import ProtocolError

SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
RESOURCE_NOT_FOUND = -32002  # 2025-11-25's code; 2026-07-28 retired it, and its clients get -32602


def _not_found(exc, request_id, caller):
    code = protocol.INVALID_PARAMS if caller.modern else RESOURCE_NOT_FOUND
    return ProtocolError(code, str(exc), request_id, {"uri": exc.uri[:200]})


class _Listen:
    """One 2026-07-28 subscriptions/listen stream; its Future settles when it ends (cancelled: by the client)."""

    def __init__(self, connection, request_id):
        self.connection, self.request_id = connection, request_id
        self.meta = {SUBSCRIPTION_ID_KEY: request_id}
        self.done: Future[None] = Future()
        self.tokens: list[object] = []
        self._lock = threading.Lock()
        self._live: set[str] = set()
        self._finishing = False

    def start(self, hub, uris, owner):
        # An unknown URI, or another client's, is left out of the acknowledgement: nothing says whether it exists.
        honored = [uri for uri in dict.fromkeys(uris) if hub.visible(uri, owner)]
        self.connection.send(protocol.notification("notifications/subscriptions/acknowledged", {
            "notifications": {"resourceSubscriptions": honored} if honored else {}, "_meta": self.meta}),
            self.request_id)
        for uri in honored:
            try:
                token, told_uri = hub.subscribe(uri, owner, self)
            except ResourceNotFound:
                continue  # it ended meanwhile
            with self._lock:
                self.tokens.append(token)
                self._live.add(told_uri)
            if self.done.done():  # the client left meanwhile
                hub.unsubscribe(token)
        with self._lock:
            over = not self._live
        if over:
            self._finish()

    def updated(self, uri):
        self.connection.send(protocol.notification("notifications/resources/updated",
                                                   {"uri": uri, "_meta": self.meta}), self.request_id)

    def ended(self, uri):
        with self._lock:
            self._live.discard(uri)
            over = not self._live
        if over:
            self._finish()

    def _finish(self):
        with self._lock:  # once: two URIs of one session both end with it
            if self._finishing:
                return
            self._finishing = True
        if self.done.set_running_or_notify_cancel():  # False: the client cancelled it first
            self.done.set_result(None)


class ResourceMethods:
    """The resource requests of one McpConnection, and the hub's listener of its handshake-era subscriptions."""

    def __init__(self, connection):
        self.connection = connection
        self._lock = threading.Lock()
        self._subscribed: dict[str, object] = {}  # handshake era: notified URI -> hub token

    @property
    def _hub(self):
        return self.connection.core.resources

    def register(self, table):
        table.add("resources/list", self._list, capability={"resources": {}})
        table.add("resources/templates/list", self._templates)
        table.add("resources/read", self._read)
        table.add("resources/subscribe", self._subscribe, eras=(HANDSHAKE,),
                  capability={"resources": {"subscribe": True}})
        table.add("resources/unsubscribe", self._unsubscribe, eras=(HANDSHAKE,))
        table.add("subscriptions/listen", self._listen, eras=(MODERN,), capability={"resources": {"subscribe": True}})

    def close(self):
        """The connection ended: so do its handshake-era subscriptions."""
        with self._lock:
            tokens, self._subscribed = list(self._subscribed.values()), {}
        for token in tokens:
            self._hub.unsubscribe(token)

    def updated(self, uri):
        """A handshake-era subscription's update: on the client's own channel."""
        self.connection.send(protocol.notification("notifications/resources/updated", {"uri": uri}))

    def ended(self, uri):
        with self._lock:
            self._subscribed.pop(uri, None)

    # -- THE READER THREAD ------------------------------------------------------------

    @staticmethod
    def _cached(out, caller, scope="private"):
        if caller.modern:  # private: a client's own sessions, never to be shared from a cache
            out.update(cacheScope=scope, ttlMs=0)
        return out

    def _list(self, msg, caller):
        protocol.check_paginated(msg.params, msg.id)
        return self._cached({"resources": self._hub.listed(caller.owner)}, caller)

    def _templates(self, msg, caller):
        protocol.check_paginated(msg.params, msg.id)
        return self._cached({"resourceTemplates": self._hub.templates()}, caller, "public")

    def _read(self, msg, caller):
        params = protocol.validated("ReadResourceRequestParams", msg.params, msg.id)
        try:
            fut = self._hub.read(params.uri, caller.owner)
        except ResourceNotFound as exc:
            raise _not_found(exc, msg.id, caller) from None
        fut.add_done_callback(lambda f: self._answer_read(msg, caller, params.uri, f))
        return None  # answered from the session thread

    def _answer_read(self, msg, caller, uri, fut):
        """SESSION THREAD (or the reader's, when the session was gone already)."""
        exc = fut.exception()
        if isinstance(exc, ResourceNotFound):
            error = _not_found(exc, msg.id, caller)
            self.connection.send(protocol.error(msg.id, error.code, error.message, error.data), msg.id)
            return
        if exc is not None:
            self.connection.send(protocol.error(msg.id, protocol.INTERNAL_ERROR, f"Internal error: {exc}"), msg.id)
            return
        text = json.dumps(fut.result(), separators=(",", ":"), ensure_ascii=False)
        out = {"contents": [{"uri": uri, "mimeType": "application/json", "text": text}]}
        self.connection.answer(msg.id, self._cached(out, caller), caller)

    def _subscribe(self, msg, caller):
        params = protocol.validated("SubscribeRequestParams", msg.params, msg.id)
        try:
            token, uri = self._hub.subscribe(params.uri, caller.owner, self)
        except ResourceNotFound as exc:
            raise _not_found(exc, msg.id, caller) from None
        with self._lock:
            old = self._subscribed.pop(uri, None)
            self._subscribed[uri] = token
        if old is not None:  # subscribing twice is subscribing once
            self._hub.unsubscribe(old)
        return {}

    def _unsubscribe(self, msg, caller):
        params = protocol.validated("UnsubscribeRequestParams", msg.params, msg.id)
        with self._lock:
            token = self._subscribed.pop(params.uri.partition("?")[0], None)
        if token is not None:
            self._hub.unsubscribe(token)
        return {}

    def _listen(self, msg, caller):
        params = protocol.validated("SubscriptionsListenRequestParams", msg.params, msg.id)
        listen = _Listen(self.connection, msg.id)
        self.connection.reserve(msg.id)
        self.connection.track(msg.id, listen.done)  # cancellation (or a closed stream) ends it

        def ended(fut):
            with listen._lock:
                tokens = list(listen.tokens)
            for token in tokens:
                self._hub.unsubscribe(token)
            if self.connection.untrack(msg.id):
                self.connection.answer(msg.id, {"_meta": listen.meta}, caller)

        listen.done.add_done_callback(ended)
        listen.start(self._hub, params.notifications.resource_subscriptions or [], caller.owner)
        return None  # the answer ends the stream
