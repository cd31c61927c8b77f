"""Unit tests of the browser's restarts: the back-off between them, the restart limit, and the
supervisor's restart path, with a fake clock and a fake launcher (no browser)."""

import io
import os
import threading

import pytest

from mcpbrowser.config import Config
from mcpbrowser.core import browser_supervisor as bs
from mcpbrowser.core.browser_supervisor import RestartBackoff
from mcpbrowser.errors import BrowserError, BrowserUnavailable
from mcpbrowser.session.worker import SessionWorker

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def crashes(backoff, clock, runs):
    """The waits RestartBackoff gives a browser that ran each of `runs` seconds, the clock moving as it would."""
    waits = []
    for ran in runs:
        clock.now += ran
        delay, spent = backoff.crashed(ran)
        waits.append(round(delay, 2) if not spent else ("spent", round(delay, 2)))
        clock.now += delay
    return waits


def test_a_browser_that_ran_a_while_restarts_at_once_however_often_it_crashed_before():
    clock = Clock()
    backoff = RestartBackoff(100, 300, clock)
    assert crashes(backoff, clock, [0.5]) == [0]  # the first crash: no wait
    assert crashes(backoff, clock, [60] * 10) == [0] * 10  # once a minute: never a wait


def test_a_browser_that_keeps_dying_as_it_starts_waits_longer_each_time_up_to_4_s():
    clock = Clock()
    assert crashes(RestartBackoff(100, 300, clock), clock, [0] * 7) == [0, 0.25, 0.75, 1.75, 3.75, 4, 4]


def test_crashes_after_a_second_of_work_each_wait_at_most_a_quarter_second():
    """A kill every second or so (scripts/chaos.py) is not a crash loop: each restart waits little."""
    clock = Clock()
    waits = crashes(RestartBackoff(100, 300, clock), clock, [1.0] * 12)
    assert waits[0] == 0 and max(waits) <= 0.25, waits


def test_the_wait_decays_with_the_time_the_browser_ran():
    clock = Clock()
    backoff = RestartBackoff(100, 300, clock)
    crashes(backoff, clock, [0] * 6)  # a crash loop, waiting 4 s
    assert crashes(backoff, clock, [60]) == [0]  # then a minute of work: at once again
    assert crashes(backoff, clock, [0]) == [0.25]  # and a quick repeat starts over from the first step


def test_a_crash_loop_stops_at_the_restart_limit_until_the_window_allows_one():
    clock = Clock()
    backoff = RestartBackoff(3, 300, clock)
    waits = crashes(backoff, clock, [0] * 4)
    assert waits[:3] == [0, 0.25, 0.75]
    # The fourth: the budget is spent until the first restart (due at 1000.0) leaves the window.
    assert waits[3] == ("spent", round(1000.0 + 300 - (1000.0 + 1.0), 2))
    clock.now += 300
    assert crashes(backoff, clock, [0]) == [3.75]  # allowed again, still backing off: it never ran


def test_with_no_restarts_allowed_a_crash_waits_a_whole_window():
    clock = Clock()
    assert crashes(RestartBackoff(0, 60, clock), clock, [5]) == [("spent", 60)]


class FakeLauncher:
    """A launcher with one fake browser at a time: the supervisor's side of SharedBrowser.

    pipe: its sessions' socket (None: sessions use the WebSocket); hold: an Event each relaunch waits for."""

    made = []
    pipe = None
    hold = None

    def __init__(self, browser, executable, headless, on_exit=None, spare_renderer=False, webmcp=False, proxied=False):
        self.on_exit = on_exit
        self.ended = threading.Event()
        self.exit_line = None
        self.gone = False
        self.starts = self.relaunches = 0
        self.stops = []
        FakeLauncher.made.append(self)

    def start(self, abort=None):
        self.starts += 1
        return self.endpoint()

    def endpoint(self):
        return bs.Endpoint("ws://127.0.0.1:1/fake", self.pipe, "relay" if self.pipe else None)

    def can_relaunch(self):
        return self.exit_line is not None and not self.gone and not self.stops

    def relaunch(self, abort=None):
        if self.hold is not None:
            assert self.hold.wait(5)
        self.relaunches += 1
        self.exit_line = None
        self.ended.clear()
        return self.endpoint()

    def crash(self, launcher_too=False):
        """The browser dies: the launcher says so (or dies with it)."""
        self.exit_line = "null SIGKILL"
        self.gone = launcher_too
        self.ended.set()
        self.on_exit()

    def exit_cause(self):
        return f"the browser process exited ({self.exit_line})"

    def ping(self, timeout):
        return None

    def stop(self, grace=2.0):
        self.stops.append(grace)


