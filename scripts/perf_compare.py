"""Side by side: our measure_performance against chrome-devtools-mcp's performance trace, on the same local pages.

    .venv/bin/python scripts/perf_compare.py [--version 1.11.0] [--cdm-dir DIR] [--json FILE] [--leaks]

Installs chrome-devtools-mcp with npm into a temporary folder (never into the repository; --cdm-dir reuses
one), serves pages on 127.0.0.1 whose answers are known by construction (a late LCP image, a stylesheet
that blocks rendering 800 ms, a 300 ms long task, a layout shift), and asks both servers the same question
of each page over stdio with the official MCP client: "measure this page's load". Both run
/usr/bin/chromium headless, each in a profile of its own (ours: a session; theirs: --isolated), at 1280x720,
one page after the other, ours first then theirs for each page.

It prints, per page: the LCP element each names, each value both report (LCP, its four phases, CLS, TTFB)
with whether they agree (the goal: within 15 % or 50 ms; CLS within 15 % or 0.01), the characters of each
answer (the goal: ours at most half of theirs; theirs also with the LCPBreakdown insight that names the
element), and the time each took against our plain navigate of the same page. The main thread runs it;
the MCP client is the SDK's (asyncio, in this script only).

With --leaks it asks instead "what does this click leak", on pages built to leak a known amount a click
(LEAK_PAGES: 200 detached divs kept in a global array, a listener on window holding a closure, 50 entries
of a cache map; and a clean page): ours measure_memory {selector: "#go", repeat: 4} (a warm-up click, two
rounds of four, three snapshots read in memory); theirs (started with --memoryDebugging) a warm-up click
and four more through evaluate_script, take_heapsnapshot before and after them, and compare_heapsnapshots.
It prints whether each names the leak (ours: its group, within 5 % of the count a click; theirs: the class's
name in its comparison), the characters of all of each one's answers, and the time each took.
"""

import argparse
import asyncio
import json
import os
import platform
import random
import re
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from contextlib import AsyncExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

CHROMIUM = "/usr/bin/chromium"
VIEWPORT = "1280x720"
SCRIPT_MS, IMAGE_MS, CSS_MS, TASK_MS = 400, 300, 800, 300


def _noise_png(width=100, height=75):
    """Random gray pixels: enough bits per pixel for Chromium to count the image as an LCP candidate."""
    rows = random.Random(7).randbytes(width * height)
    raw = b"".join(b"\0" + rows[y * width:(y + 1) * width] for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


PNG = _noise_png()
PAGES = {
    "/lcp": "<!doctype html><meta charset=utf-8><title>lcp</title><p>A short line.</p>"
            f"<script src='/late.js?ms={SCRIPT_MS}' async></script>",
    "/late.js": "const i = document.createElement('img'); i.id = 'hero'; i.alt = 'Hero'; i.width = 400; "
                f"i.height = 300; i.src = '/noise.png?ms={IMAGE_MS}'; document.body.appendChild(i);",
    "/css": "<!doctype html><meta charset=utf-8><title>css</title>"
            f"<link rel=stylesheet href='/slow.css?ms={CSS_MS}'><p>Styled.</p>",
    "/slow.css": "p { color: #333 }",
    "/busy": "<!doctype html><meta charset=utf-8><title>busy</title><p>A busy page.</p>"
             "<script src='/busy.js'></script>",
    # After the first paint (two frames after the load event), so that it never holds the paint itself.
    "/busy.js": "addEventListener('load', () => requestAnimationFrame(() => requestAnimationFrame(function spin() { "
                f"const t = performance.now(); while (performance.now() - t < {TASK_MS}) {{}} }})));",
    "/shift": "<!doctype html><meta charset=utf-8><title>shift</title><style>body{margin:0}#box{position:relative;"
              "width:100vw;height:50vh;background:#ccc}</style><div id=box>Box</div>"
              "<script>setTimeout(() => { document.getElementById('box').style.top = '25vh' }, 300)</script>",
}
DIVS, ENTRIES, REPEAT = 200, 50, 4
# Each page's button keeps a known amount with every click, or (the clean page) makes as much garbage and
# keeps none of it. tests/test_memory_leaks.py measures these pages.
LEAK_SCRIPTS = {
    "/divs.js": "window.kept = []; document.getElementById('go').addEventListener('click', function keep() { "
                f"for (let i = 0; i < {DIVS}; i++) {{ const d = document.createElement('div'); "
                "document.body.appendChild(d); d.remove(); kept.push(d); } });",
    "/listener.js": "document.getElementById('go').addEventListener('click', function add() { "
                    "const data = new Array(100).fill(Math.random()); "
                    "window.addEventListener('resize', function onResize() { return data.length; }); });",
    "/cache.js": "class Entry { constructor(i) { this.i = i; this.at = Date.now(); } } const cache = new Map(); "
                 "let next = 0; document.getElementById('go').addEventListener('click', function fill() { "
                 f"for (let i = 0; i < {ENTRIES}; i++) {{ cache.set('k' + next, new Entry(next)); next++; }} }});",
    "/clean.js": "class Entry { constructor(i) { this.i = i; } } document.getElementById('go').addEventListener("
                 "'click', function churn() { const made = []; for (let i = 0; i < 200; i++) { "
                 "made.push(new Entry(i), document.createElement('div')); } "
                 "document.getElementById('out').textContent = made.length; });",
}
LEAK_PAGES = {**{f"/{name[1:-3]}": f"<!doctype html><title>{name[1:-3]}</title><button id=go>Go</button>"
                                   f"<p id=out></p><a id=away href='/clean'>Away</a><script src='{name}'></script>"
                 for name in LEAK_SCRIPTS}, **LEAK_SCRIPTS}
# What each page leaks a click: ours names its group (kind, name) with the count; theirs, the class's name.
LEAKS = {"/divs": ("detached", "<div>", DIVS, r"<div>|HTMLDivElement"),
         "/listener": ("closure", "onResize", 1, r"onResize"),
         "/cache": ("", "Entry", ENTRIES, r"\bEntry\b"), "/clean": None}
TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if "ms" in query:
            time.sleep(int(query["ms"][0]) / 1000)
        body = PNG if url.path == "/noise.png" else (PAGES.get(url.path) or LEAK_PAGES.get(url.path, "")).encode()
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", next((t for end, t in TYPES.items() if url.path.endswith(end)),
                                              "text/html; charset=utf-8"))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def install(folder, version):
    """chrome-devtools-mcp's command line, installed with npm under `folder`."""
    subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", folder,
                    f"chrome-devtools-mcp@{version}"], check=True, stdout=subprocess.DEVNULL)
    return os.path.join(folder, "node_modules", "chrome-devtools-mcp", "build", "src", "bin", "chrome-devtools-mcp.js")


