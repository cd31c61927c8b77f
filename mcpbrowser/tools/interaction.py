"""Element interaction, dialogs and evaluate; handlers run on the session's own thread."""

import dataclasses
import json
import os
import time

from mcpbrowser import schema
from mcpbrowser.errors import (
    DialogOpen,
    ElementNotClickable,
    ElementNotEditable,
    EvaluationFailed,
    InvalidParameters,
    NoDialogOpen,
)
from mcpbrowser.logs import log
from mcpbrowser.page_strings import clip, crashed_with
from mcpbrowser.redaction import SECRET_FIELD, SECRET_OR_UNFOCUSED, WHERE_TEXT_WENT
from mcpbrowser.session import playwright_internals, settle, snapshots
from mcpbrowser.session.acting import INTERRUPTED
from mcpbrowser.session.playwright_internals import Together
from mcpbrowser.tools.base import SUCCESS_MESSAGE, TARGET, TIMEOUT, SessionTool, result_schema, session_schema
from mcpbrowser.tools.targeting import Act, locate, on_element, playwright_selector, reason


def click(state, args, response):
    label = on_element(state, args, ElementNotClickable, Act(
        state, "click", force=args.get("force", False), click_count=args.get("clickCount", 1)))
    response.answer({"success": True, "message": f"Clicked {label}"})


def hover(state, args, response):
    label = on_element(state, args, ElementNotClickable, Act(state, "hover", force=args.get("force", False)))
    response.answer({"success": True, "message": f"Hovering over {label}"})


def named_secret(state, name):
    """The value of a --secrets name this session's client may type; INVALID_PARAMETERS listing its names if none."""
    named = state.secrets.named
    if name not in named:
        known = sorted(named)
        raise InvalidParameters(f"No secret is named {name!r}; "
                                + (f"the names you may use: {', '.join(known)}." if known else
                                   "the server has none for you (it reads them from its --secrets file)."),
                                session_id=state.session_id, details={"secretName": name, "known": known})
    return named[name]


