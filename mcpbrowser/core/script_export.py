"""A session's recorded calls as a pytest module that replays them with Playwright's sync API. Any thread.

Pure: History.session_calls' rows in, Python source out (export_tools.py writes the file). The rows are
scrubbed to [REDACTED], so a secret can only come out as a read of an environment variable. A ref (e12)
becomes the role and name its snapshot gave its element. The test starts sync_playwright() itself (no
pytest-playwright fixture: it runs with pytest alone and beside that plugin) and finds its browser at run
time, so no path of the server's machine is written into it."""

import json
import os
import re
import time

from mcpbrowser import snapshot_text
from mcpbrowser.redaction import REDACTED
from mcpbrowser.session.opener import EMULATION

SECRET_ENV = "MCPBROWSER_SECRET_{}"
STATE_ENV = "MCPBROWSER_STORAGE_STATE"
UPLOAD_ENV = "MCPBROWSER_UPLOAD_DIR"
BROWSER_ENV = "MCPBROWSER_BROWSER_PATH"
EXPECT_ENV = "MCPBROWSER_EXPECT_TIMEOUT"
# The page actions a replay repeats; handle_dialog is replayed as a handler set before its dialog opens.
ACTIONS = {"navigate", "go_back", "go_forward", "reload", "tabs", "click", "hover", "type", "select", "press_key",
           "drag", "fill_form", "mouse", "resize", "upload_file", "wait_for", "route", "unroute", "cookies", "storage",
           "page_tools"}
# What an agent read or did beside the page: left out, named in a comment where the agent was.
READS = {"snapshot", "dom_snapshot", "screenshot", "console_logs", "network_logs", "downloads", "pdf", "evaluate",
         "get_content", "get_console_content", "tabs", "wait_for_user", "save_state", "route", "cookies", "storage",
         "page_tools"}
# Tools whose call lists (a read) unless an argument makes it act: that argument, per tool.
LISTS = {**dict.fromkeys(("tabs", "cookies", "storage"), lambda args: args.get("action", "list") != "list"),
         "route": lambda args: "url" in args, "page_tools": lambda args: "name" in args}
LOADS = {"navigate": "goto", "go_back": "go_back", "go_forward": "go_forward", "reload": "reload"}

_ID = re.compile(r"^#[A-Za-z_][\w-]*$")
TAB_HELPER = [
    "def tab(context, index):",
    '    """The tab at index (0-based, in the order they opened), once it has opened."""',
    "    while len(context.pages) <= index:",
    '        context.wait_for_event("page")',
    "    return context.pages[index]",
    "", "",
]
# Several dialogs answered for one step: each answer in turn (handlers set with `once` would all take the first).
ORDER_HELPER = [
    "def answer_in_order(page, *answers):",
    '    """Answer the page\'s next dialogs with answers(dialog), one each, in order."""',
    "    left = list(answers)",
    "",
    "    def answer(dialog):",
    "        left.pop(0)(dialog)",
    "        if not left:",
    '            page.remove_listener("dialog", answer)',
    "",
    '    page.on("dialog", answer)',
    "", "",
]
# A dialog answered in another tab than the current one (a popup's): its answer waits for that tab, which opens later.
TAB_DIALOG_HELPER = [
    "def answer_in_tab(context, index, *answers):",
    '    """Answer the next dialogs of the tab at index with answers(dialog), in order, once the tab has opened."""',
    "    def opened(popup):",
    "        if popup in context.pages and context.pages.index(popup) == index:",
    '            context.remove_listener("page", opened)',
    "            answer_in_order(popup, *answers)",
    "",
    "    if len(context.pages) > index:",
    "        answer_in_order(context.pages[index], *answers)",
    "    else:",
    '        context.on("page", opened)',
    "", "",
]
# fill_form's rule, at replay time: the kind of control decides (see tools/interaction.py's _filler).
FILL_HELPER = [
    "def fill(field, value):",
    '    """As fill_form: a checkbox or radio is checked (value "true") or not, a <select> chooses, else fill."""',
    "    kind = field.evaluate(\"e => e.tagName === 'SELECT' ? 'select' : "
    "['checkbox', 'radio'].includes(e.type) ? 'check' : 'fill'\")",
    '    if kind == "check":',
    '        field.set_checked(value in ("true", "on", "1"))',
    '    elif kind == "select":',
    "        field.select_option(value)",
    "    else:",
    "        field.fill(value)",
    "", "",
]


