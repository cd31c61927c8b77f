"""End to end: after a `type` that filled one plain text field, the history's capture is the last whole
snapshot with that field's line changed (snapshots._edited), not a new walk; and wherever the page did more
than take the value, or the line is not certain, it is walked as before.

Each capture is held against a real walk of the same page: an `evaluate` that changes nothing, whose own
capture always walks. Whether the capture was edited is read from the server's log (`capture_edited`), so
each test shows that the path it guards ran, or did not.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import PAGES, logged_events, stored_page

import mcpbrowser
from mcpbrowser.config import Config

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[1]

FORM = """<!doctype html><title>Form</title>
<style>input:focus, textarea:focus { outline: 2px solid blue; border-color: #86b7fe; box-shadow: 0 0 0 4px #ccf }
input:invalid { background-color: #fee }</style>
<h1>Sign up</h1>
<label>Name <input id=name></label>
<input id=city aria-label=City>
<input id=find type=search aria-label=Find>
<textarea id=area aria-label=Area></textarea>
<input id=hinted placeholder=Hinted>
<label><input type=checkbox id=remind> Remind me</label>
<button>Save</button>"""

# Pages that do more than take the value, each in its own way, or whose field's line a walk writes otherwise:
# the capture must be walked. Most come from the outside review of this feature (2026-11-28), which found each
# one edited wrongly before its guard: (page, the field's label, the text typed).
NOTE = "<label>Note <input id=f></label>"
TRICKS = {
    # The page counts the characters as they come (a mutation).
    "counter": (NOTE + "<p id=count>0</p><script>f.oninput = e => { count.textContent = e.target.value.length }"
                "</script>", "Note", "seven words"),
    # It copies the value into another field (no mutation: the other control's value).
    "copy": (NOTE + "<label>Copy <input id=g></label><script>f.oninput = e => { g.value = e.target.value }</script>",
             "Note", "seven words"),
    # It upper-cases the value as it comes: the field holds other text than was typed.
    "upper": (NOTE + "<script>f.oninput = e => { e.target.value = e.target.value.toUpperCase() }</script>",
              "Note", "seven words"),
    # It retitles the page once the value is long (a mutation in the head, from the field's own event).
    "retitled": (NOTE + "<script>f.oninput = e => { if (e.target.value.length > 3) document.title = 'long' }"
                 "</script>", "Note", "seven words"),
    # The field sits in another control's label: the checkbox's name holds its value.
    "label": ("<label><input type=checkbox> Remind me in <input id=f aria-label=Days> days</label>", "Days", "seven"),
    # An aria-labelledby names a button after the field's container.
    "labelledby": ("<div id=box>" + NOTE + "</div><button aria-labelledby=box></button>", "Note", "seven words"),
    # An element owns the field into its own name.
    "owned": ("<div id=lbl aria-owns=f>Amount</div><input id=f aria-label=Note><button aria-labelledby=lbl></button>",
              "Note", "seven words"),
    # Elements whose name comes from their content hold the field.
    "link": ("<a href='#x'>Search for <input id=f aria-label=Note></a>", "Note", "seven words"),
    "button-role": ("<div role=button tabindex=0>Send <input id=f aria-label=Note> now</div>", "Note", "seven words"),
    "cell": ("<table><tr><th>Col</th></tr><tr><td>Cell <input id=f aria-label=Note></td></tr></table>", "Note",
             "seven words"),
    # A placeholder: the field's line has children.
    "placeholder": ("<input id=f aria-label=Note placeholder='write here'>", "Note", "seven words"),
    # A value that says the field's name: Playwright leaves it out of the line.
    "named-value": ("<input id=f aria-label=Note>", "Note", "Note"),
    # Fields in a shadow root: the host holds the focus mark, and the lines outnumber the document's elements.
    "shadow": ("<div id=host></div><script>host.attachShadow({mode: 'open'}).innerHTML = Array.from({length: 10}, "
               "(_, i) => `<input id=f${i} aria-label='Field ${i}'>`).join('')</script>", "Field 8", "eight"),
    # A secret field already shows [REDACTED]: the walk's redaction reads the fields again.
    "secret": (NOTE + "<label>Password <input type=password id=p value=hunter22x></label>", "Note", "seven words"),
    # A secret field the snapshot does not show holds the very text typed: the walk hides it in the field too.
    "hidden-secret": (NOTE + "<input type=password value='seven words' style=display:none>", "Note", "seven words"),
    "otp-in-details": (NOTE + "<details><summary>More</summary><input autocomplete=one-time-code "
                       "value='seven words' aria-label=Code></details>", "Note", "seven words"),
    # CSS that shows content by the focus or the value's validity (no mutation, no event elsewhere).
    "focus-css": ("<style>.hint{display:none} #f:focus + .hint{display:block}</style><input id=f aria-label=Note>"
                  "<p class=hint>Your public handle</p>", "Note", "seven words"),
    "invalid-css": ("<style>.err{display:none} input:invalid ~ .err{display:block}</style>"
                    "<input id=f aria-label=Note pattern='[0-9]{5}'><p class=err>Five digits</p>", "Note", "abc"),
    # Changes no mutation shows, made by the page's own listener on the field.
    "popover": ("<input id=f aria-label=Note><div id=pop popover>Suggestions</div><script>"
                "for (const t of ['toggle', 'beforetoggle']) addEventListener(t, e => e.stopImmediatePropagation(), "
                "true); f.oninput = () => pop.showPopover()</script>", "Note", "seven words"),
    "sheet-disabled": ("<style id=s>.more{display:none}</style><input id=f aria-label=Note><p class=more>More</p>"
                       "<script>f.oninput = () => { s.disabled = true }</script>", "Note", "seven words"),
    "insert-rule": ("<style id=s></style><input id=f aria-label=Note><p class=more>More</p>"
                    "<script>f.oninput = () => s.sheet.insertRule('.more{display:none}')</script>", "Note",
                    "seven words"),
    "manual-slot": ("<div id=host><span>One</span><span>Two</span></div><input id=f aria-label=Note><script>"
                    "const r = host.attachShadow({mode: 'open', slotAssignment: 'manual'});"
                    "r.innerHTML = '<slot></slot>';"
                    "r.firstChild.assign(host.children[0]); f.oninput = () => r.firstChild.assign(host.children[1])"
                    "</script>", "Note", "seven words"),
    "custom-state": ("<style>.m{display:none} x-s:state(on) + .m{display:block}</style><x-s></x-s><p class=m>Shown</p>"
                     "<input id=f aria-label=Note><script>customElements.define('x-s', class extends HTMLElement {"
                     " constructor() { super(); this.i = this.attachInternals() } }); f.oninput = () => "
                     "document.querySelector('x-s').i.states.add('on')</script>", "Note", "seven words"),
    # An animation that will show text later, its events stopped by the page: no page is clean while it runs.
    # A custom property set by the focus, read by a rule that shows (the outside review of 2026-11-28).
    "focus-custom-property": ("<style>.hint{display:var(--h,none)} #f:focus + .hint{--h:block}</style>"
                              "<input id=f aria-label=Note><p class=hint>Your public handle</p>", "Note",
                              "seven words"),
    # A field sized by its content moves the boxes beside it.
    "field-sizing": ("<style>.row{display:flex;width:300px} #f{field-sizing:content;flex:none} .side{flex:1 1 0;"
                     "min-width:0;container-type:inline-size} @container (width < 60px){ .tip{display:none} }</style>"
                     "<div class=row><input id=f aria-label=Note><div class=side><p class=tip>Tip</p></div></div>",
                     "Note", "a text long enough to push the tip out of the row beside it"),
    # The second outside review (2026-11-28): a direction the text gives the field, the scroll its focus makes
    # (a scroll-state query, a scroll-driven animation), a filter that makes a box hold fixed ones, an
    # animation of a size or of pointer events (started by the field's handler, or running all along).
    "direction": ("<style>p{display:none} #f:dir(rtl) ~ p{display:block}</style><input id=f dir=auto aria-label=Note>"
                  "<p>Right to left</p>", "Note", "\u05e9\u05dc\u05d5\u05dd"),
    "scroll-state": ("<style>html{container-type:scroll-state} .up{display:none} @container scroll-state(scrollable: "
                     "top){ .up{display:block} }</style><p class=up>Back to top</p><div style='height:3000px'></div>"
                     "<input id=f aria-label=Note>", "Note", "seven words"),
    # A text field that is a secret one (a one-time code): the page watch would prove the edit, the look after the
    # typing refuses it; a code too short to scrub from every text is hidden in its field by the walk alone.
    "one-time-code": ("<input id=f aria-label=Note autocomplete=one-time-code>", "Note", "739"),
    # What the typing set off, later than the settle's first look (a timer, a request): the proof sent with the
    # settle saw only the value, and the settle then waited for the rest (issue 75).
    "late-write": ("<input id=f aria-label=Note><p id=o></p><script>f.oninput = () => setTimeout(() => "
                   "{ o.textContent = 'Saved ' + f.value }, 60)</script>", "Note", "seven words"),
    "late-request": ("<input id=f aria-label=Note><p id=o></p><script>f.oninput = () => fetch('/title/saved')"
                     ".then(r => r.text()).then(() => { o.textContent = 'Saved' })</script>", "Note", "seven words"),
    "scroll-timeline": ("<style>@keyframes p{from{pointer-events:auto} to{pointer-events:none}} button{animation:p "
                        "linear both;animation-timeline:scroll(root)}</style><button>Top</button><div "
                        "style='height:3000px'></div><input id=f aria-label=Note>", "Note", "seven words"),
    "filter": ("<style>.wrap{width:0;height:0} .wrap button{position:fixed;left:0;top:0;width:100%;height:100%;"
               "padding:0;border:0;min-width:0} #f:focus ~ .wrap{filter:blur(0)}</style><input id=f aria-label=Note>"
               "<div class=wrap><button>Go</button></div>", "Note", "seven words"),
    "animated-width": ("<input id=f aria-label=Note><button id=g style='padding:0;border:0'>Go</button><script>"
                       "f.oninput = () => g.animate([{width: '0px'}], {duration: 1, fill: 'forwards'}).finish()"
                       "</script>", "Note", "seven words"),
    # (Its keyframes hold one value: a walk a moment later reads the same page; the edit is refused all the same.)
    "pointer-animation": ("<style>@keyframes p{0%,100%{pointer-events:auto}} button{animation:p 60s infinite}</style>"
                          "<input id=f aria-label=Note><button>Go</button>", "Note", "seven words"),
    "late-animation": ("<style>@keyframes show{from{visibility:hidden}to{visibility:visible}} .late{visibility:hidden;"
                       "animation:show 0.01s 60s forwards}</style><input id=f aria-label=Note><p class=late>Late</p>"
                       "<script>for (const t of ['animationstart', 'animationend']) addEventListener(t, e => "
                       "e.stopImmediatePropagation(), true)</script>", "Note", "seven words"),
}


# A `select` of one option in a native select: its capture is the last snapshot with the [selected] mark moved.
CHOICES = """<!doctype html><title>Choose</title>
<style>select:invalid, select:focus { border-color: red; outline: 2px solid blue; box-shadow: 0 0 2px red;
background: #fee; color: #600; opacity: 0.9 } option:checked { color: green } input:focus { outline: 0 }</style>
<label>Size <select id=size><option>Small</option><option selected>Medium</option><option value=l>Large</option>
</select></label>
<select id=plan aria-label=Plan><option disabled>Pick one</option><option label="Basic plan">basic</option>
<option value=pro>Pro "quoted" &amp; more</option><option>  spaced   out </option></select>
<label>Note <input id=note></label>
<button>Save</button>"""
SELECT = "<label>Pick <select id=s><option value=a>Apple</option><option value=b>Banana</option></select></label>"
# Pages where the choice does more, or a line the edit would write is not certain: walked. (page, value chosen)
CHOICE_TRICKS = {
    "shows-more": (SELECT + "<p id=more></p><script>s.onchange = () => { more.textContent = 'Ripe?' }</script>", "b"),
    "copies": (SELECT + "<input id=o aria-label=Other><script>s.onchange = () => { o.value = s.value }</script>", "b"),
    "moves-focus": (SELECT + "<input id=o aria-label=Other><script>s.onchange = () => o.focus()</script>", "b"),
    "retitles": (SELECT + "<script>s.oninput = () => { document.title = s.value }</script>", "b"),
    "shows-later": (SELECT + "<p id=more></p><script>s.onchange = () => setTimeout(() => { more.textContent = "
                    "'Ripe?' }, 60)</script>", "b"),
    "group": ("<select id=s aria-label=Pick><optgroup label=Fruit><option value=a>Apple</option>"
              "<option value=b>Banana</option></optgroup></select>", "b"),
    # An option the walk leaves out, before the chosen one: its place would name another select's line.
    "hidden-option": ("<select id=s aria-label=Pick><option value=a>Apple</option><option hidden>Ghost</option>"
                      "<option value=b>Banana</option></select><select aria-label=Other><option>One</option>"
                      "<option>Two</option></select>", "b"),
    "in-button": ("<button>Fruit: <select id=s><option value=a>Apple</option><option value=b>Banana</option>"
                  "</select></button>", "b"),
    "labelledby": ("<div id=box>" + SELECT + "</div><button aria-labelledby=box></button>", "b"),
    "checked-css": ("<style>.ripe{display:none} #s:has(option[value=b]:checked) ~ .ripe{display:block}</style>"
                    + SELECT + "<p class=ripe>Ripe</p>", "b"),
    "required": ("<style>.need{display:none} #s:invalid ~ .need{display:block}</style><select id=s required "
                 "aria-label=Pick><option value=''>Choose</option><option value=b>Banana</option></select>"
                 "<p class=need>Needed</p>", "b"),
    "popover": (SELECT + "<div id=pop popover>Ripe</div><script>for (const t of ['toggle', 'beforetoggle']) "
                "addEventListener(t, e => e.stopImmediatePropagation(), true); s.onchange = () => pop.showPopover()"
                "</script>", "b"),
    # The outside review of the select's edit (2026-11-28) found each of these edited wrongly before its guard.
    # An element owned into the select stands in for an option the walk leaves out: the wrong line was marked.
    "owns": ("<select id=s aria-label=Pick aria-owns=fake><option value=a>Apple</option><option hidden>Ghost</option>"
             "<option value=b>Banana</option></select><div id=fake role=option style=pointer-events:none>Fake</div>",
             "b"),
    # Rules that apply by the choice and change what a walk writes, however they say it.
    "custom-property": ("<style>.need{display:var(--show,none)} #s:invalid ~ .need{--show:block}</style><select id=s "
                        "required aria-label=Pick><option value=''>Choose</option><option value=b>Banana</option>"
                        "</select><p class=need>Needed</p>", "b"),
    "nested": ("<style>.need{display:none} #s:invalid { & ~ .need{display:block} }</style><select id=s required "
               "aria-label=Pick><option value=''>Choose</option><option value=b>Banana</option></select>"
               "<p class=need>Needed</p>", "b"),
    "scope": ("<style>.ripe{display:none} @scope (body:has(#s option[value=b]:checked)) { .ripe{display:block} }"
              "</style>" + SELECT + "<p class=ripe>Ripe</p>", "b"),
    "import": ("<style>@import url(/edit-choice.css);</style>" + SELECT + "<p class=ripe>Ripe</p>", "b"),
    "container-style": ("<style>.ripe{display:none} body:has(option[value=b]:checked){--ripe:1} "
                        "@container style(--ripe: 1) { .ripe{display:block} }</style>" + SELECT +
                        "<div><p class=ripe>Ripe</p></div>", "b"),
    "option-text": ("<style>option:checked{--m:'* '} option::before{content:var(--m)}</style>" + SELECT, "b"),
    "pointer-events": ("<style>#s:invalid ~ button{pointer-events:none}</style><form><select id=s required "
                       "aria-label=Pick><option value=''>Choose</option><option value=b>Banana</option></select>"
                       "<button>Submit</button></form>", "b"),
    # Changes no mutation shows: a sheet's media, an animation finished at once that keeps its end.
    "sheet-media": ("<style>.ripe{display:none}</style>" + SELECT + "<p class=ripe>Ripe</p><script>s.onchange = () => "
                    "{ document.styleSheets[0].media.mediaText = 'print' }</script>", "b"),
    "finished-animation": ("<style>.ripe{visibility:hidden}</style>" + SELECT + "<p class=ripe id=r>Ripe</p><script>"
                           "s.onchange = () => r.animate([{visibility: 'visible'}], {duration: 1, fill: 'forwards'})"
                           ".finish()</script>", "b"),
    # The second outside review: a handler that scrolls (a scroll-state query), a filter that makes a box hold
    # fixed ones, a handler's animation of pointer events.
    # (The window's scroll, its events stopped by the page; a box's scroll, heard only at the next rendering frame,
    # when the rule applies too: the settle waits for that frame on such a page, test_settle_cost.)
    "scrolls": ("<style>html{container-type:scroll-state} .up{display:none} @container scroll-state(scrollable: top)"
                "{ .up{display:block} }</style>" + SELECT + "<p class=up>Back to top</p><div style='height:3000px'>"
                "</div><script>addEventListener('scroll', e => e.stopImmediatePropagation(), true);"
                "s.onchange = () => scrollTo(0, 2000)</script>", "b"),
    "scrolls-box": ("<style>#box{height:100px;overflow:auto;container-type:scroll-state} .up{display:none} "
                    "@container scroll-state(scrollable: top){ .up{display:block} }</style>" + SELECT +
                    "<div id=box><p class=up>Back to top</p><div style='height:3000px'></div></div>"
                    "<script>s.onchange = () => box.scrollTo(0, 2000)</script>", "b"),
    "filter": ("<style>.wrap{width:0;height:0} .wrap button{position:fixed;left:0;top:0;width:100%;height:100%;"
               "padding:0;border:0;min-width:0} #s:invalid ~ .wrap{filter:blur(0)}</style><select id=s required "
               "aria-label=Pick><option value=''>Choose</option><option value=b>Banana</option></select>"
               "<div class=wrap><button>Go</button></div>", "b"),
    "animated-pointer": (SELECT + "<button id=g>Go</button><script>s.onchange = () => g.animate([{pointerEvents: "
                         "'none'}], {duration: 1, fill: 'forwards'}).finish()</script>", "b"),
    # A select sized by its choice moves the boxes beside it: a ref gone, a container query applied.
    "field-sizing": ("<style>.row{display:flex;width:300px} #s{field-sizing:content;flex:none} .side{flex:1 1 0;"
                     "min-width:0;container-type:inline-size} @container (width < 60px){ .tip{display:none} }</style>"
                     "<div class=row><select id=s aria-label=Pick><option value=a>A</option><option value=b>Banana "
                     "split with extra whipped cream and sprinkles on top</option></select><div class=side>"
                     "<p class=tip>Tip</p></div></div>", "b"),
}


@pytest.fixture(scope="module")
def browser(pages):
    PAGES["/edit-form"] = FORM
    PAGES["/edit-choices"] = CHOICES
    PAGES["/edit-choice.css"] = ".ripe{display:none} #s:has(option[value=b]:checked) ~ .ripe{display:block}"
    for name, (body, _, _) in TRICKS.items():
        PAGES[f"/edit-trick-{name}"] = f"<!doctype html><title>{name}</title>{body}"
    for name, (body, _) in CHOICE_TRICKS.items():
        PAGES[f"/edit-choice-{name}"] = f"<!doctype html><title>{name}</title>{body}"
    # Each value costs four calls: beyond the default 60 a minute per tool.
    with mcpbrowser.Browser(Config(headless=True, db=":memory:", allow_evaluate=True, rate_limit=100_000)) as b:
        yield b
    del PAGES["/edit-form"], PAGES["/edit-choices"], PAGES["/edit-choice.css"]
    for name in TRICKS:
        del PAGES[f"/edit-trick-{name}"]
    for name in CHOICE_TRICKS:
        del PAGES[f"/edit-choice-{name}"]


@pytest.fixture
def edits():
    """The capture_edited events the server logs while the test runs, as a list that grows."""
    with logged_events("capture_edited") as seen:
        yield seen

content = stored_page


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
          "é ünï", "١٢٣", "１２３", "ada@example.com", "@at", "x:", "a\\b", "", "C++", "50%", ".inf", "+.NaN",
          "a" * 300]


@pytest.mark.parametrize("field", ["name", "find", "area"])
def test_a_filled_field_is_captured_as_a_walk_reads_it(browser, form, edits, field):
    session, refs = form
    for value in VALUES:
        value = field + value if len(value) > 100 else value  # not the text another field holds: that walks
        before = len(edits)
        typed = session.call("type", ref=refs[field], text=value)
        assert content(browser, typed) == walked(browser, session), (field, value)
        assert len(edits) == before + 1, (field, value)  # the capture was the edit, not a walk


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
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
    _, label, text = TRICKS[trick]
    with browser.create_session() as session:
        session.navigate(pages.url(f"/edit-trick-{trick}"))
        ref = ref_of(walked(browser, session), f'textbox "{label}"')
        typed = content(browser, session.call("type", ref=ref, text=text))
        now = walked(browser, session)
        assert typed == now, (trick, typed, now)  # both pages, stored and walked, on a failure
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


@pytest.mark.parametrize("field", ["<input type=search autocomplete=one-time-code aria-label=Code value=918273>",
                                   "<input type=number autocomplete=one-time-code aria-label=Code value=918273>",
                                   "<input autocomplete=one-time-code list=codes aria-label=Code value=918273>"
                                   "<datalist id=codes><option value=1></datalist>"])
def test_a_secret_fields_value_is_hidden_whatever_its_role(browser, pages, field):
    # A searchbox, a spinbutton, a combobox show their input's value as a textbox does: the walk hides a secret
    # field's in each (the outside review found a one-time code typed into type=search shown in clear).
    PAGES["/edit-secret-role"] = f"<!doctype html><title>code</title>{field}"
    try:
        with browser.create_session() as session:
            session.navigate(pages.url("/edit-secret-role"))
            page = walked(browser, session)
            assert '"Code"' in page and "[REDACTED]" in page and "918273" not in page, page
    finally:
        del PAGES["/edit-secret-role"]


def test_a_chosen_option_is_captured_as_a_walk_reads_it(browser, pages, edits):
    with browser.create_session() as session:
        session.navigate(pages.url("/edit-choices"))
        refs = {name: ref_of(walked(browser, session), line) for name, line in
                [("size", 'combobox "Size"'), ("plan", 'combobox "Plan"')]}
        choices = [("size", {"labels": ["Large"]}), ("plan", {"values": ["basic"]}), ("size", {"values": ["Small"]}),
                   ("plan", {"values": ["pro"]}), ("plan", {"labels": ["spaced out"]}), ("size", {"labels": ["Large"]})]
        for n, (name, choice) in enumerate(choices, start=1):
            chosen = session.call("select", ref=refs[name], **choice)
            page = content(browser, chosen)
            assert page == walked(browser, session), (name, choice)
            assert len(edits) == n, (name, choice)  # the capture was the edit, not a walk
            assert page.count("[selected]") == 2, page
        by_selector = session.call("select", selector="#size", values=["Medium"])  # its list found by the ref on it
        assert content(browser, by_selector) == walked(browser, session) and len(edits) == len(choices) + 1
        assert 'option "Medium" [selected]' in content(browser, by_selector)


@pytest.mark.parametrize("trick", sorted(CHOICE_TRICKS))
def test_a_choice_that_does_more_than_choose_is_walked(browser, pages, edits, trick):
    _, value = CHOICE_TRICKS[trick]
    with browser.create_session() as session:
        session.navigate(pages.url(f"/edit-choice-{trick}"))
        before = walked(browser, session)
        assert "combobox" in before, before
        chosen = content(browser, session.call("select", selector="#s", values=[value]))
        now = walked(browser, session)
        assert chosen == now, (trick, chosen, now)  # both pages, stored and walked, on a failure
        assert chosen != before, trick  # the choice showed (positive control)
        assert not edits, trick  # walked, as the page did more than choose, or a line was not certain


def test_back_to_back_choosing_and_typing_reads_back_each_page_as_it_was(browser, pages, edits):
    with browser.create_session() as session:
        session.navigate(pages.url("/edit-choices"))
        size = ref_of(walked(browser, session), 'combobox "Size"')
        calls = []
        for n in range(4):
            calls += [("select", {"ref": size, "labels": [("Small", "Large")[n % 2]]}), ("snapshot", {}),
                      ("type", {"selector": "#note", "text": f"note {n}"})]
        futures = [browser.submit(tool, {"sessionId": session.id, **args}) for tool, args in calls]
        answers = [f.result(timeout=60) for f in futures]
        chosen = note = None
        for (tool, args), answer in zip(calls, answers, strict=True):
            chosen = args["labels"][0] if tool == "select" else chosen
            note = args["text"] if tool == "type" else note
            page = content(browser, answer)
            assert f'option "{chosen}" [selected]' in page, (tool, args, page)
            assert note is None or re.search(rf'textbox "Note"[^\n]*\]: {note}\n', page), (tool, args, page)
        assert len(edits) == 8  # every select's and type's capture was an edit


# Editors that are not fields: a contenteditable, and one built as CodeMirror builds it (a div per line, redrawn
# by its own script once the input's events are over, the caret's line marked).
EDITORS = {
    "plain": "<div id=ed contenteditable role=textbox aria-label=Editor aria-multiline=true></div>",
    "lines": "<div id=ed contenteditable role=textbox aria-label=Editor aria-multiline=true></div><script>let t;"
             "const draw = () => { const lines = ed.innerText.split('\\n');"
             " ed.replaceChildren(...lines.map((text, i) => { const line = document.createElement('div');"
             " line.className = i === lines.length - 1 ? 'line active' : 'line'; line.textContent = text || '\\u200b';"
             " return line })) };"
             "ed.addEventListener('input', () => { clearTimeout(t); t = setTimeout(draw, 0) })</script>",
}


@pytest.mark.parametrize("editor", sorted(EDITORS))
def test_back_to_back_typing_into_an_editor_reads_back_each_page_as_it_was(browser, pages, editor):
    # The history's promise for an editor that is not a field (issue 75): calls queued all at once, every refId
    # reads back the editor's text as it was at its call, each line of it.
    PAGES[f"/edit-editor-{editor}"] = f"<!doctype html><title>Editor</title>{EDITORS[editor]}<p>Below</p>"
    try:
        with browser.create_session() as session:
            session.navigate(pages.url(f"/edit-editor-{editor}"))
            calls = []
            for n in range(4):
                calls += [("type", {"selector": "#ed", "text": f"cell {n} first\ncell {n} second"}), ("snapshot", {})]
            futures = [browser.submit(tool, {"sessionId": session.id, **args}) for tool, args in calls]
            answers = [f.result(timeout=60) for f in futures]
            for n, answer in enumerate(answers):
                page = content(browser, answer)
                # (A walk leaves out a text that stands beside elements in a textbox: the plain one's first line.)
                assert f"cell {n // 2} second" in page and (editor == "plain" or f"cell {n // 2} first" in page), \
                    (n, page)
                assert "Below" in page and all(f"cell {m} " not in page for m in range(4) if m != n // 2), (n, page)
            assert content(browser, answers[-1]) == walked(browser, session)
    finally:
        del PAGES[f"/edit-editor-{editor}"]


# An editor as CodeMirror builds one (a contenteditable textbox, a <div> per line, its numbers in <span>s, an empty
# line a <br>): it takes the typing's input itself and redraws its lines, keeping each line's element as CodeMirror
# does, so that a walk gives each line the ref it had. {start}: its text; {lines}: the element a line is drawn in.
# A page below may change how it draws (window.numberOf, fresh: new line elements, late: after a 100 ms timer) and add
# what it does besides (window.also). The timer outlasts a loaded machine's fill: at 30 ms, a module run beside
# another module saw the lines drawn at the settle's first look, and the capture was rightly an edit.
CODE = """<div class=editor id=box><div class=gutter id=gutter><span class=n>1</span></div>
<div id=ed contenteditable role=textbox aria-label=Editor aria-multiline=true>{start}</div></div>
<p id=status>Ready</p><script>
const number = (part) => window.numberOf ? numberOf(part) :
  Object.assign(document.createElement('span'), {{className: 'num', textContent: part}});
const drawLine = (line, text) => line.replaceChildren(...(text ? text.split(/(\\d+)/).filter(Boolean).map(part =>
  /^\\d+$/.test(part) ? number(part) : document.createTextNode(part)) : [document.createElement('br')]));
const draw = (text) => {{
  const lines = text.split('\\n'), kept = window.fresh ? [] : [...ed.children];
  if (window.fresh) ed.replaceChildren();
  lines.forEach((words, i) => {{
    let line = kept[i];
    if (!line) {{ line = document.createElement('{lines}'); line.className = 'line'; ed.append(line) }}
    drawLine(line, words);
  }});
  kept.slice(lines.length).forEach(line => line.remove());
  if (window.also) also(text);
}};
ed.addEventListener('beforeinput', e => {{
  e.preventDefault();
  const text = (getSelection().isCollapsed ? [...ed.children].map(line => line.textContent).join('\\\\n') : '') +
    (e.data || (e.dataTransfer && e.dataTransfer.getData('text/plain')) || '');
  if (window.late) setTimeout(() => draw(text), 100); else draw(text);
  ed.dispatchEvent(new Event('input', {{bubbles: true}}));
}});
const start = ed.textContent;
ed.textContent = '';
draw(start);
</script>"""
EDITOR_PAGES = {
    "code": CODE.format(start="x = 1\nprint(x)", lines="div"),
    "paragraphs": CODE.format(start="First\nSecond", lines="p"),
}
# What each editor page is typed, in turn: as many lines as before (the same elements, the editor's size kept),
# each of them written before (a line of no text, or of the editor's name, is left out: the walk gave it no ref).
EDITOR_TEXTS = ["y = 22\nprint(y + 1)", "  spaced   out \nx: 1", "- dash\n[1]", "y = 3\n", "Editor\n"]


def editor_page(pages, name, body):
    PAGES[f"/edit-editor-{name}"] = f"<!doctype html><title>Editor</title>{body}"
    return pages.url(f"/edit-editor-{name}")


@pytest.mark.parametrize("editor", sorted(EDITOR_PAGES))
def test_typing_into_an_editor_is_captured_as_a_walk_reads_it(browser, pages, edits, editor):
    # Issue 75: the capture after typing into an editor is the last snapshot with the editor's lines changed, where
    # the page watch proves only they changed; each one held against a real walk of the page as the call left it.
    with browser.create_session() as session:
        session.navigate(editor_page(pages, editor, EDITOR_PAGES[editor]))
        walked(browser, session)
        for n, text in enumerate(EDITOR_TEXTS, start=1):
            typed = content(browser, session.call("type", selector="#ed", text=text))
            assert typed == walked(browser, session), (text, typed)
            assert len(edits) == n, (text, typed)  # the capture was the edit, not a walk
        # A generic line of the editor's name or of no text is left out; a paragraph is not.
        assert re.search(r'textbox "Editor" \[active\] \[ref=\w+\]\n' if editor == "code" else
                         r'paragraph \[ref=\w+\]: Editor\n *- paragraph \[ref=\w+\]\n', typed), typed
        # A line the last page did not show (a generic one of no text; a paragraph shows): its ref may not be one of
        # Playwright's current ones, walked.
        session.call("type", selector="#ed", text="y = 3\n")
        walked(browser, session)
        before = len(edits)
        typed = content(browser, session.call("type", selector="#ed", text="y = 4\nw"))
        assert typed == walked(browser, session), typed
        assert len(edits) == before + (editor == "paragraphs")
        # Fewer lines: the editor's box shrinks, which may move what is around it: walked.
        before = len(edits)
        typed = content(browser, session.call("type", selector="#ed", text="one line"))
        assert typed == walked(browser, session) and "one line" in typed, typed
        assert len(edits) == before


@pytest.mark.parametrize("editor", sorted(EDITOR_PAGES))
def test_back_to_back_typing_into_an_editor_reads_back_each_page_as_a_walk(browser, pages, edits, editor):
    # The history's promise where the captures are edits (issue 75): calls queued all at once, each capture the
    # last one edited; every refId then reads back the page a walk reads after that call's typing (typed again).
    texts = [f"cell = {n}\nprint(cell + {n})" for n in range(6)]
    with browser.create_session() as session:
        session.navigate(editor_page(pages, editor, EDITOR_PAGES[editor]))
        walked(browser, session)
        futures = [browser.submit("type", {"sessionId": session.id, "selector": "#ed", "text": text})
                   for text in texts]
        stored = [content(browser, f.result(timeout=60)) for f in futures]
        assert len(edits) == len(texts)  # every capture an edit
        for text, page in zip(texts, stored, strict=True):
            session.call("type", selector="#ed", text=text)
            assert page == walked(browser, session), (text, page)


def test_a_field_and_an_editor_on_one_page_are_each_edited(browser, pages, edits):
    # Both proofs go out after a `type` on a page showing an editor's lines; whichever the typing was, it is edited.
    with browser.create_session() as session:
        session.navigate(editor_page(pages, "beside", "<label>Name <input id=name></label>" + EDITOR_PAGES["code"]))
        walked(browser, session)
        for n, (selector, text) in enumerate([("#name", "Ada"), ("#ed", "y = 2\nprint(y)"), ("#name", "Grace"),
                                              ("#ed", "z = 3\nprint(z)")], start=1):
            typed = content(browser, session.call("type", selector=selector, text=text))
            assert typed == walked(browser, session), (selector, text, typed)
            assert len(edits) == n, (selector, text)


def code(extra):
    return CODE.format(start="x = 1\nprint(x)", lines="div") + extra


# Editors whose typing does more than change their lines, or whose lines a walk writes otherwise than the edit
# would: each is walked. (page, the text typed: as many lines as the page starts with, each written.)
EDITOR_TRICKS = {
    # Typing makes a link, an element with a role, an element in an element, a widget the user cannot edit.
    "link": (code("<script>numberOf = (n) => Object.assign(document.createElement('a'), {href: '#' + n, "
                  "textContent: n})</script>"), "y = 2\nprint(y)"),
    "role": (code("<script>numberOf = (n) => { const s = document.createElement('span'); s.setAttribute('role', "
                  "'note'); s.textContent = n; return s }</script>"), "y = 2\nprint(y)"),
    "code-number": (code("<script>numberOf = (n) => Object.assign(document.createElement('code'), "
                         "{textContent: n})</script>"), "y = 2\nprint(y)"),
    "nested": (code("<script>numberOf = (n) => { const s = document.createElement('span'); "
                    "s.append(Object.assign(document.createElement('b'), {textContent: n})); return s }</script>"),
               "y = 2\nprint(y)"),
    "widget": (code("<script>numberOf = (n) => { const s = document.createElement('span'); "
                    "s.contentEditable = 'false'; s.textContent = n; return s }</script>"), "y = 2\nprint(y)"),
    # It adds an element of a role right under the editor (of a fixed height), beside its lines: the walk writes it.
    "badge": (code("<style>#ed{height:200px}</style><script>also = () => { if (!ed.querySelector('[role]')) "
                   "ed.append(Object.assign(document.createElement('span'), {role: 'status', textContent: 'edited'}))"
                   " }</script>"),
              "y = 2\nprint(y)"),
    # It changes something outside the editor: a status line, a second editor that mirrors it.
    "status": (code("<script>also = (text) => { document.getElementById('status').textContent = text.length + "
                    "' characters' }</script>"), "y = 2\nprint(y)"),
    "mirror": (code("<div id=copy contenteditable role=textbox aria-label=Copy><div>x</div></div><script>also = "
                    "(text) => copy.firstChild.textContent = text</script>"), "y = 2\nprint(y)"),
    # New line elements (a walk gives them new refs); lines drawn after a timer (the settle waits for them).
    "fresh-lines": (code("<script>fresh = true</script>"), "y = 2\nprint(y)"),
    "late": (code("<script>late = true</script>"), "y = 2\nprint(y)"),
    # Another element is named after the editor's container: its name holds the editor's text.
    "labelledby": (code("<button aria-labelledby=box></button>"), "y = 2\nprint(y)"),
    # CSS that shows or hides by what the typing changes, or writes content beside a line.
    "has": (code("<style>body:has(.num) #status{display:none}</style>"), "y\nprint(y)"),
    "line-content": (code("<style>.line:last-child::after{content:' (end)'}</style>"), "y = 2\nprint(y)"),
    # An empty line under the pointer cursor is written as a line of its own.
    "pointer-line": (code("<style>.line:last-child{cursor:pointer} br{cursor:auto}</style>"), "y = 2\n"),
    # The editor's box grows with its text: the boxes beside it shrink (a container query applies).
    "grows": (code("<style>.editor{display:flex;width:320px} #ed{flex:none;white-space:pre} .gutter{flex:1 1 0;"
                   "min-width:0;container-type:inline-size} @container (width < 60px){ .n{display:none} }</style>"),
              "a line long enough to take the gutter's room\nprint(y)"),
    # The editor's text overflows its box (a fixed one): the box around it scrolls (a scroll-state query applies, at
    # the next rendering frame: stored before it, the page kept its line numbers in some runs).
    "overflows": (code("<style>.editor{height:60px;overflow:auto;container-type:scroll-state} #ed{width:120px;"
                       "height:40px} @container scroll-state(scrollable: bottom){ #ed .line{color:red} "
                       ".n{display:none} }</style>"),
                  "a line long enough to wrap on three lines of its box\nprint(y)"),
    # The editor renames itself; it sits in a heading (its name holds the editor's text); it is named by its own text.
    "renamed": (code("<script>also = (text) => ed.setAttribute('aria-label', 'Editor of ' + text.length)</script>"),
                "y = 2\nprint(y)"),
    "in-heading": (code("<script>const h = document.createElement('h2'); box.before(h); h.append(box)</script>"),
                   "y = 2\nprint(y)"),
    "self-named": (code("<script>ed.setAttribute('aria-labelledby', 'ed')</script>"), "y = 2\nprint(y)"),
    # The editor owns another element, or has a placeholder (a page showing another editor's lines): the walk
    # writes them among its lines.
    "owns": (code("<div id=owned>Owned</div><script>ed.setAttribute('aria-owns', 'owned')</script>"),
             "y = 2\nprint(y)"),
    "placeholder": (code("<div contenteditable role=textbox aria-label=Other><div>other</div></div><script>"
                         "ed.setAttribute('placeholder', 'Code here')</script>"), "y = 2\nprint(y)"),
    # A name longer than the walk writes: a line that says it is left out all the same.
    "long-name": (code("<style>#ed{font-size:1px}</style><script>ed.setAttribute('aria-label', 'L'.repeat(1000))"
                       "</script>"), "L" * 1000 + "\nprint(y)"),
    # Content the editor's own style writes; a field the editor's handler fills.
    "editor-content": (code("<style>#ed::before{content:'Code'}</style>"), "y = 2\nprint(y)"),
    "fills-field": (code("<input id=first aria-label=First><script>also = (text) => "
                         "{ document.getElementById('first').value = text.split('\\n')[0] }</script>"),
                    "y = 2\nprint(y)"),
    # A line the pointer passes through (the walk gives it no ref), a number hidden (the walk leaves it out).
    "line-pointer-events": (code("<style>.off{pointer-events:none}</style><script>also = () => "
                                 "ed.lastChild.classList.add('off')</script>"), "y = 2\nprint(y)"),
    "hidden-number": (code("<style>.num{visibility:hidden}</style>"), "y = 2\nprint(y)"),
    # A line hidden from assistive technology: the walk marks it [aria-hidden].
    "hidden-line": (code("<script>ed.firstChild.setAttribute('aria-hidden', 'true')</script>"), "y = 2\nprint(y)"),
    # An editor emptied by the typing: a rule shows a hint beside it.
    "empty": ("<style>.hint{display:none} #ed:empty ~ .hint{display:block}</style><div id=ed contenteditable "
              "role=textbox aria-label=Editor><div class=line>abc</div></div><p class=hint>Write something</p>", ""),
}


@pytest.mark.parametrize("trick", sorted(EDITOR_TRICKS))
def test_an_editor_that_does_more_than_change_its_lines_is_walked(browser, pages, edits, trick):
    body, text = EDITOR_TRICKS[trick]
    with browser.create_session() as session:
        session.navigate(editor_page(pages, f"trick-{trick}", body))
        before = walked(browser, session)
        typed = content(browser, session.call("type", selector="#ed", text=text))
        now = walked(browser, session)
        assert typed == now, (trick, typed, now)  # both pages, stored and walked, on a failure
        assert typed != before, trick  # the typing showed (positive control)
        assert not edits, trick  # walked


@pytest.mark.parametrize("mode", ["select", "editor"])
def test_the_cost_script_runs_both_ways(mode):
    # scripts/type_capture_cost.py (the figures in docs/performance.md), its select and editor modes, smallest
    # settings: it runs, and both ways are timed; how fast is the script's to say, not this test's.
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "type_capture_cost.py"), "--rows", "20",
                           "--rounds", "2", f"--{mode}"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    call = {"select": "select", "editor": "type into the editor"}[mode]
    assert re.fullmatch(rf"20 rows, 2 rounds each: the call after a {call} waited [\d.]+ ms with the capture "
                        r"edited, [\d.]+ ms walked \([\d.]+x\)\n", done.stdout), done.stdout


def test_a_secret_in_an_options_text_stays_hidden_in_the_edited_capture(browser, pages, edits):
    # A password typed in this session is a known secret; a select whose option says the same text: the held
    # snapshot was scrubbed, and the edit that moves the [selected] mark to that option keeps it scrubbed.
    secret = "Hunter22xq"
    PAGES["/edit-choice-secret"] = ("<!doctype html><title>secret</title><label>Password <input type=password "
                                    f"id=p></label><select id=s aria-label=Pick><option value=a>Apple</option>"
                                    f"<option value=b>{secret}</option></select>")
    try:
        with browser.create_session() as session:
            session.navigate(pages.url("/edit-choice-secret"))
            session.call("type", selector="#p", text=secret)
            held = walked(browser, session)
            assert 'option "[REDACTED]"' in held and secret not in held, held  # scrubbed where it stands
            chosen = content(browser, session.call("select", selector="#s", values=["b"]))
            assert len(edits) == 1  # the edit ran (the attempt happened)
            assert 'option "[REDACTED]" [selected]' in chosen and secret not in chosen, chosen
            assert chosen == walked(browser, session)
    finally:
        del PAGES["/edit-choice-secret"]
