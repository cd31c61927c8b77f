"""A person's hands on a session: take over, their clicks, scrolls and keys on the live picture, hand back.

ANY THREAD (the view's request threads) only. Taking over and handing back set plain data on the
session's worker (`held_by`, `handed_back`) under the view's lock, which the dispatcher's guard and
wait_for_user read. The person's input enters as a call through the core's face (`CoreFace.submit`),
the agent's own path, with a `Person` caller: the `person_input` tool (tools/person.py, declared with
every other tool), run on the session thread ahead of queued calls and inside a waiting wait_for_user's
slices, recorded in the history as `person_input`, its text withheld. No line here acts on a page:
the `Person` caller's methods are the only ones the core calls on other threads (a session thread's
notices and progress), and they do nothing. Building the view adds no tool to the core.
"""

import json
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from mcpbrowser.errors import BrowserServerError, InvalidParameters
from mcpbrowser.logs import log
from mcpbrowser.tools.person import MAX_TEXT, PERSON_INPUT
from mcpbrowser.view.auth import HEADERS, Viewer

if TYPE_CHECKING:
    from mcpbrowser.core.face import CoreFace

INPUT_WAIT_S = 30.0


class Person:
    """The caller of a person's input (core/call.py's `Caller`): their name; the session's owner, so the
    dispatcher's owner check holds; `person`, which lets it past the hold and ahead of the queue."""

    person = True
    lists_tools = False
    can_elicit = False
    modern = False

    def __init__(self, viewer: Viewer, owner: str | None) -> None:
        self.name = f"person:{viewer.name}"
        self.owner = owner

    def notify(self, level: str, data: dict[str, Any]) -> None:
        """Notices meant for the agent's client are not the person's: they see the page."""

    def elicit(self, message: str, timeout: float, key: str) -> str:
        """Never asked (can_elicit is False): the person acts on the page itself."""
        return "cancel"

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        """A person's input is one short action: nothing to report."""

    def tools_changed(self) -> None:
        """The person calls no tools list."""


class Hands:
    """The view's routes that act: take over, input, hand back (each checked for CSRF and Origin before)."""

    def __init__(self, core: "CoreFace") -> None:
        self.core = core  # read and called, never written: person_input is in its tool table already
        # Who holds a session is read and written under this lock, in one step: read, then written without
        # it, ten people pressing Take over at once were each told they held the session (issue 63).
        # A lock of this process is the whole of it: the view takes over only sessions open on its own
        # server (registry.open_record; a session open on another server of the same history answers 404
        # here, and its page says "closed"), and a session is open on one server at a time (resume_session
        # claims it in the history in one conditional UPDATE). So one person holds a session, across servers too.
        self._holding = threading.Lock()

    def routes(self) -> dict[tuple[str, str], Callable[..., Any]]:
        return {("POST", "takeover"): self.take_over, ("POST", "handback"): self.hand_back,
                ("POST", "input"): self.input}

    def take_over(self, environ: dict[str, Any], start_response: Callable[..., Any], viewer: Viewer,
                  session_id: str) -> Iterable[bytes]:
        with self._holding:
            record = self.core.registry.open_record(session_id)
            if record is None:
                return _json(start_response, "404 Not Found", {"error": "No such session."})
            holder = record.worker.held_by
            if holder not in (None, viewer.name):
                return _json(start_response, "409 Conflict", {"error": f"{holder} holds this session."})
            _on_worker(record, held_by=viewer.name)
        log.info("a person took over", extra={"event": "person_took_over", "session": session_id,
                                               "viewer": viewer.name})
        return _json(start_response, "200 OK", {"heldBy": viewer.name})

    def hand_back(self, environ: dict[str, Any], start_response: Callable[..., Any], viewer: Viewer,
                  session_id: str) -> Iterable[bytes]:
        with self._holding:
            record = self.core.registry.open_record(session_id)
            if record is None or record.worker.held_by is None:
                return _json(start_response, "409 Conflict", {"error": "Nobody holds this session."})
            # handed_back: a waiting wait_for_user returns, finished by the person
            _on_worker(record, held_by=None, handed_back=True)
        # The person solved the wall: a cooldown it started ends (seed 000), as wait_for_user's success ends it.
        self.core.cooldown.finish(session_id, self.core.registry.owner_of(session_id))
        log.info("a person handed back", extra={"event": "person_handed_back", "session": session_id,
                                                "viewer": viewer.name})
        return _json(start_response, "200 OK", {"heldBy": None})

    def input(self, environ: dict[str, Any], start_response: Callable[..., Any], viewer: Viewer,
              session_id: str) -> Iterable[bytes]:
        worker = self._worker(session_id)
        if worker is None or worker.held_by != viewer.name:
            return _json(start_response, "409 Conflict", {"error": "Take over the session first."})
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            args = json.loads(environ["wsgi.input"].read(length)) if 0 < length <= 4 * MAX_TEXT else None
        except (ValueError, UnicodeDecodeError):
            args = None
        if not isinstance(args, dict):
            return _json(start_response, "400 Bad Request", {"error": "Send one action as a JSON object."})
        args = {k: v for k, v in args.items() if k != "sessionId"}
        caller = Person(viewer, self.core.registry.owner_of(session_id))
        try:
            self.core.submit(PERSON_INPUT.name, {**args, "sessionId": session_id}, caller=caller).result(INPUT_WAIT_S)
        except BrowserServerError as exc:
            status = "400 Bad Request" if isinstance(exc, InvalidParameters) else "409 Conflict"
            return _json(start_response, status, {"error": exc.code})  # the code only: a message may quote input
        except TimeoutError:
            return _json(start_response, "504 Gateway Timeout", {"error": "The page did not take it in time."})
        return _json(start_response, "200 OK", {"done": True})

    def _worker(self, session_id: str) -> Any:
        record = self.core.registry.open_record(session_id)
        return None if record is None else record.worker


def _on_worker(record: Any, **values: Any) -> None:
    """Set who holds the session on its worker, and again on the one the watchdog put in its place meanwhile
    (registry.replace_worker copies `held_by` from the old worker, under the registry's lock)."""
    worker = None
    while worker is not record.worker:
        worker = record.worker
        for name, value in values.items():
            setattr(worker, name, value)


def _json(start_response: Callable[..., Any], status: str, value: Any) -> Iterable[bytes]:
    body = json.dumps(value).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *HEADERS])
    return [body]
