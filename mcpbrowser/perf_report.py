"""A page's performance, from the browser's own entries to an agent's words; pure, any thread.

tools/performance.py reads the entries in the page on the session thread (`analyse` turns one load's
into its metrics and causes, `report` several loads and an interaction into one measurement, `summary`
and `detail` write it); core/performance_tools.py compares two stored ones on the core pool (`compare`).
The vocabulary and thresholds are Chrome DevTools' and PageSpeed Insights' (web.dev's Core Web Vitals;
Lighthouse's for total blocking time)."""

import json
import re
import statistics
from urllib.parse import urlsplit

from mcpbrowser.schema import compact_json

# (good up to, poor above), as web.dev publishes them; TBT's are Lighthouse's.
THRESHOLDS = {"LCP": (2500, 4000), "CLS": (0.1, 0.25), "INP": (200, 500), "FCP": (1800, 3000),
              "TTFB": (800, 1800), "TBT": (200, 600)}
METRICS = ("LCP", "CLS", "INP", "FCP", "TTFB", "TBT")
# Run-to-run noise a change must pass to count as one: (absolute, relative to the earlier value), above
# what two loads of one page differ by (docs/performance.md).
NOISE = {"LCP": (50, 0.10), "FCP": (50, 0.10), "TTFB": (50, 0.10), "TBT": (50, 0.20), "INP": (24, 0.10),
         "CLS": (0.02, 0.10)}
LONG_TASK_MS = 50     # a task longer than this blocks input (the Long Tasks API's and TBT's line)
SHOWN = 3             # causes of each kind an answer names; the stored detail keeps all
SESSION_GAP_MS, SESSION_MAX_MS = 1000, 5000  # CLS's session windows


def rating(metric, value):
    """'good', 'needs improvement' or 'poor' by the published thresholds."""
    good, poor = THRESHOLDS[metric]
    return "poor" if value > poor else "needs improvement" if value > good else "good"


def site(url):
    """The part of a host that says who serves it: the last two labels (three under a two-letter country
    code's short second level, co.uk), the whole of an IP address or a one-label host."""
    host = urlsplit(url).hostname or ""
    if re.fullmatch(r"[\d.]+|\[?[0-9a-f:]+\]?", host) or "." not in host:
        return host
    labels = host.split(".")
    keep = 3 if len(labels) > 2 and len(labels[-1]) == 2 and len(labels[-2]) <= 3 else 2
    return ".".join(labels[-keep:])


def _r(value):
    return None if value is None else round(value)


def cls(shifts):
    """Cumulative layout shift: the largest session window's sum (gaps under 1 s, windows up to 5 s)."""
    best = total = 0.0
    first = previous = None
    for shift in sorted(shifts, key=lambda s: s["time"]):
        if previous is None or shift["time"] - previous > SESSION_GAP_MS or shift["time"] - first > SESSION_MAX_MS:
            first, total = shift["time"], 0.0
        total += shift["value"]
        previous = shift["time"]
        best = max(best, total)
    return best


def total_blocking_time(tasks, fcp):
    """Lighthouse's TBT: each task's time past 50 ms, counting only what runs after first contentful paint."""
    total = 0.0
    for task in tasks:
        start, end = task["start"], task["start"] + task["duration"]
        if fcp is not None:
            if end <= fcp:
                continue
            start = max(start, fcp)
        total += max(0.0, end - start - LONG_TASK_MS)
    return total


def _script_of(task, frames):
    """The script that ran longest inside a task, from the long animation frames' script entries."""
    end = task["start"] + task["duration"]
    scripts = [s for f in frames for s in f["scripts"]
               if s["start"] < end and s["start"] + s["duration"] > task["start"]]
    return max(scripts, key=lambda s: s["duration"], default=None)


