"""The attacker's test: secrets typed every way the tools allow, then every file the server wrote is searched.

Over stdio and over HTTP, with tracing, screenshots, PDF and downloads on: a password,
a one-time code and a card number typed without any flag, a token flagged `secret`,
fill_form, named secrets from --secrets, a password retyped into a selector that matches
nothing and into a plain field, and typed into an iframe and an open shadow root, while
the page itself echoes the password to its console and posts it as JSON. Then every file
under the data and output directories (each member of each zip on its own, the database
and its WAL before and after shutdown) and the server's log must hold none of them, in
clear, JSON-escaped or URL-encoded.
"""

import glob
import json
import os
import sqlite3
import tempfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, quote_plus

import pytest
from support import HttpServer, McpClient, SdkClient, server_pid

from mcpbrowser.core.store import unpack_snapshot

pytestmark = pytest.mark.e2e

PASSWORD = "Pw-attack-0001"
FORM_PASSWORD = "form-pw-0002"
CODE = "551234"
CARD = "5500005555555559"
FLAGGED = 'flag"ged\\token-0003'  # JSON escapes its quote and backslash
IN_FRAME = "in-frame-0004"
IN_SHADOW = "in-shadow-0005"
NAMED = "named-value-0006"       # in the --secrets file: the agent types it by name
ALICES = "alice-only-0007"        # alice's own (client:NAME) on the HTTP server
UNSEEN = "never-known-0008"       # typed only where nothing matches: stored withheld
SECRETS = (PASSWORD, FORM_PASSWORD, CODE, CARD, FLAGGED, IN_FRAME, IN_SHADOW, NAMED, ALICES, UNSEEN)

PAGE = """<!doctype html><title>Sign in</title>
<form method=post action=/welcome>
<label>User <input id=user name=user autocomplete=username></label>
<label>Search <input id=search name=q></label>
<label>Password <input id=pw name=pw type=password></label>
<label>New password <input id=pw2 name=pw2 autocomplete=new-password></label>
<label>Code <input id=otp name=otp autocomplete=one-time-code></label>
<label>Card <input id=card name=card autocomplete="cc-number"></label>
<label>Token <textarea id=token name=token></textarea></label>
<iframe srcdoc="<label>Inner <input id=inner type=password></label>"></iframe>
<div id=host></div>
<a id=report href=/report.txt download>report</a>
<button id=go>Sign in</button></form>
<script>
host.attachShadow({mode: 'open'}).innerHTML = '<label>Shadowed <input id=shadowed type=password></label>';
pw.addEventListener('change', () => {  // a page that leaks: to its console, and in a JSON body
  console.log('password is ' + pw.value);
  fetch('/api/check', {method: 'POST', body: JSON.stringify({pw: pw.value}),
                       headers: {'Content-Type': 'application/json'}});
});
</script>"""


class _Site(BaseHTTPRequestHandler):
    def _send(self, body, kind="text/html", extra=()):
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.startswith("/report.txt"):
            self._send("quarterly numbers\n", "text/plain", [("Content-Disposition", "attachment; filename=r.txt")])
        else:
            self._send(PAGE)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send("<title>Welcome</title><script>console.log('signed in')</script>Welcome")

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    httpd.server_close()


def _forms(secret):
    return {secret, json.dumps(secret)[1:-1], quote(secret, safe=""), quote_plus(secret, safe="")}


def _leaks(data, secrets=SECRETS):
    """The secrets found in bytes, in clear, JSON-escaped or URL-encoded."""
    return [s for s in secrets if any(form.encode() in data for form in _forms(s))]


def _files(*folders):
    """(name, bytes) of every file under the folders, and of every member of every zip among them."""
    for folder in folders:
        for root, _, names in os.walk(folder):
            for name in names:
                path = os.path.join(root, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue  # Chromium's singleton socket and lock
                with open(path, "rb") as f:
                    data = f.read()
                yield path, data
                if data.startswith(b"SQLite format 3\0"):
                    # Snapshots are stored compressed, where a scan of the bytes cannot see: read each.
                    yield from ((f"{path}!snapshot", page) for page in stored_snapshots(path))
                if zipfile.is_zipfile(path):
                    with zipfile.ZipFile(path) as archive:
                        for member in archive.namelist():
                            yield f"{path}!{member}", archive.read(member)


def stored_snapshots(db):
    """Every snapshot a history database holds (its WAL's included), decompressed."""
    # Chromium keeps its own databases locked: waiting out sqlite3's 5 s busy timeout on each of
    # them cost this test 75 s. Only a history (history.db, with its key beside it) is waited for.
    history = os.path.exists(f"{db}.key")
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5.0 if history else 0)
    try:
        return [unpack_snapshot(data, base) for data, base in conn.execute(
            "SELECT p.data, b.data FROM snapshots p LEFT JOIN snapshots b ON b.hash = p.base")]
    except sqlite3.Error:
        return []  # not a history (Chromium's own databases under the output folder)
    finally:
        conn.close()


def _scratch(pid):
    """The server's runtime folders in the temp dir: its browser's TMPDIR, Playwright's artifacts (raw traces)."""
    return glob.glob(os.path.join(tempfile.gettempdir(), f"mcpbrowser-run-{pid}-*"))


