"""script_export on rows as the history holds them: locators from snapshots, secrets, options. No browser.

The e2e proof that an exported test runs is test_export_script.py; these pin the cases its one
session does not reach (duplicates, iframes, secrets in URLs, named secrets, fill_form, logins).
"""

import os
import re

import pytest

from mcpbrowser import snapshot_text
from mcpbrowser.core import script_export
from mcpbrowser.core.script_export import build, locator_for, parse_snapshot

pytestmark = pytest.mark.unit

SNAPSHOT = """- generic [active] [ref=e1]:
  - link "Docs" [ref=e2] [cursor=pointer]:
    - /url: /docs
  - link "Docs index" [ref=e3]
  - button "Save" [ref=e4]
  - button "Save" [ref=e5]
  - textbox [ref=e6]
  - textbox "Email" [ref=e7]: a@b.c
  - paragraph [ref=e8]: Going away
  - 'button "Say: \\"hi\\"" [ref=e9]'
  - paragraph [ref=e11]: "Price: 5 \\"net\\""
  - iframe [ref=e10]:
    - button "Inner" [ref=f1e2]
"""


def _call(tool, args, result=None, status="ok", page=None, ref="r"):
    return (ref, tool, {"sessionId": "s", **args}, status, result if status == "ok" else None,
            page.encode() if page else None)


def _body(calls, **kwargs):
    source, script = build(calls, "abcdef12-3456", {"browser": "chromium", **kwargs.pop("metadata", {})}, **kwargs)
    compile(source, "exported.py", "exec")
    for module in re.findall(r"^import (\w+)$", source, re.M):  # every import is used, as a linter would ask
        assert re.search(rf"(?<![\w.]){module}\.\w", source), module
    return source, script


def test_a_ref_becomes_the_role_and_name_its_snapshot_gave_it():
    elements = parse_snapshot(SNAPSHOT)
    assert locator_for(elements, "e3") == 'page.get_by_role("link", name="Docs index")'
    # "Docs" is part of "Docs index", which get_by_role would match too.
    assert locator_for(elements, "e2") == 'page.get_by_role("link", name="Docs", exact=True)'
    assert locator_for(elements, "e5") == 'page.get_by_role("button", name="Save").nth(1)'
    assert locator_for(elements, "e6") == 'page.get_by_role("textbox").nth(0)'  # no name: which of the textboxes
    assert locator_for(elements, "e7") == 'page.get_by_role("textbox", name="Email")'
    assert locator_for(elements, "e8") == 'page.get_by_text("Going away", exact=True)'
    assert locator_for(elements, "e9") == 'page.get_by_role("button", name="Say: \\"hi\\"")'
    assert locator_for(elements, "f1e2") == 'page.frame_locator("iframe").nth(0).get_by_role("button", name="Inner")'
    assert locator_for(elements, "e11") == 'page.get_by_text("Price: 5 \\"net\\"", exact=True)'
    assert locator_for(elements, "e99") is None


def test_a_locators_exact_and_nth_are_decided_as_playwright_matches_names():
    """export.md: `exact=True` where another name contains this one (get_by_role ignores case, so "docs" is in
    "Docs index"); `.nth(i)` counts the elements of the ref's own frame only (a frame_locator scopes the match)."""
    elements = parse_snapshot("""- generic [ref=e1]:
  - link "docs" [ref=e2]
  - link "Docs index" [ref=e3]
  - iframe [ref=e4]:
    - button "Save" [ref=f1e1]
  - button "Save" [ref=e5]
""")
    assert locator_for(elements, "e2") == 'page.get_by_role("link", name="docs", exact=True)'
    assert locator_for(elements, "e5") == 'page.get_by_role("button", name="Save")'
    assert locator_for(elements, "f1e1") == 'page.frame_locator("iframe").nth(0).get_by_role("button", name="Save")'


