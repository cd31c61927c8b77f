"""Test helpers: a local page server, the official MCP client made synchronous, and a raw pipe driver."""

import contextlib
import functools
import hashlib
import json
import logging
import os
import queue
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import anyio.from_thread
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

SERVER_CMD = [sys.executable, "-m", "mcpbrowser", "--headless"]


@contextlib.contextmanager
def logged_events(event):
    """The in-process server's log records of one `event` (a DEBUG one too) while the block runs, as a list
    that grows: proof that a path ran (or did not). The library resets the log level as a Browser starts,
    so enter this after that."""
    from mcpbrowser.logs import log
    seen = []

    class Catch(logging.Handler):
        def emit(self, record):
            if getattr(record, "event", None) == event:
                seen.append(record)

    handler, level = Catch(logging.DEBUG), log.level
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    try:
        yield seen
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


def stored_page(browser, answer):
    """The page a call stored in the history, read whole (get_content from the start) through a library Browser."""
    return browser.call("get_content", {"ref_id": answer["refId"], "reset_cursor": True})["content"]


def server_args(args):
    """Test servers keep their history in memory, do not rate-limit, and offer every tool group
    (the groups decide what a model reads, not what a tool does: test_tool_groups.py tests them),
    unless a test says otherwise."""
    args = list(args)
    if "--caps" not in args:
        args += ["--caps", "all"]
    if "--db" not in args:
        args += ["--db", ":memory:"]
    if "--rate-limit" not in args:
        args += ["--rate-limit", "0"]
    return args

