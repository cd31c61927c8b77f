"""An embedder's mistakes and shutdowns, as docs/library.md leads one to write them (a real Chromium)."""

import gc
import glob
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

import mcpbrowser
from mcpbrowser.config import Config

pytestmark = pytest.mark.e2e


@pytest.fixture
def browser():
    b = mcpbrowser.Browser(Config(headless=True, db=":memory:", max_sessions=4)).start()
    yield b
    b.close()


@pytest.fixture(scope="module")
def shared_browser():
    """The same Browser for the module's tests that neither close it nor fork, each of whose sessions is
    closed by its `with` block: none finds another's session open."""
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
            # The closed store's last connection collected (a loaded run did): the calls below read no history.
            gc.collect()
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


def _in_forked_child(work, seconds=20):
    """Run work() in a forked child; what it returned (a str), or "HUNG" when it did not end in time."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never back into pytest
        os.close(read)
        threading.Timer(seconds, lambda: (os.write(write, b"HUNG"), os._exit(3))).start()
        try:
            os.write(write, work().encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        text = answer.read()
    os.waitpid(pid, 0)
    return text


def test_a_browser_started_before_a_fork_refuses_the_child_at_once(browser, pages):
    # gunicorn --preload and uWSGI without lazy-apps import the app, so start the Browser, in the
    # master, then fork the workers: the Browser's threads stay in the master. A worker's first call
    # waited for them for ever; it is told at once, and its close() leaves the master's browser alone.
    with browser.create_session(pages.url("/form")) as session:
        assert session.snapshot()["title"] == "Form"

    def worker():
        started = time.monotonic()
        try:
            browser.create_session(pages.url("/form"))
            return "opened"
        except mcpbrowser.BrowserServerError as exc:
            return f"{exc.code} {time.monotonic() - started:.1f}"
        finally:
            browser.close()

    answer = _in_forked_child(worker)
    assert answer != "HUNG"
    code, took = answer.split()
    assert code == "BROWSER_ERROR" and float(took) < 1
    with browser.create_session(pages.url("/form")) as session:  # the master's still works
        assert session.snapshot()["title"] == "Form"


EXIT_WITHOUT_CLOSE = """
import glob, os, sys, tempfile
import mcpbrowser
browser = mcpbrowser.Browser(mcpbrowser.Config(headless=True, db=":memory:")).start()
session = browser.create_session(sys.argv[1])
session.screenshot()
mine = glob.glob(os.path.join(tempfile.gettempdir(), f"mcpbrowser-run-{os.getpid()}-*"))
print(os.getpid(), *mine, flush=True)
if sys.argv[2] == "interrupt":
    raise KeyboardInterrupt  # Ctrl-C in a dev server's serve_forever: the module's close() never runs
"""


@pytest.mark.parametrize("how", ["exit", "interrupt"])
def test_an_interpreter_that_exits_without_close_leaves_nothing_in_tmp(pages, how):
    # The browser's runtime folder (its profile, the sessions' downloads and unsaved trace events)
    # stayed in /tmp until some later start swept it; the interpreter's exit closes the Browser now.
    run = subprocess.run([sys.executable, "-c", EXIT_WITHOUT_CLOSE, pages.url("/form"), how],
                         capture_output=True, text=True, timeout=120)
    _, *folders = run.stdout.split()
    assert folders, run.stderr[-2000:]  # positive control: it had one
    assert [f for f in folders if os.path.exists(f)] == []


def test_more_sessions_at_once_than_max_sessions_are_refused_not_queued(shared_browser, pages):
    """docs/library.md: a WSGI server needs no more threads than max_sessions (4 here)."""
    from waitress.server import create_server

    def app(environ, start_response):
        try:
            with shared_browser.create_session() as session:
                page = session.navigate(pages.url("/slow?ms=300"))
        except mcpbrowser.SessionError as exc:
            start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
            return [f"{exc.code} {isinstance(exc, mcpbrowser.Retryable)}".encode()]
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [page["title"].encode()]

    def answers(threads):
        server = create_server(app, host="127.0.0.1", port=0, threads=threads)
        threading.Thread(target=server.run, daemon=True).start()
        try:
            def get(_):
                url = f"http://127.0.0.1:{server.effective_port}/"
                try:
                    with urllib.request.urlopen(url, timeout=60) as answer:
                        return answer.read().decode()
                except urllib.error.HTTPError as refused:
                    return refused.read().decode()

            with ThreadPoolExecutor(8) as pool:
                return Counter(pool.map(get, range(16)))
        finally:
            server.close()

    assert answers(threads=4) == {"Slow": 16}
    over = answers(threads=8)
    assert set(over) == {"Slow", "MAX_SESSIONS_REACHED False"} and over["Slow"] < 16, over


@pytest.mark.parametrize("call", ["click", "navigate", "wait_for"])
def test_a_zero_timeout_is_refused_not_a_wait_without_end(shared_browser, pages, call):
    # Playwright reads timeout=0 as "no timeout": `click("#missing", timeout=0)` (meant as "do not
    # wait") held the caller's thread 60 s, until the watchdog replaced the session's thread.
    with shared_browser.create_session(pages.url("/form")) as session:
        act = {"click": lambda: session.click("#missing", timeout=0),
               "navigate": lambda: session.navigate(pages.url("/slow?ms=8000"), timeout=0),
               "wait_for": lambda: session.wait_for(selector="#missing", timeout=0)}[call]
        with ThreadPoolExecutor(1) as pool:
            answer = pool.submit(act)
            try:
                error = answer.exception(timeout=5)
            finally:
                if not answer.done():
                    shared_browser.close()  # ends the wait, so that the pool can shut down
        assert isinstance(error, mcpbrowser.InvalidParameters) and "timeout" in error.message
        with pytest.raises(mcpbrowser.ElementNotFound):  # positive control: 1 ms is a short wait
            session.click("#missing", timeout=1)


def test_close_returns_once_the_browser_is_gone_in_every_thread_that_called_it(pages):
    # A signal handler's thread and the main thread (or our atexit hook) both close: the second
    # returned at once, while the first was still closing, and an exit then left the browser's files.
    def runtime_dirs():
        return set(glob.glob(os.path.join(tempfile.gettempdir(), f"mcpbrowser-run-{os.getpid()}-*")))

    before = runtime_dirs()
    b = mcpbrowser.Browser(Config(headless=True, db=":memory:")).start()
    with b.create_session(pages.url("/form")) as session:
        session.snapshot()
    b.create_session(pages.url("/form"))  # left open: close() has a session to close
    (mine,) = runtime_dirs() - before
    start, seen = threading.Barrier(2), []

    def closer():
        start.wait()
        b.close()
        seen.append(os.path.exists(mine))

    closers = [threading.Thread(target=closer) for _ in range(2)]
    for thread in closers:
        thread.start()
    for thread in closers:
        thread.join(30)
    assert seen == [False, False]


def test_create_session_with_a_url_that_fails_keeps_the_session_and_says_why(shared_browser):
    """docs/library.md: create_session(url) raises nothing for its page; navigate(url) does."""
    with shared_browser.create_session("http://127.0.0.1:1/") as session:
        assert session.created["navigationError"]["errorCode"] == "NAVIGATION_FAILED"
        with pytest.raises(mcpbrowser.NavigationFailed):
            session.navigate("http://127.0.0.1:1/")
