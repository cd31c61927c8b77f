"""End to end: per-session emulation, logins saved by name, downloads, traces, PDFs and the newer actions.

Through the official MCP client over real pipes, real Chromium, pages on 127.0.0.1.
"""

import json
import os
import sqlite3

import pytest
from support import McpClient

pytestmark = pytest.mark.e2e


def _probe(client, session_id, pages):
    return json.loads(client.tool("navigate", sessionId=session_id, url=pages.url("/probe"))["title"])


def test_emulation_options_are_what_the_page_sees(client, pages):
    opened = client.tool("create_session", userAgent="ProbeBot/1.0", locale="de-DE", timezoneId="Asia/Tokyo",
                         viewport={"width": 640, "height": 480}, colorScheme="dark", deviceScaleFactor=2,
                         hasTouch=True, geolocation={"latitude": 48.5, "longitude": 9.25})
    sid = opened["sessionId"]
    try:
        seen = _probe(client, sid, pages)
        assert seen["ua"] == seen["headers"]["ua"] == "ProbeBot/1.0"
        assert seen["lang"] == "de-DE" and seen["headers"]["lang"].startswith("de-DE")
        assert (seen["tz"], seen["w"], seen["h"], seen["dpr"], seen["dark"], seen["touch"]) == \
            ("Asia/Tokyo", 640, 480, 2, True, True)
        client.tool("wait_for", sessionId=sid, text="at 48.5,9.25")  # the permission came with the position
        listed = {s["sessionId"] for s in client.tool("list_sessions")["sessions"]}
        assert sid in listed
    finally:
        client.call("close_session", {"sessionId": sid})
    plain = client.tool("create_session")["sessionId"]  # the defaults are untouched (and pooled)
    try:
        seen = _probe(client, plain, pages)
        assert (seen["tz"] != "Asia/Tokyo", seen["w"], seen["dark"], "ProbeBot" in seen["ua"]) == (True, 1280, False,
                                                                                                    False)
    finally:
        client.call("close_session", {"sessionId": plain})


def test_a_device_sets_its_options_and_explicit_ones_override_it(client, pages):
    sid = client.tool("create_session", device="iPhone 13", viewport={"width": 400, "height": 700})["sessionId"]
    try:
        seen = _probe(client, sid, pages)
        assert "iPhone" in seen["ua"] and seen["dpr"] == 3 and seen["touch"] is True
        assert (seen["w"], seen["h"]) == (400, 700)
    finally:
        client.call("close_session", {"sessionId": sid})


@pytest.mark.parametrize("args, field", [
    ({"device": "iPhone 99 Ultra"}, "device"),
    ({"timezoneId": "Mars/Olympus_Mons"}, "timezoneId"),
    ({"locale": "zz-!!"}, "locale"),
    ({"geolocation": {"latitude": 91, "longitude": 0}}, "geolocation.latitude"),
    ({"colorScheme": "sepia"}, "colorScheme"),
    ({"viewport": {"width": 800}}, "viewport.height"),
])
def test_invalid_emulation_answers_invalid_parameters_naming_the_field(client, args, field):
    error = client.error("create_session", **args)
    assert error["errorCode"] == "INVALID_PARAMETERS" and field in error["message"], error
    before = client.tool("list_sessions")["count"]
    assert client.tool("create_session")["sessionId"]  # nothing leaked: a session still opens
    assert client.tool("list_sessions")["count"] == before + 1


def test_a_bad_device_name_suggests_close_ones(client):
    error = client.error("create_session", device="iphone 13")
    assert "iPhone 13" in error["message"] and "iPhone 13" in error["details"]["closeMatches"]


def test_a_resumed_session_keeps_its_emulation(client, pages):
    sid = client.tool("create_session", timezoneId="America/Lima", url=pages.url("/title/x"))["sessionId"]
    client.tool("close_session", sessionId=sid)
    client.tool("resume_session", sessionId=sid)
    try:
        assert _probe(client, sid, pages)["tz"] == "America/Lima"
    finally:
        client.call("close_session", {"sessionId": sid})


SECRET = "alice-7Fq2ZrW"  # distinctive, so its absence from the database can be checked


def test_a_login_saved_by_name_starts_new_sessions_logged_in_even_after_a_restart(tmp_path, pages):
    db = str(tmp_path / "h.db")
    first = McpClient("--db", db)
    try:  # a cookie and a localStorage item whose value the history never saw in clear (typed as a secret)
        sid = first.tool("create_session", url=pages.url("/storage"))["sessionId"]
        first.tool("type", sessionId=sid, selector="#v", text=SECRET, secret=True)
        first.tool("click", sessionId=sid, selector="#save")
        saved = first.tool("save_state", sessionId=sid, name="alice")
        assert (saved["cookies"], saved["domains"]) == (1, ["127.0.0.1"])
        listed = first.tool("saved_states")
        assert [s["name"] for s in listed["states"]] == ["alice"]
        assert SECRET not in json.dumps([saved, listed])
    finally:
        first.close()
    for name in os.listdir(tmp_path):  # sealed at rest: the database, its WAL and journal hold no value
        with open(tmp_path / name, "rb") as f:
            assert SECRET.encode() not in f.read(), name
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM named_states").fetchone() == (1,)
    second = McpClient("--db", db)
    try:
        back = second.tool("create_session", storageState="alice", url=pages.url("/storage"))["sessionId"]
        assert second.tool("click", sessionId=back, selector="#show")["title"] == \
            f"cookie=k={SECRET};local={SECRET};session="
        # Within one server: a login made in one session is found in the next.
        bob = second.tool("create_session", url=pages.url("/login?user=bob"))["sessionId"]
        second.tool("save_state", sessionId=bob, name="bob")
        again = second.tool("create_session", storageState="bob", url=pages.url("/whoami"))
        assert again["title"] == "Logged in as bob"
        gone = second.tool("saved_states", delete="alice")
        assert gone["deleted"] is True and [s["name"] for s in gone["states"]] == ["bob"]
        error = second.error("create_session", storageState="alice")
        assert error["errorCode"] == "INVALID_PARAMETERS" and "storageState" in error["message"]
        assert second.tool("saved_states", delete="alice")["deleted"] is False
    finally:
        second.close()


@pytest.mark.parametrize("name", ["../x", "..", "a/b", "/etc/passwd", ".hidden", "a\\b", "x" * 65, "", "a b"])
def test_state_names_with_path_tricks_are_refused(client, session, name):
    for tool, args in (("save_state", {"sessionId": session, "name": name}), ("saved_states", {"delete": name}),
                       ("create_session", {"storageState": name})):
        error = client.error(tool, **args)
        assert error["errorCode"] == "INVALID_PARAMETERS", (tool, error)
