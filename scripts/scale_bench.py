"""Throughput through a load balancer: 1, 2 and 3 `mcpbrowser --http` servers sharing one history on
PostgreSQL, behind HAProxy, against one server on SQLite behind the same HAProxy.

    .venv/bin/python scripts/scale_bench.py [--clients 6] [--calls 10] [--servers 1,2,3]
                                            [--postgres URL | --no-postgres] [--json]

Each configuration starts its servers (on 127.0.0.1, each with its own browser), HAProxy in
front of them running the shipped scripts/haproxy.cfg (`balance roundrobin`, a client kept
on its server by its Mcp-Session-Id, /healthz checked, a connection to a server per
request), and --clients clients: the official MCP client (`mcp`'s
ClientSession over Streamable HTTP, handshake era) through HAProxy. Each client creates a
session, then all of them at once run --calls rounds of navigate (to a local page) and
snapshot; the figures are the calls per second of that phase and the p50 and p95 of each
call's time as the client saw it.

Everything runs on this one machine: the servers, their browsers, PostgreSQL, HAProxy and
the clients share its cores, so the figures show what spreading costs and holds here, not
what N machines would do. Say the machine's load (printed) with them.

Needs HAProxy (Debian: apt-get install haproxy) and, for PostgreSQL, either --postgres URL
(a database the servers may create tables in) or Debian's postgresql package, from which a
throwaway cluster is started in a temporary folder. The script installs nothing: without
HAProxy it stops and says so; without PostgreSQL it runs the SQLite configuration alone.

Speed is measured here, never in the test suite (tests/test_scale_bench.py only runs it small).
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack, ExitStack

import anyio
from bench import _call, serve_page, start_http_server
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")


def load():
    """The machine's load averages (1, 5, 15 min)."""
    return [round(x, 2) for x in os.getloadavg()]


def balancer(stack, urls):
    """HAProxy running the shipped scripts/haproxy.cfg (tests/haproxy.py puts in the addresses) in front of the
    servers at `urls`, once its checks see them all up; the URL clients use."""
    sys.path.insert(0, TESTS)
    from haproxy import Haproxy

    proxy = Haproxy(shutil.which("haproxy"), {f"mcp{n}": u.split("//")[1].split("/")[0] for n, u in enumerate(urls, 1)})
    stack.callback(proxy.close)
    return proxy.url


async def client_run(url, page, calls, ready, go, times, errors, finished):
    """One client: a session, then `calls` rounds of navigate and snapshot once `go` is set."""
    async with AsyncExitStack() as stack:
        read, write, *_ = await stack.enter_async_context(streamable_http_client(url))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        created = await _call(session, "create_session", {})
        sid = created.structured_content["sessionId"]
        ready()
        await go.wait()
        for n in range(calls):
            for name, args in (("navigate", {"sessionId": sid, "url": f"{page}?n={n}"}),
                               ("snapshot", {"sessionId": sid})):
                started = time.perf_counter()
                result = await session.call_tool(name, args)
                took = time.perf_counter() - started
                if result.is_error:
                    errors.append(f"{name}: {result.content[0].text[:200]}")
                else:
                    times[name].append(took)
        finished.append(time.perf_counter())
        await _call(session, "close_session", {"sessionId": sid})


