"""The house rules a newcomer relies on: packages say the thread, and imports only go down."""

import ast
import pathlib

import pytest

pytestmark = pytest.mark.unit

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "mcpbrowser"
# What each package may not import: data flows transports → core → session, never back up.
FORBIDDEN = {"session": ("mcpbrowser.core", "mcpbrowser.transports", "mcpbrowser.cli"),
             "core": ("mcpbrowser.transports", "mcpbrowser.cli"),
             "tools": ("mcpbrowser.core", "mcpbrowser.transports", "mcpbrowser.cli")}


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_module_says_what_it_is(path):
    """ARCHITECTURE.md's rule: each module's docstring says its job and which threads run its lines (a thread,
    the core pool, or the child process it runs as)."""
    import re

    docstring = ast.get_docstring(ast.parse(path.read_text()))
    assert docstring, f"{path.relative_to(PACKAGE)} has no docstring naming its job and threads"
    assert re.search(r"thread|core pool|process", docstring, re.I), \
        f"{path.relative_to(PACKAGE)}'s docstring does not say which threads run its lines"


def test_imports_only_go_down():
    wrong = []
    for path in _modules():
        package = path.relative_to(PACKAGE).parts[0]
        for name in _imports(ast.parse(path.read_text())):
            if name.startswith(FORBIDDEN.get(package, ())):
                wrong.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not wrong, wrong


