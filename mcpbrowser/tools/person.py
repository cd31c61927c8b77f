"""A person's own tools in the live view: take over, their click, scroll, key or text on the picture, hand back,
and the start of the picture itself.

Their handlers run on the session's thread: core/browser.py submits them as the person's calls, ahead of
the agent's queued calls and in a waiting wait_for_user's slices, each recorded as the person's row. They
are `person_only`: in the core's tool table whether or not a view is built, unknown to an agent or the
library, and never in tools/list. What a person types is a secret before it reaches the page.
"""

import weakref
from collections import Counter
from typing import Any

from mcpbrowser import schema
from mcpbrowser.errors import InvalidParameters, SessionHeldByPerson
from mcpbrowser.session import screencast, snapshots
from mcpbrowser.tools.base import SessionTool, session_schema


def take_over(state: Any, args: dict[str, Any], response: Any) -> None:
    """The person holds the session: the agent's acting calls wait until they hand it back. One person at a
    time: the session thread runs the take-overs of people who pressed at once one after the other."""
    holder, person = state.worker.held_by, args["person"]
    if holder not in (None, person):
        raise SessionHeldByPerson(f"{holder} holds this session.", session_id=state.session_id,
                                  details={"heldBy": holder})
    state.worker.held_by = person
    response.answer({"heldBy": person})


def hand_back(state: Any, args: dict[str, Any], response: Any) -> None:
    """The person lets go: the agent acts again, and a waiting wait_for_user returns, finished by the person."""
    if state.worker.held_by is None:
        raise InvalidParameters("Nobody holds this session.", session_id=state.session_id)
    state.worker.held_by, state.worker.handed_back = None, True
    response.answer({"heldBy": None})


def watch(state: Any, args: dict[str, Any], response: Any) -> None:
    """The session's live picture starts (session/screencast.py), until its last viewer leaves."""
    screencast.start(state)
    response.answer({"success": True})


KEYS = ("Enter", "Tab", "Backspace", "Delete", "Escape", "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight",
        "Home", "End", "PageUp", "PageDown")
MAX_TEXT = 1000


def person_input(state: Any, args: dict[str, Any], response: Any) -> None:
    """One action of the person on the page, at viewport coordinates given as fractions of it."""
    page, action = state.tab.page, args["action"]
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
        # A secret before it reaches the page. Not only this run: the view sends a run per pause, so a person
        # who types slowly sends a key a run, each too short to scrub. What they typed since their last click
        # or other key is the secret, and its prefixes too (a page may echo each key).
        field = _field(state)
        typed = field.run + text
        snapshots.mark_secret(state, response, text)
        snapshots.learn_secrets(state, (typed,))
        snapshots.typing_key_by_key(state, typed)
        state.withheld.update((text, typed))
        field.run, field.keys = typed, field.keys + text
        page.keyboard.type(text)
        _learn_the_field(state)
    response.answer({"success": True})


# Keys that edit the field in place or move its caret: the person's text goes on in the same field.
_EDITING = frozenset(("Backspace", "Delete", "ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End"))
_FOCUSED_VALUE = """() => { let e = document.activeElement;
  while (e && e.contentDocument && e.contentDocument.activeElement) e = e.contentDocument.activeElement;
  return e && typeof e.value === 'string' ? e.value : null; }"""


def _learn_the_field(state: Any) -> None:
    """What the focused field holds after the person's keys is a secret too: a person who fixes a typo in
    the middle (arrows, then a key) never typed the final text as one run. One round trip, at a person's pace."""
    try:
        value = state.background(state.tab, state.tab.page, "evaluate", expression=_FOCUSED_VALUE)
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
        """Whether the person's keys could have left `value` in the field: their run cut short (a maxlength),
        or their keys less at most one a Backspace or Delete, rearranged (a typo fixed). The page answers the
        read, and a value learned is scrubbed from every answer: words of the page's choosing must not be
        hidden from the agent as the person's secret (nor is a pre-filled field learned whole)."""
        return self.run.startswith(value) or (
            len(value) >= len(self.keys) - self.erased and not Counter(value) - Counter(self.keys))


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


def _person_tool(name: str, title: str, description: str) -> dict[str, Any]:
    """What the person's calls declare alike: a person's name, no page (a crash waits for the agent's call)."""
    return {"name": name, "group": "person", "person_only": True, "title": title, "description": description,
            "input_schema": session_schema({"person": schema.string("", minLength=1)}, required=("person",)),
            "page_tool": False, "page_free": True, "during_cooldown": True}


TAKE_OVER = SessionTool(**_person_tool("person_take_over", "A person takes over in the live view",
                                       "The person named takes the session over; the agent's acting calls wait."),
                        handler=take_over)
HAND_BACK = SessionTool(**_person_tool("person_hand_back", "A person hands back in the live view",
                                       "The person who holds the session hands it back to the agent."),
                        handler=hand_back)
WATCH = SessionTool(**_person_tool("person_watch", "A person watches the page live",
                                   "The session's live picture starts, for its first viewer in the live view."),
                    handler=watch)

TOOLS = [PERSON_INPUT, TAKE_OVER, HAND_BACK, WATCH]
