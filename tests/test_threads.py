"""Unit tests of the session thread, its queue and the expiry timers, with injected fakes."""

import threading

import playwright.sync_api
import pytest
from fakes import FakeClock, FakePage, FakeTimer, _Closable, fake_core, gate, last_timer

from mcpbrowser.errors import (
    BrowserError,
    CircuitOpen,
    ElementNotFound,
    RateLimited,
    ResourceExhausted,
    ServerStopping,
    SessionExpired,
    SessionNotFound,
)
from mcpbrowser.guards import CircuitBreaker, MemoryGuard
from mcpbrowser.redaction import KnownSecrets
from mcpbrowser.session.worker import SessionWorker
from mcpbrowser.timers import KeyedTimers
from mcpbrowser.tools.base import SessionTool

pytestmark = pytest.mark.unit


def started_worker(state=None):
    state = state or _Closable()
    worker = SessionWorker("0123456789abcdef", lambda w: state)
    assert worker.start().result(5) is True
    return worker, state


def test_commands_run_in_order_on_one_thread():
    worker, _ = started_worker()
    seen = []
    futures = [worker.submit(lambda s, i: seen.append((i, threading.get_ident())) or i, i) for i in range(50)]
    assert [f.result(5) for f in futures] == list(range(50))
    assert [i for i, _ in seen] == list(range(50))
    assert len({ident for _, ident in seen}) == 1 and seen[0][1] != threading.get_ident()
    worker.stop()
    assert worker.join(5)


def test_exceptions_land_in_the_future_and_the_loop_survives():
    worker, _ = started_worker()

    def boom(state, exc):
        raise exc

    failing = worker.submit(boom, ValueError("bad"))
    base = worker.submit(boom, KeyboardInterrupt())
    with pytest.raises(ValueError):
        failing.result(5)
    with pytest.raises(KeyboardInterrupt):
        base.result(5)
    assert worker.submit(lambda s: "still alive").result(5) == "still alive"
    worker.stop()


def test_cancelled_queued_command_is_skipped():
    worker, _ = started_worker()
    hold, entered, release = gate()
    first = worker.submit(hold)
    assert entered.wait(5)
    ran = []
    queued = worker.submit(lambda s: ran.append(1))
    assert queued.cancel() is True
    release.set()
    assert first.result(5) == "released"
    assert worker.submit(lambda s: "after").result(5) == "after"
    assert ran == []
    worker.stop()


def test_stop_fails_queued_work_refuses_new_work_and_closes_once():
    worker, state = started_worker()
    hold, entered, release = gate()
    running = worker.submit(hold)
    assert entered.wait(5)
    queued = worker.submit(lambda s: "never")
    urgent = worker.submit(lambda s: "never", urgent=True)  # a person's input: a queue of its own
    error = SessionExpired(session_id="x")
    worker.stop(error)
    worker.stop(BrowserError("second stop is ignored"))
    assert queued.exception(5) is error and urgent.exception(5) is error
    assert worker.submit(lambda s: "late").exception(5) is error
    release.set()
    assert running.result(5) == "released"  # the running command finishes
    assert worker.join(5) and state.closed == 1


def test_opener_failure_reaches_ready_and_later_calls():
    def broken(worker):
        raise BrowserError("no browser")

    worker = SessionWorker("0123456789abcdef", broken)
    with pytest.raises(BrowserError, match="no browser"):
        worker.start().result(5)
    assert worker.join(5)
    assert isinstance(worker.submit(lambda s: 1).exception(5), SessionNotFound)


def test_keyed_timers_schedule_name_and_cancel():
    sup = KeyedTimers(FakeTimer, "expire")
    fired = []
    sup.schedule("aaaaaaaa-1", 1.5, fired.append)
    timer = last_timer()
    assert timer.started and timer.daemon and timer.interval == 1.5 and timer.name == "expire-aaaaaaaa"
    sup.schedule("aaaaaaaa-1", 2.0, fired.append)
    assert timer.cancelled and sup.pending() == {"aaaaaaaa-1"}
    sup.cancel("aaaaaaaa-1")
    sup.cancel("aaaaaaaa-1")
    assert last_timer().cancelled and sup.pending() == set()
    sup.schedule("b", 1, fired.append)
    last_timer().fire()
    assert fired == ["b"]