def test_private_playwright_names_stay_in_one_module():
    """Playwright's private attributes are reached only in session/playwright_internals.py."""
    private = {"_client", "_connection", "_impl", "_impl_obj", "_loop", "_pre_launched_browser", "_proc", "_sync",
               "_sync_base", "_transport", "_dispatcher_fiber", "_channel"}
    leaks = []
    for path in _modules():
        if path.name == "playwright_internals.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            # Our own private attributes are reached through self or cls; anything else is a foreign object's.
            if (isinstance(node, ast.Attribute) and node.attr in private
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                leaks.append(f"{path.relative_to(PACKAGE)}:{node.lineno} .{node.attr}")
    assert not leaks, leaks


def test_a_session_package_module_says_it_runs_on_session_threads():
    """ARCHITECTURE.md's rule for session/: its lines run on session threads only, and each module says so."""
    import re

    modules = [p for p in _modules() if p.relative_to(PACKAGE).parts[0] == "session"]
    assert len(modules) > 10  # the control: the package was read
    silent = [str(p.relative_to(PACKAGE)) for p in modules
              if not re.search(r"session('s)?\s+threads?", ast.get_docstring(ast.parse(p.read_text())) or "", re.I)]
    assert not silent, f"session/ modules whose docstring does not say they run on session threads: {silent}"


def test_every_file_the_architecture_page_names_exists():
    """ARCHITECTURE.md names files by path (core/on_session.py, view/hands.py): each is there (a rename or a
    deleted module leaves the page false otherwise)."""
    import re

    text = (PACKAGE.parent / "ARCHITECTURE.md").read_text()
    # A path (core/on_session.py, scripts/call_path.py) from the package or the repository; a bare name (events.py
    # in the session's row, library.py among the top level's) as some file of the package. Node.js and the glob
    # `*_tools.py` are not files.
    named = set(re.findall(r"(?<![\w/.*-])([\w/]+\.(?:py|js))\b", text)) - {"Node.js"}
    assert len(named) > 100  # the control: the page was read
    package_files = {p.name for p in PACKAGE.rglob("*") if p.is_file()}
    missing = sorted(name for name in named
                     if not ((PACKAGE / name).exists() or (PACKAGE.parent / name).exists()
                             or ("/" not in name and name in package_files)))
    assert not missing, f"ARCHITECTURE.md names files that do not exist: {missing}"


def _calls_of(tree, names):
    """(name, line) of each call of a function in `names`, by its own name or as an attribute."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name in names:
                yield name, node.lineno


# Where secrets leave, one place per kind of exit (issue 71, DESIGN.md's "One outcome per call"): a call's
# outcome (its answer, the library's result and error, the history's rows), every log line, the event buffers
# behind the log streams and the view, and the files the server writes. Every other module hands raw values
# to one of them.
SECRET_EXITS = {"core/answer.py", "logs.py", "session/events.py", "trace_scrub.py"}
SCRUBBERS = {"scrub_text", "scrub_value", "redact_textboxes", "redact_headers", "scrub_urls"}
# Not the secret book: a field's value only the page knows, and the credentials of a URL (the server's own
# configured ones, a request's a route could not answer) that no book holds.
OWN_REDACTIONS = {("session/snapshots.py", "redact_textboxes"), ("core/fleet.py", "scrub_urls"),
                  ("core/store_postgres.py", "scrub_urls"), ("session/routes.py", "scrub_urls")}


def test_secrets_are_scrubbed_where_data_leaves_and_nowhere_else():
    """redaction.py's scrub and redact functions are called from the four exits only (14 modules called them;
    a new path that scrubbed for itself could forget to, and leak)."""
    callers = {}
    for path in _modules():
        module = str(path.relative_to(PACKAGE))
        if module != "redaction.py":
            for name, line in _calls_of(ast.parse(path.read_text()), SCRUBBERS):
                callers.setdefault((module, name), []).append(line)
    assert {module for module, _ in callers} >= SECRET_EXITS  # the control: each exit was read, and scrubs
    stray = {f"{module}:{lines} {name}" for (module, name), lines in callers.items()
             if module not in SECRET_EXITS and (module, name) not in OWN_REDACTIONS}
    assert not stray, f"scrubbed outside the exits (hand the raw value to one of {sorted(SECRET_EXITS)}): {stray}"


def test_one_secret_book():
    """The secret values a client met live in one book per client (redaction.SecretBook, made once per core),
    which its sessions' workers and calls hold: no module keeps a second store, or a second way to reach it."""
    made, held = [], []
    for path in _modules():
        module = str(path.relative_to(PACKAGE))
        tree = ast.parse(path.read_text())
        made += [f"{module} {name}" for name, _ in _calls_of(tree, {"SecretBook", "KnownSecrets"})]
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
            held += [f"{module} {ast.unparse(target)} = {ast.unparse(node.value)}" for target in targets
                     if isinstance(target, ast.Attribute) and target.attr.endswith("secrets") and node.value]
    # The one book of the core, a client's page of it (SecretBook.of), every client's for the log (EVERY), and a
    # worker's placeholder until the registry gives it its client's page (a warm session meets no secret).
    assert sorted(made) == ["core/browser.py SecretBook", "redaction.py KnownSecrets", "redaction.py KnownSecrets",
                            "session/worker.py KnownSecrets"], made
    assert sorted(held) == [
        "core/browser.py self.secrets = SecretBook(config.named_secrets())",
        "core/call.py self.secrets = ()",
        "core/dispatch.py call.secrets = self._registry.book(caller.owner, session_id)",
        "core/sessions.py self.secrets = secrets",
        "session/downloads.py self._secrets = secrets",  # the session's, read as a download is named
        "session/worker.py self.secrets = KnownSecrets()",
        "session/worker.py self.secrets = secrets",  # handed_out: the registry's page of its client's book
    ], held


def _session_handlers(tree):
    """The functions a module declares as session tools' handlers (a factory's: the functions it defines)."""
    defs = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "SessionTool":
            handler = ([k.value for k in node.keywords if k.arg == "handler"] or node.args[4:5])[0]
            if isinstance(handler, ast.Call):
                yield from (n for n in defs[handler.func.id].body if isinstance(n, ast.FunctionDef))
            else:
                yield defs[handler.id]


def _returns(function):
    """The return statements of a function's own body (not of the functions it defines)."""
    for child in ast.iter_child_nodes(function):
        if isinstance(child, ast.Return):
            yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            yield from _returns(child)


def test_a_session_tool_handler_says_everything_on_its_response():
    """A session tool's handler answers on its Response (`response.answer`) as it says all else there: it returns
    no value, and what runs it reads none (issue 71: one channel, not a flag, a return value and an exception)."""
    handlers, valued = 0, []
    for path in _modules():
        if path.relative_to(PACKAGE).parts[0] == "tools":
            for function in _session_handlers(ast.parse(path.read_text())):
                handlers += 1
                valued += [f"{path.name}:{r.lineno} {function.name}" for r in _returns(function) if r.value is not None]
                # A name of its own `response` (a Playwright one) would hide its Response from what it says next.
                valued += [f"{path.name}:{n.lineno} {function.name} rebinds response" for n in ast.walk(function)
                           if isinstance(n, ast.Name) and n.id == "response" and isinstance(n.ctx, ast.Store)]
    assert handlers > 25  # the control: the tools were read
    assert not valued, f"session tool handlers that return a value (say it with response.answer): {valued}"
    runs = ast.parse((PACKAGE / "session" / "state.py").read_text())
    calls = [node for node in ast.walk(runs) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr == "handler"]
    unread = [node.value for node in ast.walk(runs) if isinstance(node, ast.Expr)]
    assert calls and all(call in unread for call in calls), "run_tool reads a value of the handler it runs"