def type_text(state, args, response):
    name = args.get("secretName")
    if name is None and "text" not in args:
        raise InvalidParameters("There is no text to type: give text, or secretName (a server secret typed by "
                                "name).", session_id=state.session_id)
    if name is not None and "text" in args:
        raise InvalidParameters("Give text, or secretName (a server secret typed by name), not both.",
                                session_id=state.session_id)
    # A named secret is typed as a flagged one; answers and the history say its name, never its value.
    text = args["text"] if name is None else named_secret(state, name)
    delay, clear, flagged = args.get("delay", 0), args.get("clear", True), args.get("secret") or name is not None
    if name is not None:
        snapshots.mark_secret(state, response, text)
    typed = f"secret {name}" if name is not None else f"{len(text)} character(s)"
    # A page that logs its field on each input is read live (the log resources) while this call runs:
    # until the field is looked at (check, after typing), the text is held as a secret.
    held = () if flagged else snapshots.hold(state, (text,))
    marked = settle.mark(state)

    def enter(target, timeout):  # key by key, or after the text already there
        if not target.is_editable(timeout=timeout):
            raise ElementNotEditable("The element is disabled or read-only.", session_id=state.session_id)
        if clear:
            state.act(target, "fill", value="", timeout=timeout)  # emptying it may open a dialog too
        else:
            # Key presses go where the caret is; put it after the existing text.
            target.evaluate("e => { if (e.setSelectionRange && e.value !== undefined)"
                            " e.setSelectionRange(e.value.length, e.value.length) }")
        # Key by key, each prefix reaches the page: whether the field is a secret one is asked first.
        if flagged or state.act(target.locator(SECRET_ONE), "count"):
            snapshots.mark_secret(state, response, text)
            snapshots.typing_key_by_key(state, text)
        check(target, state.act(target, "press_sequentially", text=text, delay=delay, timeout=timeout))

    looks: list[dict] = []
    proofs: list = []  # the capture's proof sent with the settle, and its answer and the settle's wait

    def check(target, typed, with_settle=False):
        # After the text is in (a count does not wait for the element). Behind a dialog that opened while
        # typing no script runs in the page, so the text counts as secret; so it does when the check fails.
        if typed is INTERRUPTED or state.blocker is not None:
            snapshots.mark_secret(state, response, text)
            return
        proof = snapshots.proof_to_settle(state, playwright_selector(args), text) \
            if with_settle and not flagged else None
        look, sent = look_and_settle(state, marked, target, text, proof) if with_settle else \
            (where_text_went(target, text), None)
        if proof is not None and sent is not None:
            proofs.append((proof, *sent))
        looks.append(look)
        if flagged:
            return
        if look["secret"]:
            # A password (or card, or one-time code) field: never recorded in clear.
            snapshots.mark_secret(state, response, text)
        else:
            response.text_is_plain()  # a plain field, looked at: its text is stored (less the known secrets)
        snapshots.release(state, held)

    # Filling replaces the content, so it may be tried again; typing key by key or appending may not.
    if clear and not delay:  # the fast path
        fill = Act(state, "fill", value=text)
        label = on_element(state, args, ElementNotEditable, fill)
        if fill.target is not None:  # else it ran into a navigation it started: nothing to look at
            # Without Enter to press after it, the look goes with the settle (and the capture's proof).
            check(fill.target, fill.result, with_settle=not args.get("submit"))
    else:
        label = on_element(state, args, ElementNotEditable, enter, repeatable=False)
    look = looks[-1] if looks else {}
    editable = clear and not delay and not args.get("submit") and response.secret is False \
        and not any(look.get(key) for key in ("secret", "went", "kept", "focus"))
    if proofs:
        proof, answers, waited = proofs[-1]
        snapshots.take_proof(state, proof, answers, waited, usable=editable)
    elif editable:
        response.filled(playwright_selector(args), text)  # a plain field, all of the text in, the focus kept
    diverted(state, label, look)
    message = f"Typed {typed} into {label}{partly_kept(label, text, look)}"
    if args.get("submit") and state.blocker is not None:
        message = f"Typed {typed} into {label}; Enter was not pressed"
    elif args.get("submit"):
        # Enter on the same element, as a person submits a search box or a one-field form.
        on_element(state, args, ElementNotEditable, Act(state, "press", key="Enter"), repeatable=False)
        message += " and pressed Enter"
    response.answer({"success": True, "message": message})


def look_and_settle(state, marked, target, text, proof=None):
    """(where_text_went's look, (the proof's answer, the settle's ms waited)): the look's count sent with the
    action's settle (settle.now) and the capture's proof, one round trip; None for the second when the settle
    cannot run now."""
    reads = [(target.locator(SECRET_OR_UNFOCUSED), "count", {})] + (proof.reads if proof is not None else [])
    got = settle.now(state, marked, reads)
    if got is None:
        return where_text_went(target, text), None
    waited, answers = got
    look = {"secret": False} if answers[0] == 0 else where_text_went(target, text)  # past the common case
    return look, (answers[1:] if proof is not None else None, waited)


def where_text_went(target, text):
    """After text was put into target: {secret, went, kept, focus} (see WHERE_TEXT_WENT). One count in the
    common case (a plain field that kept the focus); the page's world is evaluated only past it."""
    try:
        if not target.locator(SECRET_OR_UNFOCUSED).count():
            return {"secret": False}
        look = target.evaluate(WHERE_TEXT_WENT, text)
        # The page's world answers that evaluation, and a page may replace what it calls there (its
        # Element.prototype.matches): a target it calls plain is asked again in Playwright's own world.
        if not look.get("secret") and target.locator(SECRET_ONE).count():
            look["secret"] = True
        return look
    except Exception:
        return {"secret": True}


def diverted(state, label, look, filled=None):
    """Raise ELEMENT_NOT_EDITABLE, with where the text went, when the page took the focus away as the text
    came (a script that refocuses its own field) and the text, or its end, went to another element."""
    if not look.get("went"):
        return
    went = clip(look["went"])
    raise ElementNotEditable(
        (f"Filled {', '.join(filled)}; but " if filled else "")
        + f"the text did not reach {label}: the page moved the focus to {went} as it was typed, and the text "
        "(or its end) went there. This page takes the focus back by itself; check that field.",
        session_id=state.session_id, details={"target": label, "focusMovedTo": went,
                                              **({"filled": filled} if filled else {})})


