"""Wakes the sessions when the browser starts writing a download, so that its size limit holds as it streams.

DOWNLOAD WATCH THREAD: lists the browser server's artifacts folders every LOOK_S. It never
touches Playwright: `wake()` queues a command on each open session, whose thread then
dispatches the browser's events (session/downloads.py polices the download from there on)."""

import glob
import os
import threading
import time
from collections.abc import Callable

# The folders are globbed once a second (a browser makes its folder as it starts, long before a download);
# listing the ones found is cheap enough to do every LOOK_S on an idle server. Once a session hears of its
# download, it looks itself (session/downloads.py WATCH_S).
FOLDERS_EVERY_S = 1.0
LOOK_S = 0.05


class DownloadWatch:
    """Calls wake() when a download file appears in Playwright's artifacts folders under roots()."""

    def __init__(self, roots: Callable[[], list[str]], wake: Callable[[], None], stop: threading.Event) -> None:
        self._roots, self._wake, self._stop = roots, wake, stop
        self._thread = threading.Thread(target=self._watch, name="download-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    # DOWNLOAD WATCH THREAD
    def _watch(self) -> None:
        # An idle session's thread reads nothing from the browser: it would hear of a download only at its next
        # call, after the whole file (or never, for an endless stream).
        seen: set[str] = set()
        folders: list[str] = []
        looked = float("-inf")
        while not self._stop.wait(LOOK_S):
            if time.monotonic() - looked >= FOLDERS_EVERY_S:
                looked = time.monotonic()
                folders = [folder for root in self._roots()
                           for folder in glob.glob(os.path.join(glob.escape(root), "playwright-artifacts-*"))]
            now = {os.path.join(folder, name) for folder in folders for name in _names(folder)
                   if name.endswith(".crdownload")}
            if now - seen:
                self._wake()
            seen = now


def _names(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []  # removed with its browser
