"""An embedder's mistakes and shutdowns, as docs/library.md leads one to write them (a real Chromium)."""

import threading

import pytest

import mcpbrowser
from mcpbrowser.config import Config

pytestmark = pytest.mark.e2e


@pytest.fixture
def browser():
    b = mcpbrowser.Browser(Config(headless=True, db=":memory:", max_sessions=4)).start()
    yield b
    b.close()


def test_a_session_left_open_when_the_browser_closed_says_the_server_stopped(browser, pages):
    # A WSGI worker's `with` block whose browser another thread closed at exit: leaving the block
    # must not raise over what the body raised, and the calls say why they fail (not "call create_session").
    with pytest.raises(ValueError, match="the view's own"):
        with browser.create_session(pages.url("/form")) as session:
            assert session.snapshot()["title"] == "Form"  # positive control: it was open and working
            browser.close()
            with pytest.raises(mcpbrowser.ServerStopping) as stopped:
                session.click("#go")
            assert stopped.value.code == "SERVER_STOPPING" and isinstance(stopped.value, mcpbrowser.SessionError)
            raise ValueError("the view's own")
    session.close()  # again, after the browser closed: nothing to do
    with pytest.raises(mcpbrowser.ServerStopping):
        browser.create_session()
    with pytest.raises(mcpbrowser.ServerStopping):
        browser.get_content("no-such-ref")


def test_the_browser_closed_by_another_thread_during_a_with_block(browser, pages):
    """A request thread's session ends with the browser; its `with` exit stays quiet."""
    raised = []

    def request():
        try:
            with browser.create_session(pages.url("/form")) as session:
                opened.set()
                closed.wait(30)
                session.snapshot()
        except BaseException as exc:
            raised.append(exc)

    opened, closed = threading.Event(), threading.Event()
    worker = threading.Thread(target=request)
    worker.start()
    assert opened.wait(30)
    browser.close()
    closed.set()
    worker.join(30)
    assert [type(exc) for exc in raised] == [mcpbrowser.ServerStopping]
    assert raised[0].__context__ is None  # not an error of the exit on top of the call's
