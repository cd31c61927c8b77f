"""snapshot_text's filtered reads on the YAML Playwright writes for a real single-page application.

The snapshots below are Playwright's ai-mode YAML as optuna-dashboard (a React application)
rendered it, trimmed to the parts each test reads: YAML quotes a node line that holds ": ",
a textbox can be named by a placeholder of several hundred characters, and a card's caption
is a heading whose value follows it.
"""

import time

import pytest

from mcpbrowser import snapshot_text

pytestmark = pytest.mark.unit

STUDY_LIST = """- main [ref=e39]:
  - generic [ref=e41]:
    - button "Create" [ref=e60]
    - generic [ref=e68]:
      - generic [ref=e69]:
        - 'link "2. learning-rate Direction: MAXIMIZE" [ref=e70]':
          - /url: /dashboard/studies/2
          - generic [ref=e71]:
            - heading "2. learning-rate" [level=5] [ref=e72]
            - generic [ref=e73]: "Direction: MAXIMIZE"
        - generic [ref=e74]:
          - button "delete study" [ref=e78]
      - generic [ref=e81]:
        - 'link "1. quadratic Direction: MINIMIZE" [ref=e82]':
          - /url: /dashboard/studies/1
          - generic [ref=e83]:
            - heading "1. quadratic" [level=5] [ref=e84]
            - generic [ref=e85]: "Direction: MINIMIZE"
        - generic [ref=e86]:
          - button "delete study" [ref=e90]"""

PLACEHOLDER = ("## What is this feature for?\\n\\nHere you can freely take a note in *(GitHub flavored) Markdown "
               "format*.\\nIn addition, **code blocks with syntax highlights** and **formula** are also supported "
               "here, as shown below.\\n\\n### Code-block with Syntax Highlights\\n\\n```python\\ndef objective("
               "trial):\\n    x = trial.suggest_float(\\\"x\\\", -10, 10)\\n```\\n")
EDITOR = f"""- main [ref=e275]:
  - generic [ref=e764]: Markdown Editor
  - textbox "{PLACEHOLDER.replace(chr(92) + 'n', ' ')}" [ref=e773]:
    - /placeholder: "{PLACEHOLDER}"
  - button "Close" [ref=e776]
  - button "Save" [disabled]"""

TRIAL = """- main [ref=e275]:
  - generic [ref=e335]:
    - heading "Best Trial (number=11)" [level=6] [ref=e336]
    - heading "0.3415153406446071" [level=3] [ref=e337]
    - paragraph [ref=e338]: "Params = [x: 1.415606861227301, y: 0]"
    - link "Details" [ref=e339]:
      - /url: /dashboard/studies/1/trials?numbers=11
  - generic [ref=e720]:
    - heading "Trial 11 (trial_id=12)" [level=4] [ref=e721]
    - heading "Note" [level=5] [ref=e726]
    - button [ref=e729]
    - generic [ref=e732]:
      - paragraph [ref=e734]: Value
    - heading "Intermediate Values" [level=5] [ref=e737]
    - paragraph [ref=e738]: none"""


def test_a_control_whose_name_holds_a_colon_is_still_a_control():
    """YAML single-quotes `- 'link "… Direction: MAXIMIZE" [ref=e70]':`; read as any other link,
    it is the match (with its ref and /url), not the bare text inside it."""
    found, matches = snapshot_text.find(STUDY_LIST, "Direction", 30)
    assert matches == 2
    assert '- link "2. learning-rate Direction: MAXIMIZE" [ref=e70]' in found
    assert '- link "1. quadratic Direction: MINIMIZE" [ref=e82]' in found
    assert "/url: /dashboard/studies/1" in found and "e85" not in found and "'" not in found
    assert '- link "1. quadratic Direction: MINIMIZE" [ref=e82]' in snapshot_text.compact(STUDY_LIST)


def test_a_long_name_is_cut_but_never_its_ref():
    found, _ = snapshot_text.find(EDITOR, "Markdown", 30)  # one term: no header to count in the size
    box = next(line for line in found.splitlines() if "- textbox" in line)
    assert box.endswith("[ref=e773]") and "…" in box and len(box.strip()) <= snapshot_text.MAX_LINE + 20
    placeholder = next(line for line in found.splitlines() if "/placeholder" in line)
    assert placeholder.endswith("…") and len(placeholder.strip()) <= snapshot_text.MAX_LINE + 1
    assert len(found) < len(EDITOR) // 2