def partly_kept(label, text, look):
    """What an answer adds when the target kept fewer characters than were typed ("" when all)."""
    kept = look.get("kept")
    if kept is None:
        return ""
    moved = f" and the page moved the focus to {clip(look['focus'])}" if look.get("focus") else ""
    return (f", which kept {kept} of its {len(text)} character(s){moved} (a maxlength, or boxes that take one "
            "character each: type them with delay to enter them key by key)")


def select(state, args, response):
    values, labels = args.get("values"), args.get("labels")
    if (values is None) == (labels is None):
        raise InvalidParameters("Give values or labels (one of them).", session_id=state.session_id)
    pick = Act(state, "select_option", value=values, label=labels)
    marked = settle.mark(state)
    label = on_element(state, args, ElementNotEditable, pick)
    # No list from Playwright when the change opened a dialog (INTERRUPTED) or the time ran out after
    # the act (None): the option was chosen all the same, so what was asked is what it chose.
    chosen = list(values or labels) if pick.result is None or pick.result is INTERRUPTED else pick.result
    if isinstance(pick.result, list) and len(pick.result) == 1 and state.blocker is None:
        # One option: a native select's, the page watch checks the rest, in the settle's round trip where it can.
        proof = snapshots.proof_to_settle(state, playwright_selector(args), None)
        sent = None if proof is None else settle.now(state, marked, proof.reads)
        if sent is None:
            response.chose(playwright_selector(args))
        else:
            snapshots.take_proof(state, proof, sent[1], sent[0], usable=True)
    response.answer({"success": True, "message": f"Selected {', '.join(chosen) or 'nothing'} in {label}",
                     "selected": chosen})


def press_key(state, args, response):
    key = args["key"]
    label, matches = locate(state, args, required=False)
    if matches is None:
        try:
            state.act(state.tab.page.keyboard, "press", key=key)
        except Exception as exc:
            if playwright_internals.target_closed(exc):  # the key closed its page: not the arguments' fault
                raise
            raise InvalidParameters(f"Cannot press {key!r}: {reason(exc)}", session_id=state.session_id) from None
    else:
        on_element(state, args, ElementNotEditable, Act(state, "press", key=key), repeatable=False)
    response.answer({"success": True, "message": f"Pressed {key}" + (f" on {label}" if matches is not None else "")})


def drag(state, args, response):
    source, target = args["source"], args["target"]
    dropped, drop = locate(state, target)
    label = on_element(state, {**source, **{k: args[k] for k in ("timeout",) if k in args}}, ElementNotClickable,
                       Act(state, "drag_to", target=drop.first))
    response.answer({"success": True, "message": f"Dragged {label} to {dropped}"})


def fill_form(state, args, response):
    """Each field by the kind of control it is: a checkbox or radio is checked, a <select> chooses, else fill.
    A dialog that a field opens stops the form there: nothing can reach the page behind it."""
    timeout = {k: args[k] for k in ("timeout",) if k in args}
    fields, filled = args["fields"], list[str]()
    for field in fields:  # every field's value is known before the first is filled
        where = field.get("selector") or field.get("ref")
        if "secretName" in field and "value" in field:
            raise InvalidParameters("Each field takes a value, or a secretName (a server secret), not both.",
                                    session_id=state.session_id, details={"field": where})
        if "secretName" not in field and "value" not in field:
            label = field.get("selector") or (f"ref {field['ref']}" if "ref" in field else "a field")
            raise InvalidParameters(f"The field {label} has no value: give it a value, or a secretName (a server "
                                    "secret).", session_id=state.session_id, details={"field": where})
        if "secretName" in field:
            named_secret(state, field["secretName"])
    # Every value is held as a secret before the first field is filled, as type holds its text (a field may
    # become a secret one when focused); each is released once its field was filled and found plain.
    held = [snapshots.hold(state, [field["value"]] if isinstance(field.get("value"), str) else ())
            for field in fields]
    notes, marked = [], settle.mark(state)
    for n, (field, holding) in enumerate(zip(fields, held, strict=True)):
        if state.blocker is not None:
            break
        # The last field's look goes with the settle (settle.now): one round trip after the last fill.
        filler = _filler(state, response, field, marked if n == len(fields) - 1 else None)
        try:
            label = on_element(state, {**{k: field[k] for k in ("selector", "ref") if k in field},
                                       **timeout}, ElementNotEditable, filler)
        except Exception:
            if isinstance(field.get("value"), str):
                state.withheld.add(field["value"])  # its field was never seen: secret for a trace too
            raise
        look = filler.looks[-1] if filler.looks else {}
        if look.get("secret") and isinstance(field.get("value"), str):
            # A secret field once filled (it became one on focus).
            snapshots.mark_secret(state, response, field["value"])
        snapshots.release(state, holding)
        diverted(state, label, look, filled)
        filled.append(label)
        notes.append(partly_kept(label, str(field.get("value", "")), look))
    if len(filled) < len(fields):
        # run_tool adds which dialog opened and that handle_dialog comes next.
        response.answer({"success": True, "message": f"Filled {len(filled)} of {len(fields)} field(s) "
                                                     f"({', '.join(filled)}); the rest were not filled"})
        return
    response.answer({"success": True, "message": f"Filled {len(filled)} field(s): {', '.join(filled)}" + "".join(
        f"; {label}{note}" for label, note in zip(filled, notes, strict=True) if note)})


