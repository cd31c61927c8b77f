"""The synchronous library API, called from many threads at once (no asyncio, no thread rule)."""

from concurrent.futures import ThreadPoolExecutor

import pytest

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
