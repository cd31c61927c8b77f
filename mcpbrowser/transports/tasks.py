"""Tool calls a client asked to run as tasks (MCP 2025-11-25): their status, result and lifetime.

A task-augmented tools/call is answered at once with a task; the client polls tasks/get and fetches the
answer with tasks/result (which waits for it). Each McpConnection keeps its own table of its client's.

Threads: the transport's thread creates, reads and cancels; the thread that completes a call (a session
thread, a core pool thread) finishes its task and answers any tasks/result waiting for it."""

import threading
import time
import uuid
from datetime import datetime, timezone

from mcpbrowser.transports import protocol
from mcpbrowser.transports.protocol import ProtocolError

DEFAULT_TTL_MS = 600_000   # a finished task's answer is kept 10 minutes, unless the client asks less
MAX_TTL_MS = 3_600_000     # and never more than an hour
POLL_INTERVAL_MS = 500
MAX_TASKS = 100            # per client: the oldest finished ones go first
TERMINAL = ("completed", "failed", "cancelled")
RELATED_TASK_KEY = "io.modelcontextprotocol/related-task"


def _now_iso():
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Task:
    """One task: plain data, changed under its table's lock."""

    def __init__(self, ttl_ms, future):
        self.task_id = uuid.uuid4().hex
        self.created_at = self.updated_at = _now_iso()
        self.ttl_ms, self.future = ttl_ms, future
        self.status = "working"
        self.message = None
        self.result = None        # the CallToolResult, once finished
        self.finished_at: float | None = None  # monotonic
        self.waiters = []         # send(result) of tasks/result requests waiting for it

    def describe(self):
        out = {"taskId": self.task_id, "status": self.status, "createdAt": self.created_at,
               "lastUpdatedAt": self.updated_at, "ttl": self.ttl_ms, "pollInterval": POLL_INTERVAL_MS}
        if self.message:
            out["statusMessage"] = self.message
        return out


class TaskTable:
    def __init__(self):
        self._lock = threading.Lock()
        self._tasks: dict[str, Task] = {}

    # THE TRANSPORT'S THREAD
    def create(self, requested, future):
        ttl = requested.get("ttl") if isinstance(requested, dict) else None
        ttl = DEFAULT_TTL_MS if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0 else min(ttl, MAX_TTL_MS)
        task = Task(ttl, future)
        with self._lock:
            self._forget_expired()
            self._tasks[task.task_id] = task
        return task

    def get(self, params, request_id):
        task_id = params.get("taskId")
        with self._lock:
            self._forget_expired()
            task = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None:
            raise ProtocolError(protocol.INVALID_PARAMS, f"Invalid params: no task {task_id!r} (unknown, "
                                "or its answer expired)", request_id)
        return task

    def list(self):
        with self._lock:
            self._forget_expired()
            return [task.describe() for task in self._tasks.values()]

    def result_or_wait(self, task, send):
        """The finished task's result, or None after registering `send(result)` for when it finishes."""
        with self._lock:
            if task.result is None:
                task.waiters.append(send)
                return None
            return task.result

    def cancel(self, task, request_id):
        with self._lock:
            if task.status in TERMINAL:
                raise ProtocolError(protocol.INVALID_PARAMS, f"Invalid params: task {task.task_id} is "
                                    f"{task.status} already", request_id)
        task.future.cancel()  # a queued call is dropped; a running one finishes, unheard
        self.finish(task, None, cancelled=True)
        return task.describe()

    # THE THREAD THAT FINISHED THE CALL (or the transport's, on cancel)
    def finish(self, task, result, cancelled=False):
        with self._lock:
            if task.status in TERMINAL:
                return
            if cancelled:
                task.status, task.message = "cancelled", "Cancelled by the client"
                result = {"content": [{"type": "text", "text": "Cancelled by the client."}], "isError": True}
            else:
                task.status = "failed" if result.get("isError") else "completed"
            task.result = {**result, "_meta": {RELATED_TASK_KEY: {"taskId": task.task_id}}}
            task.updated_at, task.finished_at = _now_iso(), time.monotonic()
            waiters, task.waiters = task.waiters, []
        for send in waiters:
            send(task.result)

    def _forget_expired(self):
        """Drop finished tasks past their ttl, and the oldest finished ones past MAX_TASKS (lock held)."""
        now = time.monotonic()
        for task_id in [t.task_id for t in self._tasks.values()
                        if t.finished_at is not None and now - t.finished_at > t.ttl_ms / 1000]:
            del self._tasks[task_id]
        finished = sorted((t for t in self._tasks.values() if t.finished_at is not None),
                          key=lambda t: t.finished_at or 0.0)
        for task in finished[:max(0, len(self._tasks) - MAX_TASKS)]:
            del self._tasks[task.task_id]
