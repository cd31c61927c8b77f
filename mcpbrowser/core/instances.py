"""Which server processes share a history file: an OS file lock per process. Any thread.

Each server holds an exclusive `flock` on `<db>.instances/<instance>.lock` for its whole life; the kernel drops
it however the process ends, so a server that can take the lock knows its owner is gone (no heartbeat, no pid
reuse). Without `fcntl` (Windows) no lock is taken and every other server counts as gone."""

import contextlib
import os

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]


def _folder(db_path):
    return db_path + ".instances"


def claim(db_path, instance):
    """Take this process's lock: (fd, path) to keep, or None without fcntl."""
    if fcntl is None:
        return None
    folder = _folder(db_path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    path = os.path.join(folder, instance + ".lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with contextlib.suppress(OSError):  # a full disk: the lock holds without it
        os.write(fd, str(os.getpid()).encode())  # for a person looking; liveness is the lock alone
    return fd, path


def alive(db_path, instance):
    """Whether the process that claimed `instance` still runs; a gone one's lock file is removed."""
    if fcntl is None or not instance.isalnum():
        return False
    path = os.path.join(_folder(db_path), instance + ".lock")
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(path)
    return False


def sweep(db_path):
    """Remove the lock files of servers that are gone (a crash leaves its file behind)."""
    if fcntl is None:
        return
    try:
        names = os.listdir(_folder(db_path))
    except OSError:
        return
    for name in names:
        if name.endswith(".lock"):
            alive(db_path, name[:-5])


def release(held):
    """Give the lock up at a clean close (a crash gives it up too)."""
    if held is None:
        return
    fd, path = held
    with contextlib.suppress(OSError):
        os.unlink(path)
    os.close(fd)
