"""The call's one path on its session (core/on_session.py `OnSession.run`, queued by core/dispatch.py),
with injected fakes: capture decided once, each call ended once in its Outcome (core/answer.py's finish), the unknown
tool one code. No browser."""

import contextlib
import json
import types
from concurrent.futures import Future

import pytest
from fakes import FakeTimer
from test_mcp_kernel import Wire

from mcpbrowser.config import Config
from mcpbrowser.core import answer, on_session
from mcpbrowser.core.call import Call, Embedder
from mcpbrowser.core.dispatch import Dispatcher
from mcpbrowser.core.tool_groups import ToolGroups
from mcpbrowser.core.user_channel import UserChannel
from mcpbrowser.errors import (
    BrowserServerError,
    ElementNotFound,
    ServerStopping,
    SessionLost,
    SessionNotFound,
    WaitTimeout,
)
from mcpbrowser.tools.base import SessionTool, session_schema
from mcpbrowser.transports.mcp_connection import McpConnection

pytestmark = pytest.mark.unit


def tool(name="act", **flags):
    return SessionTool(name=name, title=name, description=name, input_schema=session_schema(),
                       handler=lambda state, args, response: response.answer({}), **flags)


class Frame:
    def __init__(self, shows):
        self.shows = shows

    def evaluate(self, expression, arg):
        return self.shows


class State:
    """Just what the call's path asks of a session's state; `outcome` is what the tool's page work gives."""

    session_id = "s1"

    def __init__(self, outcome, connected=True, wall=None, elements=10, dialog_after=False):
        self.outcome, self.dialog_after = outcome, dialog_after
        self.blocker = None
        self.secrets, self.withheld = (), set()
        self.elements_counted = elements
        self.worker = types.SimpleNamespace(held_by=None)
        self.ran = []
        self.browser = types.SimpleNamespace(is_connected=lambda: connected)
        self.context = types.SimpleNamespace(cookies=lambda url: [])
        frame = Frame(wall)
        page = types.SimpleNamespace(url="https://shop.test/login", frames=[frame], main_frame=frame)
        self.tab = types.SimpleNamespace(page=page, unresponsive=False)
        self.events = types.SimpleNamespace(take_console=lambda: [{"level": "error", "text": "x"}],
                                            navigation_pending=lambda page: False)

    @contextlib.contextmanager
    def running(self, tool, response, args):
        self.ran.append(tool.name)
        yield

    def run_tool(self, tool, args, response):
        if self.dialog_after:
            self.blocker = object()
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        response.answer(dict(self.outcome))

    def dismissals_untold(self):
        return 0

    def closes_untold(self):
        return {}

    def background(self, tab, target, method, **kwargs):
        return getattr(target, method)(**kwargs)


class Registry:
    def __init__(self, closed=False):
        self.closed = closed

    def stopping_error(self, session_id):
        return ServerStopping(session_id=session_id)

    def session_lost(self, state):
        return SessionLost(session_id=state.session_id)

    def book(self, owner, session_id):
        return ()

    def open_ids(self, owner):
        return []

    def renewed(self, session_id):
        raise SessionNotFound(session_id=session_id)


class Recorder:
    def __init__(self):
        self.after, self.requests, self.responses = [], [], []

    def claim(self, ref_id):
        return None

    def request(self, call, args):
        self.requests.append(call.tool)

    def pending(self, call):
        pass

    def response(self, call, outcome):
        self.responses.append(call.tool)

    def after_call(self, state, outcome, call):
        self.after.append(call.snapshot)


def dispatcher(closed=False, **settings):
    config = Config(db=":memory:", **settings)
    user = UserChannel(config)
    user.cooldown.timers.factory, user.cooldown.clock = FakeTimer, lambda: 1000.0
    recorder = Recorder()
    tools = {"act": tool(changes_page=True), "look": tool("look"),
             "wait_for_user": tool("wait_for_user", waits_for_person=True),
             "hands": tool("hands", person_only=True, group="person")}
    core = types.SimpleNamespace(
        lost=[], remembered=[], groups=ToolGroups(config, tools),
        supervisor=types.SimpleNamespace(browser_gone=lambda worker, why: core.lost.append(why)),
        files=types.SimpleNamespace(remember=lambda sid, name, result: core.remembered.append(name)),
        session_memory=types.SimpleNamespace(after_call=lambda state: None))
    return Dispatcher(config, tools, Registry(closed), recorder, user, None, core, core.files), recorder, core


def call(name="act"):
    return Call(name, "s1", Embedder(lambda: None))


