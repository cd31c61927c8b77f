"""Answers an agent can act on, and reads that cost little, through the official client."""

import json
import time

import pytest

pytestmark = pytest.mark.e2e


def text_of(client, name, **arguments):
    """Everything the model reads of one answer: its text blocks."""
    result = client.call(name, arguments)
    return "\n".join(c.text for c in result.content if c.type == "text")


# -- page state in every action answer ---------------------------------------------------

def test_actions_say_where_they_left_the_agent(client, session, pages):
    client.tool("navigate", sessionId=session, url=pages.url("/form"))
    stayed = client.tool("click", sessionId=session, selector="#count")
    assert stayed["navigated"] is False and stayed["url"] == pages.url("/form")
    assert stayed["title"] == "count 1"  # a title the click's script set
    typed = client.tool("type", sessionId=session, selector="#name", text="Ann")
    assert typed["navigated"] is False and typed["title"] == "count 1"
    client.tool("navigate", sessionId=session, url=pages.url("/popup"))
    moved = client.tool("click", sessionId=session, selector="text=Open window")
    assert moved["navigated"] is False and moved["url"] == pages.url("/popup")  # a popup is not a navigation
    assert moved["newTabs"] == 1  # the click's own answer: its settle waits for the window it asked for
    client.tool("navigate", sessionId=session, url=pages.url("/docs"))
    gone = client.tool("click", sessionId=session, selector="text=Guide 3")
    assert (gone["navigated"], gone["url"], gone["title"]) == (True, pages.url("/title/guide3"), "guide3")
    assert gone["expiresAt"] > 0 and "meta" not in json.loads(text_of(client, "tabs", sessionId=session))


def test_type_can_submit_and_the_answer_has_the_new_page(client, session, pages):
    client.tool("navigate", sessionId=session, url=pages.url("/docs"))
    searched = client.tool("type", sessionId=session, selector="input[name=q]", text="pineapple", submit=True)
    assert searched["navigated"] is True and searched["url"] == pages.url("/found?q=pineapple")
    assert "pressed Enter" in searched["message"]
    pressed = client.tool("press_key", sessionId=session, key="Tab")
    assert pressed["navigated"] is False and pressed["url"] == searched["url"]


# -- reading only what is needed ------------------------------------------------------------

def test_snapshot_query_returns_matches_under_their_landmarks(client, session, pages):
    client.tool("navigate", sessionId=session, url=pages.url("/docs"))
    found = client.tool("snapshot", sessionId=session, query="guide 1")
    lines = found["snapshot"].splitlines()
    assert found["matches"] == 3  # Guide 1, 10 and 11
    assert lines[0].startswith('- navigation "Site"') and "[ref=" in lines[0]
    assert [line.strip().split(" [ref=")[0] for line in lines if "link" in line] == \
        ['- link "Guide 1"', '- link "Guide 10"', '- link "Guide 11"']
    assert any(line.strip() == "- /url: /title/guide1" for line in lines)  # where a link goes
    ref = next(line for line in lines if '"Guide 10"' in line).split("[ref=")[1].split("]")[0]
    assert client.tool("click", sessionId=session, ref=ref)["url"] == pages.url("/title/guide10")


def test_query_shows_repeated_text_once_and_long_lines_around_the_match(client, session, pages):
    client.tool("navigate", sessionId=session, url=pages.url("/docs"))
    found = client.tool("snapshot", sessionId=session, query="pineapple")
    assert found["matches"] == 2 and found["snapshot"].count("pineapple") == 3
    assert found["snapshot"].splitlines()[0].startswith("- main")
    none = client.tool("snapshot", sessionId=session, query="no such words")
    assert (none["matches"], none["snapshot"], none["truncated"]) == (0, "", False)


def test_compact_snapshot_is_an_outline_an_agent_can_act_on(client, session, pages):
    client.tool("navigate", sessionId=session, url=pages.url("/docs"))
    whole = client.tool("snapshot", sessionId=session)
    outline = client.tool("snapshot", sessionId=session, compact=True)
    text = outline["snapshot"]
    assert len(text) < len(whole["snapshot"]) / 2
    assert 'heading "Welcome" [level=1]' in text and 'textbox "Search"' in text and 'button "Grow"' in text
    assert "paragraph" not in text and "/url:" not in text and "listitem" not in text
    assert text.count("- link") == 8 and "- … 4 more (query finds them)" in text  # a section shows 8 controls
    assert "[cursor=pointer]" not in whole["snapshot"]  # Playwright's noise, in no form
    shallow = client.tool("snapshot", sessionId=session, depth=1)
    assert len(shallow["snapshot"]) < len(whole["snapshot"]) and "Guide 3" not in shallow["snapshot"]


