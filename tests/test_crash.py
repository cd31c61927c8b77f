"""A crashed page inside a live context: the call answers PAGE_CRASHED and the session gets a fresh page."""
import os
import signal
import time

import pytest
from support import McpClient, server_pid

from mcpbrowser.process_tree import cmdline, descendants

pytestmark = pytest.mark.slow


def page_renderers(server_pid):
    """Renderer processes showing web pages (not the browser's own WebUI) under the server."""
    found = []
    for pid in descendants(server_pid):
        cmd = cmdline(pid)
        if "--type=renderer" in cmd and "--top-chrome-webui" not in cmd:
            found.append(pid)
    return found


def test_crashed_page_is_replaced(pages):
    c = McpClient("--pool-size", "0")
    try:
        sid = c.tool("create_session")["sessionId"]
        c.tool("navigate", sessionId=sid, url=pages.url("/title/before"))
        renderers = page_renderers(server_pid())
        assert renderers, "no page renderer found"
        for pid in renderers:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
        err = c.error("navigate", sessionId=sid, url=pages.url("/title/during"))
        assert err["errorCode"] == "PAGE_CRASHED" and err["details"]["url"] == pages.url("/title/before")
        again = c.tool("navigate", sessionId=sid, url=pages.url("/title/after"))
        assert again["title"] == "after" and "newTabs" not in again  # the replacement is no news
        tabs = c.tool("tabs", sessionId=sid)["tabs"]
        assert len(tabs) == 1 and tabs[0]["title"] == "after"
        assert "page_crashed" in [e.get("event") for e in c.server_log()]
    finally:
        c.close()