class Element:
    """One element of a snapshot: role, accessible name, inline text, the iframes it sits in."""

    __slots__ = ("role", "name", "text", "ref", "frames")

    def __init__(self, role, name, text, ref, frames):
        self.role, self.name, self.text, self.ref, self.frames = role, name, text, ref, frames


def parse_snapshot(text):
    """[Element] of an aria snapshot, in document order (read by snapshot_text, the one reader)."""
    out: list[Element] = []
    iframes: dict = {}  # frames path -> how many iframes seen in it

    def walk(node, frames):
        for child in node.children:
            read = snapshot_text.element(child)
            inside = frames
            if read is not None:
                role, name, ref, text = read
                # The page's own words, clean() showed with a ‹ref=…›: the locator finds them as the page has them.
                out.append(Element(role, snapshot_text.page_words(name), snapshot_text.page_words(text or ""), ref,
                                   frames))
                if role == "iframe":
                    inside = (*frames, iframes.get(frames, 0))
                    iframes[frames] = inside[-1] + 1
            walk(child, inside)

    walk(snapshot_text.parse(text), ())
    return out


def locator_for(elements, ref):
    """The Python expression (on `page`) that finds the element a ref named, or None when it is not there."""
    mine = next((e for e in elements if e.ref == ref), None)
    if mine is None:
        return None
    scope = [e for e in elements if e.frames == mine.frames]
    base = "page" + "".join(f'.frame_locator("iframe").nth({i})' for i in mine.frames)
    if mine.name:
        same = [e for e in scope if e.role == mine.role and e.name == mine.name]
        # get_by_role matches names by substring, ignoring case: exact where another name contains this one.
        loose = any(e.role == mine.role and e.name and e.name != mine.name and mine.name.lower() in e.name.lower()
                    for e in scope)
        expr = f"{base}.get_by_role({_q(mine.role)}, name={_q(mine.name)}{', exact=True' if loose else ''})"
    elif mine.text and mine.role not in ("textbox", "combobox", "searchbox", "spinbutton"):
        same = [e for e in scope if e.text == mine.text and not e.name]
        expr = f"{base}.get_by_text({_q(mine.text)}, exact=True)"
    else:
        same = [e for e in scope if e.role == mine.role]
        expr = f"{base}.get_by_role({_q(mine.role)})"
    if len(same) > 1:
        expr += f".nth({same.index(mine)})"
    return expr


def _q(text):
    """A Python string literal, double-quoted where it can be."""
    return json.dumps(text, ensure_ascii=False) if '\\' not in text else repr(text)