def test_a_filtered_read_hides_and_merges_no_target_on_an_admin_page(client, session, pages):
    """Issue 38: a query showed a row header instead of its link, hid a textbox under a matching
    search landmark, merged links of the same name going to different places, and twins gave no
    way to tell them apart; compact hid a form's Save button."""
    client.tool("navigate", sessionId=session, url=pages.url("/admin"))

    def found(query):
        out = client.tool("snapshot", sessionId=session, query=query)
        return out["snapshot"], out["matches"]

    text, _ = found("Users")  # its row, with the link's ref and the cell beside it (issue 74)
    assert text.splitlines()[-2].strip().startswith('- row [ref=') and text.splitlines()[-2].endswith(": Users | Add")
    assert text.splitlines()[-1].strip().startswith('- link "Users" [ref=') and "rowheader" not in text
    text, _ = found("Search")
    assert 'textbox "Search"' in text and 'button "Search"' in text
    text, matches = found("Yes")
    assert matches == 2 and "more like it" not in text
    assert "/url: /title/yes-all" in text and "/url: /title/yes-staff" in text
    text, _ = found("Python 3")
    notebook, console = [line for line in text.splitlines() if 'button "Python 3"' in line]
    assert notebook.endswith('(under "Notebook")') and console.endswith('(under "Console")')
    ref = console.split("[ref=")[1].split("]")[0]
    assert client.tool("click", sessionId=session, ref=ref)["title"] == "console kernel"
    text, matches = found("Field 3|Field 11|Save")
    for control in ('textbox "Field 3"', 'textbox "Field 11"', 'button "Save"'):
        assert f"{control} [ref=" in text, text
    outline = client.tool("snapshot", sessionId=session, compact=True)["snapshot"]
    assert 'button "Save"' in outline and 'button "Choose all"' in outline and 'textbox "Field 11"' in outline
    # A heading's ref reads its section: what follows it up to the next heading of its level.
    heading = next(line for line in outline.splitlines() if 'heading "Notebook"' in line)
    part = client.tool("snapshot", sessionId=session, ref=heading.split("[ref=")[1].split("]")[0])["snapshot"]
    assert part.startswith('- heading "Notebook"') and 'button "Python 3"' in part and "Console" not in part


def test_waits_see_what_a_person_sees(client, session, pages):
    """Issue 42: a hidden element with the same text, first in the DOM, made the wait time out."""
    client.tool("navigate", sessionId=session, url=pages.url("/status"))
    assert client.tool("wait_for", sessionId=session, text="Idle", timeout=5000)["success"] is True
    assert client.tool("wait_for", sessionId=session, selector="text=Idle", timeout=5000)["success"] is True
    client.tool("click", sessionId=session, selector="text=Stop")
    assert client.tool("wait_for", sessionId=session, textGone="Idle", timeout=5000)["success"] is True
    late = client.error("wait_for", sessionId=session, text="Idle", timeout=500)
    assert late["errorCode"] == "WAIT_TIMEOUT" and late["details"]["matched"] == 1
    assert late["details"]["visible"] == 0 and "1 element(s) matched, 0 of them visible" in late["message"]


def test_get_content_reads_snapshot_and_wait_for_calls_as_they_were(client, session, pages):
    client.tool("navigate", sessionId=session, url=pages.url("/found?q=kiwi"))
    waited = client.tool("wait_for", sessionId=session, text="Search finished")
    assert waited["meta"]["hasSnapshot"] is True
    snap = client.tool("snapshot", sessionId=session, query="kiwi hit 2")
    # The page changes after both calls: what they stored does not.
    client.tool("navigate", sessionId=session, url=pages.url("/title/elsewhere"))
    for ref_id in (waited["refId"], snap["refId"]):
        stored = client.tool("get_content", ref_id=ref_id, search_for="kiwi hit")
        assert stored["matches"] == 3, stored
        assert "elsewhere" not in client.tool("get_content", ref_id=ref_id, reset_cursor=True)["content"]


# -- diffs that never cost more than the full text -----------------------------------------

def test_diffs_are_small_for_small_changes_and_never_longer_than_the_page(client, session, pages):
    first = client.tool("navigate", sessionId=session, url=pages.url("/docs"))
    full = client.tool("get_content", ref_id=first["refId"])
    assert full["mode"] == "full"
    grown = client.tool("click", sessionId=session, selector="#grow")
    diff = client.tool("get_content", ref_id=grown["refId"])
    assert diff["mode"] == "diff" and "grown" in diff["content"]
    assert 0 < len(diff["content"]) < len(full["content"]) / 4
    other = client.tool("navigate", sessionId=session, url=pages.url("/form"))
    moved = client.tool("get_content", ref_id=other["refId"])
    page = client.tool("get_content", ref_id=other["refId"], reset_cursor=True)["content"]
    assert moved["mode"] == "full" and moved["content"] == page  # another page: the page, not a diff


