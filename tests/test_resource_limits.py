"""Issue 36: a session's CPU and network throttling, its memory figure and limit, and the files folder's limits.

Through the official MCP client over stdio, real Chromium, pages served on 127.0.0.1.
"""

import glob
import json
import os
import shutil
import signal
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from support import McpClient, PageServer, wait_for

from mcpbrowser.process_tree import child_pids

pytestmark = pytest.mark.e2e

# A script that keeps the CPU busy for a fixed amount of work, and puts how long it took in the title.
# In a function of its own: in an inline handler every name is looked up through the element's scopes.
CPU_PAGE = ("data:text/html,<title>-</title><script>function spin() { const t = performance.now(); let x = 0; "
            "for (let i = 0; i < 1e7; i++) x += Math.sqrt(i); document.title = String(performance.now() - t) }"
            "</script><button id=run onclick=spin()>Run</button>")
# 200 MB of doubles, held by the page, when its button is clicked.
HOG_PAGE = ("data:text/html,<title>hog</title><button id=hog onclick=\"window.hog = []; for (let i = 0; i < 200; i++) "
            "window.hog.push(new Array(131072).fill(i + 0.5)); document.title = 'full'\">Hog</button>")


@pytest.fixture(scope="module")
def pages():
    server = PageServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def client():
    # lean: no page capture after each call, which a CPU rate of 10 would slow tenfold too.
    c = McpClient("--response-mode", "lean")
    yield c
    c.close()


def _started(*args):
    """(client, its server's pid): the module's other servers run beside it."""
    before = set(child_pids("mcpbrowser"))
    c = McpClient(*args)
    (pid,) = set(child_pids("mcpbrowser")) - before
    return c, pid


@pytest.fixture(scope="module")
def limited():
    """A server with every limit of this issue set low, and its files folder, upload folder and pid.

    The last test of the module kills it (SIGKILL).
    """
    folder, uploads = tempfile.mkdtemp(prefix="mcpbrowser-files-"), tempfile.mkdtemp(prefix="mcpbrowser-up-")
    with open(os.path.join(uploads, "note.txt"), "w") as f:
        f.write("to upload")
    # A file of the user's, an hour old, in the folder before the server starts (issue 48): never the server's.
    mine = os.path.join(folder, "notes.txt")
    with open(mine, "wb") as f:
        f.write(b"mine " * 1200)
    os.utime(mine, (time.time() - 3600,) * 2)
    c, pid = _started("--session-memory-mb", "100", "--output-dir", folder, "--files-max-mb", "1",
                      "--upload-dir", uploads)
    c.folder, c.uploads, c.pid, c.mine = folder, uploads, pid, mine
    yield c
    try:
        c.close()
    except Exception:
        pass  # killed by the last test
    for made in (folder, uploads):
        shutil.rmtree(made, ignore_errors=True)


def _cpu_ms(client, session_id, runs=2):
    """The fastest of `runs` runs of the busy script, in ms of the page's own clock."""
    return min(float(client.tool("click", sessionId=session_id, selector="#run")["title"]) for _ in range(runs))


