"""What a new user meets (issue 76): where the history lives, a run that keeps none, a login page's quiet console,
and a closed session's error naming both ways on. A real server over the official MCP client, real Chromium."""

import os

import pytest
from support import HtmlSite, McpClient

from mcpbrowser.config import Config
from mcpbrowser.core.store import Store

pytestmark = pytest.mark.e2e

# A login page that writes nothing to its console: Chromium logs its own "[DOM] Input elements should have
# autocomplete attributes" (level verbose) for the password field.
LOGIN = "<!doctype html><title>Login</title><form><input name=u><input type=password name=p><button>go</button></form>"
SPEAKS = "<!doctype html><title>Speaks</title><input type=password><script>console.debug('the page')</script>"


@pytest.fixture(scope="module")
def site():
    site = HtmlSite(lambda url: SPEAKS if url.path == "/speaks" else LOGIN)
    yield site
    site.close()


def files_under(*folders):
    return sorted(os.path.join(root, name) for folder in folders for root, _, names in os.walk(folder)
                  for name in names)


def test_a_run_with_db_memory_writes_no_history_file_and_reads_its_calls(tmp_path, site, monkeypatch):
    data, home = tmp_path / "data", tmp_path / "home"
    data.mkdir()
    home.mkdir()
    # The default place, as docs/history.md names it: $XDG_DATA_HOME/mcpbrowser/history.db, made on first use
    # (the control: a history written here is seen by the check below).
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    default = Config().db
    assert default == str(data / "mcpbrowser" / "history.db")
    Store(default).close()
    assert str(data / "mcpbrowser" / "history.db") in files_under(data)
    for made in files_under(data):
        os.unlink(made)
    c = McpClient("--db", ":memory:", env={"XDG_DATA_HOME": str(data), "HOME": str(home)})
    try:
        sid = c.tool("create_session")["sessionId"]
        nav = c.tool("navigate", sessionId=sid, url=site.url + "/login")
        assert "go" in c.tool("get_content", ref_id=nav["refId"])["content"]  # within the run, it reads
        c.tool("close_session", sessionId=sid)
    finally:
        c.close()
    assert files_under(data) == []  # nothing where the history would be (nor its files/ folder)
    # (the driver's compile cache goes under ~/.cache/mcpbrowser: a cache, not the history)
    assert not [f for f in files_under(home) if f.endswith((".db", ".db-wal", ".db-shm"))]


def test_chromiums_own_advice_on_a_password_field_is_not_the_pages_console(client, session, site):
    quiet = client.tool("navigate", sessionId=session, url=site.url + "/login")
    assert quiet["meta"]["hasConsoleLogs"] is False, quiet
    assert client.tool("console_logs", sessionId=session)["entries"] == []
    # The positive control: the same field on a page that does log, at its lowest level (debug).
    spoke = client.tool("navigate", sessionId=session, url=site.url + "/speaks")
    assert spoke["meta"]["hasConsoleLogs"] is True
    assert [e["message"] for e in client.tool("console_logs", sessionId=session)["entries"]] == ["the page"]


def test_a_closed_sessions_error_names_a_new_session_and_resuming_it(client, site):
    sid = client.tool("create_session")["sessionId"]
    client.tool("navigate", sessionId=sid, url=site.url + "/speaks")
    client.tool("close_session", sessionId=sid)
    gone = client.error("navigate", sessionId=sid, url=site.url + "/login")
    assert gone["errorCode"] == "SESSION_NOT_FOUND" and gone["details"]["resumable"] is True, gone
    assert "create_session" in gone["message"] and "resume_session" in gone["message"], gone
    back = client.tool("resume_session", sessionId=sid)  # the way it names works
    assert back["url"] == site.url + "/speaks", back
    client.tool("close_session", sessionId=sid)
