"""Soak: many sessions making calls at once, then many create/close cycles, checked for leaks.

    .venv/bin/python scripts/soak.py [--sessions 10] [--calls 500] [--cycles 1000]

Phase 1: every session makes its calls concurrently through the official MCP
client; each navigate goes to a page titled uniquely, so a lost or mismatched
answer is caught. Phase 2: create/close cycles; afterwards the server's thread
count, its Chromium and driver process counts and its RSS are compared with
the baseline taken before. Prints a summary and exits non-zero on any failure.
"""

import argparse
import json
import os
import sys
import time
import urllib.parse

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcpbrowser.process_tree import child_pids, cmdline, comm, descendants

RSS_GROWTH_LIMIT_MB = 50
WARM_UP_CYCLES = 5


def allowed_growth(max_sessions):
    """The core's worker pool starts threads lazily and keeps them, up to --max-sessions + 2:
    growth within that bound is the pool reaching its size; a leak grows with the cycles.
    Each session costs one driver (its pipe relay) and one renderer (its context's): those must come back
    exactly. Chromium's browser-wide processes (GPU, network, storage, and services it
    starts lazily once, such as the on-device model service) are reported, not limited."""
    return {"threads": max_sessions + 2, "drivers": 0, "renderers": 0}


def footprint(pid):
    """Threads and RSS of the server process, and its live driver and Chromium descendants."""
    status = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status"))
    below = descendants(pid)
    names = [comm(child) for child in below]
    kinds = [next((a for a in cmdline(child).split() if a.startswith("--type=")), "--type=browser")
             for child, name in zip(below, names, strict=True) if name.startswith("chrom")]
    return {"threads": int(status["Threads"]), "rss_mb": round(int(status["VmRSS"].split()[0]) / 1024, 1),
            "drivers": sum("run-driver" in cmdline(child) for child in below),
            "renderers": kinds.count("--type=renderer"), "chromium": len(kinds)}


async def settle(pid, baseline, allowed=None, seconds=20.0):
    """The footprint once it is within `allowed` growth of the baseline, or after `seconds`."""
    deadline = time.monotonic() + seconds
    current = footprint(pid)
    while time.monotonic() < deadline:
        if baseline and all(current[k] <= baseline[k] + allowed[k] for k in allowed):
            break
        await anyio.sleep(0.5)
        current = footprint(pid)
    return current


async def soak(sessions, calls, cycles):
    max_sessions = sessions + 2
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "mcpbrowser", "--headless", "--db", ":memory:", "--rate-limit", "0",
        # An hour: on a loaded machine phase 1 can outlast the default 5 minutes, and an
        # expired session would be counted as lost answers.
        "--max-sessions", str(max_sessions), "--session-timeout", "3600000"])
    problems = []
    async with stdio_client(params, errlog=open(os.devnull, "w")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("list_sessions", {})
            pid = child_pids("mcpbrowser")[0]

            async def call(name, args):
                result = await session.call_tool(name, args)
                return result.is_error, json.loads(result.content[0].text)

            # Phase 1: concurrent calls, every answer checked against its own request.
            ids = []
            for _ in range(sessions):
                error, out = await call("create_session", {})
                ids.append(out["sessionId"])
            answered = [0]

            async def worker(n, sid):
                for i in range(calls):
                    title = f"s{n}-c{i}"
                    url = "data:text/html," + urllib.parse.quote(f"<title>{title}</title><p>{title}</p>")
                    error, out = await call("navigate", {"sessionId": sid, "url": url})
                    if error or out["title"] != title:
                        problems.append(f"session {n} call {i}: sent {title}, got {out}")
                    answered[0] += 1

            started = time.monotonic()
            async with anyio.create_task_group() as tg:
                for n, sid in enumerate(ids):
                    tg.start_soon(worker, n, sid)
            phase1 = time.monotonic() - started
            for sid in ids:
                await call("close_session", {"sessionId": sid})

            # Phase 2: create/close cycles against a baseline taken after a few warm-up cycles.
            async def cycle(i):
                error, out = await call("create_session", {})
                if error:
                    problems.append(f"cycle {i}: create_session failed: {out}")
                    return
                error, out = await call("close_session", {"sessionId": out["sessionId"]})
                if error:
                    problems.append(f"cycle {i}: close_session failed: {out}")

            for i in range(WARM_UP_CYCLES):
                await cycle(-1 - i)
            baseline = await settle(pid, None, seconds=3.0)
            started = time.monotonic()
            for i in range(cycles):
                await cycle(i)
            phase2 = time.monotonic() - started
            after = await settle(pid, baseline, allowed_growth(max_sessions))
    allowed = allowed_growth(max_sessions)
    for key, slack in allowed.items():
        if after[key] > baseline[key] + slack:
            problems.append(f"{key}: {baseline[key]} before the cycles, {after[key]} after "
                            f"(allowed growth {slack})")
    growth = after["rss_mb"] - baseline["rss_mb"]
    if growth >= RSS_GROWTH_LIMIT_MB:
        problems.append(f"server RSS grew {growth:.1f} MB (limit {RSS_GROWTH_LIMIT_MB})")
    return {"sessions": sessions, "calls_per_session": calls, "answered": answered[0],
            "lost_or_mismatched": sessions * calls - answered[0] + sum(p.startswith("session") for p in problems),
            "phase1_s": round(phase1, 1), "cycles": cycles, "phase2_s": round(phase2, 1),
            "baseline": baseline, "after": after, "rss_growth_mb": round(growth, 1), "problems": problems}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--calls", type=int, default=500, help="calls per session in phase 1")
    parser.add_argument("--cycles", type=int, default=1000, help="create/close cycles in phase 2")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = anyio.run(soak, args.sessions, args.calls, args.cycles)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"phase 1: {report['sessions']} sessions x {report['calls_per_session']} calls in "
              f"{report['phase1_s']} s: {report['answered']} answered, "
              f"{report['lost_or_mismatched']} lost or mismatched")
        print(f"phase 2: {report['cycles']} create/close cycles in {report['phase2_s']} s; "
              f"before {report['baseline']}, after {report['after']}, RSS growth {report['rss_growth_mb']} MB")
        for problem in report["problems"][:20]:
            print("PROBLEM:", problem)
        print("soak: OK" if not report["problems"] else f"soak: FAILED ({len(report['problems'])} problems)")
    return 0 if not report["problems"] else 1


if __name__ == "__main__":
    sys.exit(main())