@pytest.fixture
def supervised(monkeypatch):
    """A started supervisor over FakeLaunchers, its clock, its sleeps (recorded, the clock moved by them;
    a wait of a minute or more blocks until stop), and what it told the core. Stopped at the end."""
    FakeLauncher.made, FakeLauncher.pipe, FakeLauncher.hold = [], None, None
    monkeypatch.setattr(bs, "SharedBrowser", FakeLauncher)
    monkeypatch.setattr(bs, "find_executable", lambda *args, **kwargs: "/bin/true")
    made = []

    def make(**settings):
        clock, sleeps, lost = Clock(), [], []
        supervisor = bs.BrowserSupervisor(Config(**settings), on_lost=lambda cause, gen: lost.append(gen),
                                          clock=clock)

        def sleep(seconds):
            sleeps.append(round(seconds, 2))
            if seconds >= 60:
                supervisor.stopping.wait(10)
            clock.now += seconds

        supervisor._restart_sleep = sleep
        supervisor.start()
        assert supervisor._endpoint.result(5)[0] == 1
        made.append(supervisor)
        return supervisor, clock, sleeps, lost

    yield make
    for supervisor in made:
        supervisor.stop(BrowserError("The server is shutting down."))


def wait_generation(supervisor, generation, published=True, within=5.0):
    """True once the supervisor is at life `generation` (and has published it, unless published=False)."""
    pause = threading.Event()
    for _ in range(int(within / 0.01)):
        if supervisor.generation == generation and (supervisor._endpoint.done() or not published):
            return True
        pause.wait(0.01)
    return False


def test_a_crashed_browser_restarts_at_once_on_the_launcher_that_ran_it(supervised):
    supervisor, clock, sleeps, lost = supervised()
    clock.now += 30  # it served a while
    FakeLauncher.made[0].crash()
    assert wait_generation(supervisor, 3)  # life 1 retired as 2, life 3 published
    assert sleeps == [0] and lost == [1]
    assert len(FakeLauncher.made) == 1 and FakeLauncher.made[0].relaunches == 1
    assert FakeLauncher.made[0].stops == []  # the launcher stays, with its Node.js and playwright-core loaded


def test_a_browser_whose_launcher_died_too_restarts_on_a_new_one(supervised):
    supervisor, clock, sleeps, lost = supervised()
    FakeLauncher.made[0].crash(launcher_too=True)
    assert wait_generation(supervisor, 3)
    first, second = FakeLauncher.made
    assert first.stops == [0] and second.starts == 1 and first.relaunches == 0


def test_a_crash_loop_stops_at_the_restart_limit_with_a_clear_error(supervised):
    supervisor, clock, sleeps, lost = supervised(max_restarts=2, restart_window=120)
    for generation in (3, 5):  # two restarts, the second after a back-off: it had not run at all
        FakeLauncher.made[0].crash()
        assert wait_generation(supervisor, generation)
    assert sleeps == [0, 0.25]
    FakeLauncher.made[0].crash()
    assert wait_generation(supervisor, 6, published=False)
    assert not wait_generation(supervisor, 7, within=0.3)  # no restart while the budget is spent
    assert supervisor.degraded
    with pytest.raises(BrowserUnavailable) as refused:
        supervisor.check_available()
    assert "crashed 2 times within 120 s" in refused.value.message
    assert 0 < refused.value.details["retryAfterMs"] <= 120_000
    assert refused.value.details["cause"] == "the browser process exited (null SIGKILL)"


