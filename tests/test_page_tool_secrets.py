"""A server secret passed by name into a page tool's input (page_tools' secretNames), attacked: the page echoes it in
its result, logs it to its console, puts it in its URL and navigates with it in the query, over MCP on a real
Chromium. The page gets the real value (its server records what arrived: the proof each call happened); the agent's
answers, the history's files (its WAL and its stored pages decompressed), the server's stderr log and the exported
script never hold it in any form. Wrong names and fields meant for numbers are refused before the page is reached.
"""

import glob
import json
import os
import threading
from urllib.parse import parse_qs, urlsplit

import pytest
from support import HtmlHandler, HtmlSite, wait_for
from test_secrets import _db_text

pytestmark = pytest.mark.e2e

# Letters and digits survive every encoding (URL, JSON, HTML), so CORE is in any form of the value that got out;
# the space, quotes, slash, plus and ü make each encoding differ from the value as it is.
CORE = "Qz7Secret"
NAMED = f'pt "{CORE}" /9+\u00fc'
OTHER = "other-Value-55"

PAGE = """<title>Vault</title><p id=out>out: none</p><script>
const mc = document.modelContext;
mc.registerTool({name: 'echo', description: 'Echoes its input.',
  inputSchema: {type: 'object', properties: {token: {type: 'string'}, note: {type: 'string'}}},
  execute: async ({token, note}) => {
    console.log('echo ' + token);
    document.getElementById('out').textContent = 'out: ' + token;
    history.pushState({}, '', '/vault?v=' + token);
    await fetch('/seen?v=' + encodeURIComponent(token));
    const text = (note === 'long' ? 'x'.repeat(5000) + ' ' : '') + 'echo ' + token + ' ' + note;
    return {content: [{type: 'text', text}], structuredContent: {token}};
  }});
mc.registerTool({name: 'leave', description: 'Goes on with the token in the query.',
  inputSchema: {type: 'object', properties: {token: {type: 'string'}}},
  execute: async ({token}) => {
    setTimeout(() => { location.href = '/landed?v=' + encodeURIComponent(token); }, 50);
    return 'leaving';
  }});
mc.registerTool({name: 'reject', description: 'Fails, naming its input.',
  inputSchema: {type: 'object', properties: {token: {type: 'string'}}},
  execute: async ({token}) => {
    await fetch('/seen?v=' + encodeURIComponent(token));
    throw new Error('bad ' + token);
  }});
mc.registerTool({name: 'count', description: 'Takes a number.',
  inputSchema: {type: 'object', properties: {count: {type: 'number'}}},
  execute: async ({count}) => { await fetch('/seen?v=' + encodeURIComponent(String(count))); return 'counted'; }});
</script>"""


class _Vault(HtmlHandler):
    def do_GET(self):
        url = urlsplit(self.path)
        value = parse_qs(url.query).get("v", [None])[0]
        if url.path in ("/seen", "/landed"):
            with self.server.lock:
                self.server.arrived.append((url.path, value))
        if url.path == "/landed":
            return self._send(200, f"<title>Landed</title><p>welcome {value}</p>")
        self._send(200, PAGE)


@pytest.fixture
def vault():
    site = HtmlSite(handler=_Vault)
    site.httpd.lock, site.httpd.arrived = threading.Lock(), []
    yield site
    site.close()


def _strings(value):
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


