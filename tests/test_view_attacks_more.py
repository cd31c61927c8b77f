"""More attacks on the live view's typed secrets (issue 53's outside review, after b603614).

Reuses test_view_attacks' real server, clients and person. A second small site of this module's own serves
honest pages that echo what is typed in other ways: a URL per key, a DOM list, a late echo. Each test
shows the echo happened (positive control) before it looks for the password or a 4+ character prefix.
Two hostile ones answer words of their own as their field's text.
"""

import hashlib
import json
import threading
import time
import urllib.parse

import pytest
import test_view_attacks
from support import HtmlSite, SdkClient, wait_for
from test_view import everything_stored
from test_view_attacks import ALICE, person, post

from mcpbrowser.session.snapshots import HIDDEN_FOR_S

pytestmark = pytest.mark.e2e

# test_view_attacks' fixtures, shared here: its server (which needs its site), its agents, alice's session.
site, served, agents, alice_session = (test_view_attacks.site, test_view_attacks.served, test_view_attacks.agents,
                                       test_view_attacks.alice_session)


FORM = ("<!doctype html><title>Login</title><form action=/echo method=get>"
        "<input id=p name=p autofocus><input id=o name=o><button id=go>go</button></form>"
        "<script>p.addEventListener('input', e => console.log('typed:' + e.target.value))</script>")
# An autocomplete-like page: each key asks the server about the field's text, URL-encoded.
SUGGEST = ("<!doctype html><title>Suggest</title><input id=p autofocus><script>p.addEventListener('input', e => "
           "fetch('/echo?k=' + encodeURIComponent(e.target.value)))</script>")
# A preview that lists the field's text after each key.
LISTED = ("<!doctype html><title>Listed</title><input id=p autofocus><ul id=l></ul><script>"
          "p.addEventListener('input', e => { const li = document.createElement('li');"
          " li.textContent = 'seen ' + e.target.value; l.append(li); })</script>")
# Echoes each key to the console 2 s late (or ?ms=); a second field to move on to.
LATE2 = ("<!doctype html><title>Late</title><input id=p autofocus><input id=o><script>"
         "p.addEventListener('input', e => { const v = e.target.value; setTimeout(() => console.log('late:' + v), "
         "MS); })</script>")
# Logs each key pressed (a shortcut handler's trace): one character a message.
KEYS = ("<!doctype html><title>Keys</title><input id=p autofocus><script>"
        "p.addEventListener('keydown', e => console.log('key:' + e.key))</script>")
# A state logger: the form's state as JSON after each key.
STATE = ("<!doctype html><title>State</title><input id=p autofocus><script>"
         "p.addEventListener('input', e => console.log('state:' + JSON.stringify({v: e.target.value})))</script>")
# Shows the field's text in the tab's title, each key's a little later (300 ms a key).
TITLED = ("<!doctype html><title>Titled</title><input id=p autofocus><script>"
          "p.addEventListener('input', e => { const v = e.target.value;"
          " setTimeout(() => { document.title = 'title:' + v; }, 500 + 300 * v.length); })</script>")
# A hostile page that wants words of its own scrubbed from the agent's answers as the person's secret: its field
# answers them as its text, by a getter on the prototype or by setting its value after each key.
CHOSEN = "Quarterly Revenue Report"
GETTER = ("<!doctype html><title>Getter</title><h1>CHOSEN</h1><input id=p autofocus><script>"
          "const real = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value');"
          "Object.defineProperty(HTMLInputElement.prototype, 'value', {configurable: true, set: real.set,"
          " get() { fetch('/echo?read=getter'); return 'CHOSEN'; }})</script>")
SETTER = ("<!doctype html><title>Setter</title><h1>CHOSEN</h1><input id=p autofocus><script>"
          "p.addEventListener('input', () => { p.value = 'CHOSEN'; fetch('/echo?read=setter'); })</script>")
