"""export_script: an agent's session, recorded by a real server over MCP, becomes a pytest test that passes.

A small shop on 127.0.0.1 (a login, pages behind it, a form, a confirm dialog, a popup) is used
by an agent-style session; the server then restarts on the same history, the session is
exported, and the exported file is run with pytest in a subprocess (the project's Python,
Debian's Chromium): it passes against the site, and fails once the site renames a page it asserts.
"""

import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
from support import McpClient, wait_for

pytestmark = pytest.mark.e2e

PASSWORD = "Tr0ub4dor-and-3"
CHROMIUM = "/usr/bin/chromium"
TITLES = {"/home": "Home", "/catalogue": "Catalogue", "/help": "Help", "/ordered": "Order placed"}


class _Shop(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, status, body="", headers=()):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _page(self, path, body):
        self._send(200, f"<!doctype html><title>{self.server.titles[path]}</title>{body}")

    def do_POST(self):
        form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode())
        if form.get("password") == [PASSWORD]:
            self._send(303, headers=[("Set-Cookie", f"user={form['user'][0]}; Path=/"), ("Location", "/home")])
        else:
            self._send(200, "<!doctype html><title>Wrong password</title><p>Wrong password</p>")

    def do_GET(self):
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        user = re.search(r"user=(\w+)", self.headers.get("Cookie", ""))
        if url.path == "/pay":  # a checkout whose wallet popup approves, then closes itself
            self._send(200, "<!doctype html><title>Checkout</title><a href=/wallet target=_blank rel=opener>Pay with "
                            "wallet</a><p id=state>Waiting</p><button onclick=\"document.getElementById('state')"
                            ".textContent = 'Paid'\">Finish</button>")
        elif url.path == "/wallet":
            self._send(200, "<!doctype html><title>Wallet</title><button onclick=\"try { opener.document."
                            "getElementById('state').textContent = 'Approved' } finally { window.close() }\">Approve"
                            "</button><input id=pin aria-label=PIN onkeydown=\"if (event.key === 'Enter') { opener."
                            "document.getElementById('state').textContent = 'Approved'; window.close() }\">")
        elif url.path == "/login":
            self._send(200, "<!doctype html><title>Sign in</title><form method=post action=/login>"
                            "<label>User <input name=user></label><label>Password <input name=password "
                            "type=password></label><button>Log in</button></form>")
        elif url.path not in TITLES:
            self._send(404, "<title>Not found</title>")
        elif user is None:
            self._send(302, headers=[("Location", "/login")])
        elif url.path == "/home":
            self._page("/home", f"<h1>Hello {user.group(1)}</h1><a href=/catalogue>Catalogue</a> "
                                "<a href=/help target=_blank>Open help</a>")
        elif url.path == "/catalogue":
            self._page("/catalogue", "<form action=/ordered><label>Search <input name=q></label>"
                                     "<label>Size <select name=size><option>Small</option><option>Large</option>"
                                     "</select></label><label>Note <input name=note></label><label>Gift wrap "
                                     "<input type=checkbox name=gift></label>"
                                     "<button type=submit>Place order</button></form>"
                                     "<button type=button onclick=\"alert('Drafts go for good'); "
                                     "if (confirm('Delete the draft?')) "
                                     "document.getElementById('note').textContent = 'Draft deleted'\">"
                                     "Delete draft</button><p id=note></p>")
        elif url.path == "/ordered":
            self._page("/ordered", f"<p>Thank you: {query.get('q')} ({query.get('size')}, {query.get('note')}, "
                                   f"gift {query.get('gift', 'no')})</p>")
        else:  # a popup that asks; the agent answers from the first tab (a replay must answer it in the popup)
            self._page("/help", "<h1>How to order</h1><script>setTimeout(() => document.body.append("
                                "confirm('Read the guide?') ? 'Guide read' : 'Guide skipped'), 300)</script>")


@pytest.fixture(scope="module")
def shop():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Shop)
    httpd.daemon_threads = True
    httpd.titles = dict(TITLES)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _ref(snapshot, role, name):
    return re.search(rf'- {role} "{re.escape(name)}"[^\n]*\[ref=([\w-]+)\]', snapshot).group(1)


