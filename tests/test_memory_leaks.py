"""End to end: measure_memory on local pages built to leak a known amount with each click, and one that does not.

One page server and one core for the module. Each leaking page keeps a known number of objects a click
(detached divs in a global array, a listener on window holding a closure, entries of a cache map);
the clean page makes as much garbage and keeps none of it.
"""

import json
import re
import sys
from pathlib import Path

import pytest
from support import HtmlSite

import mcpbrowser
from mcpbrowser.config import Config
from mcpbrowser.errors import ContentNotFound, DialogOpen, ElementNotFound, InvalidParameters

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from perf_compare import DIVS, ENTRIES, LEAK_PAGES, REPEAT  # noqa: E402  the comparison script's pages

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def site():
    every = dict(LEAK_PAGES)
    s = HtmlSite(lambda url: every.get(url.path, ""))
    s.pages = every
    yield s
    s.close()


@pytest.fixture(scope="module")
def browser():
    with mcpbrowser.Browser(Config(headless=True, db=":memory:")) as b:
        yield b


@pytest.fixture(scope="module")
def session(browser):
    s = browser.create_session()
    yield s
    s.close()


def measured(browser, session, site, path, **args):
    session.navigate(path if path.startswith("http") else site.url + path)
    answer = session.measure_memory(selector="#go", repeat=REPEAT, **args)
    return answer, json.loads(browser.get_content(answer["refId"], reset_cursor=True)["content"])


def leak(detail, kind, name):
    found = [row for row in detail["leaks"] if row["kind"] == kind and row["name"] == name]
    assert found, [(row["kind"], row["name"]) for row in detail["leaks"]]
    return found[0]


def test_detached_divs_kept_in_a_global_array_are_named_with_their_count_and_holder(browser, session, site):
    answer, detail = measured(browser, session, site, "/divs")
    row = leak(detail, "detached", "<div>")
    assert row["perRepetition"] == pytest.approx(DIVS, rel=0.05) and row["grew"] == [DIVS * REPEAT] * 2
    assert row["heldBy"].startswith("window.kept[")
    assert f"detached <div>: +{DIVS}" in answer["summary"] and "held by window.kept[" in answer["summary"]


def test_a_listener_added_on_every_click_is_named_with_its_function_script_and_holder(browser, session, site):
    answer, detail = measured(browser, session, site, "/listener")
    row = leak(detail, "closure", "onResize")
    assert row["perRepetition"] == pytest.approx(1, rel=0.05)
    assert row["script"].startswith(site.url + "/listener.js:1:")
    assert row["heldBy"].startswith("window") and "listener" in row["heldBy"]
    assert "closure onResize(): +1 each time, " in answer["summary"]
    assert re.search(r"onResize\(\): \+1 each time, [\d.]+ kB in all", answer["summary"]), answer["summary"]


def test_a_cache_map_growing_by_a_known_count_is_named_with_its_constructor(browser, session, site):
    answer, detail = measured(browser, session, site, "/cache")
    row = leak(detail, "", "Entry")
    assert row["perRepetition"] == pytest.approx(ENTRIES, rel=0.05)
    assert row["heldBy"] == "cache (a variable)", row
    assert f"Entry: +{ENTRIES} each" in answer["summary"]
    assert len(answer["summary"]) < 900, answer["summary"]


def test_a_page_that_keeps_nothing_says_nothing_grew(browser, session, site):
    answer, detail = measured(browser, session, site, "/clean")
    assert detail["leaks"] == [], detail["leaks"]
    assert "Nothing grew with each repetition" in answer["summary"]


def test_a_heap_over_the_limit_is_refused_before_it_is_read(browser, session, site, monkeypatch):
    from mcpbrowser.tools import memory
    monkeypatch.setattr(memory, "MAX_HEAP_BYTES", 100_000)  # any page's heap is larger
    session.navigate(site.url + "/clean")
    with pytest.raises(InvalidParameters, match="over the 0 MB this server reads") as refused:
        session.measure_memory(selector="#go", repeat=1)
    assert refused.value.details["heapBytes"] > 100_000


