"""Tool calls as tasks (MCP 2025-11-25) on raw pipes: created at once, polled, fetched, listed,
cancelled; every answer checked against the SDK's own models of that revision."""

import json
import time

import pytest
from mcp_types._v2025_11_25 import CallToolResult, CreateTaskResult, GetTaskResult, ListTasksResult
from support import RawServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def raw():
    server = RawServer()
    yield server
    server.close()


def result_of(answer):
    assert "result" in answer, answer
    return answer["result"]


def task_call(raw, request_id, name, ttl=60_000, **arguments):
    return raw.request(request_id, "tools/call", {"name": name, "arguments": arguments, "task": {"ttl": ttl}})


def test_a_long_call_runs_as_a_task(raw, pages):
    init = result_of(raw.initialize("2025-11-25"))
    assert init["capabilities"]["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    tools = {t["name"]: t for t in result_of(raw.request(1, "tools/list"))["tools"]}
    assert tools["navigate"]["execution"] == {"taskSupport": "optional"} and "execution" not in tools["click"]
    sid = json.loads(result_of(raw.call(2, "create_session"))["content"][0]["text"])["sessionId"]

    created = CreateTaskResult.model_validate(result_of(
        task_call(raw, 3, "navigate", sessionId=sid, url=pages.url("/slow?ms=800"))))
    assert created.task.status == "working" and created.task.ttl == 60_000
    task_id = created.task.task_id
    assert GetTaskResult.model_validate(result_of(raw.request(4, "tasks/get", {"taskId": task_id}))).status in (
        "working", "completed")
    done = result_of(raw.request(5, "tasks/result", {"taskId": task_id}))  # waits for the navigation
    CallToolResult.model_validate(done)
    assert not done["isError"] and done["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    assert json.loads(done["content"][0]["text"])["url"].endswith("/slow?ms=800")
    status = GetTaskResult.model_validate(result_of(raw.request(6, "tasks/get", {"taskId": task_id})))
    assert status.status == "completed"
    listed = ListTasksResult.model_validate(result_of(raw.request(7, "tasks/list")))
    assert task_id in [t.task_id for t in listed.tasks]
    assert raw.request(8, "tasks/cancel", {"taskId": task_id})["error"]["code"] == -32602  # finished already
    assert raw.request(9, "tasks/get", {"taskId": "nope"})["error"]["code"] == -32602

    # A failing call is a failed task; its answer says why.
    failed = CreateTaskResult.model_validate(result_of(task_call(raw, 10, "click", sessionId=sid, selector="#nope",
                                                                 timeout=100)))
    answer = result_of(raw.request(11, "tasks/result", {"taskId": failed.task.task_id}))
    assert answer["isError"] and json.loads(answer["content"][0]["text"])["errorCode"] == "ELEMENT_NOT_FOUND"
    assert result_of(raw.request(12, "tasks/get", {"taskId": failed.task.task_id}))["status"] == "failed"


def test_a_task_is_cancelled(raw, pages):
    sid = json.loads(result_of(raw.call(20, "create_session"))["content"][0]["text"])["sessionId"]
    waiting = CreateTaskResult.model_validate(result_of(task_call(
        raw, 21, "wait_for", sessionId=sid, selector="#never", timeout=4_000)))
    time.sleep(0.3)
    cancelled = result_of(raw.request(22, "tasks/cancel", {"taskId": waiting.task.task_id}))
    assert GetTaskResult.model_validate(cancelled).status == "cancelled"
    answer = result_of(raw.request(23, "tasks/result", {"taskId": waiting.task.task_id}))
    assert answer["isError"] and "Cancelled" in answer["content"][0]["text"]


def test_no_tasks_before_2025_11_25():
    old = RawServer()
    try:
        init = result_of(old.initialize("2025-06-18"))
        assert "tasks" not in init["capabilities"]
        assert all("execution" not in t for t in result_of(old.request(1, "tools/list"))["tools"])
    finally:
        old.close()
