"""End to end: secret values never leave the page, with or without `secret: true`.

Typed into password, one-time-code and card fields, or set by the page itself,
they must appear in no tool answer, no file of the history database (its WAL
included) and no line of the server's log.
"""

import glob
import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from support import PAGES, wait_for
from test_surface import _trace_viewer_actions  # Playwright's own viewer, served headless

import mcpbrowser
from mcpbrowser.config import Config
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
COOKIE = "Cookie-value-7777777"  # set by the site: a header value, redacted by --redact-headers' defaults
AUTH = "Auth-value-8888888"  # sent by the page in an Authorization header
REVEALED = "Reveal-PW-1111"  # into a password field that the page turns into a text field as it fills
SECRETS = (PASSWORD, CODE, CARD, TOKEN, PRESET, LATE, ALERTED, SHADOWED, REVEALED)

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
<label>Reveal <input id=reveal type=password oninput="this.type = 'text'"></label>
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
        if self.path.startswith("/cookie"):  # a session cookie, and a request with credentials in its headers
            joined = "['" + "', '".join(AUTH.split("-")) + "'].join('-')"  # not in the body as such
            data = (f"<title>Cookie</title><script>fetch('/api', {{headers: {{Authorization: 'Bearer ' + {joined}}}}})"
                    ".then(() => document.title = 'Fetched')</script>").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Set-Cookie", f"sid={COOKIE}; Path=/")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
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
             c.tool("type", sessionId=sid, selector="#token", text=TOKEN, secret=True),
             c.tool("type", sessionId=sid, selector="#reveal", text=REVEALED)]  # a text field when checked
    answers += typed
    inner = c.tool("snapshot", sessionId=sid)
    ref = next(line.split("[ref=")[1].split("]")[0] for line in inner["snapshot"].splitlines()
               if 'textbox "Inner"' in line)
    answers.append(c.tool("type", sessionId=sid, ref=ref, text=PASSWORD))  # inside the iframe, by ref
    snap = c.tool("snapshot", sessionId=sid)
    assert 'textbox "User"' in snap["snapshot"] and "alice" in snap["snapshot"]  # ordinary values stay
    assert snap["snapshot"].count("[REDACTED]") >= 10, snap["snapshot"]  # the fields are there, hidden
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


def _db_text(db):
    """Every file of the history database (its WAL included), as text, and its snapshots decompressed."""
    files = {path: open(path, "rb").read().decode("latin-1") for path in glob.glob(str(db) + "*")
             if os.path.isfile(path)}  # not the folder of the servers' instance locks
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        files[f"{db}!snapshots"] = "\n".join(unpack_snapshot(data, base).decode() for data, base in conn.execute(
            "SELECT p.data, b.data FROM snapshots p LEFT JOIN snapshots b ON b.hash = p.base"))
    return files


def test_a_secret_stays_secret_in_every_later_call(make_client, site, tmp_path):
    # The agent types a password into the password field, then (as agents do) retries it elsewhere:
    # a selector that matches nothing, a plain field, a URL, a script. The session knows the value
    # is secret from the first call on: no later row, answer or log line has it.
    db = tmp_path / "history.db"
    c = make_client("--db", str(db), "--log-level", "debug", "--allow-evaluate", "--login-cooldown", "0")
    sid = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=sid, url=site + "/login")
    c.tool("type", sessionId=sid, selector="#pw", text=PASSWORD)
    missing = c.error("type", sessionId=sid, selector="#password", text=PASSWORD)
    assert missing["errorCode"] == "ELEMENT_NOT_FOUND"
    answers = [missing, c.tool("type", sessionId=sid, selector="#user", text="me " + PASSWORD),
               c.tool("evaluate", sessionId=sid, expression=f"'{PASSWORD}'.length"),
               c.error("type", sessionId=sid, selector="#user", text=PASSWORD, delay="x"),  # refused: bad args
               c.tool("navigate", sessionId=sid, url=f"{site}/search?q={PASSWORD}"),
               c.tool("list_sessions")]  # where each session is: its URL held the password in clear
    assert answers[1]["success"] and answers[2]["result"] == len(PASSWORD)
    assert answers[-1]["sessions"][0]["url"].startswith(f"{site}/search?q=")
    # Unknown targets count as secret: text the server could not look at is stored withheld.
    unknown = "typed-where-nothing-is"
    assert c.error("type", sessionId=sid, selector="#nowhere", text=unknown)["errorCode"] == "ELEMENT_NOT_FOUND"
    c.tool("navigate", sessionId=sid, url=site + "/login")
    c.tool("type", sessionId=sid, selector="#alerting", text="x")  # its alert stays open
    behind = "typed-behind-a-dialog"
    assert c.error("type", sessionId=sid, selector="#user", text=behind)["errorCode"] == "DIALOG_OPEN"
    c.tool("handle_dialog", sessionId=sid, accept=True)
    kept = c.tool("type", sessionId=sid, selector="#user", text="plain-and-kept")
    c.tool("get_content", ref_id=kept["refId"])  # waits for the call's record: its rows are written
    for answer in answers:
        for text in _strings(answer):
            assert PASSWORD not in text, answer
    files = _db_text(db)
    assert any(path.endswith("-wal") for path in files), files
    for path, data in files.items():
        for value in (PASSWORD, unknown, behind):
            assert value not in data, (path, value)
    assert "plain-and-kept" in "".join(files.values())  # a plain field's text, looked at, is kept
    assert PASSWORD not in json.dumps(c.server_log())
    c.close()
    for path, data in _db_text(db).items():  # after the last checkpoint
        assert PASSWORD not in data and unknown not in data and behind not in data, path


