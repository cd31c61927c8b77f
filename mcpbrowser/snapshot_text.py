"""Narrowing an accessibility snapshot's YAML text: a compact outline, or the nodes that match a query.

Pure functions over text; any thread may call them (the session thread does, in the snapshot tool).
An agent pays for every character it reads, and needs to act only the headings, landmarks and
controls, the few nodes that mention what it looks for, or the one section it is after."""

import json
import re
import time

# Playwright's ai-mode marker for elements with a pointer cursor: it tells nothing a link's or button's role does not.
NOISE = re.compile(r" \[cursor=pointer\]")
# The one pattern of a [ref=e5] marker (the space before it included), its id the group: every module imports it.
REF_ID = r"[A-Za-z0-9_-]+"
REF = re.compile(rf" ?\[ref=({REF_ID})\]")
ROLE = re.compile(r"- ([a-z]+)")
LANDMARKS = frozenset({"banner", "navigation", "main", "contentinfo", "complementary", "search", "form",
                       "region", "dialog", "alertdialog", "alert", "tablist", "menu", "menubar", "toolbar",
                       "listbox", "tree", "grid", "table"})
CONTROLS = frozenset({"link", "button", "textbox", "searchbox", "combobox", "checkbox", "radio", "switch",
                      "slider", "spinbutton", "tab", "menuitem", "menuitemcheckbox", "menuitemradio",
                      "option", "treeitem"})
# Controls that fill in or submit a form: a section lists far more of them than of links
# (compact), since the one an agent needs (Save, a multi-select's "choose") is often the last.
FORM_CONTROLS = frozenset({"button", "textbox", "searchbox", "combobox", "checkbox", "radio", "switch",
                           "slider", "spinbutton"})
SELECTS = frozenset({"combobox", "listbox"})  # their options are a list of their own (compact)
ROWS = frozenset({"table", "grid", "treegrid", "rowgroup", "row"})
KEPT = LANDMARKS | CONTROLS | {"heading"}
SECTION_CONTROLS = 8  # see compact
SECTION_FORM_CONTROLS = 40
HEADING_PREVIEW = 2  # see _titled
MAX_LINE = 160  # a kept line is cut here in compact and query output ("…" marks the cut)


# A node's line: its role (the key maybe single-quoted), its quoted name, the marks Playwright gives it
# ([level=1] [checked] [ref=e5]), then its text. A "[ref=e5]" in a name or a text is the page's words: a
# Keep button named "Keep [ref=e5]", e5 being the Delete button, must not send an agent to Delete.
NODE_LINE = re.compile(r"""( *- '?[a-z]+)((?: "[^"\\]*(?:\\.[^"\\]*)*")?)((?: \[[^\]\[]*\])*)(.*)""")
SHOWN_PAGE_REF = re.compile(rf"‹ref=({REF_ID})›")


# Playwright's rendering of a value in YAML (its isomorphic/yaml.ts, yamlStringNeedsQuotes), for with_field_value.
_NEEDS_QUOTES = re.compile(r"""^-|:( |$)| #|^[&*\],?!>|@"'#%]|[{}`]|^\[|^[-+]?\.(inf|nan)$""", re.IGNORECASE)
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "true", "false", "on", "off", "null", "~"})
# What JavaScript's Number() reads as a number (then Playwright quotes it).
_JS_NUMBER = re.compile(r"[+-]?(\d+\.?\d*(e[+-]?\d+)?|\.\d+(e[+-]?\d+)?|(?-i:Infinity))|0x[0-9a-f]+|0o[0-7]+|0b[01]+",
                        re.IGNORECASE | re.ASCII)  # JavaScript's digits are ASCII's: '١٢٣' is no number
# The marks Playwright writes after [active] on a line (ariaSnapshotRenderer.ts's createKey order).
_AFTER_ACTIVE = ("[invalid", "[level=", "[pressed", "[selected]", "[aria-hidden]", "[ref=")
ACTIVE = " [active]"


def yaml_value(text):
    """A field's value as Playwright writes it after a line's colon: its whitespace collapsed, quoted where
    YAML would misread it. None where that is not certain (a character other than a printable one or a
    space, whose normalising differs between JavaScript and Python); "" for an empty one, shown bare."""
    if not text.isprintable():
        return None
    text = re.sub(" +", " ", text).strip(" ")
    if not text or not (_NEEDS_QUOTES.search(text) or text.lower() in _YAML_WORDS or _JS_NUMBER.fullmatch(text)):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def field_lines(text):
    """{ref: line index} of the snapshot's text fields whose one line shows their value (a textbox or searchbox
    without children, such as a placeholder): the lines with_field_value can change. None when the snapshot
    shows a secret field's value as [REDACTED]: the walk's redaction reads the fields again."""
    if ": [REDACTED]" in text:
        return None
    fields = {}
    for i, line in enumerate(text.split("\n")):
        if "box " in line and "[ref=" in line:
            match = NODE_LINE.fullmatch(line)
            if match and match.group(1).lstrip(" -") in ("textbox", "searchbox") and \
                    (not match.group(4) or match.group(4).startswith(": ")):
                ref = REF.search(match.group(3))
                if ref and match.group(3).endswith(ref.group(0)):
                    fields[ref.group(1)] = i
    return fields


