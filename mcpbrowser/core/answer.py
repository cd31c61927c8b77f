"""What a finished call leaves, scrubbed of its session's secret book here and nowhere else: its answer's
content blocks (what the agent reads), its result and error (the library's), its rows (the history's).

ANY THREAD: whoever answers the call's Future (its session thread, or a core pool thread, through the
transport's done-callback), and the recorder. The call's result stays whole for the library (`Browser.call`'s dict) and
the history's row; the model pays for every character it reads, so its view leaves out what it does
not need (agent_view, agent_error), cuts the page's own long fields (page_strings.clip_answer), and
gives page text a block of its own. The transports wrap what this renders in their protocol's
envelope (transports/tool_methods.py: an MCP tools/call result, with structuredContent where the
protocol era has it) and decide nothing of it.
"""

import base64
import json
from concurrent.futures import Future
from typing import Any

from mcpbrowser.errors import BrowserError, BrowserServerError, InputRequired, as_server_error
from mcpbrowser.page_strings import a_, clip, clip_answer
from mcpbrowser.redaction import REDACTED, scrub_text, scrub_value
from mcpbrowser.schema import compact_json


def scrubbed(result: dict[str, Any], secrets: Any) -> dict[str, Any]:
    """A call's result as it leaves (the answer, the library's dict): without the values of its secret book."""
    return scrub_value(result, secrets)


def scrubbed_error(error: BrowserServerError, secrets: Any) -> BrowserServerError:
    """A call's error as it leaves, its message and details without the values of its secret book: they quote
    the page's text (a dialog's, an option's, a URL), which may show one, as an answer may."""
    if secrets:
        error.message = scrub_text(error.message, secrets)
        error.args = (error.message,)
        if error.details:
            error.details = scrub_value(error.details, secrets)
    return error


def progress_to(caller: Any, secrets: Any) -> Any:
    """How a long call is going, told its caller without the values of its secret book (a step names the URL
    it loads, the message the person was shown)."""
    return lambda done, total, message: caller.progress(done, total, scrub_text(message, secrets))


def with_news(result: dict[str, Any], news: dict[str, Any]) -> dict[str, Any]:
    """The answer with what the page did that the agent was not told (Response.page_news): each a field, and
    where the answer has a message, a clause of it saying what to do."""
    result = {**result, **news}
    if "message" not in result:
        return result
    if "pageUnresponsive" in news:
        result["message"] += "; the page has not answered since (a script of its own keeps it busy): navigate elsewhere"
    if "dialog" in news:
        dialog = news["dialog"]
        result["message"] += (f"; {a_(dialog['type'])} dialog opened ({clip(dialog['message'])!r}): "
                              "answer it with handle_dialog")
    if "newTabs" in news:
        count = news["newTabs"]
        result["message"] += f"; the page opened {count} new tab{'s' if count > 1 else ''}: see tabs"
    if "tabReplaced" in news:
        result["message"] += ("; the tab was held by its page (a dialog loop or a script that never yields), "
                              "so it was closed and this is a fresh tab (same cookies and storage, no back history)")
    if "dialogsDismissed" in news:
        result["message"] += (f"; the server dismissed {news['dialogsDismissed']} dialog(s) itself "
                              "(a dialog loop, or dialogs in the way of leaving the page)")
    return result


def told_dismissals(error: BrowserServerError, count: int) -> BrowserServerError:
    """A failed call's error, with the dialogs the server dismissed since the last answer (`count`)."""
    if count:
        error.details = {**(error.details or {}), "dialogsDismissed": count}
        error.message += (f" (Meanwhile the server dismissed {count} dialog(s) itself: a dialog loop, or dialogs "
                          "in the way of leaving the page.)")
    return error


def history_request(args: Any, secret: bool, secrets: Any) -> dict[str, Any]:
    """A call's arguments as its request row keeps them: known secrets scrubbed, a secret `text` (or a cookie's
    or a storage entry's `value`) withheld."""
    params = scrub_value(dict(args) if isinstance(args, dict) else {"arguments": args}, secrets)
    for key in ("text", "value"):  # a typed text, a cookie's or a storage entry's value
        if (params.get("secret") or secret) and key in params:
            params[key] = REDACTED
    if isinstance(params.get("fields"), list):
        # fill_form: a field may turn out to be a password only once it is reached, and a call that
        # fails before it would be recorded first, so no field's value is kept.
        params["fields"] = [{**f, "value": REDACTED} if isinstance(f, dict) and "value" in f else f
                            for f in params["fields"]]
    return params


