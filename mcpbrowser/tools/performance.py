"""The performance tool group's session tool: a page load, and an interaction, measured; runs on the SESSION THREAD.

measure_performance loads the page (under the session's throttling) and reads the browser's own entries
in it: timing, paints, layout shifts, long tasks and long animation frames (whose script entries name the
script behind a long task, with no trace recorded), and event timing for an interaction. perf_report.py
turns them into metrics and causes; the measurement is the call's stored page.
"""

import time
from datetime import datetime, timezone

from mcpbrowser import perf_report, schema, snapshot_text
from mcpbrowser.errors import DialogOpen, InvalidParameters
from mcpbrowser.logs import log
from mcpbrowser.session import page_reading, snapshots
from mcpbrowser.session.acting import INTERRUPTED
from mcpbrowser.session.page_tools import origin
from mcpbrowser.tools import interaction as acting_tools
from mcpbrowser.tools import navigation
from mcpbrowser.tools.base import TARGET, TIMEOUT, SessionTool, result_schema, session_schema

# After the load event the page is read once no entry came for QUIET_MS (the network and main thread
# quiet, as Lighthouse waits for them), or after CAP_MS at most: a page that never rests (a poll, an
# animation) is read as it is then. An interaction's entries come with the next paint after it.
QUIET_MS = 500
CAP_MS = 5000
INTERACTION_QUIET_MS = 100
INTERACTION_NOTHING_MS = 500   # no event entry by then: the interaction lasted under 16 ms
INTERACTION_CAP_MS = 3000
ELEMENT_READ_MS = 1000         # an element's own aria snapshot, for its ref
MAX_RUNS = 5

# One load's entries, from buffered observers (nothing is injected before the page's own scripts run);
# each element named by a CSS path the server can find it by again (its ref is read through it).
COLLECT = """async ([quietMs, capMs]) => {
  const supported = (window.PerformanceObserver && PerformanceObserver.supportedEntryTypes) || [];
  const types = ['navigation', 'paint', 'largest-contentful-paint', 'layout-shift', 'longtask',
                 'long-animation-frame', 'resource'];
  const got = {}, observers = [];
  let last = 0;
  const ended = e => e.entryType === 'resource' ? e.responseEnd : e.startTime + e.duration;
  for (const type of types) {
    if (!supported.includes(type)) continue;
    got[type] = [];
    const o = new PerformanceObserver(list => {
      for (const e of list.getEntries()) { got[type].push(e); last = Math.max(last, ended(e)); }
    });
    o.observe({type, buffered: true});
    observers.push([type, o]);
  }
  const nav = performance.getEntriesByType('navigation')[0];
  if (nav) last = Math.max(last, nav.loadEventEnd);
  const began = performance.now();
  await new Promise(done => {
    const tick = () => {
      const now = performance.now();
      if (now - last >= quietMs || now - began >= capMs) done(); else setTimeout(tick, 50);
    };
    setTimeout(tick, 50);
  });
  for (const [type, o] of observers) { got[type].push(...o.takeRecords()); o.disconnect(); }
  const fetchKept = window.__mcpbPlain ? window.__mcpbPlain(false) : false;  // the settle's wrappers back (see PLAIN)
  const path = el => {
    const parts = [];
    while (el && el.nodeType === 1 && el !== document.documentElement) {
      if (el.id && document.querySelectorAll('#' + CSS.escape(el.id)).length === 1) {
        parts.unshift('#' + CSS.escape(el.id)); break;
      }
      let part = el.tagName.toLowerCase();
      const parent = el.parentElement;
      if (parent) {
        const same = [...parent.children].filter(c => c.tagName === el.tagName);
        if (same.length > 1) part += ':nth-of-type(' + (same.indexOf(el) + 1) + ')';
      }
      parts.unshift(part);
      el = parent;
    }
    return parts.join(' > ') || 'html';
  };
  const describe = node => {
    const el = node && node.nodeType === 1 ? node : node && node.parentElement;
    if (!el || !el.isConnected) return null;
    const text = (el.getAttribute('alt') || el.getAttribute('aria-label') || el.innerText || '').trim();
    return {selector: path(el), tag: el.tagName.toLowerCase(), text: text.replace(/\\s+/g, ' ').slice(0, 40)};
  };
  const r = x => Math.round(x * 10) / 10;
  const rect = q => q && [Math.round(q.x), Math.round(q.y), Math.round(q.width), Math.round(q.height)];
  const paints = Object.fromEntries((got.paint || []).map(e => [e.name, e.startTime]));
  const lcps = got['largest-contentful-paint'] || [];
  const lcp = lcps[lcps.length - 1];
  const script = s => ({url: s.sourceURL || null, fn: s.sourceFunctionName || null, invoker: s.invoker,
                        pos: s.sourceCharPosition, start: r(s.startTime), duration: r(s.duration)});
  return {
    url: location.href, supported: supported.filter(t => types.includes(t) || t === 'event'),
    viewport: [innerWidth, innerHeight],
    nav: nav && {type: nav.type, ttfb: r(Math.max(0, nav.responseStart - (nav.activationStart || 0))),
                 domContentLoaded: r(nav.domContentLoadedEventEnd), load: r(nav.loadEventEnd),
                 status: nav.responseStatus, transfer: nav.transferSize, protocol: nav.nextHopProtocol},
    fcp: paints['first-contentful-paint'] === undefined ? null : r(paints['first-contentful-paint']),
    lcp: lcp ? {time: r(lcp.startTime), element: describe(lcp.element), url: lcp.url, size: lcp.size} : null,
    shifts: (got['layout-shift'] || []).filter(e => !e.hadRecentInput).map(e => ({
      time: r(e.startTime), value: e.value,
      sources: (e.sources || []).map(s => { const d = describe(s.node);
        return d && {...d, from: rect(s.previousRect), to: rect(s.currentRect)}; }).filter(Boolean)})),
    tasks: (got.longtask || []).map(e => ({start: r(e.startTime), duration: r(e.duration)})),
    frames: (got['long-animation-frame'] || []).map(e => ({start: r(e.startTime), duration: r(e.duration),
      blocking: r(e.blockingDuration), render: e.renderStart ? r(e.renderStart) : null,
      layout: e.styleAndLayoutStart ? r(e.styleAndLayoutStart) : null, scripts: e.scripts.map(script)})),
    resources: (got.resource || []).map(e => ({url: e.name, type: e.initiatorType, start: r(e.startTime),
      requestStart: r(e.requestStart), end: r(e.responseEnd), duration: r(e.duration), transfer: e.transferSize,
      blocking: e.renderBlockingStatus, status: e.responseStatus})),
    bufferFull: (got.resource || []).length >= 250, fetchKept,
  };
}"""