def test_a_trace_keeps_no_secret_and_still_opens(make_client, site, tmp_path):
    # Every way a value is known secret, recorded by a trace: typed into password, one-time-code
    # and card fields, flagged, through fill_form, one too short to scrub from text (its exact
    # occurrences go), and one set by the page itself. Each member of the zip is searched. A second short one,
    # typed into a password field in another session of the client, is a page's plain field's value while the trace
    # records: not typed in this session, nor in a secret field, only the client's short secrets
    # (snapshots.learn_secrets) hide it (safety.md: "a shorter secret its client met (in any of its sessions)").
    short, other = "7x!", "q9$"
    c = make_client("--db", str(tmp_path / "history.db"), "--caps", "all", "--login-cooldown", "0")
    first = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=first, url=site + "/login")
    c.tool("type", sessionId=first, selector="#old", text=other)
    sid = c.tool("create_session")["sessionId"]
    c.tool("trace_start", sessionId=sid)
    c.tool("navigate", sessionId=sid, url="data:text/html,<title>Other</title><input id=i aria-label=Plain>"
                                          "<script>i.setAttribute('value', ['q9', '$'].join(''))</script>")
    c.tool("navigate", sessionId=sid, url=site + "/cookie")
    assert wait_for(lambda: c.tool("tabs", sessionId=sid)["tabs"][0]["title"] == "Fetched", 10)
    c.tool("navigate", sessionId=sid, url=site + "/login")
    c.tool("type", sessionId=sid, selector="#pw", text=PASSWORD)
    c.tool("fill_form", sessionId=sid, fields=[{"selector": "#otp", "value": CODE},
                                               {"selector": "#card", "value": CARD}])
    c.tool("type", sessionId=sid, selector="#token", text=TOKEN, secret=True)
    c.tool("type", sessionId=sid, selector="#old", text=short)
    c.tool("snapshot", sessionId=sid)
    c.tool("click", sessionId=sid, selector="#go")
    saved = c.tool("trace_stop", sessionId=sid)
    # Its owner's only, as the history database (it was 0644, in a folder of 0755).
    assert os.stat(saved["path"]).st_mode & 0o777 == 0o600
    assert os.stat(os.path.dirname(saved["path"])).st_mode & 0o777 == 0o700
    with zipfile.ZipFile(saved["path"]) as trace:
        members = trace.namelist()
        assert "trace.trace" in members and any(m.startswith("resources/") for m in members), members
        assert b"/api" in trace.read("trace.network")  # the request with credentials is in the trace
        for member in members:
            data = trace.read(member).decode("latin-1")
            assert not _leaks(data), (member, _leaks(data))
            assert short not in data and json.dumps(short) not in data, member
            assert other not in data, member
            assert COOKIE not in data and AUTH not in data, member  # headers, as --redact-headers says
        assert b'"__playwright_value_":"[REDACTED]"' in trace.read("trace.trace")  # the fields are there, hidden
    # Playwright's trace viewer (show-trace, served headless) still loads it and lists the actions.
    actions = _trace_viewer_actions(saved["path"])
    assert "Navigate" in " ".join(actions) and "Click" in " ".join(actions), actions
    assert sum(a.startswith('Fill "[REDACTED]"') for a in actions) >= 5, actions


NAMED = "named-Secret-value-9"  # only the server knows it: the agent types it by name