def _py(value):
    """A JSON value (an emulation option) as a Python literal in the file's style."""
    if isinstance(value, str):
        return _q(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_q(k)}: {_py(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_py(v) for v in value) + "]"
    return repr(value)


class Script:
    """The test being written: its body lines, the secrets it reads, what could not be replayed."""

    def __init__(self, session_id, metadata, upload_roots=(), storage_state_path=None):
        self.session_id, self.metadata = session_id, metadata
        self.upload_roots = [os.path.realpath(r) for r in upload_roots]
        self.storage_state_path = storage_state_path
        self.body: list[str] = []
        self.env_names: list[str] = []  # environment variables it reads, in order
        self.warnings: list[str] = []
        self.steps = 0
        self.uses_re = self.uses_pytest = self.tabs = self.fills = self.uploads = self.tab_dialogs = False
        self.in_order = False  # several dialogs answered for one step
        self.closes = False  # a step whose tab closed itself: a closed page ends it (Playwright's Error caught)
        self.webmcp = False  # it calls a page's tools: Chromium is launched able to run them
        self.snapshots: list[str] = []  # pages the calls so far stored, newest last

    # -- values ----------------------------------------------------------------------

    def secret(self, what, name=None, why="a secret, never stored"):
        """The read of the environment variable that holds a [REDACTED] value (or a --secrets name's), commented."""
        numbered = sum(1 for s in self.env_names if s.startswith(SECRET_ENV.format("")))
        env = name or SECRET_ENV.format(numbered + 1)
        if env not in self.env_names:
            self.env_names.append(env)
        self.comment(f"{what}: {why}; the test reads it from {env}")
        return f"os.environ[{_q(env)}]"

    def text(self, value, what, why="a secret, never stored"):
        """A string argument as Python: a literal, or with each [REDACTED] part read from the environment."""
        if not isinstance(value, str):
            return repr(value)
        if REDACTED not in value:
            return _q(value)
        parts = value.split(REDACTED)
        pieces = [_q(parts[0])] if parts[0] else []
        for part in parts[1:]:
            pieces.append(self.secret(what, why=why))
            if part:
                pieces.append(_q(part))
        return " + ".join(pieces)

    def expected(self, value):
        """A URL or title to assert: a literal, or a pattern where a secret was scrubbed out of it."""
        if REDACTED not in value:
            return _q(value)
        self.uses_re = True
        pattern = "^" + ".+".join(re.escape(p) for p in value.split(REDACTED)) + "$"
        return f're.compile(r"{pattern}")' if '"' not in pattern and "\n" not in pattern else f"re.compile({pattern!r})"

    # -- lines -----------------------------------------------------------------------

    def line(self, code):
        self.body.append(code)

    def comment(self, text):
        self.body.append(f"# {text}")

    def target(self, args, tool):
        """The locator expression for a call's selector or ref; None (with a warning) when a ref cannot be found."""
        selector = args.get("selector")
        if selector is not None:  # the tools act on the first match, as .first does (an #id has one)
            located = f"page.locator({_q('xpath=' + selector if selector.startswith('(//') else selector)})"
            return located if _ID.match(selector) else located + ".first"
        ref = args.get("ref")
        if ref is None:
            return None
        for stored in reversed(self.snapshots):  # the latest snapshot that showed it: the one the agent read
            if f"[ref={ref}]" in stored:
                expr = locator_for(parse_snapshot(stored), ref)
                if expr is not None:
                    return expr
        self.warnings.append(f"step {self.steps} ({tool}): its ref is in no stored snapshot; "
                             "the test fails there until a locator is written in")
        self.uses_pytest = True
        self.line(f"pytest.fail({_q(f'step {self.steps} ({tool}): write the locator of its element here')})")
        return None

    def assert_page(self, result, title=True):
        if not result.get("url"):
            return
        self.line(f"expect(page).to_have_url({self.expected(result['url'])})")
        if title and result.get("title"):
            self.line(f"expect(page).to_have_title({self.expected(result['title'])})")

    # -- the test ----------------------------------------------------------------------

    def context_options(self):
        """(new_context's keyword arguments as Python source, what the module's docstring says of them)."""
        options, notes = [], []
        emulation = self.metadata.get("emulation") or {}
        if "device" in emulation:
            options.append(f"**playwright.devices[{_q(emulation['device'])}]")
        for key, keyword in EMULATION.items():
            if key in emulation:
                options.append(f"{keyword}={_py(emulation[key])}")
        if "geolocation" in emulation:
            options.append('permissions=["geolocation"]')
        if self.metadata.get("login"):
            default = f", {_q(self.storage_state_path)}" if self.storage_state_path else ""
            read = f'os.environ.get("{STATE_ENV}"{default})' if default else f'os.environ["{STATE_ENV}"]'
            options.append(f"storage_state={read}")
            notes.append(f"The session began logged in with the saved login {self.metadata['login']!r}: a "
                         f"Playwright storage state file stands for it ({STATE_ENV}).")
        return options, notes

    def render(self, exported_at=None, filename="FILE"):
        name = "test_session_" + re.sub(r"\W", "_", self.session_id[:8])
        options, notes = self.context_options()
        engine = self.metadata.get("browser", "chromium")
        run = " ".join([*(f"{env}=..." for env in self.env_names),
                        *([f"{STATE_ENV}=state.json"] if self.metadata.get("login") and not self.storage_state_path
                          else []), f"python -m pytest {filename}"])
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(exported_at))
        head = [f'"""Replays mcpbrowser session {self.session_id} (exported {stamp}): {self.steps} steps.', "",
                f"Run it: {run}"]
        if self.env_names:
            head.append(f"What it types that the history never kept (secrets, form values): "
                        f"set {', '.join(self.env_names)}.")
        head += notes
        head += [f"Browser: {BROWSER_ENV}, else Playwright's own {engine}, else one on PATH; "
                 "MCPBROWSER_HEADED=1 shows it.", '"""', "", "import os"]
        if self.uses_re:
            head.append("import re")
        head += ["import shutil", "", *(["import pytest"] if self.uses_pytest else []),
                 f"from playwright.sync_api import {'Error, ' if self.closes else ''}expect, sync_playwright", "",
                 f"ENGINE = {_q(engine)}",
                 f'expect.set_options(timeout=int(os.environ.get("{EXPECT_ENV}", "5000")))  # ms each assertion waits',
                 "", "",
                 "def launch(playwright):",
                 f'    """{BROWSER_ENV}, else Playwright\'s own browser, else a Chromium or Chrome on PATH."""',
                 "    engine = getattr(playwright, ENGINE)",
                 f'    path = os.environ.get("{BROWSER_ENV}")',
                 '    if not path and ENGINE == "chromium" and not os.path.exists(engine.executable_path):',
                 '        path = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", '
                 '"google-chrome"))), None)',
                 '    return engine.launch(executable_path=path or None, headless=os.environ.get("MCPBROWSER_HEADED")'
                 ' != "1"' + (', args=["--enable-features=WebMCP"]' if self.webmcp else "") + ")", "", "",
                 *(TAB_HELPER if self.tabs else []),
                 *(ORDER_HELPER if self.in_order or self.tab_dialogs else []),
                 *(TAB_DIALOG_HELPER if self.tab_dialogs else []),
                 *(FILL_HELPER if self.fills else []),
                 f"def {name}():",
                 "    with sync_playwright() as playwright:",
                 "        browser = launch(playwright)",
                 f"        context = browser.new_context({', '.join(options)})",
                 "        page = context.new_page()",
                 "        try:"]
        body = [f"            {line}" if line else "" for line in self.body] or ["            pass"]
        tail = ["        finally:", "            context.close()", "            browser.close()", ""]
        return "\n".join(head + body + tail)


