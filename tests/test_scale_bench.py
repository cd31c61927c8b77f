"""scripts/scale_bench.py still runs: one SQLite server behind HAProxy, one client, one round. Its figures are not
checked (speed is measured by the script, never by a test), only that every call went through the balancer and
came back; and that without HAProxy it says so rather than install anything."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = str(ROOT / "scripts" / "scale_bench.py")


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy is not installed (apt-get install haproxy)")
def test_scale_bench_runs_one_sqlite_server_behind_haproxy():
    done = subprocess.run([sys.executable, SCRIPT, "--clients", "2", "--calls", "1", "--no-postgres", "--json"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    (row,) = json.loads(done.stdout)["rows"]
    assert (row["db"], row["servers"], row["clients"], row["errors"]) == ("sqlite", 1, 2, 0)
    assert row["calls"] == 4 and row["calls_per_s"] > 0
    assert row["navigate"]["p50_ms"] > 0 and row["snapshot"]["p95_ms"] >= row["snapshot"]["p50_ms"]


def test_scale_bench_without_haproxy_says_so_and_installs_nothing(tmp_path):
    os.symlink(sys.executable, tmp_path / "python")  # a PATH with Python and nothing else
    done = subprocess.run([sys.executable, SCRIPT, "--no-postgres"], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, env={**os.environ, "PATH": str(tmp_path)})
    assert done.returncode == 2 and "haproxy is not installed" in done.stderr and done.stdout == ""
