"""Remote browser endpoints as a fleet: where a new session goes, and which endpoints are up.

Threads: `attach` runs on a session thread; `suspect`, `health` and `stop` on any thread, under this object's
lock; each endpoint has a watcher thread (`fleet-N`) that probes it every --browser-ping seconds while it is
up, with backoff while it is down. The fleet places sessions and nothing more (a Selenium Grid, which picks its
own nodes, is one endpoint); a session whose endpoint went learns it on its next call (SESSION_LOST)."""

import base64
import http.client
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit

from tenacity import Retrying, retry_if_result, wait_exponential

from mcpbrowser.config import RemoteEndpoint
from mcpbrowser.errors import BrowserError, BrowserUnavailable, MaxSessionsReached
from mcpbrowser.logs import log
from mcpbrowser.redaction import scrub_urls

PROBE_TIMEOUT_S = 5.0


class Member:
    """One endpoint's live state (under the fleet's lock)."""

    def __init__(self, spec: RemoteEndpoint) -> None:
        self.spec = spec
        self.capacity: int = spec.capacity or 1  # Config.remote_endpoints() always sets it
        self.up = True
        self.error: str | None = None    # why it is down
        self.workers: list[Any] = []     # the session threads placed on it (pooled ones too)
        self.wake = threading.Event()    # a session or an attach found it failing: probe now
        self.next_probe: float | None = None  # wall time of the next probe while down

    def load(self) -> int:
        """Sessions on it now; a session's thread ends once its context is closed."""
        self.workers = [w for w in self.workers if w.alive]
        return len(self.workers)


