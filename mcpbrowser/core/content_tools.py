"""Reading the history: stored page snapshots with diff cursors, and console entries per call.

Handlers run on the core pool and read the store; they never touch a page. Diff cursors are per session,
in the database: a call's snapshot reads as what changed since the one this session's reader last read."""

import difflib
import hashlib
import re
import time

from mcpbrowser import schema
from mcpbrowser.errors import ContentNotFound, FileRemoved
from mcpbrowser.session.snapshots import HUGE_ELEMENTS
from mcpbrowser.snapshot_text import REF
from mcpbrowser.tools.base import CoreTool

# No description: initialize's instructions say where a refId comes from, and a model reads this every turn.
REF_ID = {"type": "string", "minLength": 1}
SEARCH_CONTEXT = 2  # lines kept around each match
ELEMENT_REF = re.compile(r"(f\d+)?e\d+")  # a snapshot's ref, near in name to a call's refId


def _stored(core, ref_id, call):
    """What the history holds of a call (History.stored_call); a client sees only its own calls: the call's row
    names its client, else its session's owner counts. Another client's refId answers as one never handed out."""
    core.recorder.wait_recorded(ref_id)
    stored = core.history.stored_call(ref_id)
    if stored is not None and call.owner is not None:
        owner = stored["owner"]
        if owner is None and stored["sessionId"] is not None:
            owner = core.registry.owner_of(stored["sessionId"])
        if owner != call.owner:
            stored = None
    if stored is None:
        mixed_up = " It is an element's ref (from a snapshot); give the refId an answer carries." \
            if ELEMENT_REF.fullmatch(ref_id) else ""
        raise ContentNotFound(f"No call has refId {ref_id!r}.{mixed_up}", details={"refId": ref_id})
    return stored


def _no_page(core, ref_id, stored):
    """Why a call that exists has no page to read: exactly what it did store."""
    call = f"Call {ref_id} ({stored['tool']})"
    status = stored["status"]
    if status is None:
        return f"{call} has no answer in the history: it is still running, or its server stopped before it " \
               "answered. It stored no page."
    if stored["unrecorded"] is not None:
        return f"{call} was not recorded whole ({stored['unrecorded']}): the history keeps that it ran and how " \
               "it ended, and no page."
    if stored["sessionId"] is None:
        opened = " The page it opened (its url) is under its answer's pageRefId." \
            if stored["tool"] == "create_session" else ""
        return f"{call} ran without a session, so it stored no page: the history keeps its request and its " \
               f"answer. Pages are stored by calls in a session.{opened}"
    if status == "cancelled":
        return f"{call} was cancelled, and stored no page."
    if status == "error":
        code = f" ({stored['errorCode']})" if stored["errorCode"] else ""
        return f"{call} failed{code}, and stored no page: a page is stored after a call that succeeded."
    which = "snapshot and wait_for do (--response-mode lean)" if core.config.response_mode == "lean" else \
        "successful page-changing calls (navigate, click, type, …), snapshot and wait_for do"
    return (f"{call} stored no page snapshot; {which}, unless the page was too large to capture after a call "
            f"(over {HUGE_ELEMENTS:,} elements: read it with snapshot and a selector), behind a dialog, not "
            "answering, or closed by its own page first.")


def _search(lines, term):
    needle = term.lower()
    hits = [i for i, line in enumerate(lines) if needle in line.lower()]
    keep = sorted({j for i in hits for j in range(max(0, i - SEARCH_CONTEXT), min(len(lines), i + SEARCH_CONTEXT + 1))})
    out, previous = [], None
    for j in keep:
        if previous is not None and j != previous + 1:
            out.append("--")
        out.append(lines[j])
        previous = j
    return "\n".join(out), len(hits)