@pytest.mark.alone
def test_cpu_rate_slows_scripts_by_about_its_factor_in_every_tab(client, pages):
    sid = client.tool("create_session", url=CPU_PAGE)["sessionId"]
    # About 10x. Chromium throttles by suspending the page's thread for a share of wall time, so
    # when other work keeps the cores busy (c times slower), the base run is slowed c-fold and
    # the throttled one barely: about N/c. On our shared 2-core machine c reaches 3: a wide band.
    # And up to three tries, unthrottled then throttled: a fresh clone's run beside another test's
    # busy pages read 1.87 once (24.5 ms, then 45.8).
    tries = []
    while len(tries) < 3 and not any(2.5 < slowed / base < 25 for base, slowed in tries):
        client.tool("throttle", sessionId=sid, cpuRate=1)
        base = _cpu_ms(client, sid, runs=3)
        shown = client.tool("throttle", sessionId=sid, cpuRate=10)
        assert shown["throttle"] == {"cpuRate": 10}
        tries.append((base, _cpu_ms(client, sid)))
    assert 2.5 < tries[-1][1] / tries[-1][0] < 25, tries
    # A tab the page opens is as slow as the session's others.
    client.tool("navigate", sessionId=sid, url=pages.url("/popup"))
    client.tool("click", sessionId=sid, selector="#win")
    tabs = client.tool("tabs", sessionId=sid, action="select", index=1)
    assert tabs["current"] == 1
    client.tool("navigate", sessionId=sid, url=CPU_PAGE)
    # Up to three reads, as above: beside another test's busy pages one read 1.9x (15.3 ms, then 29.4).
    popped = [_cpu_ms(client, sid)]
    while len(popped) < 3 and not 2.5 < popped[-1] / base < 25:
        popped.append(_cpu_ms(client, sid))
    assert 2.5 < popped[-1] / base < 25, (base, popped)
    listed = {s["sessionId"]: s for s in client.tool("list_sessions")["sessions"]}
    assert listed[sid]["throttle"] == {"cpuRate": 10}
    assert client.tool("throttle", sessionId=sid, cpuRate=1)["throttle"] == {}
    assert "throttle" not in {s["sessionId"]: s for s in client.tool("list_sessions")["sessions"]}[sid]
    client.tool("close_session", sessionId=sid)