# -- lean logs ------------------------------------------------------------------------------

def test_network_logs_list_what_matters_for_this_page(client, session, pages):
    client.tool("navigate", sessionId=session, url=pages.url("/logs"))
    client.tool("wait_for", sessionId=session, selector="#more")
    client.tool("navigate", sessionId=session, url=pages.url("/nope"))  # a 404 page
    client.tool("navigate", sessionId=session, url=pages.url("/title/styled"))
    here = [e["url"] for e in client.tool("network_logs", sessionId=session)["entries"]]
    assert here[0] == pages.url("/title/styled") and pages.url("/api/data") not in here  # this page only
    everything = client.tool("network_logs", sessionId=session, allPages=True)
    urls = [e["url"] for e in everything["entries"]]
    assert pages.url("/logs") in urls and pages.url("/api/data") in urls
    assert all(set(e) <= {"method", "url", "resourceType", "status", "durationMs", "failure", "blocked"}
               for e in everything["entries"])
    failed = client.tool("network_logs", sessionId=session, allPages=True, failed=True)["entries"]
    assert pages.url("/nope") in [e["url"] for e in failed]
    assert all(e["status"] >= 400 or e.get("failure") for e in failed)
    fetched = client.tool("network_logs", sessionId=session, allPages=True, resourceType=["fetch"])["entries"]
    assert [e["url"] for e in fetched] == [pages.url("/api/data")]
    # The types are not an enum in tools/list (150 characters a turn): a wrong one is refused naming them all.
    wrong = client.error("network_logs", sessionId=session, resourceType=["fetch", "ajax"])
    assert wrong["errorCode"] == "INVALID_PARAMETERS"
    assert "'ajax'" in wrong["message"] and "'xhr', 'fetch'" in wrong["message"]
    assert client.error("network_logs", sessionId=session, resourceType=[])["errorCode"] == "INVALID_PARAMETERS"
    newest = client.tool("network_logs", sessionId=session, allPages=True, limit=1)
    assert newest["entries"] == everything["entries"][-1:] and newest["older"] == len(everything["entries"]) - 1


def test_a_missing_stylesheet_is_listed_and_loaded_ones_are_counted(make_client, pages, tmp_path):
    c = make_client("--allow-evaluate")
    sid = c.tool("create_session", url=pages.url("/docs"))["sessionId"]
    c.tool("evaluate", sessionId=sid, expression="""() => new Promise(done => {
        const link = document.createElement('link'); link.rel = 'stylesheet'; link.href = '/missing.css';
        link.onerror = link.onload = done; document.head.append(link); })""")
    logs = c.tool("network_logs", sessionId=sid)
    assert any(e["url"].endswith("/missing.css") and e["status"] == 404 for e in logs["entries"])
    assert all(e["resourceType"] != "stylesheet" or e["status"] >= 400 for e in logs["entries"])


# -- fewer calls, failing fast --------------------------------------------------------------

def test_create_session_can_open_a_page(client, pages):
    opened = client.tool("create_session", url=pages.url("/docs"))
    try:
        assert (opened["url"], opened["title"], opened["status"]) == (pages.url("/docs"), "Docs", 200)
        stored = client.tool("get_content", ref_id=opened["pageRefId"], search_for="Guide 11")
        assert stored["matches"] == 1
    finally:
        client.tool("close_session", sessionId=opened["sessionId"])
    failed = client.tool("create_session", url="http://127.0.0.1:9/")
    try:
        assert failed["navigationError"]["errorCode"] == "NAVIGATION_FAILED" and "url" not in failed
    finally:
        client.tool("close_session", sessionId=failed["sessionId"])