# Words made of the person's own keys: a field that keeps only some of what they typed.
SUBSET = ("<!doctype html><title>Subset</title><h1>Sword</h1><input id=p autofocus><script>"
          "p.addEventListener('input', () => { if (p.value.length > 3) { p.value = 'word';"
          " fetch('/echo?read=subset'); } })</script>")
# A rich-text field: its text is in its DOM, it has no value for the view to read back after the keys, so the
# person's runs alone make it a secret. The page tells its server the SHA-256 of what it holds after each key.
EDITABLE = ("<!doctype html><title>Notes</title><h1>Private notes</h1><div id=p contenteditable "
            "style='min-height:3em;border:1px solid'></div><script>p.focus(); p.addEventListener('input', async () => "
            "{ const sum = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(p.textContent));"
            " fetch('/echo?sha=' + Array.from(new Uint8Array(sum), b => b.toString(16).padStart(2, '0')).join('')); "
            "})</script>")
SHORT = FORM.replace("<input id=p name=p autofocus>", "<input id=p name=p autofocus maxlength=13>")
PAGES = {"/short": SHORT, "/getter": GETTER.replace("CHOSEN", CHOSEN), "/setter": SETTER.replace("CHOSEN", CHOSEN),
         "/subset": SUBSET,
         "/titled": TITLED, "/state": STATE, "/keys": KEYS, "/form": FORM, "/suggest": SUGGEST, "/listed": LISTED,
         "/late2": LATE2, "/editable": EDITABLE}


class Pages(HtmlSite):
    """This module's honest pages on 127.0.0.1; /echo records its query."""

    def __init__(self):
        self.seen = []
        super().__init__(self.page)

    def page(self, url):
        if url.path == "/echo":
            self.seen.append(urllib.parse.parse_qs(url.query))
            return f"<title>echo {url.query}</title>ok"
        ms = urllib.parse.parse_qs(url.query).get("ms", ["2000"])[0]
        return PAGES.get(url.path, "nothing").replace("MS", str(int(ms)))


@pytest.fixture(scope="module")
def pages():
    pages = Pages()
    yield pages
    pages.close()


def act(ann, sid, *inputs):
    for one in inputs:
        assert post(ann, f"/view/api/s/{sid}/input", json.dumps(one).encode())[0] == 200, one


def key(name):
    return {"action": "key", "key": name}


def typed(text):
    return {"action": "type", "text": text}


def everything(served, agents, ann, sid):
    """All an agent reads of the session (answers, its list), the person's API, the history, the stderr log."""
    alice, _ = agents
    seen = {name: alice.tool(name, sessionId=sid) for name in ("snapshot", "console_logs", "network_logs")}
    seen["list_sessions"] = alice.tool("list_sessions")
    seen["view"] = [ann.request(path)[2].decode() for path in (f"/view/api/s/{sid}", "/view/api/sessions")]
    where = {name: json.dumps(value, ensure_ascii=False).encode() for name, value in seen.items()}
    where["history"], where["stderr"] = everything_stored(served.db), open(served.stderr.name, "rb").read()
    return where


def leaked(where, password):
    """{place: the longest prefix of 4+ characters found there} for every place that shows one."""
    found = {name: leaks(text, password) for name, text in where.items()}
    return {name: forms[0] for name, forms in found.items() if forms}


def leaks(where, password, forms=()):
    """The password's prefixes of 4+ characters (raw, and URL-encoded) found in `where`, longest first."""
    found = []
    for n in range(len(password), 3, -1):
        for form in (password[:n], urllib.parse.quote(password[:n], safe=""),
                     urllib.parse.quote_plus(password[:n]), *[f(password[:n]) for f in forms]):
            if form.encode() in where:
                found.append(form)
    return found


def stamp():
    return str(int(time.time() * 1000))[-7:]


