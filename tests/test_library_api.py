"""The typed library API matches the tool registry: one method per tool, the tool's parameters.

No browser: the signatures are compared with each tool's input schema, and a few
calls go through a fake core to show the arguments arrive as the tool spells them.
"""
import inspect
import os

import pytest
from fakes import fake_core

import mcpbrowser
from mcpbrowser.core import tool_registry as tools
from mcpbrowser.core.browser import Browser
from mcpbrowser.library import Session, camel
from mcpbrowser.tools.interaction import taking_secret_names

pytestmark = pytest.mark.unit

def _parameters(method):
    params = list(inspect.signature(method).parameters.values())[1:]  # without self
    return {camel(p.name) if p.name not in ("ref_id", "search_for", "reset_cursor") else p.name: p
            for p in params}


def test_every_session_tool_is_a_typed_method_with_the_tools_parameters():
    for tool in tools.ALL:
        if not tool.needs_session:
            continue
        method = getattr(Session, tool.name, None)
        assert method is not None, f"Session has no method for the tool {tool.name}"
        assert method.__doc__, tool.name
        params = _parameters(method)
        # As a server with --secrets offers it (a secret typed by name), the widest of its lists.
        wanted = set(taking_secret_names(tool).input_schema["properties"]) - {"sessionId"}
        assert set(params) == wanted, (tool.name, set(params) ^ wanted)
        for name, param in params.items():
            assert param.annotation is not inspect.Parameter.empty, (tool.name, name)
            if name not in tool.input_schema["required"]:
                assert param.default is None, (tool.name, name)  # not sent: the tool's default applies
        # Positional order as before: session.click("#go"), session.type("#q", "text").
        assert tuple(params)[:len(tool.positional_args())] == tool.positional_args(), tool.name
        assert inspect.signature(method).return_annotation is not inspect.Signature.empty


def test_every_session_less_tool_is_a_browser_method():
    for tool in tools.ALL:
        if tool.needs_session or tool.name == "enable_tools":
            continue  # enable_tools changes an MCP client's tool list; the library calls every tool
        method = getattr(Browser, tool.name)
        assert method.__doc__, tool.name
        params = _parameters(method)
        wanted = set(tool.input_schema["properties"])  # session_id is sent as sessionId
        assert set(params) == wanted, (tool.name, set(params) ^ wanted)


def test_every_tool_is_a_session_tool_or_a_core_tool():
    from mcpbrowser.tools.base import CoreTool, SessionTool
    for tool in tools.ALL:
        assert isinstance(tool, (SessionTool, CoreTool)) and isinstance(tool, SessionTool) == tool.needs_session
    assert {t.name for t in tools.ALL if isinstance(t, CoreTool)} == {
        "create_session", "resume_session", "close_session", "list_sessions", "get_content", "get_console_content",
        "save_state", "saved_states", "enable_tools", "export_script", "compare_performance"}


def test_the_package_is_typed():
    assert os.path.exists(os.path.join(os.path.dirname(mcpbrowser.__file__), "py.typed"))
    assert mcpbrowser.Session is Session


def test_methods_send_the_tools_own_names_and_leave_out_what_was_not_given():
    core = fake_core()
    seen = []
    real_call = core.call
    core.call = lambda name, args=None: (seen.append((name, args)), real_call(name, args))[1]
    try:
        session = core.create_session()
        assert seen[-1] == ("create_session", {})
        session.navigate("http://example.test/", wait_until="commit")
        assert seen[-1] == ("navigate", {"sessionId": session.id, "url": "http://example.test/",
                                         "waitUntil": "commit"})
        assert session.expires_at > 0
        core.call = lambda name, args=None: seen.append((name, args)) or {}
        session.network_logs(all_pages=True, resource_type=["fetch"])
        assert seen[-1] == ("network_logs", {"sessionId": session.id, "allPages": True, "resourceType": ["fetch"]})
        core.get_content("abc", search_for="x")
        assert seen[-1] == ("get_content", {"ref_id": "abc", "search_for": "x"})
    finally:
        core.close()


def test_a_sessions_expiry_is_the_one_its_last_answer_gave():
    """Each call renews the session: `session.expires_at` is what the last answer said (expiresAt), kept when an
    answer says nothing of it."""
    core = fake_core()
    try:
        session = core.create_session()
        assert session.expires_at == session.created["expiresAt"] > 0
        core.call = lambda name, args=None: {"expiresAt": session.created["expiresAt"] + 60_000}
        session.navigate("http://example.test/")
        assert session.expires_at == session.created["expiresAt"] + 60_000
        core.call = lambda name, args=None: {}
        session.snapshot()
        assert session.expires_at == session.created["expiresAt"] + 60_000
    finally:
        vars(core).pop("call", None)
        core.close()
