"""A real tools/call, traced through the server (scripts/call_path.py): the files it crosses to reach
Playwright, each entered once, and the figures ARCHITECTURE.md quotes are today's."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from call_path import summary  # noqa: E402 (a script, not a package)


@pytest.fixture(scope="module")
def reports():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "call_path.py"), "--json",
                           "--tool", "click", "--tool", "type", "--tool", "navigate",
                           "--tool", "hover", "--tool", "select"],
                          capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


# hover and select: two more tools that hand targeting an Act (a function of their own re-enters).
@pytest.mark.parametrize("tool", ["click", "type", "navigate", "hover", "select"])
def test_a_call_enters_each_file_on_its_line_once_and_reaches_playwright_through_the_session(reports, tool):
    report = reports[tool]
    line = report["line"]
    assert report["reentries"] == [], f"{tool} leaves a file and comes back to it: {report['reentries']}"
    # The stdio reader hands the call to the dispatcher, which queues it; the session thread runs it.
    assert line[:2] == ["transports/stdio.py", "transports/mcp_connection.py"]
    assert line.index("core/dispatch.py") < line.index("session/worker.py") < line.index("core/on_session.py")
    assert line[-2:] == ["session/acting.py", "session/playwright_internals.py"]
    assert len(line) <= 12 and len(line) == len(set(line))
    # Only the call's two threads: another session the warm pool opens meanwhile is not on its path.
    assert len(report["threads"]) == 2 and "stdin-reader" in report["threads"], report["threads"]


def test_architecture_md_quotes_the_trace_of_today(reports):
    text = (ROOT / "ARCHITECTURE.md").read_text()
    # A navigation's own files vary with the page's events and the machine's load:
    # its line is quoted, not its count.
    assert " -> ".join(reports["navigate"]["line"]) in text
    for tool in ("click", "type"):
        today = summary(reports[tool])
        assert today in text, f"ARCHITECTURE.md's figures for {tool} are stale; today: {today}"
    click = reports["click"]
    assert " -> ".join(click["line"]) in text
    assert ", ".join(click["asked"]) in text


# What a call's way in may go back into, and why: the services of the objects it is handed.
SERVICES = {
    # the connection keeps the requests in flight (a cancel finds them there): the tool bridge reserves an id
    "transports/mcp_connection.py -> transports/tool_methods.py -> transports/mcp_connection.py",
    # a tool asks the session's state of its own: to clear the way for a load, the session's secrets
    "session/state.py -> tools/navigation.py -> session/state.py",
    "session/state.py -> tools/interaction.py -> session/snapshots.py -> session/state.py",
}


@pytest.mark.parametrize("tool", ["click", "type", "navigate", "hover", "select"])
def test_on_the_way_in_a_call_goes_back_only_into_the_services_it_is_handed(reports, tool):
    """Every stack on the way in, not only the last: a callback into a file the call left (a lambda
    of browser.py's that the recorder called, a tool's own function) shows as a return."""
    returns = set(reports[tool]["returns"])
    assert returns <= SERVICES, returns - SERVICES
