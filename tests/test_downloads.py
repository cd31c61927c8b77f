"""Issue 49: --max-download-mb bounds the bytes of a session's downloads on disk while they stream.

Through the official MCP client over stdio, real Chromium, files made on the fly by a server on
127.0.0.1 (chunked, endless, or announcing their size); what is on disk (the browser's download
folder and the files folder) is measured every few milliseconds from here.
"""

import glob
import os
import shutil
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from support import McpClient, wait_for

from mcpbrowser.process_tree import child_pids

pytestmark = pytest.mark.e2e

MB = 1024 * 1024
CHUNK = bytes(range(256)) * 256  # 64 KB
# A download's bytes on disk may pass the 1 MB limit by what arrives before the session hears of
# it, between two looks (WATCH_S) and while the cancel travels: 2-9 MB measured here, 13.7 MB once
# in a CI run whose cores were all busy (the local server streams on while the session waits for
# a core). Before issue 49, four 40 MB streams all finished (316 MB on disk with their copies) and
# an endless one ran for ever.
PEAK_BOUND = 16 * MB


class _Files(BaseHTTPRequestHandler):
    """/page?links=a,b (the links, with `download`, and a button that clicks them all, now or after
    `later` ms; with `together=N`, no stream sends its body before N have started; with `same`, every link the
    same suggested name); /chunked (40 MB),
    /endless, /sized (40 MB with its Content-Length), /small (300 KB)."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/page":
            together = f"&together={query['together']}" if "together" in query else ""
            links = "".join(f'<a download="{"same.bin" if "same" in query else f"f{i}.bin"}" '
                            f'href="/{kind}?n={i}{together}">{kind}</a>'
                            for i, kind in enumerate(query["links"].split(",")))
            click = "document.querySelectorAll('a').forEach(a => a.click())"
            body = (f'<title>files</title>{links}<button id=go onclick="setTimeout(() => {{ {click} }}, '
                    f'{query.get("later", 0)})">Get</button>').encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        total = {"/chunked": 40 * MB, "/sized": 40 * MB, "/small": 300 * 1024, "/endless": None}.get(url.path, 0)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length" if url.path == "/sized" else "Transfer-Encoding",
                         str(total) if url.path == "/sized" else "chunked")
        self.end_headers()
        key, sent = self.path, 0
        self.server.started.add(key)
        if "together" in query:  # no body until every stream of the set has started (a load must not let
            deadline = time.monotonic() + 10  # the first ones end before the last one starts)
            while (sum("together" in started for started in list(self.server.started)) < int(query["together"])
                   and time.monotonic() < deadline):
                time.sleep(0.01)
        try:
            while total is None or sent < total:
                chunk = CHUNK[:total - sent] if total is not None else CHUNK
                self.wfile.write(chunk if url.path == "/sized" else b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
                with self.server.lock:
                    self.server.sent[key] = sent
                time.sleep(0.004)  # at most 16 MB/s a stream (less on a loaded machine)
            if url.path != "/sized":
                self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the browser cancelled it
        self.server.ended.add(key)


@pytest.fixture(scope="module")
def files_server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    httpd.daemon_threads = True
    httpd.sent, httpd.started, httpd.ended, httpd.lock = {}, set(), set(), threading.Lock()
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    httpd.url = f"http://127.0.0.1:{httpd.server_port}"
    yield httpd
    httpd.shutdown()


@pytest.fixture(scope="module")
def limited():
    """A server with a 1 MB download limit, its files folder and its pid."""
    folder = tempfile.mkdtemp(prefix="mcpbrowser-files-")
    before = set(child_pids("mcpbrowser"))
    c = McpClient("--output-dir", folder, "--max-download-mb", "1", "--response-mode", "lean")
    (c.pid,) = set(child_pids("mcpbrowser")) - before
    c.folder = folder
    yield c
    c.close()
    shutil.rmtree(folder, ignore_errors=True)


class DiskPeak:
    """The most bytes the browser's download folder and the files folder held at once, looked at every 5 ms."""

    def __init__(self, client):
        self.roots = [client.folder, *glob.glob(os.path.join(
            tempfile.gettempdir(), f"mcpbrowser-run-{client.pid}-*", "tmp"))]
        self.peak, self._stop = 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def now(self):
        total = 0
        for root in self.roots:
            for folder, _, names in os.walk(root):
                if folder == root and root != self.roots[0]:
                    continue  # the browser's profile and sockets; its downloads are in playwright-artifacts-*
                for name in names:
                    try:
                        total += os.path.getsize(os.path.join(folder, name))
                    except OSError:
                        pass
        return total

    def _run(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self.now())

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.peak