def test_every_expect_waits_5000_ms_unless_the_environment_says_otherwise():
    """export.md: every `expect` waits MCPBROWSER_EXPECT_TIMEOUT ms, 5000 by default."""
    source, _ = _body([_call("navigate", {"url": "http://x.test/"}, {"url": "http://x.test/", "title": "X"})])
    assert 'expect.set_options(timeout=int(os.environ.get("MCPBROWSER_EXPECT_TIMEOUT", "5000")))' in source


def test_the_snapshot_a_ref_came_from_is_the_latest_that_showed_it():
    first = '- button "Old" [ref=e4]'
    second = '- button "New" [ref=e4]'
    source, _ = _body([_call("snapshot", {}, {}, page=first), _call("snapshot", {}, {}, page=second),
                       _call("click", {"ref": "e4"}, {"success": True})])
    assert 'page.get_by_role("button", name="New").click()' in source and "Old" not in source


def test_a_ref_in_no_snapshot_fails_the_test_there_and_says_so():
    source, script = _body([_call("click", {"ref": "e7"}, {"success": True})])
    assert "pytest.fail(" in source and "e7" not in source and script.warnings


def test_secrets_become_environment_variables_and_never_text():
    calls = [
        _call("navigate", {"url": "http://x.test/?token=[REDACTED]"},
              {"url": "http://x.test/?token=[REDACTED]", "title": "In"}),
        _call("type", {"selector": "#pw", "text": "[REDACTED]"}, {"success": True}),
        _call("type", {"selector": "#otp", "secretName": "BANK_OTP"}, {"success": True}),
        _call("fill_form", {"fields": [{"selector": "#a", "value": "[REDACTED]"},
                                       {"selector": "#b", "secretName": "PIN"}]}, {"success": True}),
    ]
    source, script = _body(calls)
    assert "[REDACTED]" not in source
    assert script.env_names == ["MCPBROWSER_SECRET_1", "MCPBROWSER_SECRET_2", "BANK_OTP", "MCPBROWSER_SECRET_3", "PIN"]
    assert 'page.goto("http://x.test/?token=" + os.environ["MCPBROWSER_SECRET_1"])' in source
    assert 'expect(page).to_have_url(re.compile(r"^http://x\\.test/\\?token=.+$"))' in source
    assert 'page.locator("#otp").fill(os.environ["BANK_OTP"])' in source
    assert 'fill(page.locator("#a"), os.environ["MCPBROWSER_SECRET_3"])' in source and "def fill(" in source
    assert source.count("a secret, never stored") == 4 and "import re" in source
    assert "a form field's value: fill_form's are never stored; the test reads it from MCPBROWSER_SECRET_3" in source


def test_failed_and_reading_calls_are_left_out():
    calls = [_call("click", {"selector": "#gone"}, status="error"),
             _call("snapshot", {}, {}), _call("get_content", {}, {}), _call("export_script", {}, {}),
             _call("tabs", {}, {"tabs": []}), _call("press_key", {"key": "Enter"}, {"success": True})]
    source, script = _body(calls)
    assert "#gone" not in source and "export_script" not in source and script.steps == 1
    assert "# the agent read the page here (snapshot, get_content, tabs)" in source
    assert 'page.keyboard.press("Enter")' in source


def test_a_dialog_is_answered_by_a_handler_set_before_the_action_that_opens_it():
    calls = [_call("click", {"selector": "#p"}, {"success": True, "dialog": {"type": "prompt"}}),
             _call("handle_dialog", {"accept": True, "promptText": "Ann"}, {"success": True}),
             _call("click", {"selector": "#c"}, {"success": True, "dialog": {"type": "confirm"}}),
             _call("handle_dialog", {"accept": False}, {"success": True})]
    source, _ = _body(calls)
    assert source.index('dialog.accept("Ann")') < source.index('page.locator("#p").click()') < \
        source.index("dialog.dismiss()") < source.index('page.locator("#c").click()')


