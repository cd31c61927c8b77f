"""Element interaction, dialogs and evaluate; handlers run on the session's own thread."""

import json
import os

from mcpbrowser import schema
from mcpbrowser.errors import ElementNotClickable, ElementNotEditable, EvaluationFailed, InvalidParameters, NoDialogOpen
from mcpbrowser.redaction import IS_SECRET_FIELD
from mcpbrowser.session import snapshots
from mcpbrowser.session.state import INTERRUPTED
from mcpbrowser.tools.base import SUCCESS_MESSAGE, TARGET, TIMEOUT, SessionTool, session_schema
from mcpbrowser.tools.targeting import on_element, reason


def click(state, args):
    label = on_element(state, args, ElementNotClickable, lambda target, timeout: state.act(
        target, "click", timeout=timeout, force=args.get("force", False),
        click_count=args.get("clickCount", 1)))
    return {"success": True, "message": f"Clicked {label}"}


def hover(state, args):
    label = on_element(state, args, ElementNotClickable, lambda target, timeout: state.act(
        target, "hover", timeout=timeout, force=args.get("force", False)))
    return {"success": True, "message": f"Hovering over {label}"}


def type_text(state, args):
    text, delay, clear = args["text"], args.get("delay", 0), args.get("clear", True)

    def enter(target, timeout):
        if not args.get("secret") and target.evaluate(IS_SECRET_FIELD, timeout=timeout):
            snapshots.mark_secret(state, text)  # a password (or card, or one-time code) field: never recorded in clear
        if clear and not delay:
            state.act(target, "fill", value=text, timeout=timeout)  # one round trip: the fast path
            return
        if not target.is_editable(timeout=timeout):
            raise ElementNotEditable("The element is disabled or read-only.", session_id=state.session_id)
        if clear:
            target.fill("", timeout=timeout)
        else:
            # Key presses go where the caret is; put it after the existing text.
            target.evaluate("e => { if (e.setSelectionRange && e.value !== undefined)"
                            " e.setSelectionRange(e.value.length, e.value.length) }")
        state.act(target, "press_sequentially", text=text, delay=delay, timeout=timeout)

    # Filling replaces the content, so it may be tried again; typing key by key or appending may not.
    label = on_element(state, args, ElementNotEditable, enter, repeatable=clear and not delay)
    if args.get("submit"):
        # Enter on the same element, as a person submits a search box or a one-field form.
        on_element(state, args, ElementNotEditable, lambda target, timeout: state.act(
            target, "press", key="Enter", timeout=timeout), repeatable=False)
        return {"success": True, "message": f"Typed {len(text)} character(s) into {label} and pressed Enter"}
    return {"success": True, "message": f"Typed {len(text)} character(s) into {label}"}


def select(state, args):
    values, labels = args.get("values"), args.get("labels")
    if (values is None) == (labels is None):
        raise InvalidParameters("Give values or labels (one of them).", session_id=state.session_id)
    chosen = []

    def pick(target, timeout):
        result = state.act(target, "select_option", value=values, label=labels, timeout=timeout)
        if result is not INTERRUPTED:
            chosen.extend(result)

    label = on_element(state, args, ElementNotEditable, pick)
    return {"success": True, "message": f"Selected {', '.join(chosen) or 'nothing'} in {label}",
            "selected": chosen}


def press_key(state, args):
    key = args["key"]
    label, matches = state.locate(args, required=False)
    if matches is None:
        try:
            state.act(state.page.keyboard, "press", key=key)
        except Exception as exc:
            raise InvalidParameters(f"Cannot press {key!r}: {reason(exc)}", session_id=state.session_id) from None
        return {"success": True, "message": f"Pressed {key}"}
    on_element(state, args, ElementNotEditable, lambda target, timeout: state.act(
        target, "press", key=key, timeout=timeout), repeatable=False)
    return {"success": True, "message": f"Pressed {key} on {label}"}


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


def upload_file(state, args):
    files = [_allowed_file(state, path) for path in args["paths"]]
    label = on_element(state, args, ElementNotEditable, lambda target, timeout: state.act(
        target, "set_input_files", files=files, timeout=timeout))
    return {"success": True, "message": f"Set {len(files)} file(s) on {label}"}


def handle_dialog(state, args):
    if state.dialog is None:
        raise NoDialogOpen(session_id=state.session_id)
    accept = args["accept"]
    dialog = state.answer_dialog(accept, args.get("promptText"))
    verb = "Accepted" if accept else "Dismissed"
    return {"success": True, "message": f"{verb} the {dialog.type} dialog ({dialog.message!r})"}


def evaluate(state, args):
    try:
        value = state.act(state.page, "evaluate", expression=args["expression"])
    except Exception as exc:
        raise EvaluationFailed(f"The expression failed: {reason(exc)}", session_id=state.session_id) from None
    if value is INTERRUPTED:
        return {"result": None}
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        raise EvaluationFailed("The result is not JSON-serialisable.", session_id=state.session_id) from None
    return {"result": value}