PAGES = {
    "/untitled": "<!doctype html><h1>No title element</h1>",
    # The title a script leaves is the one a load reports; whitespace collapses as in document.title.
    "/scripted-title": "<!doctype html><title>  Two   words </title><script>document.title += ' and script'</script>",
    # A dialog in the load handler holds the load event back: navigate answers with the dialog
    # open, and the title, which the parser gave the browser long before.
    "/alert-on-load": "<!doctype html><title>Alerting</title><script>onload = () => alert('on load')</script>",
    # Its object is reachable only through a WeakRef: it goes at the renderer's next garbage collection.
    "/weakref": """<!doctype html><title>Weak</title>
<script>window.ref = new WeakRef({payload: new Array(100000).fill(7)});</script>""",
    "/form": """<!doctype html><title>Form</title>
<input id="name" value="">
<textarea id="notes"></textarea>
<input id="disabled" disabled value="locked">
<button id="go" onclick="document.title = 'Hello ' + document.getElementById('name').value">Go</button>
<button id="off" disabled>Off</button>
<button id="hidden" style="display:none">Hidden</button>
<div id="plain">not editable</div>
<p class="item">one</p><p class="item">two</p>
<button id="count" onclick="this.dataset.n = (+this.dataset.n || 0) + 1; document.title = 'count ' + this.dataset.n">Count</button>""",
    "/storage": """<!doctype html><title>Storage</title>
<script>
function show() {
  document.title = 'cookie=' + document.cookie + ';local=' + (localStorage.getItem('k') || '') +
                   ';session=' + (sessionStorage.getItem('k') || '');
}
function save(v) { document.cookie = 'k=' + v; localStorage.setItem('k', v); sessionStorage.setItem('k', v); show(); }
</script>
<button id="save" onclick="save(document.getElementById('v').value)">Save</button>
<input id="v"><button id="show" onclick="show()">Show</button>""",
    "/frames": """<!doctype html><title>Frames</title>
<h1>Outer</h1>
<iframe id="inner" srcdoc="<button onclick='parent.document.title=&quot;inner clicked&quot;'>Inner button</button>"></iframe>""",
    "/popup": """<!doctype html><title>Opener</title>
<a id="open" href="/title/Popped" target="_blank">Open popup</a>
<button id="win" onclick="window.open('/title/Window')">Open window</button>""",
    # The other ways a click opens a tab: a form aimed at one, a button's formtarget, and (below) a page's <base target>
    # that aims its links and forms at one; and, the control, an SVG link to a place on its own page.
    "/popup-forms": """<!doctype html><title>Forms</title>
<form target="_blank" action="/title/FormTab"><button id="form">Form</button></form>
<form action="/title/FormTarget"><button id="formtarget" formtarget="_blank">Formtarget</button></form>
<svg width="90" height="30"><a id="svg" href="#end"><text x="5" y="20">In page</text></a></svg><p id="end">End</p>""",
    "/popup-base": """<!doctype html><title>Based</title><base target="_blank">
<a id="link" href="/title/BaseTab">Link</a><form action="/title/BaseForm"><button id="form">Form</button></form>""",
    "/dialogs": """<!doctype html><title>Dialogs</title>
<button id="alert" onclick="alert('Hello there'); document.title = 'after alert'">Alert</button>
<button id="confirm" onclick="document.title = confirm('Sure?') ? 'confirmed' : 'declined'">Confirm</button>
<button id="prompt" onclick="document.title = 'name=' + prompt('Your name?', 'anon')">Prompt</button>""",
    "/widgets": """<!doctype html><title>Widgets</title>
<label for="fruit">Fruit</label>
<select id="fruit" onchange="document.title = 'fruit=' + this.value">
  <option value="a">Apple</option><option value="b">Banana</option><option value="c">Cherry</option>
</select>
<div id="hoverme" onmouseover="document.title = 'hovered'" style="width:100px;height:40px">Hover me</div>
<input id="keys" onkeydown="document.title = 'key=' + event.key">
<input type="file" id="file" multiple onchange="document.title = 'files=' + Array.from(this.files).map(f => f.name).join(',')">
<button id="later" onclick="setTimeout(() => { const p = document.createElement('p'); p.id = 'late'; p.textContent = 'Arrived late'; document.body.append(p); }, 300)">Later</button>
<p id="going">Going away</p>
<button id="remove" onclick="setTimeout(() => document.getElementById('going').remove(), 300)">Remove</button>""",
    # A small documentation-like page: landmarks, headings, a search box, prose and many links.
    "/docs": """<!doctype html><title>Docs</title>
<nav aria-label="Site"><h2>Guides</h2><ul>""" + "".join(f'<li><a href="/title/guide{i}">Guide {i}</a></li>' for i in range(12)) + """</ul>
<form role="search" action="/found"><label>Search <input name="q"></label></form></nav>
<main><h1>Welcome</h1><p>Long prose about nothing in particular, and a word: pineapple.</p>
<p>Another paragraph that mentions pineapple twice: pineapple.</p>
<button id="grow" onclick="document.getElementById('tail').textContent = 'grown ' + Date.now()">Grow</button>
<p id="tail">short</p>
<button id="late-show" style="display:none">Shown late</button>
<script>setTimeout(() => document.getElementById('late-show').style.display = '', 1500)</script>
<button id="add-late" onclick="setTimeout(() => { const b = document.createElement('button'); b.id = 'added';
  b.textContent = 'Added'; b.onclick = () => document.title = 'added clicked'; document.body.append(b); }, 1500)">Add</button>
</main>""",
    # An admin application's page: what a filtered read must not hide or merge (issue 38).
    "/admin": """<!doctype html><title>Site administration</title>
<form role="search"><label>Search <input name="q"></label><button>Search</button></form>
<main><h1>Administration</h1>
<table><caption>Authentication</caption><tr><th scope="row"><a href="/title/users">Users</a></th><td>Add</td></tr></table>
<h2>Filter: active</h2><a href="/title/yes-all">Yes</a> <a href="/title/yes-staff">Yes</a>
<h2>Notebook</h2><button onclick="document.title = 'notebook kernel'">Python 3</button>
<h2>Console</h2><button onclick="document.title = 'console kernel'">Python 3</button>
<h2>Change user</h2><form>""" + "".join(f'<label>Field {i} <input name="f{i}"></label>' for i in range(12)) + """
<select multiple name="groups">""" + "".join(f"<option>group {i}</option>" for i in range(40)) + """</select>
<button type="button">Choose all</button><button type="button" onclick="document.title = 'saved'">Save</button></form>
</main>""",
    # A form step and a "Recent actions" box as Django's admin renders them: what one query and
    # one section read find (issue 52).
    "/add-user": """<!doctype html><title>Add user</title>
<nav aria-label="Breadcrumbs"><a href="/title/home">Home</a> › Add user</nav>
<main><h1>Add user</h1><form>
<div><label for="u">Username:</label><input id="u"></div>
<div><label for="p1">Password:</label><input id="p1" type="password"></div>
<div><label for="p2">Password confirmation:</label><input id="p2" type="password"></div>
<input type="submit" value="Save and add another"><input type="submit" value="Save and continue editing">
<button type="button" onclick="document.title = 'saved ' + document.getElementById('u').value">Save</button></form>
<aside><div class="header"><h2>Recent actions</h2></div><h3>My actions</h3><ul>""" + "".join(
        f'<li><a href="/title/user{i}">user{i}</a> <span>User</span></li>' for i in range(250)) + """</ul>
<div><h2>Other tools</h2></div><p>Nothing here.</p></aside></main>""",
    # A hidden tooltip holds the same text as the status bar, before it in the DOM (issue 42).
    "/status": """<!doctype html><title>Status</title>
<div role="tooltip" style="display:none">Idle</div><div id="busy">Busy</div>
<div id="bar"><span id="state">Starting</span></div>
<button onclick="document.getElementById('state').textContent = 'Stopped'">Stop</button>
<script>setTimeout(() => document.getElementById('state').textContent = 'Idle', 300)</script>""",
    "/found": """<!doctype html><title>Searching</title><ul id="results"></ul>
<script>setTimeout(() => { const q = new URLSearchParams(location.search).get('q');
  document.getElementById('results').innerHTML = [1, 2, 3].map(i => `<li><a href="/title/hit${i}">${q} hit ${i}</a></li>`).join('')
    + '<p>Search finished</p>'; document.title = 'Results for ' + q; }, 300)</script>""",
    "/logs": """<!doctype html><title>Logs</title>
<script>
console.log('hello log'); console.warn('careful'); console.error('broken thing');
fetch('/api/data', {headers: {'Authorization': 'Bearer SECRET-TOKEN-123', 'X-Api-Key': 'SECRET-KEY-456'}});
</script>
<button id="more" onclick="for (let i = 0; i < 8; i++) console.log('burst ' + i)">More</button>
<button id="throw" onclick="setTimeout(() => { throw new Error('boom from page') })">Throw</button>""",
}


