"""Where a call's decisions are made, read from the code (no browser): each in its one place.

A tool handler says what it did on its `Response` (session/response.py); `OnSession.run`
(core/on_session.py) alone turns that into the call's capture, secrecy and failure class. These
checks read every module's syntax tree, so a handler (or any other module) that writes one of
those on a call, or reads the running call off the session's state, fails here by name.
"""

import ast
import pathlib

import pytest

pytestmark = pytest.mark.unit

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "mcpbrowser"
# What a call's record and answer are made of, written on the Call.
DECISIONS = {"capture", "capture_after", "snapshot", "inline", "secret", "same_page", "snapshot_reused", "field_edit"}
CALLS_FUNCTION = "core/on_session.py"
# Where a failure gets its class (errors.as_server_error: ours as they are, Playwright's BROWSER_ERROR, a bug
# of ours INTERNAL_ERROR): a call on a session in OnSession.run, a session-less call in the dispatcher's pool
# runner, through Call.annotate_error; the agent's answer of a Future that ended otherwise (none does), rendered
# in core/answer.py. The transports classify nothing: they wrap what core/answer.py rendered.
CLASSIFIERS = {"errors.py", "core/call.py", CALLS_FUNCTION, "core/dispatch.py", "core/answer.py"}


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(), str(path))


def names_a_call(node):
    """`call`, `self.call`, `state.call`: the call, or the running call read off something else."""
    return (isinstance(node, ast.Name) and node.id == "call") or \
        (isinstance(node, ast.Attribute) and node.attr == "call")


def decision_writes(tree):
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            for t in (target.elts if isinstance(target, ast.Tuple) else [target]):
                if isinstance(t, ast.Attribute) and t.attr in DECISIONS and names_a_call(t.value):
                    yield t.lineno, t.attr


def test_only_the_calls_function_writes_its_capture_secrecy_and_snapshot():
    found = {name: list(decision_writes(tree)) for name, tree in modules()}
    elsewhere = {name: writes for name, writes in found.items() if writes and name != CALLS_FUNCTION}
    assert not elsewhere, f"a call's decisions written outside {CALLS_FUNCTION}: {elsewhere}"
    decided = {attr for _, attr in found[CALLS_FUNCTION]}
    assert decided == DECISIONS, decided  # the control: each is made there


def test_no_module_reads_the_running_call_off_the_sessions_state():
    reads = []
    for name, tree in modules():
        methods = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}  # self.call(...): a method
        reads += [(name, node.lineno) for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and node.attr == "call" and id(node) not in methods
                  and isinstance(node.value, ast.Name) and node.value.id in ("state", "self")]
    assert not reads, f"the running call read off a session's state (its handler has its Response): {reads}"


def test_a_failure_is_classified_only_where_a_call_ends():
    where = {}
    for name, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if called in ("as_server_error", "annotate_error", "InternalError"):
                    where.setdefault(name, set()).add(called)
    stray = {name: calls for name, calls in where.items() if name not in CLASSIFIERS | {"core/watchdog.py"}}
    assert not stray, f"a failure classified outside the call's function and the dispatcher: {stray}"
    assert "as_server_error" in where[CALLS_FUNCTION] and "annotate_error" in where[CALLS_FUNCTION]
    # The watchdog ends a stuck command with its own error (COMMAND_TIMEOUT): annotated, never classified.
    assert where.get("core/watchdog.py", set()) <= {"annotate_error"}


def test_every_session_handler_takes_the_calls_response():
    import inspect

    from mcpbrowser.core.tool_registry import ALL, PERSON
    from mcpbrowser.tools.base import SessionTool

    session_tools = [t for t in [*ALL, *PERSON] if isinstance(t, SessionTool)]
    assert len(session_tools) > 20  # the control: the registry was read
    wrong = [t.name for t in session_tools if list(inspect.signature(t.handler).parameters)[:3]
             != ["state", "args", "response"]]
    assert not wrong, f"handlers that do not take (state, args, response): {wrong}"
