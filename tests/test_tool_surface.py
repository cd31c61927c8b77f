"""End to end: the full tool surface on real pages through the official MCP client."""

import base64
import json
import re

import pytest
from support import McpClient, wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    uploads = tmp_path_factory.mktemp("uploads")
    (uploads / "a.txt").write_text("alpha")
    (uploads / "b.txt").write_text("beta")
    return {"uploads": uploads, "shots": tmp_path_factory.mktemp("shots"),
            "outside": tmp_path_factory.mktemp("outside")}


@pytest.fixture(scope="module")
def full(dirs):
    c = McpClient("--allow-evaluate", "--upload-dir", str(dirs["uploads"]),
                  "--output-dir", str(dirs["shots"]))
    yield c
    c.close()


@pytest.fixture
def sid(full):
    session_id = full.tool("create_session")["sessionId"]
    yield session_id
    full.call("close_session", {"sessionId": session_id})


def title(client, session_id):
    return client.tool("evaluate", sessionId=session_id, expression="document.title")["result"]


def ref_of(snapshot, pattern):
    match = re.search(pattern + r".*?\[ref=([\w-]+)\]", snapshot)
    assert match, snapshot
    return match.group(1)


def test_optional_tools_appear_only_when_enabled(client, full):
    default = {t.name for t in client.run("list_tools").tools}
    enabled = {t.name for t in full.run("list_tools").tools}
    assert "evaluate" not in default and "upload_file" not in default
    assert {"evaluate", "upload_file"} <= enabled


def test_snapshot_refs_target_elements_even_inside_iframes(full, sid, pages):
    full.tool("navigate", sessionId=sid, url=pages.url("/frames"))
    full.tool("wait_for", sessionId=sid, selector="#inner", state="attached")
    snap = full.tool("snapshot", sessionId=sid)
    assert snap["truncated"] is False and snap["title"] == "Frames"
    assert 'heading "Outer"' in snap["snapshot"]
    inner = ref_of(snap["snapshot"], r'button "Inner button"')
    assert inner.startswith("f")  # a frame-qualified ref
    full.tool("click", sessionId=sid, ref=inner)
    assert title(full, sid) == "inner clicked"


def test_stale_or_unknown_ref_is_element_not_found_with_hint(full, sid, pages):
    full.tool("navigate", sessionId=sid, url=pages.url("/form"))
    ref = ref_of(full.tool("snapshot", sessionId=sid)["snapshot"], r'button "Go"')
    full.tool("navigate", sessionId=sid, url=pages.url("/widgets"))
    stale = full.error("click", sessionId=sid, ref=ref)
    assert stale["errorCode"] == "ELEMENT_NOT_FOUND" and "new snapshot" in stale["message"]
    unknown = full.error("click", sessionId=sid, ref="e99999")
    assert unknown["errorCode"] == "ELEMENT_NOT_FOUND" and "new snapshot" in unknown["message"]
    both = full.error("click", sessionId=sid, ref="e1", selector="#x")
    assert both["errorCode"] == "INVALID_PARAMETERS"
    neither = full.error("click", sessionId=sid)
    assert neither["errorCode"] == "INVALID_PARAMETERS"


def test_snapshot_max_nodes_truncates_and_flags(full, sid, pages):
    full.tool("navigate", sessionId=sid, url=pages.url("/widgets"))
    snap = full.tool("snapshot", sessionId=sid, maxNodes=3)
    assert snap["truncated"] is True and snap["nodes"] == 3 and snap["totalNodes"] > 3
    part = full.tool("snapshot", sessionId=sid, selector="#fruit")
    assert "combobox" in part["snapshot"] and "Banana" in part["snapshot"]


def test_dom_snapshot_serialises_with_a_node_limit(full, sid, pages):
    full.tool("navigate", sessionId=sid, url=pages.url("/logs"))
    dom = full.tool("dom_snapshot", sessionId=sid)
    assert '<button id="more"' in dom["html"] and "hello log" not in dom["html"]  # script bodies elided
    assert dom["truncated"] is False
    small = full.tool("dom_snapshot", sessionId=sid, maxNodes=4)
    assert small["nodes"] == 4 and small["truncated"] is True and small["totalNodes"] > 4
    part = full.tool("dom_snapshot", sessionId=sid, selector="#throw")
    assert part["html"].startswith('<button id="throw"')