async def configuration(db, servers, clients, calls, page):
    """One row: `servers` servers on `db` behind HAProxy, `clients` clients at once."""
    async with AsyncExitStack() as stack:
        folder = tempfile.mkdtemp(prefix="mcpbrowser-scale-")
        stack.callback(shutil.rmtree, folder, True)
        args = ("--max-sessions", str(clients + 2), "--session-timeout", "600000")
        urls = [start_http_server(stack, db if db.startswith("postgres") else os.path.join(folder, db), *args)
                for _ in range(servers)]
        url = balancer(stack, urls)
        times: dict[str, list[float]] = {"navigate": [], "snapshot": []}
        errors: list[str] = []
        finished: list[float] = []
        go = anyio.Event()
        count = {"ready": 0}

        def ready():
            count["ready"] += 1

        before = load()
        async with anyio.create_task_group() as group:
            for _ in range(clients):
                group.start_soon(client_run, url, page, calls, ready, go, times, errors, finished)
            while count["ready"] < clients:
                await anyio.sleep(0.05)
            started = time.perf_counter()
            go.set()
        took = max(finished) - started
        done = sum(len(v) for v in times.values())
        row = {"db": "postgresql" if db.startswith("postgres") else "sqlite", "servers": servers, "clients": clients,
               "calls": done, "errors": len(errors), "seconds": round(took, 2),
               "calls_per_s": round(done / took, 1), "load_before": before, "load_after": load()}
        for name, samples in times.items():
            ordered = sorted(samples)
            if ordered:
                row[name] = {"p50_ms": round(statistics.median(ordered) * 1000, 1),
                             "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000, 1)}
        if errors:
            row["first_error"] = errors[0]
        return row


def throwaway_postgres(stack):
    """A database URL on a temporary cluster of Debian's postgresql package; None when it is not installed."""
    sys.path.insert(0, TESTS)
    from postgres import Postgres, _bin_dir

    bin_dir = _bin_dir()
    if bin_dir is None:
        return None
    cluster = Postgres(bin_dir)
    stack.callback(cluster.close)
    return cluster


def main():
    parser = argparse.ArgumentParser(
        description="Calls/s and p50/p95 latency of N clients (the official MCP client over HTTP) through HAProxy "
                    "in front of 1, 2, 3 mcpbrowser --http servers sharing a history on PostgreSQL, against one "
                    "server on SQLite. Needs haproxy on the PATH; installs nothing.",
        epilog="Everything runs on this machine: the servers share its cores, so the figures show what spreading "
               "costs here, not the throughput of several machines.")
    parser.add_argument("--clients", type=int, default=6, help="clients at once, each with one session (default 6)")
    parser.add_argument("--calls", type=int, default=10,
                        help="rounds of navigate + snapshot per client (default 10: 20 timed calls each)")
    parser.add_argument("--servers", default="1,2,3", help="server counts to run on PostgreSQL (default 1,2,3)")
    parser.add_argument("--postgres", metavar="URL",
                        help="a PostgreSQL database to use (default: a throwaway cluster of Debian's postgresql)")
    parser.add_argument("--no-postgres", action="store_true", help="run the SQLite configuration alone")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    if shutil.which("haproxy") is None:
        print("scale_bench: haproxy is not installed (Debian: apt-get install haproxy); this script installs "
              "nothing.", file=sys.stderr)
        return 2
    httpd, page = serve_page()
    rows, notes = [], []
    with ExitStack() as stack:
        postgres = None
        if not args.no_postgres:
            postgres = args.postgres or throwaway_postgres(stack)
            if postgres is None:
                notes.append("PostgreSQL skipped: not installed (apt-get install postgresql) and no --postgres URL")
        rows.append(anyio.run(configuration, "history.db", 1, args.clients, args.calls, page))
        for servers in ([int(s) for s in args.servers.split(",")] if postgres else []):
            url = postgres if isinstance(postgres, str) else postgres.new_database()
            rows.append(anyio.run(configuration, url, servers, args.clients, args.calls, page))
    httpd.shutdown()
    if args.json:
        print(json.dumps({"rows": rows, "notes": notes, "cpus": os.cpu_count()}, indent=2))
        return 0
    print(f"{os.cpu_count()} CPUs; {args.clients} clients x {args.calls} rounds of navigate + snapshot, via HAProxy")
    print(f"{'history':<11}{'servers':>8}{'calls/s':>9}{'navigate p50/p95 ms':>22}{'snapshot p50/p95 ms':>22}"
          f"{'errors':>8}  load before → after")
    for r in rows:
        nav, snap = r.get("navigate", {}), r.get("snapshot", {})
        print(f"{r['db']:<11}{r['servers']:>8}{r['calls_per_s']:>9}"
              f"{str(nav.get('p50_ms')) + ' / ' + str(nav.get('p95_ms')):>22}"
              f"{str(snap.get('p50_ms')) + ' / ' + str(snap.get('p95_ms')):>22}{r['errors']:>8}  "
              f"{r['load_before'][0]} → {r['load_after'][0]}")
        if "first_error" in r:
            print(f"  first error: {r['first_error']}")
    for note in notes:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