class Fleet:
    """Places sessions on the remote endpoint with the most free capacity, among those that answer."""

    def __init__(self, endpoints: tuple[RemoteEndpoint, ...], ping_s: int, stopping: threading.Event) -> None:
        self.members = [Member(spec) for spec in endpoints]
        self._ping = ping_s or None
        self._stopping = stopping
        self._lock = threading.Lock()

    # -- ANY THREAD -------------------------------------------------------------

    def start(self) -> None:
        for number, member in enumerate(self.members):
            threading.Thread(target=self._watch, args=(member,), name=f"fleet-{number}", daemon=True).start()
        log.info("using remote browsers", extra={"event": "remote_browser", "endpoints": [
            {"url": m.spec.shown(), "kind": m.spec.kind, "capacity": m.capacity} for m in self.members]})

    def stop(self) -> None:
        """The caller sets `stopping`; this wakes the watchers so they see it."""
        for member in self.members:
            member.wake.set()

    def suspect(self, worker: Any, error: str) -> None:
        """A session found its browser gone: take its endpoint out of placement until a probe says it answers."""
        with self._lock:
            member = next((m for m in self.members if worker in m.workers), None)
        if member is not None:
            self._down(member, scrub(_first_line(error), member.spec))

    def health(self) -> list[dict[str, Any]]:
        """Each endpoint's state and load, for list_sessions and the logs."""
        with self._lock:
            return [{"endpoint": m.spec.shown(), "kind": m.spec.kind, "state": "up" if m.up else "down",
                     "sessions": m.load(), "capacity": m.capacity,
                     **({"error": m.error} if not m.up else {})} for m in self.members]

    # -- SESSION THREAD -----------------------------------------------------------

    def attach(self, worker: Any, connect: Callable[[RemoteEndpoint], Any]) -> Any:
        """connect(endpoint) on the best endpoint; one that fails is taken out and the next tried."""
        tried: set[int] = set()
        failures: list[str] = []
        while True:
            try:
                member, slot = self._place(tried)
            except BrowserUnavailable:
                if not failures:
                    raise
                # Playwright's message quotes the URL whole: only its scrubbed first line goes out.
                raise BrowserError("Could not attach to a browser endpoint: " + "; ".join(failures)) from None
            try:
                attached = connect(member.spec)
            except Exception as exc:
                tried.add(id(member))
                with self._lock:
                    member.workers.remove(slot)
                error = scrub(_first_line(exc), member.spec)
                failures.append(f"{member.spec.shown()}: {error}")
                self._down(member, error)
                continue
            with self._lock:
                member.workers[member.workers.index(slot)] = worker
            worker.on_browser(endpoint=member.spec.shown())
            return attached

    def _place(self, tried: set[int]) -> tuple[Member, "_Slot"]:
        with self._lock:
            live = [m for m in self.members if m.up and id(m) not in tried]
            free = [(m.capacity - m.load(), -index, m) for index, m in enumerate(self.members) if m in live]
            best = max(free, default=None, key=lambda f: f[:2])
            if best is not None and best[0] > 0:
                slot = _Slot()  # counted while the attach runs, so parallel opens spread
                best[2].workers.append(slot)
                return best[2], slot
            if live:
                total = sum(m.capacity for m in live)
                raise MaxSessionsReached(
                    f"Every live browser endpoint is full ({total} sessions in all). Close a session first, "
                    "or raise an endpoint's capacity.", details={"endpoints": len(self.members)})
            soonest = min((m.next_probe for m in self.members if m.next_probe), default=None)
            retry = max(1000, round(((soonest or time.time()) - time.time()) * 1000))
            down = "; ".join(f"{m.spec.shown()}: {m.error}" for m in self.members if not m.up)
            raise BrowserUnavailable(f"No browser endpoint answers ({down}). Each is retried with backoff; "
                                     f"retry in {retry / 1000:.0f} s.", details={"retryAfterMs": retry})

    # -- WATCHER THREAD (one per endpoint) ------------------------------------------

    def _watch(self, member: Member) -> None:
        while not self._stopping.is_set():
            member.wake.wait(self._ping)
            member.wake.clear()
            if self._stopping.is_set():
                return
            failure = probe(member.spec)
            if failure is None:
                continue
            self._down(member, failure)
            # Back off 0.5, 1, 2 ... 30 s between probes, never longer than --browser-ping (a down endpoint is
            # probed at least as often as an up one); it rejoins placement when one answers.
            retrying = Retrying(retry=retry_if_result(lambda answered: not answered),
                                wait=wait_exponential(multiplier=0.5, max=min(30, self._ping or 30)),
                                sleep=self._probe_sleep(member), stop=lambda _: self._stopping.is_set(),
                                retry_error_callback=lambda _: False)  # stopped while down: no RetryError
            if retrying(self._probe_once, member):
                self._up(member)

    def _probe_sleep(self, member: Member) -> Callable[[float], None]:
        def sleep(seconds: float) -> None:
            member.next_probe = time.time() + seconds
            self._stopping.wait(seconds)
        return sleep

    def _probe_once(self, member: Member) -> bool:
        failure = probe(member.spec)
        if failure is not None:
            with self._lock:
                member.error = failure
        return failure is None

    def _down(self, member: Member, error: str) -> None:
        with self._lock:
            was_up, member.up, member.error = member.up, False, error
        if was_up:
            log.warning("browser endpoint down", extra={"event": "endpoint_down", "endpoint": member.spec.shown(),
                                                        "error": error})
            member.wake.set()  # its watcher starts the backoff

    def _up(self, member: Member) -> None:
        with self._lock:
            member.up, member.error, member.next_probe = True, None, None
        log.info("browser endpoint up", extra={"event": "endpoint_up", "endpoint": member.spec.shown()})


class _Slot:
    """A place in an endpoint's load held while a session attaches there."""

    alive = True


def probe(spec: RemoteEndpoint) -> str | None:
    """None when the endpoint answers HTTP as its kind should (its backend's probe path), else why not, in a
    line. Cheap (no browser or driver is started), so it can run every few seconds."""
    parts = urlsplit(spec.url)
    secure = parts.scheme in ("https", "wss")
    path = spec.backend.probe_path(parts.path)
    connection_class = http.client.HTTPSConnection if secure else http.client.HTTPConnection
    connection = connection_class(parts.hostname or "", parts.port, timeout=PROBE_TIMEOUT_S)
    headers = dict(spec.headers)
    if parts.username and not any(k.lower() == "authorization" for k in headers):  # a cloud Grid's user:key@
        secret = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(secret).decode()
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        body = response.read(65536)
    except (OSError, http.client.HTTPException) as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        connection.close()
    return spec.backend.probe_fault(response.status, body)


def _first_line(error: Any) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:300]


def scrub(text: str, spec: RemoteEndpoint) -> str:
    """text without what may be secret: its URLs as redaction.scrub_urls shows them; header values masked."""
    text = scrub_urls(text, spec.url)
    for _, value in spec.headers:  # the value whole, and the token of `Bearer TOKEN`
        for secret in (value, value.split()[-1] if value.split() else ""):
            if len(secret) >= 4:
                text = text.replace(secret, "***")
    return text
