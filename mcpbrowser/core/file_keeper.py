"""The files the server writes under its files folder: retention by age and a size quota, and leftovers.

Runs on the core pool: `sweep_soon` (any thread) queues one sweep after a call whose answer named a file,
and at start-up; it removes what is past --retention-days, then the oldest past --files-max-mb, and marks
their history rows. A file an open session's latest answer named is never removed (`remember`, any thread).
At start-up it also removes the `.part` files of a killed writer, and warns of files not the server's."""

import os
import re
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Executor
from typing import Any

from mcpbrowser.config import Config
from mcpbrowser.core.history import History, files_named
from mcpbrowser.logs import log
from mcpbrowser.process_tree import alive

# Tools whose answer lists every file of the session: no sign of which the agent will read, so they protect none.
LISTINGS = frozenset({"downloads"})
# A file being written (capture.write_file, downloads.partial), renamed when whole: a name the server chose
# (stamp, session, counter), then the writer's pid. A `.part` of any other name is not the server's.
LEFTOVER = re.compile(r"\d{8}-\d{6}-[0-9a-f]{8}-\d+[.-][A-Za-z0-9._-]+\.(\d+)\.part")


class FileKeeper:
    """Keeps the files folder within its age and size limits, oldest first."""

    def __init__(self, config: Config, history: History, executor: Executor,
                 open_sessions: Callable[[], Iterable[str]]) -> None:
        self.folder = config.files_dir()
        self.max_bytes = config.files_max_mb * 1_048_576
        self.max_age_s = config.retention_days * 86_400
        self._history, self._executor = history, executor
        self._open_sessions = open_sessions  # ids of this server's open sessions
        self._lock = threading.Lock()
        self._latest: dict[str, list[str]] = {}  # session id -> files its latest answer naming files named
        self._queued = False

    @property
    def limited(self) -> bool:
        return bool(self.max_bytes or self.max_age_s)

    # -- ANY THREAD ---------------------------------------------------------------------

    def remember(self, session_id: str | None, tool: str, answer: Any) -> None:
        """A call's answer went out: when it names files, they are its session's latest; sweep soon."""
        paths = files_named(answer) if isinstance(answer, dict) and tool not in LISTINGS else []
        if not paths:
            return
        with self._lock:
            if session_id is not None:
                self._latest[session_id] = paths
        self.sweep_soon()

    def sweep_soon(self) -> None:
        """Queue a sweep on the core pool, unless one is queued already."""
        if not self.limited:
            return
        with self._lock:
            if self._queued:
                return
            self._queued = True
        try:
            self._executor.submit(self.sweep)
        except RuntimeError:  # the pool closed: the server is stopping
            with self._lock:
                self._queued = False

    # -- CORE POOL THREAD ---------------------------------------------------------------

    def sweep(self, now: float | None = None) -> list[str]:
        """Remove files past the age limit, then the oldest past the size quota; the paths removed."""
        with self._lock:
            self._queued = False
            open_ids = set(self._open_sessions())
            self._latest = {sid: paths for sid, paths in self._latest.items() if sid in open_ids}
            kept = {path for paths in self._latest.values() for path in paths}
        now = time.time() if now is None else now
        # The server's own files are those the history's rows say its answers named: a user's file is never
        # counted or removed, nor one whose row was not written (better over the quota than a wrong delete).
        own = self._history.saved_files(self.folder)
        files = sorted((f for f in self._files() if f[0] in own), key=lambda f: f[1])  # (path, mtime, size), oldest
        old = [path for path, mtime, _ in files if self.max_age_s and now - mtime > self.max_age_s and path not in kept]
        quota = []
        total = sum(size for path, _mtime, size in files if path not in old)
        if self.max_bytes:
            for path, _mtime, size in files:
                if total <= self.max_bytes:
                    break
                if path in old or path in kept:
                    continue
                quota.append(path)
                total -= size
        removed = self._remove(old, "retention_days") + self._remove(quota, "files_max_mb")
        if removed:
            log.info("files removed", extra={"event": "files_removed", "count": len(removed),
                                             "aged": len(old), "overQuota": len(quota), "folder": self.folder})
        return removed

    def remove_leftovers(self) -> list[str]:
        """Start-up: the server's `.part` files whose writer is gone (a server killed mid-write)."""
        gone = [path for path, _mtime, _size in self._files() if _leftover(path)]
        for path in gone:
            _unlink(path)
        if gone:
            log.info("partial files removed", extra={"event": "partial_files_removed", "count": len(gone)})
        return gone

    def warn_foreign(self) -> int:
        """Start-up: say when the folder holds files the server did not save (it leaves them be); how many."""
        own = self._history.saved_files(self.folder)
        foreign = [path for path, _mtime, _size in self._files() if path not in own and not LEFTOVER.fullmatch(
            os.path.basename(path))]
        if foreign and self.limited:
            log.warning("files folder holds files the server did not save", extra={
                "event": "foreign_files", "count": len(foreign), "folder": self.folder,
                "note": "they are never removed, and do not count against --files-max-mb"})
        return len(foreign)

    def _files(self) -> list[tuple[str, float, int]]:
        try:
            entries = list(os.scandir(self.folder))
        except OSError:  # no folder yet: nothing saved
            return []
        out = []
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    out.append((entry.path, st.st_mtime, st.st_size))
            except OSError:  # removed meanwhile
                continue
        return out

    def _remove(self, paths: list[str], reason: str) -> list[str]:
        removed = [path for path in paths if _unlink(path)]
        self._history.files_removed(removed, reason)
        return removed


def _leftover(path: str) -> bool:
    """Whether a file is a `.part` the server named (LEFTOVER) whose writing process is gone."""
    match = LEFTOVER.fullmatch(os.path.basename(path))
    return match is not None and not alive(int(match.group(1)))


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return True
    except OSError as exc:
        log.warning("file not removed", extra={"event": "file_not_removed", "error": str(exc)})
        return False
