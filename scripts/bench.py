"""Benchmark: mcpbrowser (over stdio and HTTP) against raw Playwright (the floor) and, optionally,
@playwright/mcp and the playwright wheel's own `python -m playwright mcp`.

One run serves its own page on 127.0.0.1 and runs one agent workload
(navigate, type into an input, click a button, take a snapshot) through each contender, then
prints a table of medians, p90s and ratios, or JSON with --json.

    .venv/bin/python scripts/bench.py [--rounds 30] [--sessions 8] [--repeats 3] [--think-ms 100]
                                      [--http-clients 4] [--with-playwright-mcp] [--json]

Every contender runs in the same rounds, in turn, so the drift of a shared machine
(20-40% between runs minutes apart) stays out of the ratios; the concurrent workload
alternates raw and ours --repeats times and the medians count. mcpbrowser runs with
its defaults: history in an SQLite file, snapshot capture, a warm pool.

The per-call workload runs twice: with a pause between calls (--think-ms, 100 ms
by default, for every contender alike: an agent's model thinks between tool
calls, typically for seconds), which is where the targets apply, and back to
back, the worst case for mcpbrowser, whose after-call snapshot capture would
otherwise overlap that thinking.

Over HTTP (`--http`, the same server and client library, handshake era like the
stdio contender) the per-call cost of the transport shows against stdio; the
concurrent workload also runs as --http-clients clients sharing --sessions sessions
on one HTTP server, against one stdio client holding them all.

`--http-only` runs the per-call workload over HTTP alone, twice interleaved: as the
official client sends it (Accept-Encoding: gzip, so answers come compressed) and with
Accept-Encoding: identity (plain, as every answer was before compression); time and
bytes on the wire per call, plus a snapshot of a long page and tools/list.

Speed is measured here, never in the test suite.
"""

import argparse
import atexit
import functools
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from mcpbrowser.core.browser_process import SharedBrowser, find_executable
from mcpbrowser.process_tree import child_pids, cmdline, cpu_s, descendants, tree_pss_kb

PAGE = b"""<!doctype html><title>Bench</title>
<label for="q">Query</label><input id="q">
<button id="go" onclick="document.title = 'done ' + document.getElementById('q').value">Go</button>"""
OPS = ("navigate", "type", "click", "snapshot")
IDLE_S = 3.0  # memory is measured this long after the last call, for every contender alike
WARMUP_ROUNDS = 3  # rounds run before the measured ones, for every contender alike
START_S = 2.0  # our browser and warm pool start in the background this long before the first timing
REFILL_S = 1.5  # the pool refills this long after each timed create_session
CPU_THINK_S = 0.3  # at least this long after each navigate of the CPU phase: our capture runs in it
QUICK_PAUSE_S = 0.1  # --quick: each of the pauses above
SETTLE_S = 0.1  # pause between one contender's turn and the next one's


class QuietHandler:
    """Request-handler mixin: no access log, and a browser that hung up is not an error."""

    def log_message(self, *args):
        pass

    def handle(self):
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser dropped a request it no longer wanted (a favicon, say)


# /long: a page whose snapshot is large (~60 KB of answer), where compression shows.
LONG_PAGE = (b"<!doctype html><title>Long</title><ul>"
             + b"".join(b"<li><a href='/item%d'>Item number %d</a></li>" % (i, i) for i in range(300)) + b"</ul>")


class _Page(QuietHandler, BaseHTTPRequestHandler):
    def do_GET(self):
        body = LONG_PAGE if self.path == "/long" else PAGE
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def serve_page():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_port}/"


def stats(samples):
    ordered = sorted(samples)
    return {"median_ms": round(statistics.median(ordered) * 1000, 2),
            "p90_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))] * 1000, 2),
            "n": len(ordered)}


def timed(fn):
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


# -- the per-call workload, every contender in the same rounds -----------------------------

class RawPlaywright:
    """The floor: Playwright's sync API on a thread of its own, where its objects must stay."""

    def __init__(self, executable):
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="raw")
        self._thread.submit(self._open, executable).result()

    def _open(self, executable):
        from playwright.sync_api import sync_playwright

        self._manager = sync_playwright()
        self._browser = self._manager.start().chromium.launch(executable_path=executable, headless=True)
        self.page = self._browser.new_context().new_page()

    def steps(self, url, i):
        page = self.page
        return [(op, functools.partial(self._timed, fn)) for op, fn in (
            ("navigate", lambda: page.goto(url)),
            ("type", lambda: page.locator("#q").first.fill(f"query {i}")),
            ("click", lambda: page.locator("#go").first.click()),
            ("snapshot", lambda: page.aria_snapshot(mode="ai")))]  # the tree with refs, as ours and theirs

    async def _timed(self, fn):
        # Timed on the Playwright thread itself: the hop to it is the benchmark's, not Playwright's.
        return await anyio.to_thread.run_sync(self._thread.submit(timed, fn).result)

    def first_read(self, url, rounds):
        """{op: stats}: what the first read through Playwright's injected script costs on a new document.

        A page's first locator or aria snapshot waits for Playwright to set up its script in the
        document: a fill right after goto pays it, a fill after a snapshot does not. Whoever reads a
        new document pays it once: raw Playwright in its first action, @playwright/mcp in navigate
        (its answer is a snapshot), mcpbrowser in the capture after navigate, which a call sent back
        to back waits for. See docs/performance.md (issue 54)."""
        page, samples = self.page, {}

        def run():
            for i in range(rounds + WARMUP_ROUNDS):
                timings = []
                page.goto(url)
                timings.append(("fill, first read of the document", timed(lambda: page.locator("#q").fill("a"))))
                page.goto(url)
                timings.append(("aria snapshot, first read", timed(lambda: page.aria_snapshot(mode="ai"))))
                timings.append(("fill after it", timed(lambda: page.locator("#q").fill("b"))))
                if i >= WARMUP_ROUNDS:
                    for op, took in timings:
                        samples.setdefault(op, []).append(took)

        self._thread.submit(run).result()
        out = {op: stats(values) for op, values in samples.items()}
        out["setup_ms"] = round(out["fill, first read of the document"]["median_ms"]
                                - out["fill after it"]["median_ms"], 1)
        return out

    def thread_cpu_s(self):
        """CPU seconds of the Playwright thread itself (Python's share of raw Playwright's work)."""
        return self._thread.submit(time.thread_time).result()

    def navigate_and_title(self, url):
        """What our navigate does: the page loaded, its title read."""
        return self._thread.submit(lambda: (self.page.goto(url), self.page.title())).result()

    def close(self):
        def stop():
            self._browser.close()
            self._manager.__exit__(None, None, None)

        self._thread.submit(stop).result()
        self._thread.shutdown()


