"""A person's hands on a session: take over, their clicks, scrolls and keys on the live picture, hand back.

ANY THREAD (the view's request threads) only. Each is a call of the person's through the core's face
(`CoreFace.take_over`, `act`, `hand_back`): a tool of theirs (tools/person.py) run on the session thread
ahead of queued calls and inside a waiting wait_for_user's slices, logged and recorded as theirs, their
text withheld. No line here acts on a page or writes the core's objects: who holds a session is the session
thread's to decide, one take-over after the other, so people pressing Take over at once are told one holds it.
"""

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from mcpbrowser.errors import BrowserServerError, InvalidParameters, SessionNotFound
from mcpbrowser.view.auth import HEADERS, Viewer

if TYPE_CHECKING:
    from mcpbrowser.core.face import CoreFace

INPUT_WAIT_S = 30.0
# A person's action as JSON: four bytes a character of person_input's longest text (1000, which the core checks).
MAX_BODY = 4_000


class Hands:
    """The view's routes that act: take over, input, hand back (each checked for CSRF and Origin before)."""

    def __init__(self, core: "CoreFace") -> None:
        # A session open on another server of the same history answers 404 here (its page says "closed"), and a
        # session is open on one server at a time (resume_session claims it in the history in one conditional
        # UPDATE): so one person holds a session, across servers too.
        self.core = core

    def routes(self) -> dict[tuple[str, str], Callable[..., Any]]:
        return {("POST", "takeover"): self.take_over, ("POST", "handback"): self.hand_back,
                ("POST", "input"): self.input}

    def take_over(self, environ: dict[str, Any], start_response: Callable[..., Any], viewer: Viewer,
                  session_id: str) -> Iterable[bytes]:
        return _held(start_response, lambda: self.core.take_over(session_id, viewer.name, INPUT_WAIT_S))

    def hand_back(self, environ: dict[str, Any], start_response: Callable[..., Any], viewer: Viewer,
                  session_id: str) -> Iterable[bytes]:
        return _held(start_response, lambda: self.core.hand_back(session_id, viewer.name, INPUT_WAIT_S))

    def input(self, environ: dict[str, Any], start_response: Callable[..., Any], viewer: Viewer,
              session_id: str) -> Iterable[bytes]:
        if (self.core.session(session_id) or {}).get("heldBy") != viewer.name:
            return _json(start_response, "409 Conflict", {"error": "Take over the session first."})
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            args = json.loads(environ["wsgi.input"].read(length)) if 0 < length <= MAX_BODY else None
        except (ValueError, UnicodeDecodeError):
            args = None
        if not isinstance(args, dict):
            return _json(start_response, "400 Bad Request", {"error": "Send one action as a JSON object."})
        try:
            self.core.act(session_id, viewer.name, args).result(INPUT_WAIT_S)
        except BrowserServerError as exc:
            status = "400 Bad Request" if isinstance(exc, InvalidParameters) else "409 Conflict"
            return _json(start_response, status, {"error": exc.code})  # the code only: a message may quote input
        except TimeoutError:
            return _json(start_response, "504 Gateway Timeout", {"error": "The page did not take it in time."})
        return _json(start_response, "200 OK", {"done": True})


def _held(start_response: Callable[..., Any], call: Callable[[], dict[str, Any]]) -> Iterable[bytes]:
    """A take-over's or a hand-back's answer: who holds the session now, or why not."""
    try:
        return _json(start_response, "200 OK", call())
    except SessionNotFound:
        return _json(start_response, "404 Not Found", {"error": "No such session."})
    except BrowserServerError as exc:  # held by another, nobody holds it, a limit: its message quotes no input
        return _json(start_response, "409 Conflict", {"error": exc.message})
    except TimeoutError:
        return _json(start_response, "504 Gateway Timeout", {"error": "The session did not take it in time."})


def _json(start_response: Callable[..., Any], status: str, value: Any) -> Iterable[bytes]:
    body = json.dumps(value).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *HEADERS])
    return [body]
