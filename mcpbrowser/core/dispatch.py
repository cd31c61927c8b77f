"""One tool call from request to answer: validate, check the guards, route, record.

`Dispatcher.dispatch` runs on the caller's thread (any thread). A session tool then runs on its session's
thread (core/on_session.py), a core tool on the core pool; outcomes are counted and logged by Future callbacks
on whichever thread finishes the call."""

import difflib
import time
from concurrent.futures import Executor, Future
from typing import Any

from mcpbrowser import errors
from mcpbrowser.config import Config
from mcpbrowser.core import answer
from mcpbrowser.core.call import Call, Caller
from mcpbrowser.core.on_session import OnSession
from mcpbrowser.core.recorder import Recorder
from mcpbrowser.core.sessions import SessionRegistry
from mcpbrowser.core.user_channel import USER_ANSWER_S, UserChannel
from mcpbrowser.guards import CircuitBreaker, RateLimiter
from mcpbrowser.logs import log
from mcpbrowser.schema import validate


def _ended(outcome: answer.Outcome) -> Future:
    fut: Future[Any] = Future()
    fut.set_result(outcome)
    return fut


class Dispatcher:
    """Routes each call and feeds the guards: cooldown, circuit breaker, rate limit, watchdog budget."""

    def __init__(self, config: Config, tools: dict[str, Any], registry: SessionRegistry, recorder: Recorder,
                 user: UserChannel, pool: Executor, core: Any, files: Any) -> None:
        self.config, self.tools = config, tools
        self._registry, self._recorder, self._user, self._pool = registry, recorder, user, pool
        self._core = core  # what a core tool's handler gets: handler(core, args, call), browser.ToolContext
        self._groups = core.groups  # which tools each client enabled (tools/list, a refusal's note)
        self.on_session = OnSession(registry, recorder, user, groups=core.groups, supervisor=core.supervisor,
                                    files=files, session_memory=core.session_memory,
                                    response_mode=config.response_mode)
        self.rate = RateLimiter(config.rate_limit)
        self.breaker = CircuitBreaker(config.breaker_threshold, config.breaker_reset)

    def dispatch(self, name: str, args: Any, caller: Caller) -> Future:
        """Validate, record and dispatch one tool call; returns a Future of its Outcome (core/answer.py).

        Every failure of a call, validation included, is its Outcome's error; a name that is no tool's (a
        person's own, to anyone else) is no call and raises UnknownTool, recorded nowhere (over MCP: -32602)."""
        started = time.monotonic()
        args = {} if args is None else args
        tool = self.tools.get(name)
        if tool is None or (tool.person_only and not caller.person):  # no call at all: nothing recorded or counted
            known = [known for known, declared in self.tools.items() if not declared.person_only]
            # Typos only (clik): at 0.8 names of another meaning come close (new_session: close_session).
            meant = difflib.get_close_matches(str(name), known, n=1, cutoff=0.85)
            raise errors.UnknownTool(f"Unknown tool: {name}" + (f"; did you mean {meant[0]}?" if meant else ""),
                                     details={"known": known})
        if tool.needs_session and isinstance(args, dict) and "sessionId" not in args:
            # It acts on its client's one open session; with none or several open, it is refused (_no_session).
            open_ids = self._registry.open_ids(caller.owner)
            args = {**args, "sessionId": open_ids[0]} if len(open_ids) == 1 else args
        session_id = args.get("sessionId") if isinstance(args, dict) else None
        # Whether its text is a secret is known only once the session thread looked at the target field: its
        # request row is written then, so a password typed without `secret` never reaches the database in
        # clear. A call that fails before is stored with its text withheld.
        call = Call(name, session_id, caller, secret=tool.may_carry_secret)
        call.claim = self._recorder.claim
        call.secrets = self._registry.book(caller.owner, session_id)
        if tool.may_carry_secret:
            call.record_request = lambda: self._recorder.request(call, args)
        else:
            self._recorder.request(call, args)
        self._recorder.pending(call)
        try:
            if caller.lists_tools:  # an MCP client: the library and a person read no tool list
                self._groups.check(tool, args, call.owner)
            self._check_guards(tool, session_id, caller)
            if tool.needs_session and isinstance(args, dict) and "sessionId" not in args:
                raise self._no_session(caller)
            validate(tool.input_schema, args)
            if call.owner is not None and session_id is not None and self._registry.owner_of(session_id) != call.owner:
                raise errors.SessionNotFound(session_id=session_id)  # another client's: as if it did not exist
            if tool.needs_session:
                budget = self.budget_s(args)
                worker, call.expires_at = self._registry.renewed(args["sessionId"])  # validated: present
                if worker.held_by is not None and not (caller.person or tool.read_only or tool.during_cooldown):
                    raise errors.SessionHeldByPerson(session_id=session_id, details={"heldBy": worker.held_by},
                                                     note=self._groups.off_note("wait_for_user", caller))
                fut = worker.submit(self.on_session.run, tool, args, call,
                                    after=lambda state, f: self.on_session.after_answer(state, f, call),
                                    budget_s=budget, tag=(call, budget), urgent=caller.person)
            else:
                fut = self._pool.submit(self._run_on_pool, tool, args, call)
        except errors.BrowserServerError as exc:
            fut = _ended(answer.finish(call, error=exc))
        except RuntimeError:  # the pool refuses work once the core closed
            fut = _ended(answer.finish(call, error=errors.stopped_error(session_id)))
        fut.add_done_callback(lambda f: self._finished(f, call, started))
        return fut

    def _no_session(self, caller: Caller) -> errors.InvalidParameters:
        open_ids = self._registry.open_ids(caller.owner)
        if not open_ids:
            return errors.InvalidParameters("sessionId is required, and no session is open: call create_session "
                                            "first (or resume_session with the id of one that closed or expired).")
        shown = ", ".join(open_ids[:5]) + (f" and {len(open_ids) - 5} more" if len(open_ids) > 5 else "")
        return errors.InvalidParameters(f"sessionId is required: {len(open_ids)} sessions are open ({shown}); "
                                        "name one.", details={"open": len(open_ids)})

    def budget_s(self, args: dict[str, Any]) -> float | None:
        """Seconds a session command may run before the watchdog calls it stuck, or None (off): its own timeout
        (else the longer default), plus --watchdog-grace, plus the time a person has to answer a domain question."""
        grace = self.config.watchdog_grace
        if not grace:
            return None
        own = args.get("timeout")
        own = own if isinstance(own, (int, float)) and not isinstance(own, bool) else 0
        own = max(own, self.config.action_timeout, self.config.navigation_timeout) / 1000
        return own + grace + (USER_ANSWER_S if self.config.ask_new_domains else 0)

    def _check_guards(self, tool: Any, session_id: str | None, caller: Caller) -> None:
        """Cooldown first (no browser action while it runs), then the breaker and the rate limit."""
        name, cooldown, owner = tool.name, self._user.cooldown, caller.owner
        # During a cooldown, reading goes on (read_only tools attempt nothing against the wall), and so do the
        # tools declared during_cooldown (wait_for_user, the handover it asks for; close_session); all else waits.
        waiting = None
        if not (tool.read_only or tool.during_cooldown) and cooldown.remaining_s(session_id, owner):
            waiting = cooldown.refusal(session_id, owner, not self._groups.off_note("wait_for_user", caller))
        if waiting is not None:
            raise errors.CooldownActive(waiting, session_id=session_id,
                                        details={"remainingMs": round(cooldown.remaining_s(session_id, owner) * 1000)})
        retry = self.breaker.check(name)
        if retry is not None:
            raise errors.CircuitOpen(f"{name} failed with BROWSER_ERROR {self.config.breaker_threshold} times in a "
                                     f"row, so it is paused; retry in {retry} ms.", session_id=session_id,
                                     details={"retryAfterMs": retry, "tool": name})
        # Per client, session and tool: eight sessions of one agent each get their own budget.
        retry = self.rate.check((caller.name or "library", session_id or "-", name))
        if retry is not None:
            raise errors.RateLimited(f"More than {self.config.rate_limit} {name} calls in a minute; retry in "
                                     f"{retry} ms.", session_id=session_id, details={"retryAfterMs": retry})

    # CORE POOL THREAD
    def _run_on_pool(self, tool: Any, args: dict[str, Any], call: Call) -> answer.Outcome:
        """A session-less tool's call, ended in its Outcome (a bug of ours too: INTERNAL_ERROR, logged in _finished)."""
        try:
            return answer.finish(call, tool.handler(self._core, args, call))
        except Exception as exc:
            return answer.finish(call, error=exc)

    # THE THREAD THAT FINISHED THE CALL
    def _finished(self, fut: Future, call: Call, started: float) -> None:
        """Log the call (a bug of ours with its traceback), feed the breaker, record a call its session did not."""
        ended = answer.outcome_of(fut)
        error = ended.error
        outcome = "cancelled" if ended.cancelled else "ok" if error is None else error.code
        if not ended.cancelled:
            if error is None:
                self.breaker.succeeded(call.tool)
            elif isinstance(error, errors.InternalError):
                # Our own bug, not the browser's: logged whole, and not counted by the breaker.
                log.error("a tool failed on a bug of ours", exc_info=error.bug,
                          extra={"event": "internal_error", "tool": call.tool, "session": call.session_id,
                                 "owner": call.owner})
            elif error.code == "BROWSER_ERROR" and self.breaker.failed(call.tool):
                log.warning("circuit breaker opened", extra={"event": "breaker_opened", "tool": call.tool,
                                                             "error": str(error)[:200]})
        # owner: the caller's record, wherever its session id points (logs.record_owner).
        log.info("tool call", extra={"event": "tool_call", "tool": call.tool, "session": call.session_id,
                                     "owner": call.owner,
                                     "duration_ms": round((time.monotonic() - started) * 1000, 2),
                                     "outcome": outcome, **({"snapshot_reused": True} if call.snapshot_reused else {})})
        # A call that ran on its session thread is recorded there, after its capture; any other here.
        if not call.ran:
            call.flush_request()
            self._recorder.response(call, ended)
