"""The open sessions: their ids, expiry, and what a closed id answers.

Any thread looks sessions up and closes them, under this registry's lock; expiry runs on timer threads and
`session_lost` on a session thread. None of it touches Playwright: a close is a stop queued for its thread."""

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from mcpbrowser import errors
from mcpbrowser.config import Config
from mcpbrowser.core.history import History
from mcpbrowser.logs import log
from mcpbrowser.redaction import SecretBook
from mcpbrowser.session.state import SessionState
from mcpbrowser.session.worker import SessionWorker
from mcpbrowser.timers import KeyedTimers, now_ms

CLOSE_JOIN_S = 5.0       # close_session waits this long for the page and context to close
DESCRIBE_WAIT_S = 0.5    # list_sessions falls back to cached url/title for busy sessions
ENDED_MEMORY = 10_000    # ended ids remembered so late calls get SESSION_EXPIRED, bounded


class SessionRecord:
    """Plain data about one open session, owned by the registry under its lock."""

    __slots__ = ("session_id", "worker", "created_at", "deadline", "last_deadline", "clock", "_opened", "owner")

    def __init__(self, session_id: str, worker: SessionWorker, created_at: int, timeout_ms: int,
                 max_age_ms: int, clock: Callable[[], float], owner: str | None = None) -> None:
        self.session_id = session_id
        self.owner = owner  # the client that created it (HTTP); None: whoever holds the server (stdio, library)
        self.worker, self.created_at, self.clock = worker, created_at, clock
        self._opened = clock()  # the monotonic instant of created_at
        self.last_deadline = self._opened + max_age_ms / 1000 if max_age_ms else None
        self.renew(timeout_ms)

    @property
    def expires_at(self) -> int:
        """The deadline in epoch ms, as clients see it."""
        return self.created_at + round((self.deadline - self._opened) * 1000)

    def renew(self, timeout_ms: int) -> None:
        """A call came in (caller holds the registry's lock): the session lives timeout_ms from now, within its cap."""
        deadline = self.clock() + timeout_ms / 1000
        self.deadline = deadline if self.last_deadline is None else min(deadline, self.last_deadline)


