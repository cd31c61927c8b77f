"""Chaos: SIGKILL the shared Chromium again and again under a running workload; nothing may go unanswered.

    .venv/bin/python scripts/chaos.py [--trials 20] [--sessions 4] [--json]

Four workloads (navigate, type, click, in a loop) run through the official MCP
client, each in its own session. Each trial waits until every workload has
had a call succeed, SIGKILLs the browser's main process, and measures the
recovery time: from the kill until every workload has had a call succeed
again. A workload whose session is lost (SESSION_LOST) creates a new one. A
call that gets no answer within --call-timeout counts as unanswered; there
must be none. The server runs with a restart budget large enough for every
trial (--max-restarts), since the default allows 3 restarts in 5 minutes.
Where each recovery's time went comes from the server's own log: when it
noticed the crash, how long it waited before the restart (the back-off), and
when the new browser was up; the rest is the sessions opening again.
Prints a table (or JSON) and exits non-zero on an unanswered call or a
trial that did not recover.
"""

import argparse
import collections
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from datetime import datetime

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import serve_page  # noqa: E402

from mcpbrowser.process_tree import browser_main_pid, child_pids  # noqa: E402

RECOVERY_LIMIT_S = 60.0


class Workloads:
    """Counts what the workloads saw; `progress[n]` is workload n's number of successful calls."""

    def __init__(self, sessions):
        self.progress = [0] * sessions
        self.codes = collections.Counter()
        self.examples = {}  # error code -> (tool, first message), to say what went wrong
        self.unanswered = 0
        self.calls = 0
        self.stop = False


async def workload(n, session, url, seen, timeout):
    sid = None
    step = 0
    while not seen.stop:
        if sid is None:
            name, args = "create_session", {}
        else:
            name, args = [("navigate", {"sessionId": sid, "url": url}),
                          ("type", {"sessionId": sid, "selector": "#q", "text": f"w{n}"}),
                          ("click", {"sessionId": sid, "selector": "#go"})][step % 3]
        seen.calls += 1
        try:
            with anyio.fail_after(timeout):
                result = await session.call_tool(name, args)
        except TimeoutError:
            seen.unanswered += 1
            continue
        payload = json.loads(result.content[0].text)
        if result.is_error:
            seen.codes[payload.get("errorCode", "?")] += 1
            seen.examples.setdefault(payload.get("errorCode", "?"), (name, payload.get("message", "")[:300]))
            if payload.get("errorCode") in ("SESSION_LOST", "SESSION_NOT_FOUND"):
                sid = None
            elif payload.get("errorCode") in ("BROWSER_UNAVAILABLE", "CIRCUIT_OPEN"):
                await anyio.sleep(payload["details"]["retryAfterMs"] / 1000)
            else:
                await anyio.sleep(0.1)  # an unexpected error: counted, then retried, without spinning
            continue
        seen.codes["ok"] += 1
        if name == "create_session":
            sid, step = payload["sessionId"], 0
        else:
            step += 1
        seen.progress[n] += 1


async def wait_all_progress(seen, since, limit):
    """True once every workload has more successes than `since`, False after `limit` seconds."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if all(p > s for p, s in zip(seen.progress, since, strict=True)):
            return True
        await anyio.sleep(0.02)
    return False


def restart_log(errlog):
    """The server's restart events, in order: [(event, wall-clock time, record)]."""
    errlog.flush()
    errlog.seek(0)
    found = []
    for line in errlog:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("event") in ("browser_crashed", "browser_restart_scheduled", "browser_restarted"):
            found.append((record["event"], datetime.strptime(record["time"], "%Y-%m-%d %H:%M:%S,%f").timestamp(),
                          record))
    return found


def where_time_went(results, events):
    """Add to each trial, from the server's log: noticed_s, backoff_s, browser_up_s (seconds after the kill)."""
    crashed = [t for name, t, _ in events if name == "browser_crashed"]
    waits = [r["in_s"] for name, _, r in events if name == "browser_restart_scheduled"]
    up = [t for name, t, _ in events if name == "browser_restarted"]
    for n, trial in enumerate(results):
        killed = trial.pop("killed_at")
        if n < len(crashed):
            trial["noticed_s"] = round(crashed[n] - killed, 2)
        if n < len(waits):
            trial["backoff_s"] = waits[n]
        if n < len(up):
            trial["browser_up_s"] = round(up[n] - killed, 2)


