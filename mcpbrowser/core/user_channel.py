"""The line to the person behind the agent: domain questions, the login cooldown, notices.

`ask_about_domain`, `login_failure` and `user_finished` run on session threads; `notify` on any thread;
`_cooldown_ended` on a timer thread (or the session thread of the wait_for_user that saw the person done).
Who is asked: the caller of the call that needs the answer, else `client`, the server's own (None: nobody)."""

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mcpbrowser.config import VIEW_PATH, Config
from mcpbrowser.core.call import Call, Caller, ServerClient
from mcpbrowser.errors import BrowserServerError, DomainNotAllowed, LoginTimeout, WaitTimeout
from mcpbrowser.guards import Cooldown, wall_hit
from mcpbrowser.logs import log
from mcpbrowser.session import page_reading

if TYPE_CHECKING:
    from mcpbrowser.session.state import SessionState

USER_ANSWER_S = 300.0  # a question waits this long for the person


class UserChannel:
    """Asks the person through the MCP client, and tells them what the server did on its own."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.client: ServerClient | None = None  # the transport sets it (Browser.client)
        # Where the live view is, for wait_for_user's answers: configuration only, since building a view writes
        # nothing into the core (an embedder mounting its own elsewhere tells its agents where).
        self.view_path: str | None = VIEW_PATH if config.view else None
        self.cooldown = Cooldown(config.login_cooldown, config.cooldown_scope, config.locale,
                                 on_end=self._cooldown_ended)

    def _asked(self, caller: Caller | None) -> Caller | ServerClient | None:
        """Whom to ask or tell: the running call's caller, else (no call: a session opening) the server's client."""
        return caller if caller is not None else self.client

    def notify(self, level: str, data: dict[str, Any], caller: Caller | None = None) -> None:
        """Tell the person: through the call's `caller` when given, else the server's client (all of them, on HTTP)."""
        client = self._asked(caller)
        if client is not None:
            client.notify(level, data)

    # SESSION THREAD
    def ask_about_domain(self, session_id: str, host: str, caller: Caller | None = None) -> None:
        """Ask the call's `caller` whether this session may visit `host`; raises DomainNotAllowed unless allowed."""
        if not self.config.ask_new_domains:
            raise DomainNotAllowed(f"{host} is not in the server's allowed domains.", session_id=session_id,
                                   details={"domain": host})
        client = self._asked(caller)
        if client is None or not client.can_elicit:
            raise DomainNotAllowed(
                f"{host} is not in the allowed domains, and the user cannot be asked: the client did not "
                "declare the elicitation capability.", session_id=session_id, details={"domain": host})
        answer = client.elicit(f"The agent wants to open {host}, which is not in the allowed domains. "
                               "Allow it for this session?", timeout=USER_ANSWER_S, key=f"domain:{host}")
        if answer != "accept":
            raise DomainNotAllowed(f"The user did not allow {host} ({answer}).", session_id=session_id,
                                   details={"domain": host, "userAction": answer})
        log.info("domain allowed by the user", extra={"event": "domain_granted", "session": session_id})

    # SESSION THREAD
    def hand_over(self, session_id: str, message: str, caller: Caller | None = None) -> None:
        """wait_for_user's word to the person before it waits for their sign: a 2026-07-28 client that can ask
        its user does so between calls (a notice reaches only a request that opted in to logs there); any other
        hears a notice ("alert"). A person who declines ends the wait at once."""
        client = self._asked(caller)
        if caller is None or client is None or not (caller.modern and client.can_elicit):
            where = self.where_to_help(session_id)
            self.notify("alert", {"event": "wait_for_user", "session": session_id, "message": message,
                                  **({"view": where} if where else {})}, caller)
            return
        answer = client.elicit(f"The agent hands over to you: {message} Do it in the browser window, then accept.",
                               timeout=USER_ANSWER_S, key=f"handover:{session_id}")
        if answer != "accept":
            declined = WaitTimeout(f"The user declined to take over ({answer}); nothing was waited for.",
                                   session_id=session_id, details={"userAction": answer})
            declined.timed_out = False  # the person is there and answered: no wall for the cooldown
            raise declined

    # SESSION THREAD
    def login_failure(self, state: "SessionState", tool_name: str, exc: BrowserServerError,
                      call: Call | None = None, logins_on: bool = False) -> BrowserServerError:
        """Turn a failure that ran into a login wall into the cooldown (the rule: guards.wall_hit);
        any other failure is returned as it is. logins_on: whether the caller can call wait_for_user."""
        if not self.config.login_cooldown:
            return exc
        wall = wall_hit(tool_name, exc, lambda: page_reading.wall(state, self.config.login_keywords))
        if wall is None:
            return exc
        owner = None if call is None else call.owner
        why = self.cooldown.describe(tool_name, wall, _where(state))
        text = self.cooldown.trigger(state.session_id, why, owner, logins_on)
        if text is None:
            return exc  # no cooldown covers this call (a session-less one under the session scope)
        log.warning("login wall: cooldown started", extra={"event": "cooldown_started", "session": state.session_id,
                                                           "tool": tool_name, "wall": wall})
        # To the client whose call tripped it: its text quotes that call and page.
        self.notify("warning", {"event": "cooldown_started", "message": text}, None if call is None else call.caller)
        return LoginTimeout(text, session_id=state.session_id,
                            details={"cause": exc.code, "wall": wall, "cooldownSeconds": self.config.login_cooldown})

    def where_to_help(self, session_id: str) -> str | None:
        """The live view's page of a session (a path, never a token), where a person can take over; or None."""
        return None if self.view_path is None else f"{self.view_path}/s/{session_id}"

    def with_view(self, session_id: str, answer: Any) -> Any:
        """A handover's answer or error (wait_for_user's), saying where a person can help when a view is served."""
        where = self.where_to_help(session_id)
        if where is None:
            return answer
        if isinstance(answer, BrowserServerError):
            answer.details = {**(answer.details or {}), "view": where}
            answer.message += f" A person can take over in the live view: {where}"
        else:
            answer["view"] = where
        return answer

    # SESSION THREAD
    def user_finished(self, session_id: str, call: Call) -> None:
        """wait_for_user saw the person done: the cooldown that covers this call ends now."""
        self.cooldown.finish(session_id, call.owner)

    # TIMER THREAD (or the session thread of user_finished)
    def _cooldown_ended(self, key: str, text: str, owner: str | None) -> None:
        log.info(text, extra={"event": "cooldown_ended"})
        data = {"event": "cooldown_ended", "message": text}
        # A client's own cooldown ends for that client alone; HTTP's `client` reaches each by owner.
        if key.startswith("client:") and owner is not None and self.client is not None:
            self.client.notify_owner(owner, "notice", data)
        else:
            self.notify("notice", data)


def _where(state: "SessionState") -> str:
    """The page's host and path, for the cooldown's message (never its query: it may carry tokens)."""
    try:
        parts = urlsplit(state.tab.page.url)
    except Exception:
        return ""
    return f"{parts.netloc}{parts.path}" if parts.netloc else ""
