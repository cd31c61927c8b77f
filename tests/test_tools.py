"""End to end: every tool and its error codes, through the official MCP client, real Chromium, local pages."""

import json
import socket
import uuid

import pytest
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.smoke


def test_initialize_describes_server_and_sessions(client):
    init = client.init
    assert init.server_info.name == "mcpbrowser"
    assert init.capabilities.tools is not None and init.capabilities.logging is not None
    assert "create_session" in init.instructions and "sessionId" in init.instructions


def test_every_tool_is_declared_with_schema_title_and_annotations(client):
    listed = client.run("list_tools").tools
    assert {t.name for t in listed} == {
        "create_session", "close_session", "list_sessions", "navigate", "go_back", "go_forward",
        "reload", "tabs", "wait_for", "click", "type", "select", "hover", "press_key", "handle_dialog",
        "snapshot", "dom_snapshot", "screenshot", "console_logs", "network_logs", "get_content",
        "get_console_content", "resume_session", "wait_for_user", "save_state", "saved_states", "downloads",
        "drag", "fill_form", "resize", "mouse", "pdf", "trace_start", "trace_stop", "throttle",
        "export_script", "measure_performance", "measure_memory", "compare_performance", "route", "unroute",
        "cookies", "storage", "page_tools"}  # --caps all (support.py)
    for tool in listed:
        assert tool.title and tool.description
        assert tool.input_schema["type"] == "object"
        if "sessionId" in tool.input_schema["properties"]:
            assert next(iter(tool.input_schema["properties"])) == "sessionId"  # it comes first
            # A session tool's may be left out (the client's one open session); a core tool's is required.
            required = tool.input_schema.get("required", [])
            assert "sessionId" not in required or required[0] == "sessionId", tool.name
        assert tool.annotations.read_only_hint is not None
        assert tool.annotations.destructive_hint is not None
        assert tool.output_schema is not None
    by_name = {t.name: t for t in listed}
    assert by_name["list_sessions"].annotations.read_only_hint is True
    assert by_name["close_session"].annotations.destructive_hint is True


def test_navigate_returns_title_final_url_and_status(client, session, pages):
    result = client.call("navigate", {"sessionId": session, "url": pages.url("/redirect?to=/title/Landed")})
    assert not result.is_error
    out = result.structured_content
    assert {k: out[k] for k in ("success", "title", "url", "status")} == {
        "success": True, "title": "Landed", "url": pages.url("/title/Landed"), "status": 200}


def test_loading_tools_report_the_title_the_page_ended_with(client, session, pages):
    """Titles of loaded pages come from the browser's record of the tab (see SessionState.loaded_title)."""
    def title(tool="navigate", **args):
        return client.tool(tool, sessionId=session, **args)["title"]

    assert title(url=pages.url("/untitled")) == ""
    assert title(url=pages.url("/scripted-title")) == "Two words and script"
    # Another site: on Chromium a new renderer process, which the title must follow.
    assert title(url=pages.url("/title/Elsewhere").replace("127.0.0.1", "localhost")) == "Elsewhere"
    assert title("go_back") == "Two words and script"
    assert title("go_forward") == "Elsewhere"
    assert title("reload") == "Elsewhere"
    opened = client.tool("navigate", sessionId=session, url=pages.url("/alert-on-load"))
    assert opened["dialog"]["message"] == "on load"
    assert opened["title"] == "Alerting"  # read without JavaScript, which the dialog blocks
    client.tool("handle_dialog", sessionId=session, accept=True)


def test_navigate_reports_http_errors_as_status(client, session, pages):
    out = client.tool("navigate", sessionId=session, url=pages.url("/missing"), waitUntil="domcontentloaded")
    assert out["status"] == 404 and out["title"] == "Not found"


def test_navigate_to_unreachable_host_is_navigation_failed(client, session):
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    err = client.error("navigate", sessionId=session, url=f"http://127.0.0.1:{port}/")
    assert err["errorCode"] == "NAVIGATION_FAILED"
    assert "ERR_CONNECTION_REFUSED" in err["message"]


def test_navigate_timeout_is_navigation_failed(client, session, pages):
    err = client.error("navigate", sessionId=session, url=pages.url("/slow?ms=2000"), timeout=300)
    assert err["errorCode"] == "NAVIGATION_FAILED" and "Timeout" in err["message"]


@pytest.mark.parametrize("arguments, problem", [
    ({"url": "/relative"}, "absolute"),
    ({"url": 42}, "arguments.url must be string"),
    ({}, "arguments.url is required"),
    ({"url": "http://x", "waitUntil": "soon"}, "must be one of"),
    ({"url": "http://x", "timeout": 0}, "must be >= 1"),  # Playwright's 0 is no timeout at all
    ({"url": "http://x", "bogus": 1}, "not a known argument"),
])
def test_bad_arguments_are_invalid_parameters_before_browser_work(client, session, arguments, problem):
    err = client.error("navigate", sessionId=session, **arguments)
    assert err["errorCode"] == "INVALID_PARAMETERS"
    assert problem in err["message"]


