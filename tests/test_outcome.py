"""A call's one end (core/answer.py): `finish` makes a frozen Outcome scrubbed of the call's secret book, and three
pure functions render it for the agent, the library and the history. No browser."""

import dataclasses
import json
from concurrent.futures import Future

import pytest

from mcpbrowser.core import answer
from mcpbrowser.core.call import Call, Embedder
from mcpbrowser.errors import ElementNotFound, InternalError
from mcpbrowser.tools.base import SessionTool, session_schema

pytestmark = pytest.mark.unit

SECRET = "Zq7$ecret-pass"
TOOL = SessionTool(name="act", title="act", description="act", input_schema=session_schema(),
                   handler=lambda state, args, response: None, text_field="snapshot")


def made(**kw):
    call = Call("act", "s1", Embedder(lambda: None))
    call.secrets, call.console, call.expires_at = [SECRET], [{"level": "error", "text": "x"}], 123
    for key, value in kw.items():
        setattr(call, key, value)
    return call


def renderings(outcome):
    content, _, failed = answer.for_agent(TOOL, outcome, "s1")
    try:
        library = answer.for_library(outcome)
    except ElementNotFound as exc:
        library = exc.to_dict()
    history = answer.for_history(outcome, f"- page {SECRET}", [{"level": "log", "text": SECRET}], [SECRET])
    return json.dumps(content), json.dumps(library), json.dumps(history), failed


def test_an_outcome_is_frozen_and_rendered_three_ways_without_the_secret():
    call = made()
    outcome = answer.finish(call, {"success": True, "message": f"typed {SECRET}", "hash": "h",
                                   "snapshot": f"- textbox {SECRET}"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.result = {}  # type: ignore[misc]
    agent, library, history, failed = renderings(outcome)
    assert not failed and all(SECRET not in text for text in (agent, library, history))
    assert "[REDACTED]" in agent and "[REDACTED]" in library and "[REDACTED]" in history  # the attempt was made
    lib = json.loads(library)
    assert lib["refId"] == call.ref_id and lib["expiresAt"] == 123 and lib["meta"]["consoleErrorCount"] == 1
    assert lib["hash"] == "h" and '"hash"' not in agent  # the library's whole, the agent's view leaves it out
    assert json.loads(history)[0] == "ok" and json.loads(history)[1]["refId"] == call.ref_id
    assert answer.for_library(outcome) == lib  # pure: rendering twice gives the same


def test_a_failure_is_classified_once_and_carries_its_call():
    call = made()
    outcome = answer.finish(call, error=ElementNotFound(f"No element matches {SECRET}"))
    agent, library, history, failed = renderings(outcome)
    assert failed and outcome.error.code == "ELEMENT_NOT_FOUND" and outcome.error.ref_id == call.ref_id
    assert all(SECRET not in text for text in (agent, library, history)) and "[REDACTED]" in agent
    assert json.loads(history)[0] == "error"
    bug = answer.finish(made(), error=KeyError("tabs"))  # a bug of ours: INTERNAL_ERROR, the bug kept for the log
    assert isinstance(bug.error, InternalError) and isinstance(bug.error.bug, KeyError)


def test_what_the_agent_asked_for_by_name_is_in_its_answer_alone():
    call = made()
    outcome = answer.finish(call, {"value": SECRET}, shown={SECRET})
    assert SECRET in json.dumps(answer.for_library(outcome))  # shown: the agent asked for it
    assert SECRET not in json.dumps(answer.for_history(outcome, None, [], [SECRET]))  # the row hides it


def test_a_future_the_session_closed_under_is_an_outcome_too():
    closed: Future = Future()
    closed.set_exception(ElementNotFound("gone"))
    assert answer.outcome_of(closed).error.code == "ELEMENT_NOT_FOUND"
    cancelled: Future = Future()
    cancelled.cancel()
    ended = answer.outcome_of(cancelled)
    assert ended.cancelled and answer.for_history(ended, None, [], [])[0] == "cancelled"
    library = answer.library_future(cancelled)
    assert library.cancelled()


def test_the_history_keeps_a_screenshots_answer_without_its_image_and_the_agent_gets_it_as_an_image():
    image_tool = SessionTool(name="shot", title="shot", description="shot", input_schema=session_schema(),
                             handler=lambda state, args, response: None, returns_image=True)
    outcome = answer.finish(made(), {"image": b"\x89PNG-bytes", "format": "png", "bytes": 10})
    status, kept, _, _, _ = answer.for_history(outcome, None, [], [])
    assert status == "ok" and "image" not in kept and kept["bytes"] == 10
    json.dumps(kept)  # a row is JSON: no bytes in it
    content, _, _ = answer.for_agent(image_tool, outcome)
    assert [block["type"] for block in content] == ["text", "image"] and content[1]["mimeType"] == "image/png"
    assert answer.for_library(outcome)["image"] == b"\x89PNG-bytes"  # the library's whole