# The measured document's first script after the init scripts: the settle's wrappers out (settle.py's __mcpbPlain).
PLAIN = "window.__mcpbPlain && window.__mcpbPlain(true)"
UNPLAIN = "() => window.__mcpbPlain && window.__mcpbPlain(false)"

# The interaction's entries: observers set before it (events of 16 ms or more, the least the browser
# reports; the long animation frames that ran its handlers), read once its paint came. One that leaves the
# page: what was reported before the unload is kept for the next document of the origin (sessionStorage, KEPT).
KEPT = "__mcpbrowserPerf"
SHAPE = """box => {
  const r = x => Math.round(x * 10) / 10;
  return {
    events: box.events.map(e => ({name: e.name, interactionId: e.interactionId, start: r(e.startTime),
      duration: e.duration, processingStart: r(e.processingStart), processingEnd: r(e.processingEnd)})),
    frames: box.frames.map(e => ({start: r(e.startTime), duration: r(e.duration), scripts: e.scripts.map(s => ({
      url: s.sourceURL || null, fn: s.sourceFunctionName || null, invoker: s.invoker, start: r(s.startTime),
      duration: r(s.duration)}))})),
  };
}"""
WATCH = """() => {
  const box = window.__mcpbrowserPerf = {events: [], frames: [], last: 0, observers: []};
  const supported = PerformanceObserver.supportedEntryTypes || [];
  for (const [type, into] of [['event', 'events'], ['long-animation-frame', 'frames']]) {
    if (!supported.includes(type)) continue;
    const o = new PerformanceObserver(list => { box[into].push(...list.getEntries()); box.last = performance.now(); });
    o.observe(type === 'event' ? {type, durationThreshold: 16} : {type});
    box.observers.push([into, o]);
  }
  box.hide = () => {
    for (const [into, o] of box.observers) box[into].push(...o.takeRecords());
    try { sessionStorage.setItem('KEPT', JSON.stringify((SHAPE)(box))); } catch (e) {}
  };
  addEventListener('pagehide', box.hide, {once: true});
  return supported.includes('event');
}""".replace("KEPT", KEPT).replace("SHAPE", SHAPE)
TAKE = """async ([quietMs, nothingMs, capMs]) => {
  const box = window.__mcpbrowserPerf;
  if (!box) {
    let kept = null;
    try { kept = sessionStorage.getItem('KEPT'); sessionStorage.removeItem('KEPT'); } catch (e) {}
    return kept === null ? null : {...JSON.parse(kept), unloaded: true};
  }
  const began = performance.now();
  await new Promise(done => {
    const tick = () => {
      const now = performance.now(), has = box.events.some(e => e.interactionId);
      if ((has && now - box.last >= quietMs) || (!has && now - began >= nothingMs) || now - began >= capMs) done();
      else setTimeout(tick, 25);
    };
    setTimeout(tick, 25);
  });
  removeEventListener('pagehide', box.hide);
  for (const [, o] of box.observers) o.disconnect();
  delete window.__mcpbrowserPerf;
  return (SHAPE)(box);
}""".replace("KEPT", KEPT).replace("SHAPE", SHAPE)


