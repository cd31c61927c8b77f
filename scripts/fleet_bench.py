"""Scaling-out benchmark: mcpbrowser over a fleet of 1, 2 and 3 local `playwright run-server`s, and the
per-call cost of the Selenium Grid path against our own local browser.

    .venv/bin/python scripts/fleet_bench.py [--fleet 3] [--capacity 4] [--rounds 10] [--calls 20] [--json]

Fleet: for N = 1 .. --fleet, one mcpbrowser attaches to N run-servers, each with
--capacity; sessions are created until the fleet refuses one (it must hold N x
capacity), then all of them run navigate, type and click --rounds times at once.
Everything runs on this one machine, so N servers share its cores: the figures show
that placement fills every endpoint and what spreading costs, not the throughput of
N machines.

Grid: navigate, type and click through three servers of ours in interleaved
rounds (--calls of each), on our own browser, on one run-server, and on a local
Selenium Grid 4 (standalone; scripts/install_grid.sh installs it, and the Grid
part is skipped, saying why, when it cannot).

Speed is measured here, never in the test suite.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from backends import Grid, RunServer, grid_jar
from bench import _call, connect, interleaved_rounds, open_mcpbrowser, ratio, serve_page, stats

OPS = ("navigate", "type", "click")


async def fleet_run(servers, capacity, rounds, url, db):
    """Sessions a fleet of `servers` holds, the time to create each, and ops/s with all of them busy."""
    async with AsyncExitStack() as stack:
        endpoints = ",".join(s.url for s in servers)
        session = await connect(stack, db, "--ws-endpoint", endpoints, "--endpoint-capacity", str(capacity),
                                "--pool-size", "0", "--max-sessions", str(len(servers) * capacity + 5))
        ids, creates = [], []
        while True:
            started = time.perf_counter()
            result = await session.call_tool("create_session", {})
            answer = json.loads(result.content[0].text)
            if result.is_error:
                refused = answer["errorCode"]
                break
            creates.append(time.perf_counter() - started)
            ids.append(answer["sessionId"])
        listed = json.loads((await _call(session, "list_sessions", {})).content[0].text)
        for sid in ids:
            await _call(session, "navigate", {"sessionId": sid, "url": url})
        elapsed, errors = await busy_sessions(session, ids, url, rounds)
    return {"endpoints": len(servers), "sessions": len(ids), "refused_with": refused,
            "per_endpoint": sorted(e["sessions"] for e in listed["endpoints"]),
            "create_session": stats(creates), "ops_per_s": round(len(ids) * rounds * 3 / elapsed, 1),
            "errors": errors}


async def busy_sessions(session, ids, url, rounds):
    """(seconds, error codes) for every session to run navigate, type and click `rounds` times, all at once.

    Unlike bench.py's workload, a failed call is counted, not fatal: a dozen browsers on
    two cores can push an action past its time, and that is a figure too.
    """
    errors = []

    async def workload(sid):
        for i in range(rounds):
            for name, arguments in (("navigate", {"url": url}), ("type", {"selector": "#q", "text": f"q{i}"}),
                                    ("click", {"selector": "#go"})):
                result = await session.call_tool(name, {"sessionId": sid, **arguments})
                if result.is_error:
                    errors.append(f"{name}: {json.loads(result.content[0].text)['errorCode']}")

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for sid in ids:
            tg.start_soon(workload, sid)
    return time.perf_counter() - started, errors


async def backends_run(calls, url, db, run_server, grid):
    """Per-call medians on our browser, a run-server and (when there is one) a Grid, in interleaved rounds."""
    async with AsyncExitStack() as stack:
        contenders, creates = {}, {}
        for name, args in (("local", ()), ("run_server", ("--ws-endpoint", run_server.url)),
                           ("grid", ("--selenium-grid", grid.url) if grid else None)):
            if args is None:
                continue
            # create_session timed 3 times: from the pool locally, cold on a run-server or the Grid.
            opened, steps = await open_mcpbrowser(stack, url, db + name, *args, warm_creates=3)
            contenders[name], creates[name] = steps, opened["create_session_warm"]
        results = await interleaved_rounds(calls, 0.05, contenders)
    out = {name: {**results[name], "create_session": creates[name]} for name in contenders}
    out["ratios"] = {name: {op: ratio(results[name][op]["median_ms"], results["local"][op]["median_ms"])
                            for op in OPS} for name in contenders if name != "local"}
    return out


def report(results):
    lines = [f"fleet of local run-servers (capacity {results['capacity']} each, {results['rounds']} rounds)",
             f"{'endpoints':<11}{'sessions':>9}{'spread':>12}{'create ms':>11}{'ops/s':>8}{'errors':>8}  then"]
    for run in results["fleet"]:
        lines.append(f"{run['endpoints']:<11}{run['sessions']:>9}{'/'.join(map(str, run['per_endpoint'])):>12}"
                     f"{run['create_session']['median_ms']:>11}{run['ops_per_s']:>8}{len(run['errors']):>8}"
                     f"  {run['refused_with']}")
    backends = results["backends"]
    lines += ["", f"per call, median ms ({results['calls']} interleaved rounds)",
              f"{'':<12}{'create':>10}" + "".join(f"{op:>10}" for op in OPS) + "   ratio to local"]
    for name in ("local", "run_server", "grid"):
        if name in backends:
            ratios = backends["ratios"].get(name)
            lines.append(f"{name:<12}{backends[name]['create_session']['median_ms']:>10}"
                         + "".join(f"{backends[name][op]['median_ms']:>10}" for op in OPS)
                         + ("   " + " ".join(f"{ratios[op]}x" for op in OPS) if ratios else ""))
    if results.get("grid_skipped"):
        lines.append(f"grid: skipped ({results['grid_skipped']})")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fleet", type=int, default=3, help="largest number of run-servers (default 3)")
    parser.add_argument("--capacity", type=int, default=4, help="sessions per run-server (default 4)")
    parser.add_argument("--rounds", type=int, default=10, help="rounds of the concurrent workload (default 10)")
    parser.add_argument("--calls", type=int, default=20, help="interleaved rounds of per-call timing (default 20)")
    parser.add_argument("--no-grid", action="store_true", help="skip the Selenium Grid part")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    args = parser.parse_args()

    httpd, url = serve_page()
    scratch = Path(tempfile.mkdtemp(prefix="mcpbrowser-fleet-bench-"))
    db = str(scratch / "history.db")
    servers, grid = [RunServer(scratch).start() for _ in range(args.fleet)], None
    results = {"capacity": args.capacity, "rounds": args.rounds, "calls": args.calls, "fleet": []}
    try:
        for n in range(1, args.fleet + 1):
            print(f"fleet of {n}...", file=sys.stderr)
            results["fleet"].append(anyio.run(fleet_run, servers[:n], args.capacity, args.rounds, url, f"{db}.{n}"))
        jar, why = (None, "--no-grid") if args.no_grid else grid_jar()
        if jar:
            grid = Grid(jar, scratch).start()
        else:
            results["grid_skipped"] = why
        print("per-call timing...", file=sys.stderr)
        results["backends"] = anyio.run(backends_run, args.calls, url, db, servers[0], grid)
    finally:
        if grid is not None:
            grid.stop()
        for server in servers:
            server.stop()
        httpd.shutdown()
    print(json.dumps(results, indent=2) if args.json else report(results))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