def test_a_missing_element_is_reported_fast_and_a_late_one_still_waited_for(make_client, pages):
    c = make_client("--action-timeout", "30000")
    sid = c.tool("create_session", url=pages.url("/docs"))["sessionId"]
    started = time.monotonic()
    err = c.error("click", sessionId=sid, selector="#nothing-here")
    assert time.monotonic() - started < 15  # the grace, not the 30 s action timeout
    assert err["errorCode"] == "ELEMENT_NOT_FOUND" and "#nothing-here" in err["message"]
    assert "snapshot" in err["message"] and "timeout" in err["message"]
    # There but hidden for 1.5 s: auto-wait still applies past the grace.
    assert c.tool("click", sessionId=sid, selector="#late-show")["success"] is True
    # Not there yet for 1.5 s: a timeout argument extends the grace.
    c.tool("click", sessionId=sid, selector="#add-late")
    assert c.tool("click", sessionId=sid, selector="#added", timeout=10_000)["title"] == "added clicked"
    for tool, extra in (("type", {"text": "x", "delay": 10}), ("type", {"text": "x", "clear": False}),
                        ("press_key", {"key": "Enter"})):  # actions that are never repeated
        started = time.monotonic()
        assert c.error(tool, sessionId=sid, selector="#nothing-here", **extra)["errorCode"] == "ELEMENT_NOT_FOUND"
        assert time.monotonic() - started < 15


def test_typing_that_outlasts_the_grace_happens_once(client, session, pages):
    client.tool("navigate", sessionId=session, url=pages.url("/form"))
    client.tool("type", sessionId=session, selector="#name", text="start-")
    text = "x" * 30  # 30 keys, 50 ms apart: longer than the 1 s grace
    client.tool("type", sessionId=session, selector="#name", text=text, delay=50, clear=False)
    client.tool("click", sessionId=session, selector="#go")
    assert client.tool("tabs", sessionId=session)["tabs"][0]["title"] == "Hello start-" + text


def test_navigation_after_a_failed_one_just_works(client, session, pages):
    for attempt in range(3):
        err = client.error("navigate", sessionId=session, url="http://127.0.0.1:9/")
        assert err["errorCode"] == "NAVIGATION_FAILED"
        ok = client.tool("navigate", sessionId=session, url=pages.url(f"/title/after{attempt}"))
        assert ok["title"] == f"after{attempt}"


def test_an_expired_session_says_resume_session_brings_it_back(make_client, pages):
    # 1.5 s of room for each call's own time (a loaded CI took the 0.7 s it once had).
    c = make_client("--session-timeout", "2500")
    sid = c.tool("create_session", url=pages.url("/title/kept"))["sessionId"]
    for _ in range(3):  # calls keep it alive past its first 2.5 s
        time.sleep(1.0)
        c.tool("snapshot", sessionId=sid, depth=1)
    time.sleep(3.5)
    err = c.error("snapshot", sessionId=sid)
    assert err["errorCode"] == "SESSION_EXPIRED" and err["details"]["resumable"] is True
    assert "resume_session" in err["message"]
    assert c.tool("resume_session", sessionId=sid)["url"] == pages.url("/title/kept")


@pytest.mark.parametrize("kind", ["e", "f"])
def test_refs_look_as_the_readme_says(client, session, pages, kind):
    # First document of a tab: e<N>. Later documents and iframes: f<K>e<N>.
    if kind == "f":
        client.tool("navigate", sessionId=session, url=pages.url("/title/first"))
    client.tool("navigate", sessionId=session, url=pages.url("/docs"))
    text = client.tool("snapshot", sessionId=session, query="Guide 3")["snapshot"]
    ref = text.split('"Guide 3" [ref=')[1].split("]")[0]
    assert ref[0] == kind and ref.split("e")[-1].isdigit()


def test_one_query_finds_a_form_steps_controls_and_a_section_read_reads_what_a_heading_titles(
        client, session, pages):
    """Issue 52: a form step's controls took a query per term, and the list under "Recent actions"
    a read of the whole page."""
    client.tool("navigate", sessionId=session, url=pages.url("/add-user"))
    found = client.tool("snapshot", sessionId=session, query="username|password|^save$|colour")
    text = found["snapshot"]
    assert found["matches"] == 4 and "# colour: no match" in text.splitlines()
    assert "# username" in text and "# password" in text and "# ^save$" in text
    assert 'button "Save and' not in text  # the anchors hold to the name
    save = next(line for line in text.splitlines() if 'button "Save"' in line).split("[ref=")[1].split("]")[0]
    box = next(line for line in text.splitlines() if 'textbox "Username:"' in line).split("[ref=")[1].split("]")[0]
    client.tool("type", sessionId=session, ref=box, text="ann")
    assert client.tool("click", sessionId=session, ref=save)["title"] == "saved ann"

    # A filtered read that matches a heading offers its section; the section comes bounded, with refs.
    heading = client.tool("snapshot", sessionId=session, query="recent actions")["snapshot"]
    offer = heading.split("(snapshot section=")[1].split(" ")[0]
    part = client.tool("snapshot", sessionId=session, section=offer)
    assert part["snapshot"].startswith('- heading "Recent actions" [level=2]')
    assert '- link "user0" [ref=' in part["snapshot"] and "Other tools" not in part["snapshot"]
    assert (part["truncated"], part["nodes"], part["totalNodes"]) == (True, 200, 3 + 250 * 3)  # headings, list; items
    by_name = client.tool("snapshot", sessionId=session, section="Recent actions", maxNodes=1000)
    assert by_name["truncated"] is False and '- link "user249"' in by_name["snapshot"]
    crumbs = client.tool("snapshot", sessionId=session, section="breadcrumbs")["snapshot"]
    assert crumbs.startswith('- navigation "Breadcrumbs"') and "Home" in crumbs and "Username" not in crumbs
    within = client.tool("snapshot", sessionId=session, section="Recent actions", query="^user24[89]$")
    assert within["matches"] == 2 and "Username" not in within["snapshot"]
    missing = client.tool("snapshot", sessionId=session, section="Permissions")
    assert missing["matches"] == 0 and '"Recent actions"' in missing["snapshot"]

    for query in ("save(", "(a+)+b"):
        assert client.error("snapshot", sessionId=session, query=query)["errorCode"] == "INVALID_PARAMETERS"