def test_select_by_value_and_label(full, sid, pages):
    full.tool("navigate", sessionId=sid, url=pages.url("/widgets"))
    assert full.tool("select", sessionId=sid, selector="#fruit", values=["b"])["selected"] == ["b"]
    assert title(full, sid) == "fruit=b"
    assert full.tool("select", sessionId=sid, selector="#fruit", labels=["Cherry"])["selected"] == ["c"]
    missing = full.error("select", sessionId=sid, selector="#fruit", values=["zzz"], timeout=500)
    assert missing["errorCode"] == "INVALID_PARAMETERS"
    not_select = full.error("select", sessionId=sid, selector="#keys", values=["a"], timeout=500)
    assert not_select["errorCode"] == "ELEMENT_NOT_EDITABLE"


def test_hover_and_press_key(full, sid, pages):
    full.tool("navigate", sessionId=sid, url=pages.url("/widgets"))
    full.tool("hover", sessionId=sid, selector="#hoverme")
    assert title(full, sid) == "hovered"
    full.tool("press_key", sessionId=sid, selector="#keys", key="ArrowDown")
    assert title(full, sid) == "key=ArrowDown"
    full.tool("press_key", sessionId=sid, key="Enter")  # focus is still in #keys
    assert title(full, sid) == "key=Enter"
    bad = full.error("press_key", sessionId=sid, key="NoSuchKey")
    assert bad["errorCode"] == "INVALID_PARAMETERS"


def test_wait_for_element_text_and_text_gone(full, sid, pages):
    full.tool("navigate", sessionId=sid, url=pages.url("/widgets"))
    full.tool("click", sessionId=sid, selector="#later")
    assert full.tool("wait_for", sessionId=sid, selector="#late", timeout=5000)["success"]
    full.tool("wait_for", sessionId=sid, text="Arrived late")
    full.tool("click", sessionId=sid, selector="#remove")
    full.tool("wait_for", sessionId=sid, textGone="Going away", timeout=5000)
    late = full.error("wait_for", sessionId=sid, selector="#never", timeout=300)
    assert late["errorCode"] == "WAIT_TIMEOUT" and late["details"]["timeoutMs"] == 300
    assert full.error("wait_for", sessionId=sid)["errorCode"] == "INVALID_PARAMETERS"


def test_history_and_reload(full, sid, pages):
    full.tool("navigate", sessionId=sid, url=pages.url("/title/one"))
    full.tool("navigate", sessionId=sid, url=pages.url("/title/two"))
    assert full.tool("go_back", sessionId=sid)["title"] == "one"
    assert full.tool("go_forward", sessionId=sid)["title"] == "two"
    hits_before = pages.hits.count("/title/two")
    reloaded = full.tool("reload", sessionId=sid)
    assert reloaded["title"] == "two" and reloaded["status"] == 200
    assert pages.hits.count("/title/two") == hits_before + 1
    err = full.error("go_forward", sessionId=sid)
    assert err["errorCode"] == "NAVIGATION_FAILED" and "next page" in err["message"]


def test_popups_belong_to_the_session_as_tabs(full, sid, pages):
    full.tool("navigate", sessionId=sid, url=pages.url("/popup"))
    # The popup is reported once, by the click that opened it.
    assert full.tool("click", sessionId=sid, selector="#open")["newTabs"] == 1
    listing = full.tool("tabs", sessionId=sid)
    assert "newTabs" not in listing
    assert [t["current"] for t in listing["tabs"]] == [True, False]
    full.tool("tabs", sessionId=sid, action="select", index=1)
    full.tool("wait_for", sessionId=sid, text="Popped")
    assert title(full, sid) == "Popped"
    listing = full.tool("tabs", sessionId=sid, action="close")
    assert len(listing["tabs"]) == 1 and listing["tabs"][0]["title"] == "Opener"
    assert full.error("tabs", sessionId=sid, action="select", index=5)["errorCode"] == "INVALID_PARAMETERS"


