"""End to end: after a `type` that filled one plain text field, the history's capture is the last whole
snapshot with that field's line changed (snapshots._edited), not a new walk; and wherever the page did more
than take the value, or the line is not certain, it is walked as before.

Each capture is held against a real walk of the same page: an `evaluate` that changes nothing, whose own
capture always walks. Whether the capture was edited is read from the server's log (`capture_edited`), so
each test shows that the path it guards ran, or did not.
"""

import logging
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import PAGES

import mcpbrowser
from mcpbrowser.config import Config
from mcpbrowser.logs import log

pytestmark = pytest.mark.e2e

FORM = """<!doctype html><title>Form</title>
<h1>Sign up</h1>
<label>Name <input id=name></label>
<input id=city aria-label=City>
<input id=find type=search aria-label=Find>
<textarea id=area aria-label=Area></textarea>
<input id=hinted placeholder=Hinted>
<label><input type=checkbox id=remind> Remind me</label>
<button>Save</button>"""

# Pages that do more than take the value, each in its own way: the capture must be walked.
TRICKS = {
    # The page counts the characters as they come (a mutation).
    "counter": "<label>Note <input id=f></label><p id=count>0</p><script>document.getElementById('f')"
               ".oninput = e => { document.getElementById('count').textContent = e.target.value.length }</script>",
    # It copies the value into another field (no mutation: the other control's value).
    "copy": "<label>Note <input id=f></label><label>Copy <input id=g></label><script>document.getElementById('f')"
            ".oninput = e => { document.getElementById('g').value = e.target.value }</script>",
    # The field sits in another control's label: the checkbox's name holds its value.
    "label": "<label><input type=checkbox> Remind me in <input id=f aria-label=Days> days</label>",
    # An aria-labelledby names a button after the field's container.
    "labelledby": "<div id=box><label>Note <input id=f></label></div><button aria-labelledby=box></button>",
    # A placeholder: the field's line has children.
    "placeholder": "<input id=f aria-label=Note placeholder='write here'>",
    # A secret field already shows [REDACTED]: the walk's redaction reads the fields again.
    "secret": "<label>Note <input id=f></label><label>Password <input type=password id=p value=hunter22x></label>",
    # The page upper-cases the value as it comes: the field holds other text than was typed.
    "upper": "<label>Note <input id=f></label><script>document.getElementById('f')"
             ".oninput = e => { e.target.value = e.target.value.toUpperCase() }</script>",
    # It retitles the page once the value is long (a mutation in the head, from the field's own event).
    "retitled": "<label>Note <input id=f></label><p id=echo></p><script>document.getElementById('f')"
             ".addEventListener('change', () => {}); document.getElementById('f').addEventListener('input', "
             "e => { if (e.target.value.length > 3) document.title = 'long' })</script>",
}


@pytest.fixture(scope="module")
def browser(pages):
    PAGES["/edit-form"] = FORM
    for name, body in TRICKS.items():
        PAGES[f"/edit-trick-{name}"] = f"<!doctype html><title>{name}</title>{body}"
    # Each value costs four calls: beyond the default 60 a minute per tool.
    with mcpbrowser.Browser(Config(headless=True, db=":memory:", allow_evaluate=True, rate_limit=100_000)) as b:
        yield b
    del PAGES["/edit-form"]
    for name in TRICKS:
        del PAGES[f"/edit-trick-{name}"]


@pytest.fixture
def edits():
    """The capture_edited events the server logs while the test runs, as a list that grows."""
    seen = []

    class Catch(logging.Handler):
        def emit(self, record):
            if getattr(record, "event", None) == "capture_edited":
                seen.append(record)

    handler, level = Catch(logging.DEBUG), log.level
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    yield seen
    log.removeHandler(handler)
    log.setLevel(level)


def content(browser, answer):
    return browser.call("get_content", {"ref_id": answer["refId"], "reset_cursor": True})["content"]


def walked(browser, session):
    """The page as a real walk reads it now: an evaluate's capture walks, whatever the watch says."""
    return content(browser, session.call("evaluate", expression="() => 0"))


def ref_of(text, line):
    found = re.search(re.escape(line) + r"[^\n]*?\[ref=(\w+)\]", text)
    assert found, (line, text)
    return found.group(1)


@pytest.fixture(scope="module")
def form(browser, pages):
    """One session on the form, its refs read once (by a real walk)."""
    with browser.create_session() as session:
        session.navigate(pages.url("/edit-form"))
        page = walked(browser, session)
        yield session, {name: ref_of(page, line) for name, line in
                        [("name", 'textbox "Name"'), ("city", 'textbox "City"'), ("find", 'searchbox "Find"'),
                         ("area", 'textbox "Area"'), ("hinted", 'textbox "Hinted"')]}


