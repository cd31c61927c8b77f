"""Cookies and localStorage/sessionStorage one by one, in a real Chromium on pages of our own, through the official
MCP client over stdio: set, read, deleted; a secret cookie's value never in an answer (unless asked for by name),
the history (its SQLite file read raw) or a log (the server's stderr, at debug level)."""

import json
import time

import pytest
from support import HtmlHandler, HtmlSite, McpClient, stored_text, wait_for

pytestmark = pytest.mark.e2e

SID = "S3ss10n-9f8e7d6c5b4a"       # set by the site, HttpOnly
TOKEN = "t0ken-Agent-Set-77aa"     # set by the agent, named like a token
STORED = "st0red-Api-Key-31x"      # a localStorage entry named like a key
NAMED = "n4med-First-Sess-0q"      # set by the site, asked for by name before any listing masked it
PREFS = "pr3fs-Held-Only-9k"       # an HttpOnly cookie whose name says nothing of a login
HELD = "h3ld-By-The-Agent-5v"      # the same, set by the agent


class Site(HtmlHandler):
    def do_GET(self):
        if self.path == "/login":
            return self._send(200, "<title>In</title>", [("Set-Cookie", f"sid={SID}; HttpOnly; Path=/"),
                                                         ("Set-Cookie", "theme=dark; Path=/"),
                                                         ("Set-Cookie", f"prefs={PREFS}; HttpOnly; Path=/")])
        if self.path == "/login2":
            return self._send(200, "<title>In</title>", [("Set-Cookie", f"session2={NAMED}; Path=/")])
        if self.path == "/flood":  # a page's own storage: 250 entries, and a name of 1,000 characters
            return self._send(200, "<title>Flood</title><script>for (let i = 0; i < 250; i++) "
                                   "localStorage.setItem('k' + i, 'v'); sessionStorage.setItem('K'.repeat(1000), 'v')"
                                   "</script>")
        if self.path == "/away":  # a link to a host the module's server forbids
            return self._send(200, f"<title>Away</title><a id=go href='http://localhost:{self.server.server_port}/show'>"
                                   "go</a>")
        # The page shows what the browser sent, as a careless site's debug footer would.
        return self._send(200, f"<title>Show</title><p>sent: {self.headers.get('Cookie')}</p><p id=ls></p>"
                               "<script>ls.textContent = 'note: ' + localStorage.getItem('note'); "
                               "console.log('cookies: ' + document.cookie)</script>")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    site = HtmlSite(handler=Site)
    db = tmp_path_factory.mktemp("cookies") / "history.db"
    client = McpClient("--allowed-domains", "127.0.0.1", "--db", str(db), "--log-level", "debug")
    yield client, site.url, db
    client.close()
    site.close()


@pytest.fixture
def sid(world):
    client = world[0]
    session_id = client.tool("create_session")["sessionId"]
    yield session_id
    client.call("close_session", {"sessionId": session_id})


