"""The core's face, read from the syntax tree (issue 71): who may write a session's objects, and how the transports
and the view reach the core. No browser: each rule is a walk over the package's modules."""

import ast
import pathlib

import pytest

pytestmark = pytest.mark.unit

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "mcpbrowser"
# A session's worker, its state and its tabs belong to the session's own package and its tools' handlers (which
# run on the session thread): every other module passes values when the object is made, or submits a command.
OWNERS = ("session", "tools")
MUTATORS = {"update", "append", "add", "pop", "clear", "setdefault", "extend", "discard", "remove", "insert",
            "popitem", "__setitem__", "__delitem__"}
SESSION_CLASSES = ("SessionWorker", "SessionState", "Tab")


def _modules(*under):
    roots = [PACKAGE / part for part in under] if under else [PACKAGE]
    return sorted(p for root in roots for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _name(path):
    return str(path.relative_to(PACKAGE))


def _typed_as_session(tree):
    """Names annotated as a SessionWorker, a SessionState or a Tab anywhere in the module (a function's arguments)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            if any(cls in ast.unparse(node.annotation) for cls in SESSION_CLASSES):
                names.add(node.arg)
    return names


def _is_session_object(node, typed):
    """Whether an expression names a session's worker, state or tab: `worker`, `state`, `record.worker`,
    `self._state`, `old_worker`, `state.tab`, or a name annotated with their class."""
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Attribute):
        name = node.attr
    else:
        return False
    bare = name.lstrip("_")
    return bare in ("worker", "state", "tab") or bare.endswith(("_worker", "_state", "_tab")) or name in typed


def session_writes(source):
    """Lines of `source` that assign, setattr or fill an attribute of a session's worker or state."""
    tree = ast.parse(source)
    typed = _typed_as_session(tree)
    found = []

    def written(target):
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                written(element)
        elif isinstance(target, ast.Starred):
            written(target.value)
        elif isinstance(target, ast.Attribute) and _is_session_object(target.value, typed):
            found.append(target.lineno)
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute) \
                and _is_session_object(target.value.value, typed):
            found.append(target.lineno)  # worker.options[key] = value

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                written(target)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            written(node.target)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                written(target)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args \
                    and _is_session_object(node.args[0], typed):
                found.append(node.lineno)
            elif isinstance(func, ast.Attribute) and func.attr in MUTATORS and isinstance(func.value, ast.Attribute) \
                    and _is_session_object(func.value.value, typed):
                found.append(node.lineno)  # worker.tickers.pop(...), state.withheld.add(...)
    return found


def test_the_rule_sees_each_kind_of_write():
    """The walk itself, on the writes issue 71 found (positive controls), and on what it must let pass."""
    assert session_writes("record.worker.ticker = None") == [1]
    assert session_writes("setattr(worker, name, value)") == [1]
    assert session_writes("worker.tickers.pop('screencast', None)") == [1]
    assert session_writes("worker.options['allowed_domains'] = d") == [1]
    assert session_writes("state.storage_saved_at, state.storage_saved_url = 1, 2") == [1, 1]
    assert session_writes("def f(new: SessionWorker, old):\n    new.held_by = old.held_by") == [2]
    assert session_writes("state.worker.memory_mb += 1") == [1]
    assert session_writes("state.tab.refs = frozenset()") == [1]
    assert session_writes("record.worker = new\ncast.viewers += 1\nx = worker.held_by\nworker.tick('a', 1, f)") == []


@pytest.mark.parametrize("path", [p for p in _modules() if p.relative_to(PACKAGE).parts[0] not in OWNERS],
                         ids=_name)
def test_no_module_outside_the_session_writes_a_workers_or_a_states_attributes(path):
    """Issue 71: eight modules wrote a session's worker (who holds it, its tickers, its secrets, its browser's
    life, its memory figure) from other threads and packages. Each now passes the value when the worker is
    made, submits a command, or calls the worker's own method for it."""
    assert session_writes(path.read_text()) == [], f"{_name(path)} writes a session's worker or state"


# -- the transports and the view reach the core through its face only ------------------------------------------

FACE_USERS = ("transports", "view")
# What of the core they may import: its face, and the agent's rendering of an answer (a pure function the
# transports wrap). Nothing of the session's package or of the tools' handlers.
FACE_IMPORTS = ("mcpbrowser.core.face", "mcpbrowser.core.answer")
BEYOND_THE_FACE = ("mcpbrowser.core", "mcpbrowser.session", "mcpbrowser.tools")


def _face_class():
    tree = ast.parse((PACKAGE / "core" / "face.py").read_text())
    return next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "CoreFace")


