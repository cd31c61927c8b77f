"""Progress notifications for long calls, through the official client's progress_callback."""

import functools

import pytest

pytestmark = pytest.mark.e2e


def call_with_progress(client, name, arguments):
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    result = client.portal.call(functools.partial(client.session.call_tool, name, arguments,
                                                  progress_callback=on_progress))
    assert not result.is_error, result.content[0].text
    return seen


@pytest.mark.parametrize("tool, arguments, stages", [
    ("navigate", {"url": "/slow?ms=300"}, ["Navigating to", "DOM content loaded", "Page loaded", "Done"]),
    ("wait_for", {"selector": "h1"}, ["Waiting for", "Condition met"]),
    ("screenshot", {}, ["Capturing", "Captured", "Done"]),
    ("wait_for_user", {"message": "Sign in please", "selector": "h1", "timeout": 5000},
     ["Waiting for the user: Sign in please", "The user finished"]),
])
def test_long_calls_report_progress(client, session, pages, tool, arguments, stages):
    client.tool("navigate", sessionId=session, url=pages.url("/title/ready"))
    if "url" in arguments:
        arguments = {**arguments, "url": pages.url(arguments["url"])}
    seen = call_with_progress(client, tool, {"sessionId": session, **arguments})
    assert [m for _, _, m in seen if not any(m.startswith(s) for s in stages)] == []
    assert [next(s for s in stages if m.startswith(s)) for _, _, m in seen] == stages
    values = [p for p, _, _ in seen]
    assert values == sorted(values) and seen[-1][0] == seen[-1][1]  # increasing, ends complete


def test_progress_only_for_a_token_and_before_the_answer(pages):
    from support import RawServer, tool_payload

    raw = RawServer()
    try:
        raw.initialize()
        sid = tool_payload(raw.call(1, "create_session"))["sessionId"]

        def lines_until_answer(request_id, meta):
            raw.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                      "params": {"name": "navigate", "_meta": meta,
                                 "arguments": {"sessionId": sid, "url": pages.url("/title/p")}}})
            seen = []
            while True:
                message = raw.recv()
                seen.append(message)
                if message.get("id") == request_id:
                    return seen

        quiet = lines_until_answer(2, {})
        assert [m.get("method") for m in quiet] == [None]
        loud = lines_until_answer(3, {"progressToken": "tok-1"})
        progress = [m["params"] for m in loud if m.get("method") == "notifications/progress"]
        assert len(progress) >= 3 and all(p["progressToken"] == "tok-1" for p in progress)
        assert loud[-1]["id"] == 3  # every progress notification came before the answer
    finally:
        raw.close()