def with_field_value(text, at, value):
    """The stored snapshot `text` as Playwright would write it after the text field on line `at` (one of
    field_lines) was filled with `value` and took the focus: that line showing the value and [active], the
    mark gone from the line that had it. None where that is not certain: the value has characters
    yaml_value leaves alone. The page watch proved the rest unchanged (page_watch.typed)."""
    shown = yaml_value(value)
    lines = text.split("\n")
    line = NODE_LINE.fullmatch(lines[at])
    if shown is None or line is None:
        return None
    head, name, marks, _ = line.groups()
    if name and shown.strip('"') and json.loads(name.strip()) == re.sub(" +", " ", value).strip(" "):
        return None  # a value that says the field's name: Playwright leaves it out, the walk decides
    lines[at] = head + name + _focused(lines, at, marks) + (f": {shown}" if shown else "")
    return "\n".join(lines)


def _focused(lines, at, marks):
    """Line `at`'s marks with [active], the mark taken off the line that had it (`lines` changed in place)."""
    for i, line in enumerate(lines):
        if ACTIVE in line and i != at:
            other = NODE_LINE.fullmatch(line)
            if other and ACTIVE in other.group(3):
                lines[i] = other.group(1) + other.group(2) + other.group(3).replace(ACTIVE, "") + other.group(4)
    marks = marks.replace(ACTIVE, "")
    cut = min(marks.find(" " + mark) for mark in _AFTER_ACTIVE if " " + mark in marks)
    return marks[:cut] + ACTIVE + marks[cut:]


def shows_editor_lines(text):
    """Whether the snapshot shows a textbox with lines of its own (an editor's: with_editor_lines)."""
    lines = text.split("\n")
    return any(line.endswith(":") and "- textbox" in line and not lines[i + 1].lstrip().startswith("- /")
               for i, line in enumerate(lines[:-1]))


def with_editor_lines(text, ref, written):
    """The stored snapshot `text` as Playwright would write it after typing into the editor (a contenteditable
    textbox) of `ref`, which took the focus: its lines those `written` ((role, ref, text) of each line element, in
    order: page_watch.wrote) and its line [active]. A generic line of no text, or of the editor's name, is left
    out, as the walk's ai mode leaves it. None where that is not certain: no such textbox line, a line's ref not
    one of the editor's lines in `text` (the walk would give it another), or a text yaml_value leaves alone."""
    lines = text.split("\n")
    at = next((i for i, line in enumerate(lines) if f"[ref={ref}]" in line), -1)
    line = NODE_LINE.fullmatch(lines[at]) if at >= 0 else None
    if line is None or line.group(1).lstrip(" -") != "textbox" or not line.group(3).endswith(f" [ref={ref}]") \
            or line.group(4) not in ("", ":"):
        return None
    head, name, marks, _ = line.groups()
    depth = len(head) - len(head.lstrip(" "))
    end = at + 1
    while end < len(lines) and len(lines[end]) - len(lines[end].lstrip(" ")) > depth:
        end += 1
    known = set(REF.findall("\n".join(lines[at + 1:end])))
    named = json.loads(name.strip()) if name else ""
    children = []
    for role, line_ref, words in written:
        if role == "generic" and (not words or words == named):
            continue
        shown = yaml_value(words)
        if line_ref not in known or shown is None:
            return None
        children.append(" " * (depth + 2) + f"- {role} [ref={line_ref}]" + (f": {shown}" if words else ""))
    lines[at] = head + name + _focused(lines, at, marks) + (":" if children else "")
    children = clean("\n".join(children)).split("\n") if children else []
    return "\n".join(lines[:at + 1] + children + lines[end:])


# A native select's option as Playwright writes it under its combobox: a name, perhaps [disabled] and [selected]
# (ariaSnapshotRenderer's order), no ref, no children.
OPTION_LINE = re.compile(r"""( *- option(?: "[^"\\]*(?:\\.[^"\\]*)*")?(?: \[disabled\])?)( \[selected\])?""")


def option_lists(text):
    """{ref: [line index of each option]} of the snapshot's comboboxes whose children are option lines alone
    (a native <select>, one choice): the lists with_option_selected can change."""
    lists: dict[str, list[int]] = {}
    lines = text.split("\n")
    for i, line in enumerate(lines):
        match = NODE_LINE.fullmatch(line) if "- combobox" in line and line.endswith(":") else None
        ref = REF.search(match.group(3)) if match else None
        if not (match and ref and match.group(1).lstrip(" -") == "combobox" and match.group(4) == ":"
                and match.group(3).endswith(ref.group(0))):
            continue
        child, options = match.group(1).index("-") + 2, list[int]()
        for at in range(i + 1, len(lines)):
            indent = len(lines[at]) - len(lines[at].lstrip(" "))
            if indent < child:
                break
            if indent > child or not OPTION_LINE.fullmatch(lines[at]):
                options = []
                break
            options.append(at)
        if options:
            lists[ref.group(1)] = options
    return lists


def with_option_selected(text, options, chosen):
    """The stored snapshot `text` as Playwright writes it after the select whose option lines are `options`
    (one of option_lists) came to have its option `chosen` (an index among them) selected, and only it.
    The page watch proved the rest unchanged and every option shown (page_watch.chose)."""
    lines = text.split("\n")
    for n, at in enumerate(options):
        lines[at] = OPTION_LINE.sub(r"\1", lines[at]) + (" [selected]" if n == chosen else "")
    return "\n".join(lines)


def _shown_as_page_words(text):
    """Each [ref=…] in a page's own words shown as ‹ref=…›."""
    return REF.sub(lambda ref: ref.group(0).replace("[", "‹").replace("]", "›"), text)


def clean(text):
    """The snapshot as stored and shown: without the pointer-cursor noise, a [ref=…] a page wrote shown as ‹ref=…›."""
    text = NOISE.sub("", text)
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "[ref=" not in line:
            continue
        node = NODE_LINE.match(line)
        if node is None:
            lines[i] = _shown_as_page_words(line)
        elif "[ref=" in node.group(2) or "[ref=" in node.group(4):
            lines[i] = node.group(1) + _shown_as_page_words(node.group(2)) + node.group(3) \
                + _shown_as_page_words(node.group(4))
    return "\n".join(lines)


