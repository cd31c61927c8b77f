"""One session's downloads: saved under server-chosen names, within a size limit and the domain policy.

SESSION THREAD ONLY: Playwright dispatches `on_download` on the session's thread, in a greenlet of its own, while a call
is in progress; its `save_as` waits there while the session's calls go on, so a download completes during some later
call (any call pumps the events; `wait_for(download=true)` waits for one). `_police` runs on the session's Playwright
loop: as a task while a call pumps it, as a queued command (`tick`) while the session is idle.

The size limit (--max-download-mb) bounds the bytes of all the session's downloads on disk at once: a download whose
response announced more is cancelled as it starts (read from its request in the session's network ring; a link with
`download` is fetched out of the page's sight, and stopped as it streams); at most AT_ONCE run at once; while they
stream, the bytes of the browser's files and of our copies are summed every WATCH_S, and the largest still streaming is
cancelled while the sum passes the limit. The files on disk, not Chromium's download events: those go only to the CDP
session that enabled them, Playwright's own. On a remote endpoint the files are not on our disk: there only the
announced size, the whole file's size and the number at once hold.
"""

import asyncio
import mimetypes
import os
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from typing import Any

from mcpbrowser import trace_scrub
from mcpbrowser.errors import disk_fault
from mcpbrowser.logs import log
from mcpbrowser.session import playwright_internals
from mcpbrowser.timers import now_ms

# A stream on loopback writes a few MB in 20 ms (what passes the limit: docs/tools.md); a look is a few stat() calls.
WATCH_S = 0.02
AT_ONCE = 3  # a page that needs more files at once is rare, and each one shares the limit: more get less each