def test_a_dialog_answered_in_another_tab_is_answered_there_set_before_the_action_that_opened_the_tab():
    # Tab 1 opened by #a, tab 2 by #b; tab 1 closed: the popup #b opened is tab 1 when its dialog is answered from
    # the first tab (its confirm told by a read, as tabDialogs). The first tab's own prompt stays the page's.
    calls = [_call("click", {"selector": "#a"}, {"success": True, "newTabs": 1}),
             _call("click", {"selector": "#b"}, {"success": True, "newTabs": 1}),
             _call("tabs", {"action": "close", "index": 1}, {"tabs": [{}, {}], "current": 0}),
             _call("tabs", {}, {"tabs": [{}, {"dialog": {"type": "confirm"}}], "current": 0,
                                "tabDialogs": [{"type": "confirm", "tab": 1}]}),
             _call("click", {"selector": "#p"}, {"success": True, "dialog": {"type": "prompt"}}),
             _call("handle_dialog", {"accept": False}, {"success": True, "tab": 1}),
             _call("handle_dialog", {"accept": True, "promptText": "Ann"}, {"success": True})]
    source, _ = _body(calls)
    assert "def answer_in_tab(context, index, *answers):" in source
    assert source.index('page.locator("#a").click()') < \
        source.index("answer_in_tab(context, 1, lambda dialog: dialog.dismiss())") < \
        source.index('page.locator("#b").click()') < source.index('dialog.accept("Ann")') < \
        source.index('page.locator("#p").click()')


def test_dialogs_one_after_another_are_answered_in_turn_in_their_tab():
    # A popup's alert then confirm, answered from the first tab; the first tab's own alert then prompt, of one click.
    calls = [_call("click", {"selector": "#a"}, {"success": True, "newTabs": 1}),
             _call("handle_dialog", {"accept": True}, {"success": True, "tab": 1}),
             _call("handle_dialog", {"accept": False}, {"success": True, "tab": 1}),
             _call("click", {"selector": "#p"}, {"success": True, "dialog": {"type": "alert"}}),
             _call("handle_dialog", {"accept": True}, {"success": True, "dialog": {"type": "prompt"}}),
             _call("handle_dialog", {"accept": True, "promptText": "Ann"}, {"success": True})]
    source, _ = _body(calls)
    assert "def answer_in_order(page, *answers):" in source
    assert source.index("answer_in_tab(context, 1, lambda dialog: dialog.accept(), lambda dialog: dialog.dismiss())") \
        < source.index('page.locator("#a").click()') < source.index(
        'answer_in_order(page, lambda dialog: dialog.accept(), lambda dialog: dialog.accept("Ann"))') < \
        source.index('page.locator("#p").click()')


def test_emulation_and_a_saved_login_become_context_options():
    metadata = {"emulation": {"device": "iPhone 13", "locale": "de-DE", "geolocation": {"latitude": 1, "longitude": 2}},
                "login": "work"}
    source, _ = _body([], metadata=metadata)
    assert ('browser.new_context(**playwright.devices["iPhone 13"], locale="de-DE", '
            'geolocation={"latitude": 1, "longitude": 2}, permissions=["geolocation"], '
            'storage_state=os.environ["MCPBROWSER_STORAGE_STATE"])') in source
    assert "'work'" in source  # the comment names the login; its cookies are nowhere
    source, _ = _body([], metadata={"login": "work"}, storage_state_path="state/work.json")
    assert 'storage_state=os.environ.get("MCPBROWSER_STORAGE_STATE", "state/work.json")' in source


def test_uploads_are_paths_under_an_environment_variable(tmp_path):
    (tmp_path / "docs").mkdir()
    calls = [_call("upload_file", {"selector": "#f", "paths": [str(tmp_path / "docs" / "cv.pdf")]}, {"success": True})]
    source, _ = _body(calls, upload_roots=[str(tmp_path)])
    assert str(tmp_path) not in source
    assert ('set_input_files([os.path.join(os.environ.get("MCPBROWSER_UPLOAD_DIR", os.path.dirname(__file__)), '
            '"docs/cv.pdf")])') in source


