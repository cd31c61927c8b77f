"""A short soak: concurrent sessions lose no answers, and create/close cycles leak nothing."""
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_short_soak_loses_nothing_and_leaks_nothing():
    proc = subprocess.run([sys.executable, "scripts/soak.py", "--sessions", "4", "--calls", "15",
                           "--cycles", "12"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "60 answered, 0 lost or mismatched" in proc.stdout and "soak: OK" in proc.stdout