def face_members():
    return {node.name for node in _face_class().body if isinstance(node, ast.FunctionDef)}


def _is_core(node):
    """`core`, `self.core`, `app.core`, `self.connection.core`: how the transports and the view name the face."""
    return (isinstance(node, ast.Name) and node.id == "core") or \
        (isinstance(node, ast.Attribute) and node.attr == "core")


def core_reads(source):
    """(line, name) of each attribute taken of the core in `source`."""
    return [(node.lineno, node.attr) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and _is_core(node.value)]


def core_imports(source):
    """(line, module) of each import of the core beyond its face, the session's package or the tools'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found += [(node.lineno, name) for name in names
                  if name.startswith(BEYOND_THE_FACE) and not name.startswith(FACE_IMPORTS)]
    return found


def test_the_face_is_verbs():
    """CoreFace declares methods and read-only properties only: no part of the core (a registry, a history, a
    store) handed out as an attribute, as the seven it declared before issue 71 were."""
    parts = [ast.unparse(node) for node in _face_class().body
             if isinstance(node, (ast.AnnAssign, ast.Assign))]
    assert parts == []
    assert {"call_tool", "list_tools", "sessions", "timeline", "take_over", "hand_back", "watch", "announce",
            "close"} <= face_members()


def test_the_face_rules_see_a_reach_past_the_face():
    """The walks themselves, on what issue 71 found (positive controls), and on what they must let pass."""
    assert core_reads("app.core.store.server = x") == [(1, "store")]
    assert core_reads("self.connection.core.registry.owner_of(sid)") == [(1, "registry")]
    assert core_reads("core = self.core\ncore.groups.listed(owner)") == [(2, "groups")]
    assert core_imports("from mcpbrowser.core.sessions import SessionRegistry") == [
        (1, "mcpbrowser.core.sessions.SessionRegistry")]
    assert core_imports("from mcpbrowser.tools.person import MAX_TEXT") == [(1, "mcpbrowser.tools.person.MAX_TEXT")]
    assert core_imports("from mcpbrowser.core import answer\nfrom mcpbrowser.core.face import CoreFace") == []


@pytest.mark.parametrize("path", _modules(*FACE_USERS), ids=_name)
def test_the_transports_and_the_view_reach_the_core_through_its_face_only(path):
    """Issue 71: `http.py` wrote `core.store.server`, the view read the registry's records and wrote their
    workers. Every attribute they take of the core is a member of CoreFace, and they import nothing of the
    core beyond it (mypy checks the same of the types: `tox -e type`)."""
    source = path.read_text()
    members = face_members()
    assert [(line, name) for line, name in core_reads(source) if name not in members] == [], \
        f"{_name(path)} reaches past the core's face"
    assert core_imports(source) == [], f"{_name(path)} imports the core beyond its face"


# -- a core tool's handler gets a narrow context -------------------------------------------------------------

CORE_TOOL_MODULES = ("lifecycle_tools", "content_tools", "export_tools", "performance_tools", "tool_groups")


def test_a_core_tools_handler_uses_only_its_context():
    """Every attribute a session-less tool's handler (handler(core, args, call)) takes of `core` is a field of
    browser.ToolContext: the handlers are read, and the context is what the dispatcher hands them."""
    from mcpbrowser.core.browser import ToolContext

    used = set()
    for module in CORE_TOOL_MODULES:
        for function in ast.walk(ast.parse((PACKAGE / "core" / f"{module}.py").read_text())):
            if isinstance(function, ast.FunctionDef) and function.args.args and function.args.args[0].arg == "core":
                used |= {node.attr for node in ast.walk(function) if isinstance(node, ast.Attribute)
                         and isinstance(node.value, ast.Name) and node.value.id == "core"}
    assert "history" in used and "warm_pool" in used  # the walk reads the handlers (positive control)
    assert used <= set(ToolContext._fields)
    assert not {"close", "start", "client", "dispatcher", "user", "files"} & set(ToolContext._fields)


def test_a_core_tools_handler_is_handed_the_context_not_the_browser():
    """A core tool run through a real core (built, never started: no browser) gets the ToolContext."""
    import dataclasses

    from mcpbrowser.config import Config
    from mcpbrowser.core.browser import Browser, ToolContext

    core = Browser(Config(db=":memory:"))
    try:
        seen = []
        tool = core.tools["saved_states"]
        core.tools["saved_states"] = dataclasses.replace(
            tool, handler=lambda context, args, call: seen.append(context) or tool.handler(context, args, call))
        assert core.call("saved_states")["count"] == 0
        assert len(seen) == 1 and isinstance(seen[0], ToolContext) and seen[0] is not core
    finally:
        core.close()