def _call(subject, method, *arguments):
    """`subject.method(a, b)` from the arguments that are not empty."""
    return f"{subject}.{method}({', '.join(a for a in arguments if a)})"


def _replayed(tool, args):
    """Whether a successful call acted on the page (replayed), rather than read it."""
    if tool in LISTS:
        return LISTS[tool](args)
    return tool in ACTIONS


def build(calls, session_id, metadata, upload_roots=(), storage_state_path=None, exported_at=None, filename="FILE"):
    """(source, script) for a session's calls (History.session_calls), to be saved as `filename`."""
    script = Script(session_id, metadata, upload_roots, storage_state_path)
    calls = [step for call in calls for step in _measured(_closed_during(call))]
    answers = _dialog_answers(calls)
    reads: list[str] = []
    for index, (_, tool, args, status, result, page) in enumerate(calls):
        # The current tab closed itself (window.close: a sign-in popup done) before this call's answer, which told
        # it (currentTab) and speaks of the tab now current: the agent went on there, so the replay follows it, as
        # after a tabs select, instead of driving the closed page.
        told = _told(status, result).get("currentTab")
        shown = result or {}
        if told is not None and status == "ok":  # its url and title are the tab's now current: asserted there
            shown = {k: v for k, v in shown.items() if k not in ("url", "title", "navigated")}
        if status == "ok" and _replayed(tool, args):
            if reads:
                script.comment(f"the agent read the page here ({', '.join(dict.fromkeys(reads))})")
                reads = []
            script.steps += 1
            by_tab: dict = {}  # Playwright answers in a handler set before; a tab's answers in order
            for accept, prompt, tab in answers.get(index, ()):
                reply = script.text(prompt, "the prompt's answer") if accept and prompt is not None else ""
                by_tab.setdefault(tab, []).append(f'lambda dialog: dialog.{"accept" if accept else "dismiss"}({reply})')
            for tab, handlers in by_tab.items():
                script.tab_dialogs = script.tab_dialogs or tab is not None
                script.in_order = script.in_order or (tab is None and len(handlers) > 1)
                script.line(f"answer_in_tab(context, {tab}, {', '.join(handlers)})" if tab is not None else
                            f'page.once("dialog", {handlers[0]})' if len(handlers) == 1 else
                            f"answer_in_order(page, {', '.join(handlers)})")
            start = len(script.body)
            _step(script, tool, args, shown)
            if told is not None:
                _closing(script, start, tool, result)
        elif status == "ok" and tool in READS:
            reads.append(tool)
        elif tool == "person_input" and (index == 0 or calls[index - 1][1] != "person_input"):
            # What a person did in the live view (a login, say) is theirs to do again, never replayed.
            script.comment("a person took over in the live view here (their actions are not replayed)")
        if told is not None:
            _follow(script, told, result if status == "ok" else {})
        if page is not None:
            script.snapshots.append(page.decode())
    if reads:
        script.comment(f"the agent read the page here ({', '.join(dict.fromkeys(reads))})")
    return script.render(exported_at, filename), script