@pytest.fixture(autouse=True)
def finished(monkeypatch):
    """The calls each call's end made (answer.finish), counted by refId."""
    ends = {}
    finish = answer.finish

    def counted(made, *args, **kwargs):
        ends[made.ref_id] = ends.get(made.ref_id, 0) + 1
        return finish(made, *args, **kwargs)

    monkeypatch.setattr(answer, "finish", counted)
    return ends


def run(d, state, made, name="act"):
    """The call on its session, then the after-answer work, as the worker runs them; the library's Future of it."""
    fut: Future = Future()
    fut.set_result(d.on_session.run(state, d.tools[name], {"sessionId": "s1"}, made))
    d.on_session.after_answer(state, fut, made)
    return answer.library_future(fut)


@pytest.fixture
def captured(monkeypatch):
    """The page captures the path makes (each a whole-page walk), counted."""
    made = []
    monkeypatch.setattr(on_session.snapshots, "capture_snapshot", lambda state, edit=None: made.append(1) or "- page")
    return made


def test_a_page_changing_call_is_captured_once_after_its_answer_which_promised_it(captured):
    d, recorder, core = dispatcher()
    made = call()
    fut = run(d, State({"success": True}), made)
    assert fut.result()["meta"]["hasSnapshot"] is True and fut.result()["refId"] == made.ref_id
    assert captured == [1] and recorder.after == ["- page"]  # once, after the answer, then recorded
    assert core.remembered == ["act"]


@pytest.mark.parametrize("state", [State({"success": True}, dialog_after=True),
                                   State({"success": True}, elements=10**7),
                                   State(ElementNotFound("no #go"))], ids=["dialog", "huge page", "failed"])
def test_no_capture_is_promised_or_made_when_it_cannot_be(captured, state):
    d, recorder, _ = dispatcher()
    fut = run(d, state, call())
    meta = fut.result()["meta"] if fut.exception() is None else fut.exception().meta
    assert meta["hasSnapshot"] is False and captured == [] and recorder.after == [None]
    assert state.ran == ["act"]  # positive control: the call ran on its session


def test_a_call_that_stores_nothing_is_not_captured(captured):
    d, recorder, _ = dispatcher()
    fut = run(d, State({"success": True}), call("look"), "look")
    assert fut.result()["meta"]["hasSnapshot"] is False and captured == [] and recorder.after == [None]


@pytest.mark.parametrize("closed, connected, wall, error, code", [
    (True, True, None, ElementNotFound("no #go"), "SERVER_STOPPING"),
    (False, False, None, ElementNotFound("no #go"), "SESSION_LOST"),
    (False, True, "password", WaitTimeout("no #done"), "LOGIN_TIMEOUT"),
    (False, True, None, ElementNotFound("no #go"), "ELEMENT_NOT_FOUND"),
], ids=["server stopping", "browser lost", "login wall", "the tool's own"])
def test_each_failure_is_classified_and_ended_once(captured, finished, closed, connected, wall, error, code):
    d, recorder, core = dispatcher(closed=closed, login_cooldown=60)
    error.timed_out = True
    made = call()
    fut = run(d, State(error, connected=connected, wall=wall), made)
    exc = fut.exception()
    assert exc.code == code and finished == {made.ref_id: 1}
    assert exc.ref_id == made.ref_id and exc.meta["consoleErrorCount"] == 1 and exc.meta["hasSnapshot"] is False
    assert core.lost == ([str(error)] if code == "SESSION_LOST" else [])
    assert d._user.cooldown.remaining_s("s1") == (60 if code == "LOGIN_TIMEOUT" else 0)
    assert recorder.after == [None] and core.remembered == []


def test_a_handover_that_saw_the_person_done_ends_the_cooldown(captured):
    d, _, _ = dispatcher(login_cooldown=60)
    d._user.cooldown.trigger("s1", "a wall", None)
    assert d._user.cooldown.remaining_s("s1") == 60
    run(d, State({"success": True, "url": "https://shop.test/"}), call("act"))
    assert d._user.cooldown.remaining_s("s1") == 60  # an ordinary tool's success does not
    run(d, State({"success": True, "url": "https://shop.test/"}), call("wait_for_user"), "wait_for_user")
    assert d._user.cooldown.remaining_s("s1") == 0


def test_an_unknown_tool_is_one_code_decided_before_anything_is_recorded():
    d, recorder, _ = dispatcher()
    with pytest.raises(BrowserServerError) as refused:  # raised, not a Future: there is no call
        d.dispatch("no_such_tool", {}, Embedder(lambda: None))
    assert refused.value.code == "INVALID_PARAMETERS" and "act" in refused.value.details["known"]
    assert recorder.requests == [] and recorder.responses == []
    d.dispatch("act", {}, Embedder(lambda: None))  # positive control: a known tool's call is recorded
    assert recorder.requests == ["act"]