def text_of(result):
    """What a model reads of an answer: its text blocks."""
    return "\n".join(block.text for block in result.content if getattr(block, "text", None))


async def call(session, tool, args):
    """(answer text, ms) of one tools/call; an error answer stops the run."""
    started = time.perf_counter()
    result = await session.call_tool(tool, args)
    ms = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {text_of(result)[:500]}")
    return text_of(result), ms


def _number(pattern, text):
    found = re.search(pattern, text)
    return float(found.group(1)) if found else None


def theirs_values(summary, insight):
    """The values chrome-devtools-mcp's trace summary gives, and the LCP element its LCPBreakdown names."""
    element = re.search(r"The LCP element \((\w+)(?: id='([^']*)')?", insight)
    return {
        "element": element and element.group(1).lower() + (f"#{element.group(2)}" if element.group(2) else ""),
        "LCP": _number(r"- LCP: (\d+)\s*ms", summary), "TTFB": _number(r"- TTFB: (\d+)\s*ms", summary),
        "loadDelay": _number(r"- Load delay: (\d+)\s*ms", summary),
        "loadDuration": _number(r"- Load duration: (\d+)\s*ms", summary),
        "renderDelay": _number(r"- Render delay: (\d+)\s*ms", summary), "CLS": _number(r"- CLS: ([\d.]+)", summary),
    }


def ours_values(detail):
    metrics = detail["metrics"]
    lcp = detail.get("lcp") or {}
    element = lcp.get("element") or {}
    selector = element.get("selector", "")
    phases = lcp.get("phases") or {}
    return {
        "element": element.get("tag", "") + (selector if selector.startswith("#") else "") if element else None,
        "LCP": metrics.get("LCP", {}).get("value"), "TTFB": metrics.get("TTFB", {}).get("value"),
        "loadDelay": phases.get("loadDelay") if lcp.get("url") else None,
        "loadDuration": phases.get("loadDuration") if lcp.get("url") else None,
        "renderDelay": phases.get("renderDelay"), "CLS": metrics.get("CLS", {}).get("value"),
    }


def agree(name, ours, theirs):
    """Within 15 % of theirs or 50 ms (CLS: or 0.01)."""
    return abs(ours - theirs) <= max(0.15 * abs(theirs), 0.01 if name == "CLS" else 50)