def page_words(text):
    """A name or inline text of a cleaned snapshot as the page wrote it: each ‹ref=…› a [ref=…] again."""
    return SHOWN_PAGE_REF.sub(r"[ref=\1]", text) if text and "‹ref=" in text else text


class Node:
    __slots__ = ("line", "depth", "parent", "children", "role", "named")

    def __init__(self, line, depth, parent):
        self.line, self.depth, self.parent, self.children = line, depth, parent, []
        body = line.lstrip()
        match = ROLE.match(body)
        self.role = match.group(1) if match else ""
        self.named = '"' in body.split("[", 1)[0] if self.role else False

    @property
    def is_property(self):
        return self.line.lstrip().startswith("- /")


def _unquoted(body):
    """A node line's body read as the node it is: a key that holds ": " is a YAML single-quoted string
    (`- 'link "Study Direction: MAX" [ref=e70]': text`, its quotes doubled inside), read without its
    quotes; any other body as it is (an unclosed quote too)."""
    if not body.startswith("- '"):
        return body
    end = 3
    while (end := body.find("'", end)) >= 0 and body[end + 1:end + 2] == "'":
        end += 2
    return body if end < 0 else "- " + body[3:end].replace("''", "'") + body[end + 1:]


def parse(text):
    """The YAML lines as a tree of Nodes; lines that do not start a node belong to the node before.

    A single-quoted node line is read unquoted (its role, name and ref as any other's): a link
    or button whose name holds ": " is still a control. The one reader of an aria snapshot: what
    reads one (core/script_export.py too) walks these Nodes, and `element` reads a node's line."""
    root = Node("", -1, None)
    stack = [root]
    for line in text.splitlines():
        body = line.lstrip(" ")
        if not body.startswith("- ") or not stack:
            if len(stack) > 1:
                stack[-1].line += "\n" + line
            continue
        depth = (len(line) - len(body)) // 2
        while stack[-1].depth >= depth:
            stack.pop()
        node = Node(line[:len(line) - len(body)] + _unquoted(body), depth, stack[-1])
        stack[-1].children.append(node)
        stack.append(node)
    return root


TRAILING_MARK = re.compile(r" \[[^\]\[]*\]$")


def _shown(node, depth, term=None):
    """One node's line at the given depth, without children-marker or overlong text.

    A long line is cut; when it matched a query, the cut keeps the text around the match.
    What an agent acts with ([level=2] [ref=e5] [disabled]) survives the cut: a control's long
    name (a textbox named by its placeholder's whole text) is cut, never its ref."""
    body = " ".join(node.line.lstrip().split("\n"))
    if body.endswith(":"):
        body = body[:-1]
    if len(body) <= MAX_LINE:
        return "  " * depth + body
    ref = REF.search(body)
    if ref is None or node.is_property:
        return "  " * depth + _cut(body, MAX_LINE, term)
    head, marks, tail = body[:ref.start()], ref.group(0), body[ref.end():]
    while mark := TRAILING_MARK.search(head):
        head, marks = head[:mark.start()], mark.group(0) + marks
    tail = _cut(tail, 40, term)
    return "  " * depth + _cut(head, max(40, MAX_LINE - len(marks) - len(tail)), term) + marks + tail


