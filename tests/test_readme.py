"""The README's commands as a new user runs them: the Quick start's demo, the library example, the test command."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def section(title):
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def blocks(text, language):
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def test_the_quick_start_runs_as_written(tmp_path):
    first = section("Quick start")
    demo, tests = blocks(first, "sh")
    # The demo sets up what the server needs (setup.sh, idempotent), then drives a page it serves on 127.0.0.1.
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", demo], cwd=ROOT, capture_output=True, text=True,
                          timeout=180, env={**os.environ, "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    said = done.stdout.splitlines()
    assert [line.split("] ", 1)[1].split(":", 1)[0] for line in said[:-1]] == [
        "initialize", "tools/list", "create_session", "navigate", "type", "click", "list_sessions",
        "click (error)", "close_session"], said
    assert '"title": "Signed by Ada Lovelace"' in said[5] and "http://127.0.0.1:" in said[3]
    assert "ELEMENT_NOT_FOUND" in said[7]
    assert said[-1] in first  # the line the README says it ends with
    # It kept no history where the user's own lives (the MCP client passes the server HOME, not XDG_DATA_HOME).
    assert not (tmp_path / ".local" / "share" / "mcpbrowser").exists()
    # The test command is the one CI runs, and it installs the test tools the demo does not.
    assert tests.strip() == "bash scripts/test.sh"
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith("\nbash scripts/test.sh")
    assert "bash scripts/setup.sh test\n" in (ROOT / "scripts" / "test.sh").read_text()
    assert "bash scripts/setup.sh\n" in (ROOT / "scripts" / "demo.sh").read_text()
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    server = re.search(r"^  server\) (.*)$", setup, re.M).group(1)
    assert "extras=http,demo;" in server and "test" not in server and "tox" not in server, server


def test_the_librarys_example_runs_without_the_internet(tmp_path):
    (example,) = blocks(section("The library in ten lines"), "python")
    assert "://" not in example  # a data: URL: nothing to fetch
    done = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["ELEMENT_NOT_FOUND", "Hello"]
    assert list(tmp_path.iterdir()) == []  # db=":memory:": no history file

