"""What an agent pays to read: mcpbrowser against @playwright/mcp on one fixed task.

Serves a real documentation site that nobody here wrote (Sphinx's own manual,
Debian's `sphinx-doc` package, installed by this script when missing; it has
JavaScript search) on 127.0.0.1, and runs one list of agent intentions through
each server, each done the cheapest way that server's tools allow:

    open      start, at the index page
    look      a first look at the page, enough to find the link to follow
    follow    click that link; the answer must say where it landed
    search    find the search box, type the query and submit, wait for the results
    results   find the result link for the page wanted
    open_hit  click it
    read      find one passage on that page
    shot      a screenshot
    back      go back to the results
    logs      console errors and the network log
    second    a second, isolated session, in parallel, reading another page

@playwright/mcp is installed from npm into a temporary folder and run with
--headless --isolated on the same Chromium. It has one browser context per
server, so its second session is a second server. Characters are those of the
tools' text content (what a client hands its model); images are counted in
bytes. Speed is measured, not asserted; the test suite runs this script on a
tiny local site (--site) so that it cannot rot.

    .venv/bin/python scripts/agent_bench.py [--json] [--site DIR] [--ours-only]

AGENT_BENCH_SHOW=1 prints every answer to stderr, to see where the characters go.
"""

import argparse
import asyncio
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import AsyncExitStack
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import QuietHandler, install_playwright_mcp, pwmcp_params  # noqa: E402

from mcpbrowser.core.browser_process import find_executable  # noqa: E402

SPHINX_DOC = "/usr/share/doc/sphinx-doc/html"
# What the task looks for on Sphinx's manual. A site passed with --site brings its own
# agent_task.json with the same keys (the smoke test's tiny site does).
SPHINX_TASK = {
    "start": "index.html",
    "start_title": "Sphinx",
    "follow": "Using Sphinx",
    "landed": "usage/index.html",
    "search_box": "Quick search",
    "query": "autodoc",
    "results_done": "Search finished",
    "hit": "sphinx.ext.autodoc",
    "hit_url": "autodoc.html",
    "passage": "autodoc_mock_imports",
    "second": "glossary.html",
    "second_find": "environment",
}
PLAYWRIGHT_MCP_VERSION = "0.0.83"
NO_PLAYWRIGHT_MCP = 3  # exit code: @playwright/mcp could not be installed
STEPS = ("open", "look", "follow", "search", "results", "open_hit", "read", "shot", "back", "logs", "second")
SHOW = os.environ.get("AGENT_BENCH_SHOW") == "1"  # print every answer to stderr, to see what costs
# ours/theirs at most: the answers, the tool list a model reads, and both together; calls: at most theirs
TARGETS = {"chars": 0.5, "tools_list_chars": 0.5, "all_in_chars": 0.5}


class StepFailed(Exception):
    pass


class Meter:
    """Counts what one server's answers cost, per step."""

    def __init__(self):
        self.steps = {name: {"chars": 0, "image_bytes": 0, "calls": 0, "ms": 0.0, "ok": False} for name in STEPS}
        self.step = None

    async def call(self, session, tool, args, step=None):
        started = time.perf_counter()
        result = await session.call_tool(tool, args)
        row = self.steps[step or self.step]
        row["ms"] += (time.perf_counter() - started) * 1000
        row["calls"] += 1
        text = "\n".join(c.text for c in result.content if c.type == "text")
        row["chars"] += len(text)
        row["image_bytes"] += sum(len(base64.b64decode(c.data)) for c in result.content if c.type == "image")
        if SHOW:
            print(f"----- {step or self.step}: {tool} {json.dumps(args)}\n{text}", file=sys.stderr)
        if result.is_error:
            raise StepFailed(f"{tool} failed: {text[:300]}")
        return text


def answer(text):
    """The JSON that opens one of our answers (page text may follow it, as a block of its own)."""
    return json.JSONDecoder().raw_decode(text)[0]