def _cut(text, width, term):
    """text cut to about `width` characters ("…" marks the cut), around the term's match when it is beyond."""
    if len(text) <= width:
        return text
    at, end = (term.span(text) if term else None) or (-1, 0)
    if end <= width - 20:
        return text[:width] + "…"
    start = max(0, at - (width - (end - at)) // 2)
    return text[:40] + " …" + text[start:start + width - 40] + "…"


def _kept(node):
    return node.role in KEPT and (node.role not in ("region", "table", "grid") or node.named)


# The line compact() puts where it left a section's entries out. No line of a snapshot reads so: a node's
# line starts with its role.
MORE = "- … {} more (query finds them)"
MORE_LINE = re.compile(r"^ *- … \d+ more \(query finds them\)$", re.MULTILINE)


def compact(text):
    """Headings, landmarks and controls with their refs; wrappers and prose collapsed away.

    A section (what follows a heading or a landmark) lists its first SECTION_CONTROLS links (and tabs,
    menu items) and counts the rest: a first look needs the page's shape and where to act, not every
    entry of an index (a query finds any one). Form controls have a cap of their own,
    SECTION_FORM_CONTROLS: a form's Save button comes after its fields, and a hidden one costs the
    agent another call. A select (combobox, listbox) lists its first SECTION_CONTROLS options under
    it, apart from its section's counts."""
    out = []
    section = {"shown": 0, "form": 0, "more": 0, "depth": 0}

    def close_section():
        if section["more"]:
            out.append("  " * section["depth"] + MORE.format(section["more"]))
        section.update(shown=0, form=0, more=0)

    def walk(node, depth, in_rows=False, select=None):
        for child in node.children:
            if child.is_property:
                continue
            rows = in_rows or child.role in ROWS
            if not _kept(child):
                walk(child, depth, rows, select)
                continue
            if select is not None and child.role == "option":
                # A select's options are a list of its own, bounded apart: counted against the
                # section's links, two selects would hide the controls after them.
                if select["shown"] >= SECTION_CONTROLS:
                    select["more"] += 1
                    continue
                select["shown"] += 1
            elif child.role in CONTROLS:
                # A table's row checkboxes are a list, like its links, not a form's fields.
                form = child.role in FORM_CONTROLS and not rows
                counter, cap = ("form", SECTION_FORM_CONTROLS) if form else ("shown", SECTION_CONTROLS)
                if section[counter] >= cap:
                    section["more"] += 1
                    continue
                section[counter] += 1
                section["depth"] = depth
            else:  # a heading or a landmark starts a new section
                close_section()
            out.append(_shown(child, depth))
            if child.role in SELECTS:
                options = {"shown": 0, "more": 0}
                walk(child, depth + 1, rows, options)
                if options["more"]:
                    out.append("  " * (depth + 1) + MORE.format(options["more"]))
            else:
                walk(child, depth + 1, rows, select)

    walk(parse(text), 0)
    close_section()
    return "\n".join(out)


LEVEL = re.compile(r"\[level=(\d+)\]")
# What a section read may be asked for by name, beside headings: landmarks (an unnamed one by
# its role: "main"), a fieldset or <details> (group), a list or an article.
TITLED = LANDMARKS | {"group", "list", "article", "tabpanel", "figure"}
SECTION_NODES = 200  # a section read's default bound: a card, a fieldset, a list of recent actions


READ_ON = "- … {} more nodes: a larger maxNodes, a query, or get_content with this refId and search_for reads them"
ROW_LINE = re.compile(r"- row\b")


def first_nodes(text, limit):
    """(text, nodes, totalNodes): the first `limit` nodes of a snapshot, with their property lines.

    A cut never leaves half a table row (a bare `- row [ref=…]:` tells an agent nothing): the row it would cut
    goes whole to the rest, and a last line says how to read on."""
    kept: list[str] = []
    nodes = total = 0
    open_rows: list[tuple[int, int, int]] = []  # (depth, its index in kept, nodes before it)
    cut_at = None
    for line in text.splitlines():
        body = line.lstrip()
        if body.startswith("- ") and not body.startswith("- /"):  # "- /url: …" is a property
            total += 1
            depth = (len(line) - len(body)) // 2
            while open_rows and open_rows[-1][0] >= depth:
                open_rows.pop()
            if nodes >= limit:
                if cut_at is None and open_rows and open_rows[0][1] > 0:
                    cut_at = open_rows[0]
                cut_at = cut_at or (0, len(kept), nodes)
                continue
            if ROW_LINE.match(body):
                open_rows.append((depth, len(kept), nodes))
            nodes += 1
        elif nodes >= limit:
            continue
        kept.append(line)
    if cut_at is not None:
        kept, nodes = kept[:cut_at[1]], cut_at[2]
        kept.append(READ_ON.format(total - nodes))
    return "\n".join(kept), nodes, total


def _level(node):
    found = LEVEL.search(node.line) if node.role == "heading" else None
    return int(found.group(1)) if found else None


def _anchor(heading):
    """The node whose next siblings a heading titles: the heading, or the wrappers that hold only
    it (`<div class="header"><h2>Recent actions</h2></div><ul>…`)."""
    node = heading
    while (node.parent is not None and node.parent.depth >= 0 and node.parent.role == "generic"
           and not node.parent.named and len(node.parent.children) == 1):
        node = node.parent
    return node


def _starts_with_heading(node):
    """The heading a node begins with, looking through wrappers' first children, or None."""
    while node.role != "heading" and node.role == "generic" and node.children:
        node = node.children[0]
    return node if node.role == "heading" else None


def _following(heading):
    """What a heading titles: the nodes after it (or after the wrappers that hold only it) up to
    the next heading of the same or a higher level."""
    level, anchor = _level(heading), _anchor(heading)
    siblings = anchor.parent.children
    out = []
    for sibling in siblings[siblings.index(anchor) + 1:]:
        other = _starts_with_heading(sibling)
        if level is not None and other is not None and (_level(other) or 7) <= level:
            break
        out.append(sibling)
    return out


def _label(node):
    """What a section read by name compares with: a heading's or a titled node's name; an
    unnamed landmark's role."""
    if node.role == "heading" or node.role in TITLED:
        return _name(node) or (node.role if node.role in LANDMARKS else None)
    return None


def _by_name(root, name):
    """The first heading, landmark or group named so (any case), else the first whose name holds it."""
    wanted, holding = name.strip().casefold(), None
    for node in _descendants(root):
        label = _label(node)
        if label is not None:
            if label.casefold() == wanted:
                return node
            if holding is None and wanted in label.casefold():
                holding = node
    return holding


def _by_ref(root, ref):
    marker = f"[ref={ref}]"
    return next((node for node in _descendants(root) if marker in node.line.split("\n", 1)[0]), None)


def section(text, key, names=True):
    """What a ref (or, with `names`, a heading's, landmark's or group's name) titles, as its own
    snapshot: for a heading, what follows it up to the next heading of the same or a higher
    level; for anything else, the node and its subtree. None when nothing has the ref or name."""
    root = parse(text)
    node = _by_ref(root, key) or (_by_name(root, key) if names else None)
    if node is None:
        return None
    out: list[str] = []

    def emit(n, depth):
        out.extend(("  " * depth + line.lstrip()) if i == 0 else line for i, line in enumerate(n.line.split("\n")))
        for child in n.children:
            emit(child, depth + 1)

    for n in [node, *(_following(node) if node.role == "heading" else [])]:
        emit(n, 0)
    return "\n".join(out)


def titles(text):
    """The first 20 names a section read may ask for on this page (headings, named landmarks), for an
    answer that found none: `"Add user", navigation "Breadcrumbs"`."""
    names: list[str] = []
    for node in _descendants(parse(text)):
        label = _label(node) if node.role == "heading" or node.named else None
        if label is not None:
            names.append(f'"{label}"' if node.role == "heading" else f'{node.role} "{label}"')
        if len(names) == 20:
            break
    return ", ".join(names)


class QueryError(ValueError):
    """A query that is not a regular expression, or one that could keep the server busy."""


# A query is a regular expression (Python's, any case) whose top-level alternatives are its terms:
# `Username|Password|Save` finds every control a form step needs in one call, grouped by term.
# A regular expression, not a list of terms: it is what a model already writes for "any of these"
# (grep, @playwright/mcp's find), and one string is a type every client passes as it is, where some
# clients' converters mangle a string-or-array union. A term is also found as written
# (`Best (trial) 1.5?`), so text copied from the page needs no escaping.
#
# Why this subset: Python's re cannot be interrupted and holds the GIL while it matches, so one
# catastrophic pattern against a long line would freeze every thread of the server (docs/performance.md
# has the timings). Exponential backtracking needs a repeated group, a backreference or many optional
# parts; polynomial backtracking needs several repeats in a row, or many ways through the groups before
# one. So a term may hold at most QUANTIFIERS quantifiers, at most one of which repeats (* + {m,n}), a
# group may only be optional (…)?, its groups' alternatives multiply to at most BRANCHES, and there are
# no backreferences. A line then costs at most about its length squared times the branches: a pattern
# is matched on a line's first MATCH_CHARS characters, a plain term on all of it, and the whole search
# stops after MATCH_SECONDS, saying so. The `regex` module's timeout would lift the subset at the price
# of a dependency.
QUANTIFIERS = 2
BRANCHES = 8
MATCH_CHARS = 300
MATCH_SECONDS = 1.0
QUANTIFIER = re.compile(r"[*+?]|\{(\d*)(,?)(\d*)\}")
EXTENSION = re.compile(r"\?(?:P<\w+>|<[=!]|[=!:]|[aiLmsux-]*[:)])")
SPECIAL = re.compile(r"[\\.^$*+?{}\[\]()|]")


class _Term:
    """One alternative of a query: a pattern, and its text as written when that holds special characters."""
    __slots__ = ("source", "pattern", "written")

    def __init__(self, source):
        self.source = source
        self.pattern = re.compile(source, re.IGNORECASE)
        self.written = source.lower() if SPECIAL.search(source) else None

    def span(self, text):
        """(start, end) of the term's first match in text, or None."""
        hit = self.pattern.search(text, 0, MATCH_CHARS if self.written else len(text))
        if hit:
            return hit.span()
        at = text.lower().find(self.written) if self.written else -1
        return (at, at + len(self.written or "")) if at >= 0 else None

    def matches(self, node):
        line = REF.sub("", node.line).lstrip()[2:]
        if self.written is None:
            return self.span(line) is not None
        # An anchor means the name's or the text's start or end, not the line's (`button "Save"`).
        return any(self.span(part) is not None for part in (_name(node), _text(node), line) if part)


def _too_costly(term):
    return QueryError(
        f"query term {term!r} could keep the page busy too long: a term may hold at most {QUANTIFIERS} "
        f"quantifiers, at most one of them * + or {{m,n}}, on a character or a class (a group may only be "
        f"optional: (...)?), groups whose alternatives multiply to at most {BRANCHES}, and no backreference. "
        "Split it into terms with |, or write the words as they are.")


def _terms(query):
    """The query's top-level alternatives as _Terms; QueryError when it is no regular expression or too costly."""
    try:
        re.compile(query)
    except re.error as exc:
        raise QueryError(f"query is not a valid regular expression ({exc}); write \\( \\[ \\? \\. \\* to find "
                         "those characters as text.") from None
    sources, start, depth, i = [], 0, 0, 0
    count = repeats = 0
    ways, groups = 1, []  # the ways through the closed groups; | counts of the open ones
    after_group = False
    while i < len(query):
        c = query[i]
        quantifier = QUANTIFIER.match(query, i)
        if quantifier and (c != "{" or any(quantifier.groups())):
            low = int(quantifier.group(1) or 0) if c == "{" else int(c == "+")
            high = (1 if c == "?" else float("inf")) if c != "{" else \
                (int(quantifier.group(3)) if quantifier.group(3) else float("inf") if quantifier.group(2) else low)
            i = quantifier.end() + (query[quantifier.end():quantifier.end() + 1] in ("?", "+"))  # lazy, possessive
            if high > 1 and after_group:
                raise _too_costly(query[start:i].strip() or query)
            if high != low:
                count, repeats = count + 1, repeats + (high > 1)
                if count > QUANTIFIERS or repeats > 1:
                    raise _too_costly(query[start:i].strip())
            after_group = False
            continue
        after_group = False
        if c == "\\":
            if query[i + 1:i + 2] in tuple("123456789"):
                raise _too_costly(query[start:i + 2].strip())
            i += 2
        elif c == "[":  # a class: its ( | * are characters
            i += 1 + (query[i + 1:i + 2] == "^")
            i += query[i:i + 1] == "]"
            while i < len(query) and query[i] != "]":
                i += 2 if query[i] == "\\" else 1
            i += 1
        elif c == "(":
            if query.startswith(("(?P=", "(?("), i):
                raise _too_costly(query[start:].split("|", 1)[0].strip())
            extension = EXTENSION.match(query, i + 1)
            i = extension.end() if extension else i + 1
            if not (extension and extension.group().endswith(")")):  # (?i) is flags, not a group
                depth += 1
                groups.append(0)
        elif c == ")":
            ways *= groups.pop() + 1
            depth, after_group, i = depth - 1, True, i + 1
            if ways > BRANCHES:
                raise _too_costly(query[start:i].strip())
        elif c == "|" and depth == 0:
            sources.append(query[start:i])
            start, count, repeats, ways, i = i + 1, 0, 0, 1, i + 1
        elif c == "|":
            groups[-1] += 1
            i += 1
        else:
            i += 1
    sources.append(query[start:])
    terms = [_Term(source.strip()) for source in sources if source.strip()]
    return terms or [_Term(query)]


def element(node):
    """(role, name, ref, text) of a node's line: `- button "Say \\"hi\\"" [ref=e9]: more` is ('button',
    'Say "hi"', 'e9', 'more'); the name and the text read from their YAML quotes (None when the line has
    none), the ref None without one. None for a line that is no element (a property, `- /url: …`). A
    page's own ‹ref=…› stays so (page_words gives its words back)."""
    found = NODE_LINE.match(node.line.split("\n", 1)[0])
    if found is None or found.group(1).lstrip()[2:3] == "'":
        return None
    ref = REF.search(found.group(3))
    rest = found.group(4)
    return (found.group(1).lstrip()[2:], yaml_scalar(found.group(2)[1:]) if found.group(2) else None,
            ref.group(1) if ref else None, yaml_scalar(rest[2:].strip()) if rest.startswith(": ") else None)


def yaml_scalar(text):
    """A YAML scalar of a snapshot line: a double-quoted one (JSON's escapes) unquoted, a plain one as it is."""
    if text.startswith('"'):
        try:
            return json.loads(text)
        except ValueError:
            return text.strip('"')
    return text


def _name(node):
    return element(node)[1] if node.named else None


def _text(node):
    """A plain node's own text (`- generic [ref=e5]: "Username:"` -> Username:), or None."""
    read = element(node)
    return None if read is None else read[3]


def _headings_before(root):
    """node id -> the last caption before it in document order, for telling twins apart and for
    saying where a match stands: a heading, or a group's first named child (a <details>' summary,
    a fieldset's legend)."""
    last: Node | None = None
    out: dict[int, Node | None] = {}
    for node in _descendants(root):
        if node.role == "heading":
            last = node
        elif node.role == "group" and node.children and _name(node.children[0]):
            last = node.children[0]
        out[id(node)] = last
    return out


def _caption(headings, node):
    caption = headings.get(id(node))
    return None if caption is None else _name(caption)


def _within(node, ancestor):
    up = node.parent
    while up is not None and up is not ancestor:
        up = up.parent
    return up is ancestor


CELLS = frozenset({"cell", "gridcell", "rowheader", "columnheader"})
ROW_CELL_CHARS = 60  # a cell's text in a row shown for a match (a long description is cut)
ROW_CONTROLS = 5  # the controls a row lists under it with their refs (its links, its actions, its checkbox)


def _row(node):
    """The table row a node stands in (a cell, or what a cell holds), or None."""
    up = node
    while up is not None and up.depth >= 0 and up.role not in ("table", "grid", "treegrid"):
        if up.role == "row":
            return up
        up = up.parent
    return None


def _cells(row):
    return [child for child in row.children if child.role in CELLS]


def _descendants(node):
    for child in node.children:
        if not child.is_property:
            yield child
            yield from _descendants(child)


def _header_names(row):
    """The column names of the table a row stands in: its first row of column headers, or []."""
    table = row.parent
    while table is not None and table.depth >= 0 and table.role not in ("table", "grid", "treegrid"):
        table = table.parent
    if table is None or table.depth < 0:
        return []
    for other in _descendants(table):
        if other.role == "row" and any(cell.role == "columnheader" for cell in other.children):
            # A column whose header is a control of its own (a "Select all" checkbox) has no name.
            return ["" if any(n.role in CONTROLS and n.role != "link" and _name(n) == _name(cell)
                              for n in _descendants(cell)) else _cell_words(cell) for cell in _cells(other)]
    return []


def _cell_words(cell):
    """A cell's words as a row line shows them: its name, its text, or its nodes' names and texts."""
    words = _name(cell) or _text(cell) or " ".join(
        w for w in (_name(n) or _text(n) for n in _descendants(cell)) if w)
    return _cut(words, ROW_CELL_CHARS, None) if words else ""


def _only_controls(node):
    """Whether all a node says is its controls' names (a cell of a checkbox, or of action links)."""
    if _name(node) or _text(node):
        return node.role in CONTROLS
    return any(child.role in CONTROLS for child in node.children) and all(
        child.is_property or child.role in CONTROLS or _only_controls(child) for child in node.children)


def _row_lines(row, depth):
    """A row as one line, each cell under its column's name, then the controls it holds with their
    refs: what a match in a cell needs beside it (the row's other values, its links and actions)
    without a second read of the table. None for a row of column headers."""
    cells = _cells(row)
    if not cells or all(cell.role == "columnheader" for cell in cells):
        return None
    names = _header_names(row)
    shown = []
    for at, cell in enumerate(cells):
        words = _cell_words(cell)
        name = names[at] if at < len(names) else ""
        if not name and _only_controls(cell):
            continue  # a row's checkbox, its View / Edit / Delete: listed under the line with their refs
        shown.append(f"{name}: {words}" if name and words else words or (f"{name}: -" if name else "-"))
    ref = REF.search(row.line.split("\n", 1)[0])
    controls = [n for n in _descendants(row) if n.role in CONTROLS][:ROW_CONTROLS]
    return ["  " * depth + "- row" + (ref.group(0) if ref else "") + ": " + " | ".join(shown),
            *(_shown(control, depth + 1) for control in controls)]


def _matched(root, term, deadline):
    """(nodes, stopped): the nodes a term matches, most specific first: a match that holds a more
    specific match (a row header holding its link, a search landmark holding its textbox) gives
    way to it, and a match inside a matching control adds nothing. `stopped` when the deadline
    passed before the walk was done."""
    matched, holds_match = [], set()  # ids of matched nodes with a matched descendant
    stopped = False

    def walk(node, in_control_match, open_matches):
        nonlocal stopped
        for child in node.children:
            if stopped or time.monotonic() > deadline:
                stopped = True
                return
            if child.is_property:
                continue
            hit = not in_control_match and term.matches(child)
            if hit:
                holds_match.update(open_matches)
                matched.append(child)
            walk(child, in_control_match or (hit and child.role in CONTROLS),
                 (*open_matches, id(child)) if hit else open_matches)

    walk(root, False, ())
    # A label's text beside the field it names ("Username:" and textbox "Username:") says nothing twice.
    named = {_name(node) for node in matched if node.role in CONTROLS}
    out: dict[int, Node] = {}
    for node in matched:
        if id(node) in holds_match or (node.role not in CONTROLS and _text(node) in named):
            continue
        # Bare text has no ref: its item is the match (`- listitem [ref=e52]` with its "Deleted:"
        # label and the text), which the agent can act on and tell from its twins ("Added:").
        node = _item(node) or node
        out.setdefault(id(node), node)
    return list(out.values()), stopped


ITEM_LINES = 4  # the lines an item shows for a bare text match in it


def _item(node):
    """The unkept node with a ref that holds a bare text node (`- text: user05 User`), or None."""
    up = node.parent
    if node.role != "text" or REF.search(node.line) or up is None or up.depth < 0 or _kept(up):
        return None
    return up if REF.search(up.line.split("\n", 1)[0]) else None


def _item_lines(node):
    """What an item shows of itself: its first children's lines (the text and the labels beside it)."""
    return [child for child in node.children if not child.is_property][:ITEM_LINES] \
        if any(child.role == "text" and not REF.search(child.line) for child in node.children) else []


def find(text, query, limit):
    """(text, matches): the nodes each term of the query matches (any case; a regular expression
    whose `a|b` are two terms), under their kept ancestors, grouped by term when there are several.

    A matching link keeps its /url line. Repeated text is shown once, with how many more there
    are; controls are never merged (each is a target of its own): twins name the heading they
    come under. A node is listed under the first term that matches it. Each term shows at most
    `limit` and says how many more it has; `matches` counts them all. Raises QueryError."""
    terms = _terms(query)
    root = parse(text)
    deadline = time.monotonic() + MATCH_SECONDS
    found, stopped = [], False
    for term in terms:
        nodes, stopped = _matched(root, term, deadline) if not stopped else ([], True)
        found.append(nodes)
    headings: dict[int, Node | None] = {}
    listed: set[int] = set()
    out: list[str] = []
    # An ancestor (`- main [ref=e20]:`) is not printed again while it is the open one at its depth,
    # even under the next term's header: a later term's matches keep their indentation under it.
    ancestors: list[int] = []  # ids of the ancestors open at each depth
    for term, nodes in zip(terms, found, strict=True):
        # A row another term's match showed is listed already (each match in a row shows it).
        keys = {id(node): id(_row(node) or node) for node in nodes}
        fresh = [node for node in nodes if keys[id(node)] not in listed]
        listed.update(keys[id(node)] for node in fresh)
        if len(terms) > 1:
            # The header says what its lines cannot: that a term found nothing, or found what an
            # earlier term listed. A count would be paid for on every term of every query.
            above = len(nodes) - len(fresh)
            out.append(f"# {term.source}" + (": no match" if not nodes else ": listed above" if not fresh else
                                             f" ({above} listed above)" if above else ""))
        if fresh and not headings:
            headings.update(_headings_before(root))
        out += _render(fresh, term, limit, headings, ancestors,
                       "for this term" if len(terms) > 1 else "(maxNodes shows them)")
    if stopped:
        out.append(f"# stopped after {MATCH_SECONDS:g} s: the page is too long for this pattern; the rest was not "
                   "searched (plainer words, or a selector, search it)")
    return "\n".join(out), len(listed)


def _render(matched, term, limit, headings, ancestors, more_hint):
    """One term's matches as lines under their kept ancestors (see find); `ancestors` holds the ids
    of those open at each depth, printed by this term or an earlier one."""
    def key(node):
        props = "".join(c.line.strip() for c in node.children if c.is_property or c in items[id(node)])
        return REF.sub("", REF.sub("", node.line).strip() + props)

    items = {id(node): _item_lines(node) for node in matched}

    # The same text over and over (a search result list repeats its query in every entry)
    # is shown once, with how many more there are.
    unique: list[Node] = []
    repeats: dict[str, int] = {}  # a shown line's key -> how many more like it
    twins: dict[str, int] = {}
    # A match in a table's row is answered with the row, each cell under its column's name, so the agent
    # needs no second read for what stands beside it. Matches in one row show it once.
    rows = {id(node): row for node in matched if (row := _row(node)) is not None and _row_lines(row, 0)}
    rows_shown: set[int] = set()
    for node in matched:
        k = key(node)
        if id(node) in rows:
            if id(rows[id(node)]) not in rows_shown:
                rows_shown.add(id(rows[id(node)]))
                unique.append(node)
        elif node.role in CONTROLS:
            twins[REF.sub("", node.line).strip()] = twins.get(REF.sub("", node.line).strip(), 0) + 1
            unique.append(node)
        elif k in repeats:
            repeats[k] += 1
        else:
            repeats[k] = 0
            unique.append(node)
    # A twin names its heading only where the headings tell the twins apart.
    telling = {name for name in twins if twins[name] > 1 and len(
        {_caption(headings, n) for n in matched if n.role in CONTROLS and REF.sub("", n.line).strip() == name}) > 1}
    shown, out, printed = unique[:limit], [], {}  # printed: this term's lines
    matched_ids = {id(node) for node in matched}
    for node in shown:
        row = rows.get(id(node))
        chain, up = [], (row or node).parent
        while up is not None and up.depth >= 0:
            if _kept(up) or (up.role == "list" and up.named):  # a list item's list says what it is in
                chain.append(up)
            up = up.parent
        for depth, ancestor in enumerate(reversed(chain)):
            if ancestors[depth:depth + 1] != [id(ancestor)]:
                del ancestors[depth:]
                ancestors.append(id(ancestor))
                printed[id(ancestor)] = depth
                out.append(_shown(ancestor, depth) + ":")
        depth = len(chain)
        if id(node) in printed:  # shown already as an ancestor of an earlier match
            continue
        del ancestors[depth:]  # a line at this depth closes what was open below it
        # What a match that is no control or heading stands under: the heading before it, once
        # ("48 rows" under its table's heading, with the heading's ref to follow).
        caption = headings.get(id(row or node))
        if (caption is not None and caption.role == "heading" and id(caption) not in printed
                and (row is not None or node.role not in CONTROLS and node.role != "heading")
                and (not chain or _within(caption, chain[0]))):
            printed[id(caption)] = depth
            # A heading named by its link (`<h3><a>facetable</a></h3>`) shows the link: its ref is the way on.
            out.append(_shown(caption, depth))
            if not caption.named:
                out += [_shown(c, depth + 1) for c in _descendants(caption) if c.role in CONTROLS][:ROW_CONTROLS]
        if row is not None:
            printed[id(row)] = printed[id(node)] = depth
            out += _row_lines(row, depth)
            continue
        printed[id(node)] = depth
        line = _shown(node, depth, term)
        if node.role in CONTROLS:
            heading = _caption(headings, node) if REF.sub("", node.line).strip() in telling else None
            line += f' (under "{heading}")' if heading else ""
        else:
            more = repeats[key(node)]
            line += f" (and {more} more like it)" if more else ""
        # A link's /url in full (an agent may go there); a long placeholder is cut as a line is.
        props = ["  " * (depth + 1) + (c.line.lstrip() if c.line.lstrip().startswith("- /url:") else
                                       _shown(c, 0, term)) for c in node.children if c.is_property]
        after = _titled(node, matched_ids) if node.role == "heading" else []
        if node.role == "heading":
            line += _offer_section(node, len(after))
        before, beside = _beside(node, matched_ids, printed)
        for control in before:
            printed[id(control)] = depth
            out.append(_shown(control, depth))
        out += [line, *props, *(_shown(child, depth + 1, term) for child in items[id(node)])]
        for titled in [*beside, *after]:
            printed[id(titled)] = depth
            out.append(_shown(titled, depth))
    if len(unique) > limit:
        out.append(f"- … {len(unique) - limit} more {more_hint}")
    return out


# Controls a form may leave unnamed (a <label for> that names another id, a caption in plain text):
# what stands beside one is all that says what it is.
UNNAMED_CONTROLS = FORM_CONTROLS | {"listbox"}


def _beside(node, matched_ids, printed):
    """([before], [after]): the unnamed control a matched node captions, the sibling after a caption
    (`- generic: Assigned To` then `- combobox`, a help link "Status" then its select), or the
    field before a matched button (a search box and its button). Brought along, so one query finds
    a form's unnamed controls; only these two ways, since the control before a caption is another's."""
    if node.role == "heading" or node.parent is None:
        return [], []
    siblings = [child for child in node.parent.children if not child.is_property]
    at = siblings.index(node)

    def unnamed(n):
        return n.role in UNNAMED_CONTROLS and not n.named and id(n) not in matched_ids and id(n) not in printed

    if node.role == "button":
        return ([siblings[at - 1]] if at > 0 and unnamed(siblings[at - 1]) else []), []
    return [], [siblings[at + 1]] if at + 1 < len(siblings) and unnamed(siblings[at + 1]) else []


def _size(node):
    return 0 if node.is_property else 1 + sum(_size(child) for child in node.children)


def _offer_section(heading, shown):
    """A matched heading whose section holds more than the lines it brings says how to read it."""
    ref = REF.search(heading.line.split("\n", 1)[0])
    nodes = 1 + sum(_size(node) for node in _following(heading))
    if ref is None or nodes <= 1 + shown:
        return ""
    return f" (snapshot section={ref.group(0).strip()[5:-1]} reads its {nodes} nodes)"


def _titled(heading, matched_ids):
    """The first nodes a matched heading titles (its next siblings that say something, one line
    each): a card's value under its caption, the icon button beside a "Note" heading. They come
    with the heading, so the agent needs no second read of its section for them."""
    anchor = _anchor(heading)
    siblings = anchor.parent.children
    level = _level(heading)
    out: list[Node] = []
    for node in siblings[siblings.index(anchor) + 1:]:
        if len(out) == HEADING_PREVIEW or id(node) in matched_ids or node.is_property:
            break
        other = _starts_with_heading(node)
        if other is not None and level is not None and _level(other) == level:
            break  # the next heading of its rank (or a wrapper that starts with one): a twin card's caption
        if node.role in CONTROLS or node.role == "heading" or node.named or _text(node) is not None:
            out.append(node)
    return out