# A person who fixes a typo in the middle (ArrowLeft, a key, End) sends the fixed password in three runs: the
# page's field then holds a text no run was, so nothing knows it as a secret.
def test_a_password_fixed_in_the_middle_is_nowhere(served, pages, agents, alice_session):
    password = "Fx" + stamp() + "Passw0rd"
    mistyped = password.replace("ss", "s")
    where = sent_by_person(served, pages, agents, alice_session, "/form", password, typed(mistyped),
                           *[key("ArrowLeft")] * 4, typed("s"), key("End"), key("Enter"), past_hiding=True)
    assert b"typed:" in where["console_logs"] and b"/echo" in where["network_logs"]  # the echo and the URL came
    assert leaked(where, password) == {}


def sent_by_person(served, pages, agents, sid, path, password, *inputs, past_hiding=False):
    """A person types into `path`'s form with `inputs`, which send it by GET: the page got `password` (positive
    control). Then the hand-back and all that is read of the session, after the prefixes' hiding with
    past_hiding (the prefixes of what was typed mask the sent text meanwhile: it must be known by then)."""
    agents[0].tool("navigate", sessionId=sid, url=pages.url + path)
    ann = person(served, ALICE)
    pages.seen.clear()
    assert post(ann, f"/view/api/s/{sid}/takeover")[0] == 200
    act(ann, sid, *inputs)
    assert wait_for(lambda: pages.seen, seconds=10)
    assert pages.seen[0]["p"] == [password]
    time.sleep(0.5)
    assert post(ann, f"/view/api/s/{sid}/handback")[0] == 200
    if past_hiding:
        time.sleep(HIDDEN_FOR_S + 0.5)
        agents[0].tool("tabs", sessionId=sid)  # a call: the hiding's time is up
    return everything(served, agents, ann, sid)


def suggest_typed_by_person(served, pages, agents, sid, password, *inputs):
    """A person types `password` (as `inputs`) into /suggest, whose every key fetches /echo?k=<the field's
    text>: the fetches arrive (positive control), and the password is nowhere."""
    agents[0].tool("navigate", sessionId=sid, url=pages.url + "/suggest")
    ann = person(served, ALICE)
    pages.seen.clear()
    assert post(ann, f"/view/api/s/{sid}/takeover")[0] == 200
    act(ann, sid, *inputs)
    # Each key's fetch is its own request: they may reach the server in any order.
    assert wait_for(lambda: [password] in [seen.get("k") for seen in pages.seen], seconds=10)
    assert wait_for(lambda: len(pages.seen) >= len(password), seconds=10)
    assert post(ann, f"/view/api/s/{sid}/handback")[0] == 200
    where = everything(served, agents, ann, sid)
    assert where["network_logs"].count(b"/echo?k=") >= len(password) - 1
    assert leaked(where, password) == {}


# Typed into a contenteditable (issue 63): the tests typed only into <input>s, whose value the view reads back
# and learns, so with the registration of the person's text broken they all passed, and the password typed
# into a rich-text field was in the agent's snapshot once the prefixes' hiding was over. A slow typist (issue
# 70): a key a run (the view sends one per pause), each too short to scrub alone; only the run they add up
# to, learned as a whole, hides the password. Learned run by run, a test typing two long runs passed while
# the password typed a key at a time showed whole in the snapshot and the history.
def test_a_password_typed_slowly_into_a_contenteditable_is_nowhere(served, pages, agents, alice_session):
    alice, _ = agents
    sid = alice_session
    password = "Ce" + stamp() + "Secr3t"
    alice.tool("navigate", sessionId=sid, url=pages.url + "/editable")
    ann = person(served, ALICE)
    pages.seen.clear()
    assert post(ann, f"/view/api/s/{sid}/takeover")[0] == 200
    act(ann, sid, *[typed(one) for one in password])
    digest = hashlib.sha256(password.encode()).hexdigest()
    assert wait_for(lambda: [digest] in [seen.get("sha") for seen in pages.seen], seconds=10)  # the page holds it
    assert post(ann, f"/view/api/s/{sid}/handback")[0] == 200
    time.sleep(HIDDEN_FOR_S + 0.5)
    alice.tool("tabs", sessionId=sid)  # a call: the hiding's time is up
    where = everything(served, agents, ann, sid)
    assert b'heading \\"Private notes\\"' in where["snapshot"], where["snapshot"]  # the snapshot was read
    assert b"/editable" in where["history"] and b"person_input" in where["history"]  # and the history
    assert leaked(where, password) == {}


