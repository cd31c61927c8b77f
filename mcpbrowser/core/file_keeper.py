"""The files the server writes under its files folder: retention by age and a size quota, and leftovers.

Runs on the core pool: `sweep_soon` (any thread) queues one sweep there after a call whose answer
named a file, and at start-up; the sweep lists the folder, removes what is too old
(--retention-days) and then the oldest files until the folder is within --files-max-mb,
and marks their history rows (History.files_removed). A file that an open session's latest
answer named is never removed (`remember`, any thread): the agent may be about to read it.
At start-up it also removes the `.part` files that a server killed while writing left behind
(their names carry the writer's pid).
"""

import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Executor
from typing import Any

from mcpbrowser.config import Config
from mcpbrowser.core.history import History, files_named
from mcpbrowser.logs import log
from mcpbrowser.process_tree import alive

# Tools whose answer lists every file of the session (the downloads tool): no sign of which the
# agent is about to read, so they protect none.
LISTINGS = frozenset({"downloads"})
PART = ".part"  # a file being written (capture.write_file, downloads.partial): renamed when whole


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
        files = sorted(self._files(), key=lambda f: f[1])  # (path, mtime, size), oldest first
        old, quota = [], []
        for path, mtime, _size in files:
            if self.max_age_s and now - mtime > self.max_age_s and path not in kept:
                old.append(path)
        total = sum(size for path, _mtime, size in files if path not in old)
        if self.max_bytes:
            for path, _mtime, size in files:
                if total <= self.max_bytes:
                    break
                if path in old or path in kept or path.endswith(PART):  # a .part is being written
                    continue
                quota.append(path)
                total -= size
        removed = self._remove(old, "retention_days") + self._remove(quota, "files_max_mb")
        if removed:
            log.info("files removed", extra={"event": "files_removed", "count": len(removed),
                                             "aged": len(old), "overQuota": len(quota), "folder": self.folder})
        return removed

    def remove_leftovers(self) -> list[str]:
        """Start-up: the `.part` files whose writer is gone (a server killed mid-write; downloads.partial)."""
        gone = [path for path, _mtime, _size in self._files() if path.endswith(PART) and not _writer_alive(path)]
        for path in gone:
            _unlink(path)
        if gone:
            log.info("partial files removed", extra={"event": "partial_files_removed", "count": len(gone)})
        return gone

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


def _writer_alive(path: str) -> bool:
    """Whether the process named in a `.part` file's name (`<file>.<pid>.part`) still runs."""
    pid = path[:-len(PART)].rsplit(".", 1)[-1]
    return pid.isdigit() and alive(int(pid))


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return True
    except OSError as exc:
        log.warning("file not removed", extra={"event": "file_not_removed", "error": str(exc)})
        return False