def test_every_kind_of_action_compiles():
    calls = [_call("navigate", {"url": "http://x.test/", "waitUntil": "commit", "timeout": 5},
                   {"url": "http://x.test/", "title": "X"}),
             _call("go_back", {}, {"url": "http://x.test/", "title": "X"}), _call("reload", {}, {"url": "u"}),
             _call("click", {"selector": "(//a)[2]", "clickCount": 2, "force": True}, {"navigated": True, "url": "u"}),
             _call("hover", {"selector": "#h"}, {}), _call("type", {"selector": "#t", "text": "hi", "clear": False,
                                                                   "delay": 10, "submit": True}, {}),
             _call("select", {"selector": "#s", "values": ["a", "b"]}, {}),
             _call("press_key", {"selector": "#t", "key": "Tab"}, {}),
             _call("drag", {"source": {"selector": "#a"}, "target": {"selector": "#b"}}, {}),
             _call("mouse", {"action": "click", "x": 1, "y": 2}, {}), _call("resize", {"width": 5, "height": 6}, {}),
             _call("wait_for", {"selector": "#w", "state": "hidden", "textGone": "Bye", "url": "done",
                                "networkIdle": True, "timeout": 100}, {}),
             _call("tabs", {"action": "close", "index": 1}, {})]
    source, script = _body(calls)
    assert script.steps == len(calls)
    assert 'page.locator("xpath=(//a)[2]").first.click(click_count=2, force=True)' in source
    assert 'page.locator("#h").hover()' in source  # an id has one match: no .first
    assert 'page.goto("http://x.test/", wait_until="commit", timeout=5)' in source
    assert 'page.wait_for_url(re.compile(re.escape("done")), timeout=100)' in source
    assert script_export.BROWSER_ENV in source


def test_the_command_line_says_when_no_session_has_the_id(tmp_path, capsys):
    from mcpbrowser import cli

    assert cli.main(["export", "no-such-session", "--db", str(tmp_path / "h.db"), "--output-dir",
                     str(tmp_path / "out")]) == 1
    assert "SESSION_NOT_FOUND" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


class _History:
    """The two reads export_session makes, over fixed rows."""

    def __init__(self, metadata, calls):
        self.metadata, self.calls = metadata, calls

    def session_metadata(self, session_id):
        return self.metadata

    def session_calls(self, session_id):
        return self.calls


def test_a_client_exports_only_its_own_sessions_into_files_the_server_names(tmp_path):
    from mcpbrowser.config import Config
    from mcpbrowser.core.export_tools import export_session
    from mcpbrowser.errors import SessionNotFound

    config = Config(output_dir=str(tmp_path), db=":memory:")
    history = _History({"owner": "ann"}, [_call("navigate", {"url": "http://x.test/"}, {"url": "http://x.test/"}),
                                          _call("export_script", {}, status=None, ref="mine")])
    with pytest.raises(SessionNotFound):
        export_session(config, history, "abcdef12", owner="bob")
    with pytest.raises(SessionNotFound):  # calls with a made-up id (they failed) are no session
        export_session(config, _History({}, history.calls), "../../x")
    first = export_session(config, history, "abcdef12", owner="ann", skip="mine")
    second = export_session(config, history, "abcdef12", owner="ann", skip="mine")
    assert first["path"] != second["path"]
    for answer in (first, second):
        assert os.path.dirname(answer["path"]) == os.path.realpath(tmp_path) and answer["steps"] == 1
        assert os.path.basename(answer["path"]).startswith("test_session_abcdef12_")


def test_a_persons_take_over_is_named_not_replayed():
    calls = [_call("navigate", {"url": "https://example.com/login"}, {"url": "https://example.com/login"}),
             _call("person_input", {"action": "click", "x": 0.2, "y": 0.1}, {"success": True}),
             _call("person_input", {"action": "type", "text": "[REDACTED]"}, {"success": True}),
             _call("wait_for_user", {"message": "sign in", "timeout": 1000}, {"success": True})]
    source, script = _body(calls)
    assert source.count("# a person took over in the live view here") == 1 and "REDACTED" not in source
    assert script.steps == 1