def test_type_then_click_changes_the_page(client, session, pages):
    client.tool("navigate", sessionId=session, url=pages.url("/form"))
    assert client.tool("type", sessionId=session, selector="#name", text="Ada")["success"] is True
    clicked = client.tool("click", sessionId=session, selector="#go")
    assert (clicked["success"], clicked["message"]) == (True, "Clicked #go")
    assert client.tool("snapshot", sessionId=session)["title"] == "Hello Ada"


def test_a_click_whose_page_answers_slowly_is_done_once_and_reported_done(client, session, pages):
    """Playwright waits after the click for the navigation it started; past the 1 s find grace
    that wait times out. The click happened: it must not be reported as ELEMENT_NOT_CLICKABLE,
    which would make an agent click (and submit) again."""
    target = pages.url("/slow?ms=1800&from=click-once")
    client.tool("navigate", sessionId=session, url=f'data:text/html,<a id="go" href="{target}">go</a>')
    clicked = client.tool("click", sessionId=session, selector="#go")
    assert clicked["success"] is True and clicked["url"] == target, clicked
    assert pages.hits.count("/slow?ms=1800&from=click-once") == 1


def test_a_click_whose_handler_runs_long_is_done_once_and_reported_done(client, session, pages):
    """The click's handler runs 1.5 s (past the 1 s find grace) before the page answers again: Playwright's
    call log says the click was performed. It must not be clicked a second time, nor called not clickable."""
    busy = ("<title>Busy</title><button id=b onclick=\"const end = Date.now() + 1500; while (Date.now() < end) {} "
            "this.dataset.n = (+this.dataset.n || 0) + 1; document.title = 'clicked ' + this.dataset.n\">B</button>")
    client.tool("navigate", sessionId=session, url="data:text/html," + busy)
    clicked = client.tool("click", sessionId=session, selector="#b")
    assert clicked["success"] is True and clicked["title"] == "clicked 1", clicked
    assert "pageUnresponsive" not in clicked


def test_a_click_that_opens_a_tab_says_so_and_tabs_finds_it_at_once(client, session, pages):
    """A target=_blank link and window.open: each click's answer lists the new tab (its page event may come
    after the click and the settle), so that a tabs select right after finds it; ten times each."""
    client.tool("navigate", sessionId=session, url=pages.url("/popup"))
    for round_ in range(10):
        for selector, title in (("#open", "Popped"), ("#win", "Window")):
            clicked = client.tool("click", sessionId=session, selector=selector)
            assert clicked.get("newTabs") == 1 and "1 new tab" in clicked["message"], (round_, clicked)
            shown = client.tool("tabs", sessionId=session, action="select", index=1)
            assert shown["current"] == 1 and shown["tabs"][1]["url"].endswith("/title/" + title), (round_, shown)
            closed = client.tool("tabs", sessionId=session, action="close")
            assert len(closed["tabs"]) == 1 and closed["tabs"][0]["title"] == "Opener"


def test_a_form_a_formtarget_and_a_base_target_that_open_a_tab_are_told_as_a_link_is(client, session, pages):
    """tools.md, new tabs: a form that targets a new window opens one as a target=_blank link does, and so do a
    button's formtarget and a page's <base target> (its links and its forms): each click's answer lists the new tab,
    which a tabs select right after finds; three times each (the page event may come after the settle)."""
    for page, selector, title in (("/popup-forms", "#form", "FormTab"), ("/popup-forms", "#formtarget", "FormTarget"),
                                  ("/popup-base", "#link", "BaseTab"), ("/popup-base", "#form", "BaseForm")):
        client.tool("navigate", sessionId=session, url=pages.url(page))
        for round_ in range(3):
            clicked = client.tool("click", sessionId=session, selector=selector)
            assert clicked.get("newTabs") == 1 and "1 new tab" in clicked["message"], (selector, round_, clicked)
            shown = client.tool("tabs", sessionId=session, action="select", index=1)
            assert f"/title/{title}" in shown["tabs"][1]["url"], (selector, round_, shown)
            closed = client.tool("tabs", sessionId=session, action="close")
            assert len(closed["tabs"]) == 1, closed


def test_an_svg_link_to_its_own_page_waits_for_no_tab(client, session, pages):
    """tools.md: an action that opened no tab waits for none. An SVG link's `target` is no string (an
    SVGAnimatedString): read as one, it aimed every SVG link at another window, and a click on one that stays on
    its page (a chart's, an icon's) waited 2 s (POPUP_WAIT_S) for a tab that never came."""
    import time

    client.tool("navigate", sessionId=session, url=pages.url("/popup-forms"))
    for round_ in range(2):
        started = time.monotonic()
        clicked = client.tool("click", sessionId=session, selector="#svg")
        took = time.monotonic() - started
        assert "newTabs" not in clicked and clicked["url"].endswith("#end"), clicked
        assert took < 1.8, (round_, took)  # a click here takes 0.05 s; waiting for a tab, POPUP_WAIT_S (2 s) more