# What belongs to one page is its Tab's (session/tab.py), never the session state's (issue 71: SessionState held
# ~50 attributes, the per-page ones as sets and dicts keyed by page). PER_PAGE_OLD: their old names there.
TAB_STATE = {"page", "navigations", "refs", "full_snapshot", "arming", "crashed", "unresponsive",
             "dialog", "held_by", "dialog_run", "dialog_answered_at", "looping", "throttled", "cdp_session",
             "log_pages", "page_mark"}
PER_PAGE_OLD = {"pages", "refs_page", "cdp_sessions", "_looping", "_dialog_run", "_dialog_answered_at"}


def _classes(path, names):
    return [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ClassDef)
            and node.name in names]


def _self_stores(cls):
    """The attributes a class's methods bind on self (assigned, augmented or annotated)."""
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == "self":
                    yield part.attr, node.lineno


def test_a_tabs_state_is_its_tab_not_the_sessions():
    """The Tab binds each per-page attribute; SessionState (and Acting, its base) binds, declares or computes none
    (no property forwards one); and no module writes one on a session state (`state.refs = ...`)."""
    tab, = _classes(PACKAGE / "session" / "tab.py", {"Tab"})
    assert TAB_STATE <= {name for name, _ in _self_stores(tab)}, "a per-page attribute is no longer the Tab's"
    owners = _classes(PACKAGE / "session" / "state.py", {"SessionState"}) \
        + _classes(PACKAGE / "session" / "acting.py", {"Acting"})
    assert len(owners) == 2  # the control: both classes were read
    on_session = []
    for cls in owners:
        on_session += [f"{cls.name}:{line} self.{name}" for name, line in _self_stores(cls)
                       if name in TAB_STATE | PER_PAGE_OLD]
        for node in cls.body:  # a method or property of the name, or a declaration (`page: Any`)
            name = node.name if isinstance(node, ast.FunctionDef) else node.target.id \
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) else None
            if name in TAB_STATE | PER_PAGE_OLD:
                on_session.append(f"{cls.name}:{node.lineno} {name}")
    written = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    for part in ast.walk(target):
                        if isinstance(part, ast.Attribute) and part.attr in TAB_STATE | PER_PAGE_OLD \
                                and isinstance(part.value, ast.Name) and part.value.id == "state":
                            written.append(f"{path.relative_to(PACKAGE)}:{node.lineno} state.{part.attr}")
    assert not on_session, f"per-page state on the session state (make it the Tab's): {on_session}"
    assert not written, f"per-page state written on a session state (write state.tab's): {written}"


# "Browser" means one thing inside the package: the shared browser (Playwright's Browser, its process and what
# supervises it). The public API's `Browser` object is held as `core` (issue 71: the word named five things).
CORE_TYPES = {"Browser", "CoreFace", "ToolContext", "BrowserSupervisor"}


def _annotation_names(annotation):
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # a quoted annotation
        annotation = ast.parse(annotation.value, mode="eval")
    return {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)} \
        | {n.attr for n in ast.walk(annotation) if isinstance(n, ast.Attribute)}


def test_a_name_saying_browser_holds_the_shared_browser():
    """A parameter typed as the core (its class, its face, a tool's context) or the browser's supervisor is not
    called browser: `core`, `supervisor`."""
    typed, wrong = 0, []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.arg) and node.annotation is not None \
                    and _annotation_names(node.annotation) & CORE_TYPES:
                typed += 1
                if "browser" in node.arg.lower():
                    wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.arg}")
    assert typed > 8  # the control: the typed parameters were read
    assert not wrong, f"parameters holding the core or the supervisor called browser: {wrong}"
