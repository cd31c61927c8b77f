"""SESSION THREAD: the whole life of one call on its session, after core/dispatch.py queued it.

The session thread takes the call from its worker's queue and runs `OnSession.run`; `after_answer` runs once
the answer went out: the capture decided before it, the call's rows, the files it named, the session's memory."""

from concurrent.futures import Future
from typing import Any

from mcpbrowser.core import answer
from mcpbrowser.core.call import Call
from mcpbrowser.core.recorder import Recorder
from mcpbrowser.core.sessions import SessionRegistry
from mcpbrowser.core.user_channel import UserChannel
from mcpbrowser.errors import BrowserServerError, InternalError, SessionHeldByPerson, as_server_error
from mcpbrowser.session import page_reading, playwright_internals, snapshots
from mcpbrowser.session.acting import COUNT_BEFORE_ANSWER_S
from mcpbrowser.session.response import Response
from mcpbrowser.session.state import SessionState


class OnSession:
    """A call's life on its session thread; one per Dispatcher, shared by every session's thread."""

    def __init__(self, registry: SessionRegistry, recorder: Recorder, user: UserChannel, *, groups: Any,
                 supervisor: Any, files: Any, session_memory: Any, response_mode: str) -> None:
        self._registry, self._recorder, self._user, self._response_mode = registry, recorder, user, response_mode
        # The core's parts a call's end reaches, handed down (never the core itself).
        self._groups, self._supervisor, self._files, self._session_memory = groups, supervisor, files, session_memory

    def run(self, state: SessionState, tool: Any, args: dict[str, Any], call: Call) -> answer.Outcome:
        """The whole life of a call on its session: the person's hold checked again, the tool's page-side work,
        then, each decided once here, what a failure means, whether the page it left is stored, and the
        answer's notes; it ends in the call's Outcome, a failure's as much as a success's."""
        held = state.worker.held_by
        if held is not None and not (tool.read_only or tool.during_cooldown):
            # Queued before a person took the session over (the view), its turn came after: it must not act.
            note = self._groups.off_note("wait_for_user", call.caller)
            return answer.finish(call, error=SessionHeldByPerson(session_id=state.session_id,
                                                                 details={"heldBy": held}, note=note))
        call.ran = True
        call.inline = self._response_mode == "full"  # the snapshot goes into the answer too
        failure: Exception | None = None
        # The handler's Response holds whether the page is stored (it may read the page the capture reuses): a tool
        # that stores what it read, or one that may change the page (but in --response-mode lean).
        stores_page = tool.stores_page or (tool.changes_page and self._response_mode != "lean")
        response = Response(call.caller, stores_page, call.inline, answer.progress_to(call.caller, call.secrets))
        try:
            with state.running(tool, response, args):
                state.run_tool(tool, args, response)
            if response.result is None:  # a bug of ours: INTERNAL_ERROR, like any other
                raise TypeError(f"{tool.name}'s handler answered nothing on its Response")
            result = answer.with_news(response.result, response.news)
        except Exception as exc:
            failure = exc
        finally:
            call.console = state.events.take_console()
            # Its text is a secret from what its handler saw: a secret field (or the caller's `secret`), a plain
            # field looked at, or nothing known (a tool that may carry one: then it is).
            call.secret = bool(args.get("secret")) or response.secret is True or \
                (tool.may_carry_secret and response.secret is None)
            call.flush_request()  # a tool that may carry a secret is recorded once that is known
            if call.secret and isinstance(args.get("text"), str):
                state.withhold(args["text"])
            call.snapshot_reused = response.reused
            call.field_edit = response.field_edit
            call.capture = response.stores_page
        if failure is not None:
            return answer.finish(call, error=self._what_failed(state, tool, call, failure, response))
        call.same_page = response.same_page
        self._decide_capture(state, call, result, response)
        if tool.waits_for_person:
            self._user.user_finished(state.session_id, call)
            result = self._user.with_view(state.session_id, result)
        # What the agent asked for by name (a session cookie) is left in this answer alone, then learned.
        if not response.revealed:
            return answer.finish(call, result)
        outcome = answer.finish(call, result, shown=snapshots.secret_forms(response.revealed))
        snapshots.learn_secrets(state, response.revealed)
        return outcome

    def _what_failed(self, state: SessionState, tool: Any, call: Call, exc: Exception,
                     response: Response) -> BrowserServerError:
        """A failure on a session, classified from the exception and what the handler saw of its page: the server
        stopping, a bug of ours (though its page crashed or hung meanwhile), the page crashed (the session given a
        fresh page) or hung, the browser lost, a login wall (which starts the cooldown), or the tool's own error."""
        if self._registry.closed:
            # The server is stopping and takes the browser down with it: no crash.
            return self._registry.stopping_error(state.session_id)
        error = as_server_error(exc)
        if isinstance(error, InternalError):
            return error  # a bug of ours: no browser lost, no login wall (core/dispatch.py logs it)
        if response.page_crash is not None:
            error = state.replace_crashed_page() if response.page_crash else state.unresponsive_error()
        if page_reading.browser_gone(state):  # its round trip also hears a tab's "close" event
            self._supervisor.browser_gone(state.worker, str(error))
            return self._registry.session_lost(state)
        if playwright_internals.target_closed(exc) and state.current_closed:
            error = state.tab_closed_error(during=True)  # its page closed itself (window.close): not the browser
        error = answer.told_meanwhile(error, state.dismissals_untold(), state.closes_untold())
        failure = self._user.login_failure(state, tool.name, error, call,
                                           not self._groups.off_note("wait_for_user", call.caller))
        return self._user.with_view(state.session_id, failure) if tool.waits_for_person else failure

    @staticmethod
    def _decide_capture(state: SessionState, call: Call, result: dict[str, Any], response: Response) -> None:
        """Whether the page the call left is stored (the answer's meta.hasSnapshot says so): the page its
        handler read, now into the answer (--response-mode full), or after the answer (`call.capture_after`)."""
        if response.page is not None:
            call.snapshot = response.page  # the history keeps all of it: get_content(refId) reads it
            if not response.page_is_snapshot:
                call.inline = False  # a report of the handler's own: the answer is already its summary
        if state.blocker is not None:
            call.capture = False  # no script runs behind a dialog: nothing to store, and meta must not promise it
        if call.capture and call.inline and call.snapshot is None and "snapshot" not in result:
            call.snapshot = snapshots.capture_snapshot(state)
            result["snapshot"] = call.snapshot
            call.capture = call.snapshot is not None
        elif call.capture and call.snapshot is None and snapshots.too_large(state, state.elements_counted,
                                                                             COUNT_BEFORE_ANSWER_S):
            # The count rides on the settle's evaluation or the title's read, else it costs a round trip; a page
            # too busy to answer it within COUNT_BEFORE_ANSWER_S is not captured either.
            call.capture = False
        call.capture_after = call.capture and not call.inline and call.snapshot is None

    # once the answer went out
    def after_answer(self, state: SessionState, fut: Future, call: Call) -> None:
        """The capture decided before the answer, the call's rows, the files it named, the session's memory."""
        outcome = answer.outcome_of(fut)
        try:
            if outcome.error is None and call.capture_after:
                call.snapshot = snapshots.capture_snapshot(state, call.field_edit)
        finally:  # whatever the capture met, the answer promised a record (meta.recorded): it is written
            self._recorder.after_call(state, outcome, call)
        if outcome.result is not None:
            self._files.remember(call.session_id, call.tool, outcome.result)
        self._session_memory.after_call(state)