def test_a_named_secret_is_typed_by_name_and_never_seen(make_client, site, tmp_path):
    env = tmp_path / "secrets.env"
    env.write_text(f"# the agent never sees these\nSITE_PASSWORD={NAMED}\nexport OTHER='x y z w'\n")
    db = tmp_path / "history.db"
    c = make_client("--db", str(db), "--secrets", str(env), "--log-level", "debug", "--login-cooldown", "0")
    listed = {t.name: t for t in c.run("list_tools").tools}
    assert "secretName" in listed["type"].input_schema["properties"]
    assert "text" not in listed["type"].input_schema.get("required", [])
    sid = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=sid, url=site + "/login")
    typed = c.tool("type", sessionId=sid, selector="#user", secretName="SITE_PASSWORD")
    assert "SITE_PASSWORD" in typed["message"]
    form = c.tool("fill_form", sessionId=sid, fields=[{"selector": "#token", "secretName": "OTHER"},
                                                      {"selector": "#otp", "value": "1234"}])
    assert form["success"]
    wrong = c.error("type", sessionId=sid, selector="#pw", secretName="SITE_PASWORD")
    assert wrong["errorCode"] == "INVALID_PARAMETERS"
    assert wrong["details"]["known"] == ["OTHER", "SITE_PASSWORD"] and "OTHER, SITE_PASSWORD" in wrong["message"]
    assert c.error("fill_form", sessionId=sid, fields=[{"selector": "#user", "value": "a", "secretName": "OTHER"}]
                   )["errorCode"] == "INVALID_PARAMETERS"
    # Neither a value nor a secret's name: the agent is told what is missing, where (not "not both").
    empty = c.error("fill_form", sessionId=sid, fields=[{"selector": "#user", "value": "a"}, {"selector": "#pw"}])
    assert empty["errorCode"] == "INVALID_PARAMETERS" and empty["details"] == {"field": "#pw"}, empty
    assert "#pw has no value" in empty["message"] and "not both" not in empty["message"], empty
    neither = c.error("type", sessionId=sid, selector="#pw")
    assert neither["errorCode"] == "INVALID_PARAMETERS" and "not both" not in neither["message"], neither
    assert "no text" in neither["message"] and "secretName" in neither["message"], neither
    # The page has the values; the agent's view of it does not.
    snap = c.tool("snapshot", sessionId=sid)["snapshot"]
    assert NAMED not in snap and "x y z w" not in snap and '"User" [ref=e4]: [REDACTED]' in snap.replace(
        "[active] ", ""), snap
    c.tool("click", sessionId=sid, selector="#go")  # posted: the value left through the page alone
    rows = [json.loads(p) for (p,) in sqlite3.connect(db).execute("SELECT params FROM requests WHERE tool_name "
                                                                  "IN ('type', 'fill_form')")]
    assert {"selector": "#user", "secretName": "SITE_PASSWORD"}.items() <= rows[0].items()
    assert rows[1]["fields"][0] == {"selector": "#token", "secretName": "OTHER"}
    for path, data in _db_text(db).items():
        assert NAMED not in data and "x y z w" not in data, path
    assert NAMED not in json.dumps(c.server_log())


def test_a_bad_secrets_file_stops_the_server_naming_the_line(tmp_path):
    env = tmp_path / "secrets.env"
    env.write_text(f"GOOD={NAMED}\nBAD VALUE {NAMED}\n")
    done = subprocess.run([sys.executable, "-m", "mcpbrowser", "--secrets", str(env)], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "line 2" in done.stderr and NAMED not in done.stderr, done.stderr


def test_screenshots_and_pdfs_show_secret_fields_as_dots(make_client, site, tmp_path):
    # The same page with a one-time code and a card number typed twice, different digits each
    # time: as images and printed, both times look the same (dots), while a plain field differs.
    c = make_client("--db", str(tmp_path / "history.db"), "--output-dir", str(tmp_path / "out"),
                    "--caps", "all", "--login-cooldown", "0", "--allow-evaluate")
    sid = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=sid, url=site + "/login")
    c.tool("wait_for", sessionId=sid, selector="#late")  # the page is done changing
    seen = []
    for digits in ("111111111111", "999999999999"):
        c.tool("fill_form", sessionId=sid, fields=[{"selector": "#otp", "value": digits},
                                                   {"selector": "#card", "value": digits}])
        c.tool("evaluate", sessionId=sid, expression="document.activeElement.blur()")  # no caret, blinking or not
        shots = [next(b.data for b in c.call("screenshot", {"sessionId": sid, "selector": s}).content
                      if b.type == "image") for s in ("#otp", "#card")]
        with open(c.tool("pdf", sessionId=sid)["path"], "rb") as f:
            printed = re.sub(rb"/(CreationDate|ModDate) \(D:[^)]*\)", b"", f.read())
        seen.append((shots, printed))
    assert seen[0][0] == seen[1][0], "a screenshot shows the digits"
    assert seen[0][1] == seen[1][1], "the PDF prints the digits"
    c.tool("type", sessionId=sid, selector="#user", text="someone-else")  # a plain field prints as it is
    c.tool("evaluate", sessionId=sid, expression="document.activeElement.blur()")
    with open(c.tool("pdf", sessionId=sid)["path"], "rb") as f:
        assert re.sub(rb"/(CreationDate|ModDate) \(D:[^)]*\)", b"", f.read()) != seen[1][1]
    assert "mcpbrowser" not in json.dumps(c.tool("dom_snapshot", sessionId=sid))  # the style went with the print