def test_a_cookie_is_set_read_and_deleted(world, sid):
    client, url, _ = world
    client.tool("navigate", sessionId=sid, url=url + "/show")
    assert client.tool("cookies", sessionId=sid, action="set", name="theme", value="blue")["set"]["name"] == "theme"
    client.tool("navigate", sessionId=sid, url=url + "/show")
    assert "sent: theme=blue" in client.tool("snapshot", sessionId=sid)["snapshot"]
    (cookie,) = client.tool("cookies", sessionId=sid)["cookies"]
    assert cookie["name"] == "theme" and cookie["value"] == "blue" and "secret" not in cookie
    assert cookie == {"name": "theme", "value": "blue", "domain": "127.0.0.1"}, cookie  # the defaults left out
    client.tool("cookies", sessionId=sid, action="set", name="kept", value="1", path="/show", httpOnly=True,
                secure=True, sameSite="Strict", expires=int(time.time()) + 86400)
    (kept,) = client.tool("cookies", sessionId=sid, name="kept")["cookies"]
    assert kept.pop("expires") > time.time() and kept == {
        "name": "kept", "value": "1", "domain": "127.0.0.1", "path": "/show", "httpOnly": True, "secure": True,
        "sameSite": "Strict", "secret": True}, kept
    client.tool("cookies", sessionId=sid, action="delete", name="kept")
    late = client.error("cookies", sessionId=sid, action="set", name="late", value="1", expires=4102444800000)
    assert late["errorCode"] == "INVALID_PARAMETERS" and "milliseconds" in late["message"], late
    assert client.tool("cookies", sessionId=sid, action="delete", name="theme")["deleted"] == 1
    assert client.tool("cookies", sessionId=sid)["count"] == 0
    client.tool("navigate", sessionId=sid, url=url + "/show")
    assert "sent: None" in client.tool("snapshot", sessionId=sid)["snapshot"]
    error = client.error("cookies", sessionId=sid, action="set", name="x", value="1", domain="127.0.0.2")
    assert error["errorCode"] == "DOMAIN_NOT_ALLOWED"
    assert client.error("cookies", sessionId=sid, action="delete")["errorCode"] == "INVALID_PARAMETERS"
    refused = client.error("cookies", sessionId=sid, action="set", name="x", value="1", sameSite="None", secure=False)
    assert refused["errorCode"] == "INVALID_PARAMETERS" and "did not keep the cookie" in refused["message"]


def test_storage_entries_are_set_read_and_deleted(world, sid):
    client, url, _ = world
    assert client.error("storage", sessionId=sid)["errorCode"] == "INVALID_PARAMETERS"  # about:blank: no origin
    client.tool("navigate", sessionId=sid, url=url + "/show")
    client.tool("storage", sessionId=sid, action="set", name="note", value="hello")
    client.tool("storage", sessionId=sid, action="set", kind="session", name="draft", value="d1")
    client.tool("navigate", sessionId=sid, url=url + "/show")
    assert "note: hello" in client.tool("snapshot", sessionId=sid)["snapshot"]
    listed = client.tool("storage", sessionId=sid)
    assert listed["entries"] == [{"name": "note", "value": "hello"}] and listed["origin"] == url
    assert client.tool("storage", sessionId=sid, kind="session")["entries"] == [{"name": "draft", "value": "d1"}]
    assert client.tool("storage", sessionId=sid, action="delete", name="note")["deleted"] == 1
    assert client.tool("storage", sessionId=sid)["entries"] == []


def test_a_forbidden_origins_storage_is_not_touched_and_a_long_value_is_listed_short(world, sid):
    """tools.md, storage: the tab's page's origin, within the domain policy as cookies are: a tab the agent's click
    sent to a forbidden host shows the proxy's refusal under that host's origin, whose storage was written and read
    all the same. A list shows each value at most 500 characters (one 300,000-character value made a 300,000-character
    answer); asked by name, whole."""
    client, url, _ = world
    client.tool("navigate", sessionId=sid, url=url + "/show")
    client.tool("storage", sessionId=sid, action="set", name="big", value="x" * 5000)
    listed = client.tool("storage", sessionId=sid)["entries"]
    assert listed == [{"name": "big", "value": "x" * 500 + "…[4500 more characters]"}], str(listed)[:300]
    assert client.tool("storage", sessionId=sid, name="big")["entries"] == [{"name": "big", "value": "x" * 5000}]
    client.tool("navigate", sessionId=sid, url=url + "/flood")
    flood = client.tool("storage", sessionId=sid)
    assert len(flood["entries"]) == 200 and flood["count"] == 251 and "51 more" in flood["truncated"], flood["count"]
    (long,) = client.tool("storage", sessionId=sid, kind="session")["entries"]
    assert long["name"] == "K" * 500 + "…[500 more characters]", long["name"][-40:]
    client.tool("navigate", sessionId=sid, url=url + "/away")
    assert client.error("click", sessionId=sid, selector="#go")["errorCode"] == "DOMAIN_NOT_ALLOWED"
    for args in ({"action": "set", "name": "planted", "value": "v"}, {}, {"action": "delete", "name": "planted"}):
        refused = client.error("storage", sessionId=sid, **args)
        assert refused["errorCode"] == "DOMAIN_NOT_ALLOWED" and "localhost" in refused["message"], refused