def _agent_session(client, base):
    """What an agent does on the shop: every kind of action, by ref where it had a snapshot. Returns the refs."""
    sid = client.tool("create_session", url=base + "/login")["sessionId"]
    used = []

    def ref(role, name):
        used.append(_ref(client.tool("snapshot", sessionId=sid)["snapshot"], role, name))
        return used[-1]

    client.tool("type", sessionId=sid, ref=ref("textbox", "User"), text="alice")
    client.tool("type", sessionId=sid, ref=ref("textbox", "Password"), text=PASSWORD)  # a password field: secret
    assert client.tool("click", sessionId=sid, ref=ref("button", "Log in"))["title"] == "Home"
    assert client.tool("click", sessionId=sid, ref=ref("link", "Catalogue"))["navigated"]
    client.error("click", sessionId=sid, selector="#no-such-button", timeout=200)  # a failed call: left out
    client.tool("type", sessionId=sid, ref=ref("textbox", "Search"), text="blue mug")
    client.tool("select", sessionId=sid, ref=ref("combobox", "Size"), labels=["Large"])
    client.tool("fill_form", sessionId=sid, fields=[{"ref": ref("textbox", "Note"), "value": "fragile"},
                                                    {"selector": "input[name=gift]", "value": True}])
    assert client.tool("click", sessionId=sid, selector="text=Delete draft")["dialog"]["type"] == "alert"
    assert client.tool("handle_dialog", sessionId=sid, accept=True)["dialog"]["type"] == "confirm"  # then a confirm
    client.tool("handle_dialog", sessionId=sid, accept=True)
    client.tool("wait_for", sessionId=sid, text="Draft deleted")
    assert client.tool("click", sessionId=sid, ref=ref("button", "Place order"))["title"] == "Order placed"
    client.tool("wait_for", sessionId=sid, text="Thank you: blue mug (Large, fragile, gift on)")
    client.tool("navigate", sessionId=sid, url=base + "/home")
    client.tool("click", sessionId=sid, ref=ref("link", "Open help"))
    assert wait_for(lambda: "dialog" in client.tool("tabs", sessionId=sid)["tabs"][-1], 10)
    assert client.tool("handle_dialog", sessionId=sid, accept=True)["tab"] == 1  # from the first tab
    assert client.tool("tabs", sessionId=sid, action="select", index=1)["tabs"][1]["current"]
    client.tool("wait_for", sessionId=sid, text="Guide read")
    client.tool("screenshot", sessionId=sid)  # a read: a comment at most
    client.tool("save_state", sessionId=sid, name="shop")  # the login, for a session of the next server
    return sid, used


def _run(path, env):
    # The plain pytest of a user's checkout: no plugin of this project's environment is needed.
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.basename(path)],
                          cwd=os.path.dirname(path), capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                               "MCPBROWSER_BROWSER_PATH": CHROMIUM, **env})