def _work_of(task, frames, nav):
    """What a long task without a script was, from its long animation frame: rendering, parsing, or neither."""
    end = task["start"] + task["duration"]
    frame = next((f for f in frames if f["start"] < end and f["start"] + f["duration"] > task["start"]), None)
    if frame is not None and frame.get("layout") is not None:
        frame_end = frame["start"] + frame["duration"]
        layout = frame_end - max(frame["layout"], task["start"])
        if layout >= task["duration"] / 2:
            return f"style and layout {ms(layout)}"
    if nav.get("domContentLoaded") and task["start"] < nav["domContentLoaded"]:
        return "parsing the HTML"
    return "the browser's own work: no script ran"


def analyse(raw):
    """One load's entries (tools/performance.py's COLLECT) as metrics and causes."""
    supported = set(raw["supported"])
    nav = raw.get("nav") or {}
    ttfb = nav.get("ttfb")
    fcp = raw.get("fcp")
    # The browser's own favicon request is not the page's.
    resources = sorted((r for r in raw.get("resources") or []
                        if not (r.get("type") == "other" and urlsplit(r["url"]).path == "/favicon.ico")),
                       key=lambda r: r["start"])
    metrics, missing = {}, {}
    if ttfb is not None:
        metrics["TTFB"] = ttfb
    else:
        missing["TTFB"] = "no navigation timing entry"
    if fcp is not None:
        metrics["FCP"] = fcp
    else:
        missing["FCP"] = "no first-contentful-paint entry" if "paint" in supported \
            else "this browser has no paint entries"
    out = {"url": raw["url"], "viewport": raw.get("viewport")}
    lcp = raw.get("lcp")
    if lcp is not None:
        metrics["LCP"] = lcp["time"]
        out["lcp"] = _lcp_causes(lcp, ttfb, resources)
    else:
        missing["LCP"] = "nothing was painted large enough" if "largest-contentful-paint" in supported \
            else "this browser has no largest-contentful-paint entries"
    if "layout-shift" in supported:
        shifts = [s for s in raw.get("shifts") or []]
        metrics["CLS"] = cls(shifts)
        out["layoutShifts"] = [{"time": _r(s["time"]), "score": round(s["value"], 4), "elements": s["sources"]}
                               for s in sorted(shifts, key=lambda s: -s["value"])]
    else:
        missing["CLS"] = "this browser has no layout-shift entries"
    frames = raw.get("frames") or []
    if "longtask" in supported:
        tasks = raw.get("tasks") or []
    else:  # a long animation frame stands for its tasks where the browser gives no longtask entries
        tasks = [{"start": f["start"], "duration": f["duration"]} for f in frames]
    if "longtask" in supported or "long-animation-frame" in supported:
        metrics["TBT"] = total_blocking_time(tasks, fcp)
        out["longTasks"] = []
        for t in sorted(tasks, key=lambda t: -t["duration"]):
            task = {"start": _r(t["start"]), "duration": _r(t["duration"]), "script": _script_of(t, frames)}
            if task["script"] is None and "long-animation-frame" in supported:
                task["work"] = _work_of(t, frames, nav)
            out["longTasks"].append(task)
    else:
        missing["TBT"] = "this browser has no longtask entries"
    if "long-animation-frame" not in supported:
        out["scriptsUnknown"] = "this browser has no long-animation-frame entries: long tasks are not tied to scripts"
    fcp_at = fcp if fcp is not None else float("inf")
    out["renderBlocking"] = [{"url": r["url"], "duration": _r(r["duration"]), "start": _r(r["start"])}
                             for r in resources if r.get("blocking") == "blocking" and r["start"] < fcp_at]
    page_site = site(raw["url"])
    parties: dict[str, dict] = {}
    for r in resources:
        who = site(r["url"])
        if who and who != page_site and urlsplit(r["url"]).scheme in ("http", "https"):
            party = parties.setdefault(who, {"site": who, "requests": 0, "transferKB": 0.0, "mainThreadMs": 0.0})
            party["requests"] += 1
            party["transferKB"] += (r.get("transfer") or 0) / 1000
    for frame in frames:
        for script in frame["scripts"]:
            who = site(script.get("url") or "")
            if who in parties:
                parties[who]["mainThreadMs"] += script["duration"]
    out["thirdParties"] = sorted(({**p, "transferKB": round(p["transferKB"], 1), "mainThreadMs": _r(p["mainThreadMs"])}
                                  for p in parties.values()), key=lambda p: (-p["mainThreadMs"], -p["transferKB"]))
    out["requests"] = [{k: v for k, v in r.items() if v not in (None, "")} for r in resources]
    if raw.get("bufferFull"):
        out["requestsCut"] = "the browser's resource timing buffer was full: later requests are not listed"
    out["metrics"], out["missing"] = metrics, missing
    out["navigation"] = nav
    return out


