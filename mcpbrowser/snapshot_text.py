"""Narrowing an accessibility snapshot's YAML text: a compact outline, or the nodes that match a query.

Pure functions over text; any thread may call them (the session thread does,
in the snapshot tool). An agent pays for every character it reads:
a full snapshot of a documentation index is 10-30k characters, while what an
agent needs to act is usually the headings, the landmarks and the controls, or
the few nodes that mention what it looks for.
"""

import re

# Playwright's ai-mode marker for elements with a pointer cursor: on every link and
# button, it tells an agent nothing their role does not (17 characters each).
NOISE = re.compile(r" \[cursor=pointer\]")
REF = re.compile(r" ?\[ref=[A-Za-z0-9_-]+\]")
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
ROWS = frozenset({"table", "grid", "treegrid", "rowgroup", "row"})
KEPT = LANDMARKS | CONTROLS | {"heading"}
SECTION_CONTROLS = 8  # see compact
SECTION_FORM_CONTROLS = 40
HEADING_PREVIEW = 2  # see _titled
MAX_LINE = 160  # a kept line is cut here in compact and query output ("…" marks the cut)


def clean(text):
    """The snapshot as stored and shown: without the pointer-cursor noise."""
    return NOISE.sub("", text)


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


# A node whose key holds ": " is a YAML single-quoted string: `- 'link "Study Direction: MAX" [ref=e70]':`
QUOTED = re.compile(r"- '(.*)'(:?)$")


def parse(text):
    """The YAML lines as a tree of Nodes; lines that do not start a node belong to the node before.

    A single-quoted node line is read unquoted (its role, name and ref as any other's): a link
    or button whose name holds ": " is still a control.
    """
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
        quoted = QUOTED.match(body)
        if quoted:
            line = line[:len(line) - len(body)] + "- " + quoted.group(1).replace("''", "'") + quoted.group(2)
        node = Node(line, depth, stack[-1])
        stack[-1].children.append(node)
        stack.append(node)
    return root


TRAILING_MARK = re.compile(r" \[[^\]\[]*\]$")


def _shown(node, depth, needle=None):
    """One node's line at the given depth, without children-marker or overlong text.

    A long line is cut; when it matched a query, the cut keeps the text around the match.
    What an agent acts with ([level=2] [ref=e5] [disabled]) survives the cut: a control's long
    name (a textbox named by its placeholder's whole text) is cut, never its ref.
    """
    body = " ".join(node.line.lstrip().split("\n"))
    if body.endswith(":"):
        body = body[:-1]
    if len(body) <= MAX_LINE:
        return "  " * depth + body
    ref = REF.search(body)
    if ref is None or node.is_property:
        return "  " * depth + _cut(body, MAX_LINE, needle)
    head, marks, tail = body[:ref.start()], ref.group(0), body[ref.end():]
    while mark := TRAILING_MARK.search(head):
        head, marks = head[:mark.start()], mark.group(0) + marks
    tail = _cut(tail, 40, needle)
    return "  " * depth + _cut(head, max(40, MAX_LINE - len(marks) - len(tail)), needle) + marks + tail


