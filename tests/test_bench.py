"""The benchmark still runs end to end. A smoke run with tiny settings and short pauses
(--quick): the numbers it prints are not checked here (speed is measured by the benchmark,
never by a test), only that every contender ran and every figure the manual quotes is there."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def test_bench_runs_every_contender_and_reports_every_figure(pages):
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench.py"), "--rounds", "1", "--sessions", "2",
         "--repeats", "1", "--think-ms", "0", "--memory-sessions", "3", "--creates", "2", "--quick", "--json",
         "--cpu-url", pages.url("/docs")],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    for side in ("raw", "mcpbrowser", "mcpbrowser_policy", "mcpbrowser_http"):
        for mode in ("ops", "ops_b2b"):
            assert set(results[side][mode]) == {"navigate", "type", "click", "snapshot"}
            assert all(op["n"] == 1 and op["median_ms"] > 0 for op in results[side][mode].values())
    assert results["mcpbrowser"]["initialize_ms"] > 0
    assert results["mcpbrowser"]["create_session_warm"]["n"] == 2
    assert results["create_session_cold"]["n"] == 2
    for side in ("raw_concurrent", "concurrent", "http_concurrent"):
        assert len(results[side]["runs"]) == 1 and results[side]["ops_per_s"] > 0
    assert results["concurrent"]["pss_mb"] > 0 and results["throughput_ratio"] > 0
    assert len(results["raw_one_driver"]["runs"]) == 1 and results["one_driver_ratio"] > 0
    assert results["first_navigate"]["mcpbrowser"]["n"] == 1 and "ratio" not in results["first_navigate"]
    assert results["memory_more"]["sessions"] == 3 and results["memory_more"]["pss_mb"] > 0
    assert set(results["ratios"]["ops"]) == {"navigate", "type", "click", "snapshot"}
    assert results["one_session_ratio"] > 0
    first = results["first_read"]
    assert all(first[op]["n"] == 1 for op in ("fill, first read of the document", "aria snapshot, first read",
                                              "fill after it")) and "setup_ms" in first
    assert all(value > 0 for value in results["policy_ratios"]["ops"].values())
    assert all(value > 0 for value in results["http_ratios"]["ops"].values()) and results["http_throughput_ratio"] > 0
    cpu = results["cpu_per_navigate"]
    assert cpu["raw_ms"] > 0 and cpu["mcpbrowser_ms"] > 0 and len(cpu["ratios"]) == 1
    assert cpu["lean_ms"] > 0 and cpu["lean_ratio"] > 0 and "renderer" in cpu["by_process"]["lean"]
    assert {"renderer", "launcher", "server"} <= set(cpu["by_process"]["mcpbrowser"])
    assert {"renderer", "driver", "python thread"} <= set(cpu["by_process"]["raw"])
    page = results["cpu_per_navigate_page"]
    assert page["url"].endswith("/docs") and page["mcpbrowser_ms"] > 0 and page["lean_ratio"] > 0
    assert "playwright_mcp" not in results  # only with --with-playwright-mcp


def test_the_http_run_alone_reports_time_and_wire_bytes_with_and_without_gzip():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench.py"), "--http-only", "--rounds", "1",
                           "--think-ms", "0", "--quick", "--json"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = json.loads(done.stdout)["http_only"]
    ops = {"navigate", "type", "click", "snapshot", "navigate_long", "snapshot_long"}
    for encoding in ("gzip", "identity"):
        assert set(runs[encoding]["ops"]) == set(runs[encoding]["bytes"]) == ops
        assert all(op["n"] == 1 and op["median_ms"] > 0 for op in runs[encoding]["ops"].values())
    # Bytes are counted as they travel: a long page's snapshot and tools/list shrink; an action's answer,
    # under compression's threshold, does not.
    assert runs["gzip"]["bytes"]["snapshot_long"] * 5 < runs["identity"]["bytes"]["snapshot_long"]
    assert runs["gzip"]["tools_list_bytes"] * 3 < runs["identity"]["tools_list_bytes"]
    assert abs(runs["gzip"]["bytes"]["click"] - runs["identity"]["bytes"]["click"]) < 40  # timings' digits vary