class _Payload(BaseHTTPRequestHandler):
    """/timer: a page that loads PAYLOAD bytes (a synchronous request, so the page's load waits for it)
    and puts how long that took, by the page's own clock, in its title; /payload: the bytes."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.startswith("/payload"):
            body = b"x" * PAYLOAD
            kind = "application/octet-stream"
        else:
            body = (b"<title>-</title><script>const t = performance.now(); const x = new XMLHttpRequest(); "
                    b"x.open('GET', '/payload?' + Math.random(), false); x.send(); "
                    b"document.title = String(performance.now() - t)</script>")
            kind = "text/html"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


PAYLOAD = 100_000


def test_network_presets_change_a_known_pages_load_time(client):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Payload)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    timer = f"http://127.0.0.1:{server.server_port}/timer"
    try:
        sid = client.tool("create_session", throttle={"network": "Fast 3G"})["sessionId"]
        loads = {}
        for preset in ("Fast 3G", "Fast 4G", "none"):
            if preset != "Fast 3G":
                client.tool("throttle", sessionId=sid, network=preset)
            loads[preset] = float(client.tool("navigate", sessionId=sid, url=timer)["title"]) / 1000
        # 100 KB: Fast 3G (180,000 B/s, 562.5 ms added) takes about 1.1 s, Fast 4G (1,012,500 B/s,
        # 165 ms) about 0.27 s, no throttling a few ms.
        assert loads["Fast 3G"] > PAYLOAD / 180_000 + 0.5, loads
        assert PAYLOAD / 1_012_500 + 0.15 < loads["Fast 4G"] < loads["Fast 3G"] * 0.6, loads
        assert loads["none"] < loads["Fast 4G"] * 0.6, loads
        client.tool("close_session", sessionId=sid)
    finally:
        server.shutdown()
        server.server_close()


def test_offline_fails_a_navigation_with_a_clear_error(client, pages):
    sid = client.tool("create_session", url=pages.url("/title/online"))["sessionId"]
    assert client.tool("throttle", sessionId=sid, network="offline")["throttle"] == {"network": "offline"}
    error = client.error("navigate", sessionId=sid, url=pages.url("/title/elsewhere"))
    assert error["errorCode"] == "NAVIGATION_FAILED"
    # The reason, which the message quotes whole, is told once (core/answer.agent_error).
    assert error["details"]["offline"] is True and "reason" not in error["details"], error
    assert "ERR_INTERNET_DISCONNECTED" in error["message"]
    assert "offline" in error["message"] and "none" in error["message"]
    client.tool("throttle", sessionId=sid, network="none")
    assert client.tool("navigate", sessionId=sid, url=pages.url("/title/back"))["title"] == "back"
    client.tool("close_session", sessionId=sid)


def test_a_heavy_page_shows_in_its_own_sessions_memory_only(client):
    heavy = client.tool("create_session", url=HOG_PAGE)["sessionId"]
    light = client.tool("create_session", url="data:text/html,<title>light</title>")["sessionId"]
    client.tool("click", sessionId=heavy, selector="#hog")
    listed = {s["sessionId"]: s for s in client.tool("list_sessions")["sessions"]}
    assert listed[heavy]["memoryMb"] > 190, listed[heavy]
    assert listed[light]["memoryMb"] < 40, listed[light]
    assert 0 < listed[heavy]["memoryShare"] <= 1 and listed[light]["memoryShare"] < listed[heavy]["memoryShare"]
    # The session's log resources carry the figure too (as last measured).
    for sid in (heavy, light):
        (content,) = client.run("read_resource", f"mcpbrowser://sessions/{sid}/console").contents
        assert json.loads(content.text)["memoryMb"] == listed[sid]["memoryMb"]
    for sid in (heavy, light):
        client.tool("close_session", sessionId=sid)


def test_the_session_memory_limit_closes_that_session_only_and_resume_brings_it_back(limited, pages):
    heavy = limited.tool("create_session", url=HOG_PAGE, throttle={"network": "Fast 4G"})["sessionId"]
    light = limited.tool("create_session", url=pages.url("/title/light"))["sessionId"]
    time.sleep(2.1)  # the limit is checked after a call at most every 2 s (session_memory.CHECK_EVERY_S)
    limited.tool("click", sessionId=heavy, selector="#hog")
    error = wait_for(lambda: (lambda e: e if e["errorCode"] != "ELEMENT_NOT_FOUND" else None)(
        limited.error("click", sessionId=heavy, selector="#nothing-here", timeout=100)), 10)
    assert error["errorCode"] == "SESSION_MEMORY_EXCEEDED", error
    assert error["details"]["resumable"] is True and error["details"]["limitMb"] == 100
    assert "resume_session" in error["message"]
    ids = {s["sessionId"] for s in limited.tool("list_sessions")["sessions"]}
    assert ids == {light}
    assert limited.tool("navigate", sessionId=light, url=pages.url("/title/fine"))["title"] == "fine"
    back = limited.tool("resume_session", sessionId=heavy)
    assert back["url"].startswith("data:text/html")
    assert limited.tool("snapshot", sessionId=heavy)
    listed = {s["sessionId"]: s for s in limited.tool("list_sessions")["sessions"]}
    assert set(listed) == {heavy, light} and listed[heavy]["memoryMb"] < 100
    assert listed[heavy]["throttle"]["network"] == "Fast 4G"  # resumed as it was
    for sid in listed:
        limited.tool("close_session", sessionId=sid)


def test_the_files_quota_removes_the_oldest_files_and_marks_their_rows_and_a_closed_session_leaves_no_temporaries(
        limited, pages):
    c, folder, pid = limited, limited.folder, limited.pid
    sid = c.tool("create_session", url=pages.url("/title/shot"))["sessionId"]
    shot = c.tool("screenshot", sessionId=sid)
    shot_ref, shot_path = shot["refId"], shot["savedTo"]
    assert os.path.exists(shot_path)
    saved, told = [], []
    for name in ("a.bin", "b.bin", "c.bin"):
        link = "/download?" + urllib.parse.urlencode({"size": 400_000, "name": name})
        c.tool("navigate", sessionId=sid, url=pages.url("/download-link?" + urllib.parse.urlencode({"to": link})))
        clicked = c.tool("click", sessionId=sid, selector="#get")
        waited = c.tool("wait_for", sessionId=sid, download=True)
        # The first answer that names the saved file: the click's when the download ended while the
        # click settled (it may also tell of it still in progress, without a path), else the wait's.
        told.append(next(a for a in (clicked, waited) if any(d.get("path") for d in a.get("downloads", []))))
        (entry,) = [d for d in c.tool("downloads", sessionId=sid)["downloads"] if d["suggestedName"] == name]
        saved.append(entry["path"])
    assert [d["path"] for d in told[0]["downloads"] if d["status"] == "saved"] == [saved[0]]
    # Over 1 MB with the third: the screenshot, then the first download go; the newest stays, and the
    # user's own file, older than all of them, neither goes nor counts.
    assert wait_for(lambda: not os.path.exists(shot_path) and not os.path.exists(saved[0]), 10)
    assert os.path.exists(saved[1]) and os.path.exists(saved[2])
    with open(c.mine, "rb") as f:
        assert f.read() == b"mine " * 1200
    assert sum(os.path.getsize(p) for p in glob.glob(os.path.join(folder, "*")) if p != c.mine) <= 1_048_576
    error = c.error("get_content", ref_id=shot_ref)
    assert error["errorCode"] == "FILE_REMOVED"
    assert error["details"]["files"][0]["path"] == shot_path
    assert error["details"]["files"][0]["reason"] == "files_max_mb"
    # The call that told of the first download still reads its page, and says the file went.
    (gone,) = c.tool("get_content", ref_id=told[0]["refId"])["filesRemoved"]
    assert gone["path"] == saved[0] and gone["reason"] == "files_max_mb"
    statuses = {d["suggestedName"]: d["status"] for d in c.tool("downloads", sessionId=sid)["downloads"]}
    assert statuses == {"a.bin": "removed", "b.bin": "saved", "c.bin": "saved"}
    c.tool("close_session", sessionId=sid)
    # Playwright's temporaries of a session: its downloads, upload staging, an unsaved trace's files.
    sid = c.tool("create_session", url=pages.url("/widgets"))["sessionId"]
    c.tool("upload_file", sessionId=sid, selector="#file", paths=[os.path.join(limited.uploads, "note.txt")])
    c.tool("trace_start", sessionId=sid)
    c.tool("navigate", sessionId=sid, url=pages.url("/title/traced"))
    (scratch,) = glob.glob(os.path.join(tempfile.gettempdir(), f"mcpbrowser-run-{pid}-*", "tmp"))
    artifacts = os.path.join(scratch, "playwright-artifacts-*", "**", "*")
    assert [p for p in glob.glob(artifacts, recursive=True) if os.path.isfile(p)]
    c.tool("close_session", sessionId=sid)
    assert [p for p in glob.glob(artifacts, recursive=True) if os.path.isfile(p)] == []


def test_a_killed_server_leaves_no_temporary_files_after_the_next_start(limited, pages):
    first, folder, pid = limited, limited.folder, limited.pid
    sid = first.tool("create_session", url=pages.url("/title/tracing"))["sessionId"]
    first.tool("trace_start", sessionId=sid)
    first.tool("navigate", sessionId=sid, url=pages.url("/title/traced"))
    # What a kill in the middle of writing a file leaves: the server's own temporary beside it.
    partial = os.path.join(folder, f"20260101-000000-{sid[:8]}-1.pdf.{pid}.part")
    with open(partial, "wb") as f:
        f.write(b"%PDF half")
    runtime = glob.glob(os.path.join(tempfile.gettempdir(), f"mcpbrowser-run-{pid}-*"))
    assert runtime and glob.glob(os.path.join(runtime[0], "tmp", "playwright-artifacts-*", "*"))
    os.kill(pid, signal.SIGKILL)
    second = McpClient("--output-dir", folder)
    try:
        second.tool("create_session")  # the browser started: the sweeps ran
        assert wait_for(lambda: not os.path.exists(partial), 10)
        assert wait_for(lambda: not glob.glob(os.path.join(tempfile.gettempdir(), f"mcpbrowser-run-{pid}-*")), 10)
    finally:
        second.close()