# A field that keeps fewer characters than the person typed (a maxlength) holds a text no run was: it is learned
# (a part of what they typed), and the form sends it by GET.
def test_a_password_cut_short_by_the_fields_maxlength_is_nowhere(served, pages, agents, alice_session):
    password = "Ml" + stamp() + "Kept"  # the field keeps these 13 characters
    where = sent_by_person(served, pages, agents, alice_session, "/short", password, typed(password + "Cut off"),
                           key("Enter"), past_hiding=True)
    assert b"/echo" in where["network_logs"]
    assert leaked(where, password) == {}


# The field's text after a person's keys is learned as their secret (the typo fixed in the middle, above): a page
# that answers words of its choosing as that text must not get them scrubbed from the agent's answers.
# Made of the person's keys is not enough: a field holds at most one key fewer for each key that erased one.
@pytest.mark.parametrize("path,chosen,keys", [
    ("/getter", CHOSEN, [typed("ab"), key("Backspace"), typed("c")]),
    ("/setter", CHOSEN, [typed("ab"), key("Backspace"), typed("c")]),
    ("/subset", "Sword", [typed("xwordzq"), key("Backspace")]),
])
def test_a_page_cannot_have_words_of_its_choosing_learned_as_the_persons_secret(served, pages, agents,
                                                                               alice_session, path, chosen, keys):
    alice, _ = agents
    sid = alice_session
    alice.tool("navigate", sessionId=sid, url=pages.url + path)
    ann = person(served, ALICE)
    pages.seen.clear()
    assert post(ann, f"/view/api/s/{sid}/takeover")[0] == 200
    act(ann, sid, *keys)
    assert post(ann, f"/view/api/s/{sid}/handback")[0] == 200
    assert wait_for(lambda: {"read": [path[1:]]} in pages.seen, seconds=10)  # the page answered (positive control)
    shown = json.dumps(alice.tool("snapshot", sessionId=sid))
    assert f'heading \\"{chosen}\\"' in shown, shown


# An autocomplete that asks its server on each key puts each prefix, URL-encoded, in the network log: the
# prefixes are hidden as typed, not in their URL forms (only the whole password is known in all its forms).
def test_a_password_with_characters_that_url_encode_echoed_by_url_per_key_is_nowhere(served, pages, agents,
                                                                                     alice_session):
    password = "Gü " + stamp() + " ß&x"
    suggest_typed_by_person(served, pages, agents, alice_session, password, typed(password))


# Prefixes are hidden for one run: the next run (after a Tab, a click) hides its own and no longer the first's,
# so a page's echo of the password 2 s late comes unhidden when the person typed on within those 2 s.
def test_a_page_that_lists_each_keys_text_shows_no_prefix_in_the_snapshot(served, pages, agents, alice_session):
    alice, _ = agents
    sid = alice_session
    alice.tool("navigate", sessionId=sid, url=pages.url + "/listed")
    password = "Dm" + stamp() + "r#t"
    ann = person(served, ALICE)
    assert post(ann, f"/view/api/s/{sid}/takeover")[0] == 200
    act(ann, sid, typed(password))
    assert post(ann, f"/view/api/s/{sid}/handback")[0] == 200
    where = everything(served, agents, ann, sid)
    assert where["snapshot"].count(b"seen ") >= len(password)  # the list is there (positive control)
    assert leaked(where, password) == {}