def test_a_cookie_the_agent_sets_httponly_is_a_secret_and_a_filter_by_domain_names_none(world, sid):
    """safety.md: an HttpOnly cookie holds a login, whatever its name: one the agent sets so is a secret (its value in
    no later answer, nor the history), and it stays masked in a list filtered by domain or path (masked unless
    named: those filters name no cookie)."""
    client, url, db = world
    client.tool("navigate", sessionId=sid, url=url + "/show")
    client.tool("cookies", sessionId=sid, action="set", name="pref", value=HELD, httpOnly=True)
    for filters in ({"domain": "127.0.0.1"}, {"path": "/"}):
        (listed,) = client.tool("cookies", sessionId=sid, **filters)["cookies"]
        assert listed["value"] == "[REDACTED]" and listed["secret"] is True, (filters, listed)
    client.tool("navigate", sessionId=sid, url=url + "/show")  # the page shows the cookie it was sent
    last = client.tool("snapshot", sessionId=sid)
    assert "sent: pref=" in last["snapshot"] and HELD not in last["snapshot"], last
    assert wait_for(lambda: last["refId"] in stored_text(db)["rows"])
    stored = stored_text(db)
    assert HELD not in stored["rows"] + stored["pages"]


def test_a_secret_cookie_never_in_an_answer_the_history_or_a_log(world, sid):
    client, url, db = world
    client.tool("navigate", sessionId=sid, url=url + "/login")
    listed = client.tool("cookies", sessionId=sid)
    by_name = {c["name"]: c for c in listed["cookies"]}
    assert by_name["sid"]["value"] == "[REDACTED]" and by_name["sid"]["secret"] is True
    assert by_name["theme"]["value"] == "dark"
    assert by_name["prefs"]["value"] == "[REDACTED]" and by_name["prefs"]["secret"] is True  # HttpOnly: a secret
    set_answer = client.tool("cookies", sessionId=sid, action="set", name="auth_token", value=TOKEN)
    client.tool("storage", sessionId=sid, action="set", name="api_key", value=STORED)
    assert client.tool("storage", sessionId=sid)["entries"] == [
        {"name": "api_key", "value": "[REDACTED]", "secret": True}]
    client.tool("navigate", sessionId=sid, url=url + "/show")  # the page shows them: the snapshot must not
    page = client.tool("snapshot", sessionId=sid)["snapshot"]
    assert "sent: " in page and SID not in page and TOKEN not in page and PREFS not in page
    logged = client.tool("console_logs", sessionId=sid)
    assert "auth_token=" in json.dumps(logged)  # the page logged its cookies; the secret's value is hidden
    answers = json.dumps([listed, set_answer, page, logged])
    assert SID not in answers and TOKEN not in answers and PREFS not in answers
    # Asked for by name, the value is the agent's to read; the history's row of that call stays scrubbed.
    asked = client.tool("cookies", sessionId=sid, name="sid")
    assert asked["cookies"][0]["value"] == SID
    assert client.tool("storage", sessionId=sid, name="api_key")["entries"][0]["value"] == STORED
    client.tool("navigate", sessionId=sid, url=url + "/login2")
    first = client.tool("cookies", sessionId=sid, name="session2")
    assert first["cookies"][0]["value"] == NAMED
    last = client.tool("snapshot", sessionId=sid)
    assert wait_for(lambda: last["refId"] in stored_text(db)["rows"])
    stored = stored_text(db)
    assert asked["refId"] in stored["rows"]
    for value in (SID, TOKEN, STORED, NAMED):
        assert value not in stored["rows"] + stored["pages"], value
        assert value not in open(client.stderr.name).read(), value
    # ...and every answer but the one that names it.
    assert {c["name"]: c["value"] for c in client.tool("cookies", sessionId=sid)["cookies"]}["sid"] == "[REDACTED]"
    client.tool("navigate", sessionId=sid, url=url + "/show")
    assert SID not in client.tool("snapshot", sessionId=sid)["snapshot"]