def _check(state, args):
    acts = "selector" in args or "ref" in args or "key" in args
    if args.get("load") is False:
        if "url" in args:
            raise InvalidParameters("url loads the page: leave load out, or give no url.", session_id=state.session_id)
        if not acts:
            raise InvalidParameters("With load: false, give the interaction to measure: a selector or ref to "
                                    "click, or a key.", session_id=state.session_id)
    elif "ref" in args:
        raise InvalidParameters("A ref names an element of the page as it is, which the load replaces: give a "
                                "selector, or load: false to measure the interaction on the page as it is.",
                                session_id=state.session_id, details={"ref": args["ref"]})
    if "url" in args:
        navigation._check_url(args["url"])


def measure_performance(state, args, response):
    _check(state, args)
    began = time.monotonic()
    deadline = began + args.get("timeout", state.config.navigation_timeout) / 1000
    load = args.get("load", True)
    runs = args.get("runs", 1) if load else 0
    loads, load_ms = [], 0.0
    for run in range(runs):
        left = _left_ms(deadline)
        if run and left < CAP_MS:  # a further run would not fit: the median of those taken
            break
        state.report(run, runs, f"Load {run + 1} of {runs}")
        raw, took = _one_load(state, response, args.get("url") if run == 0 else None, left)
        again = raw.pop("fetchKept", False)
        loads.append(perf_report.analyse(raw))
        load_ms += took
    if loads and again:
        # The page kept the browser's own fetch, unseen by the settle: loaded once more with its wrappers in.
        state.report(len(loads), len(loads) + 1, "Loading the page again, as the session's actions see it")
        navigation.reload(state, {"timeout": _left_ms(deadline)}, response)
    # The page measured: the one loaded, or the one the interaction was done on (it may leave it).
    page_url = loads[0]["url"] if loads else state.tab.page.url
    interaction = _interaction(state, args, response, deadline) if {"selector", "ref", "key"} & set(args) else None
    context = {"url": page_url, "measuredAt": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "browser": f"{state.browser.browser_type.name} {state.browser.version}",
               "load": ("navigate" if "url" in args else "reload") if load else "none",
               "cache": "off (a cold load)" if load and state.chromium else "as the browser has it",
               "throttle": dict(state.throttle)}
    if runs > 1:
        context["runsAsked"] = runs
    if interaction is not None and "left" in interaction:
        context["left"] = interaction.pop("left")
    measured = perf_report.report(loads, interaction, context)
    if "left" not in measured:  # the elements' refs are read on the page measured, not one it left for
        _give_refs(state, measured)
    measured["cost"] = {"loadMs": round(load_ms), "measureMs": round((time.monotonic() - began) * 1000)}
    response.store_page(perf_report.detail(measured), snapshot=False)  # get_content(refId) reads it whole
    state.remember_page(page_reading.loaded_title(state))
    response.answer({"url": measured["url"], "summary": perf_report.summary(measured)})


def _left_ms(deadline):
    return max(1, round((deadline - time.monotonic()) * 1000))


