"""Calls recorded per second by the history's writer: SQLite, PostgreSQL on loopback, and PostgreSQL behind a link
that adds 1 ms to each round trip (a database on another machine).

    .venv/bin/python scripts/history_write_bench.py [--rounds 3]

A call's rows as the recorder writes them (its request, its answer with a page snapshot and a
console line, the session's resume state), each call flushed alone (a batch a call: light
load) and 500 queued at once (heavy load); the best of --rounds rounds of each. PostgreSQL is
a throwaway cluster of Debian's postgresql package (tests/postgres.py); the script installs
nothing, and without the package it measures SQLite alone.

Speed is measured here, never in the test suite.
"""

import argparse
import os
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from postgres import Postgres, SlowLink, _bin_dir  # noqa: E402

from mcpbrowser.core.history import History  # noqa: E402
from mcpbrowser.core.store import Store  # noqa: E402

PAGE = "\n".join(f'- link "item {i}" [ref=e{i}]' for i in range(300))
CONSOLE = [{"level": "log", "message": "m", "timestamp": 1, "location": ""}]


def calls(history, n, session, flush_each):
    """Calls recorded per second, n of them."""
    started = time.perf_counter()
    for i in range(n):
        ref = uuid.uuid4().hex[:12]
        history.request(ref, session, "navigate", {"url": f"http://x.test/{i}"})
        row = ("ok", {"url": f"http://x.test/{i}", "title": "t"}, None, PAGE + f"\n- text {uuid.uuid4().hex}", CONSOLE)
        history.response(ref, row, session_id=session)
        history.save_state(session, {"cookies": [], "origins": []}, f"http://x.test/{i}")
        if flush_each:
            history.store.flush(600)
    history.store.flush(600)
    return n / (time.perf_counter() - started)


def main():
    parser = argparse.ArgumentParser(description="Calls recorded per second by the history's writer on SQLite and "
                                                 "PostgreSQL (loopback, and 1 ms a round trip). Installs nothing.")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each measure; the best counts (default 3)")
    args = parser.parse_args()
    bin_dir = _bin_dir()
    cluster = Postgres(bin_dir) if bin_dir else None
    link = SlowLink(cluster.port, 0.001) if cluster else None
    folder = tempfile.mkdtemp(prefix="mcpbrowser-write-bench-")
    try:
        targets = {"sqlite": os.path.join(folder, "history.db")}
        if cluster:
            targets.update({"postgresql": cluster.new_database(), "postgresql+1ms": link.url(cluster.new_database())})
        else:
            print("PostgreSQL skipped: Debian's postgresql package is not installed", file=sys.stderr)
        print(f"load average {os.getloadavg()[0]:.2f}")
        for name, target in targets.items():
            store = Store(target)
            history = History(store)
            session = uuid.uuid4().hex
            history.session_opened(session, 0, {})
            calls(history, 20, session, True)  # the first statements learn the tables
            one = max(calls(history, 100, session, True) for _ in range(args.rounds))
            many = max(calls(history, 500, session, False) for _ in range(args.rounds))
            print(f"{name:<15} calls/s: a batch a call {one:>6.0f}   500 queued {many:>6.0f}", flush=True)
            store.close()
    finally:
        if link:
            link.close()
        if cluster:
            cluster.close()


if __name__ == "__main__":
    main()