def ref_of(text, name, role=""):
    """The ref on the first snapshot line (of that role) that names `name`; both servers write [ref=…]."""
    for line in text.splitlines():
        if name.lower() in line.lower() and "[ref=" in line and f"- {role}" in line:
            return line.split("[ref=", 1)[1].split("]", 1)[0]
    raise StepFailed(f"no ref for {name!r} in: {text[:300]}")


def expect(condition, what):
    if not condition:
        raise StepFailed(what)


# -- mcpbrowser ---------------------------------------------------------------------------

async def ours_task(meter, sessions, base, task):
    s, second_s = sessions
    m = meter.call

    async def first():
        meter.step = "open"
        opened = answer(await m(s, "create_session", {"url": base + task["start"]}))
        sid = opened["sessionId"]
        expect(task["start_title"] in opened.get("title", ""), f"open: {opened}")
        meter.step = "look"
        look = await m(s, "snapshot", {"sessionId": sid, "compact": True})
        meter.step = "follow"
        got = answer(await m(s, "click", {"sessionId": sid, "ref": ref_of(look, task["follow"], "link")}))
        expect(task["landed"] in got.get("url", ""), f"follow landed at {got.get('url')}")
        meter.step = "search"
        box = await m(s, "snapshot", {"sessionId": sid, "query": task["search_box"]})
        await m(s, "type", {"sessionId": sid, "ref": ref_of(box, task["search_box"], "textbox"), "text": task["query"],
                            "submit": True})
        await m(s, "wait_for", {"sessionId": sid, "text": task["results_done"]})
        meter.step = "results"
        hits = await m(s, "snapshot", {"sessionId": sid, "query": task["hit"]})
        meter.step = "open_hit"
        got = answer(await m(s, "click", {"sessionId": sid, "ref": ref_of(hits, task["hit"], "link")}))
        expect(task["hit_url"] in got.get("url", ""), f"open_hit landed at {got.get('url')}")
        meter.step = "read"
        passage = answer(await m(s, "get_content", {"ref_id": got["refId"], "search_for": task["passage"]}))
        expect(passage["matches"] > 0, "read: passage not found")
        meter.step = "shot"
        await m(s, "screenshot", {"sessionId": sid})
        meter.step = "back"
        got = answer(await m(s, "go_back", {"sessionId": sid}))
        expect("search" in got["url"], f"back at {got['url']}")
        meter.step = "logs"
        await m(s, "console_logs", {"sessionId": sid, "level": "error"})
        await m(s, "network_logs", {"sessionId": sid})

    async def second():
        m2 = partial(m, step="second")
        got = answer(await m2(second_s, "create_session", {"url": base + task["second"]}))
        found = await m2(second_s, "get_content", {"ref_id": got["pageRefId"], "search_for": task["second_find"]})
        expect(answer(found)["matches"] > 0, "second: nothing found")

    await run_task(meter, first, second)


# -- @playwright/mcp ----------------------------------------------------------------------

