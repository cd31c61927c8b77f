"""The warm pool: ready workers are handed out as sessions, refilled, and never exceed --max-sessions."""
import threading
import time

import pytest
from fakes import FakeClock, FakeTimer, NoBrowser, fake_core, fake_opener
from support import wait_for

from mcpbrowser.config import Config
from mcpbrowser.core.browser import Browser
from mcpbrowser.core.warm_pool import REFILL_DELAY_S

pytestmark = pytest.mark.e2e


def refills_due(core):
    """The refills a create_session deferred (REFILL_DELAY_S), not yet fired."""
    return [t for t in FakeTimer.created if t.function == core.warm_pool.refill and t.started and not t.fired]


def fire_refills(core):
    for timer in refills_due(core):
        assert timer.interval == REFILL_DELAY_S
        timer.fire()


def test_pool_hands_out_ready_workers_and_refills():
    core = fake_core(pool_size=2, max_sessions=5)
    try:
        core.create_session()  # cold: nothing was pooled yet
        time.sleep(0.2)
        assert len(core.warm_pool.idle) == 0  # the refill waits, so as not to slow the session's first call
        fire_refills(core)
        assert wait_for(lambda: len(core.warm_pool.idle) == 2)
        pooled = {w.session_id for w in core.warm_pool.idle}
        second = core.create_session()
        assert second.id in pooled
        assert len(refills_due(core)) == 1
        fire_refills(core)
        assert wait_for(lambda: len(core.warm_pool.idle) == 2)
    finally:
        core.close()


def test_a_session_asked_for_while_the_pool_fills_gets_that_worker():
    """Right after start-up the first create_session meets the pool's first refill: it waits
    for that worker rather than open a second one beside it on a busy machine."""
    config = Config(db=":memory:", pool_size=1)
    opened, go, inner = [], threading.Event(), fake_opener(config)

    def slow_first(worker):
        opened.append(worker.session_id)
        if len(opened) == 1:
            go.wait(5)  # the refill takes its time, as a real attach does
        return inner(worker)

    core = Browser(config, opener=slow_first, timer_factory=FakeTimer, clock=FakeClock.monotonic,
                   supervisor=NoBrowser(config))
    try:
        core.warm_pool.refill()
        assert wait_for(lambda: opened)
        threading.Timer(0.2, go.set).start()
        assert core.create_session().id == opened[0]
    finally:
        go.set()
        core.close()


def test_pool_never_exceeds_max_sessions():
    core = fake_core(pool_size=3, max_sessions=2)
    try:
        first = core.create_session()
        fire_refills(core)
        assert wait_for(lambda: len(core.warm_pool.idle) == 1)
        time.sleep(0.1)
        assert len(core.warm_pool.idle) == 1  # room for only one more session
        core.create_session()
        fire_refills(core)
        time.sleep(0.1)
        assert len(core.warm_pool.idle) == 0 and core.warm_pool.filling == 0
        first.close()
        assert wait_for(lambda: len(core.warm_pool.idle) == 1)
    finally:
        core.close()


def test_the_pool_is_not_refilled_over_the_memory_limit_nor_while_degraded():
    """docs/reliability.md: the memory guard stops refilling the warm pool; a degraded server (its restarts spent)
    keeps no warm sessions either. Each refill resumes once the cause is gone."""
    core = fake_core(pool_size=2, max_memory_mb=64)
    used = [10.0]
    core.warm_pool._memory.used_mb = lambda: used[0]
    try:
        core.create_session()
        used[0] = 100.0  # the browser's processes grew past the limit after the session opened
        fire_refills(core)
        core.warm_pool.refill()
        time.sleep(0.1)
        assert len(core.warm_pool.idle) == 0 and core.warm_pool.filling == 0
        used[0] = 10.0
        core.supervisor._degraded_until = FakeClock.monotonic() + 60  # the restart budget spent
        core.warm_pool.refill()
        time.sleep(0.1)
        assert len(core.warm_pool.idle) == 0 and core.warm_pool.filling == 0
        core.supervisor._degraded_until = None
        core.warm_pool.refill()
        assert wait_for(lambda: len(core.warm_pool.idle) == 2)
    finally:
        core.close()


def test_pool_size_zero_keeps_nothing_ready():
    core = fake_core(pool_size=0)
    try:
        core.create_session()
        fire_refills(core)
        time.sleep(0.1)
        assert len(core.warm_pool.idle) == 0
    finally:
        core.close()


def test_close_stops_pooled_workers():
    core = fake_core(pool_size=2)
    core.create_session()
    fire_refills(core)
    assert wait_for(lambda: len(core.warm_pool.idle) == 2)
    idle = list(core.warm_pool.idle)
    core.close()
    assert all(w.join(5) for w in idle)


def test_pooled_session_is_fresh_and_isolated(make_client, pages):
    c = make_client("--pool-size", "1")
    first = c.tool("create_session")["sessionId"]
    c.tool("navigate", sessionId=first, url=pages.url("/storage"))
    c.tool("type", sessionId=first, selector="#v", text="leak")
    c.tool("click", sessionId=first, selector="#save")
    def pooled_and_unused():
        events = c.server_log()
        ready = sum(e.get("event") == "pool_worker_ready" for e in events)
        used = sum(e.get("source") == "pool" for e in events)
        return ready > used

    assert wait_for(pooled_and_unused, 30)
    second = c.tool("create_session")["sessionId"]
    sources = {e["session"]: e["source"] for e in c.server_log() if e.get("event") == "session_created"}
    assert sources[second] == "pool"
    listed = {s["sessionId"]: s for s in c.tool("list_sessions")["sessions"]}
    assert listed[second]["url"] == "about:blank"
    c.tool("navigate", sessionId=second, url=pages.url("/storage"))
    c.tool("click", sessionId=second, selector="#show")
    assert c.tool("snapshot", sessionId=second)["title"] == "cookie=;local=;session="