def test_a_matched_heading_brings_the_first_lines_it_titles():
    """A card's value under its caption, and the icon button beside a "Note" heading, come with
    the heading: no second read of its section."""
    found, matches = snapshot_text.find(TRIAL, "Best Trial|Note", 30)
    assert matches == 2
    lines = found.splitlines()
    best = lines.index('  - heading "Best Trial (number=11)" [level=6] [ref=e336]')
    assert lines[best + 1:best + 3] == ['  - heading "0.3415153406446071" [level=3] [ref=e337]',
                                        '  - paragraph [ref=e338]: "Params = [x: 1.415606861227301, y: 0]"']
    assert "Details" not in found  # two lines at most
    # what it did not bring, a section read does
    note = lines.index('  - heading "Note" [level=5] [ref=e726] (snapshot section=e726 reads its 4 nodes)')
    # a wrapper without text is passed over (not looked into), and the next level-5 heading ends it
    assert lines[note + 1] == "  - button [ref=e729]" and "Value" not in found


def test_the_lines_a_heading_brings_stop_at_the_next_heading_of_its_rank():
    found, _ = snapshot_text.find(TRIAL, "Note|Intermediate", 30)
    lines = found.splitlines()
    assert lines.count('  - heading "Intermediate Values" [level=5] [ref=e737]') == 1
    assert lines[lines.index('  - heading "Intermediate Values" [level=5] [ref=e737]') + 1] == \
        "  - paragraph [ref=e738]: none"


# -- several terms at once, and the section a heading, landmark or ref titles ---------------------
# Playwright's YAML for pages shaped as Django's admin renders them: an add-user form, and the
# index's "Recent actions" box (a heading in a wrapper, its list beside the wrapper).

ADD_USER = """- banner [ref=e2]:
  - link "Django administration" [ref=e5]:
    - /url: /admin/
- navigation "Breadcrumbs" [ref=e8]:
  - link "Home" [ref=e9]:
    - /url: /admin/
  - text: › Add user
- main [ref=e20]:
  - heading "Add user" [level=1] [ref=e21]
  - generic [ref=e22]:
    - generic [ref=e23]: "Username:"
    - textbox "Username:" [ref=e24]
    - generic [ref=e25]: Required. 150 characters or fewer.
  - generic [ref=e26]:
    - generic [ref=e27]: "Password:"
    - textbox "Password:" [ref=e28]
  - generic [ref=e29]:
    - generic [ref=e30]: "Password confirmation:"
    - textbox "Password confirmation:" [ref=e31]
  - group "Permissions" [ref=e32]:
    - checkbox "Staff status" [ref=e33]
    - checkbox "Superuser status" [ref=e34]
  - button "Save and add another" [ref=e40]
  - button "Save and continue editing" [ref=e41]
  - button "Save" [ref=e42]"""

INDEX = """- main [ref=e20]:
  - generic [ref=e21]:
    - table "Authentication and Authorization" [ref=e22]:
      - rowgroup [ref=e23]:
        - row "Users Add Change" [ref=e24]:
          - rowheader "Users" [ref=e25]:
            - link "Users" [ref=e26]:
              - /url: /admin/auth/user/
  - complementary [ref=e40]:
    - generic [ref=e41]:
      - heading "Recent actions" [level=2] [ref=e42]
    - heading "My actions" [level=3] [ref=e43]
    - list [ref=e44]:
      - listitem [ref=e45]:
        - link "alice" [ref=e46]:
          - /url: /admin/auth/user/2/change/
        - generic [ref=e47]: User
      - listitem [ref=e48]:
        - link "editors" [ref=e49]:
          - /url: /admin/auth/group/1/change/
        - generic [ref=e50]: Group
    - generic [ref=e51]:
      - heading "Other tools" [level=2] [ref=e52]
    - paragraph [ref=e53]: Nothing here."""


def _refs(found):
    return [line.split("[ref=")[1].split("]")[0] for line in found.splitlines() if "[ref=" in line]


def _group(found, term):
    """The lines under one term's header, up to the next header."""
    lines = found.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"# {term}"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("# ")), len(lines))
    return lines[start], "\n".join(lines[start + 1:end])


