"""Text a page writes that JSON cannot carry as it is (a lone UTF-16 surrogate) reaches a client as U+FFFD,
through the official client over stdio and over HTTP, and every call that met it is recorded (issue 49).

A lone surrogate escaped on the wire ("\\ud800") is refused by the official client as invalid JSON: the call
would wait until the client's own timeout, so each read here is bounded by a few seconds."""

import json
import sqlite3

import anyio
import pytest
from support import PAGES, HttpServer, SdkClient

pytestmark = pytest.mark.e2e

TOKEN = "page-text-token-0123456789abcdef"
BOUND_S = 10.0  # a refused answer waits until the client gives up; an answered one takes well under a second
FFFD = "\ufffd"

# The JS source says \uD800 (six characters): the page's strings hold one lone surrogate each.
PAGES["/lone-surrogates"] = r"""<!doctype html><title>Lone</title><p id="t">plain</p>
<button id="go" onclick="console.log('before \uD800 after'); document.getElementById('t').firstChild.data = 'x\uDC00y';
  document.title = 'T\uD800itle'">Go</button>"""


def bounded(client, method, *args):
    """A client call that must answer within BOUND_S."""
    async def call():
        with anyio.fail_after(BOUND_S):
            return await getattr(client.session, method)(*args)
    return client.portal.call(call)


def tool(client, name, **arguments):
    result = bounded(client, "call_tool", name, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    db = tmp_path_factory.mktemp("page-text") / "history.db"
    s = HttpServer("--db", str(db), env={"MCPBROWSER_HTTP_TOKENS": f"tester:{TOKEN}"})
    s.db = db
    yield s
    s.close()


def statuses(db, refs):
    with sqlite3.connect(db) as conn:
        return [conn.execute("SELECT status FROM responses WHERE ref_id = ?", (ref,)).fetchone() for ref in refs]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_lone_surrogate_reaches_the_client_as_a_replacement_and_every_call_is_recorded(transport, http, pages,
                                                                                         tmp_path):
    db = http.db if transport == "http" else tmp_path / "history.db"
    client = SdkClient(http.url if transport == "http" else ["--db", str(db)], token=TOKEN)
    try:
        sid = client.tool("create_session", url=pages.url("/lone-surrogates"))["sessionId"]  # no page text yet
        click = tool(client, "click", sessionId=sid, selector="#go")
        assert click["title"] == f"T{FFFD}itle"

        logs = tool(client, "console_logs", sessionId=sid)
        assert f"before {FFFD} after" in [e["message"] for e in logs["entries"]]

        snap = tool(client, "snapshot", sessionId=sid)
        assert f"x{FFFD}y" in snap["snapshot"]

        read = bounded(client, "read_resource", f"mcpbrowser://sessions/{sid}/console")
        assert f"before {FFFD} after" in json.dumps(json.loads(read.contents[0].text), ensure_ascii=False)

        # Each call's row was written: its refId reads back, with the page text as the answer had it.
        assert f"x{FFFD}y" in tool(client, "get_content", ref_id=snap["refId"])["content"]
        assert f"x{FFFD}y" in tool(client, "get_content", ref_id=click["refId"], reset_cursor=True)["content"]
        assert f"before {FFFD} after" in tool(client, "get_console_content", ref_id=click["refId"])["content"]
        # (a call whose row is not written keeps a reader of its refId waiting 10 s)
        assert tool(client, "get_console_content", ref_id=logs["refId"])["count"] == 0
        assert statuses(db, [click["refId"], logs["refId"], snap["refId"]]) == [("ok",)] * 3
        tool(client, "close_session", sessionId=sid)
    finally:
        client.close()
