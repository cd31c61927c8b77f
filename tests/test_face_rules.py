"""The core's face, read from the syntax tree (issue 71): who may write a session's objects, and how the transports
and the view reach the core. No browser: each rule is a walk over the package's modules."""

import ast
import pathlib

import pytest

pytestmark = pytest.mark.unit

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "mcpbrowser"
# A session's worker and its state belong to the session's own package and its tools' handlers (which run on
# the session thread): every other module passes values when the object is made, or submits a command.
OWNERS = ("session", "tools")
MUTATORS = {"update", "append", "add", "pop", "clear", "setdefault", "extend", "discard", "remove", "insert",
            "popitem", "__setitem__", "__delitem__"}
SESSION_CLASSES = ("SessionWorker", "SessionState")


def _modules(*under):
    roots = [PACKAGE / part for part in under] if under else [PACKAGE]
    return sorted(p for root in roots for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _name(path):
    return str(path.relative_to(PACKAGE))


def _typed_as_session(tree):
    """Names annotated as a SessionWorker or a SessionState anywhere in the module (a function's arguments)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            if any(cls in ast.unparse(node.annotation) for cls in SESSION_CLASSES):
                names.add(node.arg)
    return names


def _is_session_object(node, typed):
    """Whether an expression names a session's worker or state: `worker`, `state`, `record.worker`, `self._state`,
    `old_worker`, or a name annotated with their class."""
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Attribute):
        name = node.attr
    else:
        return False
    bare = name.lstrip("_")
    return bare in ("worker", "state") or bare.endswith(("_worker", "_state")) or name in typed


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
    assert session_writes("record.worker = new\ncast.viewers += 1\nx = worker.held_by\nworker.tick('a', 1, f)") == []


@pytest.mark.parametrize("path", [p for p in _modules() if p.relative_to(PACKAGE).parts[0] not in OWNERS],
                         ids=_name)
def test_no_module_outside_the_session_writes_a_workers_or_a_states_attributes(path):
    """Issue 71: eight modules wrote a session's worker (who holds it, its tickers, its secrets, its browser's
    life, its memory figure) from other threads and packages. Each now passes the value when the worker is
    made, submits a command, or calls the worker's own method for it."""
    assert session_writes(path.read_text()) == [], f"{_name(path)} writes a session's worker or state"