def test_several_terms_find_every_control_of_a_form_step_grouped_by_term():
    found, matches = snapshot_text.find(ADD_USER, "username|password|save", 30)
    assert matches == 6
    header, username = _group(found, "username")
    assert header == "# username" and _refs(username) == ["e20", "e24"]  # under its landmark
    header, password = _group(found, "password")
    assert header == "# password" and _refs(password) == ["e28", "e31"]
    _, save = _group(found, "save")
    assert _refs(save) == ["e40", "e41", "e42"] and save.startswith("  - button")  # still under main
    assert found.count("[ref=e20]") == 1  # an ancestor is printed once
    assert "Username:" not in found.replace('textbox "Username:"', "")  # a label beside its field says nothing twice


def test_a_node_two_terms_match_is_listed_once():
    found, matches = snapshot_text.find(ADD_USER, "save|continue", 30)
    assert matches == 3 and found.count("[ref=e41]") == 1
    header, body = _group(found, "continue")
    assert header == "# continue: listed above" and body == ""


def test_a_regex_with_anchors_and_an_alternation():
    found, matches = snapshot_text.find(ADD_USER, "^save$|^password:?$", 30)
    assert matches == 2
    assert _refs(_group(found, "^save$")[1]) == ["e20", "e42"]  # not "Save and add another"
    assert _refs(_group(found, "^password:?$")[1]) == ["e28"]  # not "Password confirmation:"
    one, _ = snapshot_text.find(ADD_USER, "^(staff|superuser) status$", 30)  # a group's | is one term
    assert "# " not in one and _refs(one) == ["e20", "e33", "e34"]


def test_a_term_that_matches_nothing_is_said_as_such():
    found, matches = snapshot_text.find(ADD_USER, "username|colour", 30)
    assert matches == 1 and "# colour: no match" in found.splitlines()


def test_each_term_shows_its_first_matches_and_counts_the_rest():
    found, matches = snapshot_text.find(ADD_USER, "username|save", 2)
    assert matches == 4
    _, save = _group(found, "save")
    assert _refs(save) == ["e40", "e41"] and save.splitlines()[-1] == "- … 1 more for this term"


def test_text_with_brackets_is_found_as_written():
    """A name copied from the page may hold ( ) . ?: the term matches it as text too."""
    found, matches = snapshot_text.find('- button "Best (trial) 1.5?" [ref=e1]', "best (trial) 1.5?", 30)
    assert matches == 1 and "e1" in found


@pytest.mark.parametrize("query", ["save(", "[a-", "a{2,1}"])
def test_an_invalid_regex_is_refused_with_why(query):
    with pytest.raises(snapshot_text.QueryError, match="regular expression"):
        snapshot_text.find(ADD_USER, query, 30)


@pytest.mark.parametrize("query", [
    "(a+)+x", "(a|aa)*x", "(.*a){5}", r"(a)\1", "(?P<x>a)(?P=x)", "(a)?(?(1)b|c)",
    "a.*b.*c", "a?a?a?x", r"\w+\s+\w+x", "(a|a|a|a|a|a|a|a|a)?.*x",
    "(a|a)(a|a)(a|a)(a|a).*x"])
def test_a_pattern_that_could_run_for_minutes_is_refused(query):
    """Python's re cannot be stopped and holds the GIL while it runs: a nested or repeated
    quantifier against a long line could freeze the whole server, so such patterns are refused."""
    with pytest.raises(snapshot_text.QueryError, match="at most"):
        snapshot_text.find(ADD_USER, query, 30)


@pytest.mark.parametrize("query", [r"[(]+x|\(a\)+", "save.*editing", r"users?\b", "^save( and)?",
                                   "(?i)(add|change|delete) (user|group)", "(a|b)(c|d)(e|f).*x"])
def test_brackets_and_escapes_are_not_mistaken_for_groups(query):
    snapshot_text.find(ADD_USER, query, 30)


def test_a_plain_term_is_found_anywhere_in_a_long_line():
    """Only patterns are matched on a line's first MATCH_CHARS characters; words are linear to find."""
    line = f"- paragraph [ref=e1]: {'x' * 3000} needle"
    assert snapshot_text.find(line, "needle", 30)[1] == 1
    assert snapshot_text.find(line, "need.e", 30)[1] == 0


