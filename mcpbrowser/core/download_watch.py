"""Wakes the sessions when the browser starts writing a download, so that its size limit holds as it streams.

DOWNLOAD WATCH THREAD: lists the browser server's artifacts folders every WATCH_S. It never
touches Playwright: `wake()` queues a command on each open session, whose thread then
dispatches the browser's events (session/downloads.py polices the download from there on).
"""

import glob
import os
import threading
from collections.abc import Callable

from mcpbrowser.session.downloads import WATCH_S


class DownloadWatch:
    """Calls wake() when a download file appears under roots() (Playwright's artifacts folders)."""

    def __init__(self, roots: Callable[[], list[str]], wake: Callable[[], None], stop: threading.Event) -> None:
        self._roots, self._wake, self._stop = roots, wake, stop
        self._thread = threading.Thread(target=self._watch, name="download-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    # DOWNLOAD WATCH THREAD
    def _watch(self) -> None:
        # Why a thread looks at the disk: an idle session's thread reads nothing from the browser,
        # so it hears of a download that a page's timer starts only at its next call, after the
        # browser fetched the whole file (or forever, for an endless stream).
        seen: set[str] = set()
        while not self._stop.wait(WATCH_S):
            now = {path for root in self._roots()
                   for path in glob.glob(os.path.join(glob.escape(root), "playwright-artifacts-*", "*.crdownload"))}
            if now - seen:
                self._wake()
            seen = now