async def theirs_task(meter, sessions, base, task):
    s, second_s = sessions
    m = meter.call

    async def first():
        meter.step = "open"
        answer = await m(s, "browser_navigate", {"url": base + task["start"]})
        expect(task["start_title"] in answer, f"open: {answer[:300]}")
        meter.step = "look"
        # Its cheapest first look: the shallowest snapshot that shows the link to follow,
        # found beforehand (the probes are not counted: an agent would pick one depth).
        for depth in range(2, 30):
            probe = await s.call_tool("browser_snapshot", {"depth": depth})
            if task["follow"] in probe.content[0].text:
                break
        look = await m(s, "browser_snapshot", {"depth": depth})
        meter.step = "follow"
        answer = await m(s, "browser_click", {"element": task["follow"],
                                              "target": ref_of(look, task["follow"], "link")})
        expect(task["landed"] in answer, f"follow: {answer[:300]}")
        meter.step = "search"
        box = await m(s, "browser_find", {"text": task["search_box"]})
        await m(s, "browser_type", {"element": task["search_box"], "target": ref_of(box, task["search_box"], "textbox"),
                                    "text": task["query"], "submit": True})
        await m(s, "browser_wait_for", {"text": task["results_done"]})
        meter.step = "results"
        hits = await m(s, "browser_find", {"text": task["hit"]})
        meter.step = "open_hit"
        answer = await m(s, "browser_click", {"element": task["hit"], "target": ref_of(hits, task["hit"], "link")})
        expect(task["hit_url"] in answer, f"open_hit: {answer[:300]}")
        meter.step = "read"
        passage = await m(s, "browser_find", {"text": task["passage"]})
        expect(task["passage"] in passage, "read: passage not found")
        meter.step = "shot"
        await m(s, "browser_take_screenshot", {})
        meter.step = "back"
        answer = await m(s, "browser_navigate_back", {})
        expect("search" in answer, f"back: {answer[:300]}")
        meter.step = "logs"
        await m(s, "browser_console_messages", {"level": "error"})
        await m(s, "browser_network_requests", {})

    async def second():
        m2 = partial(m, step="second")
        await m2(second_s, "browser_navigate", {"url": base + task["second"]})
        found = await m2(second_s, "browser_find", {"text": task["second_find"]})
        expect(task["second_find"].lower() in found.lower(), "second: nothing found")

    await run_task(meter, first, second)


async def run_task(meter, first, second):
    """The first session's steps, with the second session's running alongside."""
    started = time.perf_counter()
    await asyncio.gather(first(), second())
    for row in meter.steps.values():
        row["ok"] = True
    meter.wall_ms = (time.perf_counter() - started) * 1000


# -- running it ---------------------------------------------------------------------------

def ensure_site(site):
    if os.path.exists(os.path.join(site, "index.html")):
        return site
    if site != SPHINX_DOC:
        sys.exit(f"{site} has no index.html")
    if os.geteuid() != 0:
        sys.exit("Sphinx's manual is missing: run `apt-get install sphinx-doc` as root, or pass --site DIR")
    print("installing Debian's sphinx-doc…", file=sys.stderr)
    subprocess.run(["apt-get", "update", "-qq"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["apt-get", "install", "-y", "-qq", "sphinx-doc"], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    return site


class _Quiet(QuietHandler, SimpleHTTPRequestHandler):
    pass


def serve(site):
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=site))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}/"


async def measure(params_pair, task_fn, base, task):
    meter = Meter()
    async with AsyncExitStack() as stack:
        sessions = []
        for params in params_pair:
            read, write = await stack.enter_async_context(stdio_client(params, errlog=open(os.devnull, "w")))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions.append(session)
        tools = [t.model_dump(by_alias=True, exclude_none=True) for t in (await sessions[0].list_tools()).tools]
        # What a client hands its model on every turn: each tool's name, description and input
        # schema (json.dumps' default separators). The whole JSON (titles, annotations, output
        # schemas) is what crosses the wire, reported beside it.
        meter.tools_list_chars = len(json.dumps([{k: t[k] for k in ("name", "description", "inputSchema")}
                                                 for t in tools]))
        meter.tools_list_json_chars = len(json.dumps(tools))
        await asyncio.sleep(1.0)  # both servers start their browsers at their own pace; not the agent's cost
        try:
            await task_fn(meter, sessions, base, task)
            meter.error = None
        except StepFailed as exc:
            meter.error = f"{meter.step}: {exc}"
            meter.wall_ms = None
    return meter


def totals(meter):
    rows = meter.steps.values()
    chars = sum(r["chars"] for r in rows)
    return {"chars": chars, "image_bytes": sum(r["image_bytes"] for r in rows),
            "calls": sum(r["calls"] for r in rows), "ms": round(meter.wall_ms) if meter.wall_ms else None,
            "all_ok": meter.error is None, "tools_list_chars": meter.tools_list_chars,
            "tools_list_json_chars": meter.tools_list_json_chars, "all_in_chars": chars + meter.tools_list_chars}