# A field's kind, asked by counting the target against CSS lists in Playwright's own world (an evaluate
# in the page's world costs a fresh page the world's setup), all in one round trip with whether the
# target is there yet (":scope"): one that is not is awaited, then counted again.
CHECKABLE = "input[type=checkbox i], input[type=radio i]"
SPECIAL = f":scope:is(select, {CHECKABLE}, {SECRET_FIELD})"
KINDS = (":scope", SPECIAL, ":scope:is(select)", f":scope:is({CHECKABLE})")


def _filler(state, response, field, marked=None):
    name = field.get("secretName")
    value = field["value"] if name is None else named_secret(state, name)
    secret = field.get("secret", False) or name is not None

    # Every step goes through state.act: it starts nothing behind a dialog, and stops waiting when one opens.
    def counted(target):
        counts = state.act(Together(*[(target.locator(css), "count", {}) for css in KINDS]), "run")
        for count in () if counts is INTERRUPTED else counts:
            if isinstance(count, Exception):  # a selector Playwright refuses, a ref gone: on_element says which
                raise count
        return counts

    def fill(target, timeout):
        counts = counted(target)
        if counts is not INTERRUPTED and not counts[0]:
            if state.act(target, "wait_for", state="attached", timeout=timeout) is INTERRUPTED:
                return INTERRUPTED
            counts = counted(target)
        if counts is INTERRUPTED:
            return INTERRUPTED
        _, special, choice, checkable = counts
        kind = "fill"
        if special:
            kind = "select_option" if choice else "set_checked" if checkable else "secret"
        if state.blocker is not None:  # it opened during a count (which then answered INTERRUPTED)
            return INTERRUPTED
        if kind == "set_checked":
            return state.act(target, kind, checked=value in (True, "true", "on", "1"), timeout=timeout)
        text = str(value).lower() if isinstance(value, bool) else value
        if secret or kind == "secret":
            snapshots.mark_secret(state, response, text)  # scrubbed from every answer, as type's secrets
        if kind == "select_option":
            return state.act(target, kind, value=text, timeout=timeout)
        done = state.act(target, "fill", value=text, timeout=timeout)
        if done is not INTERRUPTED and state.blocker is None:
            # A page that took the focus back, as type sees it.
            looks.append(where_text_went(target, text) if marked is None else
                         look_and_settle(state, marked, target, text)[0])
        return done

    looks: list[dict] = []
    fill.looks = looks  # type: ignore[attr-defined]

    return fill


