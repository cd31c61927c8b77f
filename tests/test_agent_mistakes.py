"""An agent's mistakes, through the official client: each answer says what went wrong and what to
do next, costs few characters, and the agent's next, corrected call just works."""

import json
import socket
import time

import pytest
from mcp.shared.exceptions import MCPError
from support import HtmlSite, HttpServer, SdkClient, wait_for
from test_view import ALICE, Web

pytestmark = pytest.mark.e2e


def refused_url():
    """An address on 127.0.0.1 where nothing listens (a port just freed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/"


def error_text(client, name, **arguments):
    """What the model reads of a call that must fail, and its error object."""
    result = client.call(name, arguments)
    text = result.content[0].text
    assert result.is_error, text
    return text, json.loads(text)


def test_a_navigation_after_two_failed_ones_in_a_row_just_works(client, session, pages):
    """Two mistyped addresses in a row, then the right one: the second failure's error page
    commits after its answer (the tab showed the first one's already), and it interrupted the
    corrected navigation ("interrupted by another navigation to chrome-error://chromewebdata/")."""
    for attempt in range(4):
        for _ in range(2):
            _, err = error_text(client, "navigate", sessionId=session, url=refused_url())
            assert err["errorCode"] == "NAVIGATION_FAILED" and "ERR_CONNECTION_REFUSED" in err["message"]
        ok = client.tool("navigate", sessionId=session, url=pages.url(f"/title/fixed{attempt}"))
        assert ok["title"] == f"fixed{attempt}"


def test_an_error_quotes_what_the_agent_sent_once(client, session, pages):
    """The address, the ref, the refId and what a wait waited for: each was in the message, and again
    in details (the address three times: Playwright's reason ends with it too)."""
    bad = refused_url()
    text, err = error_text(client, "navigate", sessionId=session, url=bad)
    assert err["errorCode"] == "NAVIGATION_FAILED" and "net::ERR_CONNECTION_REFUSED" in err["message"]
    assert text.count(bad) == 2, text  # the message's and details.url (documented, so it stays)
    client.tool("navigate", sessionId=session, url=pages.url("/form"))
    text, err = error_text(client, "click", sessionId=session, ref="e99")
    assert err["errorCode"] == "ELEMENT_NOT_FOUND" and "snapshot" in err["message"], text
    assert "Ref e99 " in err["message"] and "details" not in err, text  # (a refId's hex may hold "e99")
    text, err = error_text(client, "get_content", ref_id=session)  # a sessionId where a refId belongs
    assert err["errorCode"] == "CONTENT_NOT_FOUND" and text.count(session) == 1, text
    text, err = error_text(client, "wait_for", sessionId=session, text="Never here", timeout=300)
    assert err["errorCode"] == "WAIT_TIMEOUT" and text.count("Never here") == 1, text
    assert (err["details"]["matched"], err["details"]["visible"]) == (0, 0)  # documented: they stay


def test_a_wrong_selector_is_told_once(client, session, pages):
    """The commonest mistake: the message says what matched nothing, how long it waited and what to
    do; Playwright's line said it again ("Timeout 1000ms exceeded.", or 'Selector "#nope >> nth=0"
    does not match any element', our own locator's words)."""
    client.tool("navigate", sessionId=session, url=pages.url("/form"))
    client.tool("snapshot", sessionId=session, depth=1)  # the page's late console lines land here
    for tool, arguments, said in (("click", {"selector": "#nope"}, "waited 1000 ms"),
                                  ("type", {"selector": "#nope", "text": "x", "timeout": 300}, "waited 300 ms"),
                                  ("snapshot", {"selector": "#nope"}, "No element matches #nope")):
        text, err = error_text(client, tool, sessionId=session, **arguments)
        assert err["errorCode"] == "ELEMENT_NOT_FOUND" and said in err["message"], text
        assert "snapshot" in err["message"] and set(err) == {"errorCode", "message", "refId"}, text


def test_an_option_that_does_not_exist_is_answered_with_the_ones_that_do(client, session, pages):
    """The answer was Playwright's "Timeout 3987ms exceeded. (did not find some options)": the agent
    had to read the page again to learn what it could choose."""
    client.tool("navigate", sessionId=session, url=pages.url("/widgets"))
    text, err = error_text(client, "select", sessionId=session, selector="#fruit", values=["Kiwi"])
    assert err["errorCode"] == "INVALID_PARAMETERS" and "#fruit" in err["message"], text
    assert "it has: Apple, Banana, Cherry (" in err["message"] and "Timeout" not in text, text
    assert client.tool("select", sessionId=session, selector="#fruit", values=["Banana"])["title"] == "fruit=b"


def test_a_missing_option_is_told_after_the_grace_as_a_missing_element_is(client, session):
    """An option that is not there held the call the whole action timeout (5 s: Playwright waits for
    late options): now it is told after the grace, as an element that is not there, with the options
    the list has; a list that fills itself later is waited for when the call gives its `timeout`."""
    site = HtmlSite(lambda url: "<title>Late</title><select id=s><option>Early</option></select><script>"
                                "setTimeout(() => s.add(new Option('Late')), 3500)</script>")
    try:
        client.tool("navigate", sessionId=session, url=site.url + "/")
        text, err = error_text(client, "select", sessionId=session, selector="#s", values=["Late"])
        assert err["errorCode"] == "INVALID_PARAMETERS" and "it has: Early" in err["message"], text
        assert "timeout" in err["message"], text  # how to wait for a list that fills later
        client.tool("navigate", sessionId=session, url=site.url + "/")
        chosen = client.tool("select", sessionId=session, selector="#s", values=["Late"], timeout=10_000)
        assert chosen["selected"] == ["Late"], chosen
    finally:
        site.close()


def test_a_misspelt_tool_is_answered_with_the_one_meant(client):
    """"Unknown tool: clik" left the agent to read the tool list again. Only a typo is answered: a name
    of another meaning is not (a wrong guess costs more than none)."""
    for wrong, meant in (("clik", "click"), ("snapshots", "snapshot"), ("navigte", "navigate")):
        with pytest.raises(MCPError) as refused:
            client.call(wrong, {"sessionId": "x"})
        assert refused.value.error.code == -32602
        assert refused.value.error.message == f"Unknown tool: {wrong}; did you mean {meant}?"
    for wrong in ("teleport", "new_session", "execute_script", "browser_snapshot"):
        with pytest.raises(MCPError) as refused:
            client.call(wrong, {})
        assert refused.value.error.message == f"Unknown tool: {wrong}"


def test_an_action_behind_a_dialog_quotes_the_dialog_as_it_reads(client, session, pages):
    """The message lowercased the dialog's own text (str.capitalize): "('hello there')" for
    "Hello there"; a code in a dialog would have read wrong."""
    client.tool("navigate", sessionId=session, url=pages.url("/dialogs"))
    client.tool("click", sessionId=session, selector="#alert")
    text, err = error_text(client, "click", sessionId=session, selector="#confirm")
    assert err["errorCode"] == "DIALOG_OPEN" and "handle_dialog" in err["message"], text
    assert err["message"].startswith("An alert dialog ('Hello there') is open"), text
    assert "details" not in err, text  # its type and text are told once, in the message; an alert has no default
    client.tool("handle_dialog", sessionId=session, accept=True)
    assert client.tool("click", sessionId=session, selector="#confirm")["success"]


def test_an_action_on_a_session_a_person_holds_says_how_to_wait_for_them(tmp_path, pages):
    """SESSION_HELD_BY_PERSON says "or call wait_for_user": with the logins group off (the default)
    that call answered TOOL_NOT_ENABLED, and the agent learned the way only at its third call."""
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {ALICE}\n")
    server = HttpServer("--http-token-file", str(tokens), "--view", "http", "--caps", "")
    agent = SdkClient(server.url, token=ALICE)
    try:
        sid = agent.tool("create_session", url=pages.url("/form"))["sessionId"]
        person = Web(server.base)
        person.sign_in(ALICE)
        post = {"Origin": server.base, "X-CSRF-Token": person.csrf()}
        assert person.request(f"/view/api/s/{sid}/takeover", b"{}", post)[0] == 200
        held = agent.error("click", sessionId=sid, selector="#go")
        assert held["errorCode"] == "SESSION_HELD_BY_PERSON" and held["details"] == {"heldBy": "alice"}
        assert "wait_for_user (in the logins tool group: enable_tools turns it on)" in held["message"], held
        agent.tool("enable_tools", groups=["logins"])
        held = agent.error("click", sessionId=sid, selector="#go")
        assert "wait_for_user." in held["message"] and "enable_tools" not in held["message"], held
        assert person.request(f"/view/api/s/{sid}/handback", b"{}", post)[0] == 200
        assert agent.tool("click", sessionId=sid, selector="#go")["success"]
    finally:
        agent.close()
        server.close()


def test_typing_or_selecting_on_the_wrong_kind_of_element_says_what_to_do(client, session, pages):
    """Playwright's words ("Error: Element is not an <input>, <textarea>, <select> or [contenteditable]
    and does not have a role allowing [aria-readonly]") said what was wrong, not where to type; a
    select on a list made of divs (the common custom dropdown) is done by clicks."""
    client.tool("navigate", sessionId=session, url=pages.url("/form"))
    text, err = error_text(client, "type", sessionId=session, selector="#plain", text="x", timeout=300)
    assert err["errorCode"] == "ELEMENT_NOT_EDITABLE" and "snapshot" in err["message"], text
    assert "aria-readonly" not in text and len(err["message"]) < 120, text
    client.tool("navigate", sessionId=session, url=pages.url("/widgets"))
    text, err = error_text(client, "select", sessionId=session, selector="#hoverme", values=["a"], timeout=300)
    assert err["errorCode"] == "ELEMENT_NOT_EDITABLE" and "click" in err["message"], text


@pytest.mark.parametrize("caps", ["", "logins"])
def test_a_login_wall_names_enable_tools_only_when_wait_for_user_is_off(make_client, pages, caps):
    """The cooldown's messages told every client "wait_for_user (in the logins tool group: enable_tools
    turns it on)", a client with the group on too: a needless call, and 50 characters on each refusal."""
    c = make_client("--caps", caps, "--login-cooldown", "60")
    sid = c.tool("create_session", url=pages.url("/captcha"))["sessionId"]
    _, tripped = error_text(c, "wait_for", sessionId=sid, text="Welcome back", timeout=500)
    _, paused = error_text(c, "click", sessionId=sid, selector="#continue")
    assert (tripped["errorCode"], paused["errorCode"]) == ("LOGIN_TIMEOUT", "COOLDOWN_ACTIVE")
    for err in (tripped, paused):
        assert "wait_for_user" in err["message"] and ("enable_tools" in err["message"]) is (caps == ""), err


def test_the_browsers_own_favicon_request_is_not_the_pages_console_error(make_client, pages):
    """A page without /favicon.ico: Chromium's 404 for the icon it asks for by itself came in after
    the load's answer, so the agent's next call, an error too, carried meta with consoleErrorCount 1
    (90 characters), inviting a console_logs call to read a line about nothing the page did.
    The whole browser's (a headed server's): the headless shell, which a headless one runs, asks for no icon."""
    from mcpbrowser.core.browser_process import find_executable

    client = make_client("--executable-path", find_executable("chromium"))
    session = client.tool("create_session")["sessionId"]
    client.tool("navigate", sessionId=session, url=pages.url("/logs"))
    assert wait_for(lambda: "/favicon.ico" in pages.hits, seconds=10)  # the request the test is about
    client.tool("wait_for", sessionId=session, selector="#more")
    entries = client.tool("console_logs", sessionId=session)["entries"]
    assert any(e["message"] == "broken thing" for e in entries)  # positive control: the page's own error
    assert not any("favicon" in e.get("location", "") for e in entries), entries
    client.tool("navigate", sessionId=session, url=pages.url("/title/quiet"))
    time.sleep(0.5)  # its icon's 404 comes in meanwhile
    _, err = error_text(client, "click", sessionId=session, selector="#nope")
    assert err["errorCode"] == "ELEMENT_NOT_FOUND" and "meta" not in err, err


def test_get_content_of_an_elements_ref_says_it_takes_a_calls_refid(client, session, pages):
    """ref (an element's, from a snapshot) and refId (a call's, from any answer) are near names:
    "No call has refId 'e5'." did not say which one the agent had mixed up."""
    client.tool("navigate", sessionId=session, url=pages.url("/form"))
    snap = client.tool("snapshot", sessionId=session)
    ref = snap["snapshot"].split("[ref=")[1].split("]")[0]
    for wrong in (ref, "f1e2"):
        text, err = error_text(client, "get_content", ref_id=wrong)
        assert err["errorCode"] == "CONTENT_NOT_FOUND" and "element's ref" in err["message"], text
        assert "refId" in err["message"] and len(err["message"]) < 130, text
    text, err = error_text(client, "get_content", ref_id="0" * 32)  # a refId that is not stored: as before
    assert err["message"] == f"No call has refId {'0' * 32!r}.", text
    assert client.tool("get_content", ref_id=snap["refId"])["content"]  # the refId the answer gave


def test_an_element_that_cannot_be_clicked_yet_says_what_to_do(client, session, pages):
    """"#hidden matched 1 element(s) but the first is not usable: Timeout 300ms exceeded. (element is
    not visible)" said why, not what next: the agent clicked again, or gave up."""
    client.tool("navigate", sessionId=session, url=pages.url("/form"))
    for selector, next_step in (("#hidden", "wait_for it"), ("#off", "Disabled until")):
        # 1.5 s: under load, 300 ms ran out before Playwright's log said why (no reason, no next step).
        text, err = error_text(client, "click", sessionId=session, selector=selector, timeout=1500)
        assert err["errorCode"] == "ELEMENT_NOT_CLICKABLE" and next_step in err["message"], text


def test_the_page_text_an_error_quotes_is_scrubbed_of_secrets(client, session):
    """An option's label or a dialog's text is the page's, in an error, which the scrubbing of answers
    did not reach: a page that shows what was typed into its password field showed it to the agent."""
    site = HtmlSite(lambda url: "<title>Echo</title><input type=password id=pw "
                                "oninput=\"document.getElementById('s').innerHTML = '<option>' + this.value + "
                                "'</option><option>Other</option>'\"><select id=s></select>"
                                "<button id=tell onclick=\"alert('You typed ' + pw.value)\">Tell</button>")
    try:
        client.tool("navigate", sessionId=session, url=site.url + "/")
        client.tool("type", sessionId=session, selector="#pw", text="Hunter-Secret-42")
        text, err = error_text(client, "select", sessionId=session, selector="#s", values=["Kiwi"])
        assert err["errorCode"] == "INVALID_PARAMETERS" and "Other" in err["message"], text  # the options' list
        assert "Hunter-Secret-42" not in text and "[REDACTED]" in err["message"], text
        client.tool("click", sessionId=session, selector="#tell")
        text, err = error_text(client, "click", sessionId=session, selector="#tell")
        assert err["errorCode"] == "DIALOG_OPEN" and "You typed" in err["message"], text
        assert "Hunter-Secret-42" not in text and "[REDACTED]" in err["message"], text
    finally:
        site.close()


def test_a_select_whose_change_opens_a_dialog_says_what_it_selected(client, session):
    """A <select> whose onchange opens an alert answered "Selected nothing": the option was chosen (the
    alert says so) and an agent told nothing was would choose it again, and change it twice."""
    options = "<option value=s>Small</option><option value=m>Medium</option></select>"
    site = HtmlSite(lambda url: "<!doctype html><title>Size</title><select id=size onchange=\"alert('now '"
                    f" + this.value)\">{options}<select id=plain>{options}")
    try:
        client.tool("navigate", sessionId=session, url=site.url + "/")
        answer = client.tool("select", sessionId=session, selector="#size", values=["m"])
        assert "alert dialog opened ('now m')" in answer["message"], answer  # the dialog interrupted it
        assert answer["selected"] == ["m"] and answer["message"].startswith("Selected m in #size"), answer
        client.tool("handle_dialog", sessionId=session, accept=True)
        plain = client.tool("select", sessionId=session, selector="#plain", labels=["Small"])  # no dialog:
        assert plain["selected"] == ["s"] and plain["message"] == "Selected s in #plain", plain  # Playwright's list
    finally:
        site.close()
