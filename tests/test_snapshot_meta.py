"""What an answer says about its snapshot is what the server did: meta.hasSnapshot on a page too large for
the capture after a call, and `truncated` on a compact view that left entries out (issue 48)."""

import pytest
from support import PAGES

pytestmark = pytest.mark.e2e

# 8,000 rows with a link each: 16,000 elements and more, over the capture's bound (snapshots.HUGE_ELEMENTS).
PAGES["/over-capture-bound"] = ("<!doctype html><title>Rows</title><button id=\"go\" onclick=\"document.title = "
                                "'Went'\">Go</button>" + "".join(f"<div>row {i} <a href='#{i}'>link</a></div>"
                                                                 for i in range(8000)))


def test_a_call_on_a_page_too_large_to_capture_says_it_has_no_snapshot(client, pages):
    session = client.tool("create_session")["sessionId"]
    small = client.tool("navigate", sessionId=session, url=pages.url("/form"))
    assert small["meta"]["hasSnapshot"] is True  # the positive control: a page the capture takes
    assert client.tool("get_content", ref_id=small["refId"])["content"]
    for answer in (client.tool("navigate", sessionId=session, url=pages.url("/over-capture-bound")),
                   client.tool("click", sessionId=session, selector="#go")):
        assert answer["meta"]["hasSnapshot"] is False, answer["meta"]
        error = client.error("get_content", ref_id=answer["refId"])
        assert error["errorCode"] == "CONTENT_NOT_FOUND" and "too large" in error["message"], error
    client.tool("close_session", sessionId=session)


def test_a_compact_view_that_leaves_entries_out_says_it_is_truncated(client, session, pages):
    client.tool("navigate", sessionId=session, url=pages.url("/docs"))  # 12 links in one section: 8 shown
    shown = client.tool("snapshot", sessionId=session, compact=True)
    assert "4 more (query finds them)" in shown["snapshot"] and shown["truncated"] is True, shown
    whole = client.tool("snapshot", sessionId=session)  # the control: nothing left out, nothing said
    assert "more (query finds them)" not in whole["snapshot"] and whole["truncated"] is False