def _downloads(client, sid):
    return client.tool("downloads", sessionId=sid)["downloads"]


def _settled(client, sid, count):
    """The session's downloads once `count` of them have ended (asked every 200 ms)."""
    return wait_for(lambda: (lambda d: d if len(d) == count and all(e["status"] != "downloading" for e in d)
                             else None)(_downloads(client, sid)), seconds=30, step=0.2)


def test_downloads_at_once_share_the_limit_while_they_stream(limited, files_server):
    sid = limited.tool("create_session",
                       url=f"{files_server.url}/page?links=chunked,chunked,chunked,chunked&together=4")["sessionId"]
    disk = DiskPeak(limited)
    try:
        limited.tool("click", sessionId=sid, selector="#go")
        entries = _settled(limited, sid, 4)
    finally:
        peak = disk.stop()
    assert entries, _downloads(limited, sid)
    assert all(e["status"] == "refused" for e in entries), entries
    # Three at once: the fourth is cancelled as it starts, and the answer says why.
    assert sum("the most at once" in e["error"] for e in entries) == 1, entries
    assert all("max-download-mb 1" in e["error"] for e in entries if "the most at once" not in e["error"]), entries
    assert peak <= PEAK_BOUND, f"{peak / MB:.1f} MB on disk at once"
    with files_server.lock:
        sent = sum(v for k, v in files_server.sent.items() if k.startswith("/chunked"))
    assert sent < 4 * 40 * MB / 2, f"{sent / MB:.1f} MB sent"  # stopped as they streamed, not when whole
    assert os.listdir(limited.folder) == []
    limited.tool("close_session", sessionId=sid)


def test_an_endless_stream_is_stopped_while_the_session_is_idle(limited, files_server):
    # The page starts the download from a timer after the click's answer: no call is running while it streams.
    sid = limited.tool("create_session", url=f"{files_server.url}/page?links=endless&later=500")["sessionId"]
    disk = DiskPeak(limited)
    try:
        limited.tool("click", sessionId=sid, selector="#go")
        assert wait_for(lambda: "/endless?n=0" in files_server.started, seconds=10)  # it did start
        stopped = wait_for(lambda: "/endless?n=0" in files_server.ended, seconds=15)
    finally:
        peak = disk.stop()
    assert stopped, f"still streaming, {files_server.sent.get('/endless?n=0', 0) / MB:.1f} MB sent"
    assert peak <= PEAK_BOUND, f"{peak / MB:.1f} MB on disk at once"
    (entry,) = _downloads(limited, sid)
    assert entry["status"] == "refused" and "as it streamed" in entry["error"], entry
    assert entry["size"] > MB  # the bytes it had when it was stopped
    limited.tool("close_session", sessionId=sid)


def test_a_download_that_announces_its_size_is_not_fetched_whole(limited, files_server):
    sid = limited.tool("create_session", url=f"{files_server.url}/page?links=sized")["sessionId"]
    disk = DiskPeak(limited)
    try:
        limited.tool("click", sessionId=sid, selector="#go")
        (entry,) = _settled(limited, sid, 1)
        assert wait_for(lambda: "/sized?n=0" in files_server.ended, seconds=10)
    finally:
        peak = disk.stop()
    assert entry["status"] == "refused" and "max-download-mb 1" in entry["error"], entry
    assert files_server.sent["/sized?n=0"] < 40 * MB / 2, files_server.sent
    assert peak <= PEAK_BOUND, f"{peak / MB:.1f} MB on disk at once"
    limited.tool("close_session", sessionId=sid)


def test_downloads_within_the_limit_are_saved_and_the_browsers_copies_go(limited, files_server):
    sid = limited.tool("create_session", url=f"{files_server.url}/page?links=small,small&same=1")["sessionId"]
    limited.tool("click", sessionId=sid, selector="#go")
    entries = _settled(limited, sid, 2)
    assert [e["status"] for e in entries] == ["saved", "saved"], entries
    # The same suggested name twice in one second: two files (tools.md: the name carries the download's number).
    assert len({e["path"] for e in entries}) == 2, entries
    assert entries[0]["suggestedName"] == entries[1]["suggestedName"] == "same.bin", entries
    for entry in entries:
        with open(entry["path"], "rb") as f:
            assert f.read() == (CHUNK * 5)[:300 * 1024]
    # The browser's own file of each goes once ours is whole, not when the session closes.
    artifacts = glob.glob(os.path.join(tempfile.gettempdir(), f"mcpbrowser-run-{limited.pid}-*", "tmp",
                                       "playwright-artifacts-*", "*"))
    assert [p for p in artifacts if os.path.isfile(p)] == []
    limited.tool("close_session", sessionId=sid)