def test_expiry_timer_closes_the_session_without_touching_its_page():
    touched = []  # (the Playwright object's kind, what was read of it, the thread that read it)

    def watched(kind, cls):
        class Watched(cls):
            def __getattribute__(self, name):
                if not name.startswith("__"):
                    touched.append((kind, name, threading.current_thread()))
                return super().__getattribute__(name)
        return Watched()

    core = fake_core(lambda: (watched("playwright", _Closable), watched("browser", _Closable),
                              watched("context", _Closable), watched("page", FakePage)), session_timeout=2500)
    session = core.create_session()
    timer = last_timer()
    assert timer.interval == 2.5
    timer.fire()  # runs on this thread, as a timer thread would: it may only flag and enqueue
    with pytest.raises(SessionExpired):
        session.navigate("http://example.test/")
    assert core.session_ids() == set()
    core.close()
    # The control: the close did reach the session's objects, on its own thread.
    assert ("context", "close", threading.current_thread()) not in touched
    assert any(kind == "context" and name == "close" for kind, name, _ in touched), touched
    assert not [(kind, name) for kind, name, thread in touched if thread is threading.current_thread()]


def test_each_call_renews_the_expiry_and_the_timer_sleeps_again_for_what_is_left():
    core = fake_core(session_timeout=10_000)
    session = core.create_session()
    timer = last_timer()
    first = session.expires_at
    FakeClock.now += 6  # six seconds later, a call: the session now lives 10 s from here
    answer = session.navigate("http://example.test/")
    assert answer["expiresAt"] == first + 6000
    assert core.list_sessions()[0]["expiresAt"] == first + 6000
    timer.fire()  # the first timer comes due (at +10 s): 6 s are left, so it schedules again
    assert core.session_ids() == {session.id}
    again = last_timer()
    assert again is not timer and again.interval == pytest.approx(6.0)
    again.fire()
    assert core.session_ids() == set()
    with pytest.raises(SessionExpired, match="expired \\(no call for 10 s\\)"):
        session.navigate("http://example.test/")
    core.close()


def test_the_hard_cap_ends_a_busy_session():
    core = fake_core(session_timeout=10_000, session_max_age=15_000)
    session = core.create_session()
    created = core.list_sessions()[0]["createdAt"]
    for _ in range(3):
        FakeClock.now += 4
        answer = session.navigate("http://example.test/")
    assert answer["expiresAt"] == created + 15_000  # renewed, but never past the cap
    last_timer().fire()
    assert core.session_ids() == {session.id}  # at +10 s: 5 s of the cap are left
    last_timer().fire()
    assert core.session_ids() == set()
    with pytest.raises(SessionExpired) as caught:
        session.navigate("http://example.test/")
    assert "older than 15 s" in caught.value.message and caught.value.details == {"resumable": False}
    core.close()


def test_close_session_cancels_its_timer_and_close_is_idempotent():
    core = fake_core()
    session = core.create_session()
    timer = last_timer()
    session.close()
    session.close()
    assert timer.cancelled
    core.close()
    core.close()
    with pytest.raises(ServerStopping):
        core.create_session()


def test_core_close_fails_pending_calls_and_stops_sessions():
    core = fake_core()
    session = core.create_session()
    worker = core.registry.worker(session.id)
    hold, entered, release = gate()
    running = worker.submit(hold)
    assert entered.wait(5)
    queued = core.submit("navigate", {"sessionId": session.id, "url": "http://example.test/"})
    closer = threading.Thread(target=core.close)
    closer.start()
    assert queued.exception(5).code == "SERVER_STOPPING"  # stopping, not a browser failure
    release.set()
    closer.join(5)
    assert running.result(5) == "released" and worker.join(5)