def mouse(state, args, response):
    action, x, y = args["action"], args.get("x"), args.get("y")
    pointer = state.tab.page.mouse
    if action == "wheel":
        state.act(pointer, "wheel", delta_x=args.get("deltaX", 0), delta_y=args.get("deltaY", 0))
        response.answer({"success": True, "message": f"Scrolled by {args.get('deltaX', 0)},{args.get('deltaY', 0)}"})
        return
    if action in ("click", "move") and (x is None or y is None):
        raise InvalidParameters(f"{action} needs x and y.", session_id=state.session_id)
    button = args.get("button", "left")
    if action == "click":
        state.act(pointer, "click", x=x, y=y, button=button, click_count=args.get("clickCount", 1))
    elif action == "move":
        state.act(pointer, "move", x=x, y=y)
    else:
        if x is not None and y is not None:
            state.act(pointer, "move", x=x, y=y)
        state.act(pointer, action, button=button)
    where = f" at {x},{y}" if x is not None and y is not None else ""
    response.answer({"success": True, "message": f"Mouse {action}{where}"})


def resize(state, args, response):
    state.tab.page.set_viewport_size({"width": args["width"], "height": args["height"]})
    response.answer({"success": True, "message": f"Viewport is {args['width']}x{args['height']}"})


def _allowed_file(state, path):
    real = os.path.realpath(path)
    for root in state.config.upload_dir:
        root = os.path.realpath(root)
        if os.path.commonpath([real, root]) == root:
            if not os.path.isfile(real):
                raise InvalidParameters(f"{path!r} is not a file.", session_id=state.session_id)
            return real
    raise InvalidParameters(f"{path!r} is not under an allowed --upload-dir "
                            f"({', '.join(state.config.upload_dir)}).", session_id=state.session_id)


def upload_file(state, args, response):
    files = [_allowed_file(state, path) for path in args["paths"]]
    label = on_element(state, args, ElementNotEditable, Act(state, "set_input_files", files=files))
    response.answer({"success": True, "message": f"Set {len(files)} file(s) on {label}"})


def handle_dialog(state, args, response):
    # The dialog that holds the current tab; else, when exactly one other tab has one, that one (the agent
    # was told of it by its tab's index: a popup's alert is answered without selecting the popup first).
    dialog = state.blocker
    if dialog is None:
        open_in = [i for i, tab in enumerate(state.tabs) if tab.dialog is not None]
        if len(open_in) != 1:
            several = f"No dialog is open in this tab; tabs {', '.join(map(str, open_in))} each have one: " \
                "select one with tabs, then answer it."
            # One the agent was told of may have died with its tab's page: say so, rather than only that none is.
            crashed = state.crashes_untold()
            told = "".join(f" Tab {c['tab']} crashed{crashed_with(c.get('dialog'))}." for c in crashed)
            raise NoDialogOpen(several if open_in else told and f"No dialog is open.{told}",
                               session_id=state.session_id, details={"crashedTabs": crashed} if crashed else None)
        dialog = state.tabs[open_in[0]].dialog
    tab = state.tab_of(dialog.page) or state.tab
    named = f"the {dialog.type} dialog ({clip(dialog.message)!r})" + \
        ("" if tab is state.tab else f" in tab {state.tabs.index(tab)}")
    accept, navigations = args["accept"], tab.navigations
    if not state.answer_dialog(dialog, accept, args.get("promptText")):
        # It closed before the answer reached it (its tab closed or navigated, or the next one replaced it).
        state.flush_events()
        gone = f"{named[:1].upper()}{named[1:]} had closed already"
        if state.blocker is not None:
            raise DialogOpen(f"{gone}; now {state.dialog_summary()} is open: answer it with handle_dialog.",
                             session_id=state.session_id, details=state.dialog_info())
        raise NoDialogOpen(f"{gone}; no dialog is open now.", session_id=state.session_id)
    verb = "Accepted" if accept else "Dismissed"
    if accept and dialog.type == "beforeunload":
        # The page it guarded now leaves: answer once the next document committed, to say where the tab went.
        deadline = time.monotonic() + state.config.action_timeout / 1000
        try:
            while tab.navigations == navigations and time.monotonic() < deadline and tab.dialog is None:
                tab.page.wait_for_timeout(25)  # events are dispatched meanwhile
        except Exception as exc:  # the tab closed (a close it guarded): run_tool says where the session is
            log.debug("after beforeunload", extra={"session": state.session_id, "error": str(exc)})
    # The tab it was in, when not the current one: export_script replays the answer there.
    response.answer({"success": True, "message": f"{verb} {named}",
                     **({} if tab is state.tab or tab not in state.tabs else {"tab": state.tabs.index(tab)})})