async def servers(stack, cli, *extra):
    """(ours, theirs, our session's id): both servers started and initialized, ours with a session open."""
    env = {**os.environ, "TMPDIR": tempfile.mkdtemp(prefix="mcpb-")}
    ours_params = StdioServerParameters(command=sys.executable, env=env, args=[
        "-m", "mcpbrowser", "--headless", "--caps", "performance", "--db", ":memory:", "--rate-limit", "0"])
    theirs_params = StdioServerParameters(command="node", cwd=os.path.dirname(cli), args=[
        cli, "--headless", "--isolated", "--executablePath", CHROMIUM, "--chromeArg=--no-sandbox",
        "--viewport", VIEWPORT, "--no-usage-statistics", "--no-performance-crux", *extra])
    devnull = stack.enter_context(open(os.devnull, "w"))
    ours = await stack.enter_async_context(ClientSession(*await stack.enter_async_context(
        stdio_client(ours_params, errlog=devnull))))
    theirs = await stack.enter_async_context(ClientSession(*await stack.enter_async_context(
        stdio_client(theirs_params, errlog=devnull))))
    await ours.initialize()
    await theirs.initialize()
    created, _ = await call(ours, "create_session", {})
    return ours, theirs, json.loads(created.split("\n")[0])["sessionId"]


async def run(cli, base, pages):
    out = []
    async with AsyncExitStack() as stack:
        ours, theirs, session_id = await servers(stack, cli)
        for path in pages:
            url = base + path
            _, navigate_ms = await call(ours, "navigate", {"sessionId": session_id, "url": url})
            answer, ours_ms = await call(ours, "measure_performance", {"sessionId": session_id, "url": url})
            ref_id = json.loads(answer.split("\n")[0])["refId"]
            detail, _ = await call(ours, "get_content", {"ref_id": ref_id, "reset_cursor": True})
            detail = json.loads(detail.split("\n", 1)[1])
            await call(theirs, "navigate_page", {"pageId": 1, "type": "url", "url": url})
            summary, theirs_ms = await call(theirs, "performance_start_trace",
                                            {"pageId": 1, "reload": True, "autoStop": True})
            insight, insight_ms = await call(theirs, "performance_analyze_insight", {
                "pageId": 1, "insightSetId": "NAVIGATION_0", "insightName": "LCPBreakdown"})
            out.append({"page": path, "ours": ours_values(detail), "theirs": theirs_values(summary, insight),
                        "oursChars": len(answer), "theirsChars": len(summary), "theirsInsightChars": len(insight),
                        "navigateMs": round(navigate_ms), "oursMs": round(ours_ms),
                        "theirsMs": round(theirs_ms), "theirsInsightMs": round(insight_ms),
                        "oursAnswer": answer, "theirsSummary": summary})
    return out


async def run_leaks(cli, base, pages):
    out = []
    folder = tempfile.mkdtemp(prefix="cdm-heap-")
    async with AsyncExitStack() as stack:
        ours, theirs, session_id = await servers(stack, cli, "--memoryDebugging")
        for path in pages:
            url = base + path
            await call(ours, "navigate", {"sessionId": session_id, "url": url})
            answer, ours_ms = await call(ours, "measure_memory", {"sessionId": session_id, "selector": "#go",
                                                                  "repeat": REPEAT})
            ref_id = json.loads(answer.split("\n")[0])["refId"]
            detail, _ = await call(ours, "get_content", {"ref_id": ref_id, "reset_cursor": True})
            detail = json.loads(detail.split("\n", 1)[1])
            await call(theirs, "navigate_page", {"pageId": 1, "type": "url", "url": url})
            before, after = (os.path.join(folder, f"{path[1:]}-{n}.heapsnapshot") for n in ("before", "after"))
            click = ("evaluate_script", {"pageId": 1, "function": "() => document.getElementById('go').click()"})
            steps = [click, ("take_heapsnapshot", {"pageId": 1, "filePath": before}), *[click] * REPEAT,
                     ("take_heapsnapshot", {"pageId": 1, "filePath": after}),
                     ("compare_heapsnapshots", {"baseFilePath": before, "currentFilePath": after})]
            texts, theirs_ms = [], 0.0
            for tool, args in steps:
                text, ms = await call(theirs, tool, args)
                texts.append(text)
                theirs_ms += ms
            out.append({"page": path, "oursLeaks": [{k: row[k] for k in ("kind", "name", "perRepetition")}
                                                    for row in detail["leaks"]],
                        "oursChars": len(answer), "theirsChars": sum(len(t) for t in texts),
                        "oursMs": round(ours_ms), "theirsMs": round(theirs_ms),
                        "oursAnswer": answer, "theirsComparison": texts[-1]})
    return out