def test_type_clear_false_appends_and_delay_types_keys(client, session, pages):
    client.tool("navigate", sessionId=session, url=pages.url("/form"))
    client.tool("type", sessionId=session, selector="#name", text="Ada")
    client.tool("type", sessionId=session, selector="#name", text=" L", clear=False, delay=5)
    client.tool("click", sessionId=session, selector="#go")
    assert client.tool("snapshot", sessionId=session)["title"] == "Hello Ada L"


def test_xpath_selector_and_click_count(client, session, pages):
    client.tool("navigate", sessionId=session, url=pages.url("/form"))
    client.tool("click", sessionId=session, selector="//button[@id='count']", clickCount=2)
    client.tool("click", sessionId=session, selector="(//button)[last()]")
    assert client.tool("snapshot", sessionId=session)["title"] == "count 3"


def test_element_errors_have_distinct_codes(client, session, pages):
    client.tool("navigate", sessionId=session, url=pages.url("/form"))
    missing = client.error("click", sessionId=session, selector="#nope", timeout=300)
    assert missing["errorCode"] == "ELEMENT_NOT_FOUND" and "#nope" in missing["message"]
    # Long enough for Playwright's call log to say why, even on a loaded machine.
    disabled = client.error("click", sessionId=session, selector="#off", timeout=1500)
    assert disabled["errorCode"] == "ELEMENT_NOT_CLICKABLE" and "not enabled" in disabled["message"]
    hidden = client.error("click", sessionId=session, selector="#hidden", timeout=1500)
    assert hidden["errorCode"] == "ELEMENT_NOT_CLICKABLE" and "not visible" in hidden["message"]
    plain = client.error("type", sessionId=session, selector="#plain", text="x", timeout=300)
    assert plain["errorCode"] == "ELEMENT_NOT_EDITABLE"
    locked = client.error("type", sessionId=session, selector="#disabled", text="x", timeout=300)
    assert locked["errorCode"] == "ELEMENT_NOT_EDITABLE"
    locked_append = client.error("type", sessionId=session, selector="#disabled", text="x",
                                 clear=False, timeout=300)
    assert locked_append["errorCode"] == "ELEMENT_NOT_EDITABLE"
    typo = client.error("type", sessionId=session, selector="#nope", text="x", timeout=300)
    assert typo["errorCode"] == "ELEMENT_NOT_FOUND"
    syntax = client.error("click", sessionId=session, selector="###", timeout=300)
    assert syntax["errorCode"] == "INVALID_PARAMETERS"


def test_force_click_skips_actionability(client, session, pages):
    client.tool("navigate", sessionId=session, url=pages.url("/form"))
    assert client.tool("click", sessionId=session, selector="#off", force=True, timeout=1000)["success"]


def test_list_sessions_shows_url_title_and_times(client, session, pages):
    navigated = client.tool("navigate", sessionId=session, url=pages.url("/title/Listed"))
    client.tool("get_content", ref_id=navigated["refId"])  # returns once the after-call capture is done
    entry = next(s for s in client.tool("list_sessions")["sessions"] if s["sessionId"] == session)
    assert entry["url"] == pages.url("/title/Listed") and entry["title"] == "Listed"
    # The navigate renewed the session: 300 s from that call (session-less calls renew nothing).
    assert entry["expiresAt"] == navigated["expiresAt"] and entry["busy"] is False
    assert 300_000 <= entry["expiresAt"] - entry["createdAt"] < 360_000


def test_create_and_close_session(client):
    created = client.tool("create_session")
    assert uuid.UUID(created["sessionId"]).version == 4
    assert created["expiresAt"] > 0 and "close_session" in created["message"]
    closed = client.tool("close_session", sessionId=created["sessionId"])
    assert closed["success"] is True
    assert created["sessionId"] not in {s["sessionId"] for s in client.tool("list_sessions")["sessions"]}
    for tool, extra in (("navigate", {"url": "http://x"}), ("close_session", {})):
        err = client.error(tool, sessionId=created["sessionId"], **extra)
        assert err["errorCode"] == "SESSION_NOT_FOUND"


def test_unknown_session_id_is_session_not_found(client):
    err = client.error("click", sessionId=str(uuid.uuid4()), selector="#go")
    assert err["errorCode"] == "SESSION_NOT_FOUND" and "create_session" in err["message"]


def test_unknown_tool_is_a_protocol_error(client):
    with pytest.raises(MCPError) as raised:
        client.call("no_such_tool", {})
    assert raised.value.error.code == -32602


def test_error_text_is_the_seed_error_object(client):
    result = client.call("click", {"sessionId": "nope", "selector": "#x"})
    assert result.is_error
    assert set(json.loads(result.content[0].text)) <= {"errorCode", "message", "sessionId", "details",
                                                        "refId", "meta"}
