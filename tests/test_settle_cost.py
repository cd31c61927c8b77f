"""End to end: on a plain page, an action with nothing to wait for pays at most one round trip to settle.

The messages the session's Playwright sends are recorded (Transport.serialize_message, every message
on its way to the driver) with the time each left; the click's own answer marks where its call ends,
so the history's capture, which runs after it, is not counted.
"""

import threading
import time

import pytest
from playwright._impl.transport import Transport
from support import PAGES

import mcpbrowser
from mcpbrowser.config import Config

pytestmark = pytest.mark.e2e

PLAIN = """<!doctype html><title>Plain</title><p>Nothing happens here.</p>
<button id=b onclick="document.title = 'clicked'">Press</button>"""
BUSY = """<!doctype html><title>Busy</title><p id=t>before</p>
<button id=b onclick="setTimeout(() => { document.getElementById('t').textContent = 'after' }, 200)">Later</button>"""


@pytest.fixture
def sent(monkeypatch):
    """[(monotonic time, thread name, method)] of the messages sent from session threads while the test runs."""
    out = []
    original = Transport.serialize_message

    def serialize_message(self, message):
        name = threading.current_thread().name
        if name.startswith("session-"):
            out.append((time.monotonic(), name, message.get("method")))
        return original(self, message)

    monkeypatch.setattr(Transport, "serialize_message", serialize_message)
    return out


def clicked(browser, session, sent):
    """The methods sent from the click's action on until its answer."""
    done = []
    del sent[:]
    fut = browser.submit("click", {"sessionId": session.id, "selector": "#b"})
    fut.add_done_callback(lambda _: done.append(time.monotonic()))  # on the session thread, as it answers
    fut.result(timeout=30)
    ours = f"session-{session.id[:8]}"  # the warm pool opens others meanwhile
    methods = [method for at, thread, method in sent if at < done[0] and thread == ours]
    return methods[methods.index("click"):]


@pytest.fixture(scope="module")
def browser(pages):
    PAGES["/plain"], PAGES["/busy"] = PLAIN, BUSY
    with mcpbrowser.Browser(Config(headless=True, db=":memory:")) as b:
        yield b
    del PAGES["/plain"], PAGES["/busy"]


def test_a_click_on_a_plain_page_settles_in_one_round_trip(browser, pages, sent):
    with browser.create_session() as session:
        session.navigate(pages.url("/plain"))
        after = clicked(browser, session, sent)
        # The click, then one evaluation that settles and reads the title and the element count.
        assert after == ["click", "send"], after
        assert session.snapshot()["title"] == "clicked"


def test_a_click_whose_page_reacts_later_is_waited_for_in_the_same_round_trip(browser, pages, sent):
    with browser.create_session() as session:
        session.navigate(pages.url("/busy"))
        after = clicked(browser, session, sent)
        assert after == ["click", "send"], after  # the settle waits in the page, not in round trips
        assert "after" in session.snapshot()["snapshot"]