def _diff(old, new):
    """Changed lines, compared without their [ref=…] markers (renumbered per document); added lines keep theirs."""
    matcher = difflib.SequenceMatcher(None, [REF.sub("", line) for line in old],
                                      [REF.sub("", line) for line in new], autojunk=False)
    out = []
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            continue
        out.append(f"@@ -{a1 + 1},{a2 - a1} +{b1 + 1},{b2 - b1} @@")
        out += ["-" + REF.sub("", line) for line in old[a1:a2]]
        out += ["+" + line for line in new[b1:b2]]
    return "\n".join(out)


def get_content(core, args, call):
    ref_id = args["ref_id"]
    stored = _stored(core, ref_id, call)
    session_id, blob = stored["sessionId"], stored["page"]
    removed = core.history.removed_files(ref_id)
    if blob is None and removed:
        flag = "--retention-days" if removed[0]["reason"] == "retention_days" else "--files-max-mb"
        raise FileRemoved(f"The file this call saved, {removed[0]['path']}, was removed by the server's file "
                          f"retention ({flag}); the call stored no page snapshot either.",
                          details={"refId": ref_id, "files": removed})
    if blob is None:
        raise ContentNotFound(_no_page(core, ref_id, stored), details={"refId": ref_id})
    text = blob.decode()
    digest = hashlib.sha256(blob).hexdigest()
    lines = text.splitlines()
    if "search_for" in args:  # a search reads part of the page: it leaves the cursor alone
        content, matches = _search(lines, args["search_for"])
        return {"refId": ref_id, "mode": "search", "content": content, "matches": matches, "hash": digest}
    baseline = None if args.get("reset_cursor") else core.history.last_read(session_id)
    if baseline is None:
        mode, content = "full", text
    elif baseline[0] == digest:
        mode, content = "diff", ""  # nothing changed: an empty diff, not an error
    else:
        mode, content = "diff", _diff((baseline[1] or b"").decode().splitlines(), lines)
        # Past half the page's size a diff (after moving to another page) is harder to read than the page.
        if len(content) * 2 > len(text):
            mode, content = "full", text
    core.history.mark_read(ref_id, len(lines), digest)
    return {"refId": ref_id, "mode": mode, "content": content, "hash": digest, "lines": len(lines),
            **({"filesRemoved": removed} if removed else {})}


def get_console_content(core, args, call):
    ref_id = args["ref_id"]
    _stored(core, ref_id, call)
    rows = core.history.console_entries(ref_id, args.get("level"))
    text = "\n".join(
        f"[{time.strftime('%H:%M:%S', time.localtime(ts / 1000))}.{ts % 1000:03d}] {level.upper()} "
        f"{message}" + (f" ({location})" if location else "")
        for ts, level, message, location in rows)
    return {"refId": ref_id, "content": text, "count": len(rows)}


TOOLS = [
    CoreTool(
        name="get_content", text_field="content", title="Get stored page content",
        description="A call's stored page snapshot: whole at first, then what changed since your last read "
                    "(reset_cursor: whole again); search_for: lines with this plain text, in context.",
        input_schema=schema.obj({
            "ref_id": REF_ID,
            "search_for": {"type": "string", "minLength": 1},
            "reset_cursor": {"type": "boolean"},
        }, required=("ref_id",)),
        handler=get_content, read_only=True,
        output_schema=schema.result({"refId": {"type": "string"}, "content": {"type": "string"},
                                     "mode": {"type": "string", "enum": ["full", "diff", "search"]}},
                                    ("refId", "content", "mode")),
    ),
    CoreTool(
        name="get_console_content", group="extra", text_field="content", title="Get stored console entries",
        description="Console entries recorded during a call (by refId), one per line.",
        input_schema=schema.obj({
            "ref_id": REF_ID,
            "level": {"type": "string", "enum": ["log", "debug", "info", "warning", "error"]},
        }, required=("ref_id",)),
        handler=get_console_content, read_only=True, idempotent=True,
        output_schema=schema.result({"refId": {"type": "string"}, "content": {"type": "string"},
                                     "count": {"type": "integer"}}, ("refId", "content", "count")),
    ),
]
