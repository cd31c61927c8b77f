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
# of ours INTERNAL_ERROR): where a call ends, core/answer.py's `finish` (and `outcome_of`, for a Future the session
# closed under), and OnSession.run, which reads the class to tell a bug of ours from the page's facts. The
# transports classify nothing: they wrap what core/answer.py rendered.
CLASSIFIERS = {"errors.py", CALLS_FUNCTION, "core/answer.py"}
# Where a call ends in its Outcome (answer.finish): on its session thread, on the core pool or refused by the
# dispatcher, and by the watchdog for a stuck command.
ENDS = {CALLS_FUNCTION, "core/dispatch.py", "core/watchdog.py"}


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
                if called == "finish" and not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                                               and func.value.id == "answer"):
                    continue  # another's finish (a task's, a cooldown's)
                if called in ("as_server_error", "InternalError", "finish"):
                    where.setdefault(name, set()).add(called)
    classified = {name for name, calls in where.items() if calls & {"as_server_error", "InternalError"}}
    assert classified <= CLASSIFIERS, f"a failure classified outside where a call ends: {classified - CLASSIFIERS}"
    ended = {name for name, calls in where.items() if "finish" in calls}
    assert ended == ENDS, f"a call ended in its Outcome outside its ends: {ended ^ ENDS}"  # each end is there
    assert "as_server_error" in where["core/answer.py"]  # the control: the one classification was read


def test_every_session_handler_takes_the_calls_response():
    import inspect

    from mcpbrowser.core.tool_registry import ALL, PERSON
    from mcpbrowser.tools.base import SessionTool

    session_tools = [t for t in [*ALL, *PERSON] if isinstance(t, SessionTool)]
    assert len(session_tools) > 20  # the control: the registry was read
    wrong = [t.name for t in session_tools if list(inspect.signature(t.handler).parameters)[:3]
             != ["state", "args", "response"]]
    assert not wrong, f"handlers that do not take (state, args, response): {wrong}"
