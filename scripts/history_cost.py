"""What the history costs on disk: an agent walks a real documentation site, a navigate and a click per page.

Serves a local copy of the Python library reference (Debian's python3.11-doc, or any
folder of HTML given with --docs) on 127.0.0.1, runs the walk through the library API
with the server's defaults (history in an SQLite file, snapshot capture), and prints
the database's size per page-changing call, next to what the same snapshots would
cost stored whole and uncompressed, one per call (how the history stored them before).
It then compresses the stored snapshots at several zlib levels, to show what each costs.

    .venv/bin/python scripts/history_cost.py [--pages 60] [--docs /usr/share/doc/python3.11-doc/html]
                                             [--json]
"""

import argparse
import functools
import json
import os
import sqlite3
import sys
import tempfile
import threading
import time
import zlib
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mcpbrowser.config import Config  # noqa: E402
from mcpbrowser.core.browser import Browser  # noqa: E402

DOCS = "/usr/share/doc/python3.11-doc/html"
TARGET_BYTES = 10 * 1024  # per page-changing call


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(folder):
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=folder))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def walk(docs, count):
    pages = sorted(name for name in os.listdir(os.path.join(docs, "library")) if name.endswith(".html"))[:count]
    server = serve(docs)
    base = f"http://127.0.0.1:{server.server_address[1]}/library/"
    folder = tempfile.mkdtemp(prefix="mcpbrowser-history-cost-")
    db = os.path.join(folder, "history.db")
    html_bytes, calls, started = 0, 0, time.monotonic()
    with Browser(Config(db=db, headless=True, rate_limit=0)) as browser:
        session = browser.create_session()
        last = None
        for name in pages:
            html_bytes += os.path.getsize(os.path.join(docs, "library", name))
            session.navigate(base + name)
            last = session.click("h1")["refId"]  # changes nothing on the page: the navigate's snapshot again
            calls += 2
        browser.recorder.wait_recorded(last)  # the walk's last capture, then its rows are committed
        browser.store.flush()
    server.shutdown()
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        snapshots = conn.execute("SELECT data, size FROM snapshots").fetchall()
        whole = conn.execute("SELECT COALESCE(SUM(p.size), 0) FROM responses s "
                             "JOIN snapshots p ON p.hash = s.snapshot_hash").fetchone()[0]
        stored_snapshots = sum(len(data) for data, _ in snapshots)
        # A capture can time out on a loaded machine (2 s for the page's aria snapshot): such a
        # call stores no snapshot, and is counted apart.
        missed = conn.execute("SELECT COUNT(*) FROM requests r JOIN responses s ON s.ref_id = r.ref_id WHERE "
                              "r.tool_name IN ('navigate', 'click') AND s.snapshot_hash IS NULL").fetchone()[0]
    db_bytes = os.path.getsize(db)
    levels = {}
    raw = [zlib.decompress(data) for data, _ in snapshots]
    for level in (1, 6, 9):
        t0 = time.perf_counter()
        packed = sum(len(zlib.compress(text, level)) for text in raw)
        levels[level] = {"bytes": packed, "ms_per_snapshot": round((time.perf_counter() - t0) * 1000 / len(raw), 2)}
    return {
        "pages": len(pages), "page_changing_calls": calls, "html_bytes": html_bytes,
        # Per call that stored its snapshot: a missed capture costs nothing and would flatter the figure.
        "db_bytes": db_bytes, "db_bytes_per_call": round(db_bytes / (calls - missed)),
        "distinct_snapshots": len(snapshots), "captures_missed": missed,
        "snapshot_text_bytes_per_call_before": round(whole / (calls - missed)),
        "snapshot_bytes_stored": stored_snapshots, "zlib_levels": levels,
        "target_met": db_bytes / (calls - missed) <= TARGET_BYTES, "seconds": round(time.monotonic() - started, 1),
        "db": db,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=60)
    parser.add_argument("--docs", default=DOCS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.docs, "library")):
        sys.exit(f"no library/ under {args.docs}: install Debian's python3.11-doc, or pass --docs")
    out = walk(args.docs, args.pages)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{out['pages']} pages ({out['html_bytes'] / 1e6:.1f} MB of HTML), {out['page_changing_calls']} "
          f"page-changing calls, {out['distinct_snapshots']} distinct snapshots, "
          f"{out['captures_missed']} captures missed (timed out)")
    print(f"database: {out['db_bytes'] / 1e6:.2f} MB, {out['db_bytes_per_call'] / 1024:.1f} KB per call that stored "
          "its snapshot "
          f"(target <= {TARGET_BYTES // 1024} KB: {'met' if out['target_met'] else 'NOT met'})")
    print(f"stored whole, one per call, uncompressed (before): {out['snapshot_text_bytes_per_call_before'] / 1024:.1f}"
          " KB of snapshot per call")
    for level, cost in out["zlib_levels"].items():
        print(f"zlib level {level}: {cost['bytes'] / 1e6:.2f} MB of stored snapshots (wholes and changes), "
              f"{cost['ms_per_snapshot']} ms each")


if __name__ == "__main__":
    main()