# A call the agent queued before the take-over must not act after it, whatever it does to the page.
@pytest.mark.parametrize("tool,args", [
    ("type", {"selector": "#p", "text": "agent-typed"}),
    ("click", {"selector": "#go"}),
    ("press_key", {"key": "Enter"}),
], ids=["type", "click", "press_key"])
def test_a_queued_agent_action_does_not_act_after_the_take_over(served, pages, agents, alice_session, tool, args):
    alice, _ = agents
    sid = alice_session
    alice.tool("navigate", sessionId=sid, url=pages.url + "/form")
    second = SdkClient(served.url, token=ALICE)
    answers = {}
    ann = person(served, ALICE)
    pages.seen.clear()
    try:
        slow = threading.Thread(target=lambda: answers.update(slow=alice.call("wait_for", {
            "sessionId": sid, "text": "never on this page", "timeout": 3000})))
        slow.start()
        time.sleep(0.7)
        queued = threading.Thread(target=lambda: answers.update(queued=second.call(tool, {"sessionId": sid, **args})))
        queued.start()
        time.sleep(0.7)
        assert post(ann, f"/view/api/s/{sid}/takeover")[0] == 200
        slow.join(60)
        queued.join(60)
        late = answers["queued"]
        assert late.is_error and "SESSION_HELD_BY_PERSON" in late.content[0].text, late
        assert "never on this page" in answers["slow"].content[0].text
        assert post(ann, f"/view/api/s/{sid}/handback")[0] == 200
        page = json.dumps(alice.tool("snapshot", sessionId=sid))
        assert "agent-typed" not in page and not pages.seen
        # the same call after the hand-back acts (positive control)
        assert not second.call(tool, {"sessionId": sid, **args}).is_error
        done = lambda: pages.seen or "agent-typed" in json.dumps(alice.tool("snapshot", sessionId=sid))  # noqa: E731
        assert wait_for(done, seconds=10)
    finally:
        second.close()


# The decided behaviour, held: an echo 5 s late, while the agent reads its logs after the hand-back, shows no
# prefix (they stay hidden HIDDEN_FOR_S whatever calls start meanwhile).
def test_an_echo_5_s_late_while_the_agent_reads_shows_no_prefix(served, pages, agents, alice_session):
    alice, _ = agents
    sid = alice_session
    alice.tool("navigate", sessionId=sid, url=pages.url + "/late2?ms=5000")
    password = "Ek" + stamp() + "%2F y"
    ann = person(served, ALICE)
    assert post(ann, f"/view/api/s/{sid}/takeover")[0] == 200
    act(ann, sid, typed(password))
    assert post(ann, f"/view/api/s/{sid}/handback")[0] == 200
    for _ in range(6):  # the agent's calls, each clearing nothing it should not
        alice.tool("console_logs", sessionId=sid)
        alice.tool("snapshot", sessionId=sid)
        time.sleep(1)
    where = everything(served, agents, ann, sid)
    assert where["console_logs"].count(b"late:") >= len(password) - 4  # the echoes are there (positive control)
    assert leaked(where, password) == {}


# Held: one key a request (a slow typist), each run's text known whole in all its forms, echoed by URL per key.
def test_a_password_typed_key_by_key_echoed_by_url_per_key_is_nowhere(served, pages, agents, alice_session):
    password = "Kü " + stamp() + "&é"
    suggest_typed_by_person(served, pages, agents, alice_session, password, *[typed(c) for c in password])


# Held: Backspace fixes (the run follows them), then the form goes by GET with the fixed password.
def test_a_password_fixed_with_backspace_is_nowhere(served, pages, agents, alice_session):
    password = "Bk" + stamp() + "Secr3t"
    where = sent_by_person(served, pages, agents, alice_session, "/form", password, typed(password[:-2] + "xyz"),
                           *[key("Backspace")] * 3, typed(password[-2:]), key("Enter"))
    assert b"typed:" in where["console_logs"] and b"/echo" in where["network_logs"]
    assert leaked(where, password) == {}