@pytest.mark.alone  # it bounds a time: 4.02 s against its 4 s once in a loaded parallel run
def test_a_search_that_runs_long_stops_and_says_so():
    """One allowed pattern on a hostile page: each line is cheap but there are thousands."""
    # 20,000 lines at about 0.3 ms each (`.*x` on 300 characters): 6 s or more unstopped.
    hostile = "- main [ref=e1]:\n" + "".join(f"  - paragraph [ref=e{i}]: {'a' * 400}\n" for i in range(2, 20_000))
    started = time.monotonic()
    found, _ = snapshot_text.find(hostile, ".*x|aaa", 30)
    assert time.monotonic() - started < snapshot_text.MATCH_SECONDS + 3  # the parse, on a loaded machine
    assert found.splitlines()[-1].startswith("# stopped after")


def test_a_section_under_a_heading_climbs_out_of_its_wrapper():
    part = snapshot_text.section(INDEX, "Recent actions")
    assert part.startswith('- heading "Recent actions" [level=2] [ref=e42]')
    assert '- link "alice" [ref=e46]' in part and "/url: /admin/auth/user/2/change/" in part
    assert '- heading "My actions" [level=3] [ref=e43]' in part  # a lower heading belongs to it
    assert "Other tools" not in part and "Nothing here" not in part and "Users" not in part


def test_a_section_under_a_landmark_by_name_or_role_and_under_a_ref():
    crumbs = snapshot_text.section(ADD_USER, "breadcrumbs")
    assert crumbs.startswith('- navigation "Breadcrumbs" [ref=e8]') and "Home" in crumbs and "Username" not in crumbs
    main = snapshot_text.section(INDEX, "complementary")
    assert main.startswith("- complementary [ref=e40]") and "alice" in main and "Users" not in main
    group = snapshot_text.section(ADD_USER, "e32")
    assert group.splitlines() == ['- group "Permissions" [ref=e32]:', '  - checkbox "Staff status" [ref=e33]',
                                  '  - checkbox "Superuser status" [ref=e34]']
    assert snapshot_text.section(ADD_USER, "Recent actions") is None


def test_a_section_is_bounded_and_says_how_much_it_left_out():
    long = "- main [ref=e1]:\n  - heading \"Log\" [level=2] [ref=e2]\n  - list [ref=e3]:\n" + "".join(
        f"    - listitem [ref=e{i}]: entry {i}\n" for i in range(4, 1004))
    part = snapshot_text.section(long, "Log")
    shown, nodes, total = snapshot_text.first_nodes(part, snapshot_text.SECTION_NODES)
    assert (nodes, total) == (snapshot_text.SECTION_NODES, 1002)
    assert len(shown) < 40 * snapshot_text.SECTION_NODES and "entry 4" in shown and "entry 1003" not in shown


def test_a_matched_heading_offers_its_section():
    found, _ = snapshot_text.find(INDEX, "recent actions", 30)
    line = next(line for line in found.splitlines() if "Recent actions" in line)
    assert line.endswith("[ref=e42] (snapshot section=e42 reads its 9 nodes)")
    assert "My actions" in found and "Nothing here" not in found  # what it brings stops where its section does
    bare, _ = snapshot_text.find(INDEX, "other tools", 30)
    assert "section=" not in bare  # its one paragraph came with it already


def test_bare_text_is_found_as_its_item_with_the_labels_beside_it():
    """Django's recent actions: `- text: user05 User` has no ref, and what tells the deleted
    user from an added one is a label beside it."""
    recent = """- main [ref=e19]:
  - list [ref=e51]:
    - listitem [ref=e52]:
      - generic [ref=e53]: "Deleted:"
      - text: user05 User
    - listitem [ref=e54]:
      - generic [ref=e55]: "Added:"
      - text: user06 User"""
    found, matches = snapshot_text.find(recent, "user0", 30)
    assert matches == 2
    assert found.splitlines() == ["- main [ref=e19]:", "  - listitem [ref=e52]", '    - generic [ref=e53]: "Deleted:"',
                                  "    - text: user05 User", "  - listitem [ref=e54]",
                                  '    - generic [ref=e55]: "Added:"', "    - text: user06 User"]


def test_an_ancestor_is_printed_again_when_another_closed_it():
    """The admin's list page: a later term's match under main, after an earlier one's under the
    sidebar, is not read as the sidebar's."""
    page = """- navigation "Sidebar" [ref=e24]:
  - link "Users" [ref=e43]
- main [ref=e46]:
  - combobox "Action:" [ref=e67]
  - paragraph [ref=e215]: 12 users"""
    found, _ = snapshot_text.find(page, "action|users", 30)
    assert found.splitlines() == ["# action", "- main [ref=e46]:", '  - combobox "Action:" [ref=e67]',
                                  "# users", '- navigation "Sidebar" [ref=e24]:',
                                  '  - link "Users" [ref=e43]', "- main [ref=e46]:",
                                  "  - paragraph [ref=e215]: 12 users"]