@pytest.mark.parametrize("button, accept, prompt, expected", [
    ("#alert", True, None, "after alert"),
    ("#confirm", True, None, "confirmed"),
    ("#confirm", False, None, "declined"),
    ("#prompt", True, "Ada", "name=Ada"),
])
def test_dialogs_are_reported_and_answered(full, sid, pages, button, accept, prompt, expected):
    full.tool("navigate", sessionId=sid, url=pages.url("/dialogs"))
    clicked = full.tool("click", sessionId=sid, selector=button)
    assert clicked["dialog"]["type"] in ("alert", "confirm", "prompt")
    assert "handle_dialog" in clicked["message"]
    blocked = full.error("click", sessionId=sid, selector="#alert")
    assert blocked["errorCode"] == "DIALOG_OPEN" and f"{clicked['dialog']['type']} dialog ('" in blocked["message"]
    args = {"accept": accept} if prompt is None else {"accept": accept, "promptText": prompt}
    assert full.tool("handle_dialog", sessionId=sid, **args)["success"]
    assert title(full, sid) == expected
    assert full.error("handle_dialog", sessionId=sid, accept=True)["errorCode"] == "NO_DIALOG_OPEN"


def test_upload_file_only_from_allowed_dirs(full, sid, pages, dirs):
    full.tool("navigate", sessionId=sid, url=pages.url("/widgets"))
    files = [str(dirs["uploads"] / "a.txt"), str(dirs["uploads"] / "b.txt")]
    full.tool("upload_file", sessionId=sid, selector="#file", paths=files)
    assert title(full, sid) == "files=a.txt,b.txt"
    secret = dirs["outside"] / "secret.txt"
    secret.write_text("no")
    # Beside the folder, a name it starts with (uploads0-x beside uploads0); inside it, a link out of it.
    sibling = dirs["uploads"].parent / (dirs["uploads"].name + "-x")
    sibling.mkdir(exist_ok=True)
    (sibling / "key.txt").write_text("no")
    link = dirs["uploads"] / "link-out.txt"
    if not link.is_symlink():
        link.symlink_to(secret)
    for path in (str(secret), str(dirs["uploads"] / ".." / secret.parent.name / "secret.txt"), str(sibling / "key.txt"),
                 str(link)):
        err = full.error("upload_file", sessionId=sid, selector="#file", paths=[path])
        assert err["errorCode"] == "INVALID_PARAMETERS" and "--upload-dir" in err["message"]
    missing = full.error("upload_file", sessionId=sid, selector="#file", paths=[str(dirs["uploads"] / "nope")])
    assert missing["errorCode"] == "INVALID_PARAMETERS"


def test_screenshot_is_image_content_and_saved_under_server_names(full, sid, pages, dirs):
    full.tool("navigate", sessionId=sid, url=pages.url("/widgets"))
    result = full.call("screenshot", {"sessionId": sid})
    meta = json.loads(result.content[0].text)
    image = result.content[1]
    assert image.type == "image" and image.mime_type == "image/png"
    data = base64.b64decode(image.data)
    assert data.startswith(b"\x89PNG") and (meta["width"], meta["height"]) == (1280, 720)
    assert meta["savedTo"].startswith(str(dirs["shots"].resolve())) and open(meta["savedTo"], "rb").read() == data
    jpeg = full.call("screenshot", {"sessionId": sid, "format": "jpeg", "quality": 50, "fullPage": True})
    jmeta = json.loads(jpeg.content[0].text)
    assert jpeg.content[1].mime_type == "image/jpeg" and jmeta["width"] == 1280
    element = json.loads(full.call("screenshot", {"sessionId": sid, "selector": "#hoverme"}).content[0].text)
    assert (element["width"], element["height"]) == (100, 40)
    assert full.error("screenshot", sessionId=sid, format="png", quality=5)["errorCode"] == "INVALID_PARAMETERS"
    assert full.call("screenshot", {"sessionId": sid, "quality": 5}).content[1].mime_type == "image/jpeg"  # implied


def test_evaluate_returns_json_and_reports_errors(full, sid, pages):
    full.tool("navigate", sessionId=sid, url=pages.url("/form"))
    assert full.tool("evaluate", sessionId=sid, expression="1 + 2")["result"] == 3
    assert full.tool("evaluate", sessionId=sid, expression="() => [...document.querySelectorAll('.item')]"
                     ".map(e => e.textContent)")["result"] == ["one", "two"]
    err = full.error("evaluate", sessionId=sid, expression="nope.nope")
    assert err["errorCode"] == "EVALUATION_FAILED" and "nope" in err["message"]


