"""Read-only facts about our process tree from Linux's /proc: who descends from whom, how much memory and CPU.

Threads: any. Nothing here signals or changes a process; every function tolerates processes that vanish
while it reads. Off Linux (no /proc) the functions find nothing, so the memory guard never trips there."""

import os


def _stat_fields(pid):
    """Fields after the command name in /proc/PID/stat (state is [0], parent pid [1]); None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _children_map():
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for entry in entries:
        if entry.isdigit():
            fields = _stat_fields(entry)
            if fields is not None and fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def descendants(pid, children=None):
    """Pids of every live (non-zombie) process below `pid`; children: a _children_map() to reuse."""
    children = _children_map() if children is None else children
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pid):
    """True when the process exists and is not a zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def cmdline(pid):
    """The command line as one string ("" for a process that is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def child_pids(marker, parent=None):
    """Direct children of `parent` (default: this process) whose command line contains `marker`."""
    parent = os.getpid() if parent is None else parent
    return [pid for pid in _children_map().get(parent, []) if marker in cmdline(pid)]


def pss_kb(pid):
    """Proportional set size of one process: shared pages split among their users."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return 0


def cpu_s(pid):
    """CPU seconds (user and system) a process used, with those of its children it reaped; 0 if gone."""
    fields = _stat_fields(pid)
    if fields is None:
        return 0.0
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime, stime, cutime, cstime


def tree_pss_kb(pid):
    """PSS of a process and all its descendants: what the tree really costs the machine."""
    return sum(pss_kb(p) for p in [pid, *descendants(pid)])


def browser_pss_kb(server_pid):
    """PSS of what an mcpbrowser process runs for its browser: the launcher's tree and every
    session's relay or driver. Not the process itself: an embedding service's own memory (and
    its other children) is not the browser's."""
    children = _children_map()  # one scan of /proc for the whole walk
    ours = [pid for pid in children.get(server_pid, [])
            if any(marker in cmdline(pid) for marker in ("launch_server.js", "run-driver"))]
    return sum(pss_kb(p) for pid in ours for p in (pid, *descendants(pid, children)))


def browser_main_pid(server_pid):
    """The shared browser's main process under an mcpbrowser server: the launcher's child that is
    not a helper (helpers carry --type=). None when there is none (remote browser, or down)."""
    for launcher in descendants(server_pid):
        if "launch_server.js" in cmdline(launcher):
            for pid in child_pids("", parent=launcher):
                if "--type=" not in cmdline(pid):
                    return pid
    return None