def test_a_navigation_inside_the_app_and_a_key_are_repeated_too(browser, session, site):
    # A router that keeps every view it showed (a link's click: history.pushState, the same document)...
    site.pages["/router"] = (
        "<!doctype html><title>router</title><a id=go href='/router/next'>Next</a><main id=view></main><script>"
        "class View { constructor(n) { this.n = n; } } const views = []; "
        "document.getElementById('go').addEventListener('click', function route(e) { e.preventDefault(); "
        "history.pushState({}, '', '/router/' + views.length); views.push(new View(views.length)); "
        "document.getElementById('view').textContent = 'View ' + views.length; });</script>")
    answer, detail = measured(browser, session, site, "/router")
    assert leak(detail, "", "View")["perRepetition"] == 1 and "held by views (a variable)" in answer["summary"]
    # ...and a key handler that keeps each key's record.
    site.pages["/keys"] = ("<!doctype html><title>keys</title><p>Type.</p><script>window.typed = []; "
                           "class Stroke { constructor(k) { this.k = k; } } addEventListener('keydown', "
                           "function note(e) { typed.push(new Stroke(e.key)); });</script>")
    session.navigate(site.url + "/keys")
    keyed = session.measure_memory(key="k", repeat=REPEAT)
    assert "Stroke: +1 each" in keyed["summary"] and "held by window.typed[" in keyed["summary"], keyed["summary"]
    assert keyed["summary"].startswith(f"Measured: {site.url}/keys, key k:")


def test_an_interaction_that_opens_a_dialog_is_named_and_the_session_goes_on(session, site):
    site.pages["/alert"] = "<!doctype html><title>alert</title><button id=go onclick=\"alert('hi')\">Go</button>"
    session.navigate(site.url + "/alert")
    with pytest.raises(DialogOpen, match="handle_dialog"):
        session.measure_memory(selector="#go", repeat=1)
    session.handle_dialog(accept=True)
    assert session.navigate(site.url + "/clean")["url"] == site.url + "/clean"


def test_a_missing_element_fails_after_a_clicks_grace_not_the_whole_timeout(session, site):
    """tools.md: a missing element is ELEMENT_NOT_FOUND after a 1 s grace, which a `timeout` extends. A measurement's
    interaction waited the whole action timeout (5 s) for one."""
    session.navigate(site.url + "/clean")
    with pytest.raises(ElementNotFound, match="waited 1000 ms"):
        session.measure_memory(selector="#nosuch", repeat=1)
    with pytest.raises(ElementNotFound, match="waited 1500 ms"):
        session.measure_memory(selector="#nosuch", repeat=1, timeout=1500)


def test_an_interaction_that_leaves_the_page_is_refused_with_why(browser, session, site):
    session.navigate(site.url + "/divs")
    with pytest.raises(InvalidParameters, match="another page"):
        session.measure_memory(selector="#away", repeat=1)
    with pytest.raises(InvalidParameters, match="interaction to repeat"):
        session.measure_memory(repeat=1)


def test_a_fix_compared_with_the_leaking_run_says_the_leak_is_gone(browser, session, site):
    url = site.url + "/divs?compared"
    leaking = measured(browser, session, site, url)[0]
    with pytest.raises(ContentNotFound):
        browser.compare_performance(leaking["refId"])  # no earlier memory measurement of this page
    keep = site.pages["/divs.js"]
    site.pages["/divs.js"] = keep.replace("kept.push(d);", "")
    try:
        fixed = measured(browser, session, site, url)[0]
    finally:
        site.pages["/divs.js"] = keep
    compared = browser.compare_performance(fixed["refId"])
    assert compared["baseline"] == leaking["refId"]
    text = compared["summary"]
    assert f"No longer grows: detached <div> (+{DIVS} each before)" in text, text
    assert "Heap growth a repetition:" in text and "New leak" not in text
    # A load's measurement is not a memory one: named as the baseline, refused with why.
    with pytest.raises(InvalidParameters, match="memory measurement"):
        browser.compare_performance(fixed["refId"], baseline=session.measure_performance(url=url)["refId"])


def test_growth_counts_as_a_leak_only_when_both_rounds_grew_by_one_a_repetition():
    from mcpbrowser.memory_report import grown
    first = {("", "A"): [10, 100, []], ("", "B"): [10, 100, []], ("", "C"): [10, 100, []],
             ("string", "(strings)"): [10, 100, []], ("", "D"): [10, 100, []]}
    second = {("", "A"): [18, 180, []], ("", "B"): [13, 130, []], ("", "C"): [18, 180, []],
              ("string", "(strings)"): [50, 500, []], ("", "D"): [30, 300, []]}
    third = {("", "A"): [26, 260, []], ("", "B"): [16, 160, []], ("", "C"): [18, 180, []],
             ("string", "(strings)"): [90, 900, []], ("", "D"): [35, 350, []]}
    first[("", "PerformanceEventTiming")], second[("", "PerformanceEventTiming")] = [1, 1, []], [9, 9, []]
    third[("", "PerformanceEventTiming")] = [17, 17, []]  # the browser's timeline: its buffer, not the page's
    leaks, noise = grown(first, second, third, repeat=4)
    # A: 8 and 8 in rounds of 4; B: under one a repetition; C: only once; strings never; D: 20 then 5.
    assert [row["name"] for row in leaks] == ["A"] and leaks[0]["perRepetition"] == 2
    assert sorted(row["name"] for row in noise) == ["(strings)", "B", "C", "D", "PerformanceEventTiming"]