def test_console_logs_with_levels_and_page_errors(full, sid, pages):
    full.tool("navigate", sessionId=sid, url=pages.url("/logs"))
    full.tool("click", sessionId=sid, selector="#throw")
    full.tool("wait_for", sessionId=sid, selector="#throw")
    logs = full.tool("console_logs", sessionId=sid)
    messages = [(e["level"], e["message"]) for e in logs["entries"]]
    assert ("log", "hello log") in messages and ("warning", "careful") in messages
    assert any(level == "error" and "boom from page" in msg for level, msg in messages)
    entry = logs["entries"][0]
    assert entry["level"] == "log" and set(entry) == {"timestamp", "level", "message"}  # lean: no location
    warning = next(e for e in logs["entries"] if e["level"] == "warning")
    assert "/logs" in warning["location"]  # errors and warnings say where they came from
    located = full.tool("console_logs", sessionId=sid, locations=True)["entries"][0]
    assert set(located) == {"timestamp", "level", "message", "location"} and "/logs" in located["location"]
    errors = full.tool("console_logs", sessionId=sid, level="error")["entries"]
    assert errors and all(e["level"] == "error" for e in errors)
    later = full.tool("console_logs", sessionId=sid, since=entry["timestamp"])["entries"]
    assert all(e["timestamp"] > entry["timestamp"] for e in later)
    newest = full.tool("console_logs", sessionId=sid, limit=1)
    assert newest["entries"] == logs["entries"][-1:] and newest["older"] == len(logs["entries"]) - 1  # left out, said
    assert "older" not in logs  # nothing left out: nothing said


def test_network_logs_redact_sensitive_headers(full, sid, pages):
    full.tool("navigate", sessionId=sid, url=pages.url("/logs"))
    full.tool("wait_for", sessionId=sid, selector="#more")
    lean = full.tool("network_logs", sessionId=sid, urlContains="/api/data")["entries"][-1]
    assert "requestHeaders" not in lean and "timestamp" not in lean and "failure" not in lean
    # The response's body ends when its connection closes (no Content-Length): on a busy
    # machine the request may still be in flight, with no duration yet. Each call flushes
    # the session's events, so asking again sees it finish.
    assert wait_for(lambda: full.tool("network_logs", sessionId=sid, urlContains="/api/data",
                                      headers=True)["entries"][-1]["durationMs"] is not None)
    logs = full.tool("network_logs", sessionId=sid, urlContains="/api/data", headers=True)
    assert logs["count"] >= 1
    entry = logs["entries"][-1]
    assert entry["method"] == "GET" and entry["status"] == 200 and entry["durationMs"] is not None
    assert entry["requestHeaders"]["authorization"] == "[REDACTED]"
    assert entry["requestHeaders"]["x-api-key"] == "[REDACTED]"
    assert entry["responseHeaders"]["set-cookie"] == "[REDACTED]"
    text = json.dumps(full.tool("network_logs", sessionId=sid, headers=True, includeStatic=True))
    for secret in ("SECRET-TOKEN-123", "SECRET-KEY-456", "SECRET-COOKIE-789"):
        assert secret not in text
    page = full.tool("network_logs", sessionId=sid, method="get", status=200, urlContains="/logs")
    assert page["entries"] and all(e["status"] == 200 for e in page["entries"])


def test_ring_buffers_drop_the_oldest_at_their_bound(make_client, pages):
    c = make_client("--console-buffer", "5", "--network-buffer", "2")
    session_id = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=session_id, url=pages.url("/logs"))
    c.tool("click", sessionId=session_id, selector="#more")
    logs = c.tool("console_logs", sessionId=session_id)
    assert [e["message"] for e in logs["entries"]] == [f"burst {i}" for i in range(3, 8)]
    assert logs["dropped"] >= 6  # 3 logged at load and the first 3 of the burst
    for name in ("one", "two", "three"):
        c.tool("navigate", sessionId=session_id, url=pages.url(f"/title/{name}"))
    net = c.tool("network_logs", sessionId=session_id, allPages=True)
    assert [e["url"].rsplit("/", 1)[1] for e in net["entries"]] == ["two", "three"]
    assert [e["url"].rsplit("/", 1)[1] for e in c.tool("network_logs", sessionId=session_id)["entries"]] == ["three"]
    assert net["dropped"] >= 3
