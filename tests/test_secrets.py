"""End to end: secret values never leave the page, with or without `secret: true`.

Typed into password, one-time-code and card fields, or set by the page itself,
they must appear in no tool answer, no file of the history database (its WAL
included) and no line of the server's log.
"""

import glob
import json
import os
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mcpbrowser.core.store import unpack_snapshot

pytestmark = pytest.mark.e2e

PASSWORD = "Hunter2-correct-horse"
CODE = "918273"
CARD = "4111111111111111"
TOKEN = 'tok"en-with-quote'   # typed with secret: true into an ordinary field; JSON escapes its quote
PRESET = "preset-by-the-page"  # a value the page itself puts in a password field
LATE = "typed-as-it-appeared"  # into a password field the page adds after its load
ALERTED = "typed-then-alert"  # into a password field whose input opens an alert
SHADOWED = "set-in-a-shadow-root"  # the page's own value of a password field in an open shadow root
SECRETS = (PASSWORD, CODE, CARD, TOKEN, PRESET, LATE, ALERTED, SHADOWED)

LOGIN = f"""<!doctype html><title>Login</title>
<form method=post action=/welcome>
<label>User <input id=user autocomplete=username></label>
<label>Password <input id=pw type=password></label>
<label>Code <input id=otp autocomplete=one-time-code></label>
<label>Card <input id=card autocomplete="billing cc-number"></label>
<label>Token <textarea id=token></textarea></label>
<label>Old <input id=old type=PASSWORD value="{PRESET}"></label>
<iframe srcdoc="<label>Inner <input id=inner type=password></label>"></iframe>
<label>Alerting <input id=alerting type=password oninput="alert('checked')"></label>
<div id=host></div><script>host.attachShadow({{mode: 'open'}}).innerHTML =
  '<label>Shadowed <input id=shadowed type=password value="{SHADOWED}"></label>'</script>
<span id=later></span><script>setTimeout(() => later.innerHTML = '<input id=late type=password>', 300)</script>
<button id=go>Sign in</button></form>"""


class _Site(BaseHTTPRequestHandler):
    def _page(self, body):
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._page(LOGIN)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._page("<title>Welcome</title><script>console.log('signed in')</script>Welcome")

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


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _leaks(text):
    """The secrets found in some text, in clear or JSON-escaped."""
    return [s for s in SECRETS if s in text or json.dumps(s)[1:-1] in text]


def test_secret_values_never_leave_the_page(make_client, site, tmp_path):
    db = tmp_path / "history.db"
    c = make_client("--db", str(db), "--log-level", "debug", "--allow-evaluate")
    sid = c.tool("create_session")["sessionId"]
    answers = [c.tool("navigate", sessionId=sid, url=site + "/login")]
    typed = [c.tool("type", sessionId=sid, selector="#late", text=LATE),  # waited for, then known as secret
             c.tool("type", sessionId=sid, selector="#alerting", text=ALERTED),  # no script runs behind an alert
             c.tool("handle_dialog", sessionId=sid, accept=True),
             c.tool("type", sessionId=sid, selector="#user", text="alice"),
             c.tool("type", sessionId=sid, selector="#pw", text=PASSWORD),
             c.tool("type", sessionId=sid, selector="#otp", text=CODE),
             c.tool("type", sessionId=sid, selector="#card", text=CARD, delay=1),  # key by key
             c.tool("type", sessionId=sid, selector="#token", text=TOKEN, secret=True)]
    answers += typed
    inner = c.tool("snapshot", sessionId=sid)
    ref = next(line.split("[ref=")[1].split("]")[0] for line in inner["snapshot"].splitlines()
               if 'textbox "Inner"' in line)
    answers.append(c.tool("type", sessionId=sid, ref=ref, text=PASSWORD))  # inside the iframe, by ref
    snap = c.tool("snapshot", sessionId=sid)
    assert 'textbox "User"' in snap["snapshot"] and "alice" in snap["snapshot"]  # ordinary values stay
    assert snap["snapshot"].count("[REDACTED]") >= 9, snap["snapshot"]  # the fields are there, hidden
    # Narrowed answers come from the redacted tree: a query for the field, and the outline.
    answers += [c.tool("snapshot", sessionId=sid, query="textbox"), c.tool("snapshot", sessionId=sid, compact=True)]
    answers += [snap, c.tool("dom_snapshot", sessionId=sid),
                c.tool("evaluate", sessionId=sid, expression="document.querySelector('#pw').value")]
    for answer in list(answers):
        answers.append(c.tool("get_content", ref_id=answer["refId"], reset_cursor=True)
                       if answer.get("meta", {}).get("hasSnapshot") else {})
    answers.append(c.tool("click", sessionId=sid, selector="#go"))
    answers += [c.tool("network_logs", sessionId=sid, headers=True, allPages=True, includeStatic=True),
                c.tool("console_logs", sessionId=sid, locations=True),
                c.tool("list_sessions"), c.tool("tabs", sessionId=sid)]
    for answer in answers:
        for text in _strings(answer):
            assert not _leaks(text), (answer, _leaks(text))
    files = [f for f in glob.glob(str(db) + "*") if os.path.isfile(f)]  # not history.db.instances/
    assert any(f.endswith("-wal") for f in files), files  # the WAL is searched too, while it exists
    for path in files:
        data = open(path, "rb").read().decode("latin-1")
        assert not _leaks(data), (path, _leaks(data))
    assert "alice" in open(db.with_name("history.db-wal"), "rb").read().decode("latin-1")  # ordinary text kept
    log = c.server_log()
    assert any(line.get("event") == "tool_call" for line in log)  # the debug log was written
    assert not _leaks("\n".join(json.dumps(line) for line in log))
    c.close()
    for path in glob.glob(str(db) + "*"):  # after the last checkpoint
        if os.path.isfile(path):
            assert not _leaks(open(path, "rb").read().decode("latin-1")), path
    # Snapshots are stored compressed, where a scan of the file's bytes cannot see: read each.
    with sqlite3.connect(db) as conn:
        pages = [unpack_snapshot(data, base).decode() for data, base in conn.execute(
            "SELECT p.data, b.data FROM snapshots p LEFT JOIN snapshots b ON b.hash = p.base")]
    assert pages and any("alice" in page for page in pages)
    for page in pages:
        assert not _leaks(page), _leaks(page)