# -- compact on a form of selects -----------------------------------------------------------------
# Playwright's YAML for Roundup's bug form (its "responsive" template): selects named by nothing
# (their <label for> names another id), each after the help link that captions it, and a
# multi-select whose options have refs.

BUG_FORM = """- heading "New Bug Editing" [level=1] [ref=e85]
- group "classification" [ref=e89]:
  - textbox "Title" [ref=e95]
  - link "Type" [ref=e99]:
    - /url: bug_type?@template=help
  - combobox [ref=e101]:
    - option "- no selection -" [selected]
    - option "crash"
    - option "compile error"
    - option "resource usage"
    - option "security"
    - option "behavior"
    - option "rfe"
  - link "Severity" [ref=e104]:
    - /url: severity?@template=help
  - combobox [ref=e106]:
    - option "- no selection -" [selected]
    - option "critical"
    - option "urgent"
    - option "major"
    - option "normal"
    - option "minor"
  - link "Components" [ref=e110]:
    - /url: component?@template=help
  - listbox [ref=e112]:
    - option "backend" [ref=e113]
    - option "frontend" [ref=e114]
- group "process" [ref=e128]:
  - combobox [ref=e136]:
    - option "- no selection -" [selected]
""" + "".join(f'    - option "user{i:02d}"\n' for i in range(1, 13)) + """  - textbox "Nosy List" [ref=e141]
  - link "Priority" [ref=e145]:
    - /url: priority?@template=help
  - combobox [ref=e147]:
    - option "- no selection -" [selected]
    - option "high"
  - button "Submit New Entry" [ref=e170]"""


def test_compact_bounds_each_selects_options_apart_from_the_sections_links():
    """A select's options are its own list: they used to count against the section's eight links,
    so two selects hid the help links, the selects after them and their options."""
    outline = snapshot_text.compact(BUG_FORM)
    for ref in ("e99", "e101", "e104", "e106", "e110", "e112", "e136", "e141", "e145", "e147", "e170"):
        assert f"[ref={ref}]" in outline, (ref, outline)
    lines = outline.splitlines()
    severity = lines.index("- combobox [ref=e106]")
    assert lines[severity + 1:severity + 7] == ['  - option "- no selection -" [selected]', '  - option "critical"',
                                                '  - option "urgent"', '  - option "major"', '  - option "normal"',
                                                '  - option "minor"']
    # a long select shows its first options, the count of the rest under it, and its section goes on
    assigned = lines.index("- combobox [ref=e136]")
    assert lines[assigned + 1:assigned + 11] == ['  - option "- no selection -" [selected]', *(
        f'  - option "user{i:02d}"' for i in range(1, 8)), "  - … 5 more (query finds them)",
        '- textbox "Nosy List" [ref=e141]']


# The same form's other half as Playwright writes it: captions that are plain text (no <label for>),
# each beside the unnamed control it captions, and the sidebar's search box, unnamed beside its button.
CAPTIONED = """- generic [ref=e9]:
  - textbox [ref=e10]
  - button "search in open bugs" [ref=e11]
- heading "Bug 13" [level=1] [ref=e85]
- group "process" [ref=e128]:
  - generic [ref=e131]:
    - link "Status" [ref=e134]:
      - /url: status?@template=help
    - combobox [ref=e136]:
      - option "- no selection -" [selected]
      - option "open"
  - generic [ref=e132]:
    - generic [ref=e133]: Assigned To
    - combobox [ref=e137]:
      - option "alice" [selected]
  - generic [ref=e155]:
    - generic [ref=e156]: Comment
    - textbox [ref=e158]
  - generic [ref=e165]:
    - generic [ref=e166]: File Description
    - textbox [ref=e168]
  - button "Submit Changes" [ref=e170]"""


