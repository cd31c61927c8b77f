"""Fakes for unit-testing thread, queue and timer logic without a browser."""

import threading

from mcpbrowser.config import Config
from mcpbrowser.core.browser import Browser
from mcpbrowser.core.browser_supervisor import BrowserSupervisor
from mcpbrowser.session.state import SessionState


class FakeClock:
    """The core's monotonic clock in fake cores: it moves only when a FakeTimer fires."""

    now = 1000.0

    @classmethod
    def monotonic(cls):
        return cls.now


class FakeTimer:
    """Records what threading.Timer would do; `fire()` runs the callback on the caller's thread,
    after moving the fake clock to the timer's due time."""

    created = []

    def __init__(self, interval, function, args=()):
        self.interval, self.function, self.args = interval, function, args
        self.due = FakeClock.now + interval
        self.started = self.cancelled = self.fired = False
        self.name, self.daemon = None, False
        FakeTimer.created.append(self)

    def start(self):
        self.started = True

    def cancel(self):
        self.cancelled = True

    def fire(self):
        self.fired = True
        if not self.cancelled:
            FakeClock.now = max(FakeClock.now, self.due)
            self.function(*self.args)


def last_timer():
    """The latest FakeTimer other than the warm pool's deferred refills (a session's expiry, a cooldown)."""
    return next(t for t in reversed(FakeTimer.created) if getattr(t.function, "__name__", "") != "refill")


class _Closable:
    def __init__(self):
        self.closed = 0

    def close(self):
        self.closed += 1

    stop = close

    def is_connected(self):
        return True

    def cookies(self, url):  # the round trip that tells a live browser from a gone one
        return []

    class browser_type:  # a fake browser is no Chromium: titles come from page.title()
        name = "fake"


class FakeResponse:
    status = 200
    headers = {}  # lower-case names, as Playwright's Response.headers


class FakePage:
    """Just enough of a Page for the navigate handler."""

    def __init__(self):
        self.url = "about:blank"
        self.main_frame = object()

    def goto(self, url, wait_until, timeout):
        self.url = url
        return FakeResponse()

    def title(self):
        return "title of " + self.url

    def is_closed(self):
        return False

    def once(self, event, handler):
        pass  # a fake page fires no events


def fake_opener(config=None, objects=None):
    """An opener that builds a real SessionState around fake Playwright objects; `objects()`, when given, makes
    them: (playwright, browser, context, page)."""

    def open_state(worker):
        made = objects() if objects else (_Closable(), _Closable(), _Closable(), FakePage())
        state = SessionState(worker, config or Config(), *made)
        if "policy" in worker.options:  # as the real opener: the core's policy, and its proxy to close
            state.network_policy.policy = worker.options["policy"]
            state.network_policy.proxy = worker.options["proxy"]
        return state

    return open_state


class NoBrowser(BrowserSupervisor):
    """The supervisor of a core whose sessions have fake pages: nothing would use a browser, so none is
    launched (a launch costs ~2.5 s of CPU: its Node.js launcher, Chromium, its GPU process)."""

    def start(self):
        return False


def fake_core(objects=None, **settings):
    """A real core whose sessions have fake pages and whose timers fire only on demand."""
    config = Config(**{"db": ":memory:", **settings})
    return Browser(config, opener=fake_opener(config, objects), timer_factory=FakeTimer, clock=FakeClock.monotonic,
                   supervisor=NoBrowser(config))


def gate():
    """A command that blocks its session thread until released, to hold a queue still."""
    entered, release = threading.Event(), threading.Event()

    def command(state):
        entered.set()
        release.wait(10)
        return "released"

    return command, entered, release