def mcp_step(session, name, arguments):
    async def step():
        started = time.perf_counter()
        await _call(session, name, arguments)
        return time.perf_counter() - started

    return step


async def interleaved_rounds(rounds, think_s, contenders):
    """{name: {op: stats}}: each round runs every contender's navigate, type and click in turn.

    Interleaving keeps this shared machine's drift (20-40% between runs minutes apart)
    out of the ratios. Between calls each contender pauses think_s; between contenders'
    turns at least SETTLE_S, so no one's background work (our after-call capture, say)
    runs during another's calls.
    """
    samples: dict = {name: {} for name in contenders}
    for i in range(rounds + WARMUP_ROUNDS):
        for name, steps in contenders.items():
            for op, step in steps(i):
                took = await step()
                if i >= WARMUP_ROUNDS:  # warm-up rounds are not counted
                    samples[name].setdefault(op, []).append(took)
                await anyio.sleep(think_s)
            await anyio.sleep(max(0.0, SETTLE_S - think_s))
    return {name: {op: stats(values) for op, values in ops.items()} for name, ops in samples.items()}


CPU_NAVIGATES = 5  # navigates in one contender's turn of the CPU phase (the clock ticks at 10 ms)
CPU_WARMUP_TURNS = 1  # turns of each contender before the CPU phase's measured ones


def process_kind(pid, root):
    """What a process of a contender's tree is, for the CPU split: a Chromium process type, or ours.

    The command lines of Chromium and the relays name our runtime folder, so only the root is "server".
    """
    line = cmdline(pid)
    if pid == root:
        return "driver" if "run-driver" in line else "server"
    for kind in ("renderer", "gpu-process", "utility", "zygote"):
        if f"--type={kind}" in line:
            return kind
    if "launch_server.js" in line:
        return "launcher"
    return "browser" if "chrom" in line.split(" ", 1)[0] else "relay"  # a relay runs in the driver's place


def tree_cpu_by_kind(pid):
    """{kind: CPU seconds} over a process tree (see process_kind)."""
    out = {}
    for p in [pid, *descendants(pid)]:
        kind = process_kind(p, pid)
        out[kind] = out.get(kind, 0.0) + cpu_s(p)
    return out


async def cpu_per_navigate(executable, urls, rounds, think_s, databases):
    """CPU ms per navigate of each contender's whole process tree, read from /proc, in interleaved turns.

    Raw Playwright: its Node.js driver and browser (tree) plus its Python thread, for
    goto + title. Ours: the server's tree (Python, launcher, browser, relays) for the
    navigate tool, whose after-call capture runs in the think time and is counted; and
    ours with --response-mode lean, which captures nothing after page-changing calls, to
    show what the capture costs. The same three contenders measure each of `urls` in turn.
    For each: {"url", "raw_ms", "mcpbrowser_ms", "ratio", "ratios", "lean_ms", "lean_ratio",
    "by_process"}: medians over turns, each turn's ratio, and each side's ms per navigate by
    process kind (renderer, browser, ...).
    """
    drivers = set(child_pids("run-driver"))
    raw = RawPlaywright(executable)
    out = []
    try:
        (driver,) = set(child_pids("run-driver")) - drivers

        def raw_cpu():
            return {**tree_cpu_by_kind(driver), "python thread": raw.thread_cpu_s()}

        async def raw_navigate(url):
            await anyio.to_thread.run_sync(raw.navigate_and_title, url)

        async with AsyncExitStack() as stack:
            sides = {"raw": (raw_navigate, raw_cpu)}
            for name, args in (("mcpbrowser", ()), ("lean", ("--response-mode", "lean"))):
                servers = set(child_pids("mcpbrowser"))
                session = await connect(stack, next(databases), *args)
                (server,) = set(child_pids("mcpbrowser")) - servers
                sid = json.loads((await _call(session, "create_session", {})).content[0].text)["sessionId"]
                sides[name] = (functools.partial(_navigate, session, sid), functools.partial(tree_cpu_by_kind, server))
            for url in urls:
                used = {name: [] for name in sides}
                for i in range(rounds + CPU_WARMUP_TURNS):
                    for name, (navigate, cpu) in sides.items():
                        before = cpu()
                        for _ in range(CPU_NAVIGATES):
                            await navigate(url)
                            await anyio.sleep(think_s)
                        await anyio.sleep(SETTLE_S)
                        if i >= CPU_WARMUP_TURNS:
                            after = cpu()
                            used[name].append({k: (after[k] - before.get(k, 0.0)) * 1000 / CPU_NAVIGATES
                                               for k in after})
                out.append({"url": url, **_cpu_summary(used)})
    finally:
        raw.close()
    return out


async def _navigate(session, sid, url):
    await _call(session, "navigate", {"sessionId": sid, "url": url})