def _lcp_causes(lcp, ttfb, resources):
    """The LCP element and its phases (time to first byte, resource load delay, load duration, render delay)."""
    out = {"element": lcp.get("element"), "url": lcp.get("url") or None, "size": lcp.get("size")}
    ttfb = ttfb or 0.0
    resource = next((r for r in resources if lcp.get("url") and r["url"] == lcp["url"]), None)
    if resource is not None:
        # As web-vitals attributes it: the request's start (or the entry's, cross-origin without
        # Timing-Allow-Origin), its end, and the paint after it.
        request = max(resource.get("requestStart") or resource["start"], ttfb)
        end = max(request, resource["end"])
        phases = {"ttfb": ttfb, "loadDelay": request - ttfb, "loadDuration": end - request,
                  "renderDelay": max(0.0, lcp["time"] - end)}
    else:  # text, or an image the browser already had: all of it after the first byte is render delay
        phases = {"ttfb": ttfb, "loadDelay": 0.0, "loadDuration": 0.0, "renderDelay": max(0.0, lcp["time"] - ttfb)}
    out["phases"] = {k: _r(v) for k, v in phases.items()}
    return {k: v for k, v in out.items() if v is not None}


def interaction_of(raw):
    """Interaction to Next Paint from the event timing entries of the measured interaction, with its phases."""
    groups: dict[int, list] = {}
    for e in raw.get("events") or []:
        if e.get("interactionId"):
            groups.setdefault(e["interactionId"], []).append(e)
    if not groups:
        return None
    worst = max(groups.values(), key=lambda es: max(e["duration"] for e in es))
    longest = max(worst, key=lambda e: e["duration"])
    start, end = min(e["start"] for e in worst), max(e["start"] + e["duration"] for e in worst)
    processing_start = min(e["processingStart"] for e in worst)
    processing_end = max(e["processingEnd"] for e in worst)
    frames = raw.get("frames") or []
    scripts = [s for f in frames for s in f["scripts"] if s["start"] < end and s["start"] + s["duration"] > start]
    return {"value": longest["duration"], "event": longest["name"],
            "phases": {"inputDelay": _r(processing_start - start), "processing": _r(processing_end - processing_start),
                       "presentationDelay": _r(max(0.0, end - processing_end))},
            "scripts": sorted(scripts, key=lambda s: -s["duration"])}