def test_last_command_runs_on_the_session_thread_before_close():
    worker, state = started_worker()
    seen = []
    worker.stop(last=lambda s: seen.append((s.closed, threading.get_ident())))
    worker.stop(last=lambda s: seen.append("second stop is ignored"))
    assert worker.join(5)
    assert len(seen) == 1 and seen[0][0] == 0 and seen[0][1] != threading.get_ident()
    assert state.closed == 1


def test_circuit_breaker_opens_after_repeated_browser_errors_then_lets_one_trial_through():
    now = [100.0]
    breaker = CircuitBreaker(3, 30, clock=lambda: now[0])
    assert [breaker.failed("click") for _ in range(3)] == [False, False, True]
    assert breaker.check("click") == 30_000 and breaker.check("navigate") is None
    now[0] += 29.5
    assert breaker.check("click") == 500
    now[0] += 1
    assert breaker.check("click") is None          # the pause is over: one trial may run
    assert breaker.failed("click") is True          # it failed: open again at once
    assert breaker.check("click") == 30_000
    now[0] += 31
    breaker.succeeded("click")                      # a trial that works closes it
    assert breaker.check("click") is None and breaker.failed("click") is False
    assert CircuitBreaker(0, 30).failed("x") is False  # threshold 0: off


def test_core_refuses_a_tool_with_circuit_open_and_other_failures_do_not_count():
    core = fake_core(breaker_threshold=2, breaker_reset=60)
    # Playwright's own failures: a bug of ours (a RuntimeError, a KeyError) would be INTERNAL_ERROR, never counted.
    outcomes = iter([playwright.sync_api.Error("renderer went away"), playwright.sync_api.Error("again")])

    def flaky(state, args, response):
        raise next(outcomes)

    def picky(state, args, response):
        raise ElementNotFound("no such element")

    schema = {"type": "object", "properties": {"sessionId": {"type": "string"}}, "required": ["sessionId"]}
    core.tools["flaky"] = SessionTool("flaky", "Flaky", "fails", schema, flaky)
    core.tools["picky"] = SessionTool("picky", "Picky", "fails", schema, picky)
    try:
        sid = core.call("create_session")["sessionId"]
        for _ in range(3):  # the agent's own mistakes never open the breaker
            with pytest.raises(ElementNotFound):
                core.call("picky", {"sessionId": sid})
        for _ in range(2):
            with pytest.raises(BrowserError):
                core.call("flaky", {"sessionId": sid})
        with pytest.raises(CircuitOpen) as refused:
            core.call("flaky", {"sessionId": sid})
        assert 0 < refused.value.details["retryAfterMs"] <= 60_000
        assert refused.value.details["tool"] == "flaky"
        assert core.call("navigate", {"sessionId": sid, "url": "https://example.com/"})["url"]  # others go on
    finally:
        core.close()


def test_a_call_that_works_closes_the_count_and_the_pause_is_breaker_reset_long():
    """reliability.md: CIRCUIT_OPEN after --breaker-threshold BROWSER_ERROR failures in a row (a success between
    them starts the count again), for --breaker-reset seconds: through the core's calls, not the breaker alone."""
    core = fake_core(breaker_threshold=2, breaker_reset=7)
    outcomes = iter([playwright.sync_api.Error("one"), None, playwright.sync_api.Error("two"), None,
                     playwright.sync_api.Error("three"), playwright.sync_api.Error("four")])

    def flaky(state, args, response):
        failure = next(outcomes)
        if failure is not None:
            raise failure
        response.answer({"ok": True})

    schema = {"type": "object", "properties": {"sessionId": {"type": "string"}}, "required": ["sessionId"]}
    core.tools["flaky"] = SessionTool("flaky", "Flaky", "fails now and then", schema, flaky)
    try:
        sid = core.call("create_session")["sessionId"]
        for _ in range(2):  # fail, work, fail, work: never two in a row
            with pytest.raises(BrowserError):
                core.call("flaky", {"sessionId": sid})
            assert core.call("flaky", {"sessionId": sid})["ok"] is True
        for _ in range(2):
            with pytest.raises(BrowserError):
                core.call("flaky", {"sessionId": sid})
        with pytest.raises(CircuitOpen) as refused:  # the control: two in a row open it
            core.call("flaky", {"sessionId": sid})
        assert 6_000 < refused.value.details["retryAfterMs"] <= 7_000
    finally:
        core.close()