def _cut(text, width, needle):
    """text cut to about `width` characters ("…" marks the cut), around the needle when it is beyond."""
    if len(text) <= width:
        return text
    at = text.lower().find(needle) if needle else -1
    if at + len(needle or "") <= width - 20:
        return text[:width] + "…"
    start = max(0, at - (width - len(needle)) // 2)
    return text[:40] + " …" + text[start:start + width - 40] + "…"


def _kept(node):
    return node.role in KEPT and (node.role not in ("region", "table", "grid") or node.named)


# The line compact() puts where it left a section's entries out. No line of a snapshot reads so: a node's
# line starts with its role.
MORE = "- … {} more (query finds them)"
MORE_LINE = re.compile(r"^ *- … \d+ more \(query finds them\)$", re.MULTILINE)


def compact(text, per_section=SECTION_CONTROLS, per_section_form=SECTION_FORM_CONTROLS):
    """Headings, landmarks and controls with their refs; wrappers and prose collapsed away.

    A section (what follows a heading or a landmark) lists its first `per_section`
    links (and tabs, options, menu items) and counts the rest: a documentation index has
    hundreds of links, and a first look needs the page's shape and where to act, not
    every entry (a query finds any one of them). Form controls have a cap of their own,
    `per_section_form`: a form's Save button comes after its fields, and a hidden one
    costs the agent another call.
    """
    out = []
    section = {"shown": 0, "form": 0, "more": 0, "depth": 0}

    def close_section():
        if section["more"]:
            out.append("  " * section["depth"] + MORE.format(section["more"]))
        section.update(shown=0, form=0, more=0)

    def walk(node, depth, in_rows=False):
        for child in node.children:
            if child.is_property:
                continue
            rows = in_rows or child.role in ROWS
            if not _kept(child):
                walk(child, depth, rows)
                continue
            if child.role in CONTROLS:
                # A table's row checkboxes are a list, like its links, not a form's fields.
                form = child.role in FORM_CONTROLS and not rows
                counter, cap = ("form", per_section_form) if form else ("shown", per_section)
                if section[counter] >= cap:
                    section["more"] += 1
                    continue
                section[counter] += 1
                section["depth"] = depth
            else:  # a heading or a landmark starts a new section
                close_section()
            out.append(_shown(child, depth))
            walk(child, depth + 1, rows)

    walk(parse(text), 0)
    close_section()
    return "\n".join(out)


LEVEL = re.compile(r"\[level=(\d+)\]")


def section(text, ref):
    """The node with this ref, as its own snapshot; for a heading, its section: the heading and what
    follows it up to the next heading of the same or a higher level. None when no node has the ref."""
    marker = f"[ref={ref}]"

    def find(node):
        for child in node.children:
            if marker in child.line.split("\n", 1)[0]:
                return child
            found = find(child)
            if found is not None:
                return found
        return None

    node = find(parse(text))
    if node is None:
        return None
    nodes = [node]
    level = LEVEL.search(node.line)
    if node.role == "heading" and level:
        siblings = node.parent.children
        for sibling in siblings[siblings.index(node) + 1:]:
            other = LEVEL.search(sibling.line) if sibling.role == "heading" else None
            if other and int(other.group(1)) <= int(level.group(1)):
                break
            nodes.append(sibling)
    out: list[str] = []

    def emit(n, depth):
        out.extend(("  " * depth + line.lstrip()) if i == 0 else line for i, line in enumerate(n.line.split("\n")))
        for child in n.children:
            emit(child, depth + 1)

    for n in nodes:
        emit(n, 0)
    return "\n".join(out)


def _needles(query):
    """A query's alternatives, lower case: `Name|Email|Save` finds any of them."""
    return [part.strip().lower() for part in query.split("|") if part.strip()] or [query.lower()]


def _name(node):
    parts = node.line.split('"')
    return parts[1] if node.named and len(parts) > 2 else None


def _text(node):
    """A plain node's own text (`- generic [ref=e5]: "Username:"` -> Username:), or None."""
    _, colon, rest = REF.sub("", node.line.split("\n", 1)[0]).partition(": ")
    return rest.strip().strip('"') if colon else None


def _headings_before(root):
    """node id -> the last caption before it in document order, for telling twins apart: a
    heading's text, or a group's first named child (a <details>' summary, a fieldset's legend)."""
    last: list[str | None] = [None]
    out: dict[int, str | None] = {}

    def walk(node):
        for child in node.children:
            if child.role == "heading":
                last[0] = _name(child)
            elif child.role == "group" and child.children and _name(child.children[0]):
                last[0] = _name(child.children[0])
            out[id(child)] = last[0]
            walk(child)

    walk(root)
    return out


def find(text, query, limit):
    """(text, matches): nodes whose line contains query (any case; `a|b` any of them), under their
    kept ancestors.

    A matching link keeps its /url line. A match that holds a more specific match (a row
    header holding its link, a search landmark holding its textbox) gives way to it; a
    match inside a matching control adds nothing. Repeated text is shown once, with how
    many more there are; controls are never merged (each is a target of its own): twins
    name the heading they come under. At most `limit` are shown; `matches` counts them all.
    """
    needles = _needles(query)
    matched = []
    holds_match = set()  # ids of matched nodes with a matched descendant

    def walk(node, in_control_match, open_matches):
        for child in node.children:
            if child.is_property:
                continue
            line = REF.sub("", child.line).lower()
            hit = not in_control_match and any(n in line for n in needles)
            if hit:
                holds_match.update(open_matches)
                matched.append(child)
            walk(child, in_control_match or (hit and child.role in CONTROLS),
                 (*open_matches, id(child)) if hit else open_matches)

    root = parse(text)
    walk(root, False, ())
    # A label's text beside the field it names ("Username:" and textbox "Username:") says nothing twice.
    named = {_name(node) for node in matched if node.role in CONTROLS}
    matched = [node for node in matched if id(node) not in holds_match
               and (node.role in CONTROLS or _text(node) not in named)]

    def key(node):
        props = "".join(c.line.strip() for c in node.children if c.is_property)
        return REF.sub("", node.line).strip() + props

    # The same text over and over (a search result list repeats its query in every entry)
    # is shown once, with how many more there are.
    unique: list[Node] = []
    repeats: dict[str, list] = {}
    twins: dict[str, int] = {}
    for node in matched:
        k = key(node)
        if node.role in CONTROLS:
            twins[REF.sub("", node.line).strip()] = twins.get(REF.sub("", node.line).strip(), 0) + 1
            unique.append(node)
        elif k in repeats:
            repeats[k][1] += 1
        else:
            repeats[k] = [node, 0]
            unique.append(node)
    under = _headings_before(root) if any(n > 1 for n in twins.values()) else {}
    # A twin names its heading only where the headings tell the twins apart.
    telling = {name for name in twins if twins[name] > 1 and len(
        {under.get(id(n)) for n in matched if n.role in CONTROLS and REF.sub("", n.line).strip() == name}) > 1}
    shown, out, printed = unique[:limit], [], {}
    matched_ids = {id(node) for node in matched}
    for node in shown:
        chain, up = [], node.parent
        while up is not None and up.depth >= 0:
            if _kept(up):
                chain.append(up)
            up = up.parent
        depth = 0
        for ancestor in reversed(chain):
            if id(ancestor) not in printed:
                printed[id(ancestor)] = depth
                out.append(_shown(ancestor, depth) + ":")
            depth = printed[id(ancestor)] + 1
        if id(node) in printed:  # shown already as an ancestor of an earlier match
            continue
        printed[id(node)] = depth
        needle = next((n for n in needles if n in node.line.lower()), None)
        line = _shown(node, depth, needle)
        if node.role in CONTROLS:
            heading = under.get(id(node)) if REF.sub("", node.line).strip() in telling else None
            line += f' (under "{heading}")' if heading else ""
        else:
            more = repeats[key(node)][1]
            line += f" (and {more} more like it)" if more else ""
        out.append(line)
        # A link's /url in full (an agent may go there); a long placeholder is cut as a line is.
        out += ["  " * (depth + 1) + (c.line.lstrip() if c.line.lstrip().startswith("- /url:") else
                                      _shown(c, 0, needle)) for c in node.children if c.is_property]
        if node.role == "heading":
            for after in _titled(node, matched_ids):
                printed[id(after)] = depth
                out.append(_shown(after, depth))
    return "\n".join(out), len(matched)


def _titled(heading, matched_ids, most=HEADING_PREVIEW):
    """The first nodes a matched heading titles (its next siblings that say something, one line
    each): a card's value under its caption, the icon button beside a "Note" heading. They come
    with the heading, so the agent needs no second read of its section for them."""
    siblings = heading.parent.children
    level = LEVEL.search(heading.line)
    out: list[Node] = []
    for node in siblings[siblings.index(heading) + 1:]:
        if len(out) == most or id(node) in matched_ids or node.is_property:
            break
        other = LEVEL.search(node.line) if node.role == "heading" else None
        if other and level and other.group(1) == level.group(1):
            break  # the next heading of its rank: a twin card's caption
        if node.role in CONTROLS or node.role == "heading" or node.named or _text(node) is not None:
            out.append(node)
    return out