def test_a_ref_the_page_wrote_in_a_name_is_its_words_again_in_the_locator():
    # clean() shows a page's own "[ref=e5]" as ‹ref=e5› (snapshot_text); the button's name is what the page wrote.
    elements = parse_snapshot('- button "Keep ‹ref=e5› now" [ref=e4]\n- paragraph [ref=e6]: see ‹ref=e5›\n')
    assert locator_for(elements, "e4") == 'page.get_by_role("button", name="Keep [ref=e5] now")'
    assert locator_for(elements, "e6") == 'page.get_by_text("see [ref=e5]", exact=True)'


def test_one_reader_gives_the_outline_and_the_replay_the_same_element_of_a_quoted_line():
    """A key YAML had to quote, with inline text after it: snapshot_text's outline lists the link and the
    replay finds it by the same role and name (the two read snapshots apart, and the outline lost it)."""
    page = "- main [ref=e1]:\n  - 'link \"Up: it''s MAX\" [ref=e70]': \"say \\\"hi\\\"\"\n  - button \"Go\" [ref=e2]\n"
    assert 'link "Up: it\'s MAX" [ref=e70]' in snapshot_text.compact(page)
    assert locator_for(parse_snapshot(page), "e70") == 'page.get_by_role("link", name="Up: it\'s MAX")'
    assert [e.text for e in parse_snapshot(page) if e.ref == "e70"] == ['say "hi"']


def test_the_site_groups_lists_are_reads_and_their_secrets_environment_variables():
    calls = [_call("route", {}, {"routes": []}), _call("cookies", {}, {"cookies": []}),
             _call("page_tools", {}, {"tools": []}), _call("storage", {"kind": "session"}, {"entries": []}),
             _call("route", {"url": "**/api", "requestHeaders": {"Authorization": "[REDACTED]", "Accept": None}},
                   {"routes": []}),
             _call("cookies", {"action": "set", "name": "sid", "value": "[REDACTED]", "httpOnly": True},
                   {"set": {"name": "sid", "url": "http://x.test/", "httpOnly": True}}),
             _call("cookies", {"action": "delete", "name": "sid"}, {"deleted": 1}),
             _call("storage", {"action": "delete", "kind": "session", "name": "n"}, {"deleted": 1}),
             _call("unroute", {}, {"removed": [], "routes": []}),
             _call("page_tools", {"name": "t", "input": {"a": 1}, "frame": "http://f.test"}, {"untrustedResult": ""})]
    source, script = _body(calls)
    assert script.steps == 6 and script.env_names == ["MCPBROWSER_SECRET_1", "MCPBROWSER_SECRET_2"]
    assert "the agent read the page here (route, cookies, page_tools, storage)" in source
    assert '"Authorization": os.environ["MCPBROWSER_SECRET_1"]' in source and "[REDACTED]" not in source
    assert 'context.add_cookies([{"name": "sid", "url": "http://x.test/", "httpOnly": True, ' \
           '"value": os.environ["MCPBROWSER_SECRET_2"]}])' in source
    assert 'context.clear_cookies(name="sid")' in source and "context.unroute_all()" in source
    assert 'sessionStorage.removeItem(name)", "n")' in source
    assert 'next(f for f in page.frames if f.url.startswith("http://f.test/")).webmcp.call_tool("t", {"a": 1})' \
        in source and 'args=["--enable-features=WebMCP"]' in source


def test_a_page_tools_secret_by_name_is_read_from_the_environment_by_that_name():
    called = {"name": "login", "input": {"user": "ann"}, "secretNames": {"password": "SITE_PASSWORD"}}
    source, script = _body([_call("page_tools", called, {"untrustedResult": ""})])
    assert 'page.webmcp.call_tool("login", {"user": "ann", "password": os.environ["SITE_PASSWORD"]})' in source
    assert script.env_names == ["SITE_PASSWORD"] and "a page tool's input: a secret, never stored" in source