class SessionRegistry:
    """Open sessions by id, sessions still opening, and how ended ids ended.

    final_save(state) runs on a session's thread just before it closes by close_session or expiry;
    on_change() runs after a session opened or closed (the warm pool refills)."""

    def __init__(self, config: Config, history: History, *, clock: Callable[[], float],
                 timer_factory: Callable[..., Any], final_save: Callable[[Any], None],
                 on_change: Callable[[], None], secrets: SecretBook) -> None:
        self.config = config
        self.secrets = secrets  # the core's one secret book: known secret values by client (owner)
        self.history = history
        self.timers = KeyedTimers(timer_factory, "expire")
        self._clock = clock  # session deadlines (injectable, like the timers, for tests)
        self._final_save, self._on_change = final_save, on_change
        self._lock = threading.Lock()
        self._sessions: dict[str, SessionRecord] = {}
        self._ended: OrderedDict[str, str] = OrderedDict()  # id -> "closed" | "expired" | "lost" | "memory"
        self._starting = 0
        self.closed = False
        # on_ended(session_id), ANY THREAD, after a session left the registry however it ended (the resource hub's).
        self.on_ended: Callable[[str], None] = lambda session_id: None

    # -- ANY THREAD: opening -----------------------------------------------------------

    def reserve(self, resume_id: str | None = None) -> None:
        """Count a session as opening, or refuse: shutting down, --max-sessions reached, or resuming an open id."""
        with self._lock:
            if self.closed:
                raise errors.stopped_error()
            if len(self._sessions) + self._starting >= self.config.max_sessions:
                raise errors.MaxSessionsReached(
                    f"{self.config.max_sessions} sessions are open, the most allowed. "
                    "Close one with close_session first.",
                    details={"maxSessions": self.config.max_sessions})
            if resume_id is not None and resume_id in self._sessions:
                raise errors.InvalidParameters("That session is open; there is nothing to resume.",
                                               session_id=resume_id)
            self._starting += 1

    def release(self) -> None:
        """An opening that reserve() counted failed."""
        with self._lock:
            self._starting -= 1

    def register(self, worker: SessionWorker, current: Callable[[SessionWorker], bool],
                 source: str, owner: str | None = None) -> SessionRecord | None:
        """Make a reserved, opened worker a session; None (the worker stopped) when current(worker) says its browser
        died meanwhile. Raises when the server closed meanwhile."""
        created = now_ms()
        worker.handed_out(self.secrets.of(owner))
        record = SessionRecord(worker.session_id, worker, created, self.config.session_timeout,
                               self.config.session_max_age, self._clock, owner)
        with self._lock:
            self._starting -= 1
            closed = self.closed
            stale = not current(worker)
            if not closed and not stale:
                self._sessions[worker.session_id] = record
                self._ended.pop(worker.session_id, None)
        if closed or stale:
            worker.stop()
        if closed:
            raise errors.stopped_error()
        if stale:
            return None
        self.timers.schedule(worker.session_id, record.deadline - self._clock(), self._expire)
        metadata = {"browser": self.config.browser, "source": source}
        if owner is not None:
            metadata["owner"] = owner
        # emulation and throttle: for resume_session; login: the saved login's name (export_script).
        metadata.update({option: worker.options[option] for option in ("emulation", "login", "throttle")
                         if worker.options.get(option)})
        self.history.session_opened(worker.session_id, created, metadata)
        log.info("session created", extra={"event": "session_created", "session": worker.session_id, "source": source})
        return record

    def occupied(self) -> int:
        """Sessions open or opening: what --max-sessions counts."""
        with self._lock:
            return len(self._sessions) + self._starting

    # -- ANY THREAD: using ---------------------------------------------------------------

    def renewed(self, session_id: str, renew: bool = True) -> tuple[SessionWorker, int]:
        """(worker, expiresAt) of an open session, its expiry renewed by this call; raises if not open."""
        with self._lock:
            record = self._sessions.get(session_id)
            how = self._ended.get(session_id) if record is None else None
            if renew and record is not None:
                record.renew(self.config.session_timeout)
            closed = self.closed
        if closed:  # every session ended with the server: not "call create_session", which fails too
            raise errors.stopped_error(session_id)
        if record is None:
            if how is None:  # never open here (a session this server closed may not be written closed yet)
                raise self.elsewhere_error(session_id)
            raise self.ended_error(session_id, how)
        return record.worker, record.expires_at

    def elsewhere_error(self, session_id: str) -> errors.SessionError:
        """The error for a session not open here (after a failover, or a restart of this server), read from the
        history: SESSION_IN_USE (another live server holds it, named), SESSION_LOST (its server gone), or how it
        ended; each that can be resumed says so."""
        holder = self.history.session_holder(session_id)  # HISTORY_UNAVAILABLE (retryable) while it cannot be read
        if holder is None:
            return errors.SessionNotFound(session_id=session_id)
        if holder["state"] == "active" and holder["alive"]:
            return self.in_use_error(session_id, holder)
        return self.ended_error(session_id, holder["closeReason"] if holder["state"] != "active" else "server_gone")

    def ended_error(self, session_id: str, how: str | None) -> errors.SessionError:
        """The error for a session that ended `how` (this registry's word, or the history's closeReason)."""
        if how in ("lost", "browser_crash"):
            return self.lost_error(session_id)
        if how in ("memory", "memory_limit"):
            return self.memory_error(session_id)
        hint, resumable = self._resume_hint(session_id)
        if how == "expired":
            max_age = self.config.session_max_age
            return errors.SessionExpired(f"This session expired (no call for {self.config.session_timeout // 1000} s"
                                         + (f", or older than {max_age // 1000} s" if max_age else "")
                                         + f") and was closed. {hint}", session_id=session_id,
                                         details={"resumable": resumable})
        if how in ("server_gone", "server_restart", "shutdown"):
            return errors.SessionLost(f"The server that held this session stopped or died, so the session ended. "
                                      f"{hint}", session_id=session_id,
                                      details={"reason": "server_gone", "resumable": resumable})
        return errors.SessionNotFound(f"This session was closed. {hint}", session_id=session_id,
                                      details={"resumable": resumable})

    def in_use_error(self, session_id: str, holder: dict[str, Any]) -> errors.SessionInUse:
        """SESSION_IN_USE naming the server that holds the session (this one, when another call is opening it)."""
        if holder["instance"] == self.history.store.instance:
            return errors.SessionInUse("Another call on this server is resuming this session now; use it once that "
                                       "call answers.", session_id=session_id, details={"server": holder["server"]})
        return errors.SessionInUse(f"This session is open on {holder['server']}, another mcpbrowser server that "
                                   "shares this history; call it through that server, or close it there before "
                                   "resuming it here.", session_id=session_id, details={"server": holder["server"]})

    def open_record(self, session_id: str) -> SessionRecord | None:
        """The record of an open session, or None; renews nothing."""
        with self._lock:
            return self._sessions.get(session_id)

    def worker(self, session_id: str) -> SessionWorker:
        return self.renewed(session_id, renew=False)[0]

    def owner_of(self, session_id: str) -> str | None:
        """The client a session belongs to, open or ended (from the history); None for the server's own."""
        with self._lock:
            record, closed = self._sessions.get(session_id), self.closed
        if record is not None:
            return record.owner
        # Once the core closed, its history is closed too (an in-memory one gone with its last connection): the
        # call is refused as SERVER_STOPPING (renewed), not failed by a read of it.
        return None if closed else self.history.session_metadata(session_id).get("owner")

    def book(self, owner: str | None, session_id: str | None) -> Any:
        """The one secret book of a call (`Call.secrets`): its client's, else (the library, stdio) its session's
        owner's. A value its client met once stays secret in every later answer and row."""
        if owner is None and session_id is not None:
            owner = self.owner_of(session_id)
        return self.secrets.of(owner)

    def open_ids(self, owner: str | None) -> list[str]:
        """The sessions open here that `owner` may touch (None: every one), oldest first."""
        return [r.session_id for r in self.records() if owner is None or r.owner == owner]

    def ids(self) -> set[str]:
        with self._lock:
            return set(self._sessions)

    def records(self) -> list[SessionRecord]:
        with self._lock:
            return list(self._sessions.values())

    def list_sessions(self, owner: str | None,
                      probe: Callable[[SessionState], dict[str, Any]]) -> list[dict[str, Any]]:
        """Id, times, url and title of each session (of `owner`'s, when given); a busy one shows its last known page.
        probe(state), run on each session's thread, adds fields of its own (its memory)."""
        records = [r for r in self.records() if owner is None or r.owner == owner]
        asked = [(record, record.worker.submit(_described, probe)) for record in records]
        deadline = time.monotonic() + DESCRIBE_WAIT_S
        out = []
        for record, fut in asked:
            try:
                info, busy = fut.result(max(0.0, deadline - time.monotonic())), False
            except Exception:
                fut.cancel()
                worker = record.worker
                info, busy = {**worker.info, **({"memoryMb": worker.memory_mb} if worker.memory_mb else {})}, True
            out.append({"sessionId": record.session_id, "createdAt": record.created_at,
                        "expiresAt": record.expires_at, **info,
                        "busy": busy, **({"endpoint": record.worker.endpoint} if record.worker.endpoint else {}),
                        **({"heldByPerson": True} if record.worker.held_by else {}),
                        **({"throttle": record.worker.options["throttle"]} if record.worker.options.get("throttle")
                           else {})})
        return out

    def replace_worker(self, record: SessionRecord, old: SessionWorker, new: SessionWorker) -> bool:
        """Give a session a fresh thread (the watchdog's); False when it closed or moved meanwhile."""
        with self._lock:
            if self._sessions.get(record.session_id) is not record or record.worker is not old:
                return False
            new.succeed(old)
            record.worker = new
            return True

    # -- ANY THREAD: closing ---------------------------------------------------------------

    def close_session(self, session_id: str) -> dict:
        """Close a session now: cancel its timer, close its page and context, forget its id. Returns what went
        with the page: {"dialog": the dialog open at the close, or None; "dismissed": dialogs dismissed since}."""
        with self._lock:
            record = self._sessions.pop(session_id, None)
            if record is not None:
                self._remember_ended(session_id, "closed")
        if record is None:
            self.worker(session_id)  # raises the error its id deserves
            return {}
        self.timers.cancel(session_id)
        self.on_ended(session_id)
        self.history.session_closed(session_id, "closed", record.worker.options.get("throttle"))
        left: dict = {}

        def last(state):  # on the session thread, just before its page and context close
            if state.holder() is None:
                state.catch_up()  # a dialog that opened while the agent thought is not dispatched yet
            holder = state.holder()
            dialog = state.blocker or (holder.dialog if holder else None)  # the current tab's first, else any tab's
            left.update(dialog=state.dialog_info(dialog) if dialog is not None else None,
                        dismissed=state.dialogs_dismissed)
            self._final_save(state)

        record.worker.stop(last=last)
        record.worker.join(CLOSE_JOIN_S)
        log.info("session closed", extra={"event": "session_closed", "session": session_id})
        self._on_change()
        return left

    def close_all(self) -> list[SessionWorker] | None:
        """Shutdown: forget every session; their workers, for the caller to stop (None: closed already)."""
        with self._lock:
            if self.closed:
                return None
            self.closed = True
            records, self._sessions = list(self._sessions.values()), {}
        self.timers.cancel_all()
        for record in records:
            self.on_ended(record.session_id)
            self.history.session_closed(record.session_id, "shutdown", record.worker.options.get("throttle"))
        return [record.worker for record in records]

    # SESSION THREAD (session_memory.py): its pages use more than --session-memory-mb. Only its
    # stop is queued: the thread closes the session after the running work, saving it first.
    def end_over_memory(self, session_id: str, worker: SessionWorker, used_mb: float) -> None:
        with self._lock:
            record = self._sessions.get(session_id)
            if record is None or record.worker is not worker:
                return
            del self._sessions[session_id]
            self._remember_ended(session_id, "memory")
        self.timers.cancel(session_id)
        self.on_ended(session_id)
        self.history.session_closed(session_id, "memory_limit", worker.options.get("throttle"))
        worker.stop(self.memory_error(session_id, used_mb), last=self._final_save)
        self._on_change()

    def take_generation(self, generation: int) -> list[SessionRecord]:
        """Remove the sessions on browser life `generation`, which just ended; drop_lost() them next."""
        with self._lock:
            lost = [r for r in self._sessions.values() if r.worker.generation == generation]
            for record in lost:
                del self._sessions[record.session_id]
                self._remember_ended(record.session_id, "lost")
        return lost

    def drop_lost(self, records: list[SessionRecord]) -> None:
        """Close sessions whose browser died: the history says why, their threads wind down."""
        for record in records:
            self.timers.cancel(record.session_id)
            self.on_ended(record.session_id)
            self.history.session_closed(record.session_id, "browser_crash", record.worker.options.get("throttle"))
            record.worker.stop(self.lost_error(record.session_id))
            log.warning("session lost", extra={"event": "session_lost", "session": record.session_id})

    # SESSION THREAD: a call found its browser disconnected (a remote one, or ours before
    # the supervisor noticed). Returns the error that call answers.
    def session_lost(self, state: SessionState) -> errors.SessionLost:
        with self._lock:
            record = self._sessions.get(state.session_id)
            if record is None or record.worker is not state.worker:
                record = None
            else:
                del self._sessions[state.session_id]
                self._remember_ended(state.session_id, "lost")
        if record is not None:
            self.drop_lost([record])
        return self.lost_error(state.session_id)

    # TIMER THREAD. Calls only move the record's deadline: the timer, when it fires, sleeps again for what is
    # left, rather than each call replacing a Timer thread.
    def _expire(self, session_id: str) -> None:
        with self._lock:
            record = self._sessions.get(session_id)
            if record is None:
                return
            left = record.deadline - self._clock()
            if left > 0.001:
                self.timers.schedule(session_id, left, self._expire)
                return
            del self._sessions[session_id]
            self._remember_ended(session_id, "expired")
        self.timers.forget(session_id)
        self.on_ended(session_id)
        self.history.session_closed(session_id, "expired", record.worker.options.get("throttle"))
        record.worker.stop(errors.SessionExpired(session_id=session_id), last=self._final_save)
        log.info("session expired", extra={"event": "session_expired", "session": session_id})
        self._on_change()

    # -- the errors a closed id answers ------------------------------------------------------

    def _remember_ended(self, session_id: str, how: str) -> None:
        """Caller holds the lock."""
        self._ended[session_id] = how
        while len(self._ended) > ENDED_MEMORY:
            self._ended.popitem(last=False)

    def _resume_hint(self, session_id: str) -> tuple[str, bool]:
        """(hint, resumable): whether resume_session can bring a closed session back."""
        if self.history.has_saved_state(session_id):
            # Both ways on: an agent that closed the session on purpose wants a new one, not this one back.
            return ("Call create_session for a new session, or resume_session with this sessionId to reopen "
                    "this one in a fresh context with its cookies, local storage and last URL.", True)
        return "Nothing was saved for it, so it cannot be resumed: call create_session.", False

    def stopping_error(self, session_id: str) -> errors.ServerStopping:
        """SERVER_STOPPING: a call cut short by the server's own shutdown (SIGTERM, stdin closed)."""
        resumable = self.history.has_saved_state(session_id)
        message = None if resumable else ("The server is stopping (it was told to), so this call was cut short "
                                          "and the session closed; nothing was saved for it, so it cannot be "
                                          "resumed: call create_session on the next server.")
        return errors.ServerStopping(message, session_id=session_id, details={"resumable": resumable})

    def memory_error(self, session_id: str, used_mb: float | None = None) -> errors.SessionMemoryExceeded:
        """SESSION_MEMORY_EXCEEDED: the session was closed for its pages' memory; whether it can be resumed."""
        hint, resumable = self._resume_hint(session_id)
        limit = self.config.session_memory_mb
        used = f" ({used_mb:.0f} MB)" if used_mb is not None else ""
        return errors.SessionMemoryExceeded(
            f"This session's pages used more memory{used} than the {limit} MB a session may use "
            f"(--session-memory-mb), so it was closed; the browser and other sessions go on. {hint} "
            "Its page will load again: avoid what made it grow.", session_id=session_id,
            details={"resumable": resumable, "limitMb": limit, **({"usedMb": used_mb} if used_mb is not None else {})})

    def lost_error(self, session_id: str) -> errors.SessionLost:
        """SESSION_LOST, telling whether resume_session can bring the session back."""
        hint, resumable = self._resume_hint(session_id)
        return errors.SessionLost(f"The browser under this session crashed, so the session was closed. {hint}",
                                  session_id=session_id, details={"reason": "browser_crash", "resumable": resumable})


def _described(state: SessionState, probe: Callable[[SessionState], dict[str, Any]]) -> dict[str, Any]:
    """SESSION THREAD: its url and title, and what probe adds."""
    return {**state.describe(), **probe(state)}