def test_the_answer_counts_the_leaks_it_leaves_out_and_a_comparison_says_when_the_runs_differ():
    """performance-insights.md: the browser's own timeline buffers (LayoutShift too) are never a leak; an answer names
    five leaks and says how many more the stored detail has; runs of two interactions are compared as not alike."""
    from mcpbrowser.memory_report import SHOWN, compare, grown, summary
    first, second, third = ({("", "LayoutShift"): [n, n, []], ("", "Kept"): [n, n, []]} for n in (0, 8, 16))
    leaks, noise = grown(first, second, third, repeat=4)
    assert [r["name"] for r in leaks] == ["Kept"] and [r["name"] for r in noise] == ["LayoutShift"]
    rows = [{"kind": "", "name": f"Leak{i}", "perRepetition": 2, "selfBytes": 100} for i in range(SHOWN + 1)]
    measured = {"url": "http://127.0.0.1:1/", "interaction": "click #go", "repeat": 4, "leaks": rows,
                "heapBytes": [1000, 2000, 3000]}
    text = summary(measured)
    assert f"Grew with each repetition ({SHOWN + 1}):" in text and "- and 1 more (get_content)." in text
    assert "Leak4" in text and "Leak5" not in text
    assert "more (get_content)" not in summary({**measured, "leaks": rows[:SHOWN]})
    assert compare(measured, measured).startswith("Heap growth a repetition: 0.2 kB -> 0.2 kB.")
    other = compare(measured, {**measured, "interaction": "key Enter"})
    assert other.startswith("Not alike: click #go on http://127.0.0.1:1/ then key Enter on http://127.0.0.1:1/.")


def _snapshot(nodes, strings):
    """A V8 heap snapshot's JSON: nodes as (type, name, id, edges [(type, name, to node index)])."""
    node_types = ["hidden", "array", "string", "object", "code", "closure", "regexp", "number", "native"]
    edge_types = ["context", "element", "property", "internal", "hidden", "shortcut", "weak"]
    flat_nodes, flat_edges = [], []
    for kind, name, node_id, out in nodes:
        flat_nodes += [node_types.index(kind), strings.index(name), node_id, 10, len(out), 0]
        for edge_kind, edge_name, to in out:
            flat_edges += [edge_types.index(edge_kind), strings.index(edge_name), to * 6]
    meta = {"node_fields": ["type", "name", "id", "self_size", "edge_count", "detachedness"],
            "node_types": [node_types], "edge_fields": ["type", "name_or_index", "to_node"],
            "edge_types": [edge_types]}
    return json.dumps({"snapshot": {"meta": meta}, "nodes": flat_nodes, "edges": flat_edges, "strings": strings})


def test_a_holder_is_found_by_strong_references_only_and_a_long_path_is_cut_in_the_middle():
    from mcpbrowser.heap_snapshot import Snapshot, path_words
    long_a, long_b = "a" * 150, "b" * 150
    strings = ["", "Window / http://127.0.0.1:1/", "Holder", "Target", "Weakly", "held", "seen", long_a, long_b]
    snapshot = Snapshot(_snapshot([
        ("object", "Window / http://127.0.0.1:1/", 1, [("weak", "seen", 3), ("weak", "seen", 2),
                                                       ("property", "held", 1), ("property", long_a, 4)]),
        ("object", "Holder", 3, [("property", "held", 2)]),
        ("object", "Target", 5, []),
        ("object", "Weakly", 7, []),  # only a weak reference reaches it: nothing holds it
        ("object", "Holder", 9, []),
    ], strings))
    assert snapshot.retainers(3 * 6) is None
    assert path_words(snapshot, snapshot.retainers(2 * 6)) == "window.held.held"
    words = path_words(snapshot, [("", 0), ("." + long_a, 4 * 6), ("." + long_b, 2 * 6)])
    assert words == ("window." + long_a + "." + long_b)[:100] + " … " + ("window." + long_a + "." + long_b)[-100:]


def test_an_exported_session_replays_the_interactions_a_memory_measurement_did():
    from mcpbrowser.core.script_export import build
    rows = [("r1", "navigate", {"sessionId": "s", "url": "http://127.0.0.1:1/a"}, "ok",
             {"url": "http://127.0.0.1:1/a", "title": "A"}, None),
            ("r2", "measure_memory", {"sessionId": "s", "selector": "#go", "repeat": 2}, "ok",
             {"url": "http://127.0.0.1:1/a", "summary": "Nothing grew."}, b'{"url": "http://127.0.0.1:1/a"}')]
    source, script = build(rows, "s", {})
    lines = [line.strip() for line in source.splitlines()]
    assert lines.count('page.locator("#go").click()') == 5  # the warm-up and two rounds of two
    assert "measure_memory is not replayed" not in source