def test_a_secret_by_name_reaches_the_page_tool_and_nothing_the_server_shows_or_writes(make_client, vault,
                                                                                      tmp_path):
    env, data = tmp_path / "secrets.env", tmp_path / "data"
    env.write_text(f'PT_TOKEN="{NAMED.replace(chr(34), chr(92) + chr(34))}"\nOTHER={OTHER}\n')
    db = data / "history.db"
    data.mkdir()
    c = make_client("--db", str(db), "--secrets", str(env), "--log-level", "debug", "--output-dir",
                    str(data / "files"), "--login-cooldown", "0")
    arrived = vault.httpd.arrived
    listed = {t.name: t for t in c.run("list_tools").tools}
    assert "secretNames" in listed["page_tools"].input_schema["properties"]
    opened = c.tool("create_session", url=vault.url + "/vault")
    sid = opened["sessionId"]
    answers = [opened, c.tool("page_tools", sessionId=sid)]

    # The page echoes it in its result (as text and as JSON), writes it into the page and its console, and puts it
    # in its URL (as the browser encodes it) and in a request's query.
    echoed = c.tool("page_tools", sessionId=sid, name="echo", input={"note": "plain-note"},
                    secretNames={"token": "PT_TOKEN"})
    answers.append(echoed)
    assert wait_for(lambda: ("/seen", NAMED) in arrived)  # the page had the real value
    assert echoed["untrustedResult"].startswith("echo [REDACTED] plain-note"), echoed
    assert echoed["url"].startswith(vault.url + "/vault?v=")
    answers += [c.tool("snapshot", sessionId=sid), c.tool("console_logs", sessionId=sid),
                c.tool("network_logs", sessionId=sid, allPages=True), c.tool("list_sessions"),
                c.tool("tabs", sessionId=sid)]
    assert "out: [REDACTED]" in answers[-5]["snapshot"], answers[-5]
    assert "echo [REDACTED]" in json.dumps(answers[-4]), answers[-4]
    assert "/seen?v=" in json.dumps(answers[-3]), answers[-3]

    # Past the answer's 4,000 characters: the whole result is stored under the call's refId.
    long = c.tool("page_tools", sessionId=sid, name="echo", input={"note": "long"}, secretNames={"token": "PT_TOKEN"})
    assert "truncated" in long, long
    stored = c.tool("get_content", ref_id=long["refId"])
    assert "echo [REDACTED] long" in json.dumps(stored), stored
    answers += [long, stored]

    # It throws with the value in its error, which Chromium writes to the page's console.
    failed = c.error("page_tools", sessionId=sid, name="reject", secretNames={"token": "PT_TOKEN"})
    assert failed["errorCode"] == "PAGE_TOOL_FAILED", failed
    assert arrived.count(("/seen", NAMED)) == 3
    console = c.tool("console_logs", sessionId=sid)
    assert "Uncaught Error: bad [REDACTED]" in json.dumps(console), console  # Chromium logged the throw
    answers += [failed, console]

    # It navigates with the value in its query: the new page's URL, its text and the request.
    answers.append(c.tool("page_tools", sessionId=sid, name="leave", secretNames={"token": "PT_TOKEN"}))
    assert wait_for(lambda: ("/landed", NAMED) in arrived)
    answers.append(c.tool("wait_for", sessionId=sid, text="welcome"))
    answers += [c.tool("snapshot", sessionId=sid), c.tool("network_logs", sessionId=sid, allPages=True),
                c.tool("list_sessions")]
    assert "welcome [REDACTED]" in answers[-3]["snapshot"], answers[-3]
    assert answers[-1]["sessions"][0]["url"].startswith(vault.url + "/landed?v=")

    # An unknown name, a field the page takes as a number, a field given twice: refused, the page never reached.
    c.tool("navigate", sessionId=sid, url=vault.url + "/vault")
    seen = len(arrived)
    wrong = c.error("page_tools", sessionId=sid, name="echo", secretNames={"token": "PT_TOKN"})
    assert wrong["errorCode"] == "INVALID_PARAMETERS" and wrong["details"]["known"] == ["OTHER", "PT_TOKEN"]
    assert "the names you may use: OTHER, PT_TOKEN" in wrong["message"], wrong
    number = c.error("page_tools", sessionId=sid, name="count", secretNames={"count": "PT_TOKEN"})
    assert number["errorCode"] == "INVALID_PARAMETERS" and number["details"]["field"] == "count", number
    assert "takes number, not a secret" in number["message"], number
    twice = c.error("page_tools", sessionId=sid, name="echo", input={"token": "mine"},
                    secretNames={"token": "PT_TOKEN"})
    assert twice["errorCode"] == "INVALID_PARAMETERS" and "not both" in twice["message"], twice
    answers += [wrong, number, twice]
    c.tool("page_tools", sessionId=sid, name="count", input={"count": 3})  # the page takes a number given so
    assert wait_for(lambda: ("/seen", "3") in arrived) and arrived[seen:] == [("/seen", "3")], arrived

    # The exported test reads the secret from the environment by its name.
    exported = c.tool("export_script", sessionId=sid)
    answers.append(exported)
    source = open(exported["path"]).read()
    assert 'page.webmcp.call_tool("echo", {"note": "plain-note", "token": os.environ["PT_TOKEN"]})' in source

    for answer in answers:
        for text in _strings(answer):
            assert CORE not in text and OTHER not in text, answer
    log = c.server_log()
    assert any(line.get("event") == "tool_call" for line in log)  # the debug log was written
    with open(c.stderr.name, encoding="utf-8") as f:
        assert CORE not in f.read()
    c.close()
    files = _db_text(db)
    written = [p for p in glob.glob(str(data / "**"), recursive=True) if os.path.isfile(p)]
    assert exported["path"] in written, written
    for path in written:
        files[path] = open(path, "rb").read().decode("latin-1")
    for path, text in files.items():
        assert CORE not in text and OTHER not in text, path
    assert "welcome [REDACTED]" in files[f"{db}!snapshots"]  # the pages were stored, the value hidden
    assert "plain-note" in "".join(files.values())  # the plain input is stored
