"""Page capture: aria snapshot with refs, DOM serialisation, screenshots; handlers run on the session thread."""

import os
import struct
import time
import uuid
from contextlib import suppress
from pathlib import Path

from mcpbrowser import schema, snapshot_text
from mcpbrowser.errors import (
    BrowserError,
    BrowserServerError,
    ElementNotClickable,
    InvalidParameters,
    disk_fault,
    not_stored,
)
from mcpbrowser.logs import log
from mcpbrowser.redaction import JS_IS_SECRET, MIN_SCRUBBED, SECRET_FIELD, secret_values
from mcpbrowser.session import page_reading, playwright_internals, snapshots
from mcpbrowser.session.acting import INTERRUPTED
from mcpbrowser.session.downloads import partial
from mcpbrowser.tools.base import SUCCESS_MESSAGE, TARGET, TIMEOUT, SessionTool, result_schema, session_schema
from mcpbrowser.tools.targeting import Act, locate, on_element
from mcpbrowser.trace_scrub import artifact_roots, scrub_leftovers, scrub_trace

DEFAULT_MAX_NODES = 1000  # about 30k characters of YAML: a page an agent can still read whole
DEFAULT_MATCHES = 30  # different matches a query shows unless maxNodes says otherwise
MAX_NODES = schema.integer(f"Default {DEFAULT_MAX_NODES} (section {snapshot_text.SECTION_NODES}, "
                           f"{DEFAULT_MATCHES} a query term).", minimum=1, maximum=100_000)

# The DOM below `root` as indented HTML, stopping after `limit` nodes (elements and non-blank text);
# script and style bodies left out: they cost tokens and say nothing about what is on the page.
DOM_SERIALISER = """([root, limit]) => {
  """ + JS_IS_SECRET + """
  const out = []; let shown = 0, total = 0;
  const quiet = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE']);
  const esc = s => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
  const cut = (s, n) => s.length > n ? s.slice(0, n) + '…' : s;
  function walk(node, depth) {
    const pad = '  '.repeat(depth);
    if (node.nodeType === Node.TEXT_NODE) {
      const text = node.textContent.trim();
      if (!text) return;
      total++;
      if (shown < limit) { shown++; out.push(pad + esc(cut(text, 500))); }
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    total++;
    const tag = node.tagName.toLowerCase();
    const open = shown < limit;
    if (open) {
      shown++;
      const hide = isSecret(node);  // a secret field's value attribute is not shown
      const attrs = Array.from(node.attributes, a =>
        ` ${a.name}="${hide && a.name === 'value' ? '[REDACTED]' : esc(cut(a.value, 200))}"`).join('');
      out.push(`${pad}<${tag}${attrs}>`);
    }
    if (!quiet.has(node.tagName)) {
      const kids = node.shadowRoot ? [...node.shadowRoot.childNodes, ...node.childNodes] : node.childNodes;
      for (const child of kids) walk(child, depth + 1);
      if (tag === 'iframe') {
        try { if (node.contentDocument) walk(node.contentDocument.documentElement, depth + 1); } catch (e) {}
      }
    }
    if (open && shown < limit) out.push(`${pad}</${tag}>`);
  }
  walk(root || document.documentElement, 0);
  return {html: out.join('\\n'), nodes: shown, totalNodes: total};
}"""


# A page whose walk is expected (at WALK_MS_PER_ELEMENT) to outlast the navigation timeout is not walked; one
# that is walked is given WALK_BUDGET_MS per element (5x its cost: a loaded machine), up to 1.5x the navigation
# timeout, below the watchdog's budget.
WALK_MS_PER_ELEMENT = 0.25
WALK_BUDGET_MS = 0.5