def test_a_password_typed_in_lean_mode_stays_secret(make_client, site, tmp_path):
    # --response-mode lean captures no page after a type: nothing but type's own look at the field
    # makes the password known, so a later answer that carries it (a URL) must still hide it.
    c = make_client("--db", str(tmp_path / "history.db"), "--response-mode", "lean", "--login-cooldown", "0")
    sid = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=sid, url=site + "/login")
    c.tool("type", sessionId=sid, selector="#pw", text=PASSWORD)
    moved = c.tool("navigate", sessionId=sid, url=f"{site}/search?q={PASSWORD}&plain=kept")
    assert moved["url"].endswith("?q=[REDACTED]&plain=kept"), moved  # the URL is there, the password hidden
    listed = c.tool("list_sessions")["sessions"]
    assert all(PASSWORD not in text for answer in (moved, listed) for text in _strings(answer)), (moved, listed)


# Page A claims words as secrets (issue 49): the server's marker set by the page itself, a password
# field it filled, and a field it "types" into by script before making it a text field. Page B
# (in another session of the same client, then in A's own) says those words.
PAGES["/claims"] = """<!doctype html><title>Claims</title>
<label>Marked <input data-mcpbrowser-secret value="Transfer"></label>
<label>Prefilled <input type=password value="example.org"></label>
<label>Scripted <input id=scripted type=password value="Recipient"></label>
<script>
const f = document.getElementById("scripted");
f.dispatchEvent(new InputEvent("beforeinput", {bubbles: true}));
f.dispatchEvent(new InputEvent("input", {bubbles: true}));
f.type = "text";
</script>"""
PAGES["/bank"] = """<!doctype html><title>Bank: Transfer to example.org</title>
<h1>Transfer funds</h1><p>Recipient: pay@example.org</p><button>Transfer</button>"""


def test_a_page_cannot_choose_words_to_hide(make_client, pages):
    c = make_client("--login-cooldown", "0")
    a = c.tool("create_session", url=pages.url("/claims"))["sessionId"]
    claims = c.tool("snapshot", sessionId=a)["snapshot"]
    # The page's own password field is read and hidden where it stands (the server did look at A)...
    assert 'textbox "Prefilled"' in claims and "example.org" not in claims and "[REDACTED]" in claims, claims
    # ...but neither the page's marker nor its scripted "typing" makes a field the server's secret one.
    assert 'textbox "Marked" [ref=e' in claims and ": Transfer" in claims, claims
    assert ": Recipient" in claims, claims
    b = c.tool("create_session")["sessionId"]
    for sid in (b, a):  # another session of the client, and A's own next page
        moved = c.tool("navigate", sessionId=sid, url=pages.url("/bank"))
        assert moved["title"] == "Bank: Transfer to example.org", moved
        bank = c.tool("snapshot", sessionId=sid)["snapshot"]
        stored = c.tool("get_content", ref_id=moved["refId"])["content"]
        for text in (bank, stored):
            assert 'heading "Transfer funds"' in text and "Recipient: pay@example.org" in text, text
            assert 'button "Transfer"' in text and "[REDACTED]" not in text, text
    assert "Transfer" in json.dumps(c.tool("list_sessions"))


def test_the_library_types_a_named_secret_with_its_typed_methods(site, tmp_path):
    # Session.type and fill_form take the secret's name as the tool does (an outside try found no such parameter).
    env = tmp_path / "secrets.env"
    env.write_text(f"SITE_PASSWORD={NAMED}\n")
    with mcpbrowser.Browser(Config(headless=True, db=":memory:", secrets=str(env))) as browser:
        session = browser.create_session(url=site + "/login")
        assert "SITE_PASSWORD" in session.type("#user", secret_name="SITE_PASSWORD")["message"]
        assert session.fill_form([{"selector": "#token", "secretName": "SITE_PASSWORD"}])["success"]
        snap = session.snapshot()["snapshot"]
        assert NAMED not in snap and '"User" [ref=e4]: [REDACTED]' in snap.replace("[active] ", ""), snap
