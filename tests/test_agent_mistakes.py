"""An agent's mistakes, through the official client: each answer says what went wrong and what to
do next, costs few characters, and the agent's next, corrected call just works."""

import json
import socket

import pytest

pytestmark = pytest.mark.e2e


def refused_url():
    """An address on 127.0.0.1 where nothing listens (a port just freed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/"


def error_text(client, name, **arguments):
    """What the model reads of a call that must fail, and its error object."""
    result = client.call(name, arguments)
    text = result.content[0].text
    assert result.is_error, text
    return text, json.loads(text)


def test_a_navigation_after_two_failed_ones_in_a_row_just_works(client, session, pages):
    """Two mistyped addresses in a row, then the right one: the second failure's error page
    commits after its answer (the tab showed the first one's already), and it interrupted the
    corrected navigation ("interrupted by another navigation to chrome-error://chromewebdata/")."""
    for attempt in range(4):
        for _ in range(2):
            _, err = error_text(client, "navigate", sessionId=session, url=refused_url())
            assert err["errorCode"] == "NAVIGATION_FAILED" and "ERR_CONNECTION_REFUSED" in err["message"]
        ok = client.tool("navigate", sessionId=session, url=pages.url(f"/title/fixed{attempt}"))
        assert ok["title"] == f"fixed{attempt}"