def _one_load(state, response, url, left_ms):
    """One load's raw entries (COLLECT's), and how long the load itself took in ms."""
    # A cold load each time, as Lighthouse measures: the cache off for this tab while it loads (Chromium).
    cdp = state.tab.cdp() if state.chromium else None
    plain = None
    if cdp is not None:
        cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
        # The loaded document runs without the settle's request wrappers (PLAIN; COLLECT puts them back), through
        # a CDP session of its own: its Page domain must be on for the script, and turning the tab's own
        # session's off would stop a live view's screencast.
        plain = state.tab.page.context.new_cdp_session(state.tab.page)
        plain.send("Page.enable")
        plain.send("Page.addScriptToEvaluateOnNewDocument", {"source": PLAIN})
    started = time.monotonic()
    try:
        if url is not None:
            navigation.navigate(state, {"url": url, "timeout": left_ms}, response)
        else:
            navigation.reload(state, {"timeout": left_ms}, response)
    except Exception:
        if plain is not None:  # the document that did not load is left with the settle's wrappers
            try:
                state.act(state.tab.page, "evaluate", expression=UNPLAIN, deadline_s=1)
            except Exception as exc:
                log.debug("wrappers not put back", extra={"session": state.session_id, "error": str(exc)})
        raise
    finally:
        if cdp is not None and plain is not None:
            for undo in (plain.detach, lambda: cdp.send("Network.setCacheDisabled", {"cacheDisabled": False})):
                try:
                    undo()
                except Exception as exc:  # the tab was replaced (navigate past a held tab): its CDP sessions went
                    log.debug("load measured, not undone", extra={"session": state.session_id, "error": str(exc)})
    took = (time.monotonic() - started) * 1000
    raw = state.act(state.tab.page, "evaluate", expression=COLLECT,
                    arg=[QUIET_MS, min(CAP_MS, _left_ms(started + left_ms / 1000))])
    if raw is INTERRUPTED:
        raise DialogOpen(f"{state.dialog_summary()} opened while the page was measured. Answer it with "
                         "handle_dialog, then measure again.", session_id=state.session_id, details=state.dialog_info())
    _call_sites(state, raw)
    return raw, took


def _call_sites(state, raw):
    """Each promise reaction's `at`: a few words of the page's code where its promise was made (the browser
    credits reactions to the script that made the promise, with a character and no function), such as
    `fetch('/data.json').then(render)`; read with the debugger on for a moment, after the load is measured."""
    wanted = [s for f in (raw or {}).get("frames") or () for s in f["scripts"]
              if s.get("url") and not s.get("fn") and s.get("pos", -1) >= 0 and (s.get("invoker") or "").endswith(
                  (".then", ".catch", ".finally"))]
    if not wanted or not state.chromium:
        return
    ids: dict[str, list[str]] = {}
    cdp = state.tab.page.context.new_cdp_session(state.tab.page)
    try:
        cdp.on("Debugger.scriptParsed", lambda e: ids.setdefault(e["url"], []).append(e["scriptId"]))
        cdp.send("Debugger.enable")  # (each script the page has is told before its answer)
        for script in wanted:
            found = ids.get(script["url"], ())
            if len(found) == 1:  # several under one URL (a page's inline scripts): the character is not known to be
                source = cdp.send("Debugger.getScriptSource", {"scriptId": found[0]})["scriptSource"]  # in which
                script["at"] = perf_report.call_site(source, script["pos"])
    except Exception as exc:  # the page went meanwhile: its tasks keep the script's name only
        log.debug("call sites not read", extra={"session": state.session_id, "error": str(exc).splitlines()[0]})
    finally:
        try:
            cdp.detach()
        except Exception as exc:
            log.debug("call sites' session not closed", extra={"session": state.session_id, "error": str(exc)})


def _interaction(state, args, response, deadline):
    """The interaction's event entries and long animation frames, with what it was done on."""
    if not state.act(state.tab.page, "evaluate", expression=WATCH):
        return {"why": f"this browser ({state.browser.browser_type.name}) has no event timing entries"}
    timeout = min(_left_ms(deadline), state.config.action_timeout)
    before = state.tab.page.url
    interact(state, args, response, timeout)
    element = args.get("selector") or (f"ref {args['ref']}" if "ref" in args else None)
    label = args["key"] + (f" on {element}" if element else "") if "key" in args else element
    raw = _take(state, timeout)
    if raw is INTERRUPTED:
        return {"why": "a dialog opened: answer it (handle_dialog), then measure again"}
    left = raw is None or raw.get("unloaded")
    if left and not any(e.get("interactionId") for e in (raw or {}).get("events", ())):
        why = ("the interaction left the page, and the browser reported no event entry for it before the page "
               "unloaded (it reports one with the next paint, and the new page came first)")
        if raw is None and origin(state.tab.page.url) != origin(before):
            why = ("the interaction left the page for another origin, where the browser's entries of the page it "
                   "left cannot be read")
        return {"why": why, "left": state.tab.page.url, "target": {"label": label}}
    raw["target"] = {"label": label}
    if left:
        raw["left"] = state.tab.page.url
    return raw