def test_a_persons_own_tool_is_unknown_to_an_agent_and_to_the_library():
    d, recorder, _ = dispatcher()
    for caller in (Embedder(lambda: None), types.SimpleNamespace(person=False, lists_tools=True)):
        with pytest.raises(BrowserServerError) as raised:
            d.dispatch("hands", {"sessionId": "s1"}, caller)
        refused = raised.value
        assert refused.code == "INVALID_PARAMETERS" and refused.message == "Unknown tool: hands"
        assert "hands" not in refused.details["known"] and "act" in refused.details["known"]
    assert recorder.requests == []
    person = types.SimpleNamespace(person=True, lists_tools=False, name="person:ann", owner=None)
    went_on = d.dispatch("hands", {"sessionId": "s1"}, person).result().error
    assert went_on.code == "SESSION_NOT_FOUND" and recorder.requests == ["hands"]  # positive control: past the name


def test_the_mcp_layer_answers_the_dispatchers_unknown_tool_as_invalid_params():
    d, recorder, _ = dispatcher()
    core = types.SimpleNamespace(call_tool=lambda name, args, caller: d.dispatch(name, args, caller), tools=d.tools)
    wire = Wire()
    connection = McpConnection(core, wire.send)
    connection.handle_line(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                       "params": {"name": "no_such_tool", "arguments": {}}}).encode())
    answer = wire.answer(1)
    assert answer["error"]["code"] == -32602 and "act" in answer["error"]["data"]["known"]
    assert recorder.requests == []


def test_a_call_queued_before_a_person_took_over_does_not_act_when_its_turn_comes(captured, finished):
    d, recorder, _ = dispatcher()
    state, made = State({"success": True}), call()
    state.worker = types.SimpleNamespace(held_by="operator")
    fut = run(d, state, made)
    assert fut.exception().code == "SESSION_HELD_BY_PERSON" and finished == {made.ref_id: 1}
    assert state.ran == [] and captured == []
    free = State({"success": True})  # positive control: the same call on a session nobody holds acts
    assert run(d, free, call()).result()["success"] is True and free.ran == ["act"]


def test_an_error_tells_the_agent_only_what_it_did_not_know():
    # core/answer.agent_error: the answer's text of a failed call; the history keeps to_dict() whole.
    from mcpbrowser.core.answer import agent_error

    quiet = {"tool": "click", "hasSnapshot": False, "hasConsoleLogs": False, "consoleErrorCount": 0}
    error = {"errorCode": "ELEMENT_NOT_FOUND", "message": "No element matches #nope: take a snapshot.",
             "sessionId": "s1", "details": {"target": "#nope", "reason": "Timeout 500ms exceeded."},
             "refId": "r1", "meta": quiet}
    assert agent_error(error, "s1") == {"errorCode": "ELEMENT_NOT_FOUND", "message": error["message"],
                                        "details": {"reason": "Timeout 500ms exceeded."}, "refId": "r1"}
    assert agent_error(error, "s2")["sessionId"] == "s1"  # a session the agent did not name is news
    # What the agent should look at stays: console entries, a call the history could not keep.
    logged = {**quiet, "hasConsoleLogs": True, "consoleErrorCount": 1}
    assert agent_error({**error, "meta": logged}, "s1")["meta"] == logged
    unrecorded = {**quiet, "recorded": False, "notRecorded": {"errorCode": "DISK_FULL", "message": "full"}}
    assert agent_error({**error, "meta": unrecorded}, "s1")["meta"] == unrecorded
    # Echoes go only when the message quotes them whole; documented fields always stay.
    wall = {"errorCode": "LOGIN_TIMEOUT", "message": "A captcha wall: WAIT_TIMEOUT", "details":
            {"cause": "WAIT_TIMEOUT", "wall": "captcha", "reason": "not quoted"}}
    assert agent_error(wall) == wall
    schema = {"errorCode": "INVALID_PARAMETERS", "message": "a is required; b is unknown",
              "details": {"problems": ["a is required", "b is unknown"]}}
    assert "details" not in agent_error(schema)
    assert agent_error({**schema, "details": {"problems": ["a is required", "c"]}}) == \
        {**schema, "details": {"problems": ["a is required", "c"]}}
    dialog = {"errorCode": "DIALOG_OPEN", "message": "An alert dialog ('Hi') is open; it blocks the page.",
              "details": {"type": "alert", "message": "Hi", "defaultValue": ""}}
    assert agent_error(dialog)["details"] == {"defaultValue": ""}
    clipped = {**dialog, "details": {**dialog["details"], "message": "Hi, and much more than the message shows"}}
    assert agent_error(clipped)["details"] == {"message": clipped["details"]["message"], "defaultValue": ""}
