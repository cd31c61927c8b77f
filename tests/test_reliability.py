"""End to end: a crashed or hung browser is restarted, degraded mode, lost sessions,
the stuck-command watchdog and the memory guard, through the official MCP client."""
import json
import os
import signal
import sqlite3
import time

import pytest
from support import McpClient, RawServer, server_pid, tool_payload, wait_for

from mcpbrowser.process_tree import alive, browser_main_pid, child_pids, cmdline, descendants

pytestmark = pytest.mark.slow


def kill_browser():
    """SIGKILL the shared browser's main process; returns its pid."""
    pid = browser_main_pid(server_pid())
    assert pid is not None, "no browser process under the server"
    os.kill(pid, signal.SIGKILL)
    return pid


def events(client, name):
    return [e for e in client.server_log() if e.get("event") == name]


def test_browser_crash_loses_sessions_with_a_resume_hint_and_recovers(pages, tmp_path):
    db = str(tmp_path / "history.db")
    c = McpClient("--db", db)
    try:
        saved = c.tool("create_session")["sessionId"]
        c.tool("navigate", sessionId=saved, url=pages.url("/storage"))
        c.tool("type", sessionId=saved, selector="#v", text="kept")
        c.tool("click", sessionId=saved, selector="#save")
        c.tool("navigate", sessionId=saved, url=pages.url("/title/saved-page"))  # a URL change saves state
        c.tool("snapshot", sessionId=saved)  # ...after the answer: the next call waits for that save
        first = kill_browser()
        assert wait_for(lambda: events(c, "browser_crashed"), 5), "the crash was not noticed"
        err = c.error("snapshot", sessionId=saved)
        assert err["errorCode"] == "SESSION_LOST", err
        assert err["details"] == {"reason": "browser_crash", "resumable": True}
        assert "resume_session" in err["message"]
        assert wait_for(lambda: close_reason(db, saved) == "browser_crash", 5), close_reason(db, saved)
        # New sessions work as soon as the browser is back (create_session waits for it).
        fresh = c.tool("create_session")["sessionId"]
        assert c.tool("navigate", sessionId=fresh, url=pages.url("/title/after"))["title"] == "after"
        assert browser_main_pid(server_pid()) not in (None, first)
        # The lost session comes back with its cookies and local storage.
        resumed = c.tool("resume_session", sessionId=saved)
        assert resumed["url"] == pages.url("/title/saved-page")
        c.tool("navigate", sessionId=saved, url=pages.url("/storage"))
        c.tool("click", sessionId=saved, selector="#show")
        title = c.tool("snapshot", sessionId=saved)["title"]
        assert "cookie=k=kept" in title and "local=kept" in title, title
        restarted = events(c, "browser_restarted")
        assert restarted and "exited" in restarted[0]["cause"], restarted
        assert restarted[0]["relaunched"] is True  # on the launcher that ran the dead browser
        scheduled = events(c, "browser_restart_scheduled")
        assert scheduled[0]["in_s"] == 0.0 and scheduled[0]["degraded"] is False  # the first crash: at once
    finally:
        c.close()


def close_reason(db, session_id):
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT json_extract(metadata, '$.closeReason') FROM sessions WHERE session_id = ?",
                           (session_id,)).fetchone()
    return row and row[0]


def processes_in(group):
    """Every process of the process group Playwright started the browser in: a dead browser's helpers are nobody's
    descendants (nor do the headless shell's name its profile on their command lines)."""
    def of(pid):
        try:
            return os.getpgid(pid) == group
        except OSError:
            return False
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and of(int(p))]


def test_a_session_without_saved_state_is_lost_without_a_resume_hint():
    c = McpClient("--pool-size", "0")
    try:
        sid = c.tool("create_session")["sessionId"]
        # One of the browser's helpers hangs (stopped): it cannot notice its browser die, so the
        # launcher, which stays for the next browser, must end it with the rest of the dead one.
        main = browser_main_pid(server_pid())
        group = os.getpgid(main)
        helper = descendants(main)[0]
        assert os.getpgid(helper) == group
        os.kill(helper, signal.SIGSTOP)
        kill_browser()
        assert wait_for(lambda: events(c, "session_lost"), 5)
        err = c.error("snapshot", sessionId=sid)
        assert err["errorCode"] == "SESSION_LOST" and err["details"]["resumable"] is False
        assert "create_session" in err["message"]
        assert wait_for(lambda: not processes_in(group), 5), processes_in(group)
    finally:
        c.close()


