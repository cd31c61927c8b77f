"""compare_performance: two stored measurements, what moved between them; the handler runs on the CORE POOL.

It reads the measurements' stored pages through the history: the one named, and the one it is compared with
(named too, or the last earlier one of the same kind, URL and interaction that the caller may read)."""

import json

from mcpbrowser import memory_report, perf_report, schema
from mcpbrowser.errors import ContentNotFound, InvalidParameters
from mcpbrowser.tools.base import CoreTool

TOOL, MEMORY_TOOL = "measure_performance", "measure_memory"
LOOKED_AT = 200  # earlier measurements (of any URL) read back in search of the last one of this URL


def _readable(core, session_id, call):
    """Whether the caller may read a call of this session: a client sees only its own sessions' calls."""
    return call.owner is None or (session_id is not None and core.registry.owner_of(session_id) == call.owner)


def _measurement(page):
    try:
        measured = json.loads(page.decode())
    except (ValueError, UnicodeDecodeError, AttributeError):
        return None
    if not isinstance(measured, dict) or "url" not in measured:
        return None
    return measured if "metrics" in measured or ("leaks" in measured and "interaction" in measured) else None


def _alike(before, after):
    """An earlier measurement to compare with: the same kind, the same page, and for memory the same interaction."""
    if ("leaks" in before) != ("leaks" in after) or before["url"] != after["url"]:
        return False
    return "leaks" not in after or before["interaction"] == after["interaction"]


def _named(core, ref_id, call):
    """The measurement stored under ref_id; CONTENT_NOT_FOUND when the caller has none there."""
    core.recorder.wait_recorded(ref_id)
    stored = core.history.stored_page(ref_id)
    measured = _measurement(stored[1]) if stored is not None and _readable(core, stored[0], call) else None
    if measured is None:
        raise ContentNotFound(f"No measurement has refId {ref_id!r}: give the refId of a measure_performance or "
                              "measure_memory answer.",
                              details={"refId": ref_id})
    return measured


def compare_performance(core, args, call):
    ref_id = args["ref_id"]
    after = _named(core, ref_id, call)
    memory = "leaks" in after
    baseline = args.get("baseline")
    if baseline is not None:
        before = _named(core, baseline, call)
        if ("leaks" in before) != memory:
            raise InvalidParameters("A memory measurement compares with another memory measurement, a load's with "
                                    "another load's: give a baseline of the same tool.",
                                    details={"refId": ref_id, "baseline": baseline})
    else:
        before = None
        for earlier, session_id, page in core.history.pages_before(MEMORY_TOOL if memory else TOOL, ref_id, LOOKED_AT):
            measured = _measurement(page) if _readable(core, session_id, call) else None
            if measured is not None and _alike(measured, after):
                before, baseline = measured, earlier
                break
        if before is None:
            raise ContentNotFound(f"No earlier {'memory ' if memory else ''}measurement of {after['url']} to compare "
                                  "with: measure it again after a change, or name one (baseline).",
                                  details={"refId": ref_id})
    summary = memory_report.compare(before, after) if memory else perf_report.compare(before, after)
    return {"baseline": baseline, "summary": summary}


TOOLS = [
    CoreTool(
        name="compare_performance", group="performance", text_field="summary",
        title="Compare two performance measurements",
        description="What moved between two measure_performance runs (beyond run-to-run noise) and which causes "
                    "changed, or what a fix did to measure_memory's leaks; baseline defaults to the last earlier "
                    "run of the same URL.",
        input_schema=schema.obj({"ref_id": schema.string("A measure_performance or measure_memory answer's refId.",
                                                         minLength=1),
                                 "baseline": schema.string("The earlier one's refId.", minLength=1)},
                                required=("ref_id",)),
        handler=compare_performance, read_only=True, idempotent=True,
        output_schema=schema.result({"baseline": {"type": "string"}, "summary": {"type": "string"}},
                                    ("baseline", "summary")),
    ),
]