VALUES = ["hello", "hello world", "a: b", "a:b", "#x", "a #b", "'q'", '"dq"', " lead", "trail ", "a  b", "123",
          "1.5", "1e5", "0X1F", "Infinity", "infinity", "NaN", "yes", "Off", "~", "-dash", "[br]", "{x}", "`t`",
          "é ünï", "ada@example.com", "@at", "x:", "a\\b", "", "C++", "50%", ".inf", "+.NaN", "a" * 300]


@pytest.mark.parametrize("field", ["name", "city", "find", "area", "hinted"])
def test_a_filled_field_is_captured_as_a_walk_reads_it(browser, form, edits, field):
    session, refs = form
    for value in VALUES:
        before = len(edits)
        typed = session.call("type", ref=refs[field], text=value)
        assert content(browser, typed) == walked(browser, session), (field, value)
        assert len(edits) == before + 1, (field, value)  # the capture was the edit, not a walk


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40))
def test_any_text_is_captured_as_a_walk_reads_it(browser, form, value):
    # Whatever the text (controls, other spaces, quotes, YAML's words): edited where certain, else walked;
    # in both cases what get_content reads is what a walk reads.
    session, refs = form
    typed = session.call("type", ref=refs["city"], text=value)
    assert content(browser, typed) == walked(browser, session), repr(value)


def test_the_focus_mark_moves_with_the_typing(browser, form, edits):
    session, refs = form
    first = content(browser, session.call("type", ref=refs["name"], text="Ada"))
    second = content(browser, session.call("type", ref=refs["city"], text="Paris"))
    assert len(edits) == 2
    assert re.search(r'textbox "Name" \[active\] \[ref=\w+\]: Ada', first)
    assert re.search(r'textbox "City" \[ref=\w+\]: Paris', first) is None
    assert re.search(r'textbox "Name" \[ref=\w+\]: Ada', second) and second.count("[active]") == 1
    assert re.search(r'textbox "City" \[active\] \[ref=\w+\]: Paris', second)


@pytest.mark.parametrize("trick", sorted(TRICKS))
def test_a_page_that_does_more_than_take_the_value_is_walked(browser, pages, edits, trick):
    with browser.create_session() as session:
        session.navigate(pages.url(f"/edit-trick-{trick}"))
        page = walked(browser, session)
        ref = ref_of(page, 'textbox "Days"' if trick == "label" else 'textbox "Note"')
        typed = session.call("type", ref=ref, text="seven words")
        assert content(browser, typed) == walked(browser, session), trick
        assert not edits, trick  # walked, as the page did more than take the value


def test_a_field_typed_by_selector_is_found_and_key_by_key_is_walked(browser, form, edits):
    session, refs = form
    by_selector = session.call("type", selector="#city", text="Rome")  # its line found by the ref on it
    assert content(browser, by_selector) == walked(browser, session) and len(edits) == 1
    by_xpath = session.call("type", selector="(//textarea)[1]", text="Notes")
    assert content(browser, by_xpath) == walked(browser, session) and len(edits) == 2
    slowly = session.call("type", ref=refs["city"], text="Oslo", delay=1)
    appended = session.call("type", ref=refs["name"], text=" more", clear=False)
    assert content(browser, slowly) != content(browser, appended)
    assert content(browser, appended) == walked(browser, session)
    assert len(edits) == 2  # key by key: walked


def test_back_to_back_typing_reads_back_each_page_as_it_was(browser, form, edits):
    # The history's promise: calls queued all at once (each waits on the session thread for the previous
    # one's capture, as a fast agent's do), every refId then reads the page as it was at its call.
    session, refs = form
    calls = []
    for n in range(6):
        calls += [("type", {"ref": refs["name"], "text": f"name {n}"}), ("snapshot", {}),
                  ("type", {"ref": refs["city"], "text": f"city {n}"})]
    futures = [browser.submit(tool, {"sessionId": session.id, **args}) for tool, args in calls]
    answers = [f.result(timeout=60) for f in futures]
    name = city = None
    for (tool, args), answer in zip(calls, answers, strict=True):
        if tool == "type":
            name, city = (args["text"], city) if args["ref"] == refs["name"] else (name, args["text"])
        page = content(browser, answer)
        assert re.search(rf'textbox "Name"[^\n]*\]: {name}\n', page), (tool, args, page)
        if city is not None:
            assert re.search(rf'textbox "City"[^\n]*\]: {city}\n', page), (tool, args, page)
    assert len(edits) == 12  # every type's capture was an edit