def test_quiet_hook_runs_once_after_a_command_once_the_queue_stays_empty():
    worker, state = started_worker()
    ran = []
    done = threading.Event()

    def quiet(s):
        ran.append((s, threading.get_ident(), worker.running is not None and worker.running[2]))
        done.set()

    worker.quiet_hook, worker.quiet_after_s, worker.quiet_budget = quiet, 0.05, (30.0, "tag")
    assert not done.wait(0.3)  # no command yet: nothing to tidy up after
    thread = worker.submit(lambda s: threading.get_ident()).result(5)
    assert done.wait(5)
    # On the session thread, watched by the watchdog like a command, then once only.
    assert ran == [(state, thread, "tag")]
    done.clear()
    assert not done.wait(0.3) and len(ran) == 1 and worker.running is None
    worker.stop()
    assert worker.join(5)


def test_quiet_hook_waits_while_commands_keep_coming_and_its_failure_is_harmless():
    worker, _ = started_worker()
    ran = []

    def quiet(s):
        ran.append(1)
        raise RuntimeError("page gone")

    worker.quiet_hook, worker.quiet_after_s = quiet, 1.0
    for _ in range(6):  # never quiet for 1 s
        worker.submit(lambda s: None).result(5)
        threading.Event().wait(0.1)
    assert ran == []
    threading.Event().wait(2.5)
    assert ran == [1]
    assert worker.submit(lambda s: "alive").result(5) == "alive"
    worker.stop()


def test_a_stop_during_the_browsers_launch_still_gives_it_the_grace(monkeypatch):
    """Shutdown may arrive between the browser's start and its publication (CI saw it): the
    browser that just came up gets the same SIGTERM-then-2 s as any other, never an instant SIGKILL."""
    from mcpbrowser.config import Config
    from mcpbrowser.core import browser_supervisor as bs

    started, release, graces = threading.Event(), threading.Event(), []

    class LaunchingBrowser:
        def __init__(self, *args, **kwargs):
            pass

        def start(self, abort):
            started.set()
            release.wait(5)  # up, but not yet published to the supervisor
            return bs.Endpoint("ws://127.0.0.1:1/x", None, None)

        def stop(self, grace=2.0):
            graces.append(grace)

    monkeypatch.setattr(bs, "SharedBrowser", LaunchingBrowser)
    monkeypatch.setattr(bs, "find_executable", lambda *args, **kwargs: "/bin/true")
    supervisor = bs.BrowserSupervisor(Config())
    supervisor.start()
    assert started.wait(5)
    stopper = threading.Thread(target=supervisor.stop, args=(BrowserError("The server is shutting down."),))
    stopper.start()
    assert supervisor.stopping.wait(5)
    release.set()
    stopper.join(10)
    assert not stopper.is_alive() and graces == [bs.BROWSER_STOP_GRACE_S]
    with pytest.raises(BrowserError, match="shutting down"):  # a session opening now is told, not left waiting
        supervisor.attach(object())


def test_the_memory_guard_never_says_the_limit_is_over_itself():
    """64.3 MB over a 64 MB limit was told as "use 64 MB, over the 64 MB limit" (usedMb 64): rounded up now."""
    guard = MemoryGuard(64, clock=lambda: 100.0)
    guard._sample = (100.0, 64.3)  # sampled just now: used_mb reads it, not /proc
    with pytest.raises(ResourceExhausted) as refused:
        guard.check()
    assert refused.value.details == {"usedMb": 65, "limitMb": 64}
    assert "use 65 MB, over the 64 MB limit" in refused.value.message