def _cpu_summary(used):
    totals = {name: [sum(turn.values()) for turn in turns] for name, turns in used.items()}

    def ratios(name):
        return [round(ours / theirs, 2) for ours, theirs in zip(totals[name], totals["raw"], strict=True)]

    by_process = {name: {k: round(statistics.median(turn.get(k, 0.0) for turn in turns), 1)
                         for k in sorted({k for turn in turns for k in turn})} for name, turns in used.items()}
    return {"raw_ms": round(statistics.median(totals["raw"]), 1),
            "mcpbrowser_ms": round(statistics.median(totals["mcpbrowser"]), 1),
            "ratio": round(statistics.median(ratios("mcpbrowser")), 2), "ratios": ratios("mcpbrowser"),
            "lean_ms": round(statistics.median(totals["lean"]), 1),
            "lean_ratio": round(statistics.median(ratios("lean")), 2), "by_process": by_process}


def raw_concurrent(executable, url, sessions, rounds):
    """N threads, each with its own sync_playwright, on one shared browser server."""
    from playwright.sync_api import sync_playwright

    # Playwright's own launch arguments: raw Playwright gets none of our Chromium tuning.
    shared = SharedBrowser("chromium", executable, True, tuned=False)
    endpoint = shared.start().ws  # the public way: each thread's own driver connects
    ready, go = threading.Barrier(sessions + 1), threading.Event()

    def worker(_):
        with sync_playwright() as pw:
            try:
                browser = pw.chromium.connect(endpoint)
                page = browser.new_context().new_page()
                page.goto(url)
            except BaseException:
                ready.abort()  # the main thread must not wait for a worker that failed
                raise
            ready.wait()
            go.wait()
            for i in range(rounds):
                page.goto(url)
                page.locator("#q").first.fill(f"q{i}")
                page.locator("#go").first.click()
            browser.close()

    with ThreadPoolExecutor(sessions) as pool:
        futures = [pool.submit(worker, n) for n in range(sessions)]
        try:
            ready.wait()
        except threading.BrokenBarrierError:
            for fut in futures:
                fut.result()  # raises the worker's own error
            raise
        started = time.perf_counter()
        go.set()
        for fut in futures:
            fut.result()
        elapsed = time.perf_counter() - started
    shared.stop()
    return {"ops_per_s": round(sessions * rounds * 3 / elapsed, 1), "seconds": round(elapsed, 2)}


def raw_one_driver(executable, url, sessions, rounds):
    """N contexts driven by one Node.js driver: Playwright's async API, N workloads on one event loop."""
    from playwright.async_api import async_playwright

    async def run():
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=executable, headless=True)
            pages = [await (await browser.new_context()).new_page() for _ in range(sessions)]
            for page in pages:
                await page.goto(url)

            async def workload(page):
                for i in range(rounds):
                    await page.goto(url)
                    await page.locator("#q").first.fill(f"q{i}")
                    await page.locator("#go").first.click()

            started = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for page in pages:
                    tg.start_soon(workload, page)
            elapsed = time.perf_counter() - started
            await browser.close()
        return elapsed

    elapsed = anyio.run(run)
    return {"ops_per_s": round(sessions * rounds * 3 / elapsed, 1), "seconds": round(elapsed, 2)}


# -- MCP servers through the official client --------------------------------------------

async def _call(session, name, arguments):
    result = await session.call_tool(name, arguments)
    if result.is_error:
        raise RuntimeError(f"{name} failed: {result.content[0].text[:300]}")
    return result


def mcpbrowser_params(db, *args):
    # --rate-limit 0: the default 60 calls a minute per tool would throttle the measurement itself.
    # --db: a file, as by default (history on disk), in the benchmark's own temporary folder.
    return StdioServerParameters(command=sys.executable, args=["-m", "mcpbrowser", "--headless", "--rate-limit", "0",
                                                             "--db", db, *args])