def leak_found(row):
    """(ours, theirs): whether each named the page's leak (the clean page: ours said nothing grew)."""
    expected = LEAKS[row["page"]]
    if expected is None:
        return not row["oursLeaks"], None
    kind, name, count, pattern = expected
    ours = any(leak["kind"] == kind and leak["name"] == name and abs(leak["perRepetition"] - count) <= 0.05 * count
               for leak in row["oursLeaks"])
    return ours, re.search(pattern, row["theirsComparison"]) is not None


def report_leaks(rows):
    lines = ["| page | leak named: ours / theirs | answer chars: ours / theirs | ms: ours / theirs |",
             "|---|---|---|---|"]
    misses = []
    for row in rows:
        ours, theirs = leak_found(row)
        if not ours:
            misses.append(f"{row['page']}: ours did not name it")
        if row["oursChars"] * 2 > row["theirsChars"]:
            misses.append(f"{row['page']} characters: ours {row['oursChars']}, theirs {row['theirsChars']}")
        if row["oursMs"] > row["theirsMs"]:
            misses.append(f"{row['page']} time: ours {row['oursMs']} ms, theirs {row['theirsMs']} ms")
        words = {True: "yes", False: "**no**", None: "n/a"}
        lines.append(f"| {row['page']} | {words[ours]} / {words[theirs]} | {row['oursChars']} / {row['theirsChars']} | "
                     f"{row['oursMs']} / {row['theirsMs']} |")
    return "\n".join(lines), misses


def report(rows):
    lines = ["| page | LCP element (ours / theirs) | value: ours / theirs | agree | answer chars: ours / theirs "
             "(+ LCPBreakdown) | ms: navigate / ours / theirs |", "|---|---|---|---|---|---|"]
    misses = []
    for row in rows:
        ours, theirs = row["ours"], row["theirs"]
        values, verdicts = [], []
        for name in ("LCP", "loadDelay", "loadDuration", "renderDelay", "TTFB", "CLS"):
            if ours.get(name) is None or theirs.get(name) is None:
                continue
            ok = agree(name, ours[name], theirs[name])
            values.append(f"{name} {ours[name]:g} / {theirs[name]:g}")
            verdicts.append("yes" if ok else "**no**")
            if not ok:
                misses.append(f"{row['page']} {name}: ours {ours[name]:g}, theirs {theirs[name]:g}")
        same = ours["element"] == theirs["element"]
        if not same:
            misses.append(f"{row['page']} LCP element: ours {ours['element']}, theirs {theirs['element']}")
        half = row["oursChars"] * 2 <= row["theirsChars"]
        if not half:
            misses.append(f"{row['page']} characters: ours {row['oursChars']}, theirs {row['theirsChars']}")
        lines.append(f"| {row['page']} | {ours['element']} / {theirs['element']}{'' if same else ' **differ**'} | "
                     f"{'<br>'.join(values)} | {'<br>'.join(verdicts)} | {row['oursChars']} / {row['theirsChars']} "
                     f"(+{row['theirsInsightChars']}){'' if half else ' **over half**'} | "
                     f"{row['navigateMs']} / {row['oursMs']} / {row['theirsMs']} |")
    return "\n".join(lines), misses


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default="1.11.0", help="chrome-devtools-mcp's version (npm)")
    parser.add_argument("--cdm-dir", help="a folder to install it into and reuse (default: a new temporary one)")
    parser.add_argument("--json", help="also write every figure and both answers to this file")
    parser.add_argument("--leaks", action="store_true", help="compare what a click leaks instead of a page's load")
    args = parser.parse_args()
    folder = args.cdm_dir or tempfile.mkdtemp(prefix="cdm-")
    cli = install(folder, args.version)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_port}"
    chromium = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {platform.platform()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}; {chromium}; chrome-devtools-mcp {args.version}; "
          f"command: {' '.join(sys.argv)}")
    if args.leaks:
        rows = asyncio.run(run_leaks(cli, base, list(LEAKS)))
        table, misses = report_leaks(rows)
    else:
        rows = asyncio.run(run(cli, base, ["/lcp", "/css", "/busy", "/shift"]))
        table, misses = report(rows)
    print(table)
    print("Goals missed: " + ("; ".join(misses) if misses else "none"))
    for row in rows:
        print(f"\n--- ours, {row['page']} ({row['oursChars']} characters):\n{row['oursAnswer']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    httpd.shutdown()


if __name__ == "__main__":
    main()