def report(loads, interaction, context):
    """One measurement: the loads' metrics (their median, and the spread when there were several), the
    causes of the load whose LCP is the median one, the interaction's INP; context: url, throttle, ..."""
    out = dict(context)
    metrics, missing = {}, {}
    chosen = None
    if loads:
        by_lcp = sorted(loads, key=lambda load: load["metrics"].get("LCP", load["metrics"].get("FCP", 0)))
        chosen = by_lcp[(len(by_lcp) - 1) // 2]
        for name in METRICS:
            values = [load["metrics"][name] for load in loads if name in load["metrics"]]
            if values:
                metrics[name] = {"value": statistics.median(values)}
                if len(values) > 1:
                    metrics[name]["spread"] = [min(values), max(values)]
            elif name in chosen["missing"]:
                missing[name] = chosen["missing"][name]
    else:
        missing.update({name: "no load was measured (load: false)" for name in ("LCP", "CLS", "FCP", "TTFB", "TBT")})
    if interaction is None:
        missing["INP"] = "no interaction was measured"
    elif "why" in interaction:
        missing["INP"] = interaction["why"]
    else:
        inp = interaction_of(interaction)
        # None: no event of the interaction lasted 16 ms, the least the browser reports.
        metrics["INP"] = {"value": inp["value"]} if inp else {"value": 0, "under": 16}
        out["interaction"] = {**interaction["target"], **(inp or {})}
    for name, entry in metrics.items():
        entry["value"] = round(entry["value"], 4) if name == "CLS" else round(entry["value"])
        entry["rating"] = rating(name, entry["value"])
    out["metrics"] = {name: metrics[name] for name in METRICS if name in metrics}
    if missing:
        out["notMeasured"] = missing
    if chosen is not None:
        for key in ("viewport", "lcp", "layoutShifts", "renderBlocking", "longTasks", "thirdParties", "scriptsUnknown",
                    "requestsCut", "navigation", "requests"):
            if key in chosen:
                out[key] = chosen[key]
        if len(loads) > 1:
            out["runs"] = [{name: (round(v, 4) if name == "CLS" else round(v)) for name, v in load["metrics"].items()}
                           for load in loads]
    return out


# -- words -----------------------------------------------------------------------------

def ms(value):
    """840 ms, 2.61 s."""
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{round(value)} ms"


def _spread(name, low, high):
    """The range several runs gave: 32-44 ms, 1.02-1.10 s, 0.01-0.03."""
    if name == "CLS":
        return f"{low:.2f}-{high:.2f}"
    if high >= 1000:
        return f"{low / 1000:.2f}-{high / 1000:.2f} s"
    return f"{round(low)}-{round(high)} ms"


def _value(name, entry):
    if name == "CLS":
        return f"{entry['value']:.2f}" if entry["value"] >= 0.01 or entry["value"] == 0 else f"{entry['value']:.3f}"
    if "under" in entry:
        return f"<{entry['under']} ms"
    return ms(entry["value"])


def short_url(url, page_url):
    """A request's name as an answer gives it: its file (and host, when not the page's)."""
    parts, page = urlsplit(url), urlsplit(page_url)
    name = parts.path.rstrip("/").rsplit("/", 1)[-1] or parts.path or "/"
    return name if parts.netloc == page.netloc else f"{parts.hostname}/{name}"


def element_words(element):
    """img#hero "Hero" [ref=e5]: what an agent can find or act on."""
    if not element:
        return "an element no longer in the page"
    words = element.get("selector") or element.get("tag", "?")
    if element.get("text"):
        words += f' "{element["text"]}"'
    if element.get("ref"):
        words += f" [ref={element['ref']}]"
    return words


def script_words(script, page_url, work=None):
    if not script:
        return work or "no script named"
    if not script.get("url"):  # code with no URL of its own (eval, new Function), or a promise made by code of ours
        return f"{script.get('invoker') or '?'} (script not named)"
    where = short_url(script["url"], page_url)
    if script.get("at"):  # a promise's reaction: where the page made the promise
        return f'{where} {script["at"]}'
    return where + (f" {script['fn']}()" if script.get("fn") else "")


def call_site(source, pos, most=60):
    """`fetch('/data.json').then(render)`: the page's statement from pos, on one line, at most `most` characters."""
    text, depth = " ".join(source[pos:pos + most * 2].split()), 0
    for end, char in enumerate(text):  # up to the statement's end: a `;`, or a bracket it did not open
        depth += (char in "([{") - (char in ")]}")
        if depth < 0 or (char == ";" and depth == 0):
            text = text[:end]
            break
    return text if len(text) <= most else text[:most - 1] + "…"


def throttle_words(throttle):
    """cpuRate 4, network Slow 3G; or none."""
    if not throttle:
        return "none"
    custom = throttle.get("network") == "custom"  # its figures are the throttling; a preset's name says them
    shown = {k: v for k, v in throttle.items() if k in ("cpuRate", "network") or custom}
    return ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in shown.items())