def start_http_server(stack, db, *args):
    """`mcpbrowser --http 127.0.0.1:0` as a child process; its endpoint URL once it serves."""
    # --http-rate-limit 0: without tokens every client here is one address, and the workload
    # alone sends more than the default 600 requests a minute.
    params = mcpbrowser_params(db, "--http", "127.0.0.1:0", "--http-rate-limit", "0", *args)
    errlog = tempfile.NamedTemporaryFile("w+", prefix="mcpbrowser-bench-http-")
    proc = subprocess.Popen([params.command, *params.args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=errlog)
    stack.callback(errlog.close)
    stack.callback(proc.wait, 10)
    stack.callback(proc.terminate)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(errlog.name) as f:
            for line in f:
                if '"http_serving"' in line:
                    return json.loads(line)["url"]
        time.sleep(0.05)
    raise RuntimeError("the HTTP server did not start")


async def connect(stack, db, *args, http=False):
    """A ClientSession (handshake era) on a fresh server of ours, over stdio or HTTP."""
    if http:
        url = start_http_server(stack, db, *args)
        read, write = await stack.enter_async_context(streamable_http_client(url))
    else:
        read, write = await stack.enter_async_context(
            stdio_client(mcpbrowser_params(db, *args), errlog=open(os.devnull, "w")))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


async def open_mcpbrowser(stack, url, db, *args, warm_creates=5, http=False):
    """Start our server; ({initialize_ms, create_session_warm}, steps) of one session."""
    out = {}
    spawned = time.perf_counter()
    session = await connect(stack, db, *args, http=http)
    out["initialize_ms"] = round((time.perf_counter() - spawned) * 1000, 1)
    await anyio.sleep(START_S)  # the browser and the warm pool start in the background
    warm = []
    for _ in range(warm_creates):
        started = time.perf_counter()
        result = await _call(session, "create_session", {})
        warm.append(time.perf_counter() - started)
        sid = json.loads(result.content[0].text)["sessionId"]
        await _call(session, "close_session", {"sessionId": sid})
        await anyio.sleep(REFILL_S)  # let the pool refill
    if warm:
        out["create_session_warm"] = stats(warm)
    sid = json.loads((await _call(session, "create_session", {})).content[0].text)["sessionId"]

    def steps(i):
        return [(op, mcp_step(session, op, {"sessionId": sid, **args}))
                for op, args in (("navigate", {"url": url}),
                                 ("type", {"selector": "#q", "text": f"query {i}"}),
                                 ("click", {"selector": "#go"}),
                                 ("snapshot", {}))]

    return out, steps


async def first_navigate(url, db, cli=None, executable=None, tries=3):
    """Milliseconds from spawning a server to its first navigate's answer (ours: initialize, create_session,
    navigate; @playwright/mcp: initialize, browser_navigate), `tries` times each, alternating."""
    times = {"mcpbrowser": [], **({"playwright_mcp": []} if cli else {})}
    for n in range(tries):
        for name in times:
            async with AsyncExitStack() as stack:
                spawned = time.perf_counter()
                if name == "mcpbrowser":
                    session = await connect(stack, f"{db}.{n}")
                    sid = json.loads((await _call(session, "create_session", {})).content[0].text)["sessionId"]
                    await _call(session, "navigate", {"sessionId": sid, "url": url})
                else:
                    read, write = await stack.enter_async_context(
                        stdio_client(pwmcp_params(cli, executable), errlog=open(os.devnull, "w")))
                    session = await stack.enter_async_context(ClientSession(read, write))
                    await session.initialize()
                    await _call(session, "browser_navigate", {"url": url})
                times[name].append(time.perf_counter() - spawned)
    out = {name: stats(values) for name, values in times.items()}
    if cli:
        out["ratio"] = ratio(out["mcpbrowser"]["median_ms"], out["playwright_mcp"]["median_ms"])
    return out


async def mcpbrowser_cold_create(db, creates=5):
    async with stdio_client(mcpbrowser_params(db, "--pool-size", "0"), errlog=open(os.devnull, "w")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await anyio.sleep(START_S)
            cold = []
            for _ in range(creates):
                started = time.perf_counter()
                sid = json.loads((await _call(session, "create_session", {})).content[0].text)["sessionId"]
                cold.append(time.perf_counter() - started)
                await _call(session, "close_session", {"sessionId": sid})
    return stats(cold)


async def concurrent_workload(sessions, url, rounds):
    """Seconds for every (client session, sessionId) to run navigate, type and click `rounds` times, all at once."""

    async def workload(conn, sid):
        for i in range(rounds):
            await _call(conn, "navigate", {"sessionId": sid, "url": url})
            await _call(conn, "type", {"sessionId": sid, "selector": "#q", "text": f"q{i}"})
            await _call(conn, "click", {"sessionId": sid, "selector": "#go"})

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for conn, sid in sessions:
            tg.start_soon(workload, conn, sid)
    return time.perf_counter() - started


async def mcpbrowser_concurrent(url, sessions, rounds, db, *args):
    async with stdio_client(mcpbrowser_params(db, "--max-sessions", str(sessions + 2), *args),
                            errlog=open(os.devnull, "w")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            ids = []
            for _ in range(sessions):
                result = await _call(session, "create_session", {})
                ids.append(json.loads(result.content[0].text)["sessionId"])
            for sid in ids:
                await _call(session, "navigate", {"sessionId": sid, "url": url})

            elapsed = await concurrent_workload([(session, sid) for sid in ids], url, rounds)
            busy = sum(tree_pss_kb(pid) for pid in child_pids("mcpbrowser"))
            # Then as sessions are while an agent thinks: the pool refilled (it counts in the
            # total), and --idle-gc (1 s) has collected the pages' JavaScript heaps.
            await anyio.sleep(IDLE_S)
            idle = sum(tree_pss_kb(pid) for pid in child_pids("mcpbrowser"))
    return {"ops_per_s": round(sessions * rounds * 3 / elapsed, 1), "seconds": round(elapsed, 2),
            "pss_mb": round(idle / 1024, 1), "pss_busy_mb": round(busy / 1024, 1)}


async def mcpbrowser_http_concurrent(url, clients, sessions, rounds, db):
    """The concurrent workload over HTTP: `clients` clients share `sessions` sessions on one server."""
    async with AsyncExitStack() as stack:
        endpoint = start_http_server(stack, db, "--max-sessions", str(sessions + 2))
        conns = []
        for _ in range(clients):
            read, write = await stack.enter_async_context(streamable_http_client(endpoint))
            conn = await stack.enter_async_context(ClientSession(read, write))
            await conn.initialize()
            conns.append(conn)
        owned = []
        for n in range(sessions):
            conn = conns[n % clients]
            sid = json.loads((await _call(conn, "create_session", {})).content[0].text)["sessionId"]
            await _call(conn, "navigate", {"sessionId": sid, "url": url})
            owned.append((conn, sid))

        elapsed = await concurrent_workload(owned, url, rounds)
    return {"ops_per_s": round(sessions * rounds * 3 / elapsed, 1), "seconds": round(elapsed, 2)}


# -- @playwright/mcp, and the playwright wheel's `python -m playwright mcp` ----------------

def python_pwmcp_params(executable):
    folder = tempfile.mkdtemp(prefix="mcpbrowser-bench-pypwmcp-")  # where it writes its snapshots
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return StdioServerParameters(command=sys.executable, args=["-m", "playwright", "mcp", "--headless", "--isolated",
                                                               "--browser", "chromium", "--executable-path",
                                                               executable], cwd=folder)



def install_playwright_mcp(folder, version="latest"):
    subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", folder,
                    f"@playwright/mcp@{version}"], check=True, stdout=subprocess.DEVNULL)
    return os.path.join(folder, "node_modules", "@playwright", "mcp", "cli.js")


def pwmcp_params(cli, executable):
    # It writes snapshots under .playwright-mcp/ in its working directory: keep that in the temp folder.
    return StdioServerParameters(command="node", args=[cli, "--headless", "--isolated", "--browser", "chromium",
                                                        "--executable-path", executable],
                                 cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(cli)))))


