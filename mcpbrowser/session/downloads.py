"""One session's downloads: saved under server-chosen names, within a size limit and the domain policy.

SESSION THREAD ONLY: Playwright dispatches `on_download` on the session's thread,
in a greenlet of its own, while a call is in progress; its `save_as` waits there
for the browser to finish while the session's calls go on. A download therefore
completes during some later Playwright call of the session (any call pumps the
events), and `wait_for(download=true)` is the way to wait for one.

The size limit holds twice: a download whose response announced a larger
Content-Length (read from its request in the session's network ring, once per
download, rather than from a handler on every response) is cancelled as it starts (the server sees the connection
close); one that did not announce its size is checked when the browser has it,
and deleted when it is too big. So a page can make the browser fetch at most
one unannounced oversized file into Playwright's temporary folder, which goes
with the download.
"""

import mimetypes
import os
import re
import time
from collections.abc import Callable
from typing import Any

from mcpbrowser.errors import disk_fault
from mcpbrowser.logs import log
from mcpbrowser.timers import now_ms


class Downloads:
    """The session's downloads as plain dicts, newest last, and which the agent has not heard of yet."""

    def __init__(self, session_id: str, directory: str, limit_mb: int, refused: Callable[[str], bool],
                 request_for: Callable[[str], Any]) -> None:
        self.session_id, self.directory = session_id, directory
        self.limit = limit_mb * 1024 * 1024
        self._refused = refused       # refused(url) -> bool: the session's domain policy
        self._request_for = request_for  # request_for(url): its latest Request in the network ring, or None
        self.entries: list[dict] = []
        self._told: dict[int, str] = {}  # entry index -> status the agent last heard
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
        request = self._request_for(url)
        try:
            response = request.response() if request is not None else None
        except Exception:
            response = None
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
        if reason is not None:
            self._refuse(download, entry, reason)
            return
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        # The server names the file: the page's suggestion keeps only its safe characters, as a suffix.
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(download.suggested_filename)).lstrip(".")[-80:]
        name = f"{time.strftime('%Y%m%d-%H%M%S')}-{self.session_id[:8]}-{len(self.entries)}-{safe or 'download'}"
        path = os.path.join(self.directory, name)
        part = partial(path)
        try:
            download.save_as(part)
            os.chmod(part, 0o600)  # as every file the server writes: its owner's only
            size = os.path.getsize(part)
        except Exception as exc:  # cancelled, failed in the browser, or the session closed
            _unlink(part)
            if disk_fault(path, exc) == "DISK_FULL":  # no partial file either way
                entry.update(status="failed", errorCode="DISK_FULL", error="Not saved: the disk is full.")
            else:
                entry.update(status="failed", error=str(exc).splitlines()[0][:200])
            return
        if size > self.limit:
            _unlink(part)
            self._refuse(download, entry, f"it is {size} bytes, over --max-download-mb {self.limit // 1048576}",
                         size=size)
            return
        os.replace(part, path)
        entry.update(status="saved", name=name, size=size, path=path)
        log.info("download saved", extra={"event": "download_saved", "session": self.session_id, "bytes": size})

    def _refuse(self, download: Any, entry: dict, reason: str, size: int | None = None) -> None:
        entry.update(status="refused", error=f"Refused: {reason}.", size=size)
        for step in (download.cancel, download.delete):
            try:
                step()
            except Exception:
                pass  # it may have ended already
        log.warning("download refused", extra={"event": "download_refused", "session": self.session_id,
                                               "reason": reason})


def partial(path: str) -> str:
    """Where a file is written before it is whole: beside it, named with the writing process's id, so
    that a later server removes what a killed one left (core/file_keeper.py) and nothing a live one writes."""
    return f"{path}.{os.getpid()}.part"


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