def ratio(a, b):
    return round(a / b, 2) if a is not None and b else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", default=SPHINX_DOC, help="folder of the site to serve (default: Sphinx's manual)")
    parser.add_argument("--ours-only", action="store_true", help="skip @playwright/mcp")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--playwright-mcp-version", default=PLAYWRIGHT_MCP_VERSION,
                        help=f"the @playwright/mcp to compare with (default {PLAYWRIGHT_MCP_VERSION}, the one the "
                             "README's table used; its tools change between releases)")
    args = parser.parse_args()
    site = ensure_site(args.site)
    task_file = os.path.join(site, "agent_task.json")
    task = json.load(open(task_file)) if os.path.exists(task_file) else SPHINX_TASK
    executable = find_executable("chromium")
    server, base = serve(site)
    temp = tempfile.mkdtemp(prefix="agent-bench-")
    try:
        ours_params = StdioServerParameters(command=sys.executable, args=[
            "-m", "mcpbrowser", "--headless", "--rate-limit", "0", "--db", os.path.join(temp, "history.db")])
        results = {"site": site, "task": task, "playwright_mcp_version": args.playwright_mcp_version}
        ours = asyncio.run(measure([ours_params], lambda m, s, b, t: ours_task(m, s * 2, b, t), base, task))
        results["ours"] = {"steps": ours.steps, "total": totals(ours), "error": ours.error}
        if not args.ours_only:
            if not (shutil.which("node") and shutil.which("npm")):
                print("node and npm are needed for @playwright/mcp (or pass --ours-only)", file=sys.stderr)
                return NO_PLAYWRIGHT_MCP
            try:
                cli = install_playwright_mcp(os.path.join(temp, "pwmcp"), args.playwright_mcp_version)
            except subprocess.CalledProcessError as exc:
                print(f"could not install @playwright/mcp from npm: {exc}", file=sys.stderr)
                return NO_PLAYWRIGHT_MCP
            theirs = asyncio.run(measure([pwmcp_params(cli, executable)] * 2, theirs_task, base, task))
            results["theirs"] = {"steps": theirs.steps, "total": totals(theirs), "error": theirs.error}
            ot, tt = results["ours"]["total"], results["theirs"]["total"]
            results["ratios"] = {k: ratio(ot[k], tt[k]) for k in (
                "chars", "tools_list_chars", "all_in_chars", "image_bytes", "calls", "ms")}
            results["targets_met"] = {
                **{k: results["ratios"][k] is not None and results["ratios"][k] <= limit
                   for k, limit in TARGETS.items()},
                "calls": ot["calls"] <= tt["calls"], "all_ok": ot["all_ok"] and tt["all_ok"]}
    finally:
        server.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        report(results)
    theirs_ok = "theirs" not in results or results["theirs"]["error"] is None
    return 0 if results["ours"]["error"] is None and theirs_ok else 1


def report(results):
    sides = [s for s in ("ours", "theirs") if s in results]
    head = f"{'step':<10}" + "".join(f"{s + ' chars':>14}{'calls':>7}{'ms':>8}" for s in sides)
    print(head)
    for name in STEPS:
        line = f"{name:<10}"
        for side in sides:
            row = results[side]["steps"][name]
            mark = "" if row["ok"] else " ✗"
            line += f"{row['chars']:>14}{row['calls']:>7}{round(row['ms']):>8}{mark}"
        print(line)
    line = f"{'total':<10}"
    for side in sides:
        t = results[side]["total"]
        line += f"{t['chars']:>14}{t['calls']:>7}{t['ms'] if t['ms'] is not None else '-':>8}"
    print(line)
    for side in sides:
        t = results[side]["total"]
        print(f"{side}: image bytes {t['image_bytes']}, tools/list {t['tools_list_chars']} characters as a model "
              f"reads it ({t['tools_list_json_chars']} as JSON), all in {t['all_in_chars']}"
              + (f", FAILED at {results[side]['error']}" if results[side]["error"] else ""))
    if "ratios" in results:
        print("ours/theirs:", ", ".join(f"{k} {v}" for k, v in results["ratios"].items()))
        print("targets met:", ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in results["targets_met"].items()))


if __name__ == "__main__":
    sys.exit(main())