def test_a_session_exported_after_a_restart_replays_as_a_passing_test(shop, tmp_path):
    base = f"http://127.0.0.1:{shop.server_port}"
    db, out = str(tmp_path / "history.db"), str(tmp_path / "out")
    first = McpClient("--db", db, "--output-dir", out)
    try:
        sid, refs = _agent_session(first, base)
    finally:
        first.close()  # the server stops: the session survives only in its history
    client = McpClient("--db", db, "--output-dir", out)
    try:
        answer = client.tool("export_script", sessionId=sid)
        # A session that began from the saved login, in German: the test logs in from a state file the user
        # names, and emulates what the session did.
        logged_in = client.tool("create_session", storageState="shop", locale="de-DE", url=base + "/home")
        assert logged_in["title"] == "Home"
        with_login = client.tool("export_script", sessionId=logged_in["sessionId"], storageStatePath="shop.json")
    finally:
        client.close()
    login_text = open(with_login["path"]).read()
    assert ('browser.new_context(locale="de-DE", storage_state=os.environ.get("MCPBROWSER_STORAGE_STATE", '
            '"shop.json"))') in login_text  # its emulation too
    assert "'shop'" in login_text and 'page.goto("' + base + '/home")' in login_text
    path = answer["path"]
    assert os.path.dirname(path) == os.path.realpath(out) and os.path.basename(path).startswith("test_")
    assert os.stat(path).st_mode & 0o777 == 0o600  # its owner's only, as every file the server writes
    assert f"python -m pytest {path}" in answer["message"] and "MCPBROWSER_SECRET_1" in answer["message"]
    # The password, and fill_form's values, which the history never keeps.
    assert answer["secrets"] == ["MCPBROWSER_SECRET_1", "MCPBROWSER_SECRET_2", "MCPBROWSER_SECRET_3"]
    assert "warnings" not in answer
    text = open(path).read()
    compile(text, path, "exec")

    # What must never be in it: the password, a ref, a path of this machine.
    assert PASSWORD not in text and "[REDACTED]" not in text
    assert "[ref=" not in text and "aria-ref" not in text
    for ref in refs:
        assert not re.search(rf"\b{ref}\b", text), ref
    assert re.findall(r"(?<![\w:/.])/(?:[\w.-]+/)+[\w.-]*", text) == []  # no absolute path at all
    for local in (str(tmp_path), os.path.expanduser("~"), os.getcwd(), CHROMIUM, sys.prefix):
        assert local not in text, local

    # What it does: refs became roles and names, the secret an environment variable, with assertions.
    assert 'page.get_by_role("textbox", name="Password").fill(os.environ["MCPBROWSER_SECRET_1"])' in text
    assert 'page.get_by_role("link", name="Catalogue").click()' in text
    assert 'page.get_by_role("combobox", name="Size").select_option(label=["Large"])' in text
    assert 'expect(page).to_have_title("Catalogue")' in text and "#no-such-button" not in text
    # Two dialogs of one click, each answered in turn (handlers set with `once` would both take the alert).
    assert 'answer_in_order(page, lambda dialog: dialog.accept(), lambda dialog: dialog.accept())' in text
    assert text.index("dialog.accept()") < text.index('page.locator("text=Delete draft").first.click()')
    assert 'fill(page.get_by_role("textbox", name="Note"), os.environ["MCPBROWSER_SECRET_2"])' in text
    assert 'fill(page.locator("input[name=gift]").first, os.environ["MCPBROWSER_SECRET_3"])' in text
    assert 'expect(page.get_by_text("Draft deleted").filter(visible=True).first).to_be_visible()' in text
    assert "page = tab(context, 1)" in text and "screenshot" in text
    # The popup's confirm, answered from the first tab, is answered in the popup, set before the click that opens it.
    assert text.index("answer_in_tab(context, 1, lambda dialog: dialog.accept())") < \
        text.index('page.get_by_role("link", name="Open help").click()')

    # The command line exports it too, with no server running (meanwhile: it needs no browser).
    cli = subprocess.Popen([sys.executable, "-m", "mcpbrowser", "export", sid, "--db", db, "--output-dir", out],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    secrets = {"MCPBROWSER_SECRET_1": PASSWORD, "MCPBROWSER_SECRET_2": "fragile", "MCPBROWSER_SECRET_3": "true"}
    passed = _run(path, secrets)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "1 passed" in passed.stdout

    shop.titles["/catalogue"] = "Shop"  # the site changed a title the test asserts
    try:
        failed = _run(path, {**secrets, "MCPBROWSER_EXPECT_TIMEOUT": "1000"})
    finally:
        shop.titles["/catalogue"] = "Catalogue"
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "to_have_title" in failed.stdout and "Catalogue" in failed.stdout and "1 failed" in failed.stdout

    stdout, stderr = cli.communicate(timeout=60)
    assert cli.returncode == 0, stderr
    (again,) = [p for p in os.listdir(out) if p.endswith(".py") and p not in (os.path.basename(path),
                                                                                os.path.basename(with_login["path"]))]
    assert os.path.join(os.path.realpath(out), again) in stdout
    body = lambda t: t.split('"""', 2)[2]  # noqa: E731  (the docstring names the file and the time)
    assert body(open(os.path.join(out, again)).read()) == body(text)


def test_a_session_whose_popup_closed_itself_replays_on_in_the_tab_that_became_current(shop, tmp_path):
    # The wallet popup the agent worked in closes itself (window.close) once it approved: the answer that told it
    # (closedTabs, currentTab; or TAB_CLOSED with details.during when Playwright heard the close first) moved the
    # agent back to the checkout, and the exported test must follow it there, not drive the closed popup.
    base = f"http://127.0.0.1:{shop.server_port}"
    client = McpClient("--db", str(tmp_path / "history.db"), "--output-dir", str(tmp_path / "out"))
    try:
        sid = client.tool("create_session", url=base + "/pay")["sessionId"]

        def ref(role, name):
            return _ref(client.tool("snapshot", sessionId=sid)["snapshot"], role, name)

        assert client.tool("click", sessionId=sid, ref=ref("link", "Pay with wallet"))["newTabs"] == 1
        assert client.tool("tabs", sessionId=sid, action="select", index=1)["title"] == "Wallet"
        approved = json.loads(client.call("click", {"sessionId": sid, "ref": ref("button", "Approve")})
                              .content[0].text)
        assert approved.get("details", approved)["currentTab"] == 0, approved
        client.tool("wait_for", sessionId=sid, text="Approved")
        client.tool("click", sessionId=sid, ref=ref("button", "Finish"))
        client.tool("wait_for", sessionId=sid, text="Paid")
        # Again, with the checkout closed first: the wallet, the last tab, closes itself, and the session goes on
        # in a fresh blank tab (so does the test).
        assert client.tool("click", sessionId=sid, ref=ref("link", "Pay with wallet"))["newTabs"] == 1
        client.tool("tabs", sessionId=sid, action="select", index=1)
        assert len(client.tool("tabs", sessionId=sid, action="close", index=0)["tabs"]) == 1
        last = json.loads(client.call("click", {"sessionId": sid, "ref": ref("button", "Approve")}).content[0].text)
        assert last.get("details", last)["currentTab"] == 0, last
        assert client.tool("navigate", sessionId=sid, url=base + "/pay")["title"] == "Checkout"
        # A key whose keydown closes the wallet: in a replay the close may come before the key's end (guarded).
        assert client.tool("click", sessionId=sid, ref=ref("link", "Pay with wallet"))["newTabs"] == 1
        client.tool("tabs", sessionId=sid, action="select", index=1)
        keyed = json.loads(client.call("press_key", {"sessionId": sid, "selector": "#pin", "key": "Enter"})
                           .content[0].text)
        assert keyed.get("details", keyed)["currentTab"] == 0, keyed
        client.tool("wait_for", sessionId=sid, text="Approved")
        path = client.tool("export_script", sessionId=sid)["path"]
    finally:
        client.close()
    text = open(path).read()
    assert text.index('page.get_by_role("button", name="Approve").click()') < text.index("page = tab(context, 0) if") \
        < text.index('page.get_by_text("Approved")'), text
    passed = _run(path, {})
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "1 passed" in passed.stdout
