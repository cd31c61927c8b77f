"""The synchronous library API, called from many threads at once (no asyncio, no thread rule)."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from support import wait_for

import mcpbrowser
from mcpbrowser.config import Config

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def browser():
    with mcpbrowser.Browser(Config(headless=True, db=":memory:", max_sessions=10)) as b:
        yield b


def test_eight_threads_each_drive_their_own_session(browser, pages):
    def job(n):
        with browser.create_session() as session:
            landed = session.navigate(pages.url("/form"))
            session.type("#name", f"thread {n}")
            session.click("#go")
            # snapshot runs on the session's thread after the click: no timing involved
            return landed["title"], session.snapshot()["title"]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(job, range(8)))
    assert results == [("Form", f"Hello thread {n}") for n in range(8)]
    assert browser.list_sessions() == []


def test_one_session_shared_by_threads_runs_calls_in_order(browser, pages):
    session = browser.create_session()
    try:
        session.navigate(pages.url("/form"))
        with ThreadPoolExecutor(8) as pool:
            clicks = list(pool.map(lambda _: session.click("#count")["success"], range(8)))
        assert clicks == [True] * 8
        assert session.snapshot()["title"] == "count 8"
    finally:
        session.close()


def test_errors_are_exceptions_with_codes(browser, pages):
    with browser.create_session() as session:
        session.navigate(pages.url("/form"))
        with pytest.raises(mcpbrowser.ElementNotFound) as raised:
            session.click("#missing", timeout=200)
        assert raised.value.code == "ELEMENT_NOT_FOUND" and raised.value.ref_id
        with pytest.raises(mcpbrowser.BrowserServerError) as raised:
            session.navigate("not a url")
        assert raised.value.code == "INVALID_PARAMETERS"
    with pytest.raises(mcpbrowser.SessionNotFound):
        session.navigate(pages.url("/form"))


def test_every_session_tool_is_a_method(browser):
    with browser.create_session() as session:
        for name, tool in browser.tools.items():
            if tool.needs_session and not tool.person_only:  # person_input: the live view's person's alone
                assert callable(getattr(session, name))
        with pytest.raises(AttributeError):
            _ = session.no_such_tool


def test_a_bug_of_ours_on_a_page_that_crashed_is_an_internal_error_with_its_traceback_logged(browser, pages):
    """A handler's own KeyError stays the answer though its page crashed meanwhile: INTERNAL_ERROR, the
    traceback in the log (no PAGE_CRASHED in its place); the crash is told by the next call, which gets
    the fresh page."""
    import logging

    from mcpbrowser.logs import log
    from mcpbrowser.tools.base import SessionTool

    def crash_then_bug(state, args, response):
        try:
            state.tab.page.goto("chrome://crash", timeout=5000)
        except Exception:
            pass  # Playwright: "Navigation failed because page crashed!"
        for _ in range(100):
            if state.tab.crashed:
                break
            state.flush_events()
        assert state.tab.crashed
        return {}["a key our code forgot"]

    schema = {"type": "object", "properties": {"sessionId": {"type": "string"}}, "required": ["sessionId"]}
    browser.tools["crash_then_bug"] = SessionTool("crash_then_bug", "Bug", "fails", schema, crash_then_bug)
    logged = []
    handler = logging.Handler()
    handler.emit = logged.append
    log.addHandler(handler)
    try:
        with browser.create_session() as session:
            session.navigate(pages.url("/form"))
            with pytest.raises(mcpbrowser.BrowserServerError) as raised:
                browser.call("crash_then_bug", {"sessionId": session.id})
            assert raised.value.code == "INTERNAL_ERROR", raised.value.to_dict()
            # Logged by the Future's done-callback, which may run just after the caller woke.
            bugs = wait_for(lambda: [r for r in logged if r.exc_info and r.exc_info[0] is KeyError])
            assert len(bugs) == 1 and bugs[0].levelno == logging.ERROR and bugs[0].tool == "crash_then_bug"
            with pytest.raises(mcpbrowser.BrowserServerError) as crashed:
                session.snapshot()
            assert crashed.value.code == "PAGE_CRASHED"
            assert session.navigate(pages.url("/form"))["title"] == "Form"
    finally:
        log.removeHandler(handler)
        del browser.tools["crash_then_bug"]