# An agent typing a secret key by key (delay) is hidden the same way, and its next secret run replaces it too.
def test_an_agents_secret_typed_key_by_key_then_another_shows_no_late_prefix(served, pages, agents, alice_session):
    alice, _ = agents
    sid = alice_session
    alice.tool("navigate", sessionId=sid, url=pages.url + "/late2")
    password = "Ag" + stamp() + "v!k"
    alice.tool("type", sessionId=sid, selector="#p", text=password, secret=True, delay=10)
    alice.tool("type", sessionId=sid, selector="#o", text="42", secret=True, delay=10)
    time.sleep(3)
    ann = person(served, ALICE)
    where = everything(served, agents, ann, sid)
    assert where["console_logs"].count(b"late:") >= len(password) - 4  # positive control
    assert leaked(where, password) == {}


# A page that logs each key (not the field's text) tells the password a character a message: no prefix of 4
# stands in one entry, but the agent reads them in order.
@pytest.mark.xfail(strict=True, reason="known limit (docs/view.md): a page logging each keydown's key gives "
                   "the whole password, a character per console entry, in order (each too short to scrub)")
def test_a_page_that_logs_each_key_does_not_spell_the_password(served, pages, agents, alice_session):
    alice, _ = agents
    sid = alice_session
    alice.tool("navigate", sessionId=sid, url=pages.url + "/keys")
    password = "Ch" + stamp() + "x?z"
    ann = person(served, ALICE)
    assert post(ann, f"/view/api/s/{sid}/takeover")[0] == 200
    act(ann, sid, typed(password))
    assert post(ann, f"/view/api/s/{sid}/handback")[0] == 200
    entries = alice.tool("console_logs", sessionId=sid)["entries"]
    keys = [e["message"][4:] for e in entries if e["message"].startswith("key:")]
    assert len(keys) >= len(password)  # each key was logged (positive control)
    assert password not in "".join(keys)


# A page that logs its state as JSON escapes a quote: the prefixes are hidden raw, not in their JSON form.
def test_a_password_with_a_quote_logged_as_json_per_key_shows_no_prefix(served, pages, agents, alice_session):
    alice, _ = agents
    sid = alice_session
    alice.tool("navigate", sessionId=sid, url=pages.url + "/state")
    password = 'Js"' + stamp() + "\\qw"
    ann = person(served, ALICE)
    assert post(ann, f"/view/api/s/{sid}/takeover")[0] == 200
    act(ann, sid, typed(password))
    assert post(ann, f"/view/api/s/{sid}/handback")[0] == 200
    entries = alice.tool("console_logs", sessionId=sid)["entries"]
    states = [e["message"][6:] for e in entries if e["message"].startswith("state:")]
    assert len(states) >= len(password) - 1  # each key was logged (positive control)
    shown = [json.loads(text)["v"] for text in states if text.startswith('{"v":') and text.endswith('"}')]
    assert [v for v in shown if len(v) >= 4 and password.startswith(v)] == []


# The title is no log: the hidden prefixes do not reach it, and the agent reads it in list_sessions while it moves.
def test_a_title_following_the_field_late_shows_no_prefix(served, pages, agents, alice_session):
    alice, _ = agents
    sid = alice_session
    alice.tool("navigate", sessionId=sid, url=pages.url + "/titled")
    password = "Tt" + stamp() + "k"
    ann = person(served, ALICE)
    assert post(ann, f"/view/api/s/{sid}/takeover")[0] == 200
    act(ann, sid, typed(password))
    assert post(ann, f"/view/api/s/{sid}/handback")[0] == 200
    seen = []
    until = time.monotonic() + 0.5 + 0.3 * len(password) + 1.5
    while time.monotonic() < until:
        seen.append(json.dumps(alice.tool("list_sessions")))
        seen.append(json.dumps(alice.tool("snapshot", sessionId=sid)))
        time.sleep(0.1)  # an agent's pace, inside the server's 600 requests a minute for one client
    titles = "".join(seen).encode()
    assert titles.count(b"title:") >= 10  # the agent saw the title move (positive control)
    assert leaks(titles, password) == []
