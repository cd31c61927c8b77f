"""Sessions on a remote browser: a real `playwright run-server` started by the test."""

import os
import subprocess

import pytest
from backends import RunServer, free_port, stop_tree, wait_for_port
from support import McpClient, driver_cmdlines, wait_for

from mcpbrowser.core.browser_process import find_executable

pytestmark = pytest.mark.slow


@pytest.fixture
def run_server(short_tmp):
    server = RunServer(short_tmp).start()
    yield server.url
    server.stop()


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
def cdp_browser(short_tmp):
    port = free_port()
    proc = subprocess.Popen([find_executable("chromium"), "--headless", "--no-sandbox", "--no-first-run",
                             f"--remote-debugging-port={port}", f"--user-data-dir={short_tmp / 'profile'}",
                             "--disable-background-networking", "about:blank"],
                            env={**os.environ, "TMPDIR": str(short_tmp)},  # its singleton dir too
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port)
    proc.endpoint = f"http://127.0.0.1:{port}"
    yield proc
    stop_tree(proc)


def test_sessions_live_on_a_cdp_browser(cdp_browser, pages, short_tmp):
    scratch = short_tmp / "server-tmp"  # the server's TMPDIR, where each session's driver keeps its artifacts
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
        stop_tree(cdp_browser)
        err = c.error("navigate", sessionId=sid, url=pages.url("/title/gone"))
        assert err["errorCode"] == "SESSION_LOST", err
        assert c.error("snapshot", sessionId=sid)["errorCode"] == "SESSION_LOST"  # and it stays closed
    finally:
        c.close()
