"""The line to the person behind the agent: domain questions, the login cooldown, notices.

`ask_about_domain` and `login_failure` run on session threads (a tool waits for
the answer); `notify` on any thread; `_cooldown_ended` on a timer thread.

Who is asked: the caller of the call that needs the answer (a transport gives
each call one), else `client`, the server's one client (stdio); an embedder may
leave both None, and then nobody can be asked. A caller or client has `.name`
(rate limits are per client), `.can_elicit`, `.elicit(message, timeout, key)`
(returns accept, decline or cancel, or raises InputRequired when its client
answers between calls) and `.notify(level, data)`.
"""

from typing import Any

from mcpbrowser.config import Config
from mcpbrowser.errors import BrowserServerError, DomainNotAllowed, InputRequired, LoginTimeout, WaitTimeout
from mcpbrowser.guards import Cooldown, is_login_timeout
from mcpbrowser.logs import log
from mcpbrowser.session import page_reading

USER_ANSWER_S = 300.0  # a question waits this long for the person


class UserChannel:
    """Asks the person through the MCP client, and tells them what the server did on its own."""

    def __init__(self, config: Config) -> None:
        self.config = config
        # The MCP connection (the transport sets it): .name (the client's), .can_elicit,
        # .elicit(message, timeout), .notify(level, data).
        self.client: Any = None
        self.cooldown = Cooldown(config.login_cooldown, config.cooldown_scope, config.locale,
                                 on_end=self._cooldown_ended)

    def client_name(self, caller: Any = None) -> str:
        return getattr(caller or self.client, "name", None) or "library"

    def notify(self, level: str, data: dict[str, Any], call: Any = None) -> None:
        """Tell the person: through `call`'s caller when given, else the server's client (all of them, on HTTP)."""
        client = getattr(call, "caller", None) or self.client
        if client is not None:
            client.notify(level, data)

    # SESSION THREAD
    def ask_about_domain(self, session_id: str, host: str, call: Any = None) -> None:
        """Ask whether this session may visit `host` (MCP elicitation); raises DomainNotAllowed unless allowed.

        `call` is the call being run (the session's `state.call`): its caller is asked.
        """
        if not self.config.ask_new_domains:
            raise DomainNotAllowed(f"{host} is not in the server's allowed domains.", session_id=session_id,
                                   details={"domain": host})
        client = getattr(call, "caller", None) or self.client
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
    def hand_over(self, session_id: str, message: str, call: Any = None) -> None:
        """wait_for_user's word to the person before it waits for their sign.

        A 2026-07-28 client that can ask its user does so between calls (the person
        answers once done, and the retried call then checks the sign); any other hears
        a notice ("alert"), since on that revision a notice is only delivered to a
        request that opted in to logs. A person who declines ends the wait at once.
        """
        client = getattr(call, "caller", None) or self.client
        if not (getattr(client, "modern", False) and client.can_elicit):
            self.notify("alert", {"event": "wait_for_user", "session": session_id, "message": message}, call)
            return
        answer = client.elicit(f"The agent hands over to you: {message} Do it in the browser window, then accept.",
                               timeout=USER_ANSWER_S, key=f"handover:{session_id}")
        if answer != "accept":
            raise WaitTimeout(f"The user declined to take over ({answer}); nothing was waited for.",
                              session_id=session_id, details={"userAction": answer})

    # SESSION THREAD
    def login_failure(self, state: Any, tool_name: str, exc: BrowserServerError,
                      call: Any = None) -> BrowserServerError:
        """Turn a login or verification timeout into the cooldown; any other failure is returned as it is.

        Only where it cannot punish an ordinary mistake: failures of wait_for_user,
        or failures on a page that itself asks for a login or verification.
        """
        if isinstance(exc, InputRequired):
            return exc  # a question for the person, not a failure: its text may well say "login"
        reason = (exc.details or {}).get("reason", "") if isinstance(exc.details, dict) else ""
        if not self.config.login_cooldown or not is_login_timeout(f"{exc.message} {reason}",
                                                                  self.config.login_keywords):
            return exc
        if tool_name != "wait_for_user" and not page_reading.looks_like_login(state):
            return exc
        text = self.cooldown.trigger(state.session_id, f"{tool_name}: {exc.message[:120]}",
                                     getattr(call, "owner", None))
        log.warning("login timeout: cooldown started", extra={"event": "cooldown_started",
                                                               "session": state.session_id})
        # To the client whose call tripped it: its text quotes that call's error.
        self.notify("warning", {"event": "cooldown_started", "message": text}, call)
        return LoginTimeout(text, session_id=state.session_id,
                            details={"cause": exc.code, "cooldownSeconds": self.config.login_cooldown})

    # TIMER THREAD
    def _cooldown_ended(self, key: str, text: str) -> None:
        log.info(text, extra={"event": "cooldown_ended"})
        self.notify("notice", {"event": "cooldown_ended", "message": text})