def _whole_walk(state, options, refuse):
    """(options, huge) for walking the whole page. A page of more than HUGE_ELEMENTS is given the time
    its walk needs; one whose walk would outlast the navigation timeout is refused (when `refuse`),
    with what to read instead: a walk, once started, runs on in the page, which would look hung."""
    count = page_reading.element_count(state)
    if count is None or count <= snapshots.HUGE_ELEMENTS:
        return options, False
    need_ms = round(count * WALK_MS_PER_ELEMENT)
    if refuse and need_ms > state.config.navigation_timeout:
        raise InvalidParameters(
            f"The page has {count:,} elements: a snapshot of all of it would keep the page busy for about "
            f"{need_ms // 1000} s. Read a part of it: snapshot with a selector (a list, a table, main), "
            "or wait_for/click by text.", session_id=state.session_id, details={"elements": count})
    # An element's subtree is at most the page: its read gets as long.
    budget_ms = min(count * WALK_BUDGET_MS, state.config.navigation_timeout * 1.5)
    return {**options, "timeout": max(state.config.action_timeout, round(budget_ms))}, True


def snapshot(state, args, response):
    limit = args.get("maxNodes", DEFAULT_MAX_NODES)
    options = {"mode": "ai"}
    if "depth" in args:
        options["depth"] = args["depth"]
    page_level = locate(state, args, required=False)[1] is None
    # A ref is read from the page's whole snapshot, without walking the page again when it did not change.
    by_ref = "ref" in args and "depth" not in args
    whole, title = snapshots.unchanged_snapshot(state, response) if (page_level or by_ref) and "depth" not in args \
        else (None, None)
    if whole is None:
        options, huge = _whole_walk(state, options, refuse=page_level)
        by_ref = by_ref and not huge  # a ref on a huge page: its own element is read, not the page
    if whole is None and by_ref:
        state.tab.full_snapshot = None
        whole, title = snapshots.walk_page(state, options)
        whole = snapshots.took_whole_snapshot(state, "") if whole is INTERRUPTED else whole
    part = snapshot_text.section(whole, args["ref"], names=False) if by_ref and whole else None
    if by_ref and part is None:
        whole = None  # not in the page's snapshot (stale, or another tab's): the element read says why
    if whole is None:
        state.tab.full_snapshot = None  # Playwright's refs are this read's from now on
        title = None
        whole_page = page_level and "depth" not in args  # walk_page's text is taken as a whole snapshot
        if whole_page:
            text, title = snapshots.walk_page(state, options)
        elif page_level:
            text = state.act(snapshots.page_root(state), "aria_snapshot", **options)
        else:
            texts, walk_ms = [], options.pop("timeout", 0)  # a huge page's: its subtree may be huge too
            on_element(state, args, ElementNotClickable, lambda first, timeout: texts.append(state.act(
                first, "aria_snapshot", timeout=max(timeout, walk_ms), **options)))
            text = texts[0]
        if text is INTERRUPTED:
            whole = snapshots.took_snapshot(state, "")
        elif whole_page:
            whole = text
        else:
            whole = snapshots.took_snapshot(state, text)
    response.store_page(whole)  # the history keeps all of it: get_content(refId) reads it
    if title is None:  # else read with the check that the page did not change, and nothing was walked since
        title = page_reading.loaded_title(state)
    state.remember_page(title)
    result = {"url": state.tab.page.url, "title": title}
    if state.told == (result["url"], title):
        response.read_same_page()  # the agent was just told both: its view of the answer omits them
    if part is not None:
        whole = part
    if "section" in args:
        # What a heading, landmark or ref titles, in what was read; a query or the outline then narrows it.
        part = snapshot_text.section(whole, args["section"])
        if part is None:
            named = snapshot_text.titles(whole) or "no headings or named landmarks."
            response.answer({**result, "snapshot": f'No heading, landmark or ref is named "{args["section"]}". '
                                                   f"On this page: {named}", "matches": 0, "truncated": False})
            return
        whole, limit = part, args.get("maxNodes", snapshot_text.SECTION_NODES)
    if "query" in args:
        try:
            found, matches = snapshot_text.find(whole, args["query"], args.get("maxNodes", DEFAULT_MATCHES))
        except snapshot_text.QueryError as exc:
            raise InvalidParameters(str(exc), session_id=state.session_id) from None
        response.answer({**result, "snapshot": found, "matches": matches,
                         "truncated": matches > args.get("maxNodes", DEFAULT_MATCHES)})
        return
    if args.get("compact"):
        whole = snapshot_text.compact(whole)
    shown, nodes, total = snapshot_text.first_nodes(whole, limit)
    if total > nodes:
        response.answer({**result, "snapshot": shown, "nodes": nodes, "totalNodes": total, "truncated": True})
        return
    # A compact view that left a section's entries out is not the whole list either.
    left_out = bool(args.get("compact") and snapshot_text.MORE_LINE.search(shown))
    response.answer({**result, "snapshot": shown, "truncated": left_out})


