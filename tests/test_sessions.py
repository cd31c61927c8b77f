"""End to end: concurrent sessions, isolation, expiry, limits and browser failure, via the official client."""
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

pytestmark = pytest.mark.e2e


def _titles(client):
    return {s["sessionId"]: s["title"] for s in client.tool("list_sessions")["sessions"]}


def test_four_sessions_work_at_the_same_time(client, pages):
    ids = [client.tool("create_session")["sessionId"] for _ in range(4)]

    def workload(index):
        sid = ids[index]
        nav = client.tool("navigate", sessionId=sid, url=pages.url("/form"))
        client.tool("type", sessionId=sid, selector="#name", text=f"user{index}")
        client.tool("click", sessionId=sid, selector="#go")
        together = client.tool("navigate", sessionId=sid, url=pages.url("/barrier?n=4&k=four"))
        back = client.tool("navigate", sessionId=sid, url=pages.url(f"/title/s{index}"))
        return nav["title"], together["title"], back["title"]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(workload, range(4)))
    # "together" proves all four navigations were in flight at once.
    assert results == [("Form", "together", f"s{i}") for i in range(4)]
    assert [client.tool("snapshot", sessionId=sid)["title"] for sid in ids] == [f"s{i}" for i in range(4)]
    for sid in ids:
        client.tool("close_session", sessionId=sid)


def test_sessions_are_isolated(client, pages):
    a = client.tool("create_session")["sessionId"]
    b = client.tool("create_session")["sessionId"]
    for sid in (a, b):
        client.tool("navigate", sessionId=sid, url=pages.url("/storage"))
    client.tool("type", sessionId=a, selector="#v", text="secretA")
    client.tool("click", sessionId=a, selector="#save")
    client.tool("click", sessionId=b, selector="#show")
    # Reload a so the cookie and local storage are read back from the browser.
    client.tool("navigate", sessionId=a, url=pages.url("/storage"))
    client.tool("click", sessionId=a, selector="#show")
    assert client.tool("snapshot", sessionId=a)["title"] == "cookie=k=secretA;local=secretA;session=secretA"
    assert client.tool("snapshot", sessionId=b)["title"] == "cookie=;local=;session="
    for sid in (a, b):
        client.tool("close_session", sessionId=sid)


def test_session_expires_after_its_timeout(make_client, pages):
    c = make_client("--session-timeout", "4000")
    sid = c.tool("create_session")["sessionId"]
    other = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=sid, url=pages.url("/title/alive"))
    deadline = time.monotonic() + 30
    while _titles(c) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sid not in _titles(c) and other not in _titles(c)
    err = c.error("navigate", sessionId=sid, url=pages.url("/title/late"))
    assert err["errorCode"] == "SESSION_EXPIRED" and "sessionId" not in err  # the agent sent it
    assert c.error("close_session", sessionId=sid)["errorCode"] == "SESSION_EXPIRED"
    events = [entry.get("event") for entry in c.server_log()]
    assert events.count("session_expired") == 2


def test_max_sessions_limit(make_client):
    c = make_client("--max-sessions", "2")
    first = c.tool("create_session")["sessionId"]
    c.tool("create_session")
    err = c.error("create_session")
    assert err["errorCode"] == "MAX_SESSIONS_REACHED" and err["details"] == {"maxSessions": 2}
    c.tool("close_session", sessionId=first)
    assert c.tool("create_session")["sessionId"]


def test_browser_that_cannot_start_is_browser_error(make_client):
    c = make_client("--executable-path", "/bin/false")
    err = c.error("create_session")
    assert err["errorCode"] == "BROWSER_ERROR" and "did not start" in err["message"]


def test_a_display_without_an_x_server_says_so_and_how_to_run_headless(make_client):
    """A DISPLAY that names no X server (a stale one in an SSH session, say): Chromium's own line saying so was cut
    from the message, which kept the tail of Playwright's stack trace and a zygote's "Broken pipe" instead."""
    c = make_client("--no-headless", env={"DISPLAY": ":987", "WAYLAND_DISPLAY": ""})
    err = c.error("create_session")
    assert err["errorCode"] == "BROWSER_ERROR", err
    assert "DISPLAY=:987" in err["message"] and "--headless" in err["message"], err


def test_missing_browser_executable_says_how_to_install(make_client):
    c = make_client("--executable-path", "/nonexistent/chrome")
    err = c.error("create_session")
    assert err["errorCode"] == "BROWSER_ERROR"
    assert "apt-get install chromium" in err["message"] and "playwright install" in err["message"]


def test_uninstalled_browser_type_says_how_to_install(make_client, tmp_path):
    c = make_client("--browser", "firefox", env={"PLAYWRIGHT_BROWSERS_PATH": str(tmp_path)})
    err = c.error("create_session")
    assert err["errorCode"] == "BROWSER_ERROR"
    assert "firefox is not installed" in err["message"] and "playwright install firefox" in err["message"]


def test_logs_reach_the_client_after_set_level(make_client):
    c = make_client()
    c.tool("list_sessions")
    assert c.log_messages == []
    c.run("set_logging_level", "info")
    c.tool("list_sessions")
    deadline = time.monotonic() + 5
    while not c.log_messages and time.monotonic() < deadline:
        time.sleep(0.05)
    data = [m.data for m in c.log_messages]
    assert any(d.get("event") == "tool_call" and d.get("tool") == "list_sessions" for d in data)


def test_stderr_log_is_json_with_call_details(client):
    client.tool("list_sessions")
    calls = [e for e in client.server_log() if e.get("event") == "tool_call"]
    assert calls and {"tool", "session", "duration_ms", "outcome", "level", "time"} <= set(calls[-1])


def test_official_client_cancellation_drops_the_queued_call(client, session, pages):
    import anyio

    results = {}

    async def scenario():
        async with anyio.create_task_group() as tg:
            async def slow():
                results["slow"] = await client.session.call_tool(
                    "navigate", {"sessionId": session, "url": pages.url("/slow?ms=1500")})

            tg.start_soon(slow)
            await anyio.sleep(0.2)
            # Abandoning the call makes the client send notifications/cancelled.
            with anyio.move_on_after(0.3):
                await client.session.call_tool(
                    "navigate", {"sessionId": session, "url": pages.url("/hit?k=official")})

    client.portal.call(scenario)
    assert not results["slow"].is_error
    assert "/hit?k=official" not in pages.hits
    assert any(e.get("event") == "cancelled" for e in client.server_log())
    after = client.tool("navigate", sessionId=session, url=pages.url("/hit?k=official-after"))
    assert after["title"] == "hit official-after"