def evaluate(state, args, response):
    try:
        value = state.act(state.tab.page, "evaluate", expression=args["expression"])
    except Exception as exc:
        raise EvaluationFailed(f"The expression failed: {reason(exc)}", session_id=state.session_id) from None
    try:
        json.dumps(None if value is INTERRUPTED else value)
    except (TypeError, ValueError):
        raise EvaluationFailed("The result is not JSON-serialisable.", session_id=state.session_id) from None
    response.answer({"result": None if value is INTERRUPTED else value})


SECRET_ONE = f":scope:is({SECRET_FIELD})"  # the target itself, when it is a secret field
SECRET_NAME = schema.string("Name of a server secret, typed instead of text (you never see its value).",
                            minLength=1)


def taking_secret_names(tool):
    """type, fill_form and page_tools as a server with --secrets offers them: a secret may be given by name
    (only then: without a secrets file the argument, paid on every turn, could only answer an error)."""
    if tool.name == "type":
        inputs = tool.input_schema
        return dataclasses.replace(tool, input_schema={
            **inputs, "properties": {**inputs["properties"], "secretName": SECRET_NAME},
            "required": [r for r in inputs["required"] if r != "text"]})
    if tool.name == "fill_form":
        fields = tool.input_schema["properties"]["fields"]
        items = fields["items"]
        items = {**items, "properties": {**items["properties"], "secretName": {**SECRET_NAME, "description":
                                                                               "Instead of value, as in type."}},
                 "required": []}
        properties = {**tool.input_schema["properties"], "fields": {**fields, "items": items}}
        return dataclasses.replace(tool, input_schema={**tool.input_schema, "properties": properties})
    if tool.name == "page_tools":
        inputs = tool.input_schema
        return dataclasses.replace(tool, input_schema={**inputs, "properties": {**inputs["properties"], "secretNames": {
            "type": "object", "description": "{input field: server secret's name}: the field gets its value, "
                                             "which you never see."}}})
    return tool