def _closing(script, start, tool, result):
    """The step written from `start` on, whose tab closed itself during it or as it ended (its answer told it): in a
    replay the close may come before the step's end (a keydown's window.close), so its tab closing ends the step.
    A wait that ended as its tab closed (TAB_CLOSED during it) waited for what never came there: not replayed."""
    lines = script.body[start:]
    del script.body[start:]
    if tool == "wait_for" and result.get("during"):
        script.comment("the wait ended as its tab closed itself")
        return
    script.closes = True
    script.line("try:")
    script.body.extend(f"    {line}" for line in lines)
    script.line("except Error:")
    script.line("    if not page.is_closed():  # anything but its tab closing itself, as it did for the agent")
    script.line("        raise")


def _closed_during(call):
    """A call whose tab closed itself during it (TAB_CLOSED, details.during) did what it did before: a step that
    succeeded, its answer what the error told (closedTabs, currentTab); any other call as it is."""
    ref_id, tool, args, status, error, page = call
    details = _told(status, error) if status == "error" else {}
    if details.get("during") and error.get("errorCode") == "TAB_CLOSED":
        return ref_id, tool, args, "ok", details, page
    return call


def _told(status, result):
    """What a call told beside its work, as its row keeps it: the answer of one that succeeded, the details of one
    that failed (closedTabs, currentTab: tabs that closed themselves); {} for none."""
    if status == "ok":
        return result or {}
    return ((result or {}).get("details") or {}) if status == "error" else {}


def _measured(call):
    """A measure_performance call as the page actions it took (its load, then the click or key it measured), a
    measure_memory call as its interaction as many times as it did it, so the steps after replay on the page it
    left; any other call as it is."""
    ref_id, tool, args, status, result, page = call
    if tool not in ("measure_performance", "measure_memory") or status != "ok":
        return [call]
    steps = []
    acts = {k: args[k] for k in ("selector", "ref", "key") if k in args}
    if tool == "measure_memory":
        act: tuple = (ref_id, "press_key" if "key" in acts else "click", acts, status, {}, None)
        return [act] * (2 * args.get("repeat", 5)) + [(*act[:5], page)]
    if args.get("load", True):
        shown = {} if acts else {"url": (result or {}).get("url")}  # an interaction may move it on
        steps.append((ref_id, "navigate", {"url": args["url"]}, status, shown, None) if "url" in args
                     else (ref_id, "reload", {}, status, shown, None))
    if acts:
        steps.append((ref_id, "press_key" if "key" in acts else "click", acts, status, {}, None))
    return [*steps[:-1], (*steps[-1][:5], page)] if steps else [call]


