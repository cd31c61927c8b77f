"""One call's end: the `Outcome` it finishes into, scrubbed of its session's secret book here and nowhere else,
and the three renderings of it: the agent's content blocks (`for_agent`), the library's dict or exception
(`for_library`), the history's rows (`history_request`, `for_history`).

ANY THREAD: `finish` runs where a call ends (a session thread, a core pool thread, the dispatcher, the
watchdog); the renderings on whoever reads the Outcome. The result stays whole for the library and the
history; the model pays for every character, so its view leaves out what it does not need."""

import base64
import json
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from mcpbrowser.errors import BrowserError, BrowserServerError, InputRequired, as_server_error
from mcpbrowser.page_strings import a_, clip, clip_answer, crashed_with
from mcpbrowser.redaction import REDACTED, scrub_text, scrub_value
from mcpbrowser.schema import compact_json


@dataclass(frozen=True)
class Outcome:
    """One finished call as plain data, scrubbed of its secret book: what its three renderings read."""

    ref_id: str | None
    result: Mapping[str, Any] | None        # what it answered (None: it failed)
    error: BrowserServerError | None        # why it failed, its class decided (None: it succeeded)
    meta: Mapping[str, Any]                 # {tool, hasSnapshot, hasConsoleLogs, consoleErrorCount, ...}
    expires_at: int | None = None           # its session's expiry after this call renewed it (epoch ms)
    not_recorded: Mapping[str, Any] | None = None  # why its refId reads nothing back, when it does not
    cancelled: bool = False                 # the server shut down before it ran


def finish(call: Any, result: dict[str, Any] | None = None, error: BaseException | None = None,
           shown: Any = ()) -> Outcome:
    """The one end of a call: its result, or its failure classified (as_server_error), scrubbed once of its
    secret book but for the values in `shown` (asked for by name: shown in this answer alone)."""
    secrets = [s for s in call.secrets if s not in shown] if shown else call.secrets
    fault = call.not_recorded()
    meta = _meta(call, error is None, fault)
    if error is not None:
        failure = as_server_error(error)
        if secrets:  # the message and details quote the page (a dialog's text, an option, a URL)
            failure.message = scrub_text(failure.message, secrets)
            failure.args = (failure.message,)
            if failure.details:
                failure.details = scrub_value(failure.details, secrets)
        failure.ref_id, failure.meta = call.ref_id, meta  # the library's exception carries them
        return Outcome(call.ref_id, None, failure, meta, call.expires_at, fault)
    return Outcome(call.ref_id, scrub_value(result, secrets), None, meta, call.expires_at, fault)


def _meta(call: Any, succeeded: bool, fault: Mapping[str, Any] | None) -> dict[str, Any]:
    console = call.console or []
    # Every tab's console lines that came during the call, not only the answered tab's: meta describes the call's
    # record, and get_console_content(refId) gives those lines (the history keeps every tab's, each error with its
    # location), so the count is what that read finds. A popup's error while the agent works in its opener (a
    # sign-in failing) is news it must not miss; console_logs, the current tab's, counts it as otherTabs.
    out = {"tool": call.tool, "hasSnapshot": call.capture and succeeded, "hasConsoleLogs": bool(console),
           "consoleErrorCount": sum(1 for e in console if e["level"] == "error")}
    if call.same_page:
        out["samePage"] = True
    if fault is not None:
        out.update(hasSnapshot=False, recorded=False, notRecorded=fault)
    return out


def outcome_of(fut: Future) -> Outcome:
    """The Outcome a call's Future holds, or one of what ended it before the core could finish it: the server
    shutting down (it cancels a queued call), the session closed under a queued call (its worker's error)."""
    if fut.cancelled():  # only shutdown cancels a call the client did not cancel
        error: BrowserServerError = BrowserError("The server is shutting down.")
    else:
        exc = fut.exception()
        if exc is None:
            return fut.result()
        error = as_server_error(exc)
    return Outcome(error.ref_id, None, error, error.meta or {}, cancelled=fut.cancelled())


def for_library(outcome: Outcome) -> dict[str, Any]:
    """The library's rendering: the result whole with its refId, meta and expiry; a failure raises its error."""
    if outcome.error is not None:
        raise outcome.error
    out = dict(outcome.result or {})
    if outcome.expires_at is not None:
        out["expiresAt"] = outcome.expires_at
    out["refId"] = outcome.ref_id
    out["meta"] = dict(outcome.meta)
    if outcome.not_recorded is not None:
        out["notRecorded"] = outcome.not_recorded  # meta is not always shown to the model: this is
    return out


def library_future(fut: Future) -> Future:
    """A Future of the library's rendering of a call's Future; cancelling it cancels the call while queued."""
    out: Future = Future()
    keep_cancel = out.cancel

    def done(f: Future) -> None:
        if f.cancelled():
            keep_cancel()
            return
        try:
            out.set_result(for_library(outcome_of(f)))
        except BaseException as exc:
            out.set_exception(exc)

    out.cancel = fut.cancel  # type: ignore[method-assign]
    fut.add_done_callback(done)
    return out