def test_a_caption_brings_the_unnamed_control_beside_it():
    """Roundup's selects and its comment box have no name: the text or help link beside each is
    all that says what it is. A query for that text brings the control, so one read finds a
    form's controls (it used to take the whole outline, where the captions were left out)."""
    found, matches = snapshot_text.find(CAPTIONED, "Status|Assigned To|Comment|search in open bugs|Submit", 30)
    lines = [line.strip() for line in found.splitlines()]
    assert lines[lines.index('- link "Status" [ref=e134]') + 2] == "- combobox [ref=e136]"  # after its /url
    assert lines[lines.index("- generic [ref=e133]: Assigned To") + 1] == "- combobox [ref=e137]"
    assert lines[lines.index("- generic [ref=e156]: Comment") + 1] == "- textbox [ref=e158]"
    # before the button it goes with, in the page's order
    assert lines[lines.index('- button "search in open bugs" [ref=e11]') - 1] == "- textbox [ref=e10]"
    # what captions another control is not brought, nor a named control beside a match
    assert "e168" not in found and "File Description" not in found and matches == 5
    assert found.count("[ref=e170]") == 1


def test_clean_shows_a_ref_a_page_wrote_as_its_words():
    page = "\n".join([
        '- button "Keep [ref=e5] \\" [ref=e1]" [level=1] [ref=e4] [cursor=pointer]: Keep [ref=e9]',
        "- 'link \"Study: [ref=e5]\" [ref=e70]':",
        "  - text: hi [ref=e5]",
        '  - button "Delete" [ref=e5]',
        "    - /url: /x/[ref=e3]",
    ])
    assert snapshot_text.clean(page).split("\n") == [
        '- button "Keep ‹ref=e5› \\" ‹ref=e1›" [level=1] [ref=e4]: Keep ‹ref=e9›',
        "- 'link \"Study: ‹ref=e5›\" [ref=e70]':",
        "  - text: hi ‹ref=e5›",
        '  - button "Delete" [ref=e5]',
        "    - /url: /x/‹ref=e3›",
    ]


CHOOSER = """- generic [ref=e1]:
  - combobox "Size" [active] [ref=e2]:
    - option "Small"
    - option "Medium \\"M\\"" [selected]
    - option "Large" [disabled]
  - combobox "Grouped" [ref=e3]:
    - option "a"
    - group "more"
  - listbox "Many" [ref=e4]:
    - option "x" [ref=e5]
  - combobox "Typed" [ref=e6]: words
  - combobox "Last" [ref=e7]:
    - option "z" [selected]"""


def test_only_a_native_selects_option_lines_are_lists_to_edit():
    # A combobox with any child but an option line (a group), a listbox, a combobox of text: not lists.
    assert snapshot_text.option_lists(CHOOSER) == {"e2": [2, 3, 4], "e7": [12]}


def test_choosing_moves_the_selected_mark_and_changes_nothing_else():
    chosen = snapshot_text.with_option_selected(CHOOSER, [2, 3, 4], 2)
    assert chosen.split("\n")[2:5] == ['    - option "Small"', '    - option "Medium \\"M\\""',
                                       '    - option "Large" [disabled] [selected]']
    assert chosen.replace(" [selected]", "") == CHOOSER.replace(" [selected]", "")
    assert chosen.count("[selected]") == 2  # the other select's own


# -- a match with the context it needs (issue 74) --------------------------------------------

DATA_PAGE = """- generic [ref=e1]:
  - main [ref=e3]:
    - heading "Authors" [level=2] [ref=e4]
    - table [ref=e5]:
      - rowgroup [ref=e6]:
        - row [ref=e7]:
          - columnheader "Name" [ref=e8]
          - columnheader "Country" [ref=e9]
          - columnheader "Books" [ref=e10]
      - rowgroup [ref=e11]:
        - row [ref=e12]:
          - cell [ref=e13]:
            - link "Ursula Le Guin" [ref=e14]:
              - /url: /a/1
          - cell "USA" [ref=e15]
          - cell "23" [ref=e16]
        - row [ref=e17]:
          - cell [ref=e18]:
            - link "Stanislaw Lem" [ref=e19]:
              - /url: /a/2
          - cell "Poland" [ref=e20]
          - cell "17" [ref=e21]
    - heading "Tables" [level=2] [ref=e24]
    - generic [ref=e25]:
      - heading [level=3] [ref=e26]:
        - link "facetable" [ref=e27]:
          - /url: /fixtures/facetable
      - paragraph [ref=e28]: 15 rows
    - generic [ref=e29]:
      - heading [level=3] [ref=e30]:
        - link "roadside_attractions" [ref=e31]:
          - /url: /fixtures/roadside
      - paragraph [ref=e32]: 4 rows
    - list "Saved queries" [ref=e33]:
      - listitem [ref=e34]:
        - link "neighborhood_search" [ref=e35]:
          - /url: /q/1
        - text: by simon"""