async def chaos(trials, sessions, call_timeout):
    httpd, url = serve_page()
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "mcpbrowser", "--headless", "--db", ":memory:", "--rate-limit", "0",
        "--max-sessions", str(sessions + 2), "--max-restarts", str(trials + 5)])
    seen = Workloads(sessions)
    results = []
    errlog = tempfile.TemporaryFile("w+")
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            server = child_pids("mcpbrowser")[0]
            async with anyio.create_task_group() as tg:
                for n in range(sessions):
                    tg.start_soon(workload, n, session, url, seen, call_timeout)
                for trial in range(1, trials + 1):
                    if not await wait_all_progress(seen, [p for p in seen.progress], RECOVERY_LIMIT_S):
                        results.append({"trial": trial, "recovered": False, "note": "workload not running"})
                        break
                    victim = browser_main_pid(server)
                    if victim is None:
                        results.append({"trial": trial, "recovered": False, "note": "no browser to kill"})
                        break
                    before = list(seen.progress)
                    lost_before = seen.codes["SESSION_LOST"]
                    killed = time.monotonic()
                    os.kill(victim, signal.SIGKILL)
                    recovered = await wait_all_progress(seen, before, RECOVERY_LIMIT_S)
                    results.append({"trial": trial, "recovered": recovered,
                                    "recovery_s": round(time.monotonic() - killed, 2),
                                    "sessions_lost": seen.codes["SESSION_LOST"] - lost_before,
                                    "killed_at": time.time() - (time.monotonic() - killed)})
                    print(f"trial {trial:2}: recovered in {results[-1]['recovery_s']:.2f} s, "
                          f"{results[-1]['sessions_lost']} SESSION_LOST answers", file=sys.stderr)
                    if not recovered:
                        break
                seen.stop = True
    httpd.shutdown()
    for trial in results:
        trial.setdefault("killed_at", 0.0)
    where_time_went(results, restart_log(errlog))
    errlog.close()
    return results, seen


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--call-timeout", type=float, default=60.0,
                        help="seconds after which a call with no answer counts as unanswered")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    results, seen = anyio.run(chaos, args.trials, args.sessions, args.call_timeout)
    load_after = os.getloadavg()[0]
    times = [r["recovery_s"] for r in results if r.get("recovered")]
    summary = {
        "trials": len(results), "recovered": len(times),
        "recovery_s": {"first": times[0] if times else None,
                       "median": round(statistics.median(times), 2) if times else None,
                       "max": max(times) if times else None},
        "calls": seen.calls, "unanswered": seen.unanswered, "answers": dict(seen.codes),
        "examples": {code: {"tool": tool, "message": message} for code, (tool, message) in seen.examples.items()},
        "per_trial": results,
        # The machine's 1-minute load average around the run: the times scale with it.
        "load_average": {"before": round(load_before, 1), "after": round(load_after, 1), "cpus": os.cpu_count()},
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        # noticed: the server saw the crash; back-off: its wait before the restart; browser up: the
        # new browser published (all seconds after the kill); the rest of the recovery is the
        # workloads' sessions opening again and each answering a call.
        print(f"{'trial':>5}  {'recovery s':>10}  {'noticed':>7}  {'back-off':>8}  {'browser up':>10}"
              f"  {'SESSION_LOST':>12}")
        for r in results:
            print(f"{r['trial']:>5}  {r.get('recovery_s', '-'):>10}  {r.get('noticed_s', '-'):>7}"
                  f"  {r.get('backoff_s', '-'):>8}  {r.get('browser_up_s', '-'):>10}  {r.get('sessions_lost', '-'):>12}"
                  + ("" if r["recovered"] else f"  NOT RECOVERED {r.get('note', '')}"))
        print(f"\n{summary['recovered']}/{args.trials} trials recovered; recovery first "
              f"{summary['recovery_s']['first']} s, median {summary['recovery_s']['median']} s, "
              f"max {summary['recovery_s']['max']} s")
        print(f"{seen.calls} calls, {seen.unanswered} unanswered; answers: {dict(seen.codes)}")
        print(f"load average (1 min) {load_before:.1f} before, {load_after:.1f} after, on {os.cpu_count()} CPUs")
        for code, (tool, message) in seen.examples.items():
            print(f"  first {code} ({tool}): {message}")
    ok = seen.unanswered == 0 and len(times) == args.trials
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