def progress_to(caller: Any, secrets: Any) -> Any:
    """How a long call is going, told its caller without the values of its secret book (a step names a URL)."""
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
        where = f" in tab {dialog['tab']}" if "tab" in dialog else ""  # another tab's, which froze this one too
        result["message"] += (f"; {a_(dialog['type'])} dialog opened{where} ({clip(dialog['message'])!r}): "
                              "answer it with handle_dialog")
    for other in news.get("tabDialogs", ()):
        result["message"] += (f"; tab {other['tab']} has {a_(other['type'])} dialog open ({clip(other['message'])!r}): "
                              "handle_dialog answers it")
    for crash in news.get("crashedTabs", ()):
        result["message"] += (f"; tab {crash['tab']} crashed{crashed_with(crash.get('dialog'))}: close it, or "
                              "select it for a fresh page")
    if "newTabs" in news:
        count = news["newTabs"]
        result["message"] += f"; the page opened {count} new tab{'s' if count > 1 else ''}: see tabs"
    if "tabReplaced" in news:
        result["message"] += ("; the tab was held by its page (a dialog loop or a script that never yields), "
                              "so it was closed and this is a fresh tab (same cookies and storage, no back history)")
    if "dialogsDismissed" in news:
        result["message"] += (f"; the server dismissed {news['dialogsDismissed']} dialog(s) itself "
                              "(a dialog loop, or dialogs in the way of leaving the page)")
    if "closedTabs" in news:
        result["message"] += f"; {closed_tabs(news)}"
    return result


def closed_tabs(news: dict[str, Any]) -> str:
    """What `closedTabs` (and `currentTab`) tell, in words: tabs whose pages closed themselves (window.close)."""
    count = news["closedTabs"]
    closed = "a page closed its own tab" if count == 1 else f"pages closed {count} tabs themselves"
    if "currentTab" in news:
        return f"{closed}{'' if count == 1 else ', the current one among them'}: this is tab {news['currentTab']}"
    return f"{closed} (not this one): see tabs"


def told_meanwhile(error: BrowserServerError, count: int, closes: dict[str, Any]) -> BrowserServerError:
    """A failed call's error, with the dialogs the server dismissed (`count`) and the tabs that closed themselves
    (`closes`: SessionState.closes_untold) since the last answer."""
    if count:
        error.details = {**(error.details or {}), "dialogsDismissed": count}
        error.message += (f" (Meanwhile the server dismissed {count} dialog(s) itself: a dialog loop, or dialogs "
                          "in the way of leaving the page.)")
    if closes:
        error.details = {**(error.details or {}), **closes}
        error.message += f" (Meanwhile {closed_tabs(closes)}.)"
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


def for_history(outcome: Outcome, page: str | None, console: list[dict[str, Any]],
                secrets: Any) -> tuple[str, dict[str, Any] | None, str | None, str | None, Any]:
    """The history's rendering: (status, result, error, page, console) as the call's response row keeps them.
    A secret may be learned after the answer (and one asked for by name is shown in its answer alone), so all
    of it is scrubbed again of the book as it stands now; the result without its image."""
    console = scrub_value(console, secrets)
    page = scrub_text(page, secrets) if page is not None else None
    if outcome.cancelled:
        return "cancelled", None, None, page, console
    if outcome.error is not None:
        return "error", None, json.dumps(scrub_value(outcome.error.to_dict(), secrets)), page, console
    kept = {k: v for k, v in for_library(outcome).items() if k != "image"}
    return "ok", scrub_value(kept, secrets), None, page, console


def for_agent(tool: Any, outcome: Outcome, sent: str | None = None) -> tuple[list[dict[str, Any]], Any, bool]:
    """The agent's rendering: (content blocks, the result as answered, whether it failed); `sent`: the sessionId
    its arguments named. Raises InputRequired: a question for its user, which the transport asks its own way."""
    if outcome.error is not None:
        if isinstance(outcome.error, InputRequired):
            raise outcome.error
        return failed(outcome.error, sent)
    value = for_library(outcome)
    content = []
    if tool.returns_image:
        image = value.pop("image")
        content.append({"type": "image", "data": base64.b64encode(image).decode("ascii"),
                        "mimeType": f"image/{value['format']}"})
    value = clip_answer(value, tool.text_field)  # the history keeps the call's own result whole
    shown = agent_view(value, tool.shows_expiry)
    field = tool.text_field
    if field is not None and isinstance(shown.get(field), str) and shown[field]:
        # Page text goes as it is, in a block of its own: inside JSON every line break and quote costs an escape.
        content[0:0] = [{"type": "text", "text": compact_json({k: v for k, v in shown.items() if k != field})},
                        {"type": "text", "text": shown[field]}]
    else:
        content.insert(0, {"type": "text", "text": compact_json(shown)})
    return content, value, False


def failed(exc: BrowserServerError, sent: str | None = None) -> tuple[list[dict[str, Any]], None, bool]:
    """The content of a failed call's answer: its error object as the model reads it."""
    return [{"type": "text", "text": compact_json(clip_answer(agent_error(exc.to_dict(), sent)))}], None, True


def agent_view(value, shows_expiry):
    """What the model reads of an answer: `meta` only when the call logged to the console, no content hash,
    `expiresAt` only when the tool `shows_expiry`, a snapshot's url and title not when the agent's previous
    answer named the same (`meta.samePage`). All stay in structuredContent and the history."""
    meta = value["meta"]  # for_library's: always there
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
    """What the model reads of a failed call's error object: without `meta` unless the call logged to the
    console or could not be recorded, the `sessionId` the agent sent, and the `details` that the message
    quotes whole (_ECHOES); the documented fields (`cause`, `domain`, `retryAfterMs`, ...) always stay."""
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


# Details a message may quote whole: the selector, Playwright's words, the schema's list, the ref, the refId
# and the wait the agent sent, an open dialog's type and text.
_ECHOES = ("target", "reason", "problems", "ref", "refId", "waitedFor", "type", "message")


def _quoted(value, message):
    texts = value if isinstance(value, list) else [value]
    return bool(texts) and all(isinstance(text, str) and text and text in message for text in texts)