async def open_playwright_mcp(stack, params, url):
    """Start @playwright/mcp (or the wheel's): ({initialize_ms}, steps) of its one page."""
    spawned = time.perf_counter()
    read, write = await stack.enter_async_context(stdio_client(params, errlog=open(os.devnull, "w")))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    out = {"initialize_ms": round((time.perf_counter() - spawned) * 1000, 1)}

    # Its element tools take a ref or a unique selector as `target`: the same
    # selectors as ours, so neither side pays for a snapshot round trip.
    def steps(i):
        return [("navigate", mcp_step(session, "browser_navigate", {"url": url})),
                ("type", mcp_step(session, "browser_type", {"element": "Query", "target": "#q",
                                                            "text": f"query {i}"})),
                ("click", mcp_step(session, "browser_click", {"element": "Go", "target": "#go"})),
                ("snapshot", mcp_step(session, "browser_snapshot", {}))]

    return out, steps


async def per_call(executable, url, rounds, think_s, databases, cli=None, creates=5):
    """The per-call workload of raw Playwright, mcpbrowser (over stdio without and with a domain
    policy, and over HTTP) and (with cli) @playwright/mcp and `python -m playwright mcp`, interleaved."""
    results = {}
    async with AsyncExitStack() as stack:
        raw = RawPlaywright(executable)
        stack.callback(raw.close)
        contenders = {"raw": functools.partial(raw.steps, url)}
        results["mcpbrowser"], contenders["mcpbrowser"] = await open_mcpbrowser(stack, url, next(databases),
                                                                                warm_creates=creates)
        # The same server with an allowlist: its sessions go through the filtering proxy.
        results["mcpbrowser_policy"], contenders["mcpbrowser_policy"] = await open_mcpbrowser(
            stack, url, next(databases), "--allowed-domains", "127.0.0.1", warm_creates=0)
        results["mcpbrowser_http"], contenders["mcpbrowser_http"] = await open_mcpbrowser(
            stack, url, next(databases), warm_creates=0, http=True)
        if cli:
            results["playwright_mcp"], contenders["playwright_mcp"] = await open_playwright_mcp(
                stack, pwmcp_params(cli, executable), url)
            results["python_playwright_mcp"], contenders["python_playwright_mcp"] = await open_playwright_mcp(
                stack, python_pwmcp_params(executable), url)
        for key, pause in (("ops", think_s), ("ops_b2b", 0.0)):
            for name, ops in (await interleaved_rounds(rounds, pause, contenders)).items():
                results.setdefault(name, {})[key] = ops
        results["first_read"] = await anyio.to_thread.run_sync(raw.first_read, url, rounds)
    return results


async def pwmcp_memory(cli, executable, url, sessions):
    """PSS of N @playwright/mcp instances, one page each (it has one browser per instance)."""
    async with anyio.create_task_group() as tg:
        ready, done = anyio.Event(), anyio.Event()
        opened = []

        async def instance():
            async with stdio_client(pwmcp_params(cli, executable), errlog=open(os.devnull, "w")) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await _call(session, "browser_navigate", {"url": url})
                    opened.append(1)
                    if len(opened) == sessions:
                        ready.set()
                    await done.wait()

        for _ in range(sessions):
            tg.start_soon(instance)
        await ready.wait()
        await anyio.sleep(IDLE_S)  # as long as ours idle
        memory = sum(tree_pss_kb(pid) for pid in child_pids("cli.js"))
        done.set()
    return round(memory / 1024, 1)


# -- report ------------------------------------------------------------------------------

def ratio(a, b):
    return round(a / b, 2) if b else None


