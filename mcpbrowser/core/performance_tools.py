"""compare_performance: two stored measurements, what moved between them; the handler runs on the CORE POOL.

It reads measure_performance's stored pages through the history (never a store of its own): the one
named, and the one it is compared with (named too, or the last earlier measurement of the same URL that
the caller may read). perf_report.compare says what moved above the run-to-run noise.
"""

import json

from mcpbrowser import perf_report, schema
from mcpbrowser.errors import ContentNotFound
from mcpbrowser.tools.base import CoreTool

TOOL = "measure_performance"
LOOKED_AT = 200  # earlier measurements (of any URL) read back in search of the last one of this URL


def _readable(core, session_id, call):
    """Whether the caller may read a call of this session: a client sees only its own sessions' calls."""
    return call.owner is None or (session_id is not None and core.registry.owner_of(session_id) == call.owner)


def _measurement(page):
    try:
        measured = json.loads(page.decode())
    except (ValueError, UnicodeDecodeError, AttributeError):
        return None
    return measured if isinstance(measured, dict) and "metrics" in measured and "url" in measured else None


def _named(core, ref_id, call):
    """The measurement stored under ref_id; CONTENT_NOT_FOUND when the caller has none there."""
    core.recorder.wait_recorded(ref_id)
    stored = core.history.stored_page(ref_id)
    measured = _measurement(stored[1]) if stored is not None and _readable(core, stored[0], call) else None
    if measured is None:
        raise ContentNotFound(f"No measurement has refId {ref_id!r}: give the refId of a measure_performance answer.",
                              details={"refId": ref_id})
    return measured


def compare_performance(core, args, call):
    ref_id = args["ref_id"]
    after = _named(core, ref_id, call)
    baseline = args.get("baseline")
    if baseline is not None:
        before = _named(core, baseline, call)
    else:
        before = None
        for earlier, session_id, page in core.history.pages_before(TOOL, ref_id, LOOKED_AT):
            measured = _measurement(page) if _readable(core, session_id, call) else None
            if measured is not None and measured["url"] == after["url"]:
                before, baseline = measured, earlier
                break
        if before is None:
            raise ContentNotFound(f"No earlier measurement of {after['url']} to compare with: measure it again "
                                  "after a change, or name one (baseline).", details={"refId": ref_id})
    return {"baseline": baseline, "summary": perf_report.compare(before, after)}


TOOLS = [
    CoreTool(
        name="compare_performance",
        group="performance",
        text_field="summary",
        title="Compare two performance measurements",
        description="What moved between two measure_performance runs (beyond run-to-run noise) and which causes "
                    "changed; baseline defaults to the last earlier run of the same URL.",
        input_schema=schema.obj({"ref_id": schema.string("A measure_performance answer's refId.", minLength=1),
                                 "baseline": schema.string("The earlier one's refId.", minLength=1)},
                                required=("ref_id",)),
        handler=compare_performance,
        read_only=True,
        idempotent=True,
        output_schema={"type": "object", "properties": {"baseline": {"type": "string"}, "summary": {"type": "string"}},
                       "required": ["baseline", "summary"]},
    ),
]
