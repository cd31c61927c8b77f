"""The core's resources (each session's logs, and the server log): which a client may see, reading
them, and who subscribes.

ANY THREAD: every method. A read of an idle session runs on its thread, after a round trip that makes the browser's news
arrive; while a call runs (and its events flow), it reads the session's numbered logs at once, from the caller's thread.
A subscription makes the session's thread tick (watch.py) until its last subscriber leaves or the session ends (the
registry's `on_ended`, which ends every subscription to it).

A client sees only its own sessions (`owner`, as for tools; None sees all): another's is
answered as a URI that names nothing, so listing, reading and subscribing tell it nothing.
"""

import threading
from concurrent.futures import Future
from typing import Any

from mcpbrowser.errors import SessionNotFound
from mcpbrowser.logs import log
from mcpbrowser.resources.base import parse_uri
from mcpbrowser.resources.server_log import ServerLog, ServerLogResource
from mcpbrowser.resources.session_logs import READ_LIMIT
from mcpbrowser.resources.watch import TICK_S, Listener, SessionWatch


class ResourceNotFound(LookupError):
    """A URI that names no resource this client may see."""

    def __init__(self, uri: str) -> None:
        super().__init__(f"Resource not found: {uri[:200]}")
        self.uri = uri


class ResourceHub:
    def __init__(self, registry: Any, resources: list[Any], server_log: ServerLog | None = None) -> None:
        self._registry = registry
        self.resources = {r.name: r for r in resources}
        self.server_log = server_log
        self._lock = threading.Lock()
        # A session's id, or ("server", owner) for a client's view of the server log -> its watch
        self._watches: dict[Any, SessionWatch] = {}
        self._tokens: dict[object, Any] = {}  # subscription token -> its watch's key

    def listed(self, owner: str | None) -> list[dict[str, Any]]:
        """resources/list: the server log, and every resource of the client's open sessions."""
        out = [dict(ServerLogResource.listed)] if self.server_log is not None else []
        for record in self._registry.records():
            if owner is None or record.owner == owner:
                title = record.worker.info.get("title", "")
                out += [r.describe(record.session_id, title) for r in self.resources.values()]
        return out

    def templates(self) -> list[dict[str, Any]]:
        return [r.template() for r in self.resources.values()]

    def _find(self, uri: str, owner: str | None) -> tuple[Any, Any, int]:
        """(session record, resource, after) of a URI this client may read; else ResourceNotFound."""
        parsed = parse_uri(uri)
        if parsed is None or parsed[1] not in self.resources:
            raise ResourceNotFound(uri)
        session_id, name, after = parsed
        record = self._registry.open_record(session_id)
        if record is None or (owner is not None and record.owner != owner):
            raise ResourceNotFound(uri)
        return record, self.resources[name], after

    def _server_after(self, uri: str) -> int | None:
        return ServerLogResource.after(uri) if self.server_log is not None else None

    def visible(self, uri: str, owner: str | None) -> bool:
        """Whether the URI names the server log, or a resource of an open session of this client."""
        if self._server_after(uri) is not None:
            return True
        try:
            self._find(uri, owner)
        except ResourceNotFound:
            return False
        return True

    def read(self, uri: str, owner: str | None) -> Future:
        """A Future of the read's plain data (with `next`, the URI of the next read); raises ResourceNotFound."""
        server_after = self._server_after(uri)
        if server_after is not None and self.server_log is not None:
            answer: Future[Any] = Future()
            out = self.server_log.since(owner, server_after, READ_LIMIT)
            answer.set_result({**out, "next": f"{ServerLogResource.uri('')}?after={out['cursor']}"})
            return answer
        record, resource, after = self._find(uri, owner)
        base = resource.uri(record.session_id)
        answer = Future()

        def done(fut: Future) -> None:
            if fut.cancelled() or isinstance(fut.exception(), SessionNotFound):
                answer.set_exception(ResourceNotFound(uri))  # it closed meanwhile
            elif fut.exception() is not None:
                answer.set_exception(fut.exception())  # type: ignore[arg-type]
            else:
                # memoryMb: the session's memory when last measured (list_sessions measures it; so does
                # every call under --session-memory-mb), plain data on its worker.
                memory = {} if worker.memory_mb is None else {"memoryMb": worker.memory_mb}
                answer.set_result({**fut.result(), **memory, "next": f"{base}?after={fut.result()['cursor']}"})

        worker = record.worker
        if worker.running is None or worker.events is None:
            worker.submit(_read_idle, resource, after).add_done_callback(done)
        else:  # a call holds the thread: Playwright dispatches its events meanwhile, so the logs are current
            now: Future[Any] = Future()
            now.set_result(resource.read(worker.events, worker.secrets, after))
            done(now)
        return answer

    def subscribe(self, uri: str, owner: str | None, listener: Listener) -> tuple[object, str]:
        """(token, the URI its notifications name) of a new subscription; raises ResourceNotFound."""
        token = object()
        if self._server_after(uri) is not None and self.server_log is not None:
            with self._lock:
                key = ("server", owner)
                watch = self._watches.get(key)
                if watch is None:
                    watch = self._watches[key] = SessionWatch(
                        "server", {"log": ServerLogResource}, self.server_log.view(owner))
                watch.add("log", token, listener)
                self._tokens[token] = key
            return token, ServerLogResource.uri("")
        record, resource, _ = self._find(uri, owner)
        with self._lock:
            watch = self._watches.get(record.session_id)
            if watch is None:
                watch = self._watches[record.session_id] = SessionWatch(
                    record.session_id, self.resources, record.worker.events)
            watch.add(resource.name, token, listener)
            self._tokens[token] = record.session_id
        record.worker.tick("logs", TICK_S, watch.tick)
        record.worker.submit(watch.tick)  # wakes an idle session thread to start ticking
        if self._registry.open_record(record.session_id) is None:  # it ended meanwhile
            self.session_ended(record.session_id)
        return token, resource.uri(record.session_id)

    def unsubscribe(self, token: object) -> None:
        with self._lock:
            key = self._tokens.pop(token, None)
            watch = self._watches.get(key) if key is not None else None
            if key is None or watch is None or not watch.remove(token):
                return
            del self._watches[key]
            watch.close()
            if isinstance(key, tuple):
                if self.server_log is not None:
                    self.server_log.unview(key[1])
                return
            record = self._registry.open_record(key)
            if record is not None:
                record.worker.untick("logs")  # nobody listens: the session thread sleeps between calls again

    def session_ended(self, session_id: str) -> None:
        """The registry's on_ended: every subscription to the session ends."""
        with self._lock:
            watch = self._watches.pop(session_id, None)
            for token in [t for t, sid in self._tokens.items() if sid == session_id]:
                del self._tokens[token]
        if watch is None:
            return
        watch.close()
        for name, listener in watch.listeners():
            try:
                listener.ended(self.resources[name].uri(session_id))
            except Exception:  # a session's end must go on whatever one subscription does
                log.exception("ending a subscription failed", extra={"session": session_id})


def _read_idle(state: Any, resource: Any, after: int) -> dict[str, Any]:
    """SESSION THREAD: dispatch what the browser sent while the session was idle, then read."""
    state.flush_events()
    return resource.read(state.events, state.secrets, after)