def _dialog_answers(calls):
    """{index of a step: [(accept, promptText, tab)]}: each handle_dialog's answer, before the step that opened its
    dialog (tab None), or for another tab's (a popup's), before the step that opened that tab (else the last)."""
    out: dict[int, list] = {}
    opened, last = None, None
    openers: list = [None]  # per open tab, in the order they opened: the step that opened it (None: unknown)
    current = 0
    for index, (_, tool, args, status, result, _page) in enumerate(calls):
        told = _told(status, result)
        if "currentTab" in told:  # the current tab closed itself: its index goes, as a tabs close's does
            if told.get("closedTabs") == 1 and current < len(openers):
                del openers[current]
            current = told["currentTab"]
        result = result or {}
        if status != "ok":
            continue
        if _replayed(tool, args):
            last = index
        if tool == "handle_dialog":
            tab = result.get("tab")
            step = opened if tab is None else openers[tab] if tab < len(openers) and openers[tab] is not None else last
            if step is not None:
                out.setdefault(step, []).append((bool(args.get("accept")), args.get("promptText"), tab))
            # The next dialog its answer let the page open (an alert, then a confirm) is the same step's.
            opened = None if tab is None and not result.get("dialog") else opened
        elif result.get("dialog") and "tab" not in result["dialog"]:
            opened = index
        if tool == "tabs" and args.get("action") == "close":
            closed = args.get("index", current)
            if closed < len(openers):
                del openers[closed]
        openers += [last] * result.get("newTabs", 0)
        current = result.get("current", current)
    return out


def _step(script, tool, args, result):
    """The lines of one successful page action."""
    timeout = f"timeout={args['timeout']}" if "timeout" in args else ""
    if tool in LOADS:
        url = script.text(args["url"], "the URL") if tool == "navigate" else ""
        wait = f"wait_until={_q(args['waitUntil'])}" if "waitUntil" in args else ""
        script.line(_call("page", LOADS[tool], url, wait, timeout))
        script.assert_page(result)
    elif tool == "tabs":
        _tabs(script, args, result)
    elif tool in ("resize", "mouse"):
        _pointer(script, tool, args)
    elif tool == "wait_for":
        _wait(script, args, timeout)
    elif tool == "press_key" and not ("selector" in args or "ref" in args):
        script.line(_call("page.keyboard", "press", _q(args["key"])))
    elif tool == "fill_form":
        for field in args.get("fields", []):
            target = script.target(field, tool)
            if target is not None:
                value = script.secret("a form field's value", field["secretName"]) if "secretName" in field else \
                    script.text(field.get("value"), "a form field's value", "fill_form's are never stored")
                script.fills = True
                script.line(f"fill({target}, {value})")
        _after_action(script, result)
    elif tool in ("route", "unroute", "cookies", "storage", "page_tools"):
        _site(script, tool, args, result)
    elif tool == "drag":
        source, drop = script.target(args["source"], tool), script.target(args["target"], tool)
        if source and drop:
            script.line(_call(source, "drag_to", drop, timeout))
    else:
        target = script.target(args, tool)
        if target is not None:
            _on_element(script, tool, args, target, timeout)
            _after_action(script, result)


def _headers(script, headers, what):
    return "{" + ", ".join(f"{_q(k)}: {script.text(v, what)}" for k, v in headers.items()) + "}"