def summary(measured):
    """The answer's few hundred characters: each metric, its rating and its cause."""
    page = measured["url"]
    metrics = measured["metrics"]
    lines = []
    if measured.get("left"):  # the page measured is not where the session is now: both are named
        lines.append(f"Measured {page}; the interaction left for {measured['left']}.")
    if measured.get("throttle"):
        lines.append(f"Throttled: {throttle_words(measured['throttle'])}.")
    head = []
    for name in METRICS:
        if name in metrics:
            entry = metrics[name]
            spread = f" ({_spread(name, *entry['spread'])})" if "spread" in entry \
                and round(entry["spread"][0], 2) != round(entry["spread"][1], 2) else ""
            head.append(f"{name} {_value(name, entry)}{spread} {entry['rating']}")
    if head:
        lines.append("; ".join(head) + ".")
    lcp = measured.get("lcp")
    if lcp and "LCP" in metrics:
        p = lcp["phases"]
        lines.append(f"LCP element {element_words(lcp.get('element'))}"
                     + (f" ({short_url(lcp['url'], page)})" if lcp.get("url") else "")
                     + f": TTFB {ms(p['ttfb'])}, load delay {ms(p['loadDelay'])}, load {ms(p['loadDuration'])}, "
                       f"render delay {ms(p['renderDelay'])}.")
    shifts = [s for s in measured.get("layoutShifts") or [] if s["score"] >= 0.001]
    if shifts:
        lines.append("Shifted: " + ", ".join(
            f"{element_words(s['elements'][0] if s['elements'] else None)} {s['score']:.3f}"
            for s in shifts[:SHOWN]) + ".")
    blocking = measured.get("renderBlocking") or []
    if blocking:
        lines.append("Render-blocking: " + ", ".join(f"{short_url(r['url'], page)} {ms(r['duration'])}"
                                                      for r in blocking[:SHOWN]) + ".")
    tasks = [t for t in measured.get("longTasks") or [] if t["duration"] > LONG_TASK_MS]
    if tasks:
        lines.append("Long tasks: " + ", ".join(f"{ms(t['duration'])} {script_words(t['script'], page, t.get('work'))}"
                                                 for t in tasks[:SHOWN]) + ".")
    interaction = measured.get("interaction")
    if interaction and "phases" in interaction:
        p = interaction["phases"]
        lines.append(f"INP: {interaction['event']} on {interaction.get('label', '?')}: "
                     f"input delay {ms(p['inputDelay'])}, "
                     f"processing {ms(p['processing'])}, presentation {ms(p['presentationDelay'])}"
                     + (f"; {script_words(interaction['scripts'][0], page)}" if interaction["scripts"] else "") + ".")
    requests = [r for r in measured.get("requests") or [] if r.get("duration") is not None]
    slowest = sorted(requests, key=lambda r: -r["duration"])[:SHOWN]
    if slowest:
        lines.append("Slowest requests: " + ", ".join(f"{short_url(r['url'], page)} {ms(r['duration'])}"
                                                       for r in slowest) + ".")
    parties = measured.get("thirdParties") or []
    if parties:
        lines.append("Third parties: " + ", ".join(
            f"{p['site']} {p['requests']} req {p['transferKB']:g} kB {ms(p['mainThreadMs'])} main thread"
            for p in parties[:SHOWN]) + ".")
    reasons: dict[str, list[str]] = {}  # one reason, the metrics it holds for
    for name, why in (measured.get("notMeasured") or {}).items():
        if not (name == "INP" and why.startswith("no interaction")):
            reasons.setdefault(why, []).append(name)
    if reasons:
        lines.append("Not measured: " + "; ".join(f"{', '.join(names)}: {why}" for why, names in reasons.items()) + ".")
    if measured.get("scriptsUnknown"):
        lines.append(measured["scriptsUnknown"][0].upper() + measured["scriptsUnknown"][1:] + ".")
    return "\n".join(lines)