TOOLS = [
    SessionTool(
        name="click", title="Click element",
        description="Element tools take a ref from snapshot, or a selector: CSS, text=..., role=..., or "
                    "XPath (//...); the first match.",
        input_schema=session_schema({
            **TARGET,
            "timeout": TIMEOUT,
            # Playwright's own words (force, clickCount; type's delay, ms between keys): left undescribed.
            "force": {"type": "boolean"},
            "clickCount": schema.integer(None, minimum=1, maximum=3),
        }),
        handler=click, positional=("selector",), changes_page=True, output_schema=SUCCESS_MESSAGE,
    ),
    SessionTool(
        name="type", title="Type text",
        description="Replaces a field's text (clear: false appends); submit: press Enter after. Text for "
                    "password, card or one-time-code fields, or with secret, is never stored or shown.",
        input_schema=session_schema({
            **TARGET,
            "text": {"type": "string"},
            "delay": schema.integer(None, minimum=0, maximum=1000),
            "timeout": TIMEOUT,
            "clear": {"type": "boolean"},
            "secret": {"type": "boolean"},
            "submit": {"type": "boolean"},
        }, required=("text",)),
        handler=type_text, positional=("selector", "text"), may_carry_secret=True, changes_page=True,
        output_schema=SUCCESS_MESSAGE,
    ),
    SessionTool(
        name="select", title="Select option", description="Options of a <select>, by values or labels.",
        input_schema=session_schema({
            **TARGET,
            "values": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "array", "items": {"type": "string"}},
            "timeout": TIMEOUT,
        }),
        handler=select, positional=("selector",), changes_page=True,
        output_schema=result_schema(success="boolean", message="string",
                                    selected={"type": "array", "items": {"type": "string"}}),
    ),
    SessionTool(
        name="hover", group="extra", title="Hover element", description="Move the mouse over an element.",
        input_schema=session_schema({**TARGET, "timeout": TIMEOUT, "force": {"type": "boolean"}}),
        handler=hover, positional=("selector",), changes_page=True, output_schema=SUCCESS_MESSAGE,
    ),
    SessionTool(
        name="press_key", title="Press key",
        description="Press a key or chord (Enter, ArrowDown, Control+a) on an element or the page.",
        input_schema=session_schema({
            "key": {"type": "string", "minLength": 1},
            **TARGET,
            "timeout": TIMEOUT,
        }, required=("key",)),
        handler=press_key, changes_page=True, output_schema=SUCCESS_MESSAGE,
    ),
    SessionTool(
        name="drag", group="extra", title="Drag and drop", description="Drag one element onto another.",
        input_schema=session_schema({
            "source": {**schema.obj(TARGET), "description": "Element to drag: {selector} or {ref}."},
            "target": {**schema.obj(TARGET), "description": "Where to drop it, likewise."},
            "timeout": TIMEOUT,
        }, required=("source", "target")),
        handler=drag, changes_page=True, output_schema=SUCCESS_MESSAGE,
    ),
    SessionTool(
        name="fill_form", title="Fill form",
        description="Fields in order, each by ref or selector: text, checkbox/radio (true/false), "
                    "select (value or label). Values are never stored.",
        input_schema=session_schema({
            "fields": {"type": "array", "minItems": 1,
                       "items": schema.obj({**TARGET, "value": {"type": ["string", "boolean"]},
                                            "secret": {"type": "boolean"}}, ("value",))},
            "timeout": TIMEOUT,
        }, required=("fields",)),
        handler=fill_form, changes_page=True, output_schema=SUCCESS_MESSAGE,
    ),
    SessionTool(
        name="mouse", group="vision", title="Mouse at coordinates",
        description="Mouse by viewport CSS pixels (from a screenshot): click, move, down, up, or wheel.",
        input_schema=session_schema({
            "action": schema.string("What to do.", enum=["click", "move", "down", "up", "wheel"]),
            "x": schema.number("From the left.", 0), "y": schema.number("From the top.", 0),
            "button": schema.string("Default left.", enum=["left", "right", "middle"]),
            "clickCount": schema.integer("2 for a double click.", 1, 3),
            "deltaX": schema.number("Wheel: horizontal scroll in px."),
            "deltaY": schema.number("Wheel: vertical scroll in px."),
        }, required=("action",)),
        handler=mouse, changes_page=True, output_schema=SUCCESS_MESSAGE,
    ),
    SessionTool(
        name="resize", group="extra", title="Resize viewport", description="Set the viewport's size in CSS pixels.",
        input_schema=session_schema({"width": schema.integer("px", 1, 10_000),
                                     "height": schema.integer("px", 1, 10_000)}, required=("width", "height")),
        handler=resize, changes_page=True, positional=("width", "height"), output_schema=SUCCESS_MESSAGE,
    ),
    SessionTool(
        name="upload_file", title="Upload files",
        description="Set files on a file input. Only files under the server's --upload-dir.",
        input_schema=session_schema({
            **TARGET,
            "paths": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1,
                      "description": "Absolute paths of files under an allowed upload directory."},
            "timeout": TIMEOUT,
        }, required=("paths",)),
        handler=upload_file, positional=("selector", "paths"), changes_page=True, output_schema=SUCCESS_MESSAGE,
        enabled=lambda config: bool(config.upload_dir),
    ),
    SessionTool(
        name="handle_dialog", title="Answer dialog",
        description="Accept (OK) or dismiss (Cancel) the open dialog; promptText answers a prompt.",
        input_schema=session_schema({
            "accept": {"type": "boolean"},
            "promptText": {"type": "string"},
        }, required=("accept",)),
        handler=handle_dialog, changes_page=True, page_tool=False, output_schema=SUCCESS_MESSAGE,
    ),
    SessionTool(
        name="evaluate", title="Evaluate JavaScript",
        description="Evaluate a JavaScript expression or function in the page; returns its JSON value.",
        input_schema=session_schema({
            "expression": schema.string("Expression, or a function such as () => document.title.",
                                        minLength=1),
        }, required=("expression",)),
        handler=evaluate, changes_page=True, destructive=True, enabled=lambda config: config.allow_evaluate,
        output_schema={"type": "object", "properties": {"result": {}}, "required": ["result"]},
    ),
]
