"""One session's downloads: saved under server-chosen names, within a size limit and the domain policy.

SESSION THREAD ONLY: Playwright dispatches `on_download` on the session's thread,
in a greenlet of its own, while a call is in progress; its `save_as` waits there
for the browser to finish while the session's calls go on. A download therefore
completes during some later Playwright call of the session (any call pumps the
events), and `wait_for(download=true)` is the way to wait for one.

The size limit holds twice: a download whose response announced a larger
Content-Length is cancelled as it starts (the server sees the connection
close); one that did not announce its size is checked when the browser has it,
and deleted when it is too big. So a page can make the browser fetch at most
one unannounced oversized file into Playwright's temporary folder, which goes
with the download.
"""

import mimetypes
import os
import re
import time
from collections import OrderedDict
from typing import Any

from mcpbrowser.logs import log
from mcpbrowser.timers import now_ms

ANNOUNCED = 32  # recent navigation responses whose size and type are remembered for their download


class Downloads:
    """The session's downloads as plain dicts, newest last, and which the agent has not heard of yet."""

    def __init__(self, session_id: str, directory: str, limit_mb: int, refused: Any) -> None:
        self.session_id, self.directory = session_id, directory
        self.limit = limit_mb * 1024 * 1024
        self._refused = refused       # refused(url) -> bool: the session's domain policy
        self.entries: list[dict] = []
        self._told: dict[int, str] = {}  # entry index -> status the agent last heard
        self._announced: OrderedDict[str, tuple] = OrderedDict()  # url -> (Content-Length or None, MIME type)
        self.waited = 0               # entries when wait_for(download) last returned

    def listen(self, context: Any) -> None:
        """Remember what navigation responses announce; each page's "download" event comes to on_download."""
        context.on("response", self._on_response)

    def in_progress(self) -> bool:
        return any(e["status"] == "downloading" for e in self.entries)

    def news(self) -> list[dict]:
        """Entries whose status changed since the last answer that told of them."""
        if not self.entries:
            return []
        fresh = [e for i, e in enumerate(self.entries) if self._told.get(i) != e["status"]]
        self._told = {i: e["status"] for i, e in enumerate(self.entries)}
        return fresh

    # -- event handlers ---------------------------------------------------------------

    def _on_response(self, response: Any) -> None:
        try:
            if not response.request.is_navigation_request():
                return
        except Exception:
            return
        headers = response.headers
        length = headers.get("content-length")
        self._announced[response.url] = (int(length) if length and length.isdigit() else None,
                                         headers.get("content-type", "").split(";")[0].strip() or None)
        while len(self._announced) > ANNOUNCED:
            self._announced.popitem(last=False)

    def on_download(self, download: Any) -> None:
        announced, mime = self._announced.get(download.url, (None, None))
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
        os.makedirs(self.directory, exist_ok=True)
        # The server names the file: the page's suggestion keeps only its safe characters, as a suffix.
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(download.suggested_filename)).lstrip(".")[-80:]
        name = f"{time.strftime('%Y%m%d-%H%M%S')}-{self.session_id[:8]}-{len(self.entries)}-{safe or 'download'}"
        path = os.path.join(self.directory, name)
        try:
            download.save_as(path + ".part")
            size = os.path.getsize(path + ".part")
        except Exception as exc:  # cancelled, failed in the browser, or the session closed
            entry.update(status="failed", error=str(exc).splitlines()[0][:200])
            _unlink(path + ".part")
            return
        if size > self.limit:
            _unlink(path + ".part")
            self._refuse(download, entry, f"it is {size} bytes, over --max-download-mb {self.limit // 1048576}",
                         size=size)
            return
        os.replace(path + ".part", path)
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


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