def test_past_the_restart_budget_the_server_is_degraded_until_the_window_allows(pages):
    # The window holds both crashes even on a loaded machine: with 8 s, the second came 8 s after the first
    # restart once in CI (the restart and a create_session took that long) and the budget rightly allowed it;
    # with 15 s, once in a fresh clone on a machine at its slowest. The test waits out what is left of it.
    c = McpClient("--max-restarts", "1", "--restart-window", "25", "--pool-size", "0")
    try:
        c.tool("create_session")
        kill_browser()
        c.tool("create_session")  # waits for the restart
        kill_browser()
        assert wait_for(lambda: len(events(c, "browser_crashed")) == 2, 5)
        err = c.error("create_session")
        assert err["errorCode"] == "BROWSER_UNAVAILABLE", err
        retry_ms = err["details"]["retryAfterMs"]
        assert 0 < retry_ms <= 25000 and "exited" in err["details"]["cause"]
        assert events(c, "browser_restart_scheduled")[-1]["degraded"] is True
        time.sleep(retry_ms / 1000 + 0.5)
        sid = wait_for(lambda: not c.call("create_session").is_error, 15, step=0.5)
        assert sid, "no restart after the window"
        sid = c.tool("create_session")["sessionId"]
        assert c.tool("navigate", sessionId=sid, url=pages.url("/title/back"))["title"] == "back"
    finally:
        c.close()


def test_a_hung_browser_fails_its_health_check_and_is_restarted(pages):
    c = McpClient("--browser-ping", "1", "--pool-size", "0")
    try:
        c.tool("create_session")
        hung = browser_main_pid(server_pid())
        os.kill(hung, signal.SIGSTOP)  # alive, but answers nothing
        crashed = wait_for(lambda: events(c, "browser_crashed"), 15)
        assert crashed and "health check" in crashed[0]["cause"], crashed
        sid = c.tool("create_session")["sessionId"]
        assert c.tool("navigate", sessionId=sid, url=pages.url("/title/alive"))["title"] == "alive"
        assert wait_for(lambda: not alive(hung), 5)
    finally:
        c.close()


def test_a_stuck_command_is_answered_and_its_session_thread_replaced(pages):
    c = McpClient("--allow-evaluate", "--watchdog-grace", "1", "--action-timeout", "1000",
                  "--navigation-timeout", "2000", "--pool-size", "0")
    try:
        sid = c.tool("create_session", timezoneId="Asia/Tokyo")["sessionId"]
        c.tool("navigate", sessionId=sid, url=pages.url("/title/before"))
        pid = server_pid()
        threads = _threads(pid)
        drivers = child_pids("run-driver", parent=pid)
        started = time.monotonic()
        err = c.error("evaluate", sessionId=sid, expression="() => { while (true) {} }")
        took = time.monotonic() - started
        assert err["errorCode"] == "COMMAND_TIMEOUT", err
        assert err["details"] == {"tool": "evaluate", "budgetSeconds": 3} and 3 <= took < 10
        assert "last saved URL" in err["message"]
        # The session goes on, on a fresh thread, at its last saved page.
        assert c.tool("snapshot", sessionId=sid)["url"] == pages.url("/title/before")
        assert c.tool("navigate", sessionId=sid, url=pages.url("/title/after"))["title"] == "after"
        # ...with its emulation.
        assert json.loads(c.tool("navigate", sessionId=sid, url=pages.url("/probe"))["title"])["tz"] == "Asia/Tokyo"
        # The old thread and its driver are gone, not leaked.
        assert wait_for(lambda: _threads(pid) <= threads, 5), (_threads(pid), threads)
        assert wait_for(lambda: not any(alive(d) for d in drivers), 5)
        assert events(c, "session_thread_replaced")[0]["driver_killed"] is True
    finally:
        c.close()


def _threads(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(line.split()[1] for line in f if line.startswith("Threads:")))