def _attack(c, site, named):
    """Type every secret every way; return the answers the agent read."""
    sid = c.tool("create_session")["sessionId"]
    answers = [c.tool("trace_start", sessionId=sid), c.tool("navigate", sessionId=sid, url=site + "/login")]
    answers += [
        c.tool("type", sessionId=sid, selector="#pw", text=PASSWORD),             # unflagged: a password field
        c.tool("type", sessionId=sid, selector="#otp", text=CODE),                # a one-time-code field
        c.tool("fill_form", sessionId=sid, fields=[{"selector": "#card", "value": CARD},
                                                   {"selector": "#pw2", "value": FORM_PASSWORD},
                                                   {"selector": "#search", "secretName": "SITE_TOKEN"}]),
        c.tool("type", sessionId=sid, selector="#token", text=FLAGGED, secret=True),
        c.tool("type", sessionId=sid, selector="#user", secretName=named),
        c.tool("type", sessionId=sid, selector="#shadowed", text=IN_SHADOW),      # in an open shadow root
        c.error("type", sessionId=sid, selector="#password", text=PASSWORD),       # retried: nothing matches
        c.error("type", sessionId=sid, selector="#nothing", text=UNSEEN),
        c.tool("type", sessionId=sid, selector="#search", text=PASSWORD, submit=False),  # into a plain field
        c.tool("press_key", sessionId=sid, key="Tab"),  # the page's change handler: console and fetch
    ]
    snap = c.tool("snapshot", sessionId=sid)
    ref = next(line.split("[ref=")[1].split("]")[0] for line in snap["snapshot"].splitlines()
               if 'textbox "Inner"' in line)
    answers += [snap, c.tool("type", sessionId=sid, ref=ref, text=IN_FRAME),  # in an iframe, by ref
                c.tool("snapshot", sessionId=sid), c.tool("dom_snapshot", sessionId=sid),
                c.tool("screenshot", sessionId=sid), c.tool("screenshot", sessionId=sid, selector="#otp"),
                c.tool("pdf", sessionId=sid), c.tool("click", sessionId=sid, selector="#report")]
    answers += [c.tool("console_logs", sessionId=sid), c.tool("network_logs", sessionId=sid, headers=True)]
    answers += [c.tool("click", sessionId=sid, selector="#go"),
                c.tool("navigate", sessionId=sid, url=f"{site}/search?q={PASSWORD}"),
                c.tool("trace_stop", sessionId=sid)]
    for answer in list(answers):
        if answer.get("meta", {}).get("hasSnapshot"):
            answers.append(c.tool("get_content", ref_id=answer["refId"], reset_cursor=True))
    assert "downloads" in json.dumps(answers)  # the download happened, and was saved
    return answers


def _answers_leak(answers):
    shown = json.dumps([{k: v for k, v in a.items() if k != "image"} for a in answers]).encode()
    return _leaks(shown)


def _secrets_file(tmp_path):
    env = tmp_path / "secrets.env"
    env.write_text(f"SITE_TOKEN={NAMED}\nalice:ALICE_PASSWORD={ALICES}\n")
    return env


def test_no_secret_at_rest_over_stdio(tmp_path, site):
    data, out = tmp_path / "data", tmp_path / "out"
    c = McpClient("--db", str(data / "history.db"), "--output-dir", str(out), "--caps", "all",
                  "--secrets", str(_secrets_file(tmp_path)), "--log-level", "debug", "--login-cooldown", "0")
    try:
        answers = _attack(c, site, "SITE_TOKEN")
        assert not _answers_leak(answers)
        scratch = _scratch(server_pid())
        assert scratch
        files = dict(_files(data, out, *scratch))
        assert any(p.endswith("history.db-wal") for p in files) and any(".zip!trace.trace" in p for p in files)
        assert any(p.endswith(".pdf") for p in files) and any(p.endswith(".png") for p in files), list(files)
        assert any(p.endswith(".txt") for p in files), list(files)  # the download
        found = {path: _leaks(blob) for path, blob in files.items() if _leaks(blob)}
        assert not found, found
        log = "\n".join(json.dumps(line) for line in c.server_log()).encode()
        assert b'"tool_call"' in log and not _leaks(log), _leaks(log)
    finally:
        c.close()
    found = {path: _leaks(blob) for path, blob in _files(data, out) if _leaks(blob)}  # after the last checkpoint
    assert not found, found


def test_no_secret_at_rest_over_http(tmp_path, site):
    data, out = tmp_path / "data", tmp_path / "out"
    alice_token, bob_token = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
    server = HttpServer("--db", str(data / "history.db"), "--output-dir", str(out), "--caps", "all",
                        "--secrets", str(_secrets_file(tmp_path)), "--log-level", "debug", "--login-cooldown", "0",
                        env={"MCPBROWSER_HTTP_TOKENS": f"alice:{alice_token},bob:{bob_token}"})
    alice, bob = SdkClient(server.url, token=alice_token), SdkClient(server.url, token=bob_token)
    try:
        answers = _attack(alice, site, "ALICE_PASSWORD")  # her own named secret
        assert not _answers_leak(answers)
        scratch = _scratch(server.proc.pid)
        assert scratch
        # Bob may use the shared names only, and is told which.
        sid = bob.tool("create_session")["sessionId"]
        bob.tool("navigate", sessionId=sid, url=site + "/login")
        refused = bob.error("type", sessionId=sid, selector="#user", secretName="ALICE_PASSWORD")
        assert refused["errorCode"] == "INVALID_PARAMETERS" and refused["details"]["known"] == ["SITE_TOKEN"]
        files = dict(_files(data, out, *scratch))
        assert any(p.endswith("history.db-wal") for p in files) and any(".zip!trace.trace" in p for p in files)
        found = {path: _leaks(blob) for path, blob in files.items() if _leaks(blob)}
        assert not found, found
    finally:
        alice.close()
        bob.close()
        server.proc.terminate()
        server.proc.wait(30)
    with open(server.stderr.name, "rb") as f:
        log = f.read()
    server.close()
    assert b'"tool_call"' in log and not _leaks(log), _leaks(log)
    found = {path: _leaks(blob) for path, blob in _files(data, out) if _leaks(blob)}
    assert not found, found