def test_a_cells_match_is_its_row_under_the_headers_names_with_its_links_refs():
    found, matches = snapshot_text.find(DATA_PAGE, "Poland", 30)
    assert matches == 1
    assert found.splitlines() == [
        "- main [ref=e3]:",
        '  - heading "Authors" [level=2] [ref=e4]',
        "  - row [ref=e17]: Name: Stanislaw Lem | Country: Poland | Books: 17",
        '    - link "Stanislaw Lem" [ref=e19]']
    # Two matches in one row show it once; a column's header alone is no row.
    both, _ = snapshot_text.find(DATA_PAGE, "Lem|17", 30)
    assert both.count("- row [ref=e17]") == 1
    header, _ = snapshot_text.find(DATA_PAGE, "Country", 30)
    assert '- columnheader "Country" [ref=e9]' in header and "- row" not in header


def test_a_text_match_says_the_heading_above_it_with_the_headings_link():
    found, matches = snapshot_text.find(DATA_PAGE, r"\d+ rows", 30)
    assert matches == 2
    assert found.splitlines() == [
        "- main [ref=e3]:",
        "  - heading [level=3] [ref=e26]",
        '    - link "facetable" [ref=e27]',
        "  - paragraph [ref=e28]: 15 rows",
        "  - heading [level=3] [ref=e30]",
        '    - link "roadside_attractions" [ref=e31]',
        "  - paragraph [ref=e32]: 4 rows"]


def test_a_list_items_match_names_its_list():
    found, _ = snapshot_text.find(DATA_PAGE, "simon", 30)
    assert found.splitlines()[1] == '  - list "Saved queries" [ref=e33]:'
    assert "link \"neighborhood_search\" [ref=e35]" in found


def test_a_cut_read_ends_at_a_whole_row_and_says_how_to_read_on():
    for limit in range(15, 20):  # at the second row, and every cut inside its five nodes
        shown, nodes, total = snapshot_text.first_nodes(DATA_PAGE, limit)
        assert total == 33 and nodes == 15, limit
        assert shown.splitlines()[-2].strip() == '- cell "23" [ref=e16]'  # the first row, whole
        assert shown.splitlines()[-1] == snapshot_text.READ_ON.format(total - nodes)
    assert snapshot_text.first_nodes(DATA_PAGE, 20)[0].splitlines()[-2].strip() == '- cell "17" [ref=e21]'
    assert snapshot_text.first_nodes(DATA_PAGE, 33) == (DATA_PAGE, 33, 33)  # no cut: no line added


ADMIN_LIST = """- table [ref=e47]:
  - rowgroup [ref=e48]:
    - row [ref=e49]:
      - columnheader "Select all" [ref=e50]:
        - checkbox "Select all" [ref=e51]
      - columnheader [ref=e52]
      - columnheader "title" [ref=e54]:
        - link "title" [ref=e55]:
          - /url: /admin/book/list?sortBy=title&sort=asc
      - columnheader "author" [ref=e61]
  - rowgroup [ref=e62]:
    - row [ref=e63]:
      - cell [ref=e64]:
        - checkbox "Select item" [ref=e65]
      - cell [ref=e66]:
        - link "View" [ref=e67]:
          - /url: /admin/book/details/1
        - link "Edit" [ref=e70]:
          - /url: /admin/book/edit/1
      - cell "Moon and Harbour" [ref=e78]
      - cell [ref=e82]:
        - link "Author 03 Tanaka" [ref=e83]:
          - /url: /admin/author/details/3"""


def test_a_rows_line_leaves_out_columns_of_controls_alone_and_lists_the_controls_under_it():
    # The select-all column and the unnamed column of actions say nothing the controls' lines do not;
    # a sortable column's header link is its name.
    found, _ = snapshot_text.find(ADMIN_LIST, "Moon", 30)
    assert found.splitlines() == [
        "- row [ref=e63]: title: Moon and Harbour | author: Author 03 Tanaka",
        '  - checkbox "Select item" [ref=e65]', '  - link "View" [ref=e67]', '  - link "Edit" [ref=e70]',
        '  - link "Author 03 Tanaka" [ref=e83]']