def test_memory_guard_refuses_new_sessions_over_the_limit():
    c = McpClient("--max-memory-mb", "64")
    try:
        # Right after start the browser may not be up yet, so the tree may still be small: once a
        # session exists (a launcher, a browser and a relay, well over 64 MB), the next one must be refused.
        if not c.call("create_session").is_error:
            time.sleep(1.2)  # the guard samples /proc at most once a second
        err = c.error("create_session")
        assert err["errorCode"] == "RESOURCE_EXHAUSTED", err
        assert err["details"]["limitMb"] == 64 and err["details"]["usedMb"] > 64
        assert "close a session" in err["message"]
    finally:
        c.close()
    roomy = McpClient("--max-memory-mb", "100000")
    try:
        assert roomy.tool("create_session")["sessionId"]
    finally:
        roomy.close()


def _shut_down(server):
    """Close stdin; (seconds to exit, processes that were below the server and are still alive)."""
    below = descendants(server.proc.pid)
    started = time.monotonic()
    server.proc.stdin.close()
    server.proc.wait(30)
    took = time.monotonic() - started
    wait_for(lambda: not [p for p in below if alive(p)], 3)
    return took, [p for p in below if alive(p)]


@pytest.mark.alone
def test_shutdown_gives_a_stuck_session_5_s_then_stops_the_browser_and_leaves_nothing():
    server = RawServer("--allow-evaluate", "--watchdog-grace", "0", "--pool-size", "0")
    try:
        server.initialize()
        sid = tool_payload(server.call(1, "create_session"))["sessionId"]
        server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "evaluate", "arguments": {"sessionId": sid, "expression": "() => { while (true) {} }"}}})
        time.sleep(0.5)
        took, left = _shut_down(server)
        assert 4.5 <= took < 9, took   # the session's 5 s, then the browser's stop
        assert left == [] and server.proc.returncode == 0
        assert "core_closed" in [e.get("event") for e in server.server_log()]
    finally:
        server.close()


@pytest.mark.alone
def test_shutdown_kills_a_browser_that_ignores_sigterm_after_2_s():
    server = RawServer("--pool-size", "0")
    try:
        server.initialize()
        assert wait_for(lambda: "browser_started" in [e.get("event") for e in server.server_log()], 15)
        launcher = [p for p in descendants(server.proc.pid) if "launch_server.js" in cmdline(p)]
        os.kill(launcher[0], signal.SIGSTOP)  # it can no longer act on SIGTERM
        took, left = _shut_down(server)
        assert 2.0 <= took < 5, took
        assert left == [] and server.proc.returncode == 0
        assert "browser_killed" in [e.get("event") for e in server.server_log()]
    finally:
        server.close()


def test_contexts_carry_no_omnibox_webui_renderer_and_keep_playwrights_defaults(pages):
    """Each context used to cost an extra ~40 MB WebUI renderer; the flags that
    remove it must add to Playwright's own --disable-features, not replace them (and WebMCP to its
    --enable-features)."""
    c = McpClient("--pool-size", "0")
    try:
        for _ in range(2):
            sid = c.tool("create_session")["sessionId"]
            c.tool("navigate", sessionId=sid, url=pages.url("/title/one"))
        main = browser_main_pid(server_pid())
        flags = [a for a in cmdline(main).split() if a.startswith("--disable-features=")]
        assert len(flags) == 1, flags
        disabled = flags[0].split("=", 1)[1].split(",")
        assert {"WebUIOmniboxPopup", "WebUIOmniboxAimPopup"} <= set(disabled)
        assert {"PaintHolding", "ThirdPartyStoragePartitioning"} <= set(disabled)  # Playwright's own
        # WebMCP (--webmcp, on by default) joins Playwright's own enabled features the same way.
        enabled = [a for a in cmdline(main).split() if a.startswith("--enable-features=")]
        assert len(enabled) == 1
        assert {"CDPScreenshotNewSurface", "WebMCP"} <= set(enabled[0].split("=", 1)[1].split(","))
        renderers = [cmdline(p) for p in descendants(main) if "--type=renderer" in cmdline(p)]
        assert len(renderers) >= 2 and not [r for r in renderers if "--top-chrome-webui" in r]
    finally:
        c.close()