class HtmlHandler(BaseHTTPRequestHandler):
    """A test site's request handler: no access log; `_send` answers HTML."""

    def log_message(self, *args):
        pass

    def _send(self, status, body="", headers=()):
        data = body.encode()
        self.send_response(status)
        css = self.path.split("?")[0].endswith(".css")  # a style sheet a page imports or links
        self.send_header("Content-Type", "text/css" if css else "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser left the page before its answer came (a test navigating on): not the test's failure


class _Handler(HtmlHandler):
    """The shared page server's routes (PAGES and the paths below)."""

    def do_GET(self):
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.server.hits.append(url.path + ("?" + url.query if url.query else ""))
        if url.path in PAGES:
            self._send(200, PAGES[url.path])
        elif url.path.startswith("/title/"):
            name = url.path.split("/", 2)[2]
            self._send(200, f"<!doctype html><title>{name}</title><h1>{name}</h1>")
        elif url.path == "/slow":
            time.sleep(int(query.get("ms", "1000")) / 1000)
            self._send(200, "<title>Slow</title>slow")
        elif url.path == "/slow-body":  # the headers and the body's first bytes at once, the rest after ms
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "15")
            self.end_headers()
            self.wfile.write(b"slow")
            self.wfile.flush()
            time.sleep(int(query.get("ms", "1000")) / 1000)
            self.wfile.write(b" body ended")
        elif url.path == "/redirect-loop":  # a redirect chain without end
            self._send(302, "", [("Location", f"/redirect-loop?n={int(query.get('n', '0')) + 1}")])
        elif url.path == "/redirect":
            self._send(302, "", [("Location", query.get("to", "/title/landed"))])
        elif url.path == "/barrier":
            # Answers only once `n` requests wait here together: proof they ran concurrently.
            n = int(query.get("n", "2"))
            with self.server.lock:
                barrier = self.server.barriers.setdefault((query.get("k"), n), threading.Barrier(n, timeout=10))
            try:
                barrier.wait()
                self._send(200, "<title>together</title>")
            except threading.BrokenBarrierError:
                self._send(200, "<title>alone</title>")
        elif url.path == "/api/data":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Set-Cookie", "session=SECRET-COOKIE-789")
            self.end_headers()
            self.wfile.write(b'{"ok": true}')
        elif url.path == "/login":
            # Logs in by cookie, as a real site would, then lands on /whoami.
            self._send(302, "", [("Set-Cookie", f"user={query.get('user', 'guest')}; Path=/"),
                                 ("Location", "/whoami")])
        elif url.path == "/whoami":
            cookies = dict(c.strip().split("=", 1) for c in self.headers.get("Cookie", "").split(";") if "=" in c)
            who = cookies.get("user")
            self._send(200, f"<title>{'Logged in as ' + who if who else 'Logged out'}</title>"
                            f"<p id='who'>{who or 'nobody'}</p>")
        elif url.path == "/counter":
            n = query.get("n", "0")
            self._send(200, f"<title>Counter</title><h1>Count {n}</h1><ul>"
                            + "".join(f"<li>item {i}</li>" for i in range(20)) + "</ul>"
                            + "<input id='secret-box' aria-label='Notes'>")
        elif url.path == "/signin":
            self._send(200, "<title>Sign in</title><form><input name=user><input type=password id=pw>"
                            "<button id=enter onclick=\"document.title='Welcome'\" type=button>Sign in</button>"
                            "</form>")
        elif url.path == "/login-wall":
            # A login page with everything an agent can get wrong on it (the cooldown's table of mistakes).
            self._send(200, "<title>Sign in</title><form><input name=user id=user>"
                            "<input type=password id=pw autocomplete=current-password>"
                            "<input id=locked disabled value=x><button id=hidden style='display:none'>Hidden</button>"
                            "<button id=off disabled>Off</button><select id=lang><option>en</option></select>"
                            "<button id=help type=button onclick=\"alert('Caps lock is on')\">Help</button>"
                            "<button id=enter type=button>Sign in</button></form>")
        elif url.path == "/slow-login":
            # Its form appears 2 s after the load: an agent that acts at once finds nothing yet.
            self._send(200, "<title>Sign in</title><div id=root>Loading</div><script>setTimeout(() => "
                            "document.getElementById('root').innerHTML = '<input id=user><input type=password id=pw>"
                            "<button id=enter type=button>Sign in</button>', 2000)</script>")
        elif url.path == "/captcha":
            # A verification wall that never lets the agent through: its button does nothing.
            self._send(200, "<title>One more step</title><p>Checking your browser</p>"
                            "<iframe title='captcha challenge' src='/title/challenge-frame' width=300 height=80></iframe>"
                            "<button id=continue type=button>Continue</button>"
                            + ("<img src='/slow?ms=3000'>" if query.get("hold") else ""))
        elif url.path == "/attack":
            to = query["to"]
            ws = to.replace("http", "ws", 1)
            self._send(200, f"""<title>Attack</title>
<iframe src="{to}/iframe"></iframe><img src="{to}/img.png"><script src="{to}/script.js"></script>
<script>
fetch("{to}/fetch").catch(() => {{}});
const x = new XMLHttpRequest(); x.open("GET", "{to}/xhr"); x.send();
try {{ new WebSocket("{ws}/ws"); }} catch (e) {{}}
</script>
<button id="popup" onclick="window.open('{to}/popup')">Popup</button><a id="away" href="{to}/clicked">Away</a>
<a id="broken" href="http://127.0.0.1:1/closed">Broken</a>""")
        elif url.path == "/delayed-fetch":
            self._send(200, "<title>Later</title><script>setTimeout(() => fetch('/hit?k=idle'), 300)</script>")
        elif url.path == "/meta-refresh":
            self._send(200, f'<title>Meta</title><meta http-equiv="refresh" content="0;url={query["to"]}/meta">')
        elif url.path == "/js-location":
            self._send(200, f'<title>JS</title><script>location.href = "{query["to"]}/location";</script>')
        elif url.path == "/missing.css":
            self._send(404, "")
        elif url.path == "/probe":
            # What the page sees of its emulation, as JSON in its title; the request's own headers too.
            headers = json.dumps({"ua": self.headers.get("User-Agent"), "lang": self.headers.get("Accept-Language")})
            self._send(200, f"""<meta name="viewport" content="width=device-width"><title>probe</title><script>
document.title = JSON.stringify({{headers: {headers}, ua: navigator.userAgent, lang: navigator.language,
  tz: Intl.DateTimeFormat().resolvedOptions().timeZone, w: innerWidth, h: innerHeight, dpr: devicePixelRatio,
  dark: matchMedia('(prefers-color-scheme: dark)').matches, touch: navigator.maxTouchPoints > 0}});
navigator.geolocation.getCurrentPosition(
  p => document.body.insertAdjacentHTML('beforeend', `<p>at ${{p.coords.latitude}},${{p.coords.longitude}}</p>`),
  e => document.body.insertAdjacentHTML('beforeend', `<p>at error ${{e.code}}</p>`));
</script>""")
        elif url.path == "/download":
            # `size` bytes of a known pattern, as an attachment; unsized=1 sends no Content-Length
            # (HTTP/1.0: the body ends when the connection closes), so the browser learns the size at the end.
            size, body = int(query.get("size", "1000")), bytes(range(256))
            data = (body * (size // 256 + 1))[:size]
            self.send_response(200)
            self.send_header("Content-Type", "application/pdf")
            if not query.get("inline"):  # inline=1: a PDF to show, as a link to a paper is (the shell downloads it)
                self.send_header("Content-Disposition", f'attachment; filename="{query.get("name", "report.pdf")}"')
            if not query.get("unsized"):
                self.send_header("Content-Length", str(size))
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the browser cancelled it
        elif url.path == "/download-link":
            self._send(200, f'<title>Files</title><a id="get" href="{query["to"]}">Get it</a>'
                            '<button id="blob" onclick="const a = document.createElement(\'a\'); '
                            'a.href = window.URL.createObjectURL(new Blob([\'made here\'])); a.download = \'made.txt\'; '
                            'a.click()">Make</button>')
        elif url.path == "/big":
            # `lines` lines of text that differ per `n` and compress as prose does (about 2:1).
            n, lines = query.get("n", "0"), int(query.get("lines", "500"))
            body = "".join(f"<p>{n} {i} {hashlib.sha256(f'{n}-{i}'.encode()).hexdigest()}</p>" for i in range(lines))
            self._send(200, f"<title>Big {n}</title><h1>Big {n}</h1>{body}")
        elif url.path == "/hit":
            self._send(200, f"<title>hit {query.get('k', '')}</title>")
        else:
            self._send(404, "<title>Not found</title>")


class PageServer:
    """Pages served on 127.0.0.1 from a thread; `hits` records every path requested."""

    def __init__(self):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.hits = []
        self.httpd.barriers = {}
        self.httpd.lock = threading.Lock()
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def hits(self):
        return self.httpd.hits

    def url(self, path):
        return f"http://127.0.0.1:{self.httpd.server_port}{path}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class HtmlSite:
    """A test's own pages on 127.0.0.1, from a thread: `page(url)` gives the HTML for a GET of `url` (a
    urllib.parse.urlsplit result), or an HtmlHandler class of its own (`handler`) answers; `url` is the
    site's root. For a module's few pages of its own."""

    def __init__(self, page=None, handler=None):
        if handler is None:  # a site of GETs only
            class Gets(HtmlHandler):
                def do_GET(self):
                    self._send(200, page(urlsplit(self.path)))

            handler = Gets

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class McpClient:
    """The official MCP ClientSession over stdio_client, callable from plain threads."""

    def __init__(self, *args, env=None, elicitation_callback=None, message_handler=None):
        self.stderr = tempfile.NamedTemporaryFile("w+", prefix="mcpbrowser-stderr-", delete=False)
        params = StdioServerParameters(command=SERVER_CMD[0], args=[*SERVER_CMD[1:], *server_args(args)],
                                       env={**os.environ, **(env or {})})
        self.log_messages = []
        self._portal_cm = anyio.from_thread.start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        self._transport = self.portal.wrap_async_context_manager(stdio_client(params, errlog=self.stderr))
        read, write = self._transport.__enter__()
        self._session_cm = self.portal.wrap_async_context_manager(
            ClientSession(read, write, logging_callback=self._on_log, elicitation_callback=elicitation_callback,
                          message_handler=message_handler))
        self.session = self._session_cm.__enter__()
        self.init = self.portal.call(self.session.initialize)

    async def _on_log(self, params):
        self.log_messages.append(params)

    def run(self, method, *args, **kwargs):
        """Call an async ClientSession method and wait for its result."""
        try:
            return self.portal.call(functools.partial(getattr(self.session, method), *args, **kwargs))
        except Exception as exc:
            # A server that went away says why only on its stderr, which close() deletes: keep its end here.
            if hasattr(exc, "add_note") and not self.stderr.closed:
                self.stderr.flush()
                with open(self.stderr.name) as f:
                    exc.add_note("server stderr, last 3000 characters:\n" + f.read()[-3000:])
            raise

    def call(self, name, arguments=None, **kwargs):
        return self.run("call_tool", name, arguments or {}, **kwargs)

    def tool(self, name, /, **arguments):
        """Call a tool that must succeed; return its whole result (structuredContent when there is one).

        The text the model reads must agree with it: the same values, less meta and hash
        (see core/answer.agent_view), with page text in a block of its own.
        """
        result = self.call(name, arguments)
        texts = [c.text for c in result.content if c.type == "text"]
        shown = json.loads(texts[0])
        assert not result.is_error, shown
        if len(texts) > 1:  # a snapshot's or a content's text comes as a block of its own
            (field,) = [k for k, v in (result.structured_content or {}).items() if v == texts[1]]
            assert field not in shown
            shown[field] = texts[1]
        whole = result.structured_content
        if whole is None:
            return shown
        # The model's view leaves out the envelope it does not need (core/answer.agent_view): meta, the hash,
        # the expiry but on the session's own answers, url and title already told.
        envelope = {"meta", "hash"}
        if name not in ("create_session", "resume_session"):
            envelope.add("expiresAt")
        if (whole.get("meta") or {}).get("samePage"):
            envelope.update(("url", "title"))
        assert not envelope & (shown.keys() - {"meta"}), shown
        if "navigationError" in whole:  # create_session's, as an error reads (core/answer.agent_error)
            error, told = whole["navigationError"], shown["navigationError"]
            assert told.keys() <= error.keys() and "sessionId" not in told, (error, told)
            assert all(told[k] == error[k] for k in told if k != "details"), (error, told)
            assert (told.get("details") or {}).items() <= (error.get("details") or {}).items(), (error, told)
            envelope.add("navigationError")
        assert {k: v for k, v in whole.items() if k not in envelope} == \
            {k: v for k, v in shown.items() if k not in envelope}, (whole, shown)
        assert "meta" in whole
        return whole

    def error(self, name, /, **arguments):
        """Call a tool that must fail; return its error object."""
        result = self.call(name, arguments)
        payload = json.loads(result.content[0].text)
        assert result.is_error, payload
        return payload

    def server_log(self):
        self.stderr.flush()
        with open(self.stderr.name) as f:
            return [json.loads(line) for line in f if line.startswith("{")]

    def close(self):
        if self.stderr.closed:
            return  # closed already
        try:
            self._session_cm.__exit__(None, None, None)
            self._transport.__exit__(None, None, None)
        finally:
            self._portal_cm.__exit__(None, None, None)
            self.stderr.close()
            os.unlink(self.stderr.name)


class RawServer:
    """The server on raw pipes: write bytes, read answer lines, watch the process."""

    def __init__(self, *args):
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([*SERVER_CMD, *server_args(args)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr)
        self.lines = queue.Queue()
        self.raw_stdout = []
        self.list_changes = 0
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            self.raw_stdout.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message):
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def recv(self, timeout=30):
        """The next message but a tools/list_changed notice (a client's second session changes its list): those
        are counted in `list_changes`."""
        while True:
            line = self.lines.get(timeout=timeout)
            assert line is not None, "server closed stdout"
            message = json.loads(line)
            if message.get("method") != "notifications/tools/list_changed":
                return message
            self.list_changes += 1

    def request(self, request_id, method, params=None, timeout=30):
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.recv(timeout)

    def initialize(self, version="2025-11-25"):
        answer = self.request(0, "initialize", {"protocolVersion": version, "capabilities": {},
                                                "clientInfo": {"name": "raw", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def call(self, request_id, name, **arguments):
        return self.request(request_id, "tools/call", {"name": name, "arguments": arguments})

    def server_log(self):
        self.stderr.seek(0)
        return [json.loads(line) for line in self.stderr.read().decode().splitlines() if line.startswith("{")]

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def stored_text(db):
    """What a history database holds, as text: {"rows": every row of every table, "pages": every page
    snapshot decompressed (they are stored zlib-compressed, where the rows' text cannot show them)}."""
    from mcpbrowser.core.store import unpack_snapshot

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        tables = [table for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        rows = "".join(repr(row) for table in tables for row in conn.execute(f"SELECT * FROM {table}"))
        pages = "\n".join(unpack_snapshot(data, base).decode() for data, base in conn.execute(
            "SELECT p.data, b.data FROM snapshots p LEFT JOIN snapshots b ON b.hash = p.base"))
    return {"rows": rows, "pages": pages}


def wait_for(predicate, seconds=5.0, step=0.05):
    """Poll until predicate() is truthy or `seconds` pass; returns its last value."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


def server_pid():
    """The one mcpbrowser server among this process's children."""
    from mcpbrowser.process_tree import child_pids

    found = child_pids("mcpbrowser")
    assert len(found) == 1, found
    return found[0]


def driver_cmdlines():
    """Command lines of the server's driver processes: what each session's sync_playwright() started."""
    from mcpbrowser.process_tree import child_pids, cmdline

    return [cmdline(pid) for pid in child_pids("run-driver", parent=server_pid())]


def tool_payload(answer):
    """The JSON inside a raw tools/call answer's first text block."""
    return json.loads(answer["result"]["content"][0]["text"])




class HttpServer:
    """`mcpbrowser --http 127.0.0.1:0` as a child process; `url` is its endpoint once it serves."""

    def __init__(self, *args, env=None):
        self.stderr = tempfile.NamedTemporaryFile("w+", prefix="mcpbrowser-http-", delete=False)
        self.proc = subprocess.Popen([*SERVER_CMD, *server_args(args), "--http", "127.0.0.1:0"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.stderr,
                                     env={**os.environ, **(env or {})})
        self.url = wait_for(self._served_url, seconds=30)
        assert self.url, f"the HTTP server did not start: {open(self.stderr.name).read()[-2000:]}"
        self.base = self.url.rsplit("/", 1)[0]

    def _served_url(self):
        assert self.proc.poll() is None, open(self.stderr.name).read()[-2000:]
        with open(self.stderr.name) as f:
            for line in f:
                if '"http_serving"' in line:
                    return json.loads(line)["url"]
        return None

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        assert self.proc.stdout.read() == b"", "stdout carries nothing in HTTP mode"
        self.proc.stdout.close()
        self.stderr.close()
        os.unlink(self.stderr.name)


class SdkClient(McpClient):
    """The official high-level `mcp.client.Client` (mode "auto": server/discover, else initialize;
    "legacy": initialize) over Streamable HTTP (target: a URL) or stdio (target: server flags)."""

    def __init__(self, target, *, mode="auto", token=None, elicitation_callback=None, env=None,
                 message_handler=None):
        from mcp.client.client import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        self.stderr = tempfile.NamedTemporaryFile("w+", prefix="mcpbrowser-stderr-", delete=False)
        self.log_messages = []
        self._portal_cm = anyio.from_thread.start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        self._http = None
        if isinstance(target, str):
            self._http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"} if token else None)
            transport = streamable_http_client(target, http_client=self._http)
        else:
            params = StdioServerParameters(command=SERVER_CMD[0], args=[*SERVER_CMD[1:], *server_args(target)],
                                           env={**os.environ, **(env or {})})
            transport = stdio_client(params, errlog=self.stderr)
        self._client_cm = self.portal.wrap_async_context_manager(
            Client(transport, mode=mode, elicitation_callback=elicitation_callback, cache=None,
                   logging_callback=self._on_log, message_handler=message_handler))
        self.session = self._client_cm.__enter__()
        self.version = self.session.protocol_version

    def close(self):
        if self.stderr.closed:
            return
        try:
            self._client_cm.__exit__(None, None, None)
            if self._http is not None:
                self.portal.call(self._http.aclose)
        finally:
            self._portal_cm.__exit__(None, None, None)
            self.stderr.close()
            os.unlink(self.stderr.name)