def test_a_crash_that_spends_the_budget_is_refused_before_anyone_hears_of_it(supervised):
    """The core hears of a crash (on_lost: the browser_crashed notice, the sessions lost); a create_session
    that comes right after must be refused at once, not held for a browser the window brings back later."""
    supervisor, clock, sleeps, lost = supervised(max_restarts=1, restart_window=120)
    degraded_when_told = []
    supervisor._on_lost = lambda cause, gen: degraded_when_told.append(supervisor.degraded)
    FakeLauncher.made[0].crash()
    assert wait_generation(supervisor, 3)
    FakeLauncher.made[0].crash()
    assert wait_generation(supervisor, 4, published=False)
    assert degraded_when_told == [False, True]  # the first restart is allowed; the second spends it


class FakePlaywright:
    stopped = False

    def stop(self):
        self.stopped = True


def test_a_session_opening_during_a_restart_starts_its_playwright_while_the_browser_does(supervised, monkeypatch):
    """Its relay connects to the launcher's socket, which holds it until the next browser is up: the
    relay's and Playwright's start overlap the browser's. The session belongs to that next browser."""
    FakeLauncher.pipe, FakeLauncher.hold = "/fake/sessions.sock", threading.Event()
    supervisor, clock, sleeps, lost = supervised()
    attached = []

    def fake_attach(config, endpoint, headless=True):
        attached.append((endpoint.pipe, supervisor._endpoint.done()))
        return "manager", FakePlaywright(), "browser", False

    monkeypatch.setattr(bs, "attach", fake_attach)
    FakeLauncher.made[0].crash()
    assert wait_generation(supervisor, 2, published=False)
    worker = SessionWorker("0123456789abcdef", None)
    opening = threading.Thread(target=lambda: worker.__dict__.update(result=supervisor.attach(worker)))
    opening.start()
    assert wait_for(lambda: attached)
    assert attached == [("/fake/sessions.sock", False)]  # before the next browser was published
    FakeLauncher.hold.set()
    opening.join(5)
    assert worker.generation == 3 and worker.result[0] == "manager" and len(attached) == 1


def wait_for(check, within=5.0):
    pause = threading.Event()
    for _ in range(int(within / 0.01)):
        if check():
            return True
        pause.wait(0.01)
    return False


class FakeLauncherProcess:
    """The launcher's pipes, as SharedBrowser sees them: we write its stdout and read its stdin."""

    pid = 4242

    def __init__(self):
        out_r, self._out_w = os.pipe()
        self._in_r, in_w = os.pipe()
        self.stdout, self.stdin = os.fdopen(out_r, "rb"), os.fdopen(in_w, "wb")
        self.stderr = io.BytesIO()

    def says(self, text):
        os.write(self._out_w, text.encode())

    def heard(self):
        return os.read(self._in_r, 100)

    def close(self):
        os.close(self._out_w)
        os.close(self._in_r)


def test_the_launchers_exited_line_is_the_crash_and_the_same_launcher_starts_the_next_browser(tmp_path):
    """The crash is acted on when the launcher says its browser exited (the launcher's own exit came
    40-300 ms later); the launcher stays, and a "launch" line gets the next browser's endpoint."""
    from mcpbrowser.core.browser_process import SharedBrowser

    exited = threading.Event()
    shared = SharedBrowser("chromium", None, True, on_exit=exited.set)
    shared.process, shared.runtime_dir = FakeLauncherProcess(), str(tmp_path)
    shared._stderr_reader = threading.Thread(target=lambda: None)
    threading.Thread(target=shared._read_endpoint, daemon=True).start()
    try:
        shared.process.says("pipe /nowhere/sessions.sock\nws://127.0.0.1:1/first\n")
        assert shared._found.wait(5) and shared.ws_endpoint == "ws://127.0.0.1:1/first"
        shared.process.says("exited null SIGKILL\n")
        assert exited.wait(5) and shared.ended.is_set() and shared.can_relaunch()
        assert shared.exit_cause() == "the browser process exited (code null, signal SIGKILL)"
        restarted = {}
        relaunching = threading.Thread(target=lambda: restarted.update(endpoint=shared.relaunch(timeout=5)))
        relaunching.start()
        assert shared.process.heard() == b"launch\n"
        shared.process.says("pipe /nowhere/sessions.sock\nws://127.0.0.1:1/second\n")
        relaunching.join(5)
        assert restarted["endpoint"].ws == "ws://127.0.0.1:1/second" and not shared.ended.is_set()
        assert not shared.can_relaunch()  # its browser runs
    finally:
        shared.process.close()