def dom_snapshot(state, args, response):
    limit = args.get("maxNodes", DEFAULT_MAX_NODES)
    matches = locate(state, args, required=False)[1]
    root = None
    if matches is not None:
        handles = []
        on_element(state, args, ElementNotClickable,
                   lambda first, timeout: handles.append(first.element_handle(timeout=timeout)))
        root = handles[0]
    result = state.act(state.tab.page, "evaluate", expression=DOM_SERIALISER, arg=[root, limit])
    if result is INTERRUPTED:
        result = {"html": "", "nodes": 0, "totalNodes": 0}
    response.answer({**result, "truncated": result["totalNodes"] > result["nodes"], "url": state.tab.page.url})


def image_size(data):
    """(width, height) of PNG or JPEG bytes, read from the header."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return struct.unpack(">II", data[16:24])
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            i += 1
            continue
        marker, length = data[i + 1], struct.unpack(">H", data[i + 2:i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return width, height
        i += 2 + length
    raise ValueError("not a PNG or JPEG image")


def file_path(state, extension):
    """A new file's path in the server's files folder; the server names it, so nothing a client sends steers it."""
    folder = state.config.files_dir()
    try:  # its owner's only: traces, screenshots and exports show what the sessions saw
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise not_stored(disk_fault(folder + "/", exc), f"{folder} cannot be made, so nothing was saved.") from None
    state.files_saved += 1
    return os.path.join(folder, f"{time.strftime('%Y%m%d-%H%M%S')}-{state.session_id[:8]}-{state.files_saved}"
                                f".{extension}")


# A screenshot shows a one-time code or a card number as typed: while one is taken, every secret field
# (in every frame and open shadow root: Playwright applies the style there too) shows dots instead.
HIDE_SECRET_FIELDS = f"{SECRET_FIELD} {{ -webkit-text-security: disc !important; }}"


# A PDF likewise: while it prints, the style is in each frame's document and open shadow root (page.pdf
# has no `style` option), then taken out.
_MASK = """([css, on]) => {
  const roots = [document];
  for (let i = 0; i < roots.length; i++)
    for (const e of roots[i].querySelectorAll('*')) if (e.shadowRoot) roots.push(e.shadowRoot);
  for (const root of roots) {
    if (!on) { root.querySelectorAll('style[data-mcpbrowser-mask]').forEach(s => s.remove()); continue; }
    const style = document.createElement('style');
    style.dataset.mcpbrowserMask = '';
    style.textContent = css;
    (root === document ? document.head || document.documentElement : root).appendChild(style);
  }
}"""


def _mask_secret_fields(state, on):
    for frame in state.tab.page.frames:
        try:
            frame.evaluate(_MASK, [HIDE_SECRET_FIELDS, on])
        except Exception as exc:  # a frame that detached meanwhile prints nothing
            log.debug("secret fields not masked in a frame", extra={"session": state.session_id,
                                                                    "error": str(exc).splitlines()[0]})


def write_file(path, write):
    """Make a file whole or not at all: write(tmp) fills a temporary beside it, renamed when done. A failure
    to write leaves no partial file and raises DISK_FULL, or STORAGE_FAILED with its cause."""
    part = partial(path)
    try:
        write(part)
        os.chmod(part, 0o600)  # as the history database: what a session saw is its owner's only
        os.replace(part, path)
    except Exception as exc:
        with suppress(OSError):
            os.unlink(part)
        cause = disk_fault(path, exc)
        if cause is None:
            raise
        why = "the disk is full" if cause == "DISK_FULL" else f"it could not be written ({cause})"
        raise not_stored(cause, f"{os.path.basename(path)} was not saved: {why}.") from None


def pdf(state, args, response):
    if not state.chromium:
        raise InvalidParameters("pdf needs Chromium (this server runs another browser).", session_id=state.session_id)
    path = file_path(state, "pdf")
    _mask_secret_fields(state, True)
    try:
        data = state.tab.page.pdf(landscape=args.get("landscape", False),
                              print_background=args.get("printBackground", False))
    except Exception as exc:
        raise BrowserError(f"The page could not be printed: {str(exc).splitlines()[0]} (Chromium prints "
                           "only when headless).", session_id=state.session_id) from None
    finally:
        _mask_secret_fields(state, False)
    write_file(path, lambda part: Path(part).write_bytes(data))
    response.answer({"path": path, "bytes": len(data), "message": f"Saved the page as PDF to {path}."})


def trace_start(state, args, response):
    if state.tracing:
        raise InvalidParameters("A trace is already being recorded; stop it with trace_stop first.",
                                session_id=state.session_id)
    # A name of ours for the browser server's own files of this trace, which trace_stop removes.
    name = f"mcpbrowser-{uuid.uuid4().hex}"
    state.context.tracing.start(screenshots=args.get("screenshots", True), snapshots=args.get("snapshots", True),
                                sources=args.get("sources", False), title=state.session_id, name=name)
    state.tracing, state.traced_fields = name, set()
    response.answer({"success": True, "message": "Recording a trace of this session's pages; trace_stop saves it."})


def trace_stop(state, args, response):
    if not state.tracing:
        raise InvalidParameters("No trace is being recorded; start one with trace_start.", session_id=state.session_id)
    path, name = file_path(state, "zip"), state.tracing
    state.tracing = False
    # The secret fields' values its snapshots met, and their current ones (in its DOM snapshots and a form's
    # post): scrubbed from this trace, never learned (snapshots.redact_snapshot).
    fields = state.traced_fields | (secret_values(state.tab.page) if state.blocker is None else set())
    scrubbed = {*state.secrets, *(v for v in fields if len(v) >= MIN_SCRUBBED)}

    def write(part):
        playwright_internals.stop_trace_into(state.context, part)
        # Playwright records values as they were: the zip is rewritten without the secrets before it is named.
        scrub_trace(part, scrubbed, state.secrets.short | state.withheld | fields,
                    headers=state.config.redact_headers)

    write_file(path, write)
    try:
        scrub_leftovers(name, artifact_roots(), state.secrets)
    except OSError as exc:  # the zip is saved and scrubbed: say so, and let the operator know
        log.warning("a trace's raw files were not removed", extra={"event": "trace_leftovers",
                                                                    "session": state.session_id, "error": str(exc)})
    response.answer({"path": path, "bytes": os.path.getsize(path),
                     "message": f"Trace saved; open it with: playwright show-trace {path}"})


def screenshot(state, args, response):
    # A quality asks for a JPEG: only JPEG has one, so tools/list need not say so.
    fmt = args.get("format", "jpeg" if "quality" in args else "png")
    options = {"type": fmt, "style": HIDE_SECRET_FIELDS}
    if "quality" in args:
        if fmt != "jpeg":
            raise InvalidParameters("quality applies to jpeg only.", session_id=state.session_id)
        options["quality"] = args["quality"]
    state.report(0, 2, "Capturing")
    if locate(state, args, required=False)[1] is None:
        data = state.act(state.tab.page, "screenshot", full_page=args.get("fullPage", False), **options)
    else:
        if args.get("fullPage"):
            raise InvalidParameters("fullPage applies to the page, not to an element.",
                                    session_id=state.session_id)
        shot = Act(state, "screenshot", **options)
        on_element(state, args, ElementNotClickable, shot)
        data = shot.result
    if data is INTERRUPTED:
        raise InvalidParameters("A dialog opened during the screenshot; answer it with handle_dialog.",
                                session_id=state.session_id)
    width, height = image_size(data)
    state.report(1, 2, "Captured")
    saved, failed = None, None
    if state.config.output_dir:
        # The image is the answer, the file a copy: a disk that cannot take it says why in notSaved.
        try:
            saved = file_path(state, fmt)
            write_file(saved, lambda part: Path(part).write_bytes(data))
        except BrowserServerError as exc:
            saved, failed = None, {"errorCode": exc.code, "message": exc.message}
    state.report(2, 2, "Done")
    response.answer({"width": width, "height": height, "format": fmt, "bytes": len(data), "savedTo": saved,
                     **({"notSaved": failed} if failed else {}), "image": data})


FILE_RESULT = result_schema(path="string", bytes="integer", message="string")

TOOLS = [
    SessionTool(
        name="snapshot", text_field="snapshot", title="Accessibility snapshot",
        # Where refs come from is said in click's description and the instructions, not a third time.
        description="The page (or an element) as a YAML accessibility tree. Cheaper: query (regex, any case; "
                    "Name|^Save$: each term's matches, one call), section (a heading or landmark, by name or "
                    "ref: what it titles), compact (headings, landmarks, controls), depth.",
        input_schema=session_schema({
            **TARGET,
            "query": {"type": "string", "minLength": 1},
            "section": {"type": "string", "minLength": 1},
            "compact": {"type": "boolean"},
            "depth": {"type": "integer", "minimum": 1, "maximum": 1000},
            "maxNodes": MAX_NODES, "timeout": TIMEOUT}),
        handler=snapshot, read_only=True, stores_page=True,
        output_schema=result_schema(("nodes", "totalNodes", "matches"), snapshot="string", nodes="integer",
                                    totalNodes="integer", matches="integer", truncated="boolean", url="string",
                                    title="string"),
    ),
    SessionTool(
        name="dom_snapshot", group="extra", text_field="html", title="DOM snapshot",
        description="The DOM as indented HTML (scripts and styles elided), cut at maxNodes.",
        input_schema=session_schema({**TARGET, "maxNodes": schema.integer(f"Default {DEFAULT_MAX_NODES}.", minimum=1,
                                                                          maximum=100_000), "timeout": TIMEOUT}),
        handler=dom_snapshot, read_only=True,
        output_schema=result_schema(html="string", nodes="integer", totalNodes="integer", truncated="boolean",
                                    url="string"),
    ),
    SessionTool(
        name="screenshot", title="Screenshot", description="The viewport, the full page, or one element.",
        input_schema=session_schema({
            **TARGET,
            "format": {"type": "string", "enum": ["png", "jpeg"]},
            "quality": schema.integer(None, minimum=0, maximum=100),
            "fullPage": {"type": "boolean"},
            "timeout": TIMEOUT,
        }),
        handler=screenshot, read_only=True, returns_image=True,
        output_schema=result_schema(width="integer", height="integer", format="string", bytes="integer",
                                    savedTo=["string", "null"]),
    ),
    SessionTool(
        name="pdf", group="pdf", title="Save as PDF",
        description="Print the page to a PDF file on the server (headless Chromium); returns its path.",
        input_schema=session_schema({"landscape": schema.boolean("Landscape pages."),
                                     "printBackground": schema.boolean("Print background colours and images.")}),
        handler=pdf, read_only=True, output_schema=FILE_RESULT,
    ),
    SessionTool(
        name="trace_start", group="tracing", title="Start trace",
        description="Record a Playwright trace of the session (actions, DOM snapshots, screenshots) until "
                    "trace_stop.",
        input_schema=session_schema({"screenshots": schema.boolean("Screenshots (default true)."),
                                     "snapshots": schema.boolean("DOM snapshots (default true)."),
                                     "sources": schema.boolean("Source files (default false).")}),
        handler=trace_start, page_tool=False, output_schema=SUCCESS_MESSAGE,
    ),
    SessionTool(
        name="trace_stop", group="tracing", title="Stop trace",
        description="Stop the trace and save it as a zip for `playwright show-trace`; returns its path.",
        input_schema=session_schema(), handler=trace_stop, page_tool=False, output_schema=FILE_RESULT,
    ),
]