# -- a match with the context it needs (issue 74) --------------------------------------------

DATA_PAGE = """<!doctype html><title>Data</title><main>
<h2>Authors</h2>
<table><thead><tr><th>Name</th><th>Country</th><th>Login</th></tr></thead><tbody>
<tr><td><a href="/a/1">Ursula Le Guin</a></td><td>USA</td><td><input type="password" aria-label="pin 1"></td></tr>
<tr><td><a href="/a/2">Stanislaw Lem</a></td><td>Poland</td><td><input type="password" aria-label="pin 2"></td></tr>
</tbody></table>
<h2>Tables</h2>
<div><h3><a href="/fixtures/facetable">facetable</a></h3><p>15 rows</p></div>
<div><h3><a href="/fixtures/roadside">roadside_attractions</a></h3><p>4 rows</p></div>
<h2>Shadow</h2><x-grid></x-grid>
<h2>Frame</h2><iframe srcdoc="<ul aria-label='Framed'><li>kiwi in frame</li><li>fig</li></ul>"></iframe>
</main><script>
customElements.define('x-grid', class extends HTMLElement { constructor() { super();
  this.attachShadow({mode: 'open'}).innerHTML =
    '<table><tr><th>Fruit</th><th>Price</th></tr><tr><td>mango</td><td>3</td></tr></table>'; } });
</script>"""


@pytest.fixture(scope="module")
def data_site():
    from support import HtmlSite
    site = HtmlSite(lambda url: DATA_PAGE)
    yield site
    site.close()


def test_a_query_answers_each_match_with_its_row_its_heading_or_its_list(client, session, data_site):
    client.tool("navigate", sessionId=session, url=data_site.url + "/")
    secret = "pin-7Qx93-typed"
    client.tool("type", sessionId=session, selector="input[aria-label='pin 2']", text=secret)

    def query(words):
        answer = client.tool("snapshot", sessionId=session, query=words)
        assert secret not in json.dumps(answer)  # a password field's value is never a row's context
        return answer["snapshot"].splitlines()

    row = query("Poland")
    assert row[1].startswith('  - heading "Authors" [level=2] [ref=')
    assert row[2].startswith("  - row [ref=") and row[2].split("]: ", 1)[1] == \
        "Name: Stanislaw Lem | Country: Poland | Login: pin 2"
    assert row[3].startswith('    - link "Stanislaw Lem" [ref=') and row[4].startswith('    - textbox "pin 2"')
    ref = row[3].split("[ref=")[1].split("]")[0]  # the link's ref in the row is the way on
    rows = query(r"\d+ rows")
    assert [line.split(" [ref=")[0].strip() for line in rows[1:]] == [
        "- heading [level=3]", '- link "facetable"', "- paragraph", "- heading [level=3]",
        '- link "roadside_attractions"', "- paragraph"]
    assert rows[3].endswith(": 15 rows") and rows[6].endswith(": 4 rows")
    shadow = query("mango")  # a row inside a shadow root, with its own table's headers
    assert shadow[-1].strip().split("]: ", 1)[1] == "Fruit: mango | Price: 3"
    framed = query("kiwi")  # a list item inside an iframe names its list
    assert framed[-2].strip().startswith('- list "Framed" [ref=f') and "kiwi in frame" in framed[-1]
    assert client.tool("click", sessionId=session, ref=ref)["url"] == data_site.url + "/a/2"