class Downloads:
    """The session's downloads as plain dicts, newest last, and which the agent has not heard of yet."""

    def __init__(self, session_id: str, directory: str, limit_mb: int, refused: Callable[[str], bool],
                 request_for: Callable[[str], Any], submit: Callable[[Callable], Any],
                 secrets: Callable[[], Iterable[str]]) -> None:
        self.session_id, self.directory = session_id, directory
        self.limit = limit_mb * 1024 * 1024
        self._refused = refused       # refused(url) -> bool: the session's domain policy
        self._request_for = request_for  # request_for(url): its latest Request in the network ring, or None
        self._submit = submit         # submit(fn): queue fn(state) for the session thread (the worker's)
        self._secrets = secrets       # secrets(): the session's known secrets, kept out of file names
        # Downloads not yet whole and saved: [entry, download, the browser's file or None, our copy]
        self._flying: list[list] = []
        self._watch: Any = None       # the asyncio task that polices them while calls pump the loop
        self._ticking = False         # a timer or a queued tick polices them while the session is idle
        self.entries: list[dict] = []
        self._told: dict[int, str] = {}  # entry index -> status the agent last heard
        # id(entry) -> its refusal, while the cancel _police sent ends its save: the entry says "refused" only once
        # our partial file is gone (an agent, or a test, that reads "refused" finds no file of it)
        self._refusing: dict[int, dict] = {}
        self.waited = 0               # entries when wait_for(download) last returned

    def in_progress(self) -> bool:
        return any(e["status"] == "downloading" for e in self.entries)

    def news(self) -> list[dict]:
        """Entries whose status changed since the last answer that told of them."""
        if not self.entries:
            return []
        # Copies: an entry changes as its download goes on, and the answer (and its history row,
        # written after the answer went out) must say what was true when it was answered.
        fresh = [dict(e) for i, e in enumerate(self.entries) if self._told.get(i) != e["status"]]
        self._told = {i: e["status"] for i, e in enumerate(self.entries)}
        return fresh

    # -- event handlers ---------------------------------------------------------------

    def _announced(self, url: str) -> tuple[int | None, str | None]:
        """(Content-Length, MIME type) the download's response announced; None for what it did not."""
        request, response = self._request_for(url), None
        with suppress(Exception):
            response = request.response() if request is not None else None
        if response is None:
            return None, None
        headers = response.headers
        length = headers.get("content-length", "")
        return (int(length) if length.isdigit() else None,
                headers.get("content-type", "").split(";")[0].strip() or None)

    def on_download(self, download: Any) -> None:
        announced, mime = self._announced(download.url)
        entry = {"name": None, "suggestedName": download.suggested_filename, "url": download.url,
                 "status": "downloading", "size": None,
                 "mimeType": mime or mimetypes.guess_type(download.suggested_filename)[0],
                 "path": None, "startedAt": now_ms()}
        self.entries.append(entry)
        reason = None
        if self._refused(download.url):
            reason = "its URL is outside the session's domain policy"
        elif not self.limit:
            reason = "downloads are off (--max-download-mb 0)"
        elif announced is not None and announced > self.limit:
            reason = f"it is {announced} bytes, over --max-download-mb {self.limit // 1048576}"
        elif len(self._flying) >= AT_ONCE:
            reason = f"{len(self._flying)} downloads of the session were running, the most at once"
        if reason is not None:
            self._refuse(download, entry, reason)
            return
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        safe = trace_scrub.download_name(download.suggested_filename, self._secrets())
        name = f"{time.strftime('%Y%m%d-%H%M%S')}-{self.session_id[:8]}-{len(self.entries)}-{safe or 'download'}"
        path = os.path.join(self.directory, name)
        part = partial(path)
        try:
            source = playwright_internals.download_file(download)
        except AttributeError:  # Playwright moved it: the whole file's size is checked, below
            source = None
        flight = [entry, download, source, part]
        self._flying.append(flight)
        self._start_watch(download)
        try:
            download.save_as(part)
            os.chmod(part, 0o600)  # as every file the server writes: its owner's only
            size = os.path.getsize(part)
        except Exception as exc:  # cancelled, failed in the browser, or the session closed
            _unlink(part)
            if self._refused_now(entry, download):  # _police cancelled it, and says why
                return
            if disk_fault(path, exc) == "DISK_FULL":  # no partial file either way
                entry.update(status="failed", errorCode="DISK_FULL", error="Not saved: the disk is full.")
            else:
                entry.update(status="failed", error=str(exc).splitlines()[0][:200])
            return
        finally:
            self._flying.remove(flight)
        if id(entry) in self._refusing:  # _police cancelled it as it ended: the answer says refused, so it is
            _unlink(part)
            self._refused_now(entry, download)
            return
        if size > self.limit:
            _unlink(part)
            self._refuse(download, entry, f"it is {size} bytes, over --max-download-mb {self.limit // 1048576}",
                         size=size)
            return
        with suppress(Exception):  # it may be gone already
            download.delete()  # the browser's file, now that ours is whole (else it stays until the session closes)
        os.replace(part, path)
        entry.update(status="saved", name=name, size=size, path=path)
        log.info("download saved", extra={"event": "download_saved", "session": self.session_id, "bytes": size})

    # -- the limit while downloads stream --------------------------------------------------

    def _start_watch(self, download: Any) -> None:
        """Police the downloads in flight: a task on the session's loop, and ticks while the session is idle."""
        if self._watch is None or self._watch.done():
            self._watch = playwright_internals.event_loop(download.page).create_task(self._watching())
        if not self._ticking:
            self._ticking = True
            self._later()

    async def _watching(self) -> None:
        while self._flying:
            await self._police()
            await asyncio.sleep(WATCH_S)

    def _later(self) -> None:
        """A timer that queues `tick` in WATCH_S (it touches nothing of Playwright's: it only queues)."""
        timer = threading.Timer(WATCH_S, self._submit, args=(lambda state: self.tick(),))
        timer.daemon = True
        timer.start()

    def tick(self) -> None:
        """Police the downloads in flight between calls; again in WATCH_S while some are."""
        if not self._flying:
            self._ticking = False
            return
        try:
            playwright_internals.run_coroutine(self._flying[0][1], self._police())
        except Exception:
            self._ticking = False  # the session is closing; a later download starts the ticks again
            raise
        self._later()

    async def _police(self) -> None:
        """Cancel the largest streaming download while the bytes of all those in flight pass the limit."""
        flights = list(self._flying)  # it changes while a cancel is awaited
        sizes = [(_size(source) + _size(source + ".crdownload") if source else 0) + _size(part)
                 for _, _, source, part in flights]
        total = sum(sizes)
        while total > self.limit:
            # A download whose file the browser has whole can no longer be cancelled (it is being
            # copied); it counts, and the others make room for it.
            streaming = [(size, i) for i, (size, flight) in enumerate(zip(sizes, flights, strict=True))
                         if id(flight[0]) not in self._refusing and flight[2]
                         and os.path.exists(flight[2] + ".crdownload")]
            if not streaming:
                return
            size, i = max(streaming)
            entry, download = flights[i][0], flights[i][1]
            mb = self.limit // 1048576
            reason = (f"it passed --max-download-mb {mb} as it streamed" if size > self.limit else
                      f"the session's downloads running at once passed --max-download-mb {mb} together "
                      f"({total} bytes)")
            self._refusing[id(entry)] = {"error": f"Refused: {reason}.", "size": size}
            log.warning("download refused", extra={"event": "download_refused", "session": self.session_id,
                                                   "reason": reason})
            total -= size
            sizes[i] = 0
            with suppress(Exception):  # it ended meanwhile: its save_as hears why
                await playwright_internals.cancel_download(download)

    def _refused_now(self, entry: dict, download: Any) -> bool:
        """After its save ended and our partial file is gone: a download _police refused says so now."""
        refusal = self._refusing.pop(id(entry), None)
        if refusal is not None:
            entry.update(status="refused", **refusal)
            _drop(download)
        return refusal is not None

    def _refuse(self, download: Any, entry: dict, reason: str, size: int | None = None) -> None:
        entry.update(status="refused", error=f"Refused: {reason}.", size=size)
        _drop(download)
        log.warning("download refused", extra={"event": "download_refused", "session": self.session_id,
                                               "reason": reason})


def partial(path: str) -> str:
    """Where a file is written before it is whole: beside it, named with the writing process's id, so
    that a later server removes what a killed one left (core/file_keeper.py) and nothing a live one writes."""
    return f"{path}.{os.getpid()}.part"


def _drop(download: Any) -> None:
    """Cancel a download and delete the browser's file of it."""
    for step in (download.cancel, download.delete):
        with suppress(Exception):  # it may have ended already
            step()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _unlink(path: str) -> None:
    with suppress(OSError):
        os.unlink(path)
