"""Remote browser backends started for real on loopback, for the tests and scripts/fleet_bench.py:
`playwright run-server` processes and a Selenium Grid 4 (standalone, or hub and node).

Main thread only: each helper starts and stops processes, nothing more.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import playwright

from mcpbrowser.core.browser_process import find_executable
from mcpbrowser.process_tree import alive, descendants

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stop_tree(proc, sig=None):
    """Stop a process and everything below it: `python -m playwright run-server` runs its
    Node.js server as a child, which a plain terminate() would orphan, Chromium and all.
    sig=9 kills the whole tree at once, as a crashed machine would."""
    below = descendants(proc.pid)
    if sig == 9:
        for pid in [proc.pid, *below]:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        proc.wait()
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for pid in below:
        if alive(pid):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


class RunServer:
    """A `playwright run-server` on loopback, which can be killed and started again on its port."""

    def __init__(self, scratch):
        self.scratch = scratch
        self.port = free_port()
        self.url = f"ws://127.0.0.1:{self.port}/"
        self.proc = None
        # run-server launches Chromium from where Playwright keeps its browsers, and the
        # download cannot reach the internet here: put the system Chromium in that place.
        manifest = os.path.join(os.path.dirname(playwright.__file__), "driver", "package", "browsers.json")
        revisions = {b["name"]: b["revision"] for b in json.load(open(manifest))["browsers"]}
        self.browsers = scratch / "ms-playwright"
        for folder, binary, shell in ((f"chromium-{revisions['chromium']}", "chrome-linux64/chrome", False),
                                      (f"chromium_headless_shell-{revisions['chromium-headless-shell']}",
                                       "chrome-headless-shell-linux64/chrome-headless-shell", True)):
            target = self.browsers / folder / binary
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                target.symlink_to(find_executable("chromium", shell=shell))

    def start(self):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "playwright", "run-server", "--port", str(self.port), "--host", "127.0.0.1"],
            # TMPDIR: the browsers it launches keep their profiles in scratch, not /tmp.
            env={**os.environ, "PLAYWRIGHT_BROWSERS_PATH": str(self.browsers), "TMPDIR": str(self.scratch)},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port)
        return self

    def stop(self, sig=None):
        if self.proc is not None:
            stop_tree(self.proc, sig)
            self.proc = None


# -- Selenium Grid 4 -----------------------------------------------------------------------

def grid_jar():
    """The Selenium server jar that scripts/install_grid.sh put in place; (path, None) or (None, why not)."""
    out = subprocess.run(["bash", os.path.join(ROOT, "scripts", "install_grid.sh")],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        return None, (out.stderr.strip().splitlines() or ["scripts/install_grid.sh failed"])[-1]
    return out.stdout.strip().splitlines()[-1], None


class Grid:
    """A Selenium Grid 4 on loopback: `standalone`, or a `hub` with one `node`."""

    def __init__(self, jar, scratch, mode="standalone", max_sessions=4, java_options=()):
        self.jar, self.scratch, self.mode, self.max_sessions = jar, scratch, mode, max_sessions
        self.java_options = list(java_options)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.procs = []

    def _java(self, *args, log):
        java = shutil.which("java")
        # The node's browsers keep their profiles in scratch (TMPDIR), not /tmp.
        return subprocess.Popen([java, *self.java_options, "-jar", self.jar, *args],
                                env={**os.environ, "TMPDIR": str(self.scratch)},
                                stdout=open(self.scratch / log, "wb"), stderr=subprocess.STDOUT)

    def start(self):
        node = ["--max-sessions", str(self.max_sessions), "--override-max-sessions", "true",
                "--selenium-manager", "false", "--session-timeout", "600"]
        if self.mode == "standalone":
            self.procs.append(self._java("standalone", "--host", "127.0.0.1", "--port", str(self.port), *node,
                                         log="grid.log"))
        else:
            bus_pub, bus_sub, node_port = free_port(), free_port(), free_port()
            bus = ["--publish-events", f"tcp://127.0.0.1:{bus_pub}", "--subscribe-events", f"tcp://127.0.0.1:{bus_sub}"]
            self.procs.append(self._java("hub", "--host", "127.0.0.1", "--port", str(self.port), *bus,
                                         log="hub.log"))
            wait_for_port(self.port, 60)
            self.procs.append(self._java("node", "--host", "127.0.0.1", "--port", str(node_port), *bus,
                                         "--grid-url", self.url, *node, log="node.log"))
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            status = self.status()
            if status and status.get("ready") and status.get("nodes"):
                return self
            time.sleep(0.3)
        self.stop()
        log = self.scratch / ("grid.log" if self.mode == "standalone" else "node.log")
        raise AssertionError(f"the Grid ({self.mode}) was not ready in 90 s: {log.read_text()[-2000:]}")

    def status(self):
        try:
            with urllib.request.urlopen(self.url + "/status", timeout=2) as response:
                return json.load(response)["value"]
        except (OSError, ValueError):
            return None

    def sessions(self):
        """The Grid's running sessions, from its status (one per busy slot)."""
        status = self.status() or {}
        return [slot["session"] for node in status.get("nodes", []) for slot in node["slots"] if slot["session"]]

    def stop(self):
        for proc in reversed(self.procs):
            stop_tree(proc)
        self.procs = []