TOOLS = [
    SessionTool(
        name="click",
        title="Click element",
        description="Click an element by CSS/XPath selector or snapshot ref.",
        input_schema=session_schema({
            **TARGET,
            "timeout": TIMEOUT,
            "force": schema.boolean("Skip actionability checks (visible, enabled, not covered)."),
            "clickCount": schema.integer("Number of clicks, 2 for a double click.", minimum=1, maximum=3),
        }),
        handler=click,
        positional=("selector",),
        changes_page=True,
        output_schema=SUCCESS_MESSAGE,
    ),
    SessionTool(
        name="type",
        title="Type text",
        description="Type into an input, textarea or contenteditable. Replaces its content unless clear is "
                    "false; submit presses Enter after.",
        input_schema=session_schema({
            **TARGET,
            "text": schema.string("Text to enter."),
            "delay": schema.integer("Milliseconds between key presses; 0 fills at once.",
                                    minimum=0, maximum=1000),
            "timeout": TIMEOUT,
            "clear": schema.boolean("Replace the current content (default true); false appends."),
            "secret": schema.boolean("The text is a secret: never stored or shown in clear (automatic for "
                                     "password, one-time-code and card fields)."),
            "submit": schema.boolean("Press Enter afterwards (submit a search box or form)."),
        }, required=("text",)),
        handler=type_text,
        positional=("selector", "text"),
        may_carry_secret=True,
        changes_page=True,
        output_schema=SUCCESS_MESSAGE,
    ),
    SessionTool(
        name="select",
        title="Select option",
        description="Choose options in a <select> by value or by visible label.",
        input_schema=session_schema({
            **TARGET,
            "values": {"type": "array", "items": {"type": "string"}, "description": "Option values."},
            "labels": {"type": "array", "items": {"type": "string"}, "description": "Option labels."},
            "timeout": TIMEOUT,
        }),
        handler=select,
        positional=("selector",),
        changes_page=True,
        output_schema={
            "type": "object",
            "properties": {"success": {"type": "boolean"}, "message": {"type": "string"},
                           "selected": {"type": "array", "items": {"type": "string"}}},
            "required": ["success", "message", "selected"],
        },
    ),
    SessionTool(
        name="hover",
        title="Hover element",
        description="Move the mouse over an element.",
        input_schema=session_schema({**TARGET, "timeout": TIMEOUT,
                                     "force": schema.boolean("Skip actionability checks.")}),
        handler=hover,
        positional=("selector",),
        changes_page=True,
        output_schema=SUCCESS_MESSAGE,
    ),
    SessionTool(
        name="press_key",
        title="Press key",
        description="Press a key or chord (Enter, ArrowDown, Control+a) on an element or the page.",
        input_schema=session_schema({
            "key": schema.string("Key name as in Playwright's keyboard.press.", minLength=1),
            **TARGET,
            "timeout": TIMEOUT,
        }, required=("key",)),
        handler=press_key,
        changes_page=True,
        output_schema=SUCCESS_MESSAGE,
    ),
    SessionTool(
        name="upload_file",
        title="Upload files",
        description="Set files on a file input. Only files under the server's --upload-dir.",
        input_schema=session_schema({
            **TARGET,
            "paths": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1,
                      "description": "Absolute paths of files under an allowed upload directory."},
            "timeout": TIMEOUT,
        }, required=("paths",)),
        handler=upload_file,
        positional=("selector", "paths"),
        changes_page=True,
        output_schema=SUCCESS_MESSAGE,
        enabled=lambda config: bool(config.upload_dir),
    ),
    SessionTool(
        name="handle_dialog",
        title="Answer dialog",
        description="Accept or dismiss the open alert, confirm or prompt dialog.",
        input_schema=session_schema({
            "accept": schema.boolean("true to accept (OK), false to dismiss (Cancel)."),
            "promptText": schema.string("Text to enter in a prompt before accepting."),
        }, required=("accept",)),
        handler=handle_dialog,
        changes_page=True,
        page_tool=False,
        output_schema=SUCCESS_MESSAGE,
    ),
    SessionTool(
        name="evaluate",
        title="Evaluate JavaScript",
        description="Evaluate a JavaScript expression or function in the page; returns its JSON value.",
        input_schema=session_schema({
            "expression": schema.string("Expression, or a function such as () => document.title.",
                                        minLength=1),
        }, required=("expression",)),
        handler=evaluate,
        changes_page=True,
        destructive=True,
        enabled=lambda config: config.allow_evaluate,
        output_schema={"type": "object", "properties": {"result": {}}, "required": ["result"]},
    ),
]
