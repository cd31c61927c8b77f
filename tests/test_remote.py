"""Sessions on a remote browser: a real `playwright run-server` started by the test."""

import json
import os
import socket
import subprocess
import sys
import time

import playwright
import pytest
from support import McpClient, driver_cmdlines, wait_for

from mcpbrowser.core.browser_process import find_executable
from mcpbrowser.process_tree import alive, descendants

pytestmark = pytest.mark.slow


def _stop_tree(proc):
    """Stop a process and everything below it: `python -m playwright run-server` runs its
    Node.js server as a child, which a plain terminate() would orphan, Chromium and all."""
    below = descendants(proc.pid)
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


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


@pytest.fixture
def run_server(tmp_path):
    # run-server launches Chromium from where Playwright keeps its browsers, and the
    # download cannot reach the internet here: put the system Chromium in that place.
    manifest = os.path.join(os.path.dirname(playwright.__file__), "driver", "package", "browsers.json")
    revisions = {b["name"]: b["revision"] for b in json.load(open(manifest))["browsers"]}
    chromium = find_executable("chromium")
    root = tmp_path / "ms-playwright"
    for folder, binary in ((f"chromium-{revisions['chromium']}", "chrome-linux64/chrome"),
                           (f"chromium_headless_shell-{revisions['chromium-headless-shell']}",
                            "chrome-headless-shell-linux64/chrome-headless-shell")):
        target = root / folder / binary
        target.parent.mkdir(parents=True)
        target.symlink_to(chromium)
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "playwright", "run-server", "--port", str(port),
                             "--host", "127.0.0.1"],
                            # TMPDIR: the browsers it launches keep their profiles in tmp_path, not /tmp.
                            env={**os.environ, "PLAYWRIGHT_BROWSERS_PATH": str(root), "TMPDIR": str(tmp_path)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for_port(port)
    yield f"ws://127.0.0.1:{port}/"
    _stop_tree(proc)


def test_sessions_live_on_a_playwright_run_server(run_server, pages):
    c = McpClient("--ws-endpoint", run_server, "--endpoint-headers", "X-Test: yes")
    try:
        a = c.tool("create_session")["sessionId"]
        b = c.tool("create_session")["sessionId"]
        for sid in (a, b):
            c.tool("navigate", sessionId=sid, url=pages.url("/storage"))
        c.tool("type", sessionId=a, selector="#v", text="remote")
        c.tool("click", sessionId=a, selector="#save")
        c.tool("click", sessionId=b, selector="#show")
        titles = {sid: c.tool("snapshot", sessionId=sid)["title"] for sid in (a, b)}
        assert titles[a] == "cookie=k=remote;local=remote;session=remote"
        assert titles[b] == "cookie=;local=;session="  # isolation holds on the remote browser too
        events = [e.get("event") for e in c.server_log()]
        assert "remote_browser" in events and "browser_started" not in events
        # No launcher of ours, so no pipe: each session runs Playwright's own Node.js driver.
        drivers = driver_cmdlines()
        assert drivers and all("cli.js" in line and "pipe_relay" not in line for line in drivers), drivers
    finally:
        c.close()


@pytest.fixture
def cdp_browser(tmp_path):
    port = _free_port()
    proc = subprocess.Popen([find_executable("chromium"), "--headless", "--no-sandbox", "--no-first-run",
                             f"--remote-debugging-port={port}", f"--user-data-dir={tmp_path / 'profile'}",
                             "--disable-background-networking", "about:blank"],
                            env={**os.environ, "TMPDIR": str(tmp_path)},  # its singleton dir too
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for_port(port)
    proc.endpoint = f"http://127.0.0.1:{port}"
    yield proc
    _stop_tree(proc)


def test_sessions_live_on_a_cdp_browser(cdp_browser, pages, tmp_path):
    scratch = tmp_path / "server-tmp"  # the server's TMPDIR, where each session's driver keeps its artifacts
    scratch.mkdir()
    c = McpClient("--cdp-endpoint", cdp_browser.endpoint, env={"TMPDIR": str(scratch)})
    try:
        a = c.tool("create_session")["sessionId"]
        b = c.tool("create_session")["sessionId"]
        c.tool("navigate", sessionId=a, url=pages.url("/storage"))
        c.tool("navigate", sessionId=b, url=pages.url("/storage"))
        c.tool("type", sessionId=a, selector="#v", text="cdp")
        c.tool("click", sessionId=a, selector="#save")
        c.tool("click", sessionId=b, selector="#show")
        titles = {sid: c.tool("snapshot", sessionId=sid)["title"] for sid in (a, b)}
        assert titles[a] == "cookie=k=cdp;local=cdp;session=cdp" and titles[b] == "cookie=;local=;session="
        assert "browser_started" not in [e.get("event") for e in c.server_log()]
        assert len(list(scratch.glob("playwright-artifacts-*"))) >= 2  # one per session's driver
        # Closing a session disconnects its driver from the browser; the browser and the
        # other session's context stay.
        c.tool("close_session", sessionId=a)
        assert c.tool("snapshot", sessionId=b)["title"] == "cookie=;local=;session="
        assert cdp_browser.poll() is None
    finally:
        c.close()
    assert cdp_browser.poll() is None
    # Each driver removes its own, as it exits: that can finish just after the server has.
    assert wait_for(lambda: list(scratch.glob("playwright-artifacts-*")) == [], seconds=5), \
        list(scratch.glob("playwright-artifacts-*"))


def test_a_remote_browser_that_goes_away_loses_its_sessions(cdp_browser, pages):
    """Nothing of ours to restart: the sessions answer SESSION_LOST, not BROWSER_ERROR."""
    c = McpClient("--cdp-endpoint", cdp_browser.endpoint, "--pool-size", "0")
    try:
        sid = c.tool("create_session")["sessionId"]
        c.tool("navigate", sessionId=sid, url=pages.url("/title/remote"))
        _stop_tree(cdp_browser)
        err = c.error("navigate", sessionId=sid, url=pages.url("/title/gone"))
        assert err["errorCode"] == "SESSION_LOST", err
        assert c.error("snapshot", sessionId=sid)["errorCode"] == "SESSION_LOST"  # and it stays closed
    finally:
        c.close()