def test_a_tab_that_closed_itself_is_followed_to_the_tab_its_answer_made_current():
    opened = [_call("click", {"selector": "#open"}, {"success": True, "newTabs": 1}),
              _call("tabs", {"action": "select", "index": 1}, {"tabs": [{}, {"current": True, "url": "http://x.test/p"}]})]
    told = {"closedTabs": 1, "currentTab": 0}
    calls = [*opened,
             # The click's answer told the close: its url and title are the opener's, asserted once there.
             _call("click", {"selector": "#approve"}, {"success": True, "url": "http://x.test/", "title": "Shop",
                                                       "navigated": True, **told}),
             *opened,  # Playwright heard the close before the click's end: TAB_CLOSED during it, the click done
             ("r", "click", {"selector": "#approve"}, "error",
              {"errorCode": "TAB_CLOSED", "message": "closed", "details": {**told, "during": True}}, None),
             *opened,  # a timer closes it after the answer: the next action is refused, nothing done
             _call("press_key", {"selector": "#late", "key": "Enter"}, {"success": True}),
             ("r", "type", {"selector": "#q", "text": "x"}, "error",
              {"errorCode": "TAB_CLOSED", "message": "closed", "details": told}, None),
             _call("type", {"selector": "#q", "text": "x"}, {"success": True}),
             *opened,  # a wait that ended as its tab closed itself waited for what never came: not replayed
             ("r", "wait_for", {"text": "Never"}, "error",
              {"errorCode": "TAB_CLOSED", "message": "closed", "details": {**told, "during": True}}, None)]
    source, script = _body(calls)
    follow = ["# the tab closed itself (its page called window.close()): the agent went on in tab 0",
              "if not page.is_closed():", '    page.wait_for_event("close")',
              "page = tab(context, 0) if context.pages else context.new_page()",
              "page.bring_to_front()"]
    opening = ['page.locator("#open").click()', "page = tab(context, 1)", "page.bring_to_front()",
               'expect(page).to_have_url("http://x.test/p")']
    # A step whose answer told the close: in a replay the close may come before the step's end (a keydown's).
    guarded = ["try:", '    page.locator("#approve").click()', "except Error:",
               "    if not page.is_closed():  # anything but its tab closing itself, as it did for the agent",
               "        raise"]
    assert script.body == [*opening, *guarded, *follow,
                           'expect(page).to_have_url("http://x.test/")',
                           *opening, *guarded, *follow,
                           *opening, 'page.locator("#late").press("Enter")', *follow,
                           'page.locator("#q").fill("x")',
                           *opening, "# the wait ended as its tab closed itself", *follow], script.body
    assert script.steps == 13 and "def tab(context, index):" in source
    assert "from playwright.sync_api import Error, expect, sync_playwright" in source


@pytest.mark.parametrize("closing", [
    _call("click", {"selector": "#approve"}, {"success": True, "closedTabs": 1, "currentTab": 0}),
    ("r", "type", {"selector": "#q", "text": "x"}, "error",  # closed after the answer: this one refused
     {"errorCode": "TAB_CLOSED", "message": "closed", "details": {"closedTabs": 1, "currentTab": 0}}, None)])
def test_a_popup_that_closed_itself_leaves_its_index_to_the_next_one_whose_dialog_is_answered_there(closing):
    calls = [_call("click", {"selector": "#a"}, {"success": True, "newTabs": 1}),
             _call("tabs", {"action": "select", "index": 1}, {"tabs": [{}, {}], "current": 1}),
             closing,
             _call("click", {"selector": "#b"}, {"success": True, "newTabs": 1}),  # tab 1 now
             _call("handle_dialog", {"accept": False}, {"success": True, "tab": 1})]
    source, _ = _body(calls)
    assert source.index('page.locator("#a").click()') < source.index("page = tab(context, 0) if") < \
        source.index("answer_in_tab(context, 1, lambda dialog: dialog.dismiss())") < \
        source.index('page.locator("#b").click()'), source