def detail(measured):
    """The stored page get_content reads: JSON, each request, shift and task on a line of its own."""
    def entry(key, value):
        if isinstance(value, list) and value and isinstance(value[0], dict):
            return f" {json.dumps(key)}: [\n" + ",\n".join(f"  {compact_json(item)}" for item in value) + "\n ]"
        return f" {json.dumps(key)}: {compact_json(value)}"

    return "{\n" + ",\n".join(entry(key, value) for key, value in measured.items()) + "\n}"


# -- comparing two measurements (core pool) ------------------------------------------------

def _noise(name, before, after):
    """The change a metric must pass: the published floor, or the spread either measurement saw over its runs."""
    absolute, relative = NOISE[name]
    floor = max(absolute, relative * abs(before["value"]))
    spreads = [m["spread"][1] - m["spread"][0] for m in (before, after) if "spread" in m]
    return max([floor, *spreads])


def _causes(measured):
    """What a measurement names as causes, by kind, for telling what changed."""
    page = measured["url"]
    lcp = measured.get("lcp") or {}
    element = lcp.get("element") or {}
    return {
        "LCP element": {element.get("selector")} - {None},
        "render-blocking": {short_url(r["url"], page) for r in measured.get("renderBlocking") or []},
        "long-task scripts": {script_words(t["script"], page) for t in measured.get("longTasks") or []
                              if t["duration"] > LONG_TASK_MS and t.get("script")},
        "shifted": {e.get("selector") for s in measured.get("layoutShifts") or [] if s["score"] >= 0.001
                    for e in s["elements"] if e},
        "third parties": {p["site"] for p in measured.get("thirdParties") or []},
    }


def compare(before, after):
    """What moved from `before` to `after` (two stored measurements) above the noise, and the causes that changed."""
    lines = []
    if before["url"] != after["url"]:
        lines.append(f"Different pages: {before['url']} then {after['url']}.")
    if before.get("throttle") != after.get("throttle"):
        lines.append(f"Not alike: throttling {throttle_words(before.get('throttle'))} "
                     f"then {throttle_words(after.get('throttle'))}.")
    moved, steady = [], []
    for name in METRICS:
        if name not in before["metrics"] or name not in after["metrics"]:
            continue
        b, a = before["metrics"][name], after["metrics"][name]
        delta, noise = a["value"] - b["value"], _noise(name, b, a)
        was, now = _value(name, b), _value(name, a)
        if abs(delta) > noise:
            by = f"{delta:+.3f}" if name == "CLS" else ("+" if delta > 0 else "-") + ms(abs(delta))
            pct = f", {delta / b['value']:+.0%}" if b["value"] else ""
            verdict = "worse" if delta > 0 else "better"
            rated = f", now {a['rating']}" if a["rating"] != b["rating"] else ""
            moved.append(f"{name} {was} -> {now} ({by}{pct}) {verdict}{rated}")
        else:
            steady.append(name)
    lines.append(("Moved: " + "; ".join(moved) + ".") if moved else "Nothing moved beyond run-to-run noise.")
    if steady and moved:
        lines.append("Within noise: " + ", ".join(steady) + ".")
    old, new = _causes(before), _causes(after)
    for kind in old:
        gone, came = sorted(old[kind] - new[kind]), sorted(new[kind] - old[kind])
        if gone or came:
            lines.append(f"{kind[0].upper()}{kind[1:]}: " + "; ".join(
                ([f"new {', '.join(came)}"] if came else []) + ([f"gone {', '.join(gone)}"] if gone else [])) + ".")
    return "\n".join(lines)