def report(results):
    raw, ours, theirs = results["raw"], results["mcpbrowser"], results.get("playwright_mcp")
    lines = [f"machine: {results['machine']}"]
    for key, title in (("ops", f"per call, {results['think_ms']} ms think time between calls (the targets)"),
                       ("ops_b2b", "per call, back to back (no think time: the worst case for us)")):
        lines += ["", title,
                  f"{'(ms)':<16}{'raw median':>12}{'ours median':>13}{'ours p90':>10}{'ours/raw':>10}"
                  + (f"{'@pw/mcp median':>16}{'them/ours':>11}" if theirs else "")]
        for op in OPS:
            row = (f"{op:<16}{raw[key][op]['median_ms']:>12}{ours[key][op]['median_ms']:>13}"
                   f"{ours[key][op]['p90_ms']:>10}{results['ratios'][key][op]:>10}")
            if theirs:
                row += f"{theirs[key][op]['median_ms']:>16}{results['vs_playwright_mcp'][key][op]:>11}"
            lines.append(row)
    lines += ["",
              f"initialize (from spawn): ours {ours['initialize_ms']} ms"
              + (f", @playwright/mcp {theirs['initialize_ms']} ms, ratio {results['initialize_ratio']}"
                 if theirs else ""),
              "with --allowed-domains (the filtering proxy), against ours without, per call: "
              + ", ".join(f"{op} {results['policy_ratios']['ops'][op]}x "
                          f"({results['mcpbrowser_policy']['ops'][op]['median_ms']} ms)" for op in OPS),
              "over HTTP, against ours over stdio, per call: "
              + ", ".join(f"{op} {results['http_ratios']['ops'][op]}x "
                          f"({results['mcpbrowser_http']['ops'][op]['median_ms']} ms)" for op in OPS),
              *(["python -m playwright mcp against ours, per call: " + ", ".join(
                  f"{op} {results['vs_python_playwright_mcp']['ops'][op]}x "
                  f"({results['python_playwright_mcp']['ops'][op]['median_ms']} ms)" for op in OPS)]
                if theirs else []),
              "raw Playwright, the first read of a new document (Playwright's script set up in it): "
              + ", ".join(f"{op} {v['median_ms']} ms" for op, v in results["first_read"].items() if op != "setup_ms")
              + f"; the set-up {results['first_read']['setup_ms']} ms, paid once a document by whoever reads it",
              f"CPU per navigate (process trees, /proc): raw goto + title {results['cpu_per_navigate']['raw_ms']} ms, "
              f"ours {results['cpu_per_navigate']['mcpbrowser_ms']} ms, ratio {results['cpu_per_navigate']['ratio']} "
              f"(turns {min(results['cpu_per_navigate']['ratios'])}-{max(results['cpu_per_navigate']['ratios'])}); "
              f"ours with --response-mode lean (no capture) {results['cpu_per_navigate']['lean_ms']} ms, "
              f"ratio {results['cpu_per_navigate']['lean_ratio']}",
              *(f"  {side} by process (ms): " + ", ".join(f"{k} {v}" for k, v in kinds.items())
                for side, kinds in results["cpu_per_navigate"]["by_process"].items()),
              *([f"CPU per navigate on {page['url']}: raw {page['raw_ms']} ms, ours {page['mcpbrowser_ms']} ms, "
                 f"ratio {page['ratio']} (turns {min(page['ratios'])}-{max(page['ratios'])}); lean "
                 f"{page['lean_ms']} ms, ratio {page['lean_ratio']}"]
                if (page := results.get("cpu_per_navigate_page")) else []),
              f"one session's throughput, navigate + click back to back: "
              f"{results['one_session_ratio']}x raw",
              f"create_session median: warm pool {ours['create_session_warm']['median_ms']} ms, "
              f"cold {results['create_session_cold']['median_ms']} ms",
              f"{results['sessions']} sessions: ours {results['concurrent']['ops_per_s']} ops/s, "
              f"raw threads {results['raw_concurrent']['ops_per_s']} ops/s, "
              f"ratio {results['throughput_ratio']} (medians of {results['repeats']} alternating runs, ours "
              f"{results['concurrent']['runs']}, raw {results['raw_concurrent']['runs']}; the ratio is the "
              "median of each pair's)",
              f"{results['sessions']} sessions, raw Playwright with one driver (asyncio): "
              f"{results['raw_one_driver']['ops_per_s']} ops/s, ours/that {results['one_driver_ratio']} "
              f"(runs {results['raw_one_driver']['runs']})",
              f"spawn to the first navigate's answer: ours {results['first_navigate']['mcpbrowser']['median_ms']} ms"
              + (f", @playwright/mcp {results['first_navigate']['playwright_mcp']['median_ms']} ms, "
                 f"ratio {results['first_navigate']['ratio']}" if theirs else ""),
              f"{results['sessions']} sessions over HTTP, {results['http_clients']} clients: "
              f"{results['http_concurrent']['ops_per_s']} ops/s, against one stdio client "
              f"{results['http_throughput_ratio']} (runs {results['http_concurrent']['runs']})",
              f"memory (PSS) with {results['sessions']} sessions, {IDLE_S:g} s idle: ours "
              f"{results['concurrent']['pss_mb']} MB ({results['concurrent']['pss_busy_mb']} MB at once "
              "after the workload)"
              + (f", {results['sessions']} @playwright/mcp {results['playwright_mcp_pss_mb']} MB, "
                 f"ratio {results['memory_ratio']}" if theirs else ""),
              *([f"memory (PSS) with {results['memory_more']['sessions']} sessions: ours "
                 f"{results['memory_more']['pss_mb']} MB"
                 + (f", @playwright/mcp {results['memory_more']['playwright_mcp_pss_mb']} MB, "
                    f"ratio {results['memory_more']['ratio']}" if theirs else "")]
                if "memory_more" in results else [])]
    return "\n".join(lines)


def paired_ratio(ours, raw):
    """Median of ours[n] / raw[n]: runs n ran one after the other, so the machine's drift cancels out."""
    return round(statistics.median(a / b for a, b in zip(ours, raw, strict=True)), 2)


class _WireCount(httpx2.AsyncBaseTransport):
    """An httpx2 transport that counts the response bytes as they arrive, before any decoding (gzip)."""

    def __init__(self):
        self._inner = httpx2.AsyncHTTPTransport()
        self.bytes = 0

    async def handle_async_request(self, request):
        response = await self._inner.handle_async_request(request)
        stream, counter = response.stream, self

        class Counted(httpx2.AsyncByteStream):
            async def __aiter__(self):
                async for chunk in stream:
                    counter.bytes += len(chunk)
                    yield chunk

            async def aclose(self):
                await stream.aclose()

        response.stream = Counted()
        return response

    async def aclose(self):
        await self._inner.aclose()


async def http_per_call(url, rounds, think_s, databases):
    """--http-only: {encoding: {ops: {op: stats}, bytes: {op: median bytes}, tools_list_bytes}}, interleaved."""
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    out, contenders = {}, {}
    async with AsyncExitStack() as stack:
        for encoding in ("gzip", "identity"):
            wire = _WireCount()
            # The official client's own settings; "gzip" keeps httpx2's default Accept-Encoding (gzip, deflate, ...).
            client = await stack.enter_async_context(httpx2.AsyncClient(
                transport=wire, timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
                headers={"Accept-Encoding": "identity"} if encoding == "identity" else None))
            endpoint = start_http_server(stack, next(databases))
            read, write = await stack.enter_async_context(streamable_http_client(endpoint, http_client=client))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            await anyio.sleep(START_S)  # the browser and the warm pool start in the background
            before = wire.bytes
            await session.list_tools()
            result = out[encoding] = {"tools_list_bytes": wire.bytes - before, "bytes": {}}
            sid = json.loads((await _call(session, "create_session", {})).content[0].text)["sessionId"]

            def steps(i, session=session, sid=sid, wire=wire, sizes=result["bytes"]):
                def counted(op, name, arguments):
                    async def step():
                        before = wire.bytes
                        took = await mcp_step(session, name, arguments)()
                        sizes.setdefault(op, []).append(wire.bytes - before)
                        return took
                    return op, step

                return [counted("navigate", "navigate", {"sessionId": sid, "url": url}),
                        counted("type", "type", {"sessionId": sid, "selector": "#q", "text": f"query {i}"}),
                        counted("click", "click", {"sessionId": sid, "selector": "#go"}),
                        counted("snapshot", "snapshot", {"sessionId": sid}),
                        counted("navigate_long", "navigate", {"sessionId": sid, "url": url + "long"}),
                        counted("snapshot_long", "snapshot", {"sessionId": sid})]

            contenders[encoding] = steps
        for encoding, ops in (await interleaved_rounds(rounds, think_s, contenders)).items():
            out[encoding]["ops"] = ops
            out[encoding]["bytes"] = {op: statistics.median_low(sizes) for op, sizes in out[encoding]["bytes"].items()}
    return out