def _site(script, tool, args, result):
    """A route, a cookie or storage entry set or deleted, a page tool called: as Playwright's own calls."""
    if tool == "unroute":
        script.line(f"context.unroute({_q(args['url'])})" if "url" in args else "context.unroute_all()")
    elif tool == "route":  # a pattern routed again replaces its route, as the server's do
        pattern = _q(args["url"])
        if args.get("abort"):
            answer = 'route.abort("blockedbyclient")'
        elif "requestHeaders" in args:
            changed = args["requestHeaders"]
            gone = _py([k.lower() for k in changed])
            kept = f"{{k: v for k, v in route.request.headers.items() if k.lower() not in {gone}}}"
            added = _headers(script, {k: v for k, v in changed.items() if v is not None}, "a route's header")
            answer = f"route.continue_(headers={{**{kept}, **{added}}})"
        else:
            answer = _call("route", "fulfill", f"status={args.get('status', 200)}",
                           f"headers={_headers(script, args.get('headers') or {}, 'a route header')}",
                           f"body={script.text(args.get('body', ''), 'a route body')}")
        script.line(f"context.unroute({pattern})")
        script.line(f"context.route({pattern}, lambda route: {answer})")
    elif tool == "cookies" and args.get("action") == "delete":
        script.line(_call("context", "clear_cookies", *(f"{k}={_q(args[k])}" for k in ("name", "domain", "path")
                                                        if k in args)))
    elif tool == "cookies":
        cookie = {**(result.get("set") or {}), "value": REDACTED}
        fields = ", ".join(f"{_q(k)}: {script.text(args['value'], 'a cookie value') if k == 'value' else _py(v)}"
                           for k, v in cookie.items())
        script.line(f"context.add_cookies([{{{fields}}}])")
    elif tool == "storage":
        where = "sessionStorage" if args.get("kind") == "session" else "localStorage"
        if args.get("action") == "delete":
            script.line(f'page.evaluate("name => {where}.removeItem(name)", {_q(args["name"])})')
        else:
            value = script.text(args["value"], "a storage value")
            script.line(f'page.evaluate("([name, value]) => {where}.setItem(name, value)", '
                        f'[{_q(args["name"])}, {value}])')
    else:
        script.webmcp = True
        frame = "page" if "frame" not in args else \
            f"next(f for f in page.frames if f.url.startswith({_q(args['frame'] + '/')}))"
        given = args.get("input") or {}
        secret = {field: script.secret("a page tool's input", name) for field, name in
                  (args.get("secretNames") or {}).items()}  # a server secret by name: read from the environment
        tool_input = "{" + ", ".join([*(f"{_q(k)}: {_py(v)}" for k, v in given.items()),
                                      *(f"{_q(k)}: {v}" for k, v in secret.items())]) + "}"
        script.line(_call(f"{frame}.webmcp", "call_tool", _q(args["name"]), tool_input,
                          f"timeout={args['timeout']}" if "timeout" in args else ""))


def _on_element(script, tool, args, target, timeout):
    if tool == "click":
        count = args.get("clickCount", 1)
        script.line(_call(target, "click", f"click_count={count}" if count != 1 else "",
                          "force=True" if args.get("force") else "", timeout))
    elif tool == "hover":
        script.line(_call(target, "hover", "force=True" if args.get("force") else "", timeout))
    elif tool == "type":
        text = script.secret("typed text", args["secretName"]) if "secretName" in args else \
            script.text(args.get("text"), "typed text")
        clear = args.get("clear", True)
        if clear and not args.get("delay"):
            script.line(_call(target, "fill", text, timeout))
        else:
            if clear:
                script.line(_call(target, "fill", '""', timeout))
            delay = f"delay={args['delay']}" if args.get("delay") else ""
            script.line(_call(target, "press_sequentially", text, delay, timeout))
        if args.get("submit"):
            script.line(_call(target, "press", '"Enter"', timeout))
    elif tool == "select":
        which = "value" if "values" in args else "label"
        values = [script.text(v, "an option") for v in args.get("values", args.get("labels", []))]
        script.line(_call(target, "select_option", f"{which}=[{', '.join(values)}]", timeout))
    elif tool == "press_key":
        script.line(_call(target, "press", _q(args["key"]), timeout))
    elif tool == "upload_file":
        files = [_upload(script, path) for path in args.get("paths", [])]
        script.line(_call(target, "set_input_files", f"[{', '.join(files)}]", timeout))
    else:
        script.comment(f"{tool} is not replayed")