def test_a_fresh_thread_for_a_session_keeps_what_the_core_gave_the_old_one():
    """The watchdog's replacement worker goes on with its client's secrets and its way to offer page_tools."""
    old, new = SessionWorker("0123456789abcdef", lambda w: None), SessionWorker("0123456789abcdef", lambda w: None)
    offered = []
    old.handed_out(KnownSecrets())
    old.offering_page_tools(offered.append)
    new.succeed(old)
    new.page_offers_tools("the caller")
    assert offered == ["the caller"] and new.secrets is old.secrets


def test_the_session_thread_knows_which_command_runs_now_and_what_waits_next():
    # The history's capture asks what waits next (a snapshot that could answer with its walk: snapshots.fresh_walk),
    # and that walk is that command's only while it is the next to begin (`begun`): a person's input goes first.
    worker, _ = started_worker()
    hold, entered, release = gate()
    seen = []
    first = worker.submit(hold, tag="held")
    assert entered.wait(5)
    assert worker.next_tag() is None  # nothing waits
    worker.submit(lambda s: seen.append(("a", worker.begun, worker.next_tag())), tag="a")
    worker.submit(lambda s: seen.append(("b", worker.begun, worker.next_tag())), tag="b")
    assert worker.next_tag() == "a"
    person = worker.submit(lambda s: seen.append(("person", worker.begun, worker.next_tag())), urgent=True)
    assert worker.next_tag() is None  # a person's input runs before "a"
    release.set()
    assert first.result(5) == "released" and person.result(5) is None
    assert worker.submit(lambda s: None).result(5) is None
    assert seen == [("person", 2, "a"), ("a", 3, "b"), ("b", 4, None)]
    worker.stop()


def test_a_walk_taken_for_one_command_is_no_other_commands_answer():
    from types import SimpleNamespace

    from mcpbrowser.session.snapshots import fresh_walk

    def state(begun, navigations=1, unsettled=None):
        tab = SimpleNamespace(fresh=(7, "Title", 5, 1), navigations=navigations, full_snapshot=None, refs=None)
        return SimpleNamespace(tab=tab, worker=SimpleNamespace(begun=begun), unsettled=unsettled)

    held = ("- button [ref=e1]", 7)
    taken = state(begun=5)
    assert fresh_walk(taken, held) == (held[0], "Title") and taken.tab.refs == {"e1"}
    assert taken.tab.fresh is None  # used once
    assert fresh_walk(taken, held) is None
    assert fresh_walk(state(begun=6), held) is None  # another command began since it was taken
    assert fresh_walk(state(begun=5, navigations=2), held) is None  # the tab's document changed
    assert fresh_walk(state(begun=5, unsettled=("tab",)), held) is None  # a settle is still to finish
    assert fresh_walk(state(begun=5), ("- button [ref=e1]", 8)) is None  # not the held snapshot's walk


def test_the_rate_limit_counts_each_client_session_and_tool_apart():
    """safety.md: --rate-limit N allows N calls a minute per client, session and tool: one client's calls use up
    none of another's, and an agent's calls in one session none of its other sessions'."""
    from mcpbrowser.core.call import Embedder

    class Named(Embedder):
        def __init__(self, name):
            super().__init__(lambda: None)
            self._named = name

        @property
        def name(self):
            return self._named

    def call(who, tool, args=None):
        return core.call_tool(tool, args or {}, Named(who)).result(5)

    core = fake_core(rate_limit=2)
    try:
        first, second = core.create_session().id, core.create_session().id
        for _ in range(2):
            assert call("alice", "list_sessions").error is None
        assert isinstance(call("alice", "list_sessions").error, RateLimited)  # the control: the limit is there
        assert call("bob", "list_sessions").error is None
        for _ in range(2):
            assert call("alice", "navigate", {"sessionId": first, "url": "http://example.test/"}).error is None
        assert isinstance(call("alice", "navigate", {"sessionId": first, "url": "http://example.test/"}).error,
                          RateLimited)
        assert call("alice", "navigate", {"sessionId": second, "url": "http://example.test/"}).error is None
    finally:
        core.close()