def interact(state, args, response, timeout):
    """The interaction measured (here, and by measure_memory): a click on the target, or its key (on the target)."""
    target = {k: args[k] for k in ("selector", "ref") if k in args}
    if "timeout" in args:  # the agent's own extends the 1 s grace a missing element gets, as a click's does
        target["timeout"] = timeout
    if "key" in args:
        acting_tools.press_key(state, {"key": args["key"], **target}, response)
    else:
        acting_tools.click(state, {**target}, response)


def _take(state, timeout_ms):
    """The interaction's entries (TAKE's): on the page, or kept by the page it left; None when neither has them."""
    for attempt in range(2):
        try:
            return state.act(state.tab.page, "evaluate", expression=TAKE,
                             arg=[INTERACTION_QUIET_MS, INTERACTION_NOTHING_MS, INTERACTION_CAP_MS])
        except Exception as exc:  # the page it read was replaced meanwhile: read the next one once it loaded
            log.debug("interaction not read", extra={"session": state.session_id, "error": str(exc).splitlines()[0]})
            if attempt == 0:
                try:
                    state.tab.page.wait_for_load_state("domcontentloaded", timeout=timeout_ms)
                except Exception as wait:
                    log.debug("no page after the interaction", extra={"session": state.session_id,
                                                                      "error": str(wait).splitlines()[0]})
    return None


def _give_refs(state, measured):
    """The LCP element's and the shifted elements' refs, as a snapshot gives them, so the agent can act on them.
    Each element's own aria snapshot names its ref; a whole-page read after them makes those refs current.
    A page too large to walk, or behind a dialog, keeps its selectors alone."""
    elements = []
    if (measured.get("lcp") or {}).get("element"):
        elements.append(measured["lcp"]["element"])
    for shift in (measured.get("layoutShifts") or [])[:perf_report.SHOWN]:
        elements += shift["elements"][:1]
    if not elements or state.blocker is not None or snapshots.too_large(state):
        return
    found = {}
    for element in elements:
        selector = element["selector"]
        if selector in found:
            continue
        try:
            text = state.act(state.tab.page.locator(selector).first, "aria_snapshot", mode="ai",
                             timeout=ELEMENT_READ_MS)
        except Exception as exc:  # gone since, or not in the accessibility tree
            log.debug("no ref for an element", extra={"session": state.session_id, "error": str(exc).splitlines()[0]})
            continue
        ref = snapshot_text.REF.search(text.split("\n", 1)[0]) if isinstance(text, str) else None
        if ref is not None:
            found[selector] = ref.group(1)
    if not found:
        return
    text, _ = snapshots.walk_page(state, {"mode": "ai", "timeout": state.config.action_timeout})
    if text is INTERRUPTED:
        return
    for element in elements:
        if found.get(element["selector"]) in state.tab.refs:
            element["ref"] = found[element["selector"]]


TOOLS = [
    SessionTool(
        name="measure_performance", group="performance", title="Measure page performance",
        description="Load the page (url, else reload) under the session's throttling and measure LCP, CLS, FCP, "
                    "TTFB, TBT with their causes; a click (selector/ref) or key adds INP. Detail: get_content(refId).",
        input_schema=session_schema({
            "url": {"type": "string", "minLength": 1},
            "load": schema.boolean("false: measure only the interaction, on the page as it is (refs work)."),
            **TARGET,
            "key": {"type": "string", "minLength": 1},
            "runs": schema.integer("Loads; the median is reported (default 1).", 1, MAX_RUNS),
            "timeout": TIMEOUT,
        }),
        handler=measure_performance, changes_page=True, stores_page=True, text_field="summary",
        output_schema=result_schema(url="string", summary="string"),
    ),
]