def history_response(fut: Future, snapshot: str | None, console: list[dict[str, Any]],
                     secrets: Any) -> tuple[str, dict[str, Any] | None, str | None, str | None, Any]:
    """(status, result, error, page, console) of a finished call (its Future) as its response row keeps them,
    scrubbed of its book: the console's messages and locations (a URL may carry a secret), the error whole
    (to_dict), the result without its image, and the page, redacted as it was captured, of a secret learned
    since too."""
    console = scrub_value(console, secrets)
    page = scrub_text(snapshot, secrets) if snapshot is not None else None
    if fut.cancelled():
        return "cancelled", None, None, page, console
    exc = fut.exception()
    if exc is not None:
        error = json.dumps(scrub_value(exc.to_dict(), secrets)) if isinstance(exc, BrowserServerError) \
            else scrub_text(str(exc), secrets)
        return "error", None, error, page, console
    return "ok", scrub_value({k: v for k, v in fut.result().items() if k != "image"}, secrets), None, page, console


def rendered(tool: Any, fut: Future, sent: str | None = None) -> tuple[list[dict[str, Any]], Any, bool]:
    """(content blocks, the call's result as answered, whether it failed) of a finished call; `sent`: the
    sessionId its arguments named. Raises InputRequired: a question for its user, which the transport asks
    its own way."""
    if fut.cancelled():  # only shutdown cancels a call the client did not cancel
        return failed(BrowserError("The server is shutting down."), sent)
    try:
        value = fut.result()
    except InputRequired:
        raise
    except Exception as exc:  # a bug of ours is INTERNAL_ERROR, its traceback logged by the dispatcher
        return failed(as_server_error(exc), sent)
    content = []
    if tool.returns_image:
        image = value["image"]
        value = {k: v for k, v in value.items() if k != "image"}
        content.append({"type": "image", "data": base64.b64encode(image).decode("ascii"),
                        "mimeType": f"image/{value['format']}"})
    value = clip_answer(value, tool.text_field)  # the history keeps the call's own result whole
    shown = agent_view(value, tool.shows_expiry)
    field = tool.text_field
    if field is not None and isinstance(shown.get(field), str) and shown[field]:
        # Page text goes as it is, in a block of its own: inside JSON every line
        # break and quote would cost the agent an escape (about 9% of a snapshot).
        content[0:0] = [{"type": "text", "text": compact_json({k: v for k, v in shown.items() if k != field})},
                        {"type": "text", "text": shown[field]}]
    else:
        content.insert(0, {"type": "text", "text": compact_json(shown)})
    return content, value, False


def failed(exc: BrowserServerError, sent: str | None = None) -> tuple[list[dict[str, Any]], None, bool]:
    """The content of a failed call's answer: its error object as the model reads it."""
    return [{"type": "text", "text": compact_json(clip_answer(agent_error(exc.to_dict(), sent)))}], None, True


def agent_view(value, shows_expiry=False):
    """What the model reads of an answer (it pays for every character).

    `meta` is there only when the call logged to the console (its counts are then
    worth a look with get_console_content); a content hash is for machines;
    `expiresAt` only when the tool `shows_expiry`; a snapshot's url and title not
    when the agent's previous answer on the session named the same (`meta.samePage`).
    All stay in structuredContent, and in the history, whole.
    """
    meta = value.get("meta")
    if meta is None:
        return {k: v for k, v in value.items() if k != "hash"} if "hash" in value else value
    drop = {"hash"}
    if not meta.get("hasConsoleLogs"):
        drop.add("meta")
    if not shows_expiry:
        drop.add("expiresAt")
    if meta.get("samePage"):
        drop.update(("url", "title"))
    shown = {k: v for k, v in value.items() if k not in drop}
    if isinstance(shown.get("navigationError"), dict):  # create_session's: the session is the answer's own
        shown["navigationError"] = agent_error(shown["navigationError"], value.get("sessionId"))
    return shown


def agent_error(error, sent=None):
    """What the model reads of a failed call's error object (it pays for every character).

    Left out, as agent_view leaves them out of an answer: `meta` unless the call logged to the
    console or could not be recorded, and the `sessionId` the agent sent. Of `details`, the echoes
    that the message already quotes whole (`target`, the selector; `reason`, Playwright's words;
    `problems`, the schema's list; `ref`, `refId`, `waitedFor`; a dialog's `type` and `message`);
    the documented fields (`cause`, `domain`, `retryAfterMs`, ...) always stay. The history keeps
    the whole object (the response row's error), and the library's exceptions carry every field.
    """
    meta = error.get("meta") or {}
    quiet = not meta.get("hasConsoleLogs") and meta.get("recorded", True)
    out = {k: v for k, v in error.items() if not (k == "sessionId" and v == sent) and not (k == "meta" and quiet)}
    details = out.get("details")
    if isinstance(details, dict):
        kept = {k: v for k, v in details.items() if k not in _ECHOES or not _quoted(v, out.get("message") or "")}
        if kept:
            out["details"] = kept
        else:
            del out["details"]
    return out


# Details a message may quote whole: the selector, Playwright's words, the schema's list, the ref,
# the refId and the wait the agent sent, and an open dialog's type and text (DIALOG_OPEN names it).
_ECHOES = ("target", "reason", "problems", "ref", "refId", "waitedFor", "type", "message")


def _quoted(value, message):
    texts = value if isinstance(value, list) else [value]
    return bool(texts) and all(isinstance(text, str) and text and text in message for text in texts)