def _after_action(script, result):
    """An action that loaded another page asserts where it landed, as a navigation does."""
    if result.get("navigated"):
        script.assert_page(result)


def _tabs(script, args, result):
    index = args.get("index")
    script.tabs = script.tabs or index is not None
    if args.get("action") == "select":
        script.line(f"page = tab(context, {index})")
        script.line("page.bring_to_front()")
        current = next((t for t in result.get("tabs", []) if t.get("current")), None)
        if current:
            script.assert_page(current, title=False)
    else:
        script.line(f"tab(context, {index}).close()" if index is not None else "page.close()")
        script.line("page = context.pages[-1] if page.is_closed() else page")


def _follow(script, index, result):
    """On in the tab at index once the current one has closed itself (it may close later in a replay: a timer);
    in a new one when it was the last, as the session went on in a fresh blank tab."""
    script.tabs = True
    script.comment(f"the tab closed itself (its page called window.close()): the agent went on in tab {index}")
    script.line("if not page.is_closed():")
    script.line('    page.wait_for_event("close")')
    script.line(f"page = tab(context, {index}) if context.pages else context.new_page()")
    script.line("page.bring_to_front()")
    script.assert_page(result, title=False)


def _wait(script, args, timeout):
    target = script.target(args, "wait_for")
    if target is not None:
        state = args.get("state", "visible")
        if state == "visible":
            script.line(_call(f"expect({target}.filter(visible=True).first)", "to_be_visible", timeout))
        elif state == "hidden":
            script.line(_call(f"expect({target}.filter(visible=True))", "to_have_count", "0", timeout))
        else:
            script.line(_call(f"{target}.first", "wait_for", f"state={_q(state)}", timeout))
    if "text" in args:
        text = script.text(args["text"], "the text waited for")
        script.line(_call(f"expect(page.get_by_text({text}).filter(visible=True).first)", "to_be_visible", timeout))
    if "textGone" in args:
        text = script.text(args["textGone"], "the text waited for")
        script.line(_call(f"expect(page.get_by_text({text}).filter(visible=True))", "to_have_count", "0", timeout))
    if "url" in args:
        pattern = script.text(args["url"], "the URL waited for")
        if "*" not in args["url"]:  # the tool's own test: the URL contains it
            script.uses_re = True
            pattern = f"re.compile(re.escape({pattern}))"
        script.line(_call("page", "wait_for_url", pattern, timeout))
    if args.get("networkIdle"):
        script.line(_call("page", "wait_for_load_state", '"networkidle"', timeout))
    if args.get("download"):
        script.comment("the agent waited for a download to finish here")


def _pointer(script, tool, args):
    if tool == "resize":
        script.line(f'page.set_viewport_size({{"width": {args["width"]}, "height": {args["height"]}}})')
        return
    action, button = args["action"], _q(args.get("button", "left"))
    if action == "wheel":
        script.line(f"page.mouse.wheel({args.get('deltaX', 0)}, {args.get('deltaY', 0)})")
    elif action == "click":
        script.line(f"page.mouse.click({args['x']}, {args['y']}, button={button}, "
                    f"click_count={args.get('clickCount', 1)})")
    elif action == "move":
        script.line(f"page.mouse.move({args['x']}, {args['y']})")
    else:
        if "x" in args and "y" in args:
            script.line(f"page.mouse.move({args['x']}, {args['y']})")
        script.line(f"page.mouse.{action}(button={button})")


def _upload(script, path):
    """A file the session uploaded, as a path under MCPBROWSER_UPLOAD_DIR: no path of the server's machine."""
    real = os.path.realpath(path)
    root = next((r for r in script.upload_roots if os.path.commonpath([real, r]) == r), os.path.dirname(real))
    if not script.uploads:
        script.uploads = True
        script.comment(f"uploaded files are read from {UPLOAD_ENV} (default: this file's folder)")
    return f'os.path.join(os.environ.get("{UPLOAD_ENV}", os.path.dirname(__file__)), {_q(os.path.relpath(real, root))})'
