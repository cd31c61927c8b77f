"""A person's hands on a session: take over, their clicks, scrolls and keys on the live picture, hand back.

- ANY THREAD (the view's request threads): the routes. Taking over and handing back set plain
  data on the session's worker (`held_by`, `handed_back`) under the view's lock, which the
  dispatcher's guard and wait_for_user read. The person's input enters as a call through
  `Browser.submit`, the agent's own path, with a `Person` caller: recorded in the history as
  `person_input`, its text withheld.
- SESSION THREAD: `person_input`, the handler, run ahead of queued calls and inside a waiting
  wait_for_user's slices (worker.between). What a person types is a secret before it reaches the page.
"""

import json
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from mcpbrowser import schema
from mcpbrowser.errors import BrowserServerError, InvalidParameters
from mcpbrowser.logs import log
from mcpbrowser.session import snapshots
from mcpbrowser.tools.base import SessionTool, session_schema
from mcpbrowser.view.auth import HEADERS, Viewer

KEYS = ("Enter", "Tab", "Backspace", "Delete", "Escape", "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight",
        "Home", "End", "PageUp", "PageDown")
MAX_TEXT = 1000
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


# SESSION THREAD
def person_input(state: Any, args: dict[str, Any], response: Any) -> dict[str, Any]:
    """One action of the person on the page, at viewport coordinates given as fractions of it."""
    page, action = state.page, args["action"]
    size = page.viewport_size or page.evaluate("() => ({width: innerWidth, height: innerHeight})")
    x, y = args.get("x", 0.5) * size["width"], args.get("y", 0.5) * size["height"]
    if action == "click":
        _FIELDS[state] = _Field()  # a click may move the focus: what comes next is typed elsewhere
        page.mouse.click(x, y)
    elif action == "scroll":  # the focus stays where it was
        page.mouse.move(x, y)
        page.mouse.wheel(args.get("dx", 0), args.get("dy", 0))
    elif action == "key":
        key = args["key"]
        if key not in _EDITING:
            _FIELDS[state] = _Field()  # Enter, Tab, Escape, a page: typed elsewhere next, or nothing
        page.keyboard.press(key)
        if key in ("Backspace", "Delete"):
            _field(state).erased += 1
            _learn_the_field(state)
    else:
        text = args.get("text", "")
        # A secret before it reaches the page: scrubbed from every answer, row, log and trace from now on.
        # Not only this run: the view sends a run per pause of 400 ms, so a person who types slowly sends a
        # key a run, each too short to scrub. What they typed since their last click or other key (the
        # field's text, as far as the view can tell) is the secret, and, as it is typed key by key into a
        # page that may echo each key, its prefixes too.
        field = _field(state)
        typed = field.run + text
        snapshots.mark_secret(state, response, text)
        snapshots.learn_secrets(state, (typed,))
        snapshots.typing_key_by_key(state, typed)
        state.withheld.update((text, typed))
        field.run, field.keys = typed, field.keys + text
        page.keyboard.type(text)
        _learn_the_field(state)
    return {"success": True}


# Keys that edit the field in place or move its caret: the person's text goes on in the same field.
_EDITING = frozenset(("Backspace", "Delete", "ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End"))
_FOCUSED_VALUE = """() => { let e = document.activeElement;
  while (e && e.contentDocument && e.contentDocument.activeElement) e = e.contentDocument.activeElement;
  return e && typeof e.value === 'string' ? e.value : null; }"""


def _learn_the_field(state: Any) -> None:
    """What the focused field holds after the person's keys is a secret too: a person who fixes a typo in
    the middle (arrows, then a key) never typed the final text as one run (the attack review of 2026-11-27:
    the whole password was in every answer). One round trip, on the person's slow pace."""
    try:
        value = state.background(state.page, state.page, "evaluate", expression=_FOCUSED_VALUE)
    except Exception:  # the key left the page (Enter sent a form): nothing to read
        return
    field = _field(state)
    if isinstance(value, str) and value and field.could_hold(value):
        snapshots.learn_secrets(state, (value,))
        state.withheld.add(value)
        field.run = value


class _Field:
    """The focused field as the person's keys made it, since their last click or other key: `run`, its text
    as far as the view can tell; `keys`, every key they typed, the erased ones too; `erased`, how many
    Backspace and Delete they pressed."""

    def __init__(self) -> None:
        self.run = self.keys = ""
        self.erased = 0

    def could_hold(self, value: str) -> bool:
        """Whether the person's keys could have left `value` in the field: the page answers the read (a
        getter of its own, or a value it sets on each key), and a value learned is scrubbed from every answer,
        so a page that answered words of its choosing would hide them from the agent as the person's secret.
        Their run cut short (a maxlength), or their keys less at most one a Backspace or Delete, rearranged
        (a typo fixed in the middle). A field the page pre-filled is not learned whole, as issue 49 decided
        for pre-filled fields; the person's runs are secrets all the same."""
        if self.run.startswith(value):
            return True
        return len(value) >= len(self.keys) - self.erased and not Counter(value) - Counter(self.keys)


def _field(state: Any) -> _Field:
    return _FIELDS.setdefault(state, _Field())


# SESSION THREAD (each session's own key).
_FIELDS: "weakref.WeakKeyDictionary[Any, _Field]" = weakref.WeakKeyDictionary()


PERSON_INPUT = SessionTool(
    name="person_input",
    group="person",  # in no tool group: never listed
    person_only=True,
    title="A person's input in the live view",
    description="A click, scroll, key or text of the person who took over the session in the live view.",
    input_schema=session_schema({
        "action": schema.string("", enum=["click", "scroll", "key", "type"]),
        "x": schema.number("", 0, 1), "y": schema.number("", 0, 1),
        "dx": schema.number("", -10_000, 10_000), "dy": schema.number("", -10_000, 10_000),
        "key": schema.string("", enum=list(KEYS)),
        "text": schema.string("", maxLength=MAX_TEXT),
    }, required=("action",)),
    handler=person_input,
    may_carry_secret=True,
    during_cooldown=True,  # the person solving the wall is what the cooldown waits for
)


class Hands:
    """The view's routes that act: take over, input, hand back (each checked for CSRF and Origin before)."""

    def __init__(self, core: Any) -> None:
        self.core = core
        core.tools.setdefault(PERSON_INPUT.name, PERSON_INPUT)  # the dispatcher's table: never listed
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
