"""The performance group's memory tool: the page's heap around an interaction repeated; runs on the SESSION THREAD.

After a warm-up (what the first use loads or caches is not a leak), a heap snapshot, `repeat` interactions,
a second, `repeat` more, a third, each after a garbage collection, streamed in chunks into this thread's
memory (never a file). heap_snapshot.py reads them, memory_report.py says what grew and what holds it.
"""

import time
from datetime import datetime, timezone

from mcpbrowser import heap_snapshot, memory_report, perf_report, schema
from mcpbrowser.errors import BrowserError, DialogOpen, InvalidParameters
from mcpbrowser.session.acting import INTERRUPTED, TIMED_OUT
from mcpbrowser.tools import performance
from mcpbrowser.tools.base import TARGET, TIMEOUT, SessionTool, result_schema, session_schema

MAX_REPEAT = 50
SNAPSHOT_S = 60.0   # a heap snapshot of a large page takes seconds; a page that never yields, for ever
CHUNK_EVENT = "HeapProfiler.addHeapSnapshotChunk"
# A snapshot's JSON and its parsed arrays cost the server several times the heap they describe: a page
# (or an attacker's page) with a huge heap is refused before a snapshot, and a snapshot whose JSON passes
# MAX_SNAPSHOT_CHARS (the heap grew meanwhile) is dropped as it streams in.
MAX_HEAP_BYTES = 64_000_000
MAX_SNAPSHOT_CHARS = 150_000_000


def _too_large(state, size):
    return InvalidParameters(f"The page's JavaScript heap is {size / 1e6:.0f} MB, over the {MAX_HEAP_BYTES / 1e6:.0f} "
                             "MB this server reads into snapshots (each costs it several times that in memory).",
                             session_id=state.session_id, details={"heapBytes": size})


def _snapshot(state, cdp):
    """The page's heap after a garbage collection, read from the chunks the browser streams."""
    chunks = []
    size = [0]

    def take(event):
        size[0] += len(event["chunk"])
        if size[0] <= MAX_SNAPSHOT_CHARS:
            chunks.append(event["chunk"])

    cdp.on(CHUNK_EVENT, take)
    try:
        used = cdp.send("Runtime.getHeapUsage")["usedSize"]
        if used > MAX_HEAP_BYTES:
            raise _too_large(state, used)
        for method, params in (("HeapProfiler.collectGarbage", {}),
                               ("HeapProfiler.takeHeapSnapshot", {"reportProgress": False,
                                                                  "captureNumericValue": False})):
            done = state.act(cdp, "send", deadline_s=SNAPSHOT_S, method=method, params=params)
            if done is INTERRUPTED:
                raise DialogOpen(f"{state.dialog_summary()} opened while the heap was measured. Answer it with "
                                 "handle_dialog, then measure again.", session_id=state.session_id,
                                 details=state.dialog_info())
            if done is TIMED_OUT:
                raise BrowserError(f"The page's heap was not read within {SNAPSHOT_S:g} s: a script of its own may "
                                   "keep it busy.", session_id=state.session_id)
    finally:
        cdp.remove_listener(CHUNK_EVENT, take)
    if size[0] > MAX_SNAPSHOT_CHARS:
        raise _too_large(state, used)
    return heap_snapshot.Snapshot("".join(chunks))


def _document(state):
    """The current document's time origin: another one after the interaction means it left the page."""
    origin = state.act(state.tab.page, "evaluate", expression="performance.timeOrigin")
    if origin is INTERRUPTED:
        raise DialogOpen(f"{state.dialog_summary()} opened while the interaction was repeated. Answer it with "
                         "handle_dialog, then measure an interaction that opens none.", session_id=state.session_id,
                         details=state.dialog_info())
    return origin


def _interact(state, args, response, document):
    performance.interact(state, args, response, args.get("timeout", state.config.action_timeout))
    if _document(state) != document:
        raise InvalidParameters(f"The interaction loaded another page ({state.tab.page.url}): a heap is compared on "
                                "one page. Give an interaction that stays in the app (a click on an in-app "
                                "link of a single-page app stays).", session_id=state.session_id,
                                details={"url": state.tab.page.url})


def measure_memory(state, args, response):
    if not state.chromium:
        raise InvalidParameters("measure_memory needs Chromium (heap snapshots are Chromium's DevTools protocol; "
                                "this server runs another browser).", session_id=state.session_id)
    if not {"selector", "ref", "key"} & set(args):
        raise InvalidParameters("Give the interaction to repeat: a selector or ref to click, or a key.",
                                session_id=state.session_id)
    began = time.monotonic()
    repeat = args.get("repeat", 5)
    cdp = state.tab.cdp()
    document = _document(state)
    url = state.tab.page.url
    _interact(state, args, response, document)  # the warm-up
    groups, totals = [], []
    for round_ in range(3):
        if round_:
            for i in range(repeat):
                state.report(i + (round_ - 1) * repeat, 2 * repeat, f"Round {round_} of 2")
                _interact(state, args, response, document)
        snapshot = _snapshot(state, cdp)
        totals.append(snapshot.total())
        groups.append(snapshot.groups() if round_ < 2 else None)
    label = args.get("key") or args.get("selector") or f"ref {args['ref']}"
    context = {"url": url, "interaction": ("key " if "key" in args else "click ") + label,
               "measuredAt": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "browser": f"{state.browser.browser_type.name} {state.browser.version}"}
    measured = memory_report.report(groups[0], groups[1], snapshot, totals, repeat, context)
    measured["cost"] = {"measureMs": round((time.monotonic() - began) * 1000)}
    response.store_page(perf_report.detail(measured), snapshot=False)
    response.answer({"url": measured["url"], "summary": memory_report.summary(measured)})


TOOLS = [
    SessionTool(
        name="measure_memory", group="performance", title="Measure what an interaction leaks",
        description="Repeat a click (selector/ref) or key (repeat times, twice, after a warm-up) and name what "
                    "the page's JS heap kept each time: constructors, detached DOM, listeners, with what holds "
                    "them. Chromium. Detail: get_content(refId).",
        input_schema=session_schema({
            **TARGET,
            "key": {"type": "string", "minLength": 1},
            "repeat": schema.integer("Repetitions a round (default 5).", 1, MAX_REPEAT),
            "timeout": TIMEOUT,
        }),
        handler=measure_memory, changes_page=True, stores_page=True, text_field="summary",
        output_schema=result_schema(url="string", summary="string"),
    ),
]