def http_report(results):
    gz, plain = results["http_only"]["gzip"], results["http_only"]["identity"]
    lines = [f"machine: {results['machine']}", "",
             f"over HTTP, per call, {results['think_ms']} ms think time, {results['rounds']} rounds: "
             "Accept-Encoding gzip (the official client's default) against identity",
             f"{'':<16}{'identity ms':>12}{'gzip ms':>10}{'identity B':>12}{'gzip B':>10}"]
    for op in gz["ops"]:
        lines.append(f"{op:<16}{plain['ops'][op]['median_ms']:>12}{gz['ops'][op]['median_ms']:>10}"
                     f"{plain['bytes'][op]:>12}{gz['bytes'][op]:>10}")
    lines.append(f"{'tools/list':<16}{'':>22}{plain['tools_list_bytes']:>12}{gz['tools_list_bytes']:>10}")
    return "\n".join(lines)


def median_run(runs, key):
    """The run whose `key` is the median (the lower one of an even count): its other figures come along."""
    return sorted(runs, key=lambda run: run[key])[(len(runs) - 1) // 2]


def main():
    global IDLE_S, START_S, REFILL_S, CPU_THINK_S, WARMUP_ROUNDS, CPU_NAVIGATES, CPU_WARMUP_TURNS  # --quick
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30, help="measured rounds of the workload (default 30)")
    parser.add_argument("--sessions", type=int, default=8, help="concurrent sessions (default 8)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of the concurrent workload per contender, alternating; "
                             "the median counts (default 3)")
    parser.add_argument("--think-ms", type=int, default=100,
                        help="pause between calls, as an agent thinks, for every contender alike (default 100; "
                             "an LLM agent takes far longer). Back-to-back numbers are reported too.")
    parser.add_argument("--http-clients", type=int, default=4,
                        help="clients sharing the --sessions sessions in the HTTP concurrent run (default 4)")
    parser.add_argument("--with-playwright-mcp", action="store_true",
                        help="also run @playwright/mcp, installed from npm into a temporary folder, and "
                             "the playwright wheel's `python -m playwright mcp`")
    parser.add_argument("--creates", type=int, default=5,
                        help="create_session calls timed, from the pool and cold (default 5)")
    parser.add_argument("--memory-sessions", type=int, default=16,
                        help="also measure memory with this many sessions (and @playwright/mcp instances); "
                             "0 skips it (default 16)")
    parser.add_argument("--cpu-url", metavar="URL",
                        help="also measure CPU per navigate on this page, a real one (say a page of Sphinx's "
                             "manual served on 127.0.0.1, as scripts/agent_bench.py does): the capture's cost "
                             "grows with the page")
    parser.add_argument("--http-only", action="store_true",
                        help="run only the per-call workload over HTTP, with and without gzip: time and bytes")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--quick", action="store_true",
                        help=f"for the test suite: every pause {QUICK_PAUSE_S:g} s (the pool's start and refill, "
                             "the idle time before memory, the CPU phase's think time), no warm-up round and "
                             "1 navigate a CPU turn; every phase runs, but the figures are not worth quoting")
    args = parser.parse_args()
    if args.quick:
        IDLE_S = START_S = REFILL_S = CPU_THINK_S = QUICK_PAUSE_S
        WARMUP_ROUNDS, CPU_NAVIGATES, CPU_WARMUP_TURNS = 0, 1, 0

    # The browser our headless server picks (its headless shell when one is installed), for every contender.
    executable = find_executable("chromium", shell=True)
    httpd, url = serve_page()
    memory_gib = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)
    results = {"machine": f"{os.cpu_count()} cores, {memory_gib} GiB, Python {sys.version.split()[0]}, {executable}",
               "rounds": args.rounds, "sessions": args.sessions, "think_ms": args.think_ms, "repeats": args.repeats,
               "http_clients": args.http_clients}
    folder = tempfile.mkdtemp(prefix="mcpbrowser-bench-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # a run that fails half-way leaves nothing either
    databases = (os.path.join(folder, f"history-{n}.db") for n in itertools.count())

    def progress(message):
        print(message, file=sys.stderr, flush=True)

    if args.http_only:
        progress("per call over HTTP, with gzip and without, interleaved…")
        results["http_only"] = anyio.run(http_per_call, url, args.rounds, args.think_ms / 1000, databases)
        shutil.rmtree(folder, ignore_errors=True)
        httpd.shutdown()
        print(json.dumps(results, indent=2) if args.json else http_report(results))
        return

    cli = None
    if args.with_playwright_mcp:
        if not shutil.which("node") or not shutil.which("npm"):
            progress("skipping @playwright/mcp: node and npm are needed")
        else:
            progress("installing @playwright/mcp from npm…")
            cli = install_playwright_mcp(folder)
    progress("per call: raw Playwright, mcpbrowser" + (" and @playwright/mcp" if cli else "") + ", interleaved…")
    results.update(anyio.run(per_call, executable, url, args.rounds, args.think_ms / 1000, databases, cli,
                             args.creates))
    progress("CPU per navigate: raw Playwright and mcpbrowser, interleaved…")
    cpu = anyio.run(cpu_per_navigate, executable, [url, *([args.cpu_url] if args.cpu_url else [])],
                    max(1, args.rounds // 3), max(CPU_THINK_S, args.think_ms / 1000), databases)
    results["cpu_per_navigate"] = cpu[0]
    if args.cpu_url:
        results["cpu_per_navigate_page"] = cpu[1]
    progress("spawn to the first navigate's answer…")
    results["first_navigate"] = anyio.run(first_navigate, url, next(databases), cli, executable, args.repeats)
    progress("mcpbrowser, cold create_session…")
    results["create_session_cold"] = anyio.run(mcpbrowser_cold_create, next(databases), args.creates)
    raw_runs, single_runs, our_runs, http_runs = [], [], [], []
    for n in range(args.repeats):
        progress(f"{args.sessions} sessions, run {n + 1} of {args.repeats}: raw Playwright threads…")
        raw_runs.append(raw_concurrent(executable, url, args.sessions, args.rounds))
        progress(f"{args.sessions} sessions, run {n + 1} of {args.repeats}: raw Playwright, one driver…")
        single_runs.append(raw_one_driver(executable, url, args.sessions, args.rounds))
        progress(f"{args.sessions} sessions, run {n + 1} of {args.repeats}: mcpbrowser…")
        our_runs.append(anyio.run(mcpbrowser_concurrent, url, args.sessions, args.rounds, next(databases)))
        progress(f"{args.sessions} sessions, run {n + 1} of {args.repeats}: mcpbrowser over HTTP, "
                 f"{args.http_clients} clients…")
        http_runs.append(anyio.run(mcpbrowser_http_concurrent, url, args.http_clients, args.sessions, args.rounds,
                                   next(databases)))
    results["raw_concurrent"] = {**median_run(raw_runs, "ops_per_s"), "runs": [r["ops_per_s"] for r in raw_runs]}
    results["raw_one_driver"] = {**median_run(single_runs, "ops_per_s"),
                                 "runs": [r["ops_per_s"] for r in single_runs]}
    results["concurrent"] = {**median_run(our_runs, "ops_per_s"), "runs": [r["ops_per_s"] for r in our_runs],
                             "pss_mb": statistics.median_low(r["pss_mb"] for r in our_runs),
                             "pss_busy_mb": statistics.median_low(r["pss_busy_mb"] for r in our_runs)}
    results["ratios"] = {key: {op: ratio(results["mcpbrowser"][key][op]["median_ms"],
                                         results["raw"][key][op]["median_ms"]) for op in OPS}
                         for key in ("ops", "ops_b2b")}
    # One session's throughput, as issue 21 defines it: navigate and click, back to back (raw time / ours).
    results["one_session_ratio"] = ratio(*(sum(results[side]["ops_b2b"][op]["median_ms"]
                                               for op in ("navigate", "click")) for side in ("raw", "mcpbrowser")))
    results["http_concurrent"] = {**median_run(http_runs, "ops_per_s"), "runs": [r["ops_per_s"] for r in http_runs]}
    results["http_throughput_ratio"] = paired_ratio(results["http_concurrent"]["runs"], results["concurrent"]["runs"])
    results["http_ratios"] = {key: {op: ratio(results["mcpbrowser_http"][key][op]["median_ms"],
                                              results["mcpbrowser"][key][op]["median_ms"]) for op in OPS}
                              for key in ("ops", "ops_b2b")}
    results["policy_ratios"] = {key: {op: ratio(results["mcpbrowser_policy"][key][op]["median_ms"],
                                                results["mcpbrowser"][key][op]["median_ms"]) for op in OPS}
                                for key in ("ops", "ops_b2b")}
    results["throughput_ratio"] = paired_ratio(results["concurrent"]["runs"], results["raw_concurrent"]["runs"])
    results["one_driver_ratio"] = paired_ratio(results["concurrent"]["runs"], results["raw_one_driver"]["runs"])
    if args.memory_sessions:
        progress(f"mcpbrowser, {args.memory_sessions} sessions for memory…")
        results["memory_more"] = {"sessions": args.memory_sessions, "pss_mb": anyio.run(
            # The memory guard's default 2 GB would refuse sessions before the count is reached.
            mcpbrowser_concurrent, url, args.memory_sessions, 1, next(databases), "--max-memory-mb", "0")["pss_mb"]}
    if cli:
        progress(f"@playwright/mcp, {args.sessions} instances for memory…")
        results["playwright_mcp_pss_mb"] = anyio.run(pwmcp_memory, cli, executable, url, args.sessions)
        theirs = results["playwright_mcp"]
        results["vs_playwright_mcp"] = {key: {op: ratio(theirs[key][op]["median_ms"],
                                                        results["mcpbrowser"][key][op]["median_ms"])
                                              for op in OPS} for key in ("ops", "ops_b2b")}
        results["initialize_ratio"] = ratio(results["mcpbrowser"]["initialize_ms"], theirs["initialize_ms"])
        results["vs_python_playwright_mcp"] = {
            key: {op: ratio(results["python_playwright_mcp"][key][op]["median_ms"],
                            results["mcpbrowser"][key][op]["median_ms"]) for op in OPS} for key in ("ops", "ops_b2b")}
        results["memory_ratio"] = ratio(results["concurrent"]["pss_mb"], results["playwright_mcp_pss_mb"])
        if args.memory_sessions:
            progress(f"@playwright/mcp, {args.memory_sessions} instances for memory…")
            more = results["memory_more"]
            more["playwright_mcp_pss_mb"] = anyio.run(pwmcp_memory, cli, executable, url, args.memory_sessions)
            more["ratio"] = ratio(more["pss_mb"], more["playwright_mcp_pss_mb"])
    shutil.rmtree(folder, ignore_errors=True)
    httpd.shutdown()
    print(json.dumps(results, indent=2) if args.json else report(results))


if __name__ == "__main__":
    main()
